"""The MCP server: the vaults' tools and resources over stdio (or HTTP, `hql.mcp.http`), on the official SDK.

Every tool is a function in `build_server`, registered with `@tool`, which
gives it its row of `ANNOTATIONS` and its description (`messages.MCP_TOOLS`).
Its return annotation `Annotated[CallToolResult, shapes.X]` publishes the
answer's shape as the tool's output schema. It takes `vault: VaultName = None`
and answers through `_answer(served, vault, work, key)`, where `work` gets the
`VaultService` the call names. A tool whose row is not read-only is offered
only when the server was started with `--allow-write`.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import quote, unquote

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    ListResourcesResult,
    PaginatedRequestParams,
    Resource,
    TextContent,
    ToolAnnotations,
    jsonrpc_message_adapter,
)
from pydantic import Field

from hql import messages
from hql.api import HostError
from hql.mcp import notes as note_tools
from hql.mcp import shapes
from hql.mcp.service import ToolFailure, Vaults, VaultService, encode, stop_every_program
from hql.version import __version__

TOOLS = messages.MCP_TOOLS

# --- what each tool may do: one row per tool ---------------------------------------------
# No tool reaches outside the vaults it serves (open_world_hint=False). The write tools
# change documents (destructive_hint=True); a tool whose second identical call changes
# nothing more is idempotent.

READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
REWRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

ANNOTATIONS: dict[str, ToolAnnotations] = {
    "vaults": READ,
    "query": READ,
    "search": READ,
    "context": READ,
    "recall": READ,
    "check": READ,
    "card": READ,
    "explain": READ,
    # offered only with --allow-write
    "render": REWRITE,  # rendering again writes the same answers
    "remember": WRITE,
    "append_note": WRITE,
    "edit_note": REWRITE,
    "set_property": REWRITE,
    "move_note": WRITE,
    "archive_note": REWRITE,
    "read_note": READ,
}

Program = Annotated[str, Field(description="An HQL program.")]
VaultName = Annotated[str | None, Field(description=TOOLS["vault"])]
Name = Annotated[str, Field(description=TOOLS["note.name"])]
Digest = Annotated[str | None, Field(description=TOOLS["note.base_digest"])]
DryRun = Annotated[bool, Field(description=TOOLS["note.dry_run"])]
Function = TypeVar("Function", bound=Callable[..., Any])


def offered(name: str, allow_write: bool) -> bool:
    """Whether the server offers the tool `name`: a writing tool only with --allow-write."""
    return allow_write or ANNOTATIONS[name].read_only_hint is True


def _answer(
    vaults: Vaults,
    vault: str | None,
    work: Callable[[VaultService], dict[str, Any]],
    key: str | None = None,
) -> CallToolResult:
    """A tool's answer from the vault the call names, as JSON text and the same structured
    content (its `key` shortened to fit the output limit). A refused call is an error result
    with the reason as its text; a program that failed is an error result with its reports."""
    try:
        service = vaults.get(vault)
        answer = work(service)
    except (ToolFailure, HostError) as failure:
        return CallToolResult(content=[TextContent(type="text", text=str(failure))], is_error=True)
    answer, text = service.finish(answer, key)  # every answer within --max-output
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=answer,
        is_error=not answer.get("ok", True),
    )


def build_server(served: Vaults) -> MCPServer[Any]:
    first = served.first.live.get()
    example = first.cards[0].name if first.cards else "name"
    server: MCPServer[Any] = MCPServer(
        name="hql",
        title="HQL",
        version=__version__,
        instructions=messages.mcp_instructions(first.root_text, len(first.cards), example),
        log_level="WARNING",
    )

    def tool(function: Function) -> Function:
        name = function.__name__
        if offered(name, served.allow_write):
            server.add_tool(
                function,
                description=TOOLS[name],
                annotations=ANNOTATIONS[name],
                structured_output=True,
            )
        return function

    @tool
    def vaults() -> Annotated[CallToolResult, shapes.VaultsAnswer]:
        return _answer(served, None, lambda _: served.listing())

    @tool
    def query(
        program: Program,
        params: Annotated[dict[str, Any] | None, Field(description=TOOLS["query.params"])] = None,
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.QueryAnswer]:
        return _answer(served, vault, lambda service: service.query(program, params), "value")

    @tool
    def search(
        question: Annotated[str, Field(description=TOOLS["search.question"])],
        k: Annotated[int, Field(description=TOOLS["search.k"], ge=1, le=1000)] = 10,
        ranker: Annotated[
            Literal["auto", "bm25", "semantic", "hybrid"],
            Field(description=TOOLS["search.ranker"]),
        ] = "auto",
        relevant: Annotated[bool, Field(description=TOOLS["search.relevant"])] = True,
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.SearchAnswer]:
        return _answer(
            served, vault, lambda service: service.search(question, k, ranker, relevant), "hits"
        )

    @tool
    def recall(
        question: Annotated[str, Field(description=TOOLS["recall.question"])],
        k: Annotated[int, Field(description=TOOLS["recall.k"], ge=1, le=1000)] = 10,
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.RecallAnswer]:
        return _answer(served, vault, lambda service: service.recall(question, k), "concepts")

    @tool
    def context(
        prompt: Annotated[str, Field(description=TOOLS["context.prompt"])],
        budget: Annotated[int, Field(description=TOOLS["context.budget"], ge=1)] = 2000,
        max_items: Annotated[int, Field(description=TOOLS["context.max_items"], ge=1)] = 8,
        format: Annotated[  # noqa: A002 (the block's format, as the step names it)
            Literal["markdown", "json"], Field(description=TOOLS["context.format"])
        ] = "markdown",
        diagnostics: Annotated[bool, Field(description=TOOLS["context.diagnostics"])] = False,
        statuses: Annotated[list[str] | None, Field(description=TOOLS["context.statuses"])] = None,
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.ContextAnswer]:
        return _answer(
            served,
            vault,
            lambda service: service.context(
                prompt, budget, max_items, format, diagnostics, statuses
            ),
        )

    @tool
    def check(
        program: Program, vault: VaultName = None
    ) -> Annotated[CallToolResult, shapes.CheckAnswer]:
        return _answer(served, vault, lambda service: service.check(program))

    @tool
    def card(
        name: Annotated[
            str, Field(description="The card's name, as `search` and `query` give it.")
        ],
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.CardAnswer]:
        return _answer(served, vault, lambda service: service.card(name), "body")

    @tool
    def explain(
        program: Program, vault: VaultName = None
    ) -> Annotated[CallToolResult, shapes.ExplainAnswer]:
        return _answer(served, vault, lambda service: service.explain(program), "value")

    @tool
    def render(
        document: Annotated[
            str, Field(description="The document's path inside the vault, e.g. queries.md.")
        ],
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.RenderAnswer]:
        return _answer(served, vault, lambda service: service.render(document))

    # --- notes (hql.mcp.notes): offered only with --allow-write, except read_note

    @tool
    def read_note(
        name: Name, vault: VaultName = None
    ) -> Annotated[CallToolResult, shapes.NoteReadAnswer]:
        return _answer(served, vault, lambda service: note_tools.read_note(service, name), "text")

    @tool
    def remember(
        text: Annotated[str, Field(description=TOOLS["remember.text"])],
        title: Annotated[str | None, Field(description=TOOLS["remember.title"])] = None,
        properties: Annotated[
            dict[str, Any] | None, Field(description=TOOLS["remember.properties"])
        ] = None,
        create: Annotated[bool, Field(description=TOOLS["remember.create"])] = False,
        merge_into: Annotated[str | None, Field(description=TOOLS["remember.merge_into"])] = None,
        supersedes: Annotated[str | None, Field(description=TOOLS["remember.supersedes"])] = None,
        dry_run: DryRun = False,
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.NoteAnswer]:
        return _answer(
            served,
            vault,
            lambda service: note_tools.remember(
                service, text, title, properties, create, merge_into, supersedes, dry_run
            ),
        )

    @tool
    def append_note(
        name: Name,
        text: Annotated[str, Field(description=TOOLS["append_note.text"])],
        heading: Annotated[str | None, Field(description=TOOLS["append_note.heading"])] = None,
        dated: Annotated[bool, Field(description=TOOLS["append_note.dated"])] = False,
        base_digest: Digest = None,
        dry_run: DryRun = False,
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.NoteAnswer]:
        return _answer(
            served,
            vault,
            lambda service: note_tools.append_note(
                service, name, text, heading, dated, base_digest, dry_run
            ),
        )

    @tool
    def edit_note(
        name: Name,
        new_text: Annotated[str, Field(description=TOOLS["edit_note.new_text"])],
        old_text: Annotated[str | None, Field(description=TOOLS["edit_note.old_text"])] = None,
        section: Annotated[str | None, Field(description=TOOLS["edit_note.section"])] = None,
        base_digest: Digest = None,
        dry_run: DryRun = False,
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.NoteAnswer]:
        return _answer(
            served,
            vault,
            lambda service: note_tools.edit_note(
                service, name, new_text, old_text, section, base_digest, dry_run
            ),
        )

    @tool
    def set_property(
        name: Name,
        key: Annotated[str, Field(description=TOOLS["set_property.key"])],
        value: Annotated[Any, Field(description=TOOLS["set_property.value"])] = None,
        remove: Annotated[bool, Field(description=TOOLS["set_property.remove"])] = False,
        base_digest: Digest = None,
        dry_run: DryRun = False,
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.NoteAnswer]:
        return _answer(
            served,
            vault,
            lambda service: note_tools.set_property(
                service, name, key, value, remove, base_digest, dry_run
            ),
        )

    @tool
    def move_note(
        name: Name,
        to: Annotated[str, Field(description=TOOLS["move_note.to"])],
        base_digest: Digest = None,
        dry_run: DryRun = False,
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.NoteAnswer]:
        return _answer(
            served,
            vault,
            lambda service: note_tools.move_note(service, name, to, base_digest, dry_run),
        )

    @tool
    def archive_note(
        name: Name,
        delete: Annotated[bool, Field(description=TOOLS["archive_note.delete"])] = False,
        base_digest: Digest = None,
        dry_run: DryRun = False,
        vault: VaultName = None,
    ) -> Annotated[CallToolResult, shapes.NoteAnswer]:
        return _answer(
            served,
            vault,
            lambda service: note_tools.archive_note(service, name, delete, base_digest, dry_run),
        )

    _add_resources(server, served)
    _add_prompts(server, served)
    return server


# --- resources: one per card, listed a page at a time -----------------------------------------

RESOURCES_PAGE = 200  # cards listed per resources/list page


def card_uri(vault: str | None, name: str) -> str:
    """`hql://card/NAME` for the first vault's cards, `hql://vault/VAULT/card/NAME` for the others'."""
    quoted = quote(name, safe="")
    return (
        f"hql://card/{quoted}"
        if vault is None
        else f"hql://vault/{quote(vault, safe='')}/card/{quoted}"
    )


def _add_resources(server: MCPServer[Any], served: Vaults) -> None:
    @server.resource(
        "hql://card/{name}", description=TOOLS["card_resource"], mime_type="text/markdown"
    )
    def card_resource(name: str) -> str:
        return _resource(lambda: served.first.card_text(unquote(name)))

    @server.resource(
        "hql://vault/{vault}/card/{name}",
        description=TOOLS["card_resource"],
        mime_type="text/markdown",
    )
    def vault_card_resource(vault: str, name: str) -> str:
        return _resource(lambda: served.get(unquote(vault)).card_text(unquote(name)))

    @server.resource("hql://cards", description=TOOLS["cards"], mime_type="application/json")
    def cards_resource() -> str:
        return served.first.cards_text()

    async def list_resources(
        ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        start = _page_start(params.cursor if params is not None else None)
        listed = await anyio.to_thread.run_sync(_card_resources, served)
        fixed = await server.list_resources()  # hql://cards
        every = [*fixed, *listed]
        page = every[start : start + RESOURCES_PAGE]
        more = start + RESOURCES_PAGE < len(every)
        return ListResourcesResult(
            resources=page, next_cursor=str(start + RESOURCES_PAGE) if more else None
        )

    server._lowlevel_server.add_request_handler(  # the SDK's own listing is not paged
        "resources/list", PaginatedRequestParams, list_resources
    )


def _resource(read: Callable[[], str]) -> str:
    """A resource's text; a refusal (an unknown card, a file outside the vault) is the
    client's error with its reason, not an unexpected exception."""
    try:
        return read()
    except ToolFailure as failure:
        raise ResourceError(str(failure)) from None


def _page_start(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise MCPError(code=INVALID_PARAMS, message=messages.mcp_bad_cursor(cursor))
    return int(cursor)


def _card_resources(served: Vaults) -> list[Resource]:
    """Every card of every vault as a resource, the first vault's first."""
    listed = []
    for name, service in served.services.items():
        vault = None if name == served.default else name
        for card in service.live.get().cards:
            listed.append(
                Resource(
                    uri=card_uri(vault, card.name),
                    name=card.name if vault is None else f"{vault}/{card.name}",
                    title=card.title,
                    description=messages.mcp_card_resource(card.kind, name),
                    mime_type="text/markdown",
                )
            )
    return listed


# --- prompts ---------------------------------------------------------------------------------

PROMPT_HITS = 5  # cards a prompt hands the agent


def _add_prompts(server: MCPServer[Any], served: Vaults) -> None:
    @server.prompt(name="answer_from_notes", description=TOOLS["prompt.answer"])
    async def answer_from_notes(question: str, vault: str | None = None) -> str:
        found = await anyio.to_thread.run_sync(_evidence, served, vault, question)
        return messages.mcp_prompt_answer(question, found)

    @server.prompt(name="what_do_my_notes_say", description=TOOLS["prompt.about"])
    async def what_do_my_notes_say(topic: str, vault: str | None = None) -> str:
        found = await anyio.to_thread.run_sync(_evidence, served, vault, topic)
        return messages.mcp_prompt_about(topic, found)


def _evidence(served: Vaults, vault: str | None, question: str) -> str:
    """What the prompts hand the agent: the `search` call they made, its answer as JSON (hits
    with their provenance, or none: the vault abstains), and each hit's card text."""
    service = served.get(vault)
    answer = service.search(question, PROMPT_HITS)
    cards = []
    for hit in answer["hits"]:
        try:
            cards.append(messages.mcp_prompt_card(hit["card"], service.card_text(hit["card"])))
        except ToolFailure:
            continue
    arguments = {"question": question, "k": PROMPT_HITS} | ({"vault": vault} if vault else {})
    return messages.mcp_prompt_evidence(encode(arguments), encode(answer), cards)


# --- stdio ---------------------------------------------------------------------------------

# After the client hangs up, a program still running in C (where it cannot be stopped)
# gets this long before the process leaves without it.
EXIT_GRACE_SECONDS = 1.0


class _Lines:
    """The client's lines on stdin; when it closes stdin (or dies), every program is
    stopped so the server exits at once instead of finishing calls nobody will read.

    A line that is not a JSON-RPC message is logged (one line on stderr) and dropped;
    each request's method (and tool) is kept by its id, for the log of its answer.
    """

    def __init__(self, lines: Any, log: RefusalLog) -> None:
        self._lines = lines
        self._log = log

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            if self._log.received(line):
                yield line
        _client_gone()


MAX_PENDING_LOGGED = 10_000  # requests awaiting their answer that the refusal log keeps


class RefusalLog:
    """One line on stderr for each message the server could not read and each request it
    refused (a JSON-RPC error, or a tool call answered with a reason rather than an
    answer), never a traceback: the client already has the answer; the log says why."""

    def __init__(self, write: Callable[[str], None] | None = None) -> None:
        self._write = write or _to_stderr
        self._requests: dict[Any, str] = {}

    def received(self, line: str) -> bool:
        """Whether `line` is a JSON-RPC message to pass on (else it is logged).

        The log never stands in a message's way: should reading it for the log fail in
        any other way, the line goes on to the SDK as it would without the log.
        """
        if not line.strip():
            return False
        try:
            message = jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as error:
            errors = error.errors() if hasattr(error, "errors") else []
            not_json = bool(errors) and errors[0].get("type") == "json_invalid"
            with contextlib.suppress(Exception):
                self._write(messages.mcp_log_malformed(_first_line(line, 80), not_json))
            return False
        except Exception:  # noqa: BLE001 - the SDK reads the line and answers for it
            return True
        with contextlib.suppress(Exception):
            self._remember(message)
        return True

    def _remember(self, message: Any) -> None:
        """Keep a request's method (and tool or resource) by its id, for its answer's log
        line; a client that never waits for its answers cannot make the table grow."""
        if isinstance(message, JSONRPCRequest):
            while len(self._requests) >= MAX_PENDING_LOGGED:
                self._requests.pop(next(iter(self._requests)))
            params = message.params if isinstance(message.params, dict) else {}
            tool = params.get("name") if message.method == "tools/call" else None
            uri = params.get("uri") if message.method == "resources/read" else None
            detail = tool or uri
            self._requests[message.id] = (
                f"{message.method} {detail}" if isinstance(detail, str) else message.method
            )

    def sent(self, message: Any) -> None:
        """Log the answer `message` if it refuses its request."""
        request = self._requests.pop(getattr(message, "id", None), None)
        if request is None:
            return
        if isinstance(message, JSONRPCError):
            self._write(messages.mcp_log_refused(request, _first_line(message.error.message)))
        elif isinstance(message, JSONRPCResponse) and _refused_call(message.result):
            text = message.result["content"][0].get("text", "")
            self._write(messages.mcp_log_refused(request, _first_line(str(text))))


def _refused_call(result: Any) -> bool:
    """A tool's answer that is a reason alone (its error results with a program's
    reports carry structured content and are answers, not refusals)."""
    return (
        isinstance(result, dict)
        and result.get("isError") is True
        and "structuredContent" not in result
        and bool(result.get("content"))
        and isinstance(result["content"][0], dict)
    )


def _first_line(text: str, limit: int = 300) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class _LoggedAnswers:
    """The server's outgoing stream, telling the refusal log about each answer."""

    def __init__(self, stream: Any, log: RefusalLog) -> None:
        self._stream = stream
        self._log = log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def send(self, item: Any) -> None:
        with contextlib.suppress(Exception):  # the log never stands in an answer's way
            self._log.sent(item.message)
        await self._stream.send(item)

    async def __aenter__(self) -> _LoggedAnswers:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)


class _OneLine(logging.Formatter):
    """The SDK's own log records on one line each: an exception by its type and message
    (the traceback only with HQL_DEBUG=1)."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            if os.environ.get("HQL_DEBUG"):
                return f"hql mcp: {text}\n{self.formatException(record.exc_info)}"
            error = record.exc_info[1]
            cause = error.__cause__ or error
            text = f"{text}: {type(cause).__name__}: {_first_line(str(cause))}"
        return f"hql mcp: {_first_line(text, 1000)}"


def _log_one_line_each() -> None:
    """Send the SDK's warnings (and worse) to stderr one line each, before it sets up its own."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    sdk = logging.getLogger("mcp")
    sdk.addHandler(handler)
    sdk.setLevel(logging.WARNING)
    sdk.propagate = False


def _client_gone() -> None:
    stop_every_program()
    timer = threading.Timer(EXIT_GRACE_SECONDS, os._exit, args=(0,))
    timer.daemon = True
    timer.start()


async def _serve_stdio(server: MCPServer[Any]) -> None:
    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async, with our stdin
    stdin = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    log = RefusalLog()
    async with stdio_server(stdin=_Lines(stdin, log)) as (read_stream, write_stream):  # type: ignore[arg-type]
        answers = _LoggedAnswers(write_stream, log)
        await lowlevel.run(read_stream, answers, lowlevel.create_initialization_options())


def serve(served: Vaults) -> None:
    """Answer MCP requests on stdin and stdout until the client hangs up."""
    _log_one_line_each()
    anyio.run(_serve_stdio, build_server(served))


# --- streamable HTTP -------------------------------------------------------------------------


def serve_over_http(served: Vaults, options: Any) -> None:
    """Answer MCP requests over streamable HTTP (`hql.mcp.http`) until SIGTERM or ^C."""
    from hql.mcp.http import serve_http

    serve_http(build_server(served), options, stop_every_program)
