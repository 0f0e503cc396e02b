"""`hql mcp`: the vault served over the Model Context Protocol, talked to with the SDK's own client.

The conversation tests start the real server as a subprocess over stdio; the
service tests call what the tools do directly, which is faster and shows the
answers' shape in detail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from hql.mcp.service import Limits, ToolFailure, VaultService, fit, string_literal, within

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"
# Seven nested maps over 18 cards: billions of steps, far beyond any budget.
RUNAWAY = "cards | " + "".join(f"map({v} => cards | " for v in "abcdef") + "count" + ")" * 6
RUNAWAY += " | count"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".hql"))
    return root


# --- through the SDK's stdio client ------------------------------------------------


def _converse(args: list[str], talk: Callable[[Any], Awaitable[None]]) -> None:
    mcp = pytest.importorskip("mcp")
    anyio = pytest.importorskip("anyio")
    from mcp.client.stdio import StdioServerParameters

    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    params = StdioServerParameters(command=sys.executable, args=args, env=env)

    async def main() -> None:
        async with mcp.Client(params) as client:
            await talk(client)

    anyio.run(main)


def _answer(result: Any) -> dict[str, Any]:
    """The JSON text a tool answered with; it must say the same as the structured content."""
    answer = json.loads(result.content[0].text)
    assert answer == result.structured_content
    return answer


def test_a_client_lists_the_tools_calls_each_and_survives_bad_programs() -> None:
    seen: dict[str, Any] = {}

    async def talk(client: Any) -> None:
        assert "HQL" in client.instructions and "import bm25" in client.instructions
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {
            "vaults",
            "query",
            "search",
            "context",
            "recall",
            "check",
            "card",
            "explain",
            "read_note",
        }  # no render
        for tool in tools.values():
            assert len(tool.description) > 80 and tool.input_schema["type"] == "object"
            hints = tool.annotations
            assert (hints.read_only_hint, hints.destructive_hint, hints.open_world_hint) == (
                True,
                False,
                False,
            )
            assert tool.output_schema["type"] == "object"
            if tool.name != "vaults":
                assert "vault" in tool.input_schema["properties"]
        assert {"ok", "program", "hits", "retrieval", "reports"} <= set(
            tools["search"].output_schema["required"]
        )
        assert tools["search"].input_schema["properties"]["ranker"]["enum"] == [
            "auto",
            "bm25",
            "semantic",
            "hybrid",
        ]
        assert tools["query"].annotations.read_only_hint is True

        seen["count"] = _answer(await client.call_tool("query", {"program": "cards | count"}))
        seen["search"] = _answer(
            await client.call_tool("search", {"question": "bearer token", "k": 3})
        )
        seen["check"] = _answer(
            await client.call_tool("check", {"program": "cards | map(c => c.title)"})
        )
        seen["card"] = _answer(await client.call_tool("card", {"name": "oauth"}))
        seen["explain"] = _answer(
            await client.call_tool(
                "explain", {"program": 'import bm25\ncards | bm25("token") | take(2)'}
            )
        )
        seen["context"] = _answer(
            await client.call_tool("context", {"prompt": "refresh an expired access token"})
        )
        malformed = await client.call_tool("query", {"program": "cards | map(c => c.tittle"})
        seen["malformed"] = (malformed.is_error, _answer(malformed))
        started = time.perf_counter()
        runaway = await client.call_tool("query", {"program": RUNAWAY})
        seen["runaway"] = (runaway.is_error, _answer(runaway), time.perf_counter() - started)
        unknown = await client.call_tool("card", {"name": "oauthh"})
        seen["unknown"] = (unknown.is_error, unknown.content[0].text)
        seen["after"] = _answer(await client.call_tool("query", {"program": "(cards | count) + 1"}))
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == [
            "hql://card/{name}",
            "hql://vault/{vault}/card/{name}",
        ]
        document = await client.read_resource("hql://card/oauth")
        seen["resource"] = document.contents[0].text
        listing = await client.read_resource("hql://cards")
        seen["listing"] = json.loads(listing.contents[0].text)

    # The budget leaves a loaded machine time to build the bm25 index on the first search.
    _converse(["-m", "hql", "--vault", str(SAMPLE), "mcp", "--time-limit", "4"], talk)
    assert seen["count"] == {"ok": True, "type": "Int", "value": 18, "reports": []}

    search = seen["search"]
    assert search["ok"], search["reports"]
    assert [hit["card"] for hit in search["hits"]][0] == "bearer-tokens"
    assert search["retrieval"]["model"] == "hql.bm25.v1" and "cutoff" in search["retrieval"]
    assert (
        "bearer" in search["hits"][0]["matched"] and search["hits"][0]["title"] == "Bearer tokens"
    )
    assert search["program"] == 'import bm25\ncards | bm25("bearer token") | relevant | take(3)'

    assert seen["check"] == {"ok": True, "type": "List<String>", "reports": []}
    card = seen["card"]
    assert card["title"] == "OAuth 2.0" and card["path"] == "concepts/oauth.md"
    assert "bearer-tokens" in card["links"] and "openid-connect" in card["backlinks"]
    assert card["tags"] == ["authorization", "protocol"] and "delegated" in card["body"]
    assert card["headings"] == ["OAuth 2.0"] and card["unresolved"] == []

    explain = seen["explain"]
    assert [stage["stage"] for stage in explain["stages"]] == ['bm25("token")', "take(2)"]
    assert explain["stages"][0]["output"] == "Ranking<Card>" and explain["type"] == "Ranking<Card>"
    assert all(stage["ms"] >= 0 for stage in explain["stages"])
    assert explain["retrievals"][0]["retrieval"]["metric"] == "bm25"

    context = seen["context"]
    assert context["ok"] and context["block"].startswith("# Context: ")
    assert context["items"][0]["card"] == "refresh-tokens" and context["token_kind"] == "estimated"
    is_error, malformed = seen["malformed"]
    assert is_error and not malformed["ok"] and malformed["value"] is None
    report = malformed["reports"][0]
    assert report["severity"] == "failure" and report["stage"] == "syntax"
    assert report["line"] == 1 and "^" in report["text"] and "<query>:1:" in report["text"]

    is_error, runaway, seconds = seen["runaway"]
    assert is_error and runaway["reports"][0]["stage"] == "evaluation"
    assert "after 4 s" in runaway["reports"][0]["message"] and seconds < 30

    is_error, text = seen["unknown"]
    assert is_error and "did you mean `oauth`" in text

    assert seen["after"]["value"] == 19  # the server kept answering
    assert seen["resource"].startswith("---\ntitle: OAuth 2.0")
    assert {"name": "oauth", "title": "OAuth 2.0", "kind": "ConceptCard"} in seen["listing"][
        "cards"
    ]


def test_allow_write_adds_render_which_writes_one_document_atomically(vault: Path) -> None:
    notes = vault / "notes.md"
    notes.write_text("# Notes\n\n```hql\ncards | count\n```\n", encoding="utf-8")
    seen: dict[str, Any] = {}

    async def talk(client: Any) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        hints = tools["render"].annotations
        assert hints.read_only_hint is False and hints.destructive_hint is True
        seen["render"] = _answer(await client.call_tool("render", {"document": "notes.md"}))
        outside = await client.call_tool("render", {"document": "../elsewhere.md"})
        seen["outside"] = (outside.is_error, outside.content[0].text)
        # the server sees the document it just wrote: notes.md is a card too
        seen["count"] = _answer(await client.call_tool("query", {"program": "cards | count"}))

    _converse(["-m", "hql.mcp", "--vault", str(vault), "--allow-write"], talk)
    assert seen["render"] == {
        "ok": True,
        "path": "notes.md",
        "blocks": 1,
        "failed_blocks": 0,
        "written": True,
    }
    assert "```hql#result\n19\n```" in notes.read_text(encoding="utf-8")
    assert not [path for path in vault.iterdir() if path.name.endswith(".tmp")]
    is_error, text = seen["outside"]
    assert is_error and "outside the vault" in text
    assert seen["count"]["value"] == 19


def test_the_command_refuses_without_a_vault_or_with_a_bad_limit() -> None:
    for args, wanted in [
        (["mcp"], "--vault DIR"),
        (["--vault", str(SAMPLE), "mcp", "--time-limit", "0"], "positive number"),
        (["--vault", str(SAMPLE), "mcp", "--max-output", "10"], "at least 2000"),
        (["--vault", str(SAMPLE), "--report", "bogus", "mcp"], "unknown report mode"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "hql", *args],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 1 and wanted in done.stderr and done.stdout == ""


def test_eval_does_not_load_the_mcp_sdk() -> None:
    probe = (
        "import sys; from hql.cli import main; main(['eval', '1 + 1']); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'pydantic', 'anyio'}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["2", "[]"], done.stderr


# --- the service, directly ---------------------------------------------------------


def test_search_escapes_the_question_and_checks_its_arguments() -> None:
    service = VaultService(SAMPLE)
    answer = service.search('a "quoted" \\ question\nover lines', k=2, relevant=False)
    assert answer["ok"], answer["reports"]
    assert answer["retrieval"]["query"] == 'a "quoted" \\ question\nover lines'
    with pytest.raises(ToolFailure, match="unknown ranker `fuzzy`"):
        service.search("token", ranker="fuzzy")
    with pytest.raises(ToolFailure, match="at least 1"):
        service.search("token", k=0)
    assert string_literal("tab\there") == '"tab\\there"'


def test_a_ranker_without_its_index_is_a_report_not_a_crash() -> None:
    answer = VaultService(SAMPLE).search("token", ranker="semantic")
    assert not answer["ok"] and answer["hits"] == []
    assert "needs an index" in answer["reports"][0]["message"]


def test_search_ranks_by_hybrid_when_the_vault_has_a_semantic_index(tmp_path: Path) -> None:
    import numpy as np
    from standin_embedder import BASE_CARDS, standin_vector, write_vault

    from hql.index.commands import build_command
    from hql.vault import Vault

    class Bag:
        model_id, revision = "bag", "1"

        def embed_passages(self, texts: list[str]) -> Any:
            return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

        embed_queries = embed_passages

    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, '[semantics]\nindex = ".hql/index.sqlite"\n')
    question = "penguins swim underwater"
    code, text = build_command(Vault.open(root), queries=[question], embedder=Bag())
    assert code == 0, text
    answer = VaultService(root).search(question)
    assert answer["ok"], answer["reports"]
    assert answer["ranker"] == "hybrid" and "semantic index" in answer["ranker_reason"]
    assert "hybrid(" in answer["program"] and answer["hits"][0]["card"] == "penguin"
    plain = VaultService(SAMPLE).search("token")
    assert plain["ranker"] == "bm25" and "no semantic index" in plain["ranker_reason"]
    asked = VaultService(root).search(question, ranker="bm25")
    assert asked["ranker"] == "bm25" and asked["ranker_reason"] == "bm25: asked for"


def test_relevant_abstains_on_a_question_the_vault_does_not_answer() -> None:
    service = VaultService(SAMPLE)
    answer = service.search("zebra migration patterns")
    assert answer["ok"] and answer["hits"] == []


def test_the_vault_is_loaded_once_and_again_when_a_file_changes(vault: Path) -> None:
    service = VaultService(vault)
    service.live.walk_share = 0  # walk before every call, however fast the calls come
    assert service.card("oauth")["title"] == "OAuth 2.0"
    service.query("cards | count")
    assert service.live.loads == 1
    card = vault / "concepts" / "oauth.md"
    text = card.read_text(encoding="utf-8")
    card.write_text(text.replace("title: OAuth 2.0", "title: OAuth two"), encoding="utf-8")
    os.utime(card, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    assert service.card("oauth")["title"] == "OAuth two"
    (vault / "concepts" / "new.md").write_text("# A new card\n", encoding="utf-8")
    assert service.query("cards | count")["value"] == 19
    assert service.live.loads == 3


def test_a_costly_stat_walk_waits_before_walking_again(vault: Path) -> None:
    service = VaultService(vault)
    service.live.walk_share = 1e9  # as if the walk were slow: the next one waits
    assert service.query("cards | count")["value"] == 18
    (vault / "new.md").write_text("# A new card\n", encoding="utf-8")
    assert service.query("cards | count")["value"] == 18
    service.live.expire()  # what the server does after it writes a document
    assert service.query("cards | count")["value"] == 19


def test_warming_builds_the_bm25_index_outside_the_calls(vault: Path) -> None:
    postings = vault / ".hql" / "bm25.v1.bin"
    assert not postings.exists()
    VaultService(vault, warm=True).live.get()  # no call searches
    deadline = time.monotonic() + 60
    while not postings.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert postings.exists()


def test_a_runaway_program_is_stopped_and_the_next_one_runs() -> None:
    service = VaultService(SAMPLE, Limits(seconds=0.5))
    started = time.perf_counter()
    answer = service.query(RUNAWAY)
    assert time.perf_counter() - started < 5
    assert not answer["ok"] and "0.5 s" in answer["reports"][0]["message"]
    assert answer["reports"][0]["column"] == 1
    assert service.query("cards | count")["value"] == 18
    explained = service.explain(RUNAWAY)
    assert not explained["ok"] and explained["stages"] == []


def test_within_hands_back_errors_and_values() -> None:
    assert within(1.0, lambda: 42) == 42
    with pytest.raises(ZeroDivisionError):
        within(1.0, lambda: 1 / 0)


def test_a_long_value_is_cut_with_a_note_saying_how_much() -> None:
    service = VaultService(SAMPLE, Limits(output_chars=2000))
    answer = service.query("cards")
    short, text = service.finish(answer)
    assert len(text) <= 2000 and json.loads(text) == short
    cut = short["truncated"]
    assert 0 < cut["shown"] < cut["total"] == 18 and len(short["value"]) == cut["shown"]
    assert "take(n)" in cut["note"]
    whole, whole_text = service.finish(service.query("cards | count"))
    assert "truncated" not in whole and json.loads(whole_text)["value"] == 18


def test_a_huge_list_is_projected_only_as_far_as_the_answer_reaches() -> None:
    from hql.values import ListValue

    service = VaultService(SAMPLE, Limits(output_chars=2000))
    projected, total = service._project(ListValue(tuple(range(1_000_000))))
    assert total == 1_000_000 and len(projected) < 1000
    answer = service.query("cards | flat_map(a => cards | map(b => b.name))")
    assert len(json.dumps(answer, separators=(",", ":"))) <= 2000
    assert answer["truncated"]["total"] == 324 and 0 < answer["truncated"]["shown"] < 324


def test_a_long_scalar_is_cut_to_the_start_of_its_text() -> None:
    answer = {"ok": True, "value": {"text": "x" * 5000}, "reports": []}
    short, text = fit(answer, "value", 2000)
    assert len(text) <= 2000 and short["value"] is None
    assert short["truncated"]["start"].startswith('{"text":"xxx')
    assert short["truncated"]["total_characters"] > 5000


def test_params_are_refused_with_a_reason_until_the_language_has_them() -> None:
    service = VaultService(SAMPLE)
    if service.params_supported:
        pytest.skip("this HQL has $name parameters")
    with pytest.raises(ToolFailure, match="no `\\$name` parameters"):
        service.query("cards | count", {"n": 1})


def test_params_bind_the_programs_dollar_names_once_the_language_has_them() -> None:
    service = VaultService(SAMPLE)
    if not service.params_supported:
        pytest.skip("this HQL has no $name parameters yet")
    answer = service.query("cards | take($n) | count", {"n": 2})
    assert answer["ok"] and answer["value"] == 2, answer["reports"]


def test_render_needs_allow_write_and_stays_inside_the_vault(vault: Path) -> None:
    with pytest.raises(ToolFailure, match="read-only"):
        VaultService(vault).render("queries.md")
    service = VaultService(vault, allow_write=True)
    with pytest.raises(ToolFailure, match="outside the vault"):
        service.render("../../etc/passwd")
    with pytest.raises(ToolFailure, match="not a document"):
        service.render("missing.md")
    answer = service.render("queries.md")
    assert answer["ok"] and answer["blocks"] == 8 and answer["written"] is False


def test_the_transcript_in_the_agents_page_is_what_the_server_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = SAMPLE.parents[1]
    monkeypatch.chdir(root)  # the page shows the vault's path as the README's commands give it
    page = (root / "docs" / "agents.md").read_text(encoding="utf-8")
    calls = re.findall(
        r"<!-- mcp-call: (\w+) -->\n```json\n(.*?)```\n"
        r"<!-- mcp-answer \(isError (true|false)\) -->\n```json\n(.*?)```",
        page,
        re.S,
    )
    assert [call[0] for call in calls] == ["context", "search", "query", "query"]
    service = VaultService("vaults/web-auth")
    for tool, arguments, is_error, shown in calls:
        answer = getattr(service, tool)(**json.loads(arguments))
        assert answer == json.loads(shown), (
            f"docs/agents.md shows an old answer of `{tool}`; the server now answers:\n"
            + json.dumps(answer, indent=2, ensure_ascii=False)
        )
        assert answer["ok"] == (is_error == "false")
