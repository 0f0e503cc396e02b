"""An agent writes its memory through the MCP tools, over the SDK's stdio client: remember,
a near-duplicate proposed, merge, supersede, the prompt ranking and the context block
preferring the new note, archive; a path out of the vault, a symlink out of it and a stale
digest each refused."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import hql.notes

SAMPLE = Path(__file__).parent.parent / "vaults" / "web-auth"
OLD_TEXT = (
    "Access tokens issued by the authorization server expire after one hour; "
    "clients refresh them with the refresh token before they expire."
)


def _answer(result: Any) -> dict[str, Any]:
    answer = json.loads(result.content[0].text)
    assert answer == result.structured_content
    return answer


def test_an_agent_remembers_merges_supersedes_and_archives(tmp_path: Path) -> None:
    mcp = pytest.importorskip("mcp")
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("hql.context.similarity")
    from mcp.client.stdio import StdioServerParameters

    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".hql"))
    hql.notes.open(root).new("Token lifetime", OLD_TEXT, properties={"tags": ["auth"]})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n")
    (root / "linked").symlink_to(outside)
    old_path = root / "Token lifetime.md"

    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hql", "--vault", str(root), "mcp", "--allow-write"],
        env=env,
    )
    seen: dict[str, Any] = {}

    async def call(client: Any, tool: str, **arguments: Any) -> dict[str, Any]:
        return _answer(await client.call_tool(tool, arguments))

    async def talk(client: Any) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name in ("remember", "append_note", "edit_note", "set_property", "move_note"):
            assert tools[name].annotations.destructive_hint is True
            assert tools[name].annotations.read_only_hint is False
        seen["propose"] = await call(
            client, "remember", text=OLD_TEXT.replace("one hour", "one hour (60 minutes)")
        )
        seen["after_propose"] = sorted(path.name for path in root.rglob("*.md"))
        seen["merge"] = await call(
            client,
            "remember",
            text="Observed: the identity provider now keeps them for 30 minutes.",
            merge_into="Token lifetime",
        )
        seen["new"] = await call(
            client,
            "remember",
            title="Token lifetime since 2026",
            text="Access tokens expire after 30 minutes; refresh tokens rotate on every use.",
            supersedes="Token lifetime",
            create=True,
        )
        seen["status"] = await call(
            client,
            "query",
            program='cards | filter(c => c.name == "Token lifetime") | map(c => c.superseded_by)',
        )
        seen["prompt"] = await call(
            client,
            "query",
            program='import bm25\ncards | prompt("how long until an access token expires?") '
            "| map(h => h.card.name)",
        )
        seen["context"] = await call(
            client,
            "context",
            prompt="how long until an access token expires?",
            format="json",
            diagnostics=True,
        )
        read = await call(client, "read_note", name="Token lifetime")
        seen["archive"] = await call(
            client, "archive_note", name="Token lifetime", base_digest=read["digest"]
        )
        seen["stale"] = await call(
            client, "append_note", name="Token lifetime", text="late", base_digest=read["digest"]
        )
        seen["traversal"] = await call(
            client, "set_property", name="../escape.md", key="a", value=1
        )
        seen["symlink"] = await call(client, "append_note", name="linked/secret.md", text="leak")

    async def main() -> None:
        # A server that stops answering fails here, naming the calls it did answer.
        with anyio.fail_after(240):
            async with mcp.Client(params) as client:
                await talk(client)

    try:
        anyio.run(main)
    except TimeoutError:
        pytest.fail(f"the server stopped answering after {sorted(seen)}")

    propose = seen["propose"]
    assert propose["written"] is False and propose["action"] == "propose"
    assert propose["similar"][0]["name"] == "Token lifetime"
    assert propose["similar"][0]["score"] >= 0.6 and propose["similar"][0]["why"]
    assert seen["after_propose"] == sorted(
        [*(path.name for path in SAMPLE.rglob("*.md")), "Token lifetime.md"]
    )  # the proposal wrote nothing
    merged = seen["merge"]
    assert merged["written"] and merged["action"] == "merge"
    assert "\n## 20" in old_path.read_text() and "30 minutes" in old_path.read_text()
    new = seen["new"]
    assert new["written"] and new["path"] == "Token lifetime since 2026.md"
    assert 'supersedes: "[[Token lifetime]]"' in (root / new["path"]).read_text()
    assert seen["status"]["value"] == [["Token lifetime since 2026"]]
    names = seen["prompt"]["value"]
    assert "Token lifetime since 2026" in names and "Token lifetime" not in names
    block = seen["context"]
    chosen = [item["card"] for item in block["items"]]
    assert "Token lifetime since 2026" in chosen and "Token lifetime" not in chosen
    assert {"card": "Token lifetime", "library": "project", "reason": "status: superseded"} in (
        block["diagnostics"]["rejected"]
    )
    archived = seen["archive"]
    assert archived["written"] and "status: archived" in old_path.read_text()
    assert old_path.exists()  # archived, not deleted
    for refused, reason in (("stale", "stale"), ("traversal", "outside"), ("symlink", "outside")):
        assert seen[refused]["ok"] is False and seen[refused]["reason"] == reason, seen[refused]
        assert seen[refused]["written"] is False
    assert "late" not in old_path.read_text()
    assert (outside / "secret.md").read_text() == "secret\n"
    assert not (tmp_path / "escape.md").exists()
