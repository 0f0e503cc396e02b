"""Semantic query cost against the numpy floor, and the cost of opening an index.

    .venv/bin/python bench/semantic.py [--sizes 10000,100000,1000000] [--k 10]

For each size: random unit 384-d float32 vectors; the floor is plain numpy
`X @ q` + argpartition top-k (+ sorting the k) in the same run; HQL is
`SemanticIndex.search` (whole index) and `SemanticIndex.rank` (the vault's
cards, alignment cached) over the same matrix; `new list` ranks the same cards
passed as a fresh list (alignment found by card identity), `1st rank` is the
first query after loading (alignment computed), `all` ranks every card. Ratios are HQL / floor, best
of several runs. Opening: a 100k-vector index file written once, opened cold
(cache cleared) and warm (cached), against a bare `SELECT embedding` read.
The 1M case is measured in memory (a 1.5 GB SQLite file is not worth writing).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hql.index import reader, schema  # noqa: E402

DIMENSIONS = 384


@dataclass(frozen=True)
class FakeCard:
    name: str
    digest: str


def best_of(repeats: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def unit_matrix(count: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((count, DIMENSIONS), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def in_memory_index(matrix: np.ndarray) -> tuple[reader.SemanticIndex, list[FakeCard]]:
    names = tuple(f"card-{i:07d}" for i in range(len(matrix)))
    loaded = reader._Loaded(
        stamp=(0, 0, 0),
        model=schema.ModelRow("random", "0", DIMENSIONS, "cosine", 1),
        meta=schema.MetaRow(1, "bench", "", schema.TOOL_VERSION),
        names=names,
        row_of={name: row for row, name in enumerate(names)},
        hashes=tuple("h" for _ in names),
        matrix=matrix,
        queries={},
    )
    return reader.SemanticIndex(Path("bench.sqlite"), loaded), [FakeCard(n, "h") for n in names]


def numpy_floor(matrix: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top])]


def query_times(sizes: list[int], k: int) -> None:
    print(f"query time, k = {k} (best of runs; ratio = HQL / numpy floor)")
    print(
        f"{'vectors':>9} {'numpy ms':>9} {'search ms':>10} {'ratio':>6} {'rank ms':>8} {'ratio':>6} "
        f"{'new list':>8} {'1st rank':>8} {'all ms':>8}"
    )
    for size in sizes:
        measure_size(size, k)


def measure_size(size: int, k: int) -> None:
    matrix = unit_matrix(size)
    query = unit_matrix(1, seed=11)[0]
    index, cards = in_memory_index(matrix)
    repeats = 30 if size <= 100_000 else 7
    index.rank(query, cards, k)  # warm the alignment cache, as a loaded vault does
    floor = best_of(repeats, lambda: numpy_floor(matrix, query, k))
    search = best_of(repeats, lambda: index.search(query, k))
    rank = best_of(repeats, lambda: index.rank(query, cards, k))
    full = best_of(3, lambda: index.rank(query, cards, None))
    fresh_list = best_of(repeats, lambda: index.rank(query, list(cards), k))

    def cold_alignment() -> None:
        index._loaded.last_alignment.clear()
        index.rank(query, cards, k)

    cold = best_of(3, cold_alignment)
    assert [n for n, _ in index.search(query, k)] == [
        f"card-{i:07d}" for i in numpy_floor(matrix, query, k)
    ]
    print(
        f"{size:>9} {floor * 1e3:>9.2f} {search * 1e3:>10.2f} {search / floor:>6.2f} "
        f"{rank * 1e3:>8.2f} {rank / floor:>6.2f} {fresh_list * 1e3:>8.2f} {cold * 1e3:>8.1f} "
        f"{full * 1e3:>8.1f}"
    )


def open_times(size: int) -> None:
    matrix = unit_matrix(size)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "vault"
        path = root / ".hql" / "index.sqlite"
        path.parent.mkdir(parents=True)
        connection = sqlite3.connect(path)
        cards = (
            schema.CardRow(
                f"card-{i:07d}", f"card-{i:07d}.md", "h", matrix[i].astype("<f4").tobytes()
            )
            for i in range(size)
        )
        schema.write_index(
            connection,
            schema.ModelRow("random", "0", DIMENSIONS, "cosine", 1),
            schema.MetaRow(1, "vault", "", schema.TOOL_VERSION),
            cards,
            [],
        )
        connection.close()

        def bare_read() -> np.ndarray:
            db = sqlite3.connect(path)
            blobs = [row[0] for row in db.execute("SELECT embedding FROM card ORDER BY name")]
            db.close()
            return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), DIMENSIONS)

        def cold() -> None:
            reader.clear_cache()
            reader.SemanticIndex.open(path, root)

        floor = best_of(3, bare_read)
        first = best_of(3, cold)
        cached = best_of(20, lambda: reader.SemanticIndex.open(path, root))
        megabytes = path.stat().st_size / 1e6
        print(f"\nopening an index of {size} vectors ({megabytes:.0f} MB file)")
        print(f"  bare SELECT + frombuffer  {floor * 1e3:8.1f} ms")
        print(f"  first open (checked)      {first * 1e3:8.1f} ms   ratio {first / floor:.2f}")
        print(f"  cached open               {cached * 1e3:8.3f} ms   ratio {cached / floor:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--open-size", type=int, default=100_000)
    args = parser.parse_args()
    query_times([int(s) for s in args.sizes.split(",")], args.k)
    open_times(args.open_size)


if __name__ == "__main__":
    main()
