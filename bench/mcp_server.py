"""What the MCP server adds to a search: `search` against `hql.run` of the same program, same run.

Run: .venv/bin/python bench/mcp_server.py [--vault vaults/web-auth] [--rounds 30]

Three ways to answer the same questions with bm25, each timed per call (median
and fastest over all questions and rounds):

- anchor: `hql.run(program, vault=vault)` with the vault already open, the program
  being exactly the one the server's `search` tool writes;
- service: `VaultService.search`, what the tool does in process (the stat walk that
  notices edits, the program's own thread under the time budget, the JSON answer);
- stdio: `call_tool("search", …)` through the official SDK's client to `hql mcp`
  running as a subprocess (adds the protocol, JSON-RPC over pipes, pydantic), and
  beside it `call_tool("check", {"program": "1"})`, a call that does almost nothing:
  the protocol's own cost, which `search` over stdio is compared with.

Printed as milliseconds more than the anchor and as ratios to it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hql  # noqa: E402
from hql.mcp.service import VaultService  # noqa: E402

QUESTIONS = [
    "how does a client prove who it is?",
    "bearer token",
    "cookie sent with cross-site requests",
    "refresh an expired access token",
    "which scripts may a page run",
    "zebra migration patterns",  # answered by nothing: relevant abstains
]


def timings(call: Callable[[str], object], rounds: int) -> list[float]:
    for question in QUESTIONS:  # warm: the index, the analyser's caches
        call(question)
    samples = []
    for _ in range(rounds):
        for question in QUESTIONS:
            started = time.perf_counter()
            call(question)
            samples.append(time.perf_counter() - started)
    return samples


def stdio_timings(vault: str, rounds: int) -> tuple[list[float], list[float]]:
    """Per call: `search`, and `check("1")` (the protocol's own cost: a tool that does nothing)."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "hql.mcp", "--vault", vault], env=env
    )
    samples: list[float] = []
    floor: list[float] = []

    async def main() -> None:
        async with Client(params) as client:
            for question in QUESTIONS:
                await client.call_tool("search", {"question": question})
            for _ in range(rounds):
                for question in QUESTIONS:  # interleaved, so both see the same machine
                    started = time.perf_counter()
                    result = await client.call_tool("search", {"question": question})
                    samples.append(time.perf_counter() - started)
                    if result.is_error:
                        raise SystemExit(result.content[0].text)
                    started = time.perf_counter()
                    await client.call_tool("check", {"program": "1"})
                    floor.append(time.perf_counter() - started)

    anyio.run(main)
    return samples, floor


def row(label: str, samples: list[float], anchor: list[float] | None) -> None:
    median = statistics.median(samples) * 1000
    low = min(samples) * 1000
    if anchor is None:
        extra = "(anchor)"
    else:
        base = statistics.median(anchor) * 1000
        extra = f"{median - base:+7.2f} ms  x{median / base:5.2f}"
    print(f"{label:<44} median {median:7.2f} ms  min {low:7.2f} ms  {extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vault", default=str(ROOT / "vaults" / "web-auth"))
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--no-stdio", action="store_true", help="skip the subprocess server")
    args = parser.parse_args()

    service = VaultService(args.vault)
    vault = hql.open_vault(args.vault)
    print(
        f"vault {args.vault}: {len(vault.cards)} cards; {len(QUESTIONS)} questions x {args.rounds}"
    )

    def anchor_call(question: str) -> object:
        program = service.search_program(question, 10, "bm25", True)
        outcome = hql.run(program, vault=vault)
        if outcome.failed:
            raise SystemExit(outcome.render_reports())
        return outcome.to_json()

    anchor = timings(anchor_call, args.rounds)
    row("hql.run(program).to_json()", anchor, None)
    row("VaultService.search (in process)", timings(service.search, args.rounds), anchor)
    walk = timings(lambda _: service.live._stat_walk(), args.rounds)
    row("one stat walk (at most every 10x its cost)", walk, anchor)
    if not args.no_stdio:
        searches, floor = stdio_timings(args.vault, args.rounds)
        row("call_tool('search') over stdio (SDK client)", searches, anchor)
        row("call_tool('check', '1') over stdio (protocol)", floor, anchor)
        beyond = statistics.median(searches) - statistics.median(floor)
        base = statistics.median(anchor)
        print(
            f"search over stdio beyond the protocol's own cost: {beyond * 1000:+.2f} ms "
            f"(hql.run alone {base * 1000:.2f} ms)"
        )


if __name__ == "__main__":
    main()
