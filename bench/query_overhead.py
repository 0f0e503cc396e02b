"""What one `hql.run` of a ranking costs beyond its anchor, question by question.

    .venv/bin/python bench/query_overhead.py DIR/scale-100000 [--program semantic] [--rounds 7]

The vault is one `bench/scale.py --reuse DIR` left (its cards, `semantic.sqlite` with the
questions' vectors, `hql.toml`). Each round runs, for every question, the program through
`hql.run` on the open vault and then its anchor, so both are timed through the same moments of
a shared machine; each question keeps its fastest time of each. Printed: ms per question of
both, the ratio, and the ms HQL spends beyond the anchor, plus a digest of every answer (JSON
text), so that two checkouts (run this file from each) can be compared answer for answer.

* `semantic`: `cards | semantic($q) | take(10)` against numpy `X @ q` + top-10;
* `bm25`: `cards | bm25($q) | take(10)` against bm25s `retrieve(k=10)`;
* `relevant`: `cards | bm25($q) | relevant | take(10)`, the same anchor.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale import corpus  # noqa: E402

import hql  # noqa: E402
from hql.index import schema  # noqa: E402

PROGRAMS = {
    "semantic": "import semantic\ncards | semantic($q) | take(10)",
    "bm25": "import bm25\ncards | bm25($q) | take(10)",
    "relevant": "import bm25\ncards | bm25($q) | relevant | take(10)",
}


def numpy_anchor(root: Path) -> Callable[[str], object]:
    connection = sqlite3.connect(root / "semantic.sqlite")
    vectors = {
        q: schema.blob_to_vector(blob) for q, blob in connection.execute("SELECT * FROM query")
    }
    blobs = [blob for (blob,) in connection.execute("SELECT embedding FROM card ORDER BY name")]
    connection.close()
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1).copy()

    def anchor(question: str) -> object:
        scores = matrix @ vectors[question]
        top = np.argpartition(-scores, 9)[:10]
        return top[np.argsort(-scores[top])]

    return anchor


def bm25s_anchor(vault: hql.Vault, questions: list[str]) -> Callable[[str], object]:
    import bm25s

    retriever = bm25s.BM25()
    texts = [f"{card.title} {card.text}" for card in vault.cards]
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    tokens = {q: bm25s.tokenize([q], stopwords="en", show_progress=False) for q in questions}
    return lambda question: retriever.retrieve(tokens[question], k=10, show_progress=False)


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("vault", type=Path)
    parser.add_argument("--program", choices=sorted(PROGRAMS), default="semantic")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    _, all_questions = corpus()
    questions = [q for q in all_questions if '"' not in q and "\\" not in q][: args.queries]
    vault = hql.Vault.open(args.vault)
    program = PROGRAMS[args.program]
    if args.program == "semantic":
        anchor = numpy_anchor(args.vault)
    else:
        anchor = bm25s_anchor(vault, questions)
    answers = [hql.run(program, vault=vault, params={"q": q}).json_text() for q in questions]
    ours: dict[str, float] = {}
    theirs: dict[str, float] = {}
    for _ in range(args.rounds):
        for q in questions:
            took = timed(lambda q=q: hql.run(program, vault=vault, params={"q": q}))
            ours[q] = min(ours.get(q, took), took)
            took = timed(lambda q=q: anchor(q))
            theirs[q] = min(theirs.get(q, took), took)
    mine = sum(ours.values()) / len(questions)
    floor = sum(theirs.values()) / len(questions)
    median = statistics.median(ours[q] / theirs[q] for q in questions)
    digest = hashlib.sha256("\n".join(answers).encode()).hexdigest()[:12]
    print(
        f"{args.program} on {len(vault.cards):,} cards: {mine * 1000:.3f} ms per question, "
        f"anchor {floor * 1000:.3f} ms, ratio {mine / floor:.2f}x (median {median:.2f}x), "
        f"{(mine - floor) * 1000:.3f} ms beyond the anchor; answers {digest}"
    )


if __name__ == "__main__":
    main()
