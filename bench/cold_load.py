"""The first CLI load of a large vault, against the same load by another checkout of HQL.

    .venv/bin/python bench/cold_load.py --vault DIR --anchor TREE [--rounds 3] [--warm]
                                        [--program 'cards | count']

TREE is another source tree of HQL (say `git worktree add /tmp/anchor <commit>`). Each
round runs `hql --vault DIR eval 'cards | count'` once with this tree's hql and once with
the anchor's, alternating which goes first, each after removing DIR/.hql (a first load:
every file read and parsed, the catalogue written). `--warm` times the cached load
instead (best of three calls, each tree on the catalogue it wrote itself); `--program` runs
another program (one that reads every card builds them all from the catalogue). Wall clock of
the whole CLI call is what a user waits for; the machine's load average is printed before
and after, and the ratio of the best times is what to read. DIR is never written to except
its .hql/ (the cards may be hard links into another vault).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The CLI runs as an installed hql does: with its modules' bytecode cached.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


PROGRAM = "cards | count"


def count_call(tree: Path, vault: Path, program: str) -> tuple[float, str]:
    command = [sys.executable, "-m", "hql", "--vault", str(vault), "eval", program]
    started = time.perf_counter()
    done = subprocess.run(
        command, env={**ENV, "PYTHONPATH": str(tree)}, capture_output=True, text=True, check=True
    )
    return time.perf_counter() - started, done.stdout.strip()


def fresh(vault: Path) -> None:
    shutil.rmtree(vault / ".hql", ignore_errors=True)


def measure(tree: Path, vault: Path, warm: bool, program: str) -> tuple[float, str]:
    fresh(vault)
    if not warm:
        return count_call(tree, vault, program)
    count_call(tree, vault, program)  # the catalogue this tree writes
    runs = [count_call(tree, vault, program) for _ in range(3)]
    return min(runs)


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--anchor", type=Path, required=True, help="another HQL source tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="the cached load instead")
    parser.add_argument("--program", default=PROGRAM, help="the program each call runs")
    options = parser.parse_args()
    program = options.program
    trees = {"this": ROOT, "anchor": options.anchor.resolve()}
    for tree in trees.values():  # compiles each tree's bytecode; not timed
        measure(tree, options.vault, False, program)
    kind = "warm (cached) load" if options.warm else "cold first load"
    print(f"{kind}, CLI {program} on {options.vault}; load average {load_average()}")
    times: dict[str, list[float]] = {name: [] for name in trees}
    answers = set()
    for round_number in range(options.rounds):
        order = list(trees) if round_number % 2 == 0 else list(trees)[::-1]
        for name in order:
            took, answer = measure(trees[name], options.vault, options.warm, program)
            times[name].append(took)
            answers.add(answer)
        print(
            f"  round {round_number + 1}: this {times['this'][-1]:6.2f} s"
            f"  anchor {times['anchor'][-1]:6.2f} s",
            flush=True,
        )
    fresh(options.vault)
    best_this, best_anchor = min(times["this"]), min(times["anchor"])
    print(
        f"  best: this {best_this:.2f} s  anchor {best_anchor:.2f} s"
        f"  ratio {best_this / best_anchor:.3f}x  (answers {sorted(answers)})"
    )
    print(f"  load average after {load_average()}")


if __name__ == "__main__":
    main()
