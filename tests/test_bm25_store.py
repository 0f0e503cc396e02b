"""The bm25 store read in parts: a query reads its terms' blocks, each checked.

Answers must equal those of an index built afresh; damage found anywhere (the header,
a small section, the keys, a postings block read only by a query) must mean a
rebuild with a warning, never a wrong answer or a traceback.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_bm25_match import QUESTIONS, Named, _answers, _fresh
from test_search_cards import FIXTURES, load_cards
from test_vault_lazy import GARDEN, _assert_same

import hql
from hql import files
from hql.search import bm25, shared
from hql.search.bm25 import MATCH_NAME, STORE_NAME, Bm25Index, StoreDamaged
from hql.text.analyzer import Analyzer
from hql.vault import Vault

MULTILINGUAL = FIXTURES / "multilingual"


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of a few entries, so that even a small store has many."""
    monkeypatch.setattr(bm25, "BLOCK_ENTRIES", 16)


@pytest.fixture
def blocks_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    read: list[int] = []
    real = bm25._StoreReader.blocks

    def counted(self: Any, first: int, last: int, sums: bytes) -> Any:
        read.extend(range(first, last + 1))
        return real(self, first, last, sums)

    monkeypatch.setattr(bm25._StoreReader, "blocks", counted)
    return read


def _layout(store: Path) -> dict[str, tuple[int, int]]:
    """Each section's (offset, bytes) in the store."""
    data = store.read_bytes()
    start = len(bm25._BLOCKED) + 8 + 32
    length = int.from_bytes(data[len(bm25._BLOCKED) : len(bm25._BLOCKED) + 8], "little")
    header = json.loads(data[start : start + length])
    offset, found = start + length, {}
    for name, dtype, count, _ in header["sections"]:
        size = count * np.dtype(dtype).itemsize
        found[name] = (offset, size)
        offset += size
    return found


def _flip(store: Path, at: int) -> None:
    data = bytearray(store.read_bytes())
    data[at] ^= 0x5A
    store.write_bytes(bytes(data))


def test_a_query_reads_only_its_terms_blocks(tmp_path: Path, blocks_read: list[int]) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(cards, Analyzer(), tmp_path)
    assert (tmp_path / STORE_NAME).read_bytes().startswith(bm25._BLOCKED)
    index = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert index.analysed == 0 and blocks_read == []  # opening reads no block
    entries = _layout(tmp_path / STORE_NAME)["slot"][1] // 4
    assert len(index.search("sourdough")) >= 1
    assert 0 < len(set(blocks_read)) < entries // 16 / 2
    assert _answers(index) == _fresh(cards)


def test_a_query_finds_its_terms_in_the_stored_vocabulary_unsplit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25, "_TEXT_LOOKUPS", 10**6)
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(cards, Analyzer(), tmp_path)
    stored = bm25._StoredPostings.open(tmp_path / STORE_NAME, Analyzer().fingerprint)
    assert stored is not None
    terms = list(stored.vocabulary)  # a second opening below finds them unsplit
    opened = bm25._StoredPostings.open(tmp_path / STORE_NAME, Analyzer().fingerprint)
    assert opened is not None
    for term_id, term in enumerate(terms):
        assert opened.term_id(term) == term_id
    for unknown in ("", "zzzz-not-a-term", terms[0][:-1], terms[-1] + "x"):
        if unknown not in terms:
            assert opened.term_id(unknown) is None
    assert opened._vocabulary is None  # found in the text, never split
    assert opened.term_id(f"x\n{terms[0]}") is None  # no line of the text can be it
    assert opened.vocabulary == terms and opened.term_id(terms[-1]) == len(terms) - 1


def test_many_lookups_split_the_stored_vocabulary_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25, "_TEXT_LOOKUPS", 5)
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(cards, Analyzer(), tmp_path)
    opened = bm25._StoredPostings.open(tmp_path / STORE_NAME, Analyzer().fingerprint)
    assert opened is not None
    terms = opened._vocabulary_lines[1:-1].split("\n")
    found = [opened.term_id(term) for term in terms[:5]]
    assert opened._vocabulary is None and found == list(range(5))
    assert opened.term_id(terms[5]) == 5 and opened._vocabulary == terms  # the map from here on
    assert [opened.term_id(term) for term in terms] == list(range(len(terms)))


def test_an_index_read_in_parts_updates_as_one_read_whole(tmp_path: Path) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(cards, Analyzer(), tmp_path)
    fewer = [card for card in cards if card.name != "metro"]
    index = Bm25Index.build(fewer, Analyzer(), tmp_path)
    assert index.analysed == 0 and _answers(index) == _fresh(fewer)
    again = Bm25Index.build(fewer, Analyzer(), tmp_path)
    assert again.analysed == 0 and _answers(again) == _fresh(fewer)


@pytest.mark.parametrize(
    "section", ["keys", "vocabulary", "title_length", "term_start", "block_sums"]
)
def test_a_damaged_section_means_a_rebuild(tmp_path: Path, section: str) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(cards, Analyzer(), tmp_path)
    offset, size = _layout(tmp_path / STORE_NAME)[section]
    _flip(tmp_path / STORE_NAME, offset + size // 2)
    index = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert index.analysed == len(cards) and len(index.warnings) == 1
    assert "could not be read" in index.warnings[0]
    assert _answers(index) == _fresh(cards)
    assert Bm25Index.build(cards, Analyzer(), tmp_path).warnings == []  # written anew


@pytest.mark.parametrize("at", [8, 20, 60, -1])
def test_a_damaged_header_or_a_truncated_store_means_a_rebuild(tmp_path: Path, at: int) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(cards, Analyzer(), tmp_path)
    store = tmp_path / STORE_NAME
    if at < 0:
        store.write_bytes(store.read_bytes()[:at])
    else:
        _flip(store, at)
    index = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert index.analysed == len(cards) and len(index.warnings) == 1
    assert _answers(index) == _fresh(cards)


def test_a_damaged_block_is_found_by_the_query_that_reads_it(tmp_path: Path) -> None:
    cards = Named(load_cards(MULTILINGUAL), b"first")
    Bm25Index.build(cards, Analyzer(), tmp_path)
    offset, size = _layout(tmp_path / STORE_NAME)["text_tf"]
    for at in range(offset, offset + size, 7):
        _flip(tmp_path / STORE_NAME, at)
    index = Bm25Index.build(cards, Analyzer(), tmp_path)  # recalled: no block read yet
    assert index.analysed == 0 and index.warnings == []
    with pytest.raises(StoreDamaged):
        index.search("sourdough bread")
    assert index.damage and "checksum" in index.damage
    rebuilt = Bm25Index.build(cards, Analyzer(), tmp_path, trust_store=index.damage)
    assert rebuilt.analysed == len(cards) and "could not be read" in rebuilt.warnings[0]
    assert _answers(rebuilt) == _fresh(cards)
    assert _answers(Bm25Index.build(cards, Analyzer(), tmp_path)) == _fresh(cards)


def test_a_store_truncated_after_opening_is_found_by_the_query(tmp_path: Path) -> None:
    cards = Named(load_cards(MULTILINGUAL), b"first")
    Bm25Index.build(cards, Analyzer(), tmp_path)
    index = Bm25Index.build(cards, Analyzer(), tmp_path)
    store = tmp_path / STORE_NAME
    with open(store, "r+b") as handle:  # the same file, cut short (not replaced)
        handle.truncate(_layout(store)["slot"][0] + 8)
    with pytest.raises(StoreDamaged):
        index.search("sourdough bread")


def _write_sealed(postings: Any, path: Path, fingerprint: str) -> None:
    """A store as the earlier, sealed layout wrote it (read whole)."""
    arrays = {
        "keys": bm25._blob(postings.keys),
        "vocabulary": bm25._blob(postings.vocabulary),
        "title_length": postings.title_length.astype("<f4"),
        "text_length": postings.text_length.astype("<f4"),
        "term_start": postings.term_start.astype("<i8"),
        "slot": postings.slot.astype("<i4"),
        "title_tf": postings.title_tf.astype("<u2"),
        "text_tf": postings.text_tf.astype("<u2"),
    }
    layout = {name: [array.dtype.str, len(array)] for name, array in arrays.items()}
    header = json.dumps({"format": 1, "analyzer": fingerprint, "arrays": layout}).encode()
    parts = [bm25._MAGIC + len(header).to_bytes(8, "little") + header]
    parts += [array.tobytes() for array in arrays.values()]
    path.write_bytes(bm25._SEALED + files.seal(b"".join(parts)))


def test_a_store_of_the_earlier_layout_is_read_and_written_anew(tmp_path: Path) -> None:
    cards = Named(load_cards(MULTILINGUAL), b"first")
    postings = Bm25Index.build(list(cards), Analyzer())._postings
    _write_sealed(postings, tmp_path / STORE_NAME, Analyzer().fingerprint)
    index = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert index.analysed == 0 and index.warnings == []
    assert _answers(index) == _fresh(cards)
    assert (tmp_path / STORE_NAME).read_bytes().startswith(bm25._BLOCKED)
    assert (tmp_path / MATCH_NAME).exists()
    again = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert again.analysed == 0 and _answers(again) == _fresh(cards)


def test_a_store_of_an_unknown_format_is_rebuilt_quietly(tmp_path: Path) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(cards, Analyzer(), tmp_path)
    store = tmp_path / STORE_NAME
    data = store.read_bytes()
    start = len(bm25._BLOCKED) + 8 + 32
    length = int.from_bytes(data[len(bm25._BLOCKED) : len(bm25._BLOCKED) + 8], "little")
    header = data[start : start + length].replace(
        f'"format": {bm25._BLOCKED_FORMAT}'.encode(), b'"format": 9'
    )
    seal = hashlib.sha256(header).digest()
    store.write_bytes(data[: len(bm25._BLOCKED) + 8] + seal + header + data[start + length :])
    index = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert index.analysed == len(cards) and index.warnings == []


@pytest.mark.parametrize(
    "text",
    [
        "import bm25\ncards | bm25($q) | take(5) | explain",
        "import bm25\ncards | bm25($q) | relevant | explain",
        "import bm25\ncards | bm25($q) | count",
    ],
)
def test_a_vault_whose_store_block_is_damaged_answers_and_warns(
    tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store is what is read here: the word index (tests/test_bm25_terms.py), which
    # would answer a vault's first questions without it, is not asked.
    monkeypatch.setattr(shared, "WORD_INDEX_QUESTIONS", 0)
    root = tmp_path / "garden"
    shutil.copytree(GARDEN, root, ignore=shutil.ignore_patterns(".hql"))
    hql.run(text, vault=Vault.open(root), params={"q": "ocean"})  # written
    hql.run(text, vault=Vault.open(root), params={"q": "ocean"})  # matched, recorded
    store = root / ".hql" / STORE_NAME
    layout = _layout(store)
    data = bytearray(store.read_bytes())  # every fifth byte of two sections, in one write
    for name in ("slot", "title_tf"):
        offset, size = layout[name]
        for at in range(offset, offset + size, 5):
            data[at] ^= 0x5A
    store.write_bytes(bytes(data))
    q = QUESTIONS[0]
    answer = hql.run(text, vault=Vault.open(root), params={"q": q})
    expected = hql.run(text, vault=Vault.open(root, use_cache=False), params={"q": q})
    assert not answer.failed and answer.text() == expected.text()
    assert "could not be read" in answer.render_reports()
    again = hql.run(text, vault=Vault.open(root), params={"q": q})
    _assert_same(again, expected)


def test_the_score_bound_reads_the_stored_vocabulary_unsplit(tmp_path: Path) -> None:
    """`bm25 | take(k)` asks for the bound of every query: it must not split the vocabulary."""
    cards = load_cards(MULTILINGUAL)
    fresh = Bm25Index.build(cards, Analyzer())
    Bm25Index.build(cards, Analyzer(), tmp_path)
    index = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert isinstance(index._postings, bm25._StoredPostings)
    for question in [*QUESTIONS, "zzzz-not-a-term", "the"]:
        assert index.score_bound(question) == fresh.score_bound(question)
    assert index._postings._vocabulary is None


def test_a_ranking_analyses_its_question_once_and_splits_no_vocabulary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(cards, Analyzer(), tmp_path)
    index = Bm25Index.build(cards, Analyzer(), tmp_path)
    analysed: list[str] = []
    real = Analyzer.analyze
    monkeypatch.setattr(
        Analyzer, "analyze", lambda self, text: analysed.append(text) or real(self, text)
    )
    fresh = Bm25Index.build(cards, Analyzer())  # no store: every answer worked out anew
    for question in ("sourdough bread", "biblioteca municipal", "sourdough bread"):
        analysed.clear()
        bound, said = index.score_bound(question), index.analysis(question)
        hits = index.search(question, 3)
        passing = index.search_passing(question, lambda best: 0.0, evidence={"sourdough"})
        assert analysed == [question]  # the bound, the analysis, both rankings: one analysis
        assert bound == fresh.score_bound(question) and said == fresh.analysis(question)
        assert [(h.card.name, h.score) for h in hits] == [
            (h.card.name, h.score) for h in fresh.search(question, 3)
        ]
        expected = fresh.search_passing(question, lambda best: 0.0, evidence={"sourdough"})
        assert passing[1:] == expected[1:]
        assert (passing[2] > 0) == question.startswith("sourdough")  # evidence was found
        assert [h.card.name for h in passing[0]] == [h.card.name for h in expected[0]]
    assert index._postings._vocabulary is None  # type: ignore[attr-defined]


def test_postings_are_counted_in_term_then_card_order_whatever_the_term_numbers() -> None:
    """A batch's entries are counted by sorting its terms' numbers stably (one 16-bit
    radix pass when every number is below 2**16, two otherwise): both give numpy's stable
    order, so each (term, card) is counted once and in (term, card) order."""
    from collections import Counter

    from hql.search.bm25 import _counted, _stable_order

    chosen = np.random.default_rng(3)
    for high in (50, 0xFFFF, 0x10000, 1 << 30):
        values = chosen.integers(0, high + 1, size=5_000).astype(np.int32)
        values[::997] = high  # the largest number, and ties, at either pass
        assert np.array_equal(_stable_order(values), np.argsort(values, kind="stable"))
        lengths = [2_000, 0, 3_000]
        terms, slots, counts = _counted(values, lengths, 7)
        pairs = zip(values.tolist(), np.repeat(np.arange(7, 10), lengths).tolist(), strict=True)
        expected = sorted(Counter(pairs).items())
        assert list(zip(terms.tolist(), slots.tolist(), strict=True)) == [p for p, _ in expected]
        assert counts.tolist() == [c for _, c in expected]
