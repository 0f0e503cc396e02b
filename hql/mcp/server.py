"""The MCP server: `VaultService` offered as tools and resources over stdio, on the official SDK."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from hql import messages
from hql.api import HostError
from hql.mcp.service import ToolFailure, VaultService, encode
from hql.version import __version__

TOOLS = messages.MCP_TOOLS
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
Program = Annotated[str, Field(description="An HQL program.")]
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)


def _result(
    call: Callable[[], dict[str, Any]], service: VaultService, key: str | None = None
) -> CallToolResult:
    """A tool's answer as JSON text and structured content (its `key` shortened to fit the output
    limit); a refused call as an error result. A program that failed is an error result too."""
    try:
        answer = call()
    except (ToolFailure, HostError) as failure:
        return CallToolResult(content=[TextContent(type="text", text=str(failure))], is_error=True)
    answer, text = service.finish(answer, key) if key is not None else (answer, encode(answer))
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=answer,
        is_error=not answer.get("ok", True),
    )


def build_server(service: VaultService) -> MCPServer[Any]:
    vault = service.live.get()
    example = vault.cards[0].name if vault.cards else "name"
    server: MCPServer[Any] = MCPServer(
        name="hql",
        title="HQL",
        version=__version__,
        instructions=messages.mcp_instructions(vault.root_text, len(vault.cards), example),
        log_level="WARNING",
    )

    @server.tool(description=TOOLS["query"], annotations=READ_ONLY, structured_output=False)
    def query(
        program: Program,
        params: Annotated[dict[str, Any] | None, Field(description=TOOLS["query.params"])] = None,
    ) -> CallToolResult:
        return _result(lambda: service.query(program, params), service, "value")

    @server.tool(description=TOOLS["search"], annotations=READ_ONLY, structured_output=False)
    def search(
        question: Annotated[str, Field(description=TOOLS["search.question"])],
        k: Annotated[int, Field(description=TOOLS["search.k"], ge=1, le=1000)] = 10,
        ranker: Annotated[
            Literal["bm25", "semantic", "hybrid"], Field(description=TOOLS["search.ranker"])
        ] = "bm25",
        relevant: Annotated[bool, Field(description=TOOLS["search.relevant"])] = True,
    ) -> CallToolResult:
        return _result(lambda: service.search(question, k, ranker, relevant), service, "hits")

    @server.tool(description=TOOLS["check"], annotations=READ_ONLY, structured_output=False)
    def check(program: Program) -> CallToolResult:
        return _result(lambda: service.check(program), service)

    @server.tool(description=TOOLS["card"], annotations=READ_ONLY, structured_output=False)
    def card(
        name: Annotated[
            str, Field(description="The card's name, as `search` and `query` give it.")
        ],
    ) -> CallToolResult:
        return _result(lambda: service.card(name), service, "body")

    @server.tool(description=TOOLS["explain"], annotations=READ_ONLY, structured_output=False)
    def explain(program: Program) -> CallToolResult:
        return _result(lambda: service.explain(program), service, "value")

    if service.allow_write:

        @server.tool(description=TOOLS["render"], annotations=WRITES, structured_output=False)
        def render(
            document: Annotated[
                str, Field(description="The document's path inside the vault, e.g. queries.md.")
            ],
        ) -> CallToolResult:
            return _result(lambda: service.render(document), service)

    @server.resource(
        "hql://card/{name}", description=TOOLS["card_resource"], mime_type="text/markdown"
    )
    def card_resource(name: str) -> str:
        return service.card_text(name)

    @server.resource("hql://cards", description=TOOLS["cards"], mime_type="application/json")
    def cards_resource() -> str:
        return encode(service.cards())

    return server


def serve(service: VaultService) -> None:
    """Answer MCP requests on stdin and stdout until the client hangs up."""
    build_server(service).run("stdio")
