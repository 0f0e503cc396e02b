"""Deeply nested programs are refused in time linear in their length.

    .venv/bin/python bench/nesting.py [--depth N]

For each opener the parser must refuse (parentheses, calls, lists, records, comparisons,
type arguments), prints the CPU seconds `hql.check` takes on nesting N deep and 5N deep,
and their ratio: about 5 is linear, about 25 quadratic. The anchor is the same run's
shallower program, so the ratio holds on a loaded machine where seconds do not.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hql  # noqa: E402

OPENERS = [("(", ")"), ("f(", ")"), ("x < ", ""), ("[", "]"), ("{a: ", "}"), ("Set<", "")]


def _seconds(source: str, rounds: int = 3) -> float:
    best = float("inf")
    for round_ in range(rounds):
        text = source + " " * round_  # a new text each round: checks of one text are cached
        started = time.process_time()
        outcome = hql.check(text)
        best = min(best, time.process_time() - started)
        assert outcome.failed, "a program nested this deep must be refused"
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=20_000)
    depth = parser.parse_args().depth
    hql.check("(1)")  # imports and the grammar's first use stay out of the figures
    print(f"{'opener':8} {'N s':>8} {'5N s':>8} {'ratio':>6}")
    for opener, closer in OPENERS:
        small = _seconds(opener * depth + "1" + closer * depth)
        large = _seconds(opener * 5 * depth + "1" + closer * 5 * depth)
        print(f"{opener!r:8} {small:8.3f} {large:8.3f} {large / max(small, 1e-9):6.1f}")


if __name__ == "__main__":
    main()
