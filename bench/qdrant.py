"""Qdrant local mode against HQL's exact SQLite scan, in one run: recall@k and query time.

    .venv/bin/python bench/qdrant.py [--n 100000] [--queries 50] [--k 10] [--persist 2000]

Vectors of realistic structure: the SciFact abstracts embedded with the ONNX
all-MiniLM-L6-v2 (the cache bench/ann.py writes, /tmp/hql-ann/scifact-minilm.npy, or its chunks),
mixed 1-3 at a time with noise; without that cache, mixtures of 5,000 random
"topic" vectors (the output says which). Queries are fresh mixtures.

The anchor is HQL's SQLite store scan (`SemanticIndex.search`: `X @ q` and an
exact top-k) over the same vectors. Qdrant is HQL's `QdrantStore.search` (what
`semantic` calls: best section per card, exact at ties) over an in-memory
local-mode collection holding the same points and payload as `hql index build`
writes; the raw `query_points` call is timed too. Local mode keeps its points
in memory once opened, so an in-memory collection searches exactly as a folder
does; the folder's write cost is measured apart, on `--persist` points.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ann import mixtures, per_query  # noqa: E402  (the same vectors and timing as bench/ann.py)

from hql.index import reader, schema  # noqa: E402

CACHE = Path("/tmp/hql-ann/scifact-minilm.npy")
DIMENSIONS = 384
NOISE = 0.03  # per dimension, as the numbers in docs/semantic.md were measured


def base_vectors() -> tuple[np.ndarray, str]:
    if CACHE.is_file():
        return np.load(CACHE).astype(np.float32), "SciFact abstracts, ONNX all-MiniLM-L6-v2"
    chunks = sorted(CACHE.parent.glob("scifact-minilm-*.npy"))  # a partial cache, in chunks
    if chunks:
        base = np.concatenate([np.load(chunk) for chunk in chunks]).astype(np.float32)
        return base, f"{len(base):,} SciFact abstracts, ONNX all-MiniLM-L6-v2"
    rng = np.random.default_rng(3)
    topics = rng.standard_normal((5000, DIMENSIONS), dtype=np.float32)
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    return topics, "5,000 random topic vectors (no MiniLM cache: run bench/ann.py once)"


def names_of(count: int) -> tuple[str, ...]:
    return tuple(f"card-{i:07d}" for i in range(count))


def sqlite_store(matrix: np.ndarray, names: tuple[str, ...]) -> reader.SemanticIndex:
    loaded = reader._Loaded(
        stamp=(0, 0, 0),
        model=schema.ModelRow("bench", "0", DIMENSIONS, "cosine", 1),
        meta=schema.MetaRow(1, "bench", "", schema.TOOL_VERSION),
        names=names,
        row_of={name: row for row, name in enumerate(names)},
        hashes=tuple("d" for _ in names),
        matrix=matrix,
        queries={},
    )
    return reader.SemanticIndex(Path("bench.sqlite"), loaded)


def payload(name: str) -> dict[str, object]:
    return {
        "name": name,
        "digest": "d",
        "model": "bench",
        "revision": "0",
        "vault": "bench",
        "path": f"{name}.md",
        "folder": "",
        "tags": [],
        "metadata": {},
        "section": {"ordinal": 0, "of": 1, "heading": [], "lines": [1, 1]},
    }


def qdrant_store(client, matrix: np.ndarray, names: tuple[str, ...]):  # type: ignore[no-untyped-def]
    from qdrant_client import models

    from hql.index.config import QdrantConfig
    from hql.index.stores import qdrant as q

    model = schema.ModelRow("bench", "0", DIMENSIONS, "cosine", 1)
    description = q._Description(model, "bench", "", schema.TOOL_VERSION, 0)
    q._create(client, "bench", ":memory:", description, local=True)
    batch = 5000
    for first in range(0, len(names), batch):
        chunk = names[first : first + batch]
        client.upsert(
            "bench",
            models.Batch(
                ids=[q.point_id(name, 0) for name in chunk],
                vectors=matrix[first : first + batch],
                payloads=[payload(name) for name in chunk],
            ),
        )
    config = QdrantConfig(path=":memory:")
    return q.QdrantStore(config, client, "bench", ":memory:", Path("."), description)


def persist_rate(matrix: np.ndarray, count: int) -> float:
    """Points per second written through `QdrantStore.upsert` into a local-mode folder."""
    from qdrant_client import QdrantClient

    from hql.index.config import QdrantConfig
    from hql.index.stores import CardVectors, SectionVector
    from hql.index.stores import qdrant as q

    with tempfile.TemporaryDirectory() as folder:
        client = QdrantClient(path=folder)
        model = schema.ModelRow("bench", "0", DIMENSIONS, "cosine", 1)
        description = q._Description(model, "bench", "", schema.TOOL_VERSION, 0)
        q._create(client, "bench", folder, description, local=True)
        store = q.QdrantStore(
            QdrantConfig(path=folder), client, "bench", folder, Path("."), description
        )
        cards = [
            CardVectors(name, f"{name}.md", "d", vector, (SectionVector(0, (), 1, 1, vector),))
            for name, vector in zip(names_of(count), matrix[:count], strict=True)
        ]
        start = time.perf_counter()
        store.upsert(cards)
        seconds = time.perf_counter() - start
        client.close()
    return count / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--persist", type=int, default=2000, help="points written to a folder")
    args = parser.parse_args()

    import os
    import warnings

    warnings.simplefilter("ignore")  # local mode's advice about large collections
    from qdrant_client import QdrantClient

    base, source = base_vectors()
    matrix = mixtures(base, args.n, seed=1, noise=NOISE)
    queries = mixtures(base, args.queries, seed=2, noise=NOISE)
    names = names_of(args.n)
    print(
        f"vectors: {args.n:,} x {DIMENSIONS}, mixtures of {source}; {args.queries} queries, k = {args.k}"
    )
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    exact = sqlite_store(matrix, names)
    start = time.perf_counter()
    client = QdrantClient(":memory:")
    store = qdrant_store(client, matrix, names)
    load_seconds = time.perf_counter() - start
    print(f"qdrant local mode: {args.n:,} points loaded in {load_seconds:.1f} s (in memory)")

    truth = [[name for name, _ in exact.search(query, args.k)] for query in queries]
    found = [[name for name, _ in store.search(query, args.k).hits] for query in queries]
    hits = sum(len(set(f) & set(t)) for f, t in zip(found, truth, strict=True))
    recall = hits / (args.k * len(queries))
    same_order = sum(f == t for f, t in zip(found, truth, strict=True))

    sqlite_time = per_query(queries, lambda q: exact.search(q, args.k))
    qdrant_time = per_query(queries, lambda q: store.search(q, args.k))
    raw_time = per_query(
        queries,
        lambda q: client.query_points("bench", query=q, limit=args.k, with_payload=["name"]),
    )
    print(f"recall@{args.k} of Qdrant local mode against the exact scan: {recall:.4f}")
    print(f"queries whose top {args.k} are in the same order: {same_order}/{len(queries)}")
    print("per query (mean, one at a time)           ms   vs SQLite exact scan")
    print(f"  SQLite store, exact scan (anchor)  {sqlite_time * 1000:9.2f}   1.00x")
    print(
        f"  Qdrant local, QdrantStore.search   {qdrant_time * 1000:9.2f}   {qdrant_time / sqlite_time:.2f}x"
    )
    print(
        f"  Qdrant local, raw query_points     {raw_time * 1000:9.2f}   {raw_time / sqlite_time:.2f}x"
    )
    client.close()
    if args.persist:
        rate = persist_rate(matrix, min(args.persist, args.n))
        print(
            f"writing into a local-mode folder: {rate:.0f} points/s "
            f"({min(args.persist, args.n):,} points through QdrantStore.upsert)"
        )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
