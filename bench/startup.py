"""Startup time of `hql eval '1 + 1'` as a ratio to `python -c pass`, both measured in this run.

    .venv/bin/python bench/startup.py [--runs N]

Each figure is the median wall time of N runs; the goal is a ratio of at most 3.
"""

from __future__ import annotations

import argparse
import compileall
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import hql


def median_seconds(command: list[str], runs: int) -> float:
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def hql_command() -> list[str]:
    """The console script installed beside this interpreter, else `python -m hql`."""
    script = Path(sys.executable).with_name("hql")
    if script.exists():
        return [str(script)]
    found = shutil.which("hql")
    return [found] if found else [sys.executable, "-m", "hql"]


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--runs", type=int, default=21)
    runs = options.parse_args().runs
    command = [*hql_command(), "eval", "1 + 1"]
    # An installed package has its bytecode compiled; measure that, not the compiler
    # (this machine sets PYTHONDONTWRITEBYTECODE, so nothing is cached otherwise).
    compileall.compile_dir(str(Path(hql.__file__).parent), quiet=1)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)  # warm the file cache
    anchor = median_seconds([sys.executable, "-c", "pass"], runs)
    measured = median_seconds(command, runs)
    print(f"python -c pass:     {anchor * 1000:7.1f} ms (median of {runs})")
    print(f"hql eval '1 + 1':   {measured * 1000:7.1f} ms (median of {runs})")
    print(f"ratio:              {measured / anchor:7.2f}x (goal: at most 3x)")


if __name__ == "__main__":
    main()
