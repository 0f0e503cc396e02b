"""`hql mcp` with several vaults, and the stdio server's lifecycle: it leaves when its client does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from hql.api import HostError
from hql.mcp.service import ToolFailure, Vaults, entries_from_file, entries_from_folders

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "vaults" / "web-auth"


def _birds(root: Path) -> Path:
    """A second vault of a few cards about birds, with its own description in hql.toml."""
    root.mkdir(parents=True)
    (root / "hql.toml").write_text(
        '[mcp]\ndescription = "Field notes on birds"\n', encoding="utf-8"
    )
    for name, title, body in [
        ("condor", "Andean condor", "A vulture of the Andes; links to [[vulture]]."),
        ("vulture", "Vultures", "Scavenging birds of prey."),
        ("wren", "Wren", "A small brown songbird with a loud song."),
    ]:
        (root / f"{name}.md").write_text(f"---\ntitle: {title}\n---\n{body}\n", encoding="utf-8")
    return root


def test_several_vaults_each_answer_by_name_and_the_first_by_default(tmp_path: Path) -> None:
    birds = _birds(tmp_path / "birds")
    served = Vaults(entries_from_folders([str(SAMPLE), str(birds)]))
    assert served.get(None).query("cards | count")["value"] == 18
    assert served.get("birds").query("cards | count")["value"] == 3
    with pytest.raises(ToolFailure, match="no vault called `bird`.*`web-auth`, `birds`"):
        served.get("bird")
    listing = served.listing()
    assert listing["default"] == "web-auth"
    offers = {offer["name"]: offer for offer in listing["vaults"]}
    assert offers["birds"]["description"] == "Field notes on birds"
    assert offers["birds"]["cards"] == 3 and offers["web-auth"]["cards"] == 18
    assert offers["birds"]["indexes"]["bm25"]["available"] is True
    semantic = offers["birds"]["indexes"]["semantic"]
    assert semantic["available"] is False and "index" in semantic["why"]


def test_two_folders_of_one_name_are_refused_and_a_vaults_file_names_them(tmp_path: Path) -> None:
    one, two = _birds(tmp_path / "a" / "notes"), _birds(tmp_path / "b" / "notes")
    with pytest.raises(HostError, match="two vaults would be called `notes`"):
        entries_from_folders([str(one), str(two)])
    listing = tmp_path / "vaults.toml"
    listing.write_text(
        textwrap.dedent(
            """\
            [mcp.vaults.home]
            path = "a/notes"
            description = "What I keep at home"

            [mcp.vaults.work]
            path = "b/notes"
            """
        ),
        encoding="utf-8",
    )
    entries = entries_from_file(str(listing))
    assert [(e.name, e.description) for e in entries] == [
        ("home", "What I keep at home"),
        ("work", None),
    ]
    served = Vaults(entries)
    offers = served.listing()["vaults"]
    # a vault the file leaves undescribed keeps the description of its own hql.toml
    assert [offer["description"] for offer in offers] == [
        "What I keep at home",
        "Field notes on birds",
    ]
    listing.write_text("[mcp]\nvaults = 3\n", encoding="utf-8")
    with pytest.raises(HostError, match=r"not a vaults file: expected \[mcp.vaults.NAME\]"):
        entries_from_file(str(listing))
    listing.write_text("[mcp.vaults.x\n", encoding="utf-8")
    with pytest.raises(HostError, match="not a vaults file"):
        entries_from_file(str(listing))


def test_the_command_line_serves_every_vault_named(tmp_path: Path) -> None:
    mcp = pytest.importorskip("mcp")
    anyio = pytest.importorskip("anyio")
    from mcp.client.stdio import StdioServerParameters

    birds = _birds(tmp_path / "birds")
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    args = ["-m", "hql", "mcp", "--vault", str(SAMPLE), "--vault", str(birds)]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with mcp.Client(params) as client:
            seen["vaults"] = (await client.call_tool("vaults", {})).structured_content
            for vault in (None, "birds"):
                arguments = {"program": "cards | count"} | ({"vault": vault} if vault else {})
                answer = await client.call_tool("query", arguments)
                seen[vault] = answer.structured_content["value"]
            unknown = await client.call_tool("card", {"name": "wren", "vault": "nope"})
            seen["unknown"] = (unknown.is_error, unknown.content[0].text)
            seen["wren"] = (
                await client.call_tool("card", {"name": "wren", "vault": "birds"})
            ).structured_content["title"]

    anyio.run(main)
    assert [offer["name"] for offer in seen["vaults"]["vaults"]] == ["web-auth", "birds"]
    assert seen[None] == 18 and seen["birds"] == 3 and seen["wren"] == "Wren"
    is_error, text = seen["unknown"]
    assert is_error and "no vault called `nope`" in text


CLIENT = """\
import json, subprocess, sys, time
server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(message):
    server.stdin.write((json.dumps(message) + "\\n").encode())
    server.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "doomed", "version": "1"}}})
server.stdout.readline()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
      "params": {"name": "query", "arguments": {"program": sys.stdin.readline()}}})
print(server.pid, flush=True)
time.sleep(600)
"""
# Seven nested maps over 18 cards: far beyond the budget, so a call is running when the client dies.
RUNAWAY = "cards | " + "".join(f"map({v} => cards | " for v in "abcdef") + "count" + ")" * 6


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie has left already; its parent (the killed client) just never reaped it
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_stdio_server_leaves_within_two_seconds_of_its_client_being_killed() -> None:
    server = [sys.executable, "-m", "hql", "mcp", "--vault", str(SAMPLE), "--time-limit", "60"]
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, *server],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert client.stdin is not None and client.stdout is not None
        client.stdin.write(RUNAWAY + " | count\n")
        client.stdin.flush()
        pid = int(client.stdout.readline())
        time.sleep(0.5)  # the runaway call is under way
        assert _alive(pid)
        client.send_signal(signal.SIGKILL)
        client.wait()
        started = time.monotonic()
        while _alive(pid) and time.monotonic() - started < 5:
            time.sleep(0.05)
        gone_after = time.monotonic() - started
        assert not _alive(pid), "the server outlived its client by 5 s"
        assert gone_after < 2.0, f"the server took {gone_after:.2f} s to leave"
    finally:
        client.kill()


def test_every_card_of_every_vault_is_a_resource_listed_a_page_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mcp = pytest.importorskip("mcp")
    anyio = pytest.importorskip("anyio")
    from hql.mcp import server as module

    monkeypatch.setattr(module, "RESOURCES_PAGE", 7)
    birds = _birds(tmp_path / "birds")
    built = module.build_server(Vaults(entries_from_folders([str(SAMPLE), str(birds)])))
    seen: dict[str, Any] = {"uris": []}

    async def main() -> None:
        async with mcp.Client(built) as client:
            cursor = None
            while True:
                page = await client.list_resources(cursor=cursor)
                assert len(page.resources) <= 7
                seen["uris"] += [resource.uri for resource in page.resources]
                cursor = page.next_cursor
                if cursor is None:
                    break
            seen["wren"] = (await client.read_resource("hql://vault/birds/card/wren")).contents
            seen["oauth"] = (await client.read_resource("hql://card/oauth")).contents
            prompts = (await client.list_prompts()).prompts
            seen["prompts"] = {p.name: [a.name for a in p.arguments] for p in prompts}
            about = await client.get_prompt(
                "what_do_my_notes_say", {"topic": "scavenging birds of prey", "vault": "birds"}
            )
            seen["about"] = about.messages[0].content.text
            nothing = await client.get_prompt(
                "answer_from_notes", {"question": "what is the tax rate in Peru?"}
            )
            seen["nothing"] = nothing.messages[0].content.text

    anyio.run(main)
    uris = seen["uris"]
    assert len(uris) == len(set(uris)) == 1 + 18 + 3  # hql://cards, then each card once
    assert uris[0] == "hql://cards" and "hql://card/bearer-tokens" in uris
    assert "hql://vault/birds/card/wren" in uris
    assert "small brown songbird" in seen["wren"][0].text
    assert seen["oauth"][0].text.startswith("---\ntitle: OAuth 2.0")
    assert seen["prompts"] == {
        "answer_from_notes": ["question", "vault"],
        "what_do_my_notes_say": ["topic", "vault"],
    }
    assert "card `vulture`" in seen["about"] and "Scavenging birds of prey" in seen["about"]
    assert '"hits":[]' in seen["nothing"] and "no card passed the relevance rule" in seen["nothing"]
