"""`[semantics.embedder] int8 = true` (all-MiniLM-L6-v2 with int8 products) against the shipped model.

    .venv/bin/python bench/int8.py [--texts 600] [--cache /tmp/meaning-cache] [--skip-scifact]

The ONNX file HQL ships stores its weights as int8 but computes in fp32. `int8 = true`
runs a copy quantised dynamically (hql.index.quantized: MatMulInteger on int8 weights,
one scale per output channel, activations quantised per call), made once in the user's
cache (`pip install 'hql[minilm-int8]'`). Both are HQL's own embedders; in one run:

* speed: texts a second for both models on the same SciFact sections, alternated rounds;
* agreement: the cosine of each text's two vectors (mean and lowest);
* quality: SciFact nDCG@10 of `semantic` and `hybrid` through `hql index build`'s producer
  (bench/meaning.py's vault and questions), for both models (vectors cached by text).

HQL offers the int8 model only if it loses at most 0.005 nDCG@10.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import meaning  # noqa: E402

from hql.index.config import EmbedderConfig  # noqa: E402
from hql.index.embedders import MINILM_MODEL, make_embedder  # noqa: E402


class CachedInt8(meaning.CachedEmbedder):
    """bench/meaning.py's cache by text, kept apart from the shipped model's."""

    def __init__(self, inner: Any, cache: Path) -> None:
        import sqlite3

        self.inner = inner
        cache.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(cache / "minilm-dynamic-int8.sqlite")
        self.db.execute("CREATE TABLE IF NOT EXISTS v (key TEXT PRIMARY KEY, blob BLOB)")
        self.embedded = 0

    @property
    def revision(self) -> str:
        return str(self.inner.revision)


def speed(shipped: Any, int8: Any, texts: Sequence[str], rounds: int = 3) -> None:
    shipped.embed_passages(texts[:8]), int8.embed_passages(texts[:8])  # load both
    times: dict[str, list[float]] = {"shipped": [], "int8": []}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        for label, model in (("shipped", shipped), ("int8", int8)):
            started = time.perf_counter()
            vectors[label] = model.embed_passages(texts)
            times[label].append(time.perf_counter() - started)
    best = {label: min(found) for label, found in times.items()}
    print(f"speed on {len(texts)} SciFact sections (best of {rounds}, alternated):")
    for label in ("shipped", "int8"):
        print(f"  {label:8} {len(texts) / best[label]:7.1f} texts/s")
    print(f"  int8 / shipped time ratio {best['int8'] / best['shipped']:.2f}x")
    cosines = np.sum(vectors["shipped"] * vectors["int8"], axis=1)
    print(
        f"agreement: cosine of the two vectors, mean {statistics.mean(cosines):.4f}, "
        f"lowest {float(np.min(cosines)):.4f}"
    )


def quality(cache: Path, label: str, embedder: Any) -> dict[str, float]:
    """SciFact nDCG@10 of bm25, semantic and hybrid with `embedder` (bench/meaning.py's way)."""
    from hql.index.producer import build_index
    from hql.mcp.service import string_literal
    from hql.vault import Vault

    notes, questions = meaning.scifact()
    root = cache / "vaults" / f"scifact-{label}"
    meaning.write_notes(root, notes, MINILM_MODEL)
    vault = Vault.open(root)
    build_index(vault, queries=[q for q, _ in questions], embedder=embedder, stream=sys.stderr)
    vault = Vault.open(root)
    found = {}
    for ranker in ("semantic", "hybrid"):
        scores = []
        for question, gold in questions:
            program = f"import {ranker}\ncards | {ranker}({string_literal(question)}) | take(10)"
            scores.append(meaning.ndcg10(meaning.names(vault, program), gold))  # type: ignore[arg-type]
        found[ranker] = sum(scores) / len(scores)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=600)
    parser.add_argument("--cache", default="/tmp/meaning-cache")
    parser.add_argument("--skip-scifact", action="store_true")
    args = parser.parse_args()
    cache = Path(args.cache)
    shipped_model = make_embedder(EmbedderConfig(provider="local", model=MINILM_MODEL), threads=2)
    # HQL's own `int8 = true` embedder: its copy is made (or found) in the user's cache.
    int8_model = make_embedder(
        EmbedderConfig(provider="local", model=MINILM_MODEL, int8=True), threads=2
    )
    corpus = [json.loads(line) for line in (meaning.DATASETS / "scifact" / "corpus.jsonl").open()]
    texts = [f"{doc['title']}\n\n{doc['text']}" for doc in corpus[: args.texts]]
    speed(shipped_model, int8_model, texts)
    if args.skip_scifact:
        return
    figures = {
        "shipped": quality(cache, "minilm", meaning.CachedEmbedder(MINILM_MODEL, cache)),
        "int8": quality(cache, "minilm-int8", CachedInt8(int8_model, cache)),
    }
    print("SciFact nDCG@10 (300 test questions):")
    for label, found in figures.items():
        print(f"  {label:8} semantic {found['semantic']:.3f}   hybrid {found['hybrid']:.3f}")
    loss = figures["shipped"]["semantic"] - figures["int8"]["semantic"]
    verdict = "offer it" if loss <= 0.005 else "do not offer it"
    print(f"  semantic nDCG@10 lost by int8: {loss:+.3f} (at most 0.005 to offer it): {verdict}")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
