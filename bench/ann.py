"""In-process approximate search (HNSW) against the exact scan, in one run.

    .venv/bin/python bench/ann.py [--n 100000] [--queries 200] [--k 10]
        [--libraries hnswlib,usearch,faiss] [--ef 32,64,128]
        [--hql [--hql-ef default,1024] [--keep FOLDER]]

Vectors of realistic structure: the first `--bases` SciFact abstracts
embedded with the ONNX all-MiniLM-L6-v2 HQL ships (cached under
/tmp/hql-ann), and N vectors made as random sparse mixtures of 1-3 of them
plus Gaussian noise, normalised. Queries are
fresh mixtures of the same kind. The anchor is the exact scan HQL does
(`X @ q`, then the top k), one query at a time; each library reports build
time, query time, the exact/HNSW time ratio and recall@k against the exact
scan, the memory its index took and its file size. `--hql` also times HQL's
own store (`hql.index.stores.hnsw`) over the same vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CORPUS = Path("/work/shared/datasets/scifact/corpus.jsonl")
CACHE = Path("/tmp/hql-ann")
CHUNK = 64
DIMENSIONS = 384
M, EF_CONSTRUCTION = 16, 200


def embedded_abstracts(count: int) -> np.ndarray:
    """The first `count` abstracts' MiniLM vectors, embedded once and cached in chunks."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CORPUS, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle][:count]
    texts = [f"{r.get('title', '')}\n{r.get('text', '')}" for r in records]
    embedder = None
    chunks = []
    start = time.perf_counter()
    for first in range(0, len(texts), CHUNK):
        path = CACHE / f"scifact-minilm-{first:05d}-{CHUNK}.npy"
        if not path.is_file():
            if embedder is None:
                from hql.index.config import EmbedderConfig
                from hql.index.embedders import MINILM_MODEL, make_embedder

                embedder = make_embedder(EmbedderConfig(provider="local", model=MINILM_MODEL))
            np.save(path, embedder.embed_passages(texts[first : first + CHUNK]))
            rate = (first + CHUNK) / (time.perf_counter() - start)
            print(
                f"embedded {first + CHUNK}/{len(texts)} ({rate:.1f}/s)", file=sys.stderr, flush=True
            )
        chunks.append(np.load(path))
    return np.concatenate(chunks).astype(np.float32)[:count]


def mixtures(base: np.ndarray, count: int, seed: int, noise: float = 0.02) -> np.ndarray:
    """`count` unit vectors, each a random mixture of 1-3 base vectors plus Gaussian noise."""
    rng = np.random.default_rng(seed)
    out = np.empty((count, base.shape[1]), dtype=np.float32)
    chunk = 65536
    for first in range(0, count, chunk):
        size = min(chunk, count - first)
        parts = rng.integers(1, 4, size)
        picks = rng.integers(0, len(base), (size, 3))
        weights = rng.random((size, 3)).astype(np.float32) + 0.2
        weights[np.arange(3)[None, :] >= parts[:, None]] = 0.0
        block = np.einsum("ij,ijk->ik", weights, base[picks])
        block += rng.standard_normal(block.shape, dtype=np.float32) * noise
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[first : first + size] = block
    return out


def rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def exact_top(matrix: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def per_query(queries: np.ndarray, search: Callable[[np.ndarray], object]) -> float:
    """Mean seconds per query, one query at a time (as a `semantic` step asks)."""
    search(queries[0])
    start = time.perf_counter()
    for query in queries:
        search(query)
    return (time.perf_counter() - start) / len(queries)


def recall(found: list[np.ndarray], truth: list[np.ndarray], k: int) -> float:
    hits = sum(
        len(set(f[:k].tolist()) & set(t[:k].tolist())) for f, t in zip(found, truth, strict=True)
    )
    return hits / (k * len(truth))


class Hnswlib:
    name = "hnswlib"

    def build(self, data: np.ndarray, threads: int) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=data.shape[1])
        self.index.init_index(max_elements=len(data), M=M, ef_construction=EF_CONSTRUCTION)
        self.index.add_items(data, np.arange(len(data)), num_threads=threads)
        self.index.set_num_threads(1)

    def set_ef(self, ef: int) -> None:
        self.index.set_ef(ef)

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        labels, _ = self.index.knn_query(query, k=k)
        return labels[0]

    def save(self, path: str) -> None:
        self.index.save_index(path)


class Usearch:
    name = "usearch"

    def build(self, data: np.ndarray, threads: int) -> None:
        from usearch.index import Index

        self.index = Index(
            ndim=data.shape[1],
            metric="ip",
            dtype="f32",
            connectivity=M,
            expansion_add=EF_CONSTRUCTION,
        )
        self.index.add(np.arange(len(data)), data, threads=threads)

    def set_ef(self, ef: int) -> None:
        self.index.expansion_search = ef

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        return self.index.search(query, k, threads=1).keys

    def save(self, path: str) -> None:
        self.index.save(path)


class Faiss:
    name = "faiss"

    def build(self, data: np.ndarray, threads: int) -> None:
        import faiss

        faiss.omp_set_num_threads(threads)
        self.index = faiss.IndexHNSWFlat(data.shape[1], M, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = EF_CONSTRUCTION
        self.index.add(data)
        faiss.omp_set_num_threads(1)

    def set_ef(self, ef: int) -> None:
        self.index.hnsw.efSearch = ef

    def search(self, query: np.ndarray, k: int) -> np.ndarray:
        _, labels = self.index.search(query.reshape(1, -1), k)
        return labels[0]

    def save(self, path: str) -> None:
        import faiss

        faiss.write_index(self.index, path)


LIBRARIES = {"hnswlib": Hnswlib, "usearch": Usearch, "faiss": Faiss}


def _write_hql_index(path: Path, data: np.ndarray, names: list[str]) -> None:
    from hql.index import schema

    rows = (
        schema.CardRow(name, name + ".md", f"{i:064x}", v.tobytes())
        for i, (name, v) in enumerate(zip(names, data, strict=True))
    )
    connection = sqlite3.connect(path)
    schema.write_index(
        connection,
        schema.ModelRow("bench", "1", data.shape[1], "cosine", 1),
        schema.MetaRow(1, "vault", "", ""),
        rows,
        [],
    )
    connection.close()


def hql_store(
    data: np.ndarray,
    queries: np.ndarray,
    k: int,
    exact: float,
    efs: list[int | None],
    keep: Path | None,
) -> None:
    """HQL's own path: an index file, `hql index build`'s graph step, and the store's search.

    `keep`: a folder where the index file and its graph stay between runs (built
    when absent, reused when present: a million-vector graph takes a quarter of
    an hour to build on two cores).
    """
    from dataclasses import dataclass

    from hql.index.config import load_semantics_config
    from hql.index.reader import clear_cache
    from hql.index.stores import SearchFilter
    from hql.index.stores.hnsw import HnswStore, graph_paths, open_graph, refresh_graph

    @dataclass(frozen=True)
    class Card:
        name: str
        digest: str

    with tempfile.TemporaryDirectory() as temporary:
        folder = keep if keep is not None else Path(temporary)
        root = folder / "vault"
        root.mkdir(parents=True, exist_ok=True)
        path = root / "index.sqlite"
        cards = [Card(f"card-{i:07d}", f"{i:064x}") for i in range(len(data))]
        graph_file, meta_file = graph_paths(path)
        reused = path.is_file() and graph_file.is_file() and meta_file.is_file()
        before = rss()
        if reused:
            print(f"HQL store: reusing the index and graph in {folder}", flush=True)
        else:
            start = time.perf_counter()
            _write_hql_index(path, data, [c.name for c in cards])
            print(f"HQL store: index file written in {time.perf_counter() - start:.1f} s")
            config = load_semantics_config({"semantics": {"index": "index.sqlite", "ann": "hnsw"}})
            start = time.perf_counter()
            notes = refresh_graph(path, root, config)
            built = time.perf_counter() - start
            print(
                f"HQL store, {notes[0]} in {built:.1f} s (RSS +{(rss() - before) / 2**20:.0f} MB)",
                flush=True,
            )
        print(
            f"HQL store: index file {path.stat().st_size / 2**20:.0f} MB, graph "
            f"{graph_file.stat().st_size / 2**20:.0f} MB, sidecar "
            f"{meta_file.stat().st_size / 2**20:.1f} MB"
        )
        clear_cache()
        before = rss()
        config = load_semantics_config({"semantics": {"index": "index.sqlite", "ann": "hnsw"}})
        start = time.perf_counter()
        store = HnswStore(path, root, config)
        loaded = time.perf_counter() - start
        if len(store.index.card_names) != len(data):
            raise SystemExit(f"{path} holds {len(store.index.card_names)} cards, not {len(data)}")
        among = SearchFilter(cards)
        start = time.perf_counter()
        store.search(queries[0], k, among, exact=True)
        first_scan = time.perf_counter() - start
        opened = rss()
        start = time.perf_counter()
        store.search(queries[0], k, among)
        first_graph = time.perf_counter() - start
        print(
            f"HQL store: opening the index {loaded:.2f} s (RSS +{(opened - before) / 2**20:.0f} MB); "
            f"first exact search {first_scan:.3f} s, first HNSW search (opens the graph) "
            f"{first_graph:.3f} s (RSS +{(rss() - opened) / 2**20:.0f} MB)",
            flush=True,
        )
        scan = per_query(queries, lambda q: store.search(q, k, among, exact=True))
        truth = [
            np.asarray([int(n[5:]) for n, _ in store.search(q, k, among, exact=True).hits])
            for q in queries
        ]
        print(
            f"HQL store: exact scan {scan * 1000:.3f} ms/query (numpy anchor {exact * 1000:.3f} ms)",
            flush=True,
        )
        for ef in efs:
            settings: dict[str, object] = {"index": "index.sqlite", "ann": "hnsw"}
            if ef is not None:
                settings["hnsw"] = {"ef_search": ef}
            searcher = HnswStore(path, root, load_semantics_config({"semantics": settings}))
            result = searcher.search(queries[0], k, among)
            assert result.method.approximate, result.method
            graph = per_query(queries, lambda q, s=searcher: s.search(q, k, among))
            found = [
                np.asarray([int(n[5:]) for n, _ in searcher.search(q, k, among).hits])
                for q in queries
            ]
            used = result.method.parameters["ef_search"]
            label = f"ef_search {used}" + (" (default)" if ef is None else "")
            # The floor: the same graph asked the same way, without the store around it.
            loaded = open_graph(searcher.index, searcher.config.hnsw)
            loaded.index.set_ef(used)
            asked = max(k * 2, 1)
            alone = per_query(
                queries, lambda q, g=loaded, a=asked: g.index.knn_query(q, k=a, num_threads=1)
            )
            print(
                f"HQL store, {label}: HNSW {graph * 1000:.3f} ms/query, "
                f"{scan / graph:.1f}x the store's scan, {exact / graph:.1f}x the numpy anchor; "
                f"recall@{k} {recall(found, truth, k):.3f}; the graph alone "
                f"{alone * 1000:.3f} ms/query (the store adds {(graph - alone) * 1000:.3f} ms)",
                flush=True,
            )
        print(f"HQL store: RSS {rss() / 2**20:.0f} MB at the end")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--libraries", default="hnswlib,usearch,faiss")
    parser.add_argument("--ef", default="32,64,128")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="build threads")
    parser.add_argument("--hql", action="store_true", help="also time HQL's HNSW store")
    parser.add_argument(
        "--hql-ef",
        default="default",
        help="ef_search values for HQL's store ('default': what HQL picks for the graph's size)",
    )
    parser.add_argument(
        "--keep", type=Path, help="keep HQL's index and graph in this folder (reused when there)"
    )
    parser.add_argument("--bases", type=int, default=1024, help="abstracts to embed and mix")
    parser.add_argument("--embed-only", action="store_true")
    args = parser.parse_args()
    base = embedded_abstracts(args.bases)
    if args.embed_only:
        print(base.shape)
        return
    print(
        f"N {args.n:,} vectors x {DIMENSIONS}, mixtures of {len(base)} embedded SciFact abstracts; "
        f"{args.queries} queries, k {args.k}; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    data = mixtures(base, args.n, seed=1)
    queries = mixtures(base, args.queries, seed=2)
    truth = [exact_top(data, q, args.k) for q in queries]
    exact = per_query(queries, lambda q: exact_top(data, q, args.k))
    print(f"exact scan (anchor): {exact * 1000:.3f} ms/query", flush=True)
    efs = [int(v) for v in args.ef.split(",")]
    print(f"library   build s  index MB  file MB  ef   ms/query  exact/ann  recall@{args.k}")
    for name in filter(None, args.libraries.split(",")):
        library = LIBRARIES[name]()
        before = rss()
        start = time.perf_counter()
        library.build(data, args.threads)
        built = time.perf_counter() - start
        memory = (rss() - before) / 2**20
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "graph")
            library.save(path)
            size = os.path.getsize(path) / 2**20
        for ef in efs:
            library.set_ef(ef)
            seconds = per_query(queries, lambda q, lib=library: lib.search(q, args.k))
            found = [library.search(q, args.k) for q in queries]
            print(
                f"{name:9} {built:8.1f} {memory:9.0f} {size:8.0f} {ef:4d} {seconds * 1000:9.3f} "
                f"{exact / seconds:9.1f}x {recall(found, truth, args.k):9.3f}",
                flush=True,
            )
        del library
    if args.hql:
        hql_efs = [None if v == "default" else int(v) for v in args.hql_ef.split(",")]
        hql_store(data, queries, args.k, exact, hql_efs, args.keep)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
