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

With `--http`, an HTTP row on a vault of 5,000 SciFact abstracts
(`--http-size`; `--reuse DIR` keeps the cards between runs): `hql mcp --http`
as a subprocess with its default limits, then 8 clients (`--http-clients`) of
the SDK's streamable HTTP client, each making 200 calls (`--http-calls`) that
cycle through `search`, `card`, `query`, `check`, `explain` and `vaults`, all at
once. It prints the errors (refused or failed calls: there should be none), the
calls a second, and the median `search` latency under that load and with one
client alone, against `VaultService.search` in process on the same vault, same run:

    flock /work/bench.lock .venv/bin/python bench/mcp_server.py --no-stdio --http

(the SciFact abstracts are read from $HQL_SHARED/datasets/scifact, as bench/scale.py does.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
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
    parser.add_argument("--http", action="store_true", help="add the HTTP row (5k cards)")
    parser.add_argument("--http-size", type=int, default=5000)
    parser.add_argument("--http-clients", type=int, default=8)
    parser.add_argument("--http-calls", type=int, default=200)
    parser.add_argument("--reuse", type=Path, help="keep the HTTP row's vault under this folder")
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

    if args.http:
        http_row(args)


# --- over HTTP, many clients at once -------------------------------------------------------

MIXED = ("search", "card", "query", "check", "explain", "vaults")


def http_vault(args: argparse.Namespace) -> tuple[Path, list[str]]:
    sys.path.insert(0, str(ROOT / "bench"))
    import scale  # the 5k SciFact vault of bench/scale.py

    docs, queries = scale.corpus()
    if args.reuse is not None:
        return scale.reused_vault(args.reuse, docs, args.http_size), queries
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="hql-mcp-http-")) / f"scale-{args.http_size}"
    root.mkdir()
    scale.make_vault(root, docs, args.http_size)
    return root, queries


def start_http(vault: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "hql", "mcp", "--http", "--port", "0", "--vault", str(vault)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    assert server.stderr is not None
    for line in server.stderr:
        if "serving MCP over streamable HTTP at " in line:
            threading.Thread(
                target=lambda: [None for _ in server.stderr or ()], daemon=True
            ).start()
            return server, line.rsplit(" ", 1)[-1].strip()
    raise SystemExit("the HTTP server did not start")


def arguments(tool: str, question: str, card: str) -> dict[str, object]:
    return {
        "search": {"question": question},
        "card": {"name": card},
        "query": {"program": 'cards | filter(c => c.title != "") | count'},
        "check": {"program": "cards | map(c => c.title)"},
        "explain": {"program": f"import bm25\ncards | bm25({quoted(question)}) | take(3)"},
        "vaults": {},
    }[tool]


def quoted(text: str) -> str:
    from hql.mcp.service import string_literal

    return string_literal(text)


def http_clients(url: str, clients: int, calls: int, questions: list[str], card: str) -> dict:
    import anyio
    from mcp import Client

    searches: list[float] = []
    errors: list[str] = []

    async def client(number: int) -> None:
        async with Client(url) as session:
            for call in range(calls):
                tool = MIXED[(number + call) % len(MIXED)]
                question = questions[(number * calls + call) % len(questions)]
                started = time.perf_counter()
                try:
                    result = await session.call_tool(tool, arguments(tool, question, card))
                except Exception as error:  # a refused request (429, 503) raises in the client
                    errors.append(f"{tool}: {error}")
                    continue
                if tool == "search":
                    searches.append(time.perf_counter() - started)
                if result.is_error:
                    errors.append(f"{tool}: {result.content[0].text[:200]}")

    async def main() -> float:
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for number in range(clients):
                group.start_soon(client, number)
        return time.perf_counter() - started

    seconds = anyio.run(main)
    return {"searches": searches, "errors": errors, "seconds": seconds}


def http_row(args: argparse.Namespace) -> None:
    vault, queries = http_vault(args)
    questions = queries[:300]
    service = VaultService(vault)
    card = hql.open_vault(vault).cards[0].name
    print(f"\nHTTP: vault of {args.http_size} cards at {vault}")
    server, url = start_http(vault)
    try:
        alone = http_clients(url, 1, 60, questions, card)  # also warms the server's index
        service.search(questions[0])
        in_process = [
            seconds for seconds in (_timed(service.search, question) for question in questions[:60])
        ]
        loaded = http_clients(url, args.http_clients, args.http_calls, questions, card)
        after = [_timed(service.search, question) for question in questions[60:120]]
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(60)
        if args.reuse is None:
            shutil.rmtree(vault.parent, ignore_errors=True)
    anchor = in_process + after
    total = args.http_clients * args.http_calls
    print(
        f"{args.http_clients} clients x {args.http_calls} mixed calls ({', '.join(MIXED)}): "
        f"{len(loaded['errors'])} errors, {total / loaded['seconds']:.1f} calls/s, "
        f"{loaded['seconds']:.1f} s; server exit status after SIGTERM {code}"
    )
    for error in loaded["errors"][:5]:
        print(f"  error: {error}")
    row(f"VaultService.search in process ({args.http_size} cards)", anchor, None)
    row("search over HTTP, one client", alone["searches"], anchor)
    row(f"search over HTTP, {args.http_clients} clients at once", loaded["searches"], anchor)


def _timed(call: Callable[[str], object], question: str) -> float:
    started = time.perf_counter()
    call(question)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
