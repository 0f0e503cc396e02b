"""Mutated programs never cause an internal error or run past 10 s (issue 14).

Slow: runs only with HQL_SLOW=1 (HQL_FUZZ_COUNT sets how many programs, 3000 by default).
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

import hql

pytestmark = pytest.mark.skipif(os.environ.get("HQL_SLOW") != "1", reason="slow: HQL_SLOW=1")

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"
SEEDS = [
    "cards | count",
    'cards | filter(c => c.title != "") | map(c => c.name) | sort',
    "[3, 1, 2] | sort(by = (a, b) => compare(a, b))",
    "x = [1, 2, 3]\ny = [x, x, x]\ny | count",
    '"a" + "b"',
    "{a: 1, b: {c: [1, 2]}}",
    "cards | flat_map(a => cards | map(b => a.name)) | count",
    "[[oauth]] | expand(depth = 2)",
    "1 + 2 * 3",
]
PIECES = [
    "[",
    "]",
    "(",
    ")",
    ",",
    "|",
    "=>",
    "1",
    '"x"',
    "cards",
    "count",
    "sort",
    "=",
    "\n",
    "{",
    "}",
    ":",
    ".",
    "99999999999999999999",
    "-",
    "+",
    "map(c => c)",
    "a",
    "b",
]


def _big_literal(rng: random.Random) -> str:
    n = rng.choice([10_000, 30_000, 100_000])
    items = ", ".join(str(rng.randrange(1000)) for _ in range(n))
    tail = rng.choice(["| count", "| sort(by = (a, b) => compare(b, a)) | count", "| sort | count"])
    return f"[{items}] {tail}"


def _mutate(rng: random.Random, program: str) -> str:
    chars = list(program)
    for _ in range(rng.randint(1, 4)):
        where = rng.randrange(len(chars) + 1)
        action = rng.random()
        if action < 0.4:
            chars[where:where] = list(rng.choice(PIECES))
        elif action < 0.7 and chars:
            del chars[min(where, len(chars) - 1)]
        else:
            chars[where:where] = list(rng.choice(SEEDS))
    return "".join(chars)


def test_mutated_programs_fail_politely_and_quickly() -> None:
    rng = random.Random(int(os.environ.get("HQL_FUZZ_SEED", "14")))
    count = int(os.environ.get("HQL_FUZZ_COUNT", "3000"))
    vault = hql.open_vault(SAMPLE, use_cache=False)
    slowest = (0.0, 0.0, "")
    for index in range(count):
        big = index % 100 == 0  # one program in a hundred: a 10^4-10^5-element literal
        program = _big_literal(rng) if big else _mutate(rng, rng.choice(SEEDS))
        shown = program if len(program) <= 200 else f"{program[:120]}…{program[-60:]}"
        started, cpu = time.perf_counter(), time.process_time()
        try:
            hql.run(program, vault)
        except Exception as error:  # noqa: BLE001 - an internal error is the finding
            pytest.fail(f"internal error {error!r} on program {shown!r}")
        took = time.perf_counter() - started
        slowest = max(slowest, (took, time.process_time() - cpu, shown))
        assert took < 10, f"{took:.1f} s for {shown!r}"
    took, cpu, shown = slowest
    print(f"{count} programs, slowest {took:.2f} s ({cpu:.2f} s of CPU): {shown!r}")
