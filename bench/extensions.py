"""What declaring a step through hql.extend costs, against hand-written steps in the same run.

Run: .venv/bin/python bench/extensions.py

Prints, for each measurement, the declared path, its anchor and the ratio:
* step call: a program `cards | n` over a 3,000-card vault, where `n` counts its input,
  declared through hql.extend vs the same step written as a StepSpec by hand (checking,
  converting the input and checking the returned value included);
* bm25: `cards | bm25(q) | take(10)` on that vault, the shipped `bm25` (declared through
  hql.extend) vs the same ranking function behind a hand-written StepSpec;
* discovery: one look for installed packages (the entry_points.txt scan HQL does before
  importing importlib.metadata) vs `importlib.metadata.entry_points(group=…)`.

Times are CPU times of this process, best of several runs (the machines are shared).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hql  # noqa: E402
from hql import types as ty  # noqa: E402
from hql.extend import Extension, _installed_paths, _may_have_extensions, register  # noqa: E402
from hql.registry import REGISTRY, StepSpec, registry  # noqa: E402
from hql.values import elements  # noqa: E402

WORDS = [
    "token",
    "bearer",
    "oauth",
    "client",
    "secret",
    "grant",
    "scope",
    "refresh",
    "header",
    "cookie",
    "session",
]


def best(run: Callable[[], object], repeat: int = 7, number: int = 20) -> float:
    """Best CPU seconds per call."""
    times = []
    for _ in range(repeat):
        started = time.process_time()
        for _ in range(number):
            run()
        times.append((time.process_time() - started) / number)
    return min(times)


def write_vault(root: Path, count: int) -> None:
    for i in range(count):
        words = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(40))
        (root / f"card-{i:05d}.md").write_text(f"# Card {i}\n\n{words}\n", encoding="utf-8")


def row(label: str, ours: float, anchor: float, unit: str = "ms") -> None:
    scale = 1000.0 if unit == "ms" else 1_000_000.0
    print(
        f"{label:<12} {ours * scale:10.3f} {unit}   anchor {anchor * scale:10.3f} {unit}   "
        f"ratio {ours / anchor:6.2f}"
    )


def main() -> None:
    registry()
    declared = Extension("benchdecl", version="1", summary="bench")
    declared.add_step("Collection<Card> | n() -> Int", lambda cards: len(cards), summary="count")
    register(declared)
    REGISTRY.extension("benchhand", version="1", summary="bench")
    REGISTRY.add(
        StepSpec(
            "n",
            "benchhand",
            (),
            "Collection<Card> | n() -> Int",
            "count",
            "",
            lambda call: (call.element(), ty.INT)[1],
            lambda call: len(elements(call.input)),
        )
    )
    with tempfile.TemporaryDirectory() as folder:
        write_vault(Path(folder), 3000)
        vault = hql.open_vault(folder, use_cache=False)
        decl = hql.Session(vault)
        decl.run("import benchdecl")
        hand = hql.Session(vault)
        hand.run("import benchhand")
        assert decl.run("cards | n").value == hand.run("cards | n").value == 3000
        row("step call", best(lambda: decl.run("cards | n")), best(lambda: hand.run("cards | n")))

        from hql.steps.retrieval import QUERY, _cards, bm25_ranking, check_ranker

        REGISTRY.extension("bm25hand", version="1", summary="bench")
        REGISTRY.add(
            StepSpec(
                "bm25",
                "bm25hand",
                (QUERY,),
                "Collection<Card> | bm25(query: String) -> Ranking<Card>",
                "bm25 written by hand, as before hql.extend",
                "",
                check_ranker,
                lambda call: bm25_ranking(call, call.args["query"], _cards(call.input), call.limit),
                absorbs=("limit",),
            )
        )
        program = 'cards | bm25("bearer token") | take(10)'
        declared_bm25, hand_bm25 = hql.Session(vault), hql.Session(vault)
        declared_bm25.run("import bm25")
        hand_bm25.run("import bm25hand")
        first = declared_bm25.run(program).value
        assert first.hits == hand_bm25.run(program).value.hits  # same answer, index built
        row("bm25", best(lambda: declared_bm25.run(program)), best(lambda: hand_bm25.run(program)))

    from importlib.metadata import entry_points

    scan = best(lambda: _may_have_extensions(_installed_paths()), repeat=5, number=20)
    metadata = best(lambda: entry_points(group="hql.extensions"), repeat=5, number=20)
    row("discovery", scan, metadata)


if __name__ == "__main__":
    main()
