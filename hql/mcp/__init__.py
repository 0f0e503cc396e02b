"""HQL for agents: a Model Context Protocol server over one or more vaults (`hql mcp --vault DIR`).

    hql mcp --vault DIR [--vault DIR ...] [--vaults FILE] [--allow-write]
            [--time-limit SECONDS] [--max-output CHARS]
            [--http [--host ADDRESS] [--port N] [--token-env NAME] ...]
    python -m hql.mcp --vault DIR

Tools `vaults`, `query`, `search`, `check`, `card`, `explain` (and the
writing tools with `--allow-write`), each taking `vault`, and every card as
the resource `hql://card/{name}`.
`hql.mcp.service` holds what the tools do; `hql.mcp.server` speaks the
protocol through the `mcp` SDK (the `hql[mcp]` extra), imported only here.
"""

from __future__ import annotations

import argparse
from typing import Any

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

    # the HTTP options are refused before any vault is opened, the quicker to say so
    options = http_options(args) if args.http else None
    if options is None and (http_only := [flag for flag, value in _http_flags(args) if value]):
        raise HostError(messages.mcp_http_flag_without_http(http_only[0]))
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
    if options is not None:
        from hql.mcp.server import serve_over_http

        serve_over_http(served, options)
    else:
        serve(served)
    return 0


def _http_flags(args: argparse.Namespace) -> list[tuple[str, object]]:
    return [
        ("--host", args.host),
        ("--port", args.port),
        ("--token-env", args.token_env),
        ("--allow-host", args.allow_host),
        ("--allow-origin", args.allow_origin),
        ("--rate-limit", args.rate_limit),
        ("--max-request-bytes", args.max_request_bytes),
    ]


def http_options(args: argparse.Namespace) -> Any:
    """The HTTP options of `hql mcp --http`, the token read from the variable --token-env names."""
    import os

    from hql.mcp.http import (
        DEFAULT_MAX_REQUEST_BYTES,
        DEFAULT_PORT,
        DEFAULT_RATE,
        HttpOptions,
        check_options,
        token_from_environment,
    )

    options = HttpOptions(
        host=args.host if args.host is not None else HttpOptions.host,
        port=args.port if args.port is not None else DEFAULT_PORT,
        token=token_from_environment(args.token_env, os.environ),
        allowed_hosts=tuple(args.allow_host),
        allowed_origins=tuple(args.allow_origin),
        max_request_bytes=args.max_request_bytes or DEFAULT_MAX_REQUEST_BYTES,
        rate=args.rate_limit if args.rate_limit is not None else DEFAULT_RATE,
    )
    check_options(options)
    return options
