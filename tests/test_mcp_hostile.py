"""The MCP server against hostile vaults and clients: what its card resource serves, what
its log says about malformed requests, and the answer size every tool keeps to."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hql.mcp.service import ToolFailure, VaultService

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".hql"))
    return root


# --- the card resource: the note as written, from inside the vault only -------------------


def test_the_card_resource_is_the_note_byte_for_byte(vault: Path) -> None:
    written = "\ufeff---\r\ntitle: Line endings\r\n---\r\n# Line endings\r\n\r\nCRLF kept.\r\n"
    (vault / "crlf.md").write_bytes(written.encode("utf-8"))
    assert VaultService(vault).card_text("crlf") == written


def test_the_card_resource_refuses_a_note_swapped_for_a_link_out_of_the_vault(
    vault: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the password is swordfish\n")
    service = VaultService(vault)
    service.live.walk_share = 10**9  # a large vault: the next walk is far off
    assert "OAuth" in service.card_text("oauth")
    note = next(vault.rglob("oauth.md"))
    note.unlink()
    note.symlink_to(secret)
    with pytest.raises(ToolFailure, match="outside the vault") as refused:
        service.card_text("oauth")
    assert "swordfish" not in str(refused.value)


def test_a_link_inside_the_vault_is_served(vault: Path) -> None:
    service = VaultService(vault)
    service.live.walk_share = 10**9
    expected = service.card_text("oauth")
    note = next(vault.rglob("oauth.md"))
    copy = vault / "elsewhere.txt"
    copy.write_text(expected, encoding="utf-8")
    note.unlink()
    note.symlink_to(copy)
    assert service.card_text("oauth") == expected


def test_a_fifo_named_like_a_note_is_refused_at_once(vault: Path) -> None:
    service = VaultService(vault)
    service.live.walk_share = 10**9
    service.card_text("oauth")
    note = next(vault.rglob("oauth.md"))
    note.unlink()
    os.mkfifo(note)
    answer: dict[str, object] = {}

    def read() -> None:
        try:
            service.card_text("oauth")
        except ToolFailure as failure:
            answer["refusal"] = str(failure)

    reader = threading.Thread(target=read, daemon=True)
    started = time.monotonic()
    reader.start()
    reader.join(5)
    if reader.is_alive():  # unblock the reader so the test run can end
        with open(note, "wb"):
            pass
    assert not reader.is_alive() and time.monotonic() - started < 5
    assert "not a regular file" in str(answer.get("refusal"))


# --- the stdio server's log: one line per refusal, never a traceback -----------------------


def _stdio_session(vault: Path, lines: list[str], answers: int) -> tuple[dict[Any, Any], str]:
    """Send `lines` to `hql mcp` after the handshake; the answers by id and its stderr."""
    server = subprocess.Popen(
        [sys.executable, "-m", "hql", "mcp", "--vault", str(vault)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    server.stdin.write(json.dumps(hello) + "\n")
    server.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    for line in lines:
        server.stdin.write(line + "\n")
    server.stdin.flush()
    found: dict[Any, Any] = {}
    deadline = time.monotonic() + 60
    while len(found) < answers + 1 and time.monotonic() < deadline:
        line = server.stdout.readline()
        if not line:
            break
        message = json.loads(line)
        found[message.get("id")] = message
    server.stdin.close()
    server.wait(30)
    return found, server.stderr.read()


def test_the_stdio_server_logs_one_line_per_refused_or_malformed_request(vault: Path) -> None:
    written = "# Windows\r\n\r\nWritten on Windows.\r\n"
    (vault / "windows.md").write_bytes(written.encode("utf-8"))

    def call(id_: int, method: str, params: dict[str, Any]) -> str:
        return json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})

    malformed = ["this is not json", "[1,2,3]", '{"id": 7}']
    refused = [
        call(2, "tools/call", {"name": "query"}),  # no program
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such"}),
        call(4, "tools/call", {"name": "nosuch", "arguments": {}}),
        call(5, "resources/read", {"uri": "hql://card/nosuch"}),
        call(6, "resources/read", {"uri": "file:///etc/passwd"}),
        call(8, "tools/call", {"name": "query", "arguments": {"program": 5}}),
        call(9, "tools/call", {"name": "render", "arguments": {"document": "x.md"}}),
    ]
    fine = [
        call(10, "tools/call", {"name": "query", "arguments": {"program": "1 + 1"}}),
        call(11, "tools/call", {"name": "query", "arguments": {"program": "cards | nope"}}),
        call(12, "resources/read", {"uri": "hql://card/windows"}),
    ]
    answers, log = _stdio_session(vault, [*malformed, *refused, *fine], len(refused) + len(fine))
    assert {2, 3, 4, 5, 6, 8, 9, 10, 11, 12} <= set(answers)
    assert answers[10]["result"]["structuredContent"]["value"] == 2
    assert answers[11]["result"]["isError"] is True  # a program's reports: an answer
    assert answers[12]["result"]["contents"][0]["text"] == written  # CRLF over the wire
    assert "no card named `nosuch`" in answers[5]["error"]["message"]
    assert "Traceback" not in log and 'File "' not in log
    lines = log.strip().splitlines()
    assert len(lines) == len(malformed) + len(refused), log
    assert all(line.startswith("hql mcp: ") for line in lines)
    assert sum("dropped a line" in line for line in lines) == len(malformed)
    assert any("refused resources/read hql://card/nosuch" in line for line in lines)


def test_a_parameter_hql_cannot_bind_is_refused_with_its_reason(vault: Path) -> None:
    """JSON's null is a value an MCP client may send; HQL binds no such value, and says so."""
    service = VaultService(vault)
    with pytest.raises(ToolFailure, match="parameter `p`"):
        service.query("cards | filter(c => c.name == $p) | count", {"p": None})
    answer = service.query("cards | filter(c => c.name == $p) | count", {"p": "oauth"})
    assert answer["value"] == 1
