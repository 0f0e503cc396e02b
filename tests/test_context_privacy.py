"""`[semantics] store_question_text = false`: the index keeps questions by digest, never as text."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from standin_embedder import BASE_CARDS, http_toml, standin_server, write_vault

import hql
from hql.index.commands import build_command


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_questions_are_kept_by_digest(tmp_path: Path) -> None:
    built = "which birds catch fish underwater"
    asked = "owls hunting at night in the dark"
    with standin_server() as (endpoint, state):
        root = tmp_path / "zoo"
        extra = "embed_queries = true\nstore_question_text = false\n"
        write_vault(root, BASE_CARDS, http_toml(endpoint, extra=extra))
        code, said = build_command(hql.open_vault(root, use_cache=False), queries=[built])
        assert code == 0, said
        vault = hql.open_vault(root, use_cache=False)
        first = hql.run(f'import semantic\ncards | semantic("{asked}") | take(1)', vault=vault)
        assert not first.failed, first.render_reports()
        assert first.value.hits[0].card.name == "owl"
        assert first.value.retrieval.extra.get("query_embedded_now") is True
        again = hql.run(f'import semantic\ncards | semantic("{asked}") | take(1)', vault=vault)
        assert "query_embedded_now" not in again.value.retrieval.extra  # found by its digest
        known = hql.run(f'import semantic\ncards | semantic("{built}") | take(1)', vault=vault)
        assert "query_embedded_now" not in known.value.retrieval.extra
    index = root / ".hql" / "index.sqlite"
    with sqlite3.connect(index) as connection:
        stored = {row[0] for row in connection.execute("SELECT text FROM query")}
    assert stored == {digest(built), digest(asked)}
    data = index.read_bytes()
    for word in (b"underwater", b"hunting", b"owls hunting"):
        assert word not in data


def test_a_wrong_value_is_a_configuration_report(tmp_path: Path) -> None:
    root = tmp_path / "zoo"
    write_vault(
        root, BASE_CARDS, '[semantics]\nindex = ".hql/index.sqlite"\nstore_question_text = "no"\n'
    )
    outcome = hql.run('import semantic\ncards | semantic("owl")', vault=hql.open_vault(root))
    assert outcome.failed and "semantics.store_question_text" in outcome.render_reports()
