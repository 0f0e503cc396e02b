"""`hql mcp --http`: the real server in a subprocess, talked to with the SDK's streamable HTTP client.

Every test stays on loopback addresses: 127.0.0.1, and 127.0.0.2 for a bind
that is not the default one (Linux routes all of 127/8 to the loopback).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")
httpx = pytest.importorskip("httpx2")

from hql.mcp.http import Gate, HttpOptions, RateLimit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "vaults" / "web-auth"
# Seven nested maps over 18 cards: billions of steps, far beyond any budget.
RUNAWAY = "cards | " + "".join(f"map({v} => cards | " for v in "abcdef") + "count" + ")" * 6
RUNAWAY += " | count"
TOKEN = "s3cret-for-tests"


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str
    errors: list[str] = field(default_factory=list)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(30)
        finally:
            if self.process.poll() is None:
                self.process.kill()


def start(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Server:
    """`hql mcp --http --port 0 ARGS` in a subprocess, once it says where it listens."""
    command = [sys.executable, "-m", "hql", "mcp", "--http", "--port", "0", *args]
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}, cwd=cwd
    )
    assert process.stderr is not None
    errors: list[str] = []
    for line in process.stderr:
        errors.append(line)
        if "serving MCP over streamable HTTP at " in line:
            url = line.rsplit(" ", 1)[-1].strip()
            break
    else:
        code = process.wait()
        raise AssertionError(f"the server did not start (exit {code}):\n" + "".join(errors))
    server = Server(process, url, errors)
    drain = threading.Thread(target=lambda: errors.extend(process.stderr or ()), daemon=True)
    drain.start()
    return server


def _birds(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "hql.toml").write_text(
        '[mcp]\ndescription = "Field notes on birds"\n', encoding="utf-8"
    )
    for name, title, body in [
        ("condor", "Andean condor", "A vulture of the Andes; see [[vulture]]."),
        ("vulture", "Vultures", "Scavenging birds of prey that soar on thermals."),
        ("wren", "Wren", "A small brown songbird with a loud song."),
    ]:
        (root / f"{name}.md").write_text(f"---\ntitle: {title}\n---\n{body}\n", encoding="utf-8")
    (root / "notes.md").write_text("# Notes\n\n```hql\ncards | count\n```\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server over two vaults (copies, since `render` writes), with the write tools."""
    base = tmp_path_factory.mktemp("http")
    web = base / "web-auth"
    shutil.copytree(SAMPLE, web, ignore=shutil.ignore_patterns(".hql"))
    birds = _birds(base / "birds")
    running = start(
        ["--vault", str(web), "--vault", str(birds), "--allow-write", "--time-limit", "3"]
    )
    yield running
    assert running.stop() == 0, "".join(running.errors)


def talk(url: str, conversation: Any, token: str | None = None) -> Any:
    """Run `conversation(client)` against the server at `url` (with the bearer token, if any)."""
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx.AsyncClient(headers=headers, timeout=60) as http:
            transport = streamable_http_client(url, http_client=http)
            async with mcp.Client(transport) as client:
                return await conversation(client)

    return anyio.run(main)


def _answer(result: Any) -> dict[str, Any]:
    answer = json.loads(result.content[0].text)
    assert answer == result.structured_content
    return answer


def test_every_tool_answers_over_http_from_either_vault(server: Server) -> None:
    async def conversation(client: Any) -> dict[str, Any]:
        seen: dict[str, Any] = {"protocol": client.protocol_version}
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        seen["tools"] = tools
        seen["vaults"] = _answer(await client.call_tool("vaults", {}))
        for vault in ("web-auth", "birds"):
            seen[vault, "count"] = _answer(
                await client.call_tool("query", {"program": "cards | count", "vault": vault})
            )
        seen["search"] = _answer(
            await client.call_tool(
                "search", {"question": "scavenging birds of prey", "vault": "birds"}
            )
        )
        seen["default search"] = _answer(
            await client.call_tool("search", {"question": "bearer token", "k": 2})
        )
        seen["check"] = _answer(
            await client.call_tool("check", {"program": "cards | map(c => c.title)"})
        )
        seen["card"] = _answer(await client.call_tool("card", {"name": "wren", "vault": "birds"}))
        seen["explain"] = _answer(
            await client.call_tool("explain", {"program": 'import bm25\ncards | bm25("token")'})
        )
        seen["render"] = _answer(
            await client.call_tool("render", {"document": "notes.md", "vault": "birds"})
        )
        wrong = await client.call_tool("query", {"program": "cards | count", "vault": "fish"})
        seen["wrong vault"] = (wrong.is_error, wrong.content[0].text)
        broken = await client.call_tool("query", {"program": "cards | map(c => c.tittle)"})
        seen["broken"] = (broken.is_error, _answer(broken))
        return seen

    seen = talk(server.url, conversation)
    assert seen["protocol"] == "2026-07-28"
    tools = seen["tools"]
    writing = {"render", "remember", "append_note", "edit_note", "set_property", "move_note",
               "archive_note"}  # fmt: skip
    reading = {
        "vaults", "query", "search", "context", "recall", "check", "card", "explain", "read_note",
    }  # fmt: skip
    assert set(tools) == reading | writing
    assert all(tools[name].annotations.destructive_hint is True for name in writing)
    assert all(tools[name].annotations.read_only_hint for name in reading)

    assert [offer["name"] for offer in seen["vaults"]["vaults"]] == ["web-auth", "birds"]
    assert seen["vaults"]["vaults"][1]["description"] == "Field notes on birds"
    assert seen["web-auth", "count"]["value"] == 18
    assert seen["birds", "count"]["value"] == 4  # three birds and the notes
    assert seen["search"]["hits"][0]["card"] == "vulture"
    assert seen["default search"]["hits"][0]["card"] == "bearer-tokens"
    assert seen["check"] == {"ok": True, "type": "List<String>", "reports": []}
    assert seen["card"]["title"] == "Wren" and "songbird" in seen["card"]["body"]
    assert seen["explain"]["stages"][0]["stage"] == 'bm25("token")'
    assert seen["render"]["written"] is True and seen["render"]["blocks"] == 1
    is_error, text = seen["wrong vault"]
    assert is_error and "no vault called `fish`" in text
    is_error, broken = seen["broken"]
    assert is_error and broken["reports"][0]["stage"] == "name"


def test_a_client_of_the_handshake_era_is_answered_too(server: Server) -> None:
    async def conversation(client: Any) -> Any:
        return client.protocol_version, _answer(
            await client.call_tool("query", {"program": "cards | count"})
        )

    async def main() -> Any:
        async with mcp.Client(server.url, mode="legacy") as client:
            return await conversation(client)

    protocol, answer = anyio.run(main)
    assert protocol == "2025-11-25" and answer["value"] == 18


def test_a_runaway_program_is_stopped_at_the_budget_while_another_client_is_answered(
    server: Server,
) -> None:
    timings: dict[str, Any] = {}

    async def runaway(client: Any) -> Any:
        started = time.monotonic()
        result = await client.call_tool("query", {"program": RUNAWAY})
        timings["runaway"] = time.monotonic() - started
        timings["runaway finished"] = time.monotonic()
        return result

    async def other(client: Any) -> list[Any]:
        await anyio.sleep(0.5)  # the runaway is under way
        answers = []
        for _ in range(3):
            answers.append(_answer(await client.call_tool("query", {"program": "cards | count"})))
        timings["other finished"] = time.monotonic()
        return answers

    results: dict[str, Any] = {}

    async def main() -> None:
        async def run(name: str, conversation: Any) -> None:
            async with mcp.Client(server.url) as client:
                results[name] = await conversation(client)

        async with anyio.create_task_group() as group:
            group.start_soon(run, "runaway", runaway)
            group.start_soon(run, "other", other)

    anyio.run(main)
    stopped = results["runaway"]
    assert stopped.is_error
    report = _answer(stopped)["reports"][0]
    assert report["stage"] == "evaluation" and "after 3 s" in report["message"]
    assert timings["runaway"] < 30
    assert [answer["value"] for answer in results["other"]] == [18, 18, 18]
    # the other client was answered while the runaway still ran, not after it
    assert timings["other finished"] < timings["runaway finished"]


def _post(url: str, headers: dict[str, str] | None = None, body: bytes = b"{}") -> Any:
    headers = {"content-type": "application/json", "accept": "application/json"} | (headers or {})
    return httpx.post(url, content=body, headers=headers, timeout=30)


def test_bad_requests_are_refused_with_a_reason_and_no_traceback(server: Server) -> None:
    for headers, url, status, words in [
        ({"origin": "http://evil.example"}, server.url, 403, "web page at http://evil.example"),
        ({"host": "evil.example:80"}, server.url, 421, "does not answer to `evil.example:80`"),
        ({}, server.url.replace("/mcp", "/admin"), 404, "the MCP endpoint is /mcp"),
    ]:
        response = _post(url, headers)
        assert response.status_code == status
        error = response.json()["error"]
        assert words in error["message"] and "Traceback" not in response.text
    too_large = _post(server.url, body=b" " * (1024 * 1024 + 1))
    assert too_large.status_code == 413 and "larger than" in too_large.json()["error"]["message"]
    # a page of this very server may call it
    own = server.url.rsplit("/mcp", 1)[0]
    assert _post(server.url, {"origin": own}).status_code not in (403, 421)
    garbage = _post(server.url, {"mcp-protocol-version": "2026-07-28"}, b"{not json")
    assert garbage.status_code == 400 and "Traceback" not in garbage.text


def test_a_bind_beyond_127_0_0_1_needs_a_token_and_checks_it_on_every_request() -> None:
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "hql",
            "mcp",
            "--http",
            "--host",
            "127.0.0.2",
            "--vault",
            str(SAMPLE),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1 and "--token-env NAME" in refused.stderr
    assert "Traceback" not in refused.stderr
    unset = subprocess.run(
        [sys.executable, "-m", "hql", "mcp", "--http", "--host", "127.0.0.2"]
        + ["--token-env", "HQL_TEST_NO_SUCH_TOKEN", "--vault", str(SAMPLE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unset.returncode == 1 and "HQL_TEST_NO_SUCH_TOKEN" in unset.stderr

    running = start(
        ["--host", "127.0.0.2", "--token-env", "HQL_TEST_TOKEN", "--vault", str(SAMPLE)],
        env={"HQL_TEST_TOKEN": TOKEN},
    )
    try:
        assert running.url.startswith("http://127.0.0.2:")
        assert TOKEN not in " ".join(running.process.args)  # type: ignore[arg-type]
        for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": TOKEN}):
            response = _post(running.url, headers)
            assert response.status_code == 401 and "Bearer" in response.headers["www-authenticate"]

        async def conversation(client: Any) -> Any:
            return _answer(await client.call_tool("query", {"program": "cards | count"}))

        assert talk(running.url, conversation, token=TOKEN)["value"] == 18
    finally:
        assert running.stop() == 0


def test_sigterm_lets_the_call_in_flight_finish_and_exits_cleanly() -> None:
    running = start(["--vault", str(SAMPLE), "--time-limit", "2"])
    answered: dict[str, Any] = {}

    async def conversation(client: Any) -> None:
        async def slow() -> None:
            answered["runaway"] = await client.call_tool("query", {"program": RUNAWAY})

        async with anyio.create_task_group() as group:
            group.start_soon(slow)
            await anyio.sleep(0.7)
            running.process.send_signal(signal.SIGTERM)

    try:
        talk(running.url, conversation)
        assert running.process.wait(30) == 0
    finally:
        running.stop()
    result = answered["runaway"]
    assert result.is_error and "after 2 s" in _answer(result)["reports"][0]["message"]
    assert not any("Traceback" in line for line in running.errors), "".join(running.errors)


# --- the gate on its own ---------------------------------------------------------------


def _scope(
    headers: dict[str, str], path: str = "/mcp", client: str = "10.0.0.1", port: int = 5555
) -> Any:
    encoded = [(key.encode(), value.encode()) for key, value in headers.items()]
    return {"type": "http", "path": path, "headers": encoded, "client": (client, port)}


def test_the_gate_limits_each_client_address_to_its_rate() -> None:
    limit = RateLimit(rate=10)
    # a burst of two seconds' worth, then one every tenth of a second
    assert all(limit.wait_needed("a", now=100.0) == 0 for _ in range(20))
    assert limit.wait_needed("a", now=100.0) == pytest.approx(0.1)
    assert limit.wait_needed("b", now=100.0) == 0  # another address has its own bucket
    assert limit.wait_needed("a", now=100.15) == 0
    gate = Gate(lambda *_: None, HttpOptions(port=9, rate=1), port=9)  # type: ignore[arg-type,return-value]
    host = {"host": "127.0.0.1:9"}
    assert gate.refusal(_scope(host)) is None and gate.refusal(_scope(host)) is None
    status, message, headers = gate.refusal(_scope(host)) or (0, "", [])
    assert status == 429 and "1 a second" in message and headers[0][0] == b"retry-after"
    # another connection from the address has its own rate, until the address's is spent
    answered = [gate.refusal(_scope(host, port=port)) is None for port in range(1, 40)]
    assert answered[:18] == [True] * 18 and answered[-1] is False
    gate.closing = True
    assert (gate.refusal(_scope(host)) or (0,))[0] == 503


def test_the_gate_on_every_address_answers_any_host_unless_told_and_still_wants_the_token() -> None:
    anywhere = Gate(lambda *_: None, HttpOptions(host="0.0.0.0", token="t"), port=80)  # type: ignore[arg-type,return-value]
    assert anywhere.refusal(_scope({"host": "notes.example", "authorization": "Bearer t"})) is None
    assert (anywhere.refusal(_scope({"host": "notes.example"})) or (0,))[0] == 401
    named = Gate(
        lambda *_: None,  # type: ignore[arg-type,return-value]
        HttpOptions(host="0.0.0.0", token="t", allowed_hosts=("notes.example",)),
        port=80,
    )
    assert (named.refusal(_scope({"host": "other.example"})) or (0,))[0] == 421


def test_the_transcript_in_the_agents_page_is_what_the_server_answers_over_http() -> None:
    page = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    calls = re.findall(
        r"<!-- mcp-call: (\w+) -->\n```json\n(.*?)```\n"
        r"<!-- mcp-answer \(isError (true|false)\) -->\n```json\n(.*?)```",
        page,
        re.S,
    )
    assert len(calls) >= 3
    # the page shows the vault's path as the README's commands give it
    running = start(["--vault", "vaults/web-auth"], cwd=ROOT)

    async def conversation(client: Any) -> list[Any]:
        return [
            await client.call_tool(tool, json.loads(arguments)) for tool, arguments, *_ in calls
        ]

    try:
        results = talk(running.url, conversation)
    finally:
        assert running.stop() == 0
    for (tool, _, is_error, shown), result in zip(calls, results, strict=True):
        assert _answer(result) == json.loads(shown), (
            f"docs/agents.md shows an old answer of `{tool}`"
        )
        assert result.is_error == (is_error == "true")
