"""The producer and live queries against the stand-in HTTP embedder on loopback."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from standin_embedder import BASE_CARDS, http_toml, standin_server, standin_vector, write_vault
from store_parity import StoreVaults, on_every_store

from hql.index import EmbedderError, EmbedderUnavailable, SemanticIndexError
from hql.index.commands import build_command, inspect_command, verify_command
from hql.index.reader import SemanticIndex
from hql.index.semantic import semantic_ranking
from hql.vault import Vault


def open_vault(root: Path) -> Vault:
    return Vault.open(root, use_cache=False)


@pytest.fixture
def server():
    with standin_server() as running:
        yield running


@pytest.fixture
def vault_root(tmp_path: Path, server) -> Path:
    endpoint, _ = server
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, http_toml(endpoint))
    return root


def test_build_writes_schema_v1_with_unit_vectors(vault_root: Path, server) -> None:
    _, state = server
    code, text = build_command(
        open_vault(vault_root), queries=["night hunting"], built_at="2024-01-01T00:00:00Z"
    )
    assert code == 0, text
    assert "embedded 4 cards" in text and "1 query" in text
    db = sqlite3.connect(vault_root / ".hql/index.sqlite")
    assert db.execute(
        "SELECT id, revision, dimensions, metric, normalized FROM model"
    ).fetchall() == [("standin-bow", "1", 64, "cosine", 1)]
    version, vault, built_at, tool = db.execute("SELECT * FROM index_meta").fetchone()
    assert (version, vault, built_at) == (1, "zoo", "2024-01-01T00:00:00Z")
    assert tool.startswith("hql ")
    rows = db.execute(
        "SELECT name, path, content_hash, embedding FROM card ORDER BY name"
    ).fetchall()
    assert [r[0] for r in rows] == ["duck", "owl", "penguin", "weaver"]
    assert rows[1][1] == "owl.md"
    vault = open_vault(vault_root)
    owl = next(c for c in vault.cards if c.name == "owl")
    assert rows[1][2] == owl.digest
    vector = np.frombuffer(rows[1][3], dtype="<f4")
    assert vector.shape == (64,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    expected = np.asarray(standin_vector(owl.text), dtype=np.float32)
    assert np.allclose(vector, expected / np.linalg.norm(expected), atol=1e-6)
    # Reordered by `index`: the server answered in reverse.
    assert db.execute("SELECT count(*) FROM query").fetchone() == (1,)
    assert state.authorizations == [None, None]


def test_build_is_incremental_and_drops_removed_cards(vault_root: Path, server) -> None:
    _, state = server
    assert build_command(open_vault(vault_root))[0] == 0
    assert len(state.texts_embedded) == 4
    (vault_root / "owl.md").write_text("---\ntitle: Owl\n---\nOwls hunt mice by ear.\n")
    (vault_root / "duck.md").unlink()
    code, text = build_command(open_vault(vault_root), queries=["fish"])
    assert code == 0
    assert "embedded 1 card, kept 2 unchanged, dropped 1" in text
    assert state.texts_embedded[4:] == [
        next(c.text for c in open_vault(vault_root).cards if c.name == "owl"),
        "fish",
    ]
    code, text = build_command(open_vault(vault_root))
    assert "embedded 0 cards, kept 3 unchanged, dropped 0, 1 query" in text


def test_rebuilds_are_byte_identical(vault_root: Path) -> None:
    index = vault_root / ".hql/index.sqlite"
    build_command(open_vault(vault_root), queries=["fish", "owl"], built_at="X")
    first = index.read_bytes()
    index.unlink()
    build_command(open_vault(vault_root), queries=["owl", "fish", "fish"], built_at="X")
    assert index.read_bytes() == first


def test_verify_and_inspect(vault_root: Path) -> None:
    vault = open_vault(vault_root)
    assert verify_command(vault)[0] == 1  # no index yet
    build_command(vault, queries=["q one", "q two"])
    code, text = verify_command(vault)
    assert (code, text) == (0, "the index is up to date: 4 cards, 2 queries")
    (vault_root / "owl.md").write_text("changed\n")
    (vault_root / "duck.md").unlink()
    (vault_root / "heron.md").write_text("Herons stand still.\n")
    db = sqlite3.connect(vault_root / ".hql/index.sqlite")
    with db:
        db.execute("UPDATE card SET embedding = x'0000' WHERE name = 'weaver'")
    db.close()
    code, text = verify_command(open_vault(vault_root))
    assert code == 1
    assert text.splitlines() == [
        "1 card changed since the build: `owl`",
        "1 card missing from the index: `heron`",
        "1 card in the index but not in the vault: `duck`",
        "1 card with a vector of the wrong length: `weaver`",
    ]
    code, text = inspect_command(vault)
    assert code == 0
    assert "model       standin-bow" in text and "cards       4" in text
    assert text.endswith("queries     2\n  q one\n  q two")


@on_every_store
def test_live_query_is_embedded_and_kept(tmp_path: Path, server, store: str) -> None:
    endpoint, state = server
    with standin_server() as (twin_endpoint, _):  # the twin's requests are not counted
        vaults = StoreVaults.make(
            store,
            tmp_path,
            lambda root, toml: write_vault(root, BASE_CARDS, toml),
            http_toml(endpoint, extra="embed_queries = true\n"),
            twin_toml=http_toml(twin_endpoint, extra="embed_queries = true\n"),
            name="zoo",
        )
        vaults.build()
        ranking = vaults.ranking("penguins catch fish underwater")
        assert ranking.hits[0][0] == "penguin"
        assert ranking.retrieval.query_embedded_now is True
        assert ranking.warnings == []
        requests = len(state.requests)
        again = vaults.ranking("penguins catch fish underwater", k=2)
        assert len(state.requests) == requests  # kept with the index
        assert again.retrieval.query_embedded_now is False
        assert again.hits == ranking.hits[:2]
        vaults.close()
    if store == "sqlite":  # where the SQLite store keeps it: its query table
        assert (
            SemanticIndex.open(vaults.root / ".hql/index.sqlite", vaults.root).query_vector(
                "penguins catch fish underwater"
            )
            is not None
        )


def test_query_not_in_index_names_the_build_command(vault_root: Path) -> None:
    build_command(open_vault(vault_root))
    with pytest.raises(SemanticIndexError) as caught:
        semantic_ranking(open_vault(vault_root), "owls")
    assert 'hql index build --query "owls"' in caught.value.message


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_unreachable_endpoint(tmp_path: Path, server) -> None:
    endpoint, _ = server
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, http_toml(endpoint, extra="embed_queries = true\n"))
    build_command(open_vault(root))
    dead = f"http://127.0.0.1:{_free_port()}/v1/embeddings"
    toml = http_toml(dead, extra='embed_queries = true\non_unavailable = "lexical"\n')
    (root / "hql.toml").write_text(toml)
    with pytest.raises(EmbedderUnavailable) as caught:
        semantic_ranking(open_vault(root), "a new question")
    assert "cannot be reached" in caught.value.message and dead in caught.value.message
    assert caught.value.on_unavailable == "lexical"  # type: ignore[attr-defined]
    code, text = build_command(open_vault(root), queries=["x"])
    assert code == 1 and "cannot be reached" in text


def test_server_errors_and_garbage(vault_root: Path, server) -> None:
    _, state = server
    state.fail_status = 503
    code, text = build_command(open_vault(vault_root))
    assert code == 1 and "answered HTTP 503" in text
    assert not (vault_root / ".hql/index.sqlite").exists()
    assert not list((vault_root / ".hql").glob("*.tmp"))
    state.fail_status, state.garbage = None, True
    code, text = build_command(open_vault(vault_root))
    assert code == 1 and "cannot use: not JSON" in text


def test_zero_vector_is_refused(vault_root: Path) -> None:
    (vault_root / "blank.md").write_text("---\ntitle: '-'\n---\n")
    code, text = build_command(open_vault(vault_root))
    assert code == 1 and "zero vector" in text


def test_api_key_comes_from_the_named_variable(tmp_path: Path, server, monkeypatch) -> None:
    endpoint, state = server
    root = tmp_path / "zoo"
    write_vault(
        root, BASE_CARDS, http_toml(endpoint, embedder_extra='api_key_env = "STANDIN_KEY"\n')
    )
    code, text = build_command(open_vault(root))
    assert (
        code == 1
        and text == "the environment variable `STANDIN_KEY` named by `api_key_env` is not set"
    )
    monkeypatch.setenv("STANDIN_KEY", "s3cret")
    assert build_command(open_vault(root))[0] == 0
    assert state.authorizations[-1] == "Bearer s3cret"


def test_literal_api_key_is_refused_without_printing_it(tmp_path: Path, server) -> None:
    endpoint, _ = server
    root = tmp_path / "zoo"
    write_vault(
        root, BASE_CARDS, http_toml(endpoint, embedder_extra='api_key = "sk-VERY-SECRET"\n')
    )
    code, text = build_command(open_vault(root))
    assert code == 1 and "`api_key`" in text and "api_key_env" in text
    assert "VERY-SECRET" not in text


def test_interrupted_build_keeps_the_previous_index(vault_root: Path) -> None:
    build_command(open_vault(vault_root), built_at="A")
    before = (vault_root / ".hql/index.sqlite").read_bytes()

    class Interrupting:
        model_id, revision = "standin-bow", "1"

        def embed_passages(self, texts):
            raise KeyboardInterrupt

        embed_queries = embed_passages

    (vault_root / "owl.md").write_text("changed\n")
    code, text = build_command(open_vault(vault_root), embedder=Interrupting())
    assert code == 130 and "previous index" in text
    assert (vault_root / ".hql/index.sqlite").read_bytes() == before
    assert [p.name for p in (vault_root / ".hql").iterdir()] == ["index.sqlite"]


def test_embedder_model_must_match_the_index_for_live_queries(tmp_path: Path, server) -> None:
    endpoint, _ = server
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, http_toml(endpoint, extra="embed_queries = true\n"))
    build_command(open_vault(root))
    (root / "hql.toml").write_text(
        http_toml(endpoint, extra="embed_queries = true\n").replace(
            'revision = "1"', 'revision = "2"'
        )
    )
    with pytest.raises(SemanticIndexError) as caught:
        semantic_ranking(open_vault(root), "new question")
    assert "standin-bow@2" in caught.value.message and "standin-bow@1" in caught.value.message
    assert not isinstance(caught.value, EmbedderError)


def test_batches_and_input_type(tmp_path: Path, server) -> None:
    endpoint, state = server
    root = tmp_path / "zoo"
    write_vault(
        root,
        BASE_CARDS,
        http_toml(endpoint, embedder_extra="batch_size = 3\nsend_input_type = true\n"),
    )
    assert build_command(open_vault(root), queries=["q"])[0] == 0
    assert [len(r["input"]) for r in state.requests] == [3, 1, 1]
    assert [r["input_type"] for r in state.requests] == ["passage", "passage", "query"]
    assert all(r["model"] == "standin-bow" for r in state.requests)


def test_bad_rows_are_refused(vault_root: Path, server) -> None:
    _, state = server
    state.dimensions = 8
    (vault_root / "hql.toml").write_text(
        (vault_root / "hql.toml").read_text() + "dimensions = 64\n"
    )
    code, text = build_command(open_vault(vault_root))
    assert (
        code == 1 and text == "the embedder returned 8-dimensional vectors where 64 were expected"
    )


def test_unwritable_index_location(vault_root: Path) -> None:
    (vault_root / ".hql").write_text("a file where the folder should be")
    code, text = build_command(open_vault(vault_root))
    assert code == 1 and "cannot be written" in text


def test_batches_of_different_widths_are_refused(tmp_path: Path, server) -> None:
    endpoint, state = server
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, http_toml(endpoint, embedder_extra="batch_size = 2\n"))
    state.later_dimensions = 32
    code, text = build_command(open_vault(root))
    assert code == 1 and "batches of 32 and 64 dimensions" in text
