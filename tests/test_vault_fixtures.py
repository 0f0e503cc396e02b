"""Reference §9 behaviour on the original's fixture vaults."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from hql.vault import CONCEPT_CARD, RELATION_CARD, Edge, Vault, VaultError

FIXTURES = Path(__file__).parent / "fixtures"
REPOSITORY = Path(__file__).parent.parent
LEXICAL = {"lexical": {"model": "hql.hashbag.v1", "indexed": True}}


def open_as_typed(**options: Any) -> Vault:
    """Open the fixture vault by the relative path a user would type from the repository."""
    previous = os.getcwd()
    os.chdir(REPOSITORY)
    try:
        return Vault.open("tests/fixtures/vault", use_cache=False, **options)
    finally:
        os.chdir(previous)


@pytest.fixture(scope="module")
def vault() -> Vault:
    return open_as_typed(extension_metadata=LEXICAL)


def test_names_are_stems_sorted(vault: Vault) -> None:
    assert [card.name for card in vault.cards] == [
        "bearer-tokens",
        "broken-relation",
        "http-headers",
        "oauth",
        "oauth-defines-bearer",
        "sessions",
    ]


def test_kinds_are_verified_at_load(vault: Vault) -> None:
    kinds = {card.name: card.kind for card in vault.cards}
    assert kinds["oauth-defines-bearer"] == RELATION_CARD
    assert kinds["broken-relation"] == CONCEPT_CARD
    assert sum(kind == RELATION_CARD for kind in kinds.values()) == 1


def test_titles_from_header_then_heading(vault: Vault) -> None:
    titles = {card.name: card.title for card in vault.cards}
    assert titles["bearer-tokens"] == "Bearer tokens"
    assert titles["http-headers"] == "HTTP headers"  # no header: the first `# ` heading
    assert titles["oauth"] == "OAuth 2.0"


def test_broken_relation_warns_and_is_marked(vault: Vault) -> None:
    assert [str(warning) for warning in vault.warnings] == [
        "broken-relation: declares knowledge.type: Relation but its endpoints do not resolve; "
        "kept as a ConceptCard"
    ]
    card = vault.card("broken-relation")
    assert card is not None
    assert card.metadata["knowledge"]["unverified"] == "relation endpoints do not resolve"
    assert "unverified" not in card.authored["metadata"]["knowledge"]


def test_derived_header_entries(vault: Vault) -> None:
    card = vault.card("http-headers")
    assert card is not None
    assert card.header == {
        "format": "Markdown",
        "name": "http-headers",
        "path": "tests/fixtures/vault/protocols/http-headers.md",
        "title": "HTTP headers",
    }
    assert card.path == "tests/fixtures/vault/protocols/http-headers.md"
    assert card.relpath == "protocols/http-headers.md"
    oauth = vault.card("oauth")
    assert oauth is not None and oauth.format == "Hmd"
    assert oauth.header["metadata"] == {"owner": "grace", "status": "done"}


def test_metadata_is_assembled_beside_the_authored_block(vault: Vault) -> None:
    card = vault.card("bearer-tokens")
    assert card is not None
    assert card.header["metadata"] == {"owner": "ada", "status": "todo"}
    assert card.metadata == {
        "lexical": {"indexed": True, "model": "hql.hashbag.v1"},
        "owner": "ada",
        "status": "todo",
    }
    assert list(card.metadata) == sorted(card.metadata)


def test_edges_in_order(vault: Vault) -> None:
    assert vault.edges == (
        Edge("bearer-tokens", "http-headers", {}),
        Edge("bearer-tokens", "oauth", {}),
        Edge("oauth", "bearer-tokens", {"relation": "defines"}),
        Edge("oauth", "bearer-tokens", {"card": "oauth-defines-bearer"}),
    )


def test_uplinks_and_downlinks(vault: Vault) -> None:
    assert [edge.target for edge in vault.uplinks("bearer-tokens")] == ["http-headers", "oauth"]
    assert vault.downlinks("bearer-tokens") == (
        Edge("oauth", "bearer-tokens", {"relation": "defines"}),
        Edge("oauth", "bearer-tokens", {"card": "oauth-defines-bearer"}),
    )
    assert vault.uplinks("nowhere") == ()


def test_links_carry_annotations(vault: Vault) -> None:
    oauth = vault.card("oauth")
    assert oauth is not None
    assert [(link.target, link.annotation) for link in oauth.links] == [
        ("bearer-tokens", {"relation": "defines"})
    ]


def test_retrieval_text_and_digest(vault: Vault) -> None:
    card = vault.card("oauth")
    assert card is not None
    assert card.text.startswith("OAuth 2.0 grace done # OAuth 2.0\n")
    assert len(card.digest) == 64 and card.digest == card.digest.lower()


def test_cards_are_immutable_and_equal_by_path(vault: Vault) -> None:
    card = vault.cards[0]
    with pytest.raises(AttributeError):
        card.name = "x"  # type: ignore[misc]
    again = open_as_typed().cards[0]
    assert again == card and hash(again) == hash(card)


def test_configured_vault_reads_hql_toml() -> None:
    vault = Vault.open(FIXTURES / "configured", use_cache=False)
    assert vault.config.imports == ("lexical",)
    assert vault.config.prelude is False
    assert vault.warnings == ()


def test_birds_vault_loads_without_warnings() -> None:
    vault = Vault.open(FIXTURES / "birds", use_cache=False)
    assert len(vault.cards) >= 40
    # The fixture's condor relation names a family the vault has no card for.
    assert [warning.subject for warning in vault.warnings] == ["condor-in-cathartidae"]
    assert vault.config.section("semantics") == {"index": ".hql/index.sqlite"}
    relation = vault.card("tytonidae-in-strigiformes")
    assert relation is not None and relation.kind == RELATION_CARD


def test_stem_clash_names_by_path(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "note.md").write_text("# A\n")
    (tmp_path / "b" / "note.hmd").write_text("# B\n")
    (tmp_path / "other.md").write_text("see [[a/note]]\n")
    vault = Vault.open(tmp_path)
    assert [card.name for card in vault.cards] == ["a/note", "b/note", "other"]
    assert vault.edges == (Edge("other", "a/note", {}),)


def test_hidden_entries_and_other_files_are_skipped(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "vault", tmp_path / "v")
    (tmp_path / "v" / ".git").mkdir()
    (tmp_path / "v" / ".git" / "x.md").write_text("# hidden\n")
    (tmp_path / "v" / ".draft.md").write_text("# hidden\n")
    (tmp_path / "v" / "notes.txt").write_text("# not a card\n")
    (tmp_path / "v" / "long.markdown").write_text("# Long\n")
    vault = Vault.open(tmp_path / "v")
    assert len(vault.cards) == 7
    assert vault.card("long") is not None


def test_root_errors(tmp_path: Path) -> None:
    with pytest.raises(VaultError, match="no such directory"):
        Vault.open(tmp_path / "missing")
    (tmp_path / "file").write_text("")
    with pytest.raises(VaultError, match=r"file: not a directory"):
        Vault.open(tmp_path / "file")


def test_empty_vault() -> None:
    vault = Vault.empty()
    assert vault.cards == () and vault.card("x") is None and vault.uplinks("x") == ()


def test_a_broken_neighbour_still_counts_for_names(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "note.md").write_bytes(b"\xff not utf-8")
    (tmp_path / "b" / "note.md").write_text("# B\n")
    vault = Vault.open(tmp_path)
    assert [card.name for card in vault.cards] == ["b/note"]
    assert len(vault.warnings) == 1


def test_root_keeps_the_form_it_was_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n")
    monkeypatch.chdir(tmp_path)
    vault = Vault.open("./notes/", use_cache=False)
    assert vault.root_text == "./notes/" and vault.root == Path("notes")
    assert vault.cards[0].path == "./notes/a.md"
