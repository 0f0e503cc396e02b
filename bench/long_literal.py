"""A list literal of many elements: parse, check and run, against Python reading the same text.

    .venv/bin/python bench/long_literal.py [--elements N]

For a literal of N integers (default 100,000) followed by `count`, `sort`,
`sort(by = (a, b) => compare(b, a))`, two comparators HQL must call for every
comparison, `map` and `filter`, prints the CPU seconds of one whole `hql.run`, its
ratio to the anchor measured in the same run (`ast.literal_eval` of the same list
text: Python's own tokenizer and parser, in C, plus building the list) and the
seconds beyond the plain `count` (what the step and its lambda cost, without the
parsing and checking every row pays). CPU time, not wall time: the machines running
this are shared.
"""

from __future__ import annotations

import argparse
import ast
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hql  # noqa: E402

TAILS = [
    "count",
    "sort | count",
    "sort(by = (a, b) => compare(b, a)) | count",
    "sort(by = (a, b) => compare(a + 0, b)) | count",
    "sort(by = (a, b) => compare(b % 10, a % 10)) | count",
    "map(x => x + 1) | count",
    "filter(x => x > 5) | count",
]


def cpu_seconds(action: Callable[[], object]) -> float:
    started = time.process_time()
    action()
    return time.process_time() - started


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--elements", type=int, default=100_000)
    count = options.parse_args().elements
    rng = random.Random(14)
    numbers = [rng.randrange(1000) for _ in range(count)]
    literal = "[" + ", ".join(map(str, numbers)) + "]"
    expected = {"filter(x => x > 5) | count": sum(number > 5 for number in numbers)}
    hql.run("[1, 2] | count")  # tables and registry in place
    anchor = cpu_seconds(lambda: ast.literal_eval(literal))
    print(f"{count:,} elements; anchor ast.literal_eval: {anchor:.3f} s")
    print(f"  {'tail':54} {'CPU':>9}  {'/ anchor':>8}  {'beyond count':>12}")
    plain = 0.0
    for tail in TAILS:
        started = time.process_time()
        outcome = hql.run(f"{literal} | {tail}")  # a new text each time: parsed and checked
        seconds = time.process_time() - started
        assert not outcome.failed, outcome.render_reports()
        assert outcome.value == expected.get(tail, count), outcome.value
        plain = plain or seconds  # the first tail, `count`: parsing, checking, measuring
        beyond = f"{seconds - plain:10.3f} s" if tail != "count" else ""
        print(f"  | {tail:52} {seconds:7.3f} s  {seconds / anchor:7.1f}x  {beyond:>12}")


if __name__ == "__main__":
    main()
