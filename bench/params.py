"""The cost of `hql.run` with a cached plan against parsing and checking every time, same run.

    .venv/bin/python bench/params.py [--runs N] [--vault DIR]

One parameterised program is run N times with a new `$who` each time: once through
`hql.run` (the plan is checked on the first call and reused), once through a Session
without a plan cache (parse, check and run every time). The anchor is the uncached run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import hql
from hql.api import PlanCache, Session

PROGRAM = """
cards
  | filter(c => c.metadata.owner == $who and c.metadata.status != "done" or $all)
  | sort(by = c => c.name)
  | map(c => {name: c.name, title: c.title, owner: c.metadata.owner ?? "nobody"})
  | take(5)
"""
OWNERS = ["ada", "grace", "edsger", "barbara", "nobody"]


def timed(run: object, runs: int) -> list[float]:
    timings = []
    for index in range(runs):
        params = {"who": OWNERS[index % len(OWNERS)], "all": index % 7 == 0}
        start = time.perf_counter()
        outcome = run(params)  # type: ignore[operator]
        timings.append(time.perf_counter() - start)
        assert not outcome.failed, outcome.render_reports()
    return timings


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--runs", type=int, default=1000)
    options.add_argument(
        "--vault", default=str(Path(__file__).resolve().parents[1] / "vaults" / "web-auth")
    )
    args = options.parse_args()
    vault = hql.open_vault(args.vault)
    uncached = Session(vault, cache=PlanCache(0))
    hql.run(PROGRAM, vault=vault, params={"who": "ada", "all": False})  # warm both paths
    uncached.run(PROGRAM, params={"who": "ada", "all": False})
    anchor = timed(lambda params: uncached.run(PROGRAM, params=params), args.runs)
    cached = timed(lambda params: hql.run(PROGRAM, vault=vault, params=params), args.runs)
    a, c = statistics.median(anchor), statistics.median(cached)
    print(f"vault: {args.vault} ({len(vault.cards)} cards), {args.runs} runs each")
    print(f"parse + check + run every time: {a * 1e6:9.1f} us per run (median)")
    print(f"hql.run with the cached plan:   {c * 1e6:9.1f} us per run (median)")
    print(f"ratio cached / uncached:        {c / a:9.2f}x ({a / c:.1f}x faster)")


if __name__ == "__main__":
    main()
