"""`hql mcp --http`: the MCP server over streamable HTTP, behind a gate that checks every request.

The SDK's streamable HTTP app answers both eras of the protocol: the
2026-07-28 revision (one self-contained POST per request, no session) and the
handshake revisions up to 2025-11-25 (a session opened by `initialize`). In
front of it, `Gate` refuses, with a JSON-RPC error body and the fitting HTTP
status, each request that

- arrives while the server is stopping (503),
- asks for another path than /mcp (404),
- names a Host the server does not answer to (421) or comes from a web page
  whose Origin is not allowed (403): a DNS-rebinding page cannot reach it,
- lacks the bearer token when the server has one (401),
- exceeds its connection's rate, or its address's (429, with Retry-After),
- declares a body larger than the limit (413; a longer body that declares
  nothing is cut off by the SDK at the same limit).

On 127.0.0.1 (the default) or another loopback name of this machine the token
is optional; on any other address it is required, and it is read from the
environment variable `--token-env` names, never from the command line.
SIGTERM stops the server cleanly: new requests are refused, calls in flight
have `STOP_GRACE_SECONDS` to finish, then their programs are stopped and
answered with a report saying the server is stopping.
"""

from __future__ import annotations

import hmac
import json
import math
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from hql import messages
from hql.api import HostError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

PATH = "/mcp"
DEFAULT_PORT = 8765
DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024
DEFAULT_RATE = 100.0  # requests per second on one client connection, sustained
ADDRESS_SHARE = 10  # all the connections from one address: ten times that
BURST_SECONDS = 2.0  # a client may spend this many seconds of its rate at once
IDLE_BUCKETS = 10_000  # past this many buckets, the ones idle for a minute are dropped
STOP_GRACE_SECONDS = 5.0
DEFAULT_HOST = "127.0.0.1"  # the one address served without a token
LOCAL_NAMES = ("127.0.0.1", "localhost")  # what a client on this machine calls it


@dataclass(frozen=True)
class HttpOptions:
    """Where the server listens and what it lets through."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()  # further Host names it answers to (--allow-host)
    allowed_origins: tuple[str, ...] = ()  # web pages that may call it (--allow-origin)
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    rate: float = DEFAULT_RATE  # 0: no rate limit


def is_wildcard(host: str) -> bool:
    return host in ("0.0.0.0", "::", "[::]", "")


def check_options(options: HttpOptions) -> None:
    """The refusals `hql mcp --http` makes before it listens."""
    if options.token is None and options.host != DEFAULT_HOST:
        raise HostError(messages.mcp_http_needs_token(options.host))
    if not 0 <= options.port <= 65535:
        raise HostError(messages.mcp_http_bad_port(options.port))
    if options.rate < 0 or not math.isfinite(options.rate):
        raise HostError(messages.mcp_bad_limit("--rate-limit", f"{options.rate:g}", "0"))
    if options.max_request_bytes < 1024:
        raise HostError(
            messages.mcp_bad_limit("--max-request-bytes", str(options.max_request_bytes), 1024)
        )


def token_from_environment(name: str | None, environ: MutableMapping[str, str]) -> str | None:
    if name is None:
        return None
    token = environ.get(name)
    if not token:
        raise HostError(messages.mcp_http_token_unset(name))
    return token


# --- the gate --------------------------------------------------------------------------


@dataclass
class _Bucket:
    tokens: float
    checked: float


@dataclass
class RateLimit:
    """A token bucket per key: `rate` requests a second, `rate * BURST_SECONDS` at once."""

    rate: float
    buckets: dict[str, _Bucket] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_needed(self, client: str, now: float | None = None) -> float:
        """0 when `client` may send this request now (and it is counted); else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        capacity = max(1.0, self.rate * BURST_SECONDS)
        with self.lock:
            bucket = self.buckets.get(client)
            if bucket is None:
                if len(self.buckets) >= IDLE_BUCKETS:
                    self._forget_idle(now)
                bucket = self.buckets[client] = _Bucket(capacity, now)
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.checked) * self.rate)
            bucket.checked = now
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return 0.0
            return (1 - bucket.tokens) / self.rate

    def _forget_idle(self, now: float) -> None:
        for key in [key for key, bucket in self.buckets.items() if now - bucket.checked > 60]:
            del self.buckets[key]


class Gate:
    """The checks every HTTP request passes before the SDK's app sees it."""

    def __init__(self, app: App, options: HttpOptions, port: int) -> None:
        self.app = app
        self.options = options
        self.closing = False
        # each connection (an agent's client keeps one open) has the rate; all the connections
        # from one address together ten times it, so that opening more does not buy more
        self.connection_rates = RateLimit(options.rate)
        self.address_rates = RateLimit(options.rate * ADDRESS_SHARE)
        self.hosts = _allowed_hosts(options, port)
        self.origins = {origin.rstrip("/") for origin in options.allowed_origins} | {
            f"http://{host}" for host in self.hosts or ()
        }
        self.token = options.token.encode() if options.token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan: the SDK's session manager starts there
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            status, message, headers = refusal
            await _refuse(send, status, message, headers)
            return
        await self.app(scope, receive, send)

    def refusal(self, scope: Scope) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        """(status, message, extra headers) of the refusal this request gets, or None."""
        headers = _headers(scope)
        if self.closing:
            return 503, messages.mcp_http_stopping(), [(b"retry-after", b"5")]
        if scope.get("path", "").rstrip("/") != PATH:
            return 404, messages.mcp_http_wrong_path(scope.get("path", ""), PATH), []
        host = headers.get("host")
        if self.hosts is not None and host not in self.hosts:
            return 421, messages.mcp_http_bad_host(host), []
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/") not in self.origins:
            return 403, messages.mcp_http_bad_origin(origin), []
        if self.token is not None and not self._authorized(headers.get("authorization")):
            return 401, messages.mcp_http_unauthorized(), [(b"www-authenticate", b"Bearer")]
        address, port = scope.get("client") or ("", 0)
        wait = self.connection_rates.wait_needed(f"{address}:{port}")
        if wait == 0:
            wait = self.address_rates.wait_needed(address)
        if wait > 0:
            retry = str(max(1, math.ceil(wait))).encode()
            return 429, messages.mcp_http_rate(self.options.rate), [(b"retry-after", retry)]
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.options.max_request_bytes:
            return 413, messages.mcp_http_too_large(self.options.max_request_bytes), []
        return None

    def _authorized(self, header: str | None) -> bool:
        if header is None or not header.lower().startswith("bearer "):
            return False
        assert self.token is not None
        return hmac.compare_digest(header[len("bearer ") :].strip().encode(), self.token)


def _allowed_hosts(options: HttpOptions, port: int) -> set[str] | None:
    """The Host headers the server answers to; None (any) on a wildcard address with no
    `--allow-host`, where the token (required there) is what keeps a rebinding page out."""
    names = set(options.allowed_hosts)
    if is_wildcard(options.host):
        if not names:
            return None
    else:
        names.add(f"[{options.host}]" if ":" in options.host else options.host)
        if options.host in LOCAL_NAMES:
            names |= set(LOCAL_NAMES)
    return {f"{name}:{port}" for name in names} | names


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (a repeated header: its first value)."""
    found: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        found.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return found


async def _refuse(
    send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]]
) -> None:
    """A JSON-RPC error body (no request id: the request was not read) with an HTTP status."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}},
        ensure_ascii=False,
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


# --- serving ---------------------------------------------------------------------------


def listen(options: HttpOptions) -> socket.socket:
    """The listening socket, bound before the server starts (port 0: a free port)."""
    family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((options.host.strip("[]"), options.port))
    except OSError as error:
        sock.close()
        raise HostError(
            messages.mcp_http_cannot_listen(options.host, options.port, error)
        ) from None
    # answers go out at once: without it each small answer waits ~40 ms for a delayed ACK
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.listen(128)
    return sock


def serve_http(server: Any, options: HttpOptions, stop_programs: Callable[[], None]) -> None:
    """Serve the MCP server `server` (an SDK MCPServer) over streamable HTTP until SIGTERM or ^C."""
    check_options(options)
    sock = listen(options)
    port = sock.getsockname()[1]
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        json_response=True,
        max_request_body_size=options.max_request_bytes,
        # the gate checks Host and Origin itself, with its own refusals
        transport_security=_no_sdk_host_check(),
        host=options.host,
    )
    gate = Gate(app, options, port)
    config = uvicorn.Config(
        gate,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=int(STOP_GRACE_SECONDS) + 1,
        lifespan="on",
    )
    host = f"[{options.host}]" if ":" in options.host else options.host
    print(messages.mcp_http_serving(f"http://{host}:{port}{PATH}"), file=sys.stderr, flush=True)
    _Uvicorn(config, gate, stop_programs).run(sockets=[sock])


def _no_sdk_host_check() -> Any:
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


class _Uvicorn(uvicorn.Server):
    """uvicorn's server, which on SIGTERM first closes the gate, then after a grace stops the
    programs still running, and exits with status 0 (a stop asked for is not a failure)."""

    def __init__(
        self, config: uvicorn.Config, gate: Gate, stop_programs: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self.gate = gate
        self.stop_programs = stop_programs

    def handle_exit(self, sig: int, frame: Any) -> None:
        first = not self.gate.closing
        self.gate.closing = True
        super().handle_exit(sig, frame)
        self._captured_signals.clear()  # do not die of the signal once stopped: exit 0
        if first:
            timer = threading.Timer(STOP_GRACE_SECONDS, self.stop_programs)
            timer.daemon = True
            timer.start()
