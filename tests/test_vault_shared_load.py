"""A first load shares its parsing with a forked process and gives exactly what a load alone gives.

The cases are in tests/shared_load_cases.py: cards (every field), edges, warnings in
order and the catalogue written (every row of every table) compared with the same vault
loaded by one process, on realistic vaults and on hostile files; a forked process that
dies, sends garbage or is interrupted loses nothing and is always waited for.

A load beside another thread is never shared, and by the time a whole test run gets
here other libraries (a BLAS, a client) have started threads of their own: the cases
run in a fresh interpreter.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CASES = Path(__file__).with_name("shared_load_cases.py")


@pytest.mark.skipif(
    not hasattr(os, "fork")
    or not os.path.isdir("/proc/self/task")
    or len(os.sched_getaffinity(0)) < 2,
    reason="sharing a load needs fork, /proc and two cores",
)
def test_the_cases_in_a_fresh_interpreter(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-o",
            "addopts=",
            "-q",
            "-p",
            "no:cacheprovider",
            str(CASES),
        ]
        + ["--basetemp", str(tmp_path / "cases")],
        cwd=CASES.parent.parent,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    report = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, report
    ran = re.search(r"(\d+) passed", done.stdout)
    assert ran is not None and int(ran.group(1)) >= 16, report
    assert "skipped" not in done.stdout and "deselected" not in done.stdout, report
