from __future__ import annotations

import pytest
from test_search_cards import FIXTURES, load_cards, make_card

from hql.search import hashbag


def test_fnv1a_bucket_matches_the_reference_hash() -> None:
    # FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c; 0x8c = 140.
    assert hashbag.bucket("a") == 0x8C


def test_words_keep_multibyte_single_letters_and_drop_ascii_ones() -> None:
    assert hashbag.words("A é_b Cd 9") == ["é", "cd"]


def test_fixture_vault_scores_match_the_original() -> None:
    ranked = hashbag.rank(load_cards(FIXTURES / "vault"), "bearer token authorization")
    got = [(card.name, round(score, 4)) for card, score in ranked]
    assert got == [
        ("oauth", 0.4861),
        ("bearer-tokens", 0.4819),
        ("oauth-defines-bearer", 0.4061),
        ("http-headers", 0.1431),
    ]


def test_birds_night_hunting_top_three_match_the_upstream_readme() -> None:
    ranked = hashbag.rank(load_cards(FIXTURES / "birds"), "night hunting birds")
    assert [card.name for card, _ in ranked[:3]] == ["mute-swan", "passeriformes", "alcedinidae"]


def test_cards_scoring_zero_are_absent_and_ties_go_by_name() -> None:
    cards = [make_card(n, "", "same words here") for n in ("b", "a")] + [make_card("c", "", "zz")]
    ranked = hashbag.rank(cards, "same words")
    assert [card.name for card, _ in ranked] == ["a", "b"]
    assert ranked[0][1] == pytest.approx(ranked[1][1])


def test_empty_query_ranks_nothing() -> None:
    assert hashbag.rank([make_card("a", "", "text")], "!") == []


def test_scores_match_through_the_real_vault_loader() -> None:
    from hql.vault import Vault

    vault = Vault.open(FIXTURES / "vault", use_cache=False)
    ranked = hashbag.rank(vault.cards, "bearer token authorization")
    assert [(card.name, round(score, 4)) for card, score in ranked][:2] == [
        ("oauth", 0.4861),
        ("bearer-tokens", 0.4819),
    ]


def test_batch_vectors_equal_the_one_by_one_algorithm() -> None:
    texts = ["Bearer token in the Authorization header", "", "ünïcode wörds wörds"]
    batch = hashbag._embed_many(texts)
    for row, text in zip(batch, texts, strict=True):
        assert list(row) == pytest.approx(hashbag.embed(text))


def test_limit_keeps_the_order_of_the_full_ranking() -> None:
    cards = load_cards(FIXTURES / "birds")
    full = hashbag.rank(cards, "night hunting birds")
    assert hashbag.rank(cards, "night hunting birds", limit=3) == full[:3]


def test_limit_zero_ranks_nothing() -> None:
    assert hashbag.rank(load_cards(FIXTURES / "vault"), "bearer", limit=0) == []
