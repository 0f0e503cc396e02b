"""The `rerank` step against a stand-in rerank server on 127.0.0.1 (Cohere/Jina and TEI shapes)."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import hql

WORD = re.compile(r"\w+")

NOTES = {
    "tokens": "# Tokens\n\nA bearer token proves who the client is.",
    "sessions": "# Sessions\n\nA session cookie keeps you signed in; the token is in the cookie.",
    "penguins": "# Penguins\n\nPenguins catch fish and do not fly.",
    "owls": "# Owls\n\nOwls hunt at night; a token of wisdom in stories.",
}


def overlap(query: str, document: str) -> float:
    """The stand-in model: the share of the query's words in the document."""
    asked = set(WORD.findall(query.lower()))
    return len(asked & set(WORD.findall(document.lower()))) / max(len(asked), 1)


@contextmanager
def rerank_server(shape: str = "cohere", fail: int | None = None) -> Iterator[dict[str, Any]]:
    state: dict[str, Any] = {"requests": []}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["requests"].append(body)
            if fail is not None:
                self._send(fail, {"error": "overloaded"})
            elif state.get("garbage"):
                self._send(200, {"results": [{"index": 0}]})
            elif shape == "tei":
                scored = [
                    {"index": i, "score": overlap(body["query"], text)}
                    for i, text in enumerate(body["texts"])
                ]
                self._send(200, sorted(scored, key=lambda row: -row["score"]))
            else:
                scored = [
                    {"index": i, "relevance_score": overlap(body["query"], text)}
                    for i, text in enumerate(body["documents"])
                ]
                self._send(200, {"results": sorted(scored, key=lambda r: -r["relevance_score"])})

        def _send(self, status: int, answer: object) -> None:
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/rerank"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def vault(root: Path, table: str) -> hql.Vault:
    root.mkdir(exist_ok=True)
    (root / "hql.toml").write_text(table, encoding="utf-8")
    for name, text in NOTES.items():
        (root / f"{name}.md").write_text(text + "\n", encoding="utf-8")
    return hql.open_vault(root, use_cache=False)


def run(program: str, where: hql.Vault) -> hql.Outcome:
    return hql.run("import bm25\nimport rerank\n" + program, vault=where)


@pytest.mark.parametrize("shape", ["cohere", "tei"])
def test_rerank_orders_the_first_hits_by_the_model_and_records_it(
    tmp_path: Path, shape: str
) -> None:
    with rerank_server(shape) as server:
        table = f'[rerank]\nurl = "{server["url"]}"\nmodel = "standin-overlap"\nshape = "{shape}"\n'
        where = vault(tmp_path / shape, table)
        question = "which bearer token proves the client"
        before = run(f'cards | bm25("{question}")', where).value
        outcome = run(f'cards | bm25("{question}") | rerank(cap = 2)', where)
        assert not outcome.failed, outcome.render_reports()
        ranking = outcome.value
        sent = server["requests"][0]
        documents = sent["texts"] if shape == "tei" else sent["documents"]
        assert sent["query"] == question and len(documents) == 2
        if shape == "cohere":
            assert sent["model"] == "standin-overlap" and sent["top_n"] == 2
        expected = sorted(
            before.hits[:2],
            key=lambda hit: -overlap(question, f"{hit.card.title}\n\n{hit.card.text}"),
        )
        assert [hit.card.name for hit in ranking] == [hit.card.name for hit in expected]
        retrieval = ranking.retrieval
        assert retrieval.metric == "rerank" and retrieval.model == "standin-overlap"
        assert retrieval.extra["cap"] == 2 and retrieval.extra["candidates"] == 2
        assert retrieval.extra["left_out"] == len(before.hits) - 2
        assert retrieval.extra["input"]["metric"] == "bm25"
        first = ranking.hits[0]
        assert first.score == pytest.approx(
            overlap(question, f"{first.card.title}\n\n{first.card.text}")
        )
        assert first.detail["rerank"]["input_rank"] in (1, 2)
        json.dumps(outcome.to_json())


def test_the_cap_defaults_to_fifty(tmp_path: Path) -> None:
    with rerank_server() as server:
        where = vault(tmp_path / "v", f'[rerank]\nurl = "{server["url"]}"\n')
        outcome = run('cards | bm25("token") | rerank', where)
        assert outcome.value.retrieval.extra["cap"] == 50
        assert len(server["requests"][0]["documents"]) == len(outcome.value.hits) == 3
        assert "model" not in server["requests"][0]


@pytest.mark.parametrize("trouble", ["status", "garbage", "closed"])
def test_a_failing_endpoint_is_a_report_naming_it(tmp_path: Path, trouble: str) -> None:
    if trouble == "closed":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{probe.getsockname()[1]}/rerank"
        where = vault(tmp_path / trouble, f'[rerank]\nurl = "{url}"\ntimeout = 2\n')
        outcome = run('cards | bm25("token") | rerank', where)
    else:
        with rerank_server(fail=503 if trouble == "status" else None) as server:
            server["garbage"] = trouble == "garbage"
            url = server["url"]
            where = vault(tmp_path / trouble, f'[rerank]\nurl = "{url}"\n')
            outcome = run('cards | bm25("token") | rerank', where)
    assert outcome.failed
    message = outcome.reports[0].message
    assert url in message and "Traceback" not in outcome.render_reports()
    assert {"status": "503", "garbage": "not a ranking", "closed": "cannot be reached"}[
        trouble
    ] in message


def test_on_unavailable_keep_warns_and_records_the_fallback(tmp_path: Path) -> None:
    with rerank_server(fail=500) as server:
        where = vault(
            tmp_path / "v", f'[rerank]\nurl = "{server["url"]}"\non_unavailable = "keep"\n'
        )
        before = run('cards | bm25("token")', where).value
        outcome = run('cards | bm25("token") | rerank', where)
    assert not outcome.failed
    assert [hit.card.name for hit in outcome.value] == [hit.card.name for hit in before]
    assert outcome.value.retrieval.extra["fallback"]["from"] == "rerank"
    assert any("on_unavailable" in report.message for report in outcome.reports)


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ("", "[rerank] url"),
        ('[rerank]\nurl = "ftp://x"\n', "`[rerank] url` must be"),
        ('[rerank]\nurl = "http://127.0.0.1:1/rerank"\nshape = "other"\n', "`[rerank] shape`"),
        ('[rerank]\nurl = "http://127.0.0.1:1/rerank"\non_unavailable = 1\n', "on_unavailable"),
    ],
)
def test_a_missing_or_bad_rerank_table_is_a_report(tmp_path: Path, table: str, said: str) -> None:
    outcome = run('cards | bm25("token") | rerank', vault(tmp_path / "v", table))
    assert outcome.failed and said in outcome.reports[0].message


def test_rerank_takes_a_ranking_and_a_whole_cap(tmp_path: Path) -> None:
    where = vault(tmp_path / "v", "")
    assert run("[1, 2] | rerank", where).failed
    checked = run('cards | bm25("token") | rerank(cap = "ten")', where)
    assert checked.failed and "cap" in checked.reports[0].message
    assert "cap" in run('cards | bm25("token") | rerank(cap = 0)', where).reports[0].message


def test_rerank_of_cards_names_rerank_not_relevant(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nwords\n")
    outcome = hql.run("import rerank\ncards | rerank()", vault=tmp_path)
    assert outcome.failed
    assert "`rerank` reorders the hits of a ranking" in outcome.reports[0].message
