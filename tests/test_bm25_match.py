"""The record of which card each slot of a bm25 store holds (`bm25.v1.match`).

Cards that name their keys by a `search_digest` are matched to the store's slots by
reading that record instead of by key; every answer must be the one a fresh index
gives, and a damaged, foreign or outdated record must only mean "match by key".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_search_cards import FIXTURES, Card, load_cards, make_card

from hql import files
from hql.search import bm25
from hql.search.bm25 import MATCH_NAME, STORE_NAME, Bm25Index
from hql.text.analyzer import Analyzer

MULTILINGUAL = FIXTURES / "multilingual"
QUESTIONS = ["sourdough bread", "volcanes erupción", "opening hours", "長城 长城", "bike repair"]


class Named(list[Card]):
    """Cards with a digest naming their keys, as a vault opened from its catalogue gives."""

    def __init__(self, cards: list[Card], digest: bytes) -> None:
        super().__init__(cards)
        self.search_digest = digest


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times cards were matched to the store by key."""
    calls: list[int] = []
    real = bm25._keys_of

    def counted(cards: Any) -> list[str]:
        calls.append(len(cards))
        return real(cards)

    monkeypatch.setattr(bm25, "_keys_of", counted)
    return calls


def _answers(index: Bm25Index[Any]) -> list[list[tuple[str, float, dict[str, float]]]]:
    return [
        [(hit.card.name, hit.score, dict(hit.matched)) for hit in index.search(q, limit)]
        for q in QUESTIONS
        for limit in (None, 3)
    ]


def _fresh(cards: list[Card]) -> list[list[tuple[str, float, dict[str, float]]]]:
    return _answers(Bm25Index.build(list(cards), Analyzer()))


def test_a_recorded_match_is_used_and_answers_as_a_fresh_index(
    tmp_path: Path, keyed: list[int]
) -> None:
    cards = Named(load_cards(MULTILINGUAL), b"first")
    first = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert first.analysed == len(cards) and (tmp_path / MATCH_NAME).exists()
    keyed.clear()
    again = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert keyed == [] and again.analysed == 0 and again.warnings == []
    assert _answers(again) == _fresh(cards)
    assert again._keys == bm25._keys_of(list(cards))  # worked out when asked for


def test_a_match_in_another_order_is_recorded_with_its_order(
    tmp_path: Path, keyed: list[int]
) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(Named(cards, b"first"), Analyzer(), tmp_path)
    turned = Named(cards[::-1], b"turned")
    keyed.clear()
    matched = Bm25Index.build(turned, Analyzer(), tmp_path)  # by key, then recorded
    assert keyed and matched.analysed == 0
    keyed.clear()
    recalled = Bm25Index.build(turned, Analyzer(), tmp_path)
    assert keyed == [] and recalled.analysed == 0
    assert _answers(recalled) == _answers(matched) == _fresh(turned)


def test_cards_of_another_digest_are_matched_by_key(tmp_path: Path, keyed: list[int]) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(Named(cards, b"first"), Analyzer(), tmp_path)
    edited = Named([*cards[:-1], make_card(cards[-1].name, "Renamed", "quokka")], b"edited")
    keyed.clear()
    index = Bm25Index.build(edited, Analyzer(), tmp_path)
    assert keyed and index.analysed == 1
    assert _answers(index) == _fresh(edited)
    # The store was rewritten: the first cards' record no longer holds for it.
    keyed.clear()
    back = Bm25Index.build(Named(cards, b"first"), Analyzer(), tmp_path)
    assert keyed and back.analysed == 1 and _answers(back) == _fresh(cards)


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def _reseal(path: Path, change: Any) -> None:
    """Change the record's contents and seal it again (as a crafted record would be)."""
    sealed = path.read_bytes()
    magic = bm25._MATCH_MAGIC
    data = files.unseal(sealed, len(magic))
    assert data is not None
    path.write_bytes(magic + files.seal(change(bytes(data))))


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: _flip(path, 60),
        lambda path: _flip(path, -3),
        lambda path: path.write_bytes(path.read_bytes()[:40]),
        lambda path: path.write_bytes(b"something else"),
        lambda path: path.unlink(),
        lambda path: (path.unlink(), path.mkdir()),
        # sealed again, but its order is not a permutation of the cards
        lambda path: _reseal(path, lambda data: data[:-8] + (1).to_bytes(8, "little")),
        lambda path: _reseal(path, lambda data: data[:-8] + (999).to_bytes(8, "little")),
        lambda path: _reseal(
            path, lambda data: data[:-8] + (-1).to_bytes(8, "little", signed=True)
        ),
        lambda path: _reseal(path, lambda data: data[:-8]),
    ],
)
def test_a_damaged_or_crafted_record_means_matching_by_key(
    tmp_path: Path, keyed: list[int], damage: Any
) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(Named(cards, b"first"), Analyzer(), tmp_path)
    turned = Named(cards[::-1], b"turned")
    Bm25Index.build(turned, Analyzer(), tmp_path)  # records an order, not the identity
    assert (tmp_path / MATCH_NAME).stat().st_size > 8 * len(cards)
    damage(tmp_path / MATCH_NAME)
    keyed.clear()
    index = Bm25Index.build(turned, Analyzer(), tmp_path)
    assert keyed and index.analysed == 0 and index.warnings == []
    assert _answers(index) == _fresh(turned)


def test_a_damaged_store_with_a_good_record_is_rebuilt(tmp_path: Path) -> None:
    cards = Named(load_cards(MULTILINGUAL), b"first")
    Bm25Index.build(cards, Analyzer(), tmp_path)
    store = tmp_path / STORE_NAME
    store.write_bytes(store.read_bytes()[:-10])
    index = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert index.analysed == len(cards) and len(index.warnings) == 1
    assert _answers(index) == _fresh(cards)


def test_another_analyser_does_not_use_the_record(tmp_path: Path) -> None:
    cards = Named(load_cards(MULTILINGUAL), b"first")
    Bm25Index.build(cards, Analyzer(), tmp_path)
    other = Analyzer.from_config({"ignore": ["sourdough"]})
    index = Bm25Index.build(cards, other, tmp_path)
    assert index.analysed == len(cards) and index.search("sourdough") == []
