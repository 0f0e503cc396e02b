"""Secrets, special files, tampered state and odd configuration (issue 14, items 9, 10, 14-17)."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from standin_embedder import BASE_CARDS, http_toml, write_vault

import hql
from hql.index import SemanticIndexError
from hql.index.commands import build_command, inspect_command, verify_command
from hql.index.config import load_embedder_config, resolve_index_path
from hql.index.embedders import make_embedder
from hql.index.errors import EmbedderError
from hql.vault import Vault

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


def finishes(action: Callable[[], Any], seconds: float = 10.0) -> Any:
    """Run `action` in a thread; fail (instead of hanging the suite) when it blocks."""
    result: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            result.append(action())
        except BaseException as error:  # noqa: BLE001 - handed to the test
            errors.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "blocked"
    if errors:
        raise errors[0]
    return result[0]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- 9. secrets ------------------------------------------------------------------


def test_config_set_refuses_an_api_key_and_never_echoes_it(tmp_path: Path, capsys: Any) -> None:
    from hql.init import config_edit_command, init_vault

    init_vault(tmp_path)
    before = (tmp_path / "hql.toml").read_text()
    with pytest.raises(hql.HostError) as caught:
        config_edit_command("set", "semantics.embedder.api_key", "sk-LEAK123", str(tmp_path))
    assert "sk-LEAK123" not in str(caught.value) and "api_key_env" in str(caught.value)
    assert "sk-LEAK123" not in capsys.readouterr().out
    assert (tmp_path / "hql.toml").read_text() == before


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://user:hunter2@127.0.0.1:{port}/v1/embeddings",
        "http://127.0.0.1:{port}/v1/embeddings?api_key=hunter2",
    ],
)
def test_a_secret_in_the_endpoint_is_never_printed(tmp_path: Path, endpoint: str) -> None:
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, http_toml(endpoint.format(port=_free_port())))
    code, text = build_command(Vault.open(root, use_cache=False))
    assert code == 1 and "cannot be reached" in text
    assert "hunter2" not in text and "***" in text


def test_a_key_put_in_api_key_env_is_never_printed() -> None:
    table = {
        "provider": "http",
        "endpoint": "http://127.0.0.1:1/v1/embeddings",
        "model": "m",
        "revision": "1",
        "api_key_env": "sk-proj-LEAK123",
    }
    with pytest.raises(EmbedderError) as caught:
        make_embedder(load_embedder_config(table))
    assert "LEAK123" not in caught.value.message and "NAME" in caught.value.message


# --- 10. FIFOs and devices where HQL keeps its files --------------------------------


@needs_fifo
@pytest.mark.parametrize("where", ["hql.toml", ".hql/catalog.sqlite", ".hql/bm25.v1.bin"])
def test_a_fifo_among_the_vaults_files_never_blocks(tmp_path: Path, where: str) -> None:
    (tmp_path / "card.md").write_text("# Card\n\nPenguins swim.\n")
    (tmp_path / ".hql").mkdir()
    os.mkfifo(tmp_path / where)

    def run() -> hql.Outcome:
        return hql.run('import bm25\ncards | bm25("penguins") | count', hql.open_vault(tmp_path))

    outcome = finishes(run)
    assert not outcome.failed and outcome.value == 1


@pytest.mark.parametrize("where", ["hql.toml", ".hql/catalog.sqlite", ".hql/bm25.v1.bin"])
def test_a_link_to_dev_zero_is_refused_unread(tmp_path: Path, where: str) -> None:
    (tmp_path / "card.md").write_text("# Card\n\nPenguins swim.\n")
    (tmp_path / ".hql").mkdir()
    (tmp_path / where).symlink_to("/dev/zero")

    def run() -> hql.Outcome:
        return hql.run('import bm25\ncards | bm25("penguins") | count', hql.open_vault(tmp_path))

    assert finishes(run).value == 1


def test_a_crafted_catalogue_claiming_two_billion_items_is_not_believed(tmp_path: Path) -> None:
    import sqlite3

    (tmp_path / "card.md").write_text("# Card\n")
    Vault.open(tmp_path)
    connection = sqlite3.connect(tmp_path / ".hql" / "catalog.sqlite")
    with connection:  # a row and a listing that would allocate gigabytes if believed
        connection.execute("UPDATE files SET payload = ?", (b"[\xff\xff\xff\x7f",))
        connection.execute("UPDATE listing SET warnings = ?", (b"(\xff\xff\xff\x7f",))
    connection.close()
    vault = finishes(lambda: Vault.open(tmp_path))
    assert [card.name for card in vault.cards] == ["card"]
    assert vault.warnings == ()


@needs_fifo
@pytest.mark.parametrize("command", ["verify", "inspect"])
def test_a_fifo_index_is_refused_not_waited_for(tmp_path: Path, command: str) -> None:
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, '[semantics]\nindex = ".hql/index.sqlite"\n')
    (root / ".hql").mkdir(exist_ok=True)
    os.mkfifo(root / ".hql" / "index.sqlite")
    vault = Vault.open(root, use_cache=False)
    action = verify_command if command == "verify" else inspect_command
    code, text = finishes(lambda: action(vault))
    assert code == 1 and "not a regular file" in text


# --- 14. configuration that used to crash --------------------------------------------


@pytest.mark.parametrize("configured", ["bad\0name.sqlite", "x" * 300 + ".sqlite"])
def test_odd_index_paths_are_reports(tmp_path: Path, configured: str) -> None:
    with pytest.raises(SemanticIndexError, match="cannot be used"):
        resolve_index_path(tmp_path, configured)


@pytest.mark.parametrize("timeout", [float("inf"), float("nan"), -float("inf")])
def test_a_timeout_must_be_a_finite_number(timeout: float) -> None:
    table = {
        "provider": "http",
        "endpoint": "http://127.0.0.1:1/",
        "model": "m",
        "revision": "1",
        "timeout": timeout,
    }
    with pytest.raises(SemanticIndexError, match="a positive number of seconds"):
        load_embedder_config(table)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads whatever the mode")
def test_an_unreadable_state_dir_does_not_break_bm25(tmp_path: Path) -> None:
    (tmp_path / "card.md").write_text("# Card\n\nPenguins swim.\n")
    (tmp_path / ".hql").mkdir()
    (tmp_path / ".hql").chmod(0)
    try:
        outcome = hql.run('import bm25\ncards | bm25("penguins") | count', hql.open_vault(tmp_path))
    finally:
        (tmp_path / ".hql").chmod(0o755)
    assert outcome.value == 1


def test_bm25_store_that_cannot_be_listed_is_a_warning_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hql.search import bm25

    (tmp_path / "card.md").write_text("# Card\n\nPenguins swim.\n")

    def denied(self: Path) -> bool:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(bm25.Path, "exists", denied)
    warnings: list[str] = []
    postings = bm25._load_or_empty(tmp_path / ".hql" / "bm25.v1.bin", "x", warnings)
    assert len(postings.keys) == 0 and "Permission denied" in warnings[0]


def test_an_index_linked_to_itself_is_a_report(tmp_path: Path) -> None:
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, '[semantics]\nindex = ".hql/index.sqlite"\n')
    (root / ".hql").mkdir(exist_ok=True)
    (root / ".hql" / "index.sqlite").symlink_to("index.sqlite")
    outcome = hql.run('import semantic\ncards | semantic("penguins") | count', hql.open_vault(root))
    assert outcome.failed
    assert "cannot be read" in outcome.render_reports() or "loop" in outcome.render_reports()


def test_a_catalogue_row_with_a_non_string_key_is_a_miss(tmp_path: Path) -> None:
    from hql.vault.catalog import Catalog, stamp_of
    from hql.vault.loader import parser_fingerprint

    card = tmp_path / "card.md"
    card.write_text("---\ntitle: Real\n---\n")
    status = card.stat()
    crafted = ("ok", {"metadata": {1: "x", "b": "y"}}, "", None, [])
    writer = Catalog(tmp_path / ".hql", parser_fingerprint())  # a catalogue made to lie
    writer.store("card.md", stamp_of(status), crafted)
    writer.save(["card.md"], None, None)
    writer.close()
    vault = Vault.open(tmp_path)
    assert vault.cards[0].title == "Real"
    from hql.printing import display

    outcome = hql.run("cards | map(c => c.metadata)", vault)
    assert not outcome.failed and display(outcome.value) == "[{}]"
    assert vault.cards[0].text


# --- 16. vectors that are not numbers ---------------------------------------------------


def test_a_nan_query_vector_is_refused(tmp_path: Path) -> None:
    import sqlite3
    import struct

    import numpy as np
    from standin_embedder import standin_vector

    from hql.index.semantic import semantic_ranking

    class Bag:
        model_id, revision = "bag", "1"

        def embed_passages(self, texts: list[str]) -> np.ndarray:
            return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

        embed_queries = embed_passages

    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, '[semantics]\nindex = ".hql/index.sqlite"\n')
    assert build_command(Vault.open(root), ["duck"], embedder=Bag())[0] == 0
    db = sqlite3.connect(root / ".hql" / "index.sqlite")
    (blob,) = db.execute("SELECT embedding FROM query WHERE text = 'duck'").fetchone()
    nan = struct.pack("<f", float("nan")) * (len(blob) // 4)
    with db:
        db.execute("UPDATE query SET embedding = ? WHERE text = 'duck'", (nan,))
    db.close()
    with pytest.raises(SemanticIndexError, match="NaN or infinity"):
        semantic_ranking(Vault.open(root), "duck")


class _Bag:
    """Unit vectors from the stand-in's word buckets (the stand-in scales them by 3)."""

    model_id, revision = "bag", "1"

    def embed_passages(self, texts: list[str]) -> Any:
        import numpy as np
        from standin_embedder import standin_vector

        return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

    embed_queries = embed_passages


def _zoo(tmp_path: Path, queries: tuple[str, ...] = ("duck",)) -> Path:
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, '[semantics]\nindex = ".hql/index.sqlite"\n')
    assert build_command(Vault.open(root), list(queries), embedder=_Bag())[0] == 0
    return root


def _set_vector(root: Path, table: str, key: str, where: str, vector: Any) -> None:
    import sqlite3

    import numpy as np

    db = sqlite3.connect(root / ".hql" / "index.sqlite")
    with db:
        (blob,) = db.execute(f"SELECT embedding FROM {table} WHERE {key} = ?", (where,)).fetchone()
        width = len(blob) // 4
        values = np.broadcast_to(np.asarray(vector, dtype="<f4"), (width,))
        db.execute(f"UPDATE {table} SET embedding = ? WHERE {key} = ?", (values.tobytes(), where))
    db.close()


def _first_axis(value: float) -> Any:
    """A vector of one non-zero component: its length is `value`."""
    import numpy as np
    from standin_embedder import DIMENSIONS

    vector = np.zeros(DIMENSIONS, dtype=np.float32)
    vector[0] = value
    return vector


def _ranking(root: Path, query: str = "duck") -> list[str]:
    from hql.index.semantic import semantic_ranking

    return [name for name, _ in semantic_ranking(Vault.open(root), query).hits]


@pytest.mark.parametrize(
    ("table", "key", "value"),
    [
        ("card", "name", float("nan")),
        ("card", "name", float("inf")),
        ("section", "card", float("nan")),
        ("section", "card", float("-inf")),
    ],
)
def test_index_verify_names_a_card_whose_vector_is_not_a_number(
    tmp_path: Path, table: str, key: str, value: float
) -> None:
    root = _zoo(tmp_path)
    assert verify_command(Vault.open(root))[0] == 0
    _set_vector(root, table, key, "owl", value)
    code, text = verify_command(Vault.open(root))
    assert code == 1
    assert "1 card with a vector that is not a unit vector" in text and "`owl`" in text
    assert "`duck`" not in text and "hql index build" in text


@pytest.mark.parametrize(
    ("table", "length"), [("card", 3e38), ("card", 0.0), ("section", 3e38), ("section", 0.0)]
)
def test_a_card_vector_that_is_not_unit_length_refuses_the_index(
    tmp_path: Path, table: str, length: float
) -> None:
    from hql.index.reader import clear_cache

    root = _zoo(tmp_path)
    fresh = _ranking(root)
    key = "name" if table == "card" else "card"
    _set_vector(root, table, key, "owl", _first_axis(length))
    clear_cache()
    # A 3e38 vector would rank first; a zero one would score 0.0 against every question.
    with pytest.raises(SemanticIndexError) as caught:
        _ranking(root)
    message = caught.value.message
    assert "`owl`" in message and "unit vectors" in message and "hql index build" in message
    code, text = verify_command(Vault.open(root))
    assert code == 1 and "`owl`" in text
    # The fix the report names works: the build embeds the damaged card again.
    assert build_command(Vault.open(root), embedder=_Bag())[0] == 0
    assert _ranking(root) == fresh
    assert verify_command(Vault.open(root))[0] == 0


def test_a_stored_question_of_the_wrong_length_is_refused_and_rebuilt(tmp_path: Path) -> None:
    root = _zoo(tmp_path)
    fresh = _ranking(root)
    _set_vector(root, "query", "text", "duck", _first_axis(0.0))
    with pytest.raises(SemanticIndexError, match="stored question `duck`.*unit vectors"):
        _ranking(root)
    code, text = verify_command(Vault.open(root))
    assert code == 1 and "1 stored question" in text and "`duck`" in text
    assert build_command(Vault.open(root), embedder=_Bag())[0] == 0
    assert _ranking(root) == fresh


def test_a_large_query_table_is_not_read_whole(tmp_path: Path) -> None:
    import sqlite3
    import tracemalloc

    from standin_embedder import DIMENSIONS

    from hql.index.reader import clear_cache
    from hql.index.semantic import semantic_ranking

    root = _zoo(tmp_path)
    fresh = _ranking(root)
    rows = 100_000
    unit = _first_axis(1.0).astype("<f4").tobytes()
    db = sqlite3.connect(root / ".hql" / "index.sqlite")
    with db:
        db.executemany(
            "INSERT INTO query (text, embedding) VALUES (?, ?)",
            ((f"question {number}", unit) for number in range(rows)),
        )
    db.close()
    clear_cache()
    vault = Vault.open(root)
    table_bytes = rows * DIMENSIONS * 4
    tracemalloc.start()
    try:
        ranking = semantic_ranking(vault, "duck")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [name for name, _ in ranking.hits] == fresh
    # Reading the table whole holds every vector at once (the table's bytes and more).
    assert peak < table_bytes / 20, (peak, table_bytes)
    # The lookup is the table's key, never a scan.
    db = sqlite3.connect(root / ".hql" / "index.sqlite")
    plan = db.execute(
        "EXPLAIN QUERY PLAN SELECT embedding FROM query WHERE text = ?", ("duck",)
    ).fetchall()
    db.close()
    assert any("USING INDEX" in str(row[-1]) for row in plan), plan


# --- 17. a header written with lone-CR (or CRLF) line breaks ------------------------------


@pytest.mark.parametrize("dialect", ["", '[vault]\ndialect = "obsidian"\n'])
@pytest.mark.parametrize("newline", ["\r", "\r\n", "\n"])
def test_a_header_is_read_whatever_the_line_breaks(
    tmp_path: Path, newline: str, dialect: str
) -> None:
    root = tmp_path / "v"
    root.mkdir()
    if dialect:
        (root / "hql.toml").write_text(dialect)
    body = newline.join(["# Heading", "Words of my own.", "tags: not a header", ""])
    header = newline.join(["---", "title: Lone", "rank: 3", "aliases: [x]", "---", ""])
    (root / "note.md").write_bytes((header + body).encode())
    (root / "plain.md").write_bytes(newline.join(["# Only heading", "text", ""]).encode())
    for use_cache in (False, True, True):  # the second cached load reads the cache
        vault = Vault.open(root, use_cache=use_cache)
        assert list(vault.warnings) == []
        cards = {card.name: card for card in vault.cards}
        note = cards["note"]
        assert note.title == "Lone"
        assert note.metadata["rank"] == 3 and note.metadata["aliases"] == ["x"]
        assert note.body == body  # the body keeps its bytes as written
        assert cards["plain"].title == "Only heading"


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_an_unclosed_header_with_other_line_breaks_is_still_refused(
    tmp_path: Path, newline: str
) -> None:
    root = tmp_path / "v"
    root.mkdir()
    (root / "open.md").write_bytes(newline.join(["---", "title: Open", "no close"]).encode())
    vault = Vault.open(root, use_cache=False)
    assert any(warning.path.endswith("open.md") for warning in vault.warnings), vault.warnings
