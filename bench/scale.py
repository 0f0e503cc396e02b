"""What users pay as the vault grows: whole `hql.run` and CLI calls at 5k and 100k cards.

    .venv/bin/python bench/scale.py [--sizes 5000,100000] [--queries 30] [--reuse DIR]
                                    [--api-only | --cli-only]

`--reuse DIR` keeps each vault's cards under DIR/scale-<size> and uses them again on the next
run (building 100k files is slow); the state of a run (.hql/, the semantic index) is removed
first, so the cold row is still a first load.

Needs `pip install bm25s` for the bm25 anchor (not a dependency of hql).
Vaults are SciFact abstracts (../shared/datasets/scifact, 5,183), cycled to the size
asked for, one Markdown file per card. Every row prints HQL's number, the anchor's,
measured in the same run, and the ratio:

* API `bm25($q) | take(10)`: ms per `hql.run` with `params={"q": …}` on an open vault (the
  plan is checked once and reused, as for any program run with many parameter values), against bm25s `retrieve(k=10)` per query on the same texts;
* API `bm25($q) | relevant | take(10)`: the same, deciding relevance first (the anchor is
  still bm25s `retrieve(k=10)`, which decides nothing);
* API `semantic(q) | take(10)`: ms per `hql.run` over a 64-d index of every card (query
  vectors stored in the index), against numpy `X @ q` + top-10 on the same matrix;
* CLI `cards | count` and `bm25(q) | take(10)`, caches warm, against `python -c pass`, and
  their difference (what a bm25 query pays beyond opening the vault); then
  the same while `hql vault watch` serves the vault (it answers the commands itself, the
  vault kept open), a new question at each call too, and the watcher's own peak memory;
* the least a pure-Python indexer does (read, lowercase, split, count, write the postings:
  bench/engines.py), beside the engines' indexing, against the same HQL figures;
* cold first load: the first CLI call on a fresh vault (no .hql/), in seconds; before it, a
  fresh vault whose first command is the bm25 query (load and build in one process, as a
  user's first question is), its state then removed;
* the floor of any load that checks every file: `os.scandir` + `stat` of every card in
  Python, in-process (no start-up), against `python -c pass`;
* peak memory (max RSS) of the CLI bm25 query and of the CLI `cards | count`.

Times are best-of-runs wall clock (the machines are shared: ratios are what to read); an API
row alternates HQL's runs with its anchor's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import engines  # noqa: E402

import hql  # noqa: E402
from hql.index import schema  # noqa: E402

DATA = Path(os.environ.get("HQL_SHARED", ROOT.parent / "shared")) / "datasets" / "scifact"
DIMENSIONS = 64
# The CLI runs as an installed hql does: with its modules' bytecode cached (a shell that
# sets PYTHONDONTWRITEBYTECODE would otherwise make every call compile hql from source).
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ENV.pop("PYTHONDONTWRITEBYTECODE", None)


def best_of(repeats: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def corpus() -> tuple[list[dict[str, str]], list[str]]:
    docs = [json.loads(line) for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(line)["text"] for line in (DATA / "queries.jsonl").open()]
    return docs, queries


def make_vault(root: Path, docs: list[dict[str, str]], size: int) -> None:
    for i in range(size):
        doc = docs[i % len(docs)]
        name = f"{doc['_id']}-{i // len(docs)}" if i >= len(docs) else doc["_id"]
        (root / f"{name}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")


def reused_vault(folder: Path, docs: list[dict[str, str]], size: int) -> Path:
    """DIR/scale-<size> with its cards made once, without the state earlier runs left."""
    root = folder / f"scale-{size}"
    done = folder / f"scale-{size}.complete"
    if not done.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        make_vault(root, docs, size)
        done.touch()
    shutil.rmtree(root / ".hql", ignore_errors=True)
    for leftover in ("semantic.sqlite", "hql.toml"):
        (root / leftover).unlink(missing_ok=True)
    return root


def add_semantic_index(root: Path, queries: list[str]) -> np.ndarray:
    """A 64-d index of every card, its vectors mixtures of a few topics, queries stored."""
    vault = hql.Vault.open(root)
    rng = np.random.default_rng(11)
    topics = rng.standard_normal((64, DIMENSIONS)).astype(np.float32)
    weights = rng.dirichlet(np.full(64, 0.1), size=len(vault.cards)).astype(np.float32)
    matrix = weights @ topics + 0.05 * rng.standard_normal((len(vault.cards), DIMENSIONS))
    matrix = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    query_vectors = matrix[rng.integers(0, len(matrix), len(queries))] + 0.1 * rng.standard_normal(
        (len(queries), DIMENSIONS)
    ).astype(np.float32)
    query_vectors /= np.linalg.norm(query_vectors, axis=1, keepdims=True)
    connection = sqlite3.connect(root / "semantic.sqlite")
    schema.write_index(
        connection,
        schema.ModelRow("bench-mixtures", "1", DIMENSIONS, "cosine", 1),
        schema.MetaRow(schema.SCHEMA_VERSION, str(root), "2026-01-01T00:00:00Z", "bench"),
        (
            schema.CardRow(card.name, str(card.path), card.digest, schema.vector_to_blob(row))
            for card, row in zip(vault.cards, matrix, strict=True)
        ),
        [(q, schema.vector_to_blob(v)) for q, v in zip(queries, query_vectors, strict=True)],
    )
    connection.close()
    (root / "hql.toml").write_text('[semantics]\nindex = "semantic.sqlite"\n', encoding="utf-8")
    return matrix


def quoted(question: str) -> str:
    return question.replace("\\", " ").replace('"', "'")


def api_rows(
    root: Path,
    queries: list[str],
    matrix: np.ndarray,
    new_questions: list[str],
    engine_dirs: dict[str, Path],
) -> None:
    import bm25s

    vault = hql.Vault.open(root)
    texts = [f"{card.title} {card.text}" for card in vault.cards]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    tokens = [bm25s.tokenize([q], stopwords="en", show_progress=False) for q in queries]

    def ours_bm25() -> None:
        for q in queries:
            hql.run("import bm25\ncards | bm25($q) | take(10)", vault=vault, params={"q": q})

    def theirs_bm25() -> None:
        for t in tokens:
            retriever.retrieve(t, k=10, show_progress=False)

    def ours_relevant() -> None:
        for q in queries:
            hql.run(
                "import bm25\ncards | bm25($q) | relevant | take(10)", vault=vault, params={"q": q}
            )

    ours_bm25()  # builds the bm25 index once
    row("API bm25 | take(10), ms/query", ours_bm25, theirs_bm25, len(queries), "bm25s")
    row(
        "API bm25 | relevant | take(10), ms/query",
        ours_relevant,
        theirs_bm25,
        len(queries),
        "bm25s",
    )

    new_question_rows(vault, retriever, new_questions, engine_dirs)

    query_vectors = {
        q: schema.blob_to_vector(blob)
        for q, blob in sqlite3.connect(root / "semantic.sqlite").execute("SELECT * FROM query")
    }

    def ours_semantic() -> None:
        for q in queries:
            hql.run(
                "import semantic\ncards | semantic($q) | take(10)", vault=vault, params={"q": q}
            )

    def floor() -> None:
        for q in queries:
            scores = matrix @ query_vectors[q]
            top = np.argpartition(-scores, 9)[:10]
            top[np.argsort(-scores[top])]

    ours_semantic()  # reads the index once
    row("API semantic | take(10), ms/query", ours_semantic, floor, len(queries), "numpy X@q")


def new_question_rows(
    vault: hql.Vault, retriever: object, questions: list[str], engine_dirs: dict[str, Path]
) -> None:
    """Each question asked once, as literal program text (a person's question, not `$q`):
    ms per question against bm25s (tokenising it, as it must) and each engine in process."""
    import bm25s

    half = len(questions) // 2
    # Two disjoint halves: ours on one and theirs on the other, then the other way round.
    halves = (questions[:half], questions[half:])

    def ours(asked: list[str]) -> float:
        started = time.perf_counter()
        for q in asked:
            hql.run(f'import bm25\ncards | bm25("{quoted(q)}") | take(10)', vault=vault)
        return (time.perf_counter() - started) / len(asked)

    def bm25s_new(asked: list[str]) -> float:
        started = time.perf_counter()
        for q in asked:
            tokens = bm25s.tokenize([q], stopwords="en", show_progress=False)
            retriever.retrieve(tokens, k=10, show_progress=False)  # type: ignore[attr-defined]
        return (time.perf_counter() - started) / len(asked)

    anchors: dict[str, Callable[[list[str]], float]] = {"bm25s": bm25s_new}
    for engine, folder in engine_dirs.items():
        searcher = engines.in_process(engine, folder)
        next(searcher)

        def asked_of(asked: list[str], searcher: Any = searcher) -> float:
            started = time.perf_counter()
            for q in asked:
                searcher.send(q)
            return (time.perf_counter() - started) / len(asked)

        anchors[engine] = asked_of
    mine = min(ours(halves[0]), ours(halves[1]))
    for name, theirs in anchors.items():
        floor = min(theirs(halves[1]), theirs(halves[0]))
        print(
            f"  {'API bm25, a new literal question, ms/query':<45}{mine * 1000:9.2f} ms"
            f"  {name} {floor * 1000:7.2f} ms  ratio {mine / floor:6.1f}x"
        )


def cli_rows(root: Path, question: str) -> dict[str, Path]:
    def hql_cli(program: str) -> Callable[[], object]:
        command = [sys.executable, "-m", "hql", "--vault", str(root), "eval", program]
        return lambda: subprocess.run(command, env=ENV, check=True, capture_output=True)

    python = [sys.executable, "-c", "pass"]
    bare = best_of(5, lambda: subprocess.run(python, check=True))
    base = [sys.executable, "-m", "hql", "--vault", str(root), "eval"]
    ranking = f'import bm25\ncards | bm25("{quoted(question)}") | take(10)'
    once, once_mb = engines.timed_with(ENV, [*base, ranking])
    shutil.rmtree(root / ".hql")  # what that command left: the rows below start afresh
    print(f"  first command a bm25 query (fresh vault)      {once:8.2f} s  {once_mb:6.0f} MB")
    cold, cold_mb = engines.timed_with(ENV, [*base, "cards | count"])
    print(f"  cold first load (CLI cards | count, no .hql/)  {cold:8.2f} s  {cold_mb:6.0f} MB")
    first, first_mb = engines.timed_with(ENV, [*base, ranking])  # writes both word indexes
    built = cold + first
    print(
        f"  first CLI bm25 query (writes its indexes)     {first:8.2f} s  {first_mb:6.0f} MB"
        f"  first load + first query {built:6.2f} s"
    )
    engine_dirs = engine_rows(root, (built, once), (max(cold_mb, first_mb), once_mb))
    count = hql_cli("cards | count")
    ranked = hql_cli(ranking)
    took = {}
    for label, action in (("CLI cards | count", count), ("CLI bm25 | take(10)", ranked)):
        ours = took[label] = best_of(3, action)
        print(
            f"  {label:<45}{ours * 1000:9.1f} ms  python -c pass {bare * 1000:7.1f} ms"
            f"  ratio {ours / bare:6.1f}x"
        )
    fresh_engine_rows(engine_dirs, question, took["CLI bm25 | take(10)"], "")
    extra = took["CLI bm25 | take(10)"] - took["CLI cards | count"]
    print(
        f"  {'CLI bm25 | take(10) minus CLI cards | count':<45}{extra * 1000:9.1f} ms"
        f"  python -c pass {bare * 1000:7.1f} ms  ratio {extra / bare:6.1f}x"
    )
    questions = iter([f"{question} {word}" for word in NEW_WORDS])

    def new_question() -> object:
        program = f'import bm25\ncards | bm25("{quoted(next(questions))}") | take(10)'
        return hql_cli(program)()

    with watched(root) as watcher_pid:
        # The first command the watcher answers opens the vault (its load walks, and records
        # its walk); the ones after it find the vault open.
        first_answered = best_of(1, count)
        print(
            f"  {'CLI cards | count, watched, first answered':<45}{first_answered * 1000:9.1f} ms"
        )
        for label, action in (
            ("CLI cards | count, watched", count),
            ("CLI bm25 | take(10), watched", ranked),
            ("CLI bm25 | take(10), watched, new question", new_question),
        ):
            ours = took[label] = best_of(3, action)
            print(
                f"  {label:<45}{ours * 1000:9.1f} ms  python -c pass {bare * 1000:7.1f} ms"
                f"  ratio {ours / bare:6.1f}x"
            )
        print(
            f"  {'the watcher: peak memory (it keeps the vault)':<45}{peak_of(watcher_pid):9.0f} MB"
        )
    fresh_engine_rows(engine_dirs, question, took["CLI bm25 | take(10), watched"], ", watched")
    fresh_engine_rows(
        engine_dirs,
        question,
        took["CLI bm25 | take(10), watched, new question"],
        ", watched, new question",
    )
    walk = best_of(3, lambda: stat_walk(root))
    print(
        f"  {'stat walk alone (scandir + stat, in-process)':<45}{walk * 1000:9.1f} ms"
        f"  python -c pass {bare * 1000:7.1f} ms  ratio {walk / bare:6.1f}x"
    )
    print(f"  peak memory of the CLI bm25 query            {peak_rss_mb(root, ranking):8.0f} MB")
    print(
        f"  peak memory of the CLI cards | count         {peak_rss_mb(root, 'cards | count'):8.0f} MB"
    )
    return engine_dirs


def engine_rows(
    root: Path, built: tuple[float, float], peak_mb: tuple[float, float]
) -> dict[str, Path]:
    """Each installed engine indexes the vault's files: its time and memory against HQL's
    first load plus first bm25 query, as two commands and as one. Returns each engine's index
    folder."""
    folders = {}
    for engine in engines.available():
        folder = Path(tempfile.mkdtemp(prefix=f"hql-scale-{engine}-"))
        seconds, megabytes = engines.build(engine, root, folder)
        folders[engine] = folder
        print(
            f"  {engine + ' indexing the files':<45}{seconds:9.2f} s  {megabytes:6.0f} MB"
            f"  ratio (HQL first load + query) {built[0] / seconds:5.1f}x"
            f"  memory {peak_mb[0] / megabytes:5.1f}x"
            f"  (one command {built[1] / seconds:5.1f}x, memory {peak_mb[1] / megabytes:5.1f}x)"
        )
    floor = Path(tempfile.mkdtemp(prefix="hql-scale-python-"))
    try:
        seconds, megabytes = engines.build("python", root, floor)
    finally:
        shutil.rmtree(floor, ignore_errors=True)
    print(
        f"  {'the least a pure-Python indexer does':<45}{seconds:9.2f} s  {megabytes:6.0f} MB"
        f"  ratio (HQL first load + query) {built[0] / seconds:5.1f}x"
        f"  (one command {built[1] / seconds:5.1f}x)"
    )
    return folders


def fresh_engine_rows(folders: dict[str, Path], question: str, ours: float, how: str) -> None:
    """Each engine's fresh-process query (best of 3) against HQL's CLI bm25 query."""
    for engine, folder in folders.items():
        theirs = engines.best_wall(engines.query_command(engine, folder, question), 3)
        print(
            f"  {engine + ' query, fresh process':<45}{theirs * 1000:9.1f} ms"
            f"  CLI bm25{how} {ours * 1000:7.1f} ms  ratio {ours / theirs:6.1f}x"
        )


# Words added to the question so that each call asks something new.
NEW_WORDS = ("cells", "protein", "risk", "patients", "gene", "cancer", "treatment")


def peak_of(pid: int) -> float:
    """A running process's peak resident memory (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@contextlib.contextmanager
def watched(root: Path) -> Iterator[int]:
    """`hql vault watch` serving the vault meanwhile (loads take their walk from the catalogue,
    and it answers the CLI's commands itself); yields its process id."""
    command = [sys.executable, "-m", "hql", "--vault", str(root), "vault", "watch"]
    watcher = subprocess.Popen(command, env=ENV, stderr=subprocess.PIPE, text=True)
    try:
        assert watcher.stderr is not None
        started = watcher.stderr.readline()
        if not started.startswith("watching"):
            raise RuntimeError(f"the watcher did not start: {started}")
        yield watcher.pid
    finally:
        watcher.terminate()
        watcher.communicate(timeout=30)


def stat_walk(root: Path) -> int:
    """What every load that checks its files pays at least: list the folder, stat each card."""
    seen = 0
    with os.scandir(root) as listing:
        for entry in listing:
            if not entry.name.startswith("."):
                status = entry.stat()
                seen += status.st_size > 0
    return seen


def peak_rss_mb(root: Path, program: str) -> float:
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    command = [sys.executable, "-c", probe, sys.executable, "-m", "hql", "--vault", str(root)]
    done = subprocess.run([*command, "eval", program], env=ENV, check=True, capture_output=True)
    return int(done.stdout.decode().strip()) / 1024


def row(
    label: str, ours: Callable[[], object], theirs: Callable[[], object], n: int, anchor: str
) -> None:
    # Ours and the anchor alternate, so that both are timed through the same moments of a
    # shared machine (three of ours, then three of theirs, could see two different loads).
    mine_runs, floor_runs = [], []
    for _ in range(5):
        mine_runs.append(best_of(1, ours))
        floor_runs.append(best_of(1, theirs))
    mine, floor = min(mine_runs) / n, min(floor_runs) / n
    print(
        f"  {label:<45}{mine * 1000:9.2f} ms  {anchor} {floor * 1000:7.2f} ms"
        f"  ratio {mine / floor:6.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="5000,100000")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--reuse", type=Path, help="keep the vaults' cards here between runs")
    parser.add_argument("--cli-only", action="store_true", help="skip the API rows")
    parser.add_argument("--api-only", action="store_true", help="skip the CLI rows")
    args = parser.parse_args()
    docs, all_queries = corpus()
    plain = [q for q in all_queries if re.fullmatch(r"[^\"\\]+", q)]
    queries = plain[: args.queries]
    new_questions = plain[args.queries : 2 * args.queries]  # asked once each
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="hql-scale-") as tmp:
            if args.reuse:
                root = reused_vault(args.reuse, docs, size)
            else:
                root = Path(tmp)
                make_vault(root, docs, size)
            print(f"{size:,} cards  (load average {os.getloadavg()[0]:.2f})")
            engine_dirs: dict[str, Path] = {}
            if not args.api_only:
                engine_dirs = cli_rows(root, queries[0])
            if not args.cli_only:
                matrix = add_semantic_index(root, queries)
                api_rows(root, queries, matrix, new_questions, engine_dirs)
            for folder in engine_dirs.values():
                shutil.rmtree(folder, ignore_errors=True)
            print(f"  load average after {os.getloadavg()[0]:.2f}")
    print(
        f"max RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )


if __name__ == "__main__":
    main()
