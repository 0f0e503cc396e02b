"""Parse and check time of a 20-stage pipeline, in microseconds (median of repeated runs).

    .venv/bin/python bench/parse.py [--runs N]

Prints the tokenize, parse and check figures separately, and the ratio of
parse+check to tokenizing alone (an anchor measured in the same run).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from hql.checker import Checker
from hql.syntax.parser import parse
from hql.syntax.tokens import tokenize

STAGES = [
    "map(x => x + 1)",
    "filter(x => x == 2)",
    "sort",
    "take(10)",
    "map(x => x + 2)",
    "sort(by = x => x)",
    "filter(x => x != 3)",
    "take(n = 8)",
    "map(x => x + 3)",
    "sort((a, b) => compare(a, b))",
    "filter(x => x == x)",
    "take(7)",
    "map(x => x + 4)",
    "sort",
    "filter(x => true)",
    "take(6)",
    "map(x => x + 5)",
    "sort",
    "take(5)",
    "count",
]
PROGRAM = "[3, 1, 2, 5, 4] | " + " | ".join(STAGES)


def median_us(action: Callable[[], object], runs: int) -> float:
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings) * 1e6


def parse_and_check() -> object:
    program = parse(PROGRAM)
    plan, reports = Checker(has_vault=False).check(program, collect=False)
    assert not reports, reports
    return plan


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--runs", type=int, default=2000)
    runs = options.parse_args().runs
    parse_and_check()  # warm the grammar tables and the registry
    tokens = median_us(lambda: tokenize(PROGRAM), runs)
    parsed = median_us(lambda: parse(PROGRAM), runs)
    program = parse(PROGRAM)
    checked = median_us(lambda: Checker(has_vault=False).check(program, collect=False), runs)
    both = median_us(parse_and_check, runs)
    print(f"program: 20 stages, {len(PROGRAM)} characters")
    print(f"tokenize:      {tokens:8.1f} us")
    print(f"parse:         {parsed:8.1f} us (tokenize included)")
    print(f"check:         {checked:8.1f} us")
    print(f"parse + check: {both:8.1f} us  ({both / tokens:.1f}x tokenize)")


if __name__ == "__main__":
    main()
