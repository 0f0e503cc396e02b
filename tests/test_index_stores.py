"""The store protocol: the factory, the SQLite store's search, upsert and delete, and `exact`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from standin_embedder import BASE_CARDS, standin_vector, write_vault

import hql
from hql.index import SemanticIndexError
from hql.index.commands import build_command
from hql.index.config import load_semantics_config
from hql.index.reader import open_vault_index
from hql.index.semantic import semantic_ranking
from hql.index.stores import CardVectors, SearchFilter, SectionVector, open_store
from hql.index.stores.sqlite import SqliteStore
from hql.vault import Vault

TOML = '[semantics]\nindex = ".hql/index.sqlite"\n'
QUERY = "penguins swim underwater"


class BagEmbedder:
    model_id, revision = "bag", "1"

    def embed_passages(self, texts):
        return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

    embed_queries = embed_passages


def unit(text: str) -> np.ndarray:
    return np.asarray(standin_vector(text), dtype=np.float32) / 3.0


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, TOML)
    code, text = build_command(Vault.open(root, use_cache=False), [QUERY], embedder=BagEmbedder())
    assert code == 0, text
    return root


def test_the_default_store_is_the_sqlite_file(root: Path) -> None:
    vault = Vault.open(root, use_cache=False)
    store = open_store(vault)
    assert isinstance(store, SqliteStore) and store.kind == "sqlite"
    assert store.location == str(root / ".hql/index.sqlite")
    assert store.model.id == "bag" and store.model.dimensions == 64
    assert store.digests() == {card.name: card.digest for card in vault.cards}
    assert store.verify(vault).ok


def test_an_unknown_store_is_refused_by_name(root: Path) -> None:
    (root / "hql.toml").write_text(TOML + 'store = "elastic"\n', encoding="utf-8")
    vault = Vault.open(root, use_cache=False)
    with pytest.raises(SemanticIndexError, match='store = "elastic"` names no store.*"sqlite"'):
        open_store(vault)
    outcome = hql.run(f'import semantic\ncards | semantic("{QUERY}")', vault=vault)
    assert outcome.failed and "names no store" in outcome.reports[0].message


def test_store_search_is_the_reader_scan_and_says_how(root: Path) -> None:
    vault = Vault.open(root, use_cache=False)
    store = open_store(vault)
    vector = store.query_vector(QUERY)
    assert vector is not None
    result = store.search(vector, 2, SearchFilter(vault.cards))
    expected, _, _ = open_vault_index(vault).rank_sections(vector, vault.cards, 2)
    assert result.hits == expected and result.hits[0][0] == "penguin"
    assert result.method.to_tree() == {"store": "sqlite", "exact": True}
    forced = store.search(vector, 2, SearchFilter(vault.cards), exact=True)
    assert forced.hits == expected
    assert forced.method.to_tree() == {"store": "sqlite", "exact": True, "exact_requested": True}
    every = store.search(vector, None)  # no filter: every stored card, no staleness check
    assert [name for name, _ in every.hits][0] == "penguin" and len(every.hits) == 4


def test_upsert_and_delete_change_what_search_finds(root: Path) -> None:
    vault = Vault.open(root, use_cache=False)
    store = open_store(vault)
    text = "Kingfishers dive for fish"
    store.upsert(
        [
            CardVectors(
                "kingfisher",
                "kingfisher.md",
                "digest-k",
                unit(text),
                (SectionVector(0, ("Diving",), 4, 6, unit(text)),),
            )
        ]
    )
    store.delete(["owl", "no-such-card"])
    assert store.digests()["kingfisher"] == "digest-k" and "owl" not in store.digests()
    result = store.search(unit("kingfishers dive"), 1)
    assert result.hits[0][0] == "kingfisher"
    section = result.sections[0]
    assert section is not None and section.heading == ("Diving",)
    assert (section.line_start, section.line_end) == (4, 6)
    # The vault still has `owl` and not `kingfisher`: the reader says so.
    verify = store.verify(Vault.open(root, use_cache=False))
    assert verify.missing == ["owl"] and verify.extra == ["kingfisher"]


def test_upsert_refuses_a_vector_of_another_width(root: Path) -> None:
    store = open_store(Vault.open(root, use_cache=False))
    with pytest.raises(SemanticIndexError, match="32"):
        store.upsert([CardVectors("x", "x.md", "d", np.ones(32, dtype=np.float32) / 32**0.5)])
    assert "x" not in store.digests()


def test_exact_is_a_named_bool_recorded_in_the_retrieval(root: Path) -> None:
    vault = Vault.open(root, use_cache=False)
    plain = hql.run(f'import semantic\ncards | semantic("{QUERY}")', vault=vault)
    forced = hql.run(f'import semantic\ncards | semantic("{QUERY}", exact = true)', vault=vault)
    assert not plain.failed and not forced.failed
    assert [h.card.name for h in forced.value.hits] == [h.card.name for h in plain.value.hits]
    assert plain.value.retrieval.extra["search"] == {"store": "sqlite", "exact": True}
    assert forced.value.retrieval.extra["search"]["exact_requested"] is True
    projected = json.loads(
        hql.run(
            f'import semantic\ncards | semantic("{QUERY}", exact = true) | take(1) | json',
            vault=vault,
        ).text()
    )
    assert projected["retrieval"]["approximate"] is False
    assert projected["retrieval"]["search"]["exact_requested"] is True
    wrong = hql.run(f'import semantic\ncards | semantic("{QUERY}", exact = "yes")', vault=vault)
    assert wrong.failed and wrong.reports[0].span is not None
    assert "exact" in wrong.reports[0].message


def test_explain_says_how_the_store_searched(root: Path) -> None:
    from hql.explain import explain

    text, reports, failed = explain(
        hql.Session(Vault.open(root, use_cache=False)),
        f'import semantic\ncards | semantic("{QUERY}") | take(2)',
        "<t>",
    )
    assert not failed, reports
    assert "search: exact scan (sqlite)" in text


def test_the_semantic_entry_point_reads_through_the_store(root: Path) -> None:
    vault = Vault.open(root, use_cache=False)
    ranking = semantic_ranking(vault, QUERY, k=1)
    assert ranking.hits[0][0] == "penguin"
    assert ranking.retrieval.search == {"store": "sqlite", "exact": True}
    assert load_semantics_config({"semantics": {"store": "sqlite"}}).store == "sqlite"
