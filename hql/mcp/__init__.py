"""HQL for agents: a Model Context Protocol server over one or more vaults (`hql mcp --vault DIR`).

    hql mcp --vault DIR [--vault DIR ...] [--vaults FILE] [--allow-write]
            [--time-limit SECONDS] [--max-output CHARS]
    python -m hql.mcp --vault DIR

Tools `vaults`, `query`, `search`, `check`, `card`, `explain` (and the
writing tools with `--allow-write`), each taking `vault`, and every card as
the resource `hql://card/{name}`.
`hql.mcp.service` holds what the tools do; `hql.mcp.server` speaks the
protocol through the `mcp` SDK (the `hql[mcp]` extra), imported only here.
"""

from __future__ import annotations

import argparse

from hql import messages
from hql.api import HostError, resolve_mode

MIN_OUTPUT = 2000  # characters: room for the reports and the note that says what was cut


def run(args: argparse.Namespace) -> int:
    """`hql mcp`: serve the vaults until the client hangs up."""
    if not 0 < args.time_limit < float("inf"):
        raise HostError(messages.mcp_bad_limit("--time-limit", f"{args.time_limit:g}", 0))
    if args.max_output < MIN_OUTPUT:
        raise HostError(messages.mcp_bad_limit("--max-output", str(args.max_output), MIN_OUTPUT))
    try:
        from hql.mcp.server import serve
    except ImportError as error:
        if error.name is not None and error.name.split(".")[0] in ("mcp", "pydantic"):
            raise HostError(messages.mcp_sdk_missing()) from None
        raise
    from hql.mcp.service import Limits, Vaults, entries_from_file, entries_from_folders

    folders = [args.vault] if getattr(args, "vault", None) else []
    entries = entries_from_folders([*folders, *getattr(args, "vaults", [])])
    if getattr(args, "vaults_file", None):
        entries += entries_from_file(args.vaults_file)
    if not entries:
        raise HostError(messages.mcp_needs_vault())
    served = Vaults(
        entries,
        Limits(seconds=args.time_limit, output_chars=args.max_output),
        allow_write=args.allow_write,
        warm=True,
        mode=args.report,
    )
    # a vault that cannot be opened, or a bad --report, is a host error before any client talks
    for service in served.services.values():
        resolve_mode(service.mode, service.live.get())
    serve(served)
    return 0
