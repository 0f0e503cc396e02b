"""Mutated programs never cause an internal error or run past 10 s of CPU (issues 14, 31).

Slow: runs only with HQL_SLOW=1. HQL_FUZZ_COUNT sets how many programs (5,000 by
default), HQL_FUZZ_SEED the seed, HQL_FUZZ_MEMORY the worker's address-space limit in
MiB (3,072 by default). The programs are mutations of the README's and docs' programs,
of each registered step and function, and of hostile seeds (parameters, deep nesting,
long literals), run through `hql.run`, the command line (arguments, `--param-json`,
stdin, check, explain) and the MCP service (query with params, check, explain, search,
context, card, the card resource, render): tests/fuzz_entries.py, in one process under
the memory limit. The log names the slowest program of each entry point and its time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("HQL_SLOW") != "1", reason="slow: HQL_SLOW=1")

TESTS = Path(__file__).resolve().parent
SAMPLE = TESTS.parent / "vaults" / "web-auth"
CPU_LIMIT = 10.0


def _limit_memory(mebibytes: int) -> Any:
    def limit() -> None:
        import resource

        size = mebibytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return limit


def test_mutated_programs_fail_politely_and_quickly(tmp_path: Path) -> None:
    """No internal error, and no program over 10 s of CPU, under a memory limit.

    The limit is the process's CPU time, not the wall clock: on a shared machine (2
    cores, a load average of 15) a program waits for a core most of the time, and the
    wall clock measures the machine (a program blocked for a minute still fails). Both
    are printed for the slowest program of each entry point.
    """
    count = int(os.environ.get("HQL_FUZZ_COUNT", "5000"))
    seed = int(os.environ.get("HQL_FUZZ_SEED", "31"))
    memory = int(os.environ.get("HQL_FUZZ_MEMORY", "3072"))
    vault = tmp_path / "vault"
    shutil.copytree(SAMPLE, vault, ignore=shutil.ignore_patterns(".hql"))
    results = tmp_path / "results.jsonl"
    worker = subprocess.run(
        [
            sys.executable,
            str(TESTS / "fuzz_entries.py"),
            str(vault),
            str(count),
            str(seed),
            str(results),
        ],
        capture_output=True,
        text=True,
        preexec_fn=_limit_memory(memory),  # noqa: PLW1509 - no threads in the child yet
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(TESTS.parent))},
        check=False,
    )
    lines = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    started = {line["start"]: line for line in lines if "start" in line}
    done = [line for line in lines if "done" in line]
    if worker.returncode != 0 or len(done) != count:
        last = started.get(len(done), {})
        pytest.fail(
            f"the worker ended after {len(done)} of {count} programs (exit {worker.returncode}), "
            f"on {last.get('entry')} {last.get('program')!r}:\n{worker.stderr[-3000:]}"
        )
    slowest: dict[str, dict[str, Any]] = {}
    for line in done:
        kind = line["entry"]
        if kind not in slowest or line["cpu"] > slowest[kind]["cpu"]:
            slowest[kind] = line
    counts = {kind: sum(line["entry"] == kind for line in done) for kind in slowest}
    print(f"{count} programs (seed {seed}, {memory} MiB), by entry point: {counts}")
    for kind, line in sorted(slowest.items()):
        program = started[line["done"]]["program"]
        print(
            f"slowest {kind}: {line['cpu']:.2f} s of CPU ({line['wall']:.2f} s wall): {program!r}"
        )
    errors = [(line, started[line["done"]]) for line in done if line["error"]]
    assert not errors, "\n".join(
        f"internal error through {start['entry']} on {start['program']!r}: {line['error']}"
        for line, start in errors[:10]
    )
    over = [(line, started[line["done"]]) for line in done if line["cpu"] >= CPU_LIMIT]
    assert not over, "\n".join(
        f"{line['cpu']:.1f} s of CPU ({line['wall']:.1f} s wall) through {start['entry']}: "
        f"{start['program']!r}"
        for line, start in over[:10]
    )
