"""Meaning on real questions: bm25, semantic and hybrid through `hql index build` and `hql.run`.

    .venv/bin/python bench/meaning.py [--only locomo,pira,scifact] [--model minilm|e5]
        [--dump FILE] [--cache DIR]

Each dataset becomes a vault of Markdown notes (LoCoMo: one note per session, each turn a
line `D3:7 Caroline: …`; Pirá: the English abstracts; SciFact: title and abstract); the
index is built by `hql index build`'s producer with the vault's local model; every
question runs as an HQL program. Embeddings are cached by text under `--cache` (default
/tmp/meaning-cache), and every batch the model embeds takes /work/bench.lock for itself,
so a long embedding shares the machine with other benchmarks between batches.

LoCoMo: session recall@5 (the share of a question's evidence sessions in the top 5,
categories 1-4) and MRR. Pirá (PT questions, EN documents) and SciFact: nDCG@10.
`--dump` writes each question's arms (bm25 and semantic top 100 with scores) as JSON, to
study fusion rules offline; for a set with off-topic questions (help, pira-mixed), also
`<set>-relevance`: what `hybrid | relevant`'s rule reads of every question, and the
cards' cosines to the hub bank.

`--only help-context`: `hql context` on the Help vault's questions with the model's index
and without one. `--only locomo-context`: `hql context` on bench/context.py's LoCoMo vault
(every question, unanswerable ones too, budget 1,500 tokens) with a MiniLM index against
the same notes without one, same run: the evidence session in the block, empty blocks.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hql  # noqa: E402
from hql.index.config import EmbedderConfig  # noqa: E402
from hql.index.embedders import E5_MODEL, MINILM_MODEL, make_embedder  # noqa: E402
from hql.index.producer import build_index  # noqa: E402
from hql.mcp.service import string_literal  # noqa: E402
from hql.vault import Vault  # noqa: E402

# The shared datasets sit beside the checkout (/work/main) or two levels up (a worktree).
DATASETS = next(
    (
        base / "shared" / "datasets"
        for base in ROOT.parents
        if (base / "shared" / "datasets").is_dir()
    ),
    ROOT.parent / "shared" / "datasets",
)
BENCH_LOCK = Path("/work/bench.lock")
MODELS = {"minilm": MINILM_MODEL, "e5": E5_MODEL}
BATCH = 32


@contextlib.contextmanager
def bench_lock() -> Iterator[None]:
    """Hold the machine's benchmark lock (when there is one) for one batch of embedding."""
    if not BENCH_LOCK.parent.exists():
        yield
        return
    with open(BENCH_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class CachedEmbedder:
    """A local model whose vectors are kept by (role, text) in an SQLite file."""

    def __init__(self, model: str, cache: Path) -> None:
        self.inner = make_embedder(EmbedderConfig(provider="local", model=model), threads=2)
        cache.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(cache / f"{model.replace('/', '_')}.sqlite")
        self.db.execute("CREATE TABLE IF NOT EXISTS v (key TEXT PRIMARY KEY, blob BLOB)")
        self.embedded = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def revision(self) -> str:
        return self.inner.revision

    def __getattr__(self, name: str) -> Any:  # max_tokens, count_tokens
        return getattr(self.inner, name)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed("passage", texts, self.inner.embed_passages)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed("query", texts, self.inner.embed_queries)

    def _embed(
        self, role: str, texts: Sequence[str], embed: Callable[[Sequence[str]], np.ndarray]
    ) -> np.ndarray:
        keys = [f"{role}:{hashlib.sha256(text.encode()).hexdigest()}" for text in texts]
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            found.update(self.db.execute(f"SELECT key, blob FROM v WHERE key IN ({marks})", part))
        missing = sorted(
            {key: text for key, text in zip(keys, texts, strict=True) if key not in found}.items()
        )
        for start in range(0, len(missing), BATCH):
            batch = missing[start : start + BATCH]
            with bench_lock():
                vectors = np.asarray(embed([text for _, text in batch]), dtype=np.float32)
            with self.db:
                self.db.executemany(
                    "INSERT OR REPLACE INTO v VALUES (?, ?)",
                    [
                        (key, vector.tobytes())
                        for (key, _), vector in zip(batch, vectors, strict=True)
                    ],
                )
            found.update(
                (key, vector.tobytes()) for (key, _), vector in zip(batch, vectors, strict=True)
            )
            self.embedded += len(batch)
            print(f"    embedded {self.embedded} new {role} texts", file=sys.stderr, flush=True)
        return np.stack([np.frombuffer(found[key], dtype=np.float32) for key in keys])


# --- vaults -----------------------------------------------------------------------------


def _safe(name: str) -> str:
    return re.sub(r"[^\w.-]+", "-", name).strip("-") or "note"


def write_notes(root: Path, notes: dict[str, str], model: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hql.toml").write_text(
        '[semantics]\nindex = ".hql/index.sqlite"\n\n[semantics.embedder]\n'
        f'provider = "local"\nmodel = "{model}"\n',
        encoding="utf-8",
    )
    for name, text in notes.items():
        path = root / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def locomo() -> tuple[dict[str, str], list[tuple[str, set[str]]]]:
    notes: dict[str, str] = {}
    questions: list[tuple[str, set[str]]] = []
    for path in sorted((DATASETS / "locomo-dev").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        talk = data.get("conversation", data)
        for key, turns in talk.items():
            found = re.fullmatch(r"session_(\d+)", key)
            if not found or not isinstance(turns, list) or not turns:
                continue
            number = found.group(1)
            name = f"{path.stem}-session-{int(number):02d}"
            lines = [
                f"{turn['dia_id']} {turn['speaker']}: {turn['text']}"
                + (f" [image: {turn['blip_caption']}]" if turn.get("blip_caption") else "")
                for turn in turns
            ]
            notes[name] = (
                f"---\ndate: {talk.get(f'{key}_date_time', '')}\n"
                f"speakers: [{talk['speaker_a']}, {talk['speaker_b']}]\n---\n"
                f"# Session {number}\n\n" + "\n".join(lines) + "\n"
            )
        for qa in data["qa"]:
            if qa.get("category") == 5:
                continue
            sessions = {
                f"{path.stem}-session-{int(m.group(1)):02d}"
                for evidence in qa.get("evidence", [])
                if (m := re.match(r"D(\d+):", evidence))
            }
            sessions &= set(notes)
            if sessions:
                questions.append((qa["question"], sessions))
    return notes, questions


HELP_QUESTIONS = ROOT / "bench" / "data" / "help-questions.json"


def help_vault(source: Path) -> tuple[dict[str, str], list[tuple[str, set[str]]]]:
    """The Obsidian Help vault's notes (by vault-relative path without `.md`) and the
    question set: gold paths for answerable questions, none for off-topic ones."""
    notes = {
        str(path.relative_to(source).with_suffix("")): path.read_text(encoding="utf-8")
        for path in sorted(source.rglob("*.md"))
    }
    asked = json.loads(HELP_QUESTIONS.read_text(encoding="utf-8"))
    questions = [
        (q["question"], {g.removesuffix(".md") for g in q["gold"]}) for q in asked["answerable"]
    ]
    questions += [(q["question"], set()) for q in asked["off_topic"]]
    return notes, questions


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _qrels(*paths: Path) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for path in paths:
        for line in path.read_text().splitlines()[1:]:
            query, doc, score = line.split("\t")
            found.setdefault(query, {})[doc] = int(score)
    return found


def beir(corpus: Path, queries: Path, qrels: dict[str, dict[str, int]], titles: bool):
    notes = {}
    for doc in _jsonl(corpus):
        title = doc.get("title", "") if titles else ""
        heading = f"# {title}\n\n" if title else ""
        notes[_safe(doc["_id"])] = f"{heading}{doc['text']}\n"
    asked = [
        (q["text"], {_safe(d): g for d, g in qrels[q["_id"]].items()})
        for q in _jsonl(queries)
        if q["_id"] in qrels
    ]
    return notes, asked


def pira():
    root = DATASETS / "pira"
    qrels = _qrels(root / "qrels/validation.tsv", root / "qrels/test.tsv")
    return beir(root / "corpus.en.jsonl", root / "queries.pt.jsonl", qrels, titles=False)


def pira_mixed():
    """Pirá as a two-language vault: even documents in English, odd ones in Portuguese, and
    each question asked in the other language than its document's (every answer crosses
    languages); the Help set's questions, which no ocean abstract answers, are off-topic."""
    root = DATASETS / "pira"
    qrels = _qrels(root / "qrels/validation.tsv", root / "qrels/test.tsv")
    english = {doc["_id"]: doc["text"] for doc in _jsonl(root / "corpus.en.jsonl")}
    portuguese = {doc["_id"]: doc["text"] for doc in _jsonl(root / "corpus.pt.jsonl")}
    in_english = {doc: int(doc.lstrip("D")) % 2 == 0 for doc in english}
    notes = {
        _safe(doc): (english[doc] if in_english[doc] else portuguese[doc]) + "\n" for doc in english
    }
    asked_in = {
        "en": {q["_id"]: q["text"] for q in _jsonl(root / "queries.en.jsonl")},
        "pt": {q["_id"]: q["text"] for q in _jsonl(root / "queries.pt.jsonl")},
    }
    questions: list[tuple[str, Any]] = []
    for query, docs in sorted(qrels.items()):
        doc = next(iter(docs))
        language = "pt" if in_english[doc] else "en"
        if query in asked_in[language]:
            questions.append((asked_in[language][query], {_safe(d): g for d, g in docs.items()}))
    helped = json.loads(HELP_QUESTIONS.read_text(encoding="utf-8"))
    questions += [(q["question"], {}) for q in helped["answerable"] + helped["off_topic"]]
    return notes, questions


def scifact():
    root = DATASETS / "scifact"
    return beir(
        root / "corpus.jsonl", root / "queries.jsonl", _qrels(root / "qrels/test.tsv"), True
    )


# --- measuring --------------------------------------------------------------------------


def ndcg10(ranked: Sequence[str], gains: dict[str, int]) -> float:
    got = sum(gains.get(name, 0) / math.log2(i + 2) for i, name in enumerate(ranked[:10]))
    ideal = sum(
        g / math.log2(i + 2) for i, g in enumerate(sorted(gains.values(), reverse=True)[:10])
    )
    return got / ideal if ideal else 0.0


def recall5(ranked: Sequence[str], gold: set[str]) -> float:
    return len(gold & set(ranked[:5])) / len(gold)


def mrr(ranked: Sequence[str], gold: set[str]) -> float:
    return next((1 / (i + 1) for i, name in enumerate(ranked) if name in gold), 0.0)


def names(vault: Vault, program: str) -> list[str]:
    """The hits' vault-relative paths without `.md` (what the question sets name)."""
    outcome = hql.run(program, vault=vault)
    if outcome.failed:
        raise SystemExit(outcome.render_reports())
    return [_key(vault, hit.card) for hit in outcome.value]


def _key(vault: Vault, card: Any) -> str:
    path = Path(card.path)
    if path.is_absolute():
        path = path.relative_to(vault.root)
    return str(path.with_suffix(""))


def arms(vault: Vault, question: str) -> dict[str, list[tuple[str, float]]]:
    found = {}
    for arm in ("bm25", "semantic"):
        limit = "" if arm == "semantic" and len(vault.cards) <= 2000 else " | take(100)"
        outcome = hql.run(
            f"import {arm}\ncards | {arm}({string_literal(question)}){limit}", vault=vault
        )
        found[arm] = [(_key(vault, hit.card), hit.score) for hit in outcome.value]
    return found


def relevance_dump(vault: Vault, questions: list[tuple[str, Any]]) -> dict[str, Any]:
    """What `hybrid | relevant`'s rule reads, to study it offline: per question (off-topic
    ones too, with no gold) hybrid's whole ranking with each arm's place and verdict, the
    arms' standings and every card's cosine; and every card's cosine to each question of
    the hub bank (hql.index.hubs)."""
    from hql.index.hubs import BANK

    def cosines(question: str) -> dict[str, float]:
        program = f"import semantic\ncards | semantic({string_literal(question)})"
        return {_key(vault, hit.card): hit.score for hit in hql.run(program, vault=vault).value}

    rows = []
    for question, gold in questions:
        program = f"import hybrid\ncards | hybrid({string_literal(question)})"
        ranking = hql.run(program, vault=vault).value
        rows.append(
            {
                "question": question,
                "gold": sorted(gold),
                "standings": ranking.retrieval.extra.get("standings"),
                "hits": [
                    {"key": _key(vault, hit.card), "inputs": (hit.detail or {}).get("inputs")}
                    for hit in ranking.hits
                ],
                "semantic": cosines(question),
            }
        )
    return {"questions": rows, "bank": {question: cosines(question) for question in BANK}}


def relevance(vault: Vault, questions: list[tuple[str, Any]]) -> None:
    """`ranker | relevant`: the share of answerable questions keeping a right note in its
    first five, of off-topic ones keeping nothing. Each kind of question is split in two
    halves by position (even: the half the rules were calibrated on, odd: the half they
    are reported on), and both halves are printed."""
    for ranker in ("bm25", "semantic", "hybrid"):
        tally = {half: [0, 0, 0, 0] for half in ("calibration", "report")}
        seen = {True: 0, False: 0}
        for question, gold in questions:
            answerable = bool(gold)
            half = "calibration" if seen[answerable] % 2 == 0 else "report"
            seen[answerable] += 1
            ranked = names(
                vault,
                f"import {ranker}\ncards | {ranker}({string_literal(question)}) | relevant | take(5)",
            )
            counts = tally[half]
            if answerable:
                counts[0] += bool(set(gold) & set(ranked))
                counts[1] += 1
            else:
                counts[2] += not ranked
                counts[3] += 1
        for half, (kept, answerable, abstained, off_topic) in tally.items():
            print(
                f"  {ranker:<9} | relevant, {half:<11} half: keeps a right note "
                f"{kept}/{answerable} ({kept / max(answerable, 1):.0%}), abstains "
                f"{abstained}/{off_topic} ({abstained / max(off_topic, 1):.0%})",
                flush=True,
            )


def run(name: str, model: str, cache: Path, dump: dict[str, Any] | None, source: Path) -> None:
    datasets = {
        "locomo": locomo,
        "pira": pira,
        "scifact": scifact,
        "pira-mixed": pira_mixed,
        "help": lambda: help_vault(source),
    }
    if name == "locomo-context":
        locomo_context(cache)
        return
    if name == "help-context":
        help_context(model, cache, source)
        return
    notes, questions = datasets[name]()
    short = "minilm" if model == MINILM_MODEL else "e5"
    root = cache / "vaults" / f"{name}-{short}"
    write_notes(root, notes, model)
    embedder = CachedEmbedder(model, cache)
    vault = Vault.open(root)
    started = time.perf_counter()
    build_index(vault, queries=[q for q, _ in questions], embedder=embedder, stream=sys.stderr)
    print(
        f"{name} ({short}): {len(notes)} notes, {len(questions)} questions, "
        f"index in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    vault = Vault.open(root)
    if any(not gold for _, gold in questions):
        relevance(vault, questions)
        if dump is not None:
            dump[f"{name}-relevance"] = relevance_dump(vault, questions)
        questions = [(q, g) for q, g in questions if g]
    for ranker in ("bm25", "semantic", "hybrid"):
        scores: list[float] = []
        ranks: list[float] = []
        for question, gold in questions:
            ranked = names(
                vault, f"import {ranker}\ncards | {ranker}({string_literal(question)}) | take(10)"
            )
            if name in ("locomo", "help"):
                scores.append(recall5(ranked, gold))  # type: ignore[arg-type]
                ranks.append(mrr(ranked, gold))  # type: ignore[arg-type]
            else:
                scores.append(ndcg10(ranked, gold))  # type: ignore[arg-type]
        metric = "recall@5" if name in ("locomo", "help") else "nDCG@10"
        extra = f"  MRR@10 {sum(ranks) / len(ranks):.3f}" if ranks else ""
        print(f"  {ranker:<9} {metric} {sum(scores) / len(scores):.3f}{extra}", flush=True)
    if dump is not None:
        dump[name] = [
            {"question": q, "gold": sorted(g) if isinstance(g, set) else g, **arms(vault, q)}
            for q, g in questions
        ]


def locomo_context(cache: Path) -> None:
    """`hql context` on LoCoMo with a MiniLM index and without one (bench/context.py's vault)."""
    import shutil
    import tempfile

    sys.path.insert(0, str(ROOT / "bench"))
    import context as words_bench  # bench/context.py: its vault, its figures

    from hql.context.read_path import assemble

    folder = Path(tempfile.mkdtemp())
    questions = words_bench.locomo_vault(folder / "words")
    shutil.copytree(folder / "words", folder / "meaning")
    write_notes(folder / "meaning", {}, MINILM_MODEL)
    embedder = CachedEmbedder(MINILM_MODEL, cache)
    build_index(Vault.open(folder / "meaning"), embedder=embedder, stream=sys.stderr)
    vaults = {side: Vault.open(folder / side) for side in ("words", "meaning")}
    rows = []
    for number, item in enumerate(questions):
        row: dict[str, Any] = {"half": number % 2}
        for side, vault in vaults.items():
            block = assemble(vault, item["question"], budget=1500)
            row.update(words_bench._judged(item, {entry.name for entry in block.items}, side))
            row[f"{side}_tokens"] = block.tokens
        rows.append(row)
    shutil.rmtree(folder)
    print(f"hql context on LoCoMo dev ({len(questions)} questions), budget 1500 tokens")
    print(f"{'':44}{'no index':>10}{'MiniLM':>10}")
    for label, key in (
        ("evidence session in the block (answerable)", "hit"),
        ("empty block, unanswerable (abstained)", "abstained"),
        ("empty block, answerable (wrongly empty)", "empty"),
        ("mean tokens", "tokens"),
    ):
        figures = [words_bench._mean(rows, f"{side}_{key}") for side in vaults]
        print(f"{label:44}" + "".join(f"{value:>10.3f}" for value in figures), flush=True)


def help_context(model: str, cache: Path, source: Path) -> None:
    """`hql context` on the Help vault's questions with the model's index (built as `--only
    help` builds it) against the same notes without one: a right note in the block (and in
    its first three), off-topic questions with an empty block."""
    import shutil
    import tempfile

    from hql.context.read_path import assemble

    notes, questions = help_vault(source)
    short = "minilm" if model == MINILM_MODEL else "e5"
    root = cache / "vaults" / f"help-{short}"
    write_notes(root, notes, model)
    build_index(
        Vault.open(root),
        queries=[q for q, _ in questions],
        embedder=CachedEmbedder(model, cache),
        stream=sys.stderr,
    )
    plain = Path(tempfile.mkdtemp()) / "help"
    shutil.copytree(root, plain, ignore=shutil.ignore_patterns(".hql", "hql.toml"))
    print(
        f"hql context on the Help vault ({short}): right note in the block (in its first 3), "
        "off-topic questions with an empty block"
    )
    for side, vault in (("no index", Vault.open(plain)), (short, Vault.open(root))):
        kept = first = empty = 0
        for question, gold in questions:
            block = assemble(vault, question)
            got = [_key(vault, vault.card(item.name)) for item in block.items]
            kept += bool(gold) and bool(gold & set(got))
            first += bool(gold) and bool(gold & set(got[:3]))
            empty += not gold and not got
        answerable = sum(1 for _, gold in questions if gold)
        print(
            f"  {side:9} {kept}/{answerable} ({first}/{answerable}), "
            f"{empty}/{len(questions) - answerable}",
            flush=True,
        )
    shutil.rmtree(plain.parent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="locomo,pira")
    parser.add_argument(
        "--model", default="", help="minilm or e5 (default: e5 for pira, minilm else)"
    )
    parser.add_argument("--cache", default="/tmp/meaning-cache")
    parser.add_argument("--dump", default="")
    parser.add_argument(
        "--help-vault",
        default="/tmp/meaning-cache/help-en",
        help="the en/ folder of github:obsidianmd/obsidian-help",
    )
    args = parser.parse_args()
    dump: dict[str, Any] | None = {} if args.dump else None
    for name in args.only.split(","):
        model = (
            MODELS[args.model]
            if args.model
            else (
                E5_MODEL if name in ("pira", "pira-mixed", "help", "help-context") else MINILM_MODEL
            )
        )
        run(name, model, Path(args.cache), dump, Path(args.help_vault))
    if dump is not None:
        Path(args.dump).write_text(json.dumps(dump), encoding="utf-8")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
