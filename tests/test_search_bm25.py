from __future__ import annotations

from pathlib import Path

import pytest
from test_search_cards import FIXTURES, Card, load_cards, make_card

from hql.search import bm25
from hql.search.bm25 import STORE_NAME, Bm25Index
from hql.text.analyzer import Analyzer

MULTILINGUAL = FIXTURES / "multilingual"


@pytest.fixture(scope="module")
def index() -> Bm25Index[Card]:
    return Bm25Index.build(load_cards(MULTILINGUAL), Analyzer.from_config(None))


@pytest.mark.parametrize(
    ("language", "question", "card"),
    [
        ("en", "Who trimmed the wick of the lamp at dusk?", "lighthouse-keeping"),
        ("pt", "Quanto custa o passe de ônibus?", "passe-onibus"),
        ("es", "¿Dónde hubo la última erupción volcánica?", "volcanes"),
        ("fr", "Combien de temps le fromage est-il affiné ?", "comte"),
        ("de", "Wie flicke ich einen Reifen?", "fahrrad"),
        ("ru", "Когда открывается московское метро?", "metro"),
        ("ja", "富士山の標高は何メートルですか", "fuji"),
        ("zh", "长城有多长？", "great-wall"),
        ("ko", "김치는 무엇으로 만드나요?", "kimchi"),
        ("th", "ต้มยำกุ้งมีรสอย่างไร", "tom-yum"),
    ],
)
def test_a_question_finds_its_card_in_every_language(
    index: Bm25Index[Card], language: str, question: str, card: str
) -> None:
    hits = index.search(question)
    assert hits, language
    assert hits[0].card.name == card


def test_price_in_reais_meets_a_plain_number(index: Bm25Index[Card]) -> None:
    assert index.search("passe 20")[0].card.name == "passe-onibus"


def test_builtin_opening_hours_synonyms_cross_languages(index: Bm25Index[Card]) -> None:
    # "horário de funcionamento" (pt) and "opening hours" (en) are one built-in group.
    names = [hit.card.name for hit in index.search("opening hours")]
    assert names[:2] == ["cafe-menu", "biblioteca"]
    assert "syn:opening hours" in index.search("opening hours")[1].matched


def test_cards_sharing_no_term_are_absent(index: Bm25Index[Card]) -> None:
    assert index.search("xylophone quasar") == []
    assert index.search("") == []
    assert [hit.card.name for hit in index.search("sourdough")] == ["sourdough"]


def test_ties_go_by_card_name() -> None:
    cards = [make_card(name, "", "identical words here") for name in ("b", "c", "a")]
    hits = Bm25Index.build(cards, Analyzer()).search("identical")
    assert [hit.card.name for hit in hits] == ["a", "b", "c"]
    assert len({hit.score for hit in hits}) == 1
    limited = Bm25Index.build(cards, Analyzer()).search("identical", limit=2)
    assert [hit.card.name for hit in limited] == ["a", "b"]


def test_title_weighs_more_than_body() -> None:
    cards = [
        make_card("in-title", "Heron", "a bird of rivers and lakes"),
        make_card("in-body", "Rivers", "a heron waits in rivers and lakes"),
    ]
    hits = Bm25Index.build(cards, Analyzer()).search("heron")
    assert [hit.card.name for hit in hits] == ["in-title", "in-body"]


def test_hits_report_matched_terms_with_weights_summing_to_the_score(
    index: Bm25Index[Card],
) -> None:
    hit = index.search("wild yeast starter")[0]
    assert hit.card.name == "sourdough"
    assert set(hit.matched) >= {"wild", "yeast", "starter", "pref:start"}
    assert sum(hit.matched.values()) == pytest.approx(hit.score, rel=1e-5)


def test_score_bound_counts_unknown_terms(index: Bm25Index[Card]) -> None:
    known = index.score_bound("sourdough")
    assert index.score_bound("sourdough zanzibar") > known
    assert index.search("sourdough")[0].score < known


def _cards_in(directory: Path) -> list[Card]:
    return load_cards(directory)


def test_the_store_is_reused_and_one_edit_reanalyses_one_card(tmp_path: Path) -> None:
    cards = load_cards(MULTILINGUAL)
    first = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert first.analysed == len(cards) and (tmp_path / STORE_NAME).exists()
    again = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert again.analysed == 0 and again.warnings == []
    edited = [make_card("sourdough", "Sourdough bread", "rye and spelt")] + cards[1:]
    edited = [card for card in edited if card.name != "sourdough"] + [edited[0]]
    after_edit = Bm25Index.build(edited, Analyzer(), tmp_path)
    assert after_edit.analysed == 1
    assert [hit.card.name for hit in after_edit.search("spelt")] == ["sourdough"]
    assert after_edit.search("yeast") == []
    fresh = Bm25Index.build(edited, Analyzer())
    for question in ("spelt", "volcanes", "長城 长城", "opening hours"):
        expected = [(h.card.name, round(h.score, 4)) for h in fresh.search(question)]
        assert [(h.card.name, round(h.score, 4)) for h in after_edit.search(question)] == expected


def test_removed_cards_leave_the_store(tmp_path: Path) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(cards, Analyzer(), tmp_path)
    fewer = [card for card in cards if card.name != "metro"]
    index = Bm25Index.build(fewer, Analyzer(), tmp_path)
    assert index.analysed == 0
    assert index.search("метро") == []
    assert Bm25Index.build(fewer, Analyzer(), tmp_path).analysed == 0


def test_a_corrupt_store_is_ignored_and_rebuilt(tmp_path: Path) -> None:
    cards = load_cards(MULTILINGUAL)
    (tmp_path / STORE_NAME).write_bytes(b"not a zip file at all")
    index = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert index.analysed == len(cards)
    assert len(index.warnings) == 1 and "could not be read" in index.warnings[0]
    assert index.search("sourdough")[0].card.name == "sourdough"
    assert Bm25Index.build(cards, Analyzer(), tmp_path).warnings == []


def test_a_store_from_another_analyser_configuration_is_not_trusted(tmp_path: Path) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(cards, Analyzer(), tmp_path)
    other = Analyzer.from_config({"ignore": ["sourdough"]})
    index = Bm25Index.build(cards, other, tmp_path)
    assert index.analysed == len(cards) and index.warnings == []
    assert index.search("sourdough") == []


def test_unwritable_state_dir_still_searches(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    index = Bm25Index.build(load_cards(MULTILINGUAL), Analyzer(), blocker / "state")
    assert index.search("sourdough") and len(index.warnings) == 1


def test_the_vault_search_section_configures_the_analyser() -> None:
    from hql.vault import Vault

    vault = Vault.open(MULTILINGUAL, use_cache=False)
    analyzer = Analyzer.from_config(vault.config.raw.get("search"))
    index = Bm25Index.build(vault.cards, analyzer)
    assert [hit.card.name for hit in index.search("bike repair")] == ["fahrrad"]
    assert index.search("menu") == []  # ignored by the vault's [search] ignore


def test_cards_with_identical_text_each_keep_a_slot(tmp_path: Path) -> None:
    cards = [make_card(name, "Same", "the very same words") for name in ("x", "y")]
    Bm25Index.build(cards, Analyzer(), tmp_path)
    index = Bm25Index.build(
        [*cards, make_card("z", "Same", "the very same words")], Analyzer(), tmp_path
    )
    assert index.analysed == 1
    assert [hit.card.name for hit in index.search("words")] == ["x", "y", "z"]


def test_a_truncated_store_is_ignored_and_rebuilt(tmp_path: Path) -> None:
    cards = load_cards(MULTILINGUAL)
    Bm25Index.build(cards, Analyzer(), tmp_path)
    store = tmp_path / STORE_NAME
    store.write_bytes(store.read_bytes()[:-10])
    index = Bm25Index.build(cards, Analyzer(), tmp_path)
    assert index.analysed == len(cards) and len(index.warnings) == 1


def test_cached_reuses_repoints_and_updates_in_memory(tmp_path: Path) -> None:
    cards = load_cards(MULTILINGUAL)
    first = Bm25Index.cached(cards, Analyzer(), tmp_path)
    assert Bm25Index.cached(cards, Analyzer(), tmp_path) is first
    reloaded = load_cards(MULTILINGUAL)  # equal content, new objects
    again = Bm25Index.cached(reloaded, Analyzer(), tmp_path)
    assert again is not first and again.analysed == 0
    assert (
        again.search("sourdough")[0].card is reloaded[[c.name for c in reloaded].index("sourdough")]
    )
    edited = [*reloaded[:-1], make_card(reloaded[-1].name, "Renamed", "quokka")]
    updated = Bm25Index.cached(edited, Analyzer(), tmp_path)
    assert updated.analysed == 1
    assert [hit.card.name for hit in updated.search("quokka")] == [reloaded[-1].name]
    assert [hit.card.name for hit in first.search("sourdough")] == ["sourdough"]  # old index intact
    assert first.search("quokka") == []


def test_previous_index_feeds_an_incremental_build_without_a_store() -> None:
    cards = load_cards(MULTILINGUAL)
    first = Bm25Index.build(cards, Analyzer())
    added = Bm25Index.build(
        [*cards, make_card("new", "New", "platypus")], Analyzer(), previous=first
    )
    assert added.analysed == 1
    assert [hit.card.name for hit in added.search("platypus")] == ["new"]
    fresh = Bm25Index.build([*cards, make_card("new", "New", "platypus")], Analyzer())
    assert [(h.card.name, round(h.score, 5)) for h in added.search("volcanes platypus")] == [
        (h.card.name, round(h.score, 5)) for h in fresh.search("volcanes platypus")
    ]


def test_limit_zero_ranks_nothing(index: Bm25Index[Card]) -> None:
    assert index.search("sourdough", limit=0) == []


def test_every_hits_matched_terms_add_up_to_its_score(index: Bm25Index[Card]) -> None:
    hits = index.search("the bread tower opening hours 富士山 метро")
    assert len(hits) >= 4
    for hit in hits:
        assert hit.matched
        assert sum(hit.matched.values()) == pytest.approx(hit.score, rel=1e-5)


def test_scores_of_many_queries_are_each_querys_scores(index: Bm25Index[Card]) -> None:
    import numpy as np

    queries = ["opening hours", "xylophone quasar", "长城有多长？", "passe 20 passe", ""]
    among = [card for card in index.cards if card.name != "biblioteca"]
    for subset in (None, among):
        many = index.scores_of_many(queries, subset)
        assert len(many) == len(queries)
        for query, scores in zip(queries, many, strict=True):
            one = index.scores(query, subset)
            assert (scores is None) == (one is None), query
            if one is not None and scores is not None:
                assert np.allclose(scores, one, rtol=1e-6, atol=1e-6), query
                assert np.array_equal(np.flatnonzero(scores), np.flatnonzero(one)), query


LONG_QUESTION = (
    "Who trimmed the wick of the lamp at dusk? Quanto custa o passe de ônibus? "
    "Wie flicke ich einen Reifen? opening hours of the library, sourdough and cheese"
)


def _matched_term_by_term(index: Bm25Index[Card], slot: int, query: str) -> dict[str, float]:
    """A hit's matched terms worked out one term at a time: what every query term's
    entries give at the slot, in query term order."""
    import numpy as np

    found: dict[str, float] = {}
    for term_id, weight in index._query_terms(query):
        slots, impact = index._impact_of(term_id)
        where = np.flatnonzero(slots == slot)
        if len(where):
            term = index._postings.vocabulary[term_id]
            found[term] = float(np.float32(weight) * impact[where[0]])
    return found


def test_matched_terms_are_each_terms_share_at_the_hit(index: Bm25Index[Card]) -> None:
    hits = index.search(LONG_QUESTION)
    assert len(hits) > 5
    for hit in hits:
        expected = _matched_term_by_term(index, hit._slot, LONG_QUESTION)
        assert list(hit.matched.items()) == list(expected.items()), hit.card.name


def test_kept_scores_are_shared_read_only_and_rank_as_search(index: Bm25Index[Card]) -> None:
    first = index.scores(LONG_QUESTION)
    assert first is not None and index.scores(LONG_QUESTION) is first
    with pytest.raises(ValueError):
        first[0] = 1.0
    made = index.hits_of(first, LONG_QUESTION, 6)
    searched = index.search(LONG_QUESTION, 6)
    assert [(h.card.name, h.score, dict(h.matched)) for h in made] == [
        (h.card.name, h.score, dict(h.matched)) for h in searched
    ]
    assert index.scores("xylophone quasar") is None
    assert index.hits_of(None, "xylophone quasar", 6) == []


def test_kept_scores_of_many_are_the_same_read_only_arrays(index: Bm25Index[Card]) -> None:
    queries = ["opening hours", "xylophone quasar", "passe 20 passe"]
    first = index.scores_of_many(queries)
    again = index.scores_of_many(queries)
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert first[1] is None and first[0] is not None
    with pytest.raises(ValueError):
        first[0][0] = 1.0
    # A subset of the cards is worked out anew, never kept.
    among = [card for card in index.cards if card.name != "biblioteca"]
    assert index.scores_of_many(queries, among)[0] is not first[0]


class _Prefetched(list):  # type: ignore[type-arg]
    """Cards that note each set of positions they are asked to build together."""

    def __init__(self, cards: list[Card]) -> None:
        super().__init__(cards)
        self.asked: list[list[int]] = []

    def prefetch(self, positions: list[int]) -> None:
        self.asked.append(list(positions))


def test_cards_join_the_postings_in_batches_with_the_same_scores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cards = load_cards(MULTILINGUAL)
    whole = Bm25Index.build(cards, Analyzer())
    monkeypatch.setattr(bm25, "_BATCH", 2)
    batched_cards = _Prefetched(cards)
    batched = Bm25Index.build(batched_cards, Analyzer())
    assert len(batched_cards.asked) == (len(cards) + 1) // 2
    assert all(len(asked) <= 2 for asked in batched_cards.asked)
    for question in ("spelt", "volcanes", "長城 长城", "opening hours", "bread rye"):
        expected = [(h.card.name, h.score, h.matched) for h in whole.search(question)]
        assert [(h.card.name, h.score, h.matched) for h in batched.search(question)] == expected


def _postings_of(index: Bm25Index[Card]) -> tuple[object, ...]:
    postings = index._postings
    return (
        list(postings.keys),
        list(postings.vocabulary),
        postings.term_count.tolist(),
        postings.slot.tolist(),
        postings.title_tf.tolist(),
        postings.text_tf.tolist(),
        postings.title_length.tolist(),
        postings.text_length.tolist(),
    )


@pytest.mark.parametrize("worker_fails", [False, True])
def test_batches_analysed_by_worker_processes_number_terms_as_one_process(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    worker_fails: bool,
    request: pytest.FixtureRequest,
) -> None:
    """Worker processes analyse the batches of a large build; the postings and the store
    are the same as one process makes, also when a worker fails (its batches are then
    analysed in the building process)."""
    cards = load_cards(MULTILINGUAL)
    monkeypatch.setattr(bm25, "_BATCH", 2)
    alone = Bm25Index.build(cards, Analyzer(), tmp_path / "alone")
    monkeypatch.setattr(bm25, "_PARALLEL_BATCHES", 2)
    monkeypatch.setattr(bm25, "_processors", lambda: 2)
    workers = request.getfixturevalue("worker_pools")
    if worker_fails:

        def failing(texts: object) -> object:
            raise RuntimeError("a worker fails")

        monkeypatch.setattr(bm25, "_analysed_alone", failing)  # forked workers inherit it
    shared = Bm25Index.build(cards, Analyzer(), tmp_path / "shared")
    assert workers.pools and workers.pools[0] is not None  # workers did take part
    # Their batches were used, unless they failed (then this process analysed every batch).
    assert (workers.analysed == 0) == worker_fails
    assert _postings_of(shared) == _postings_of(alone)
    stored = [(tmp_path / name / STORE_NAME).read_bytes() for name in ("alone", "shared")]
    assert stored[0] == stored[1]


@pytest.mark.parametrize("at_once", [1 << 20, 3, 1])
def test_scores_are_the_floats_of_adding_one_term_after_another(
    index: Bm25Index[Card], at_once: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_scored` adds its terms' entries in batches (`_ADDED_AT_ONCE` entries): each card's
    score is summed in term order all the same, to the float32 bit."""
    import numpy as np

    monkeypatch.setattr(bm25, "_ADDED_AT_ONCE", at_once)
    for question in (LONG_QUESTION, "opening hours", "passe 20 passe", "lamp lamp wick"):
        terms = index._query_terms(question)
        expected = np.zeros(len(index.cards), dtype=np.float32)
        for term_id, weight in terms:
            slots, impact = index._impact_of(term_id)
            expected[slots] += impact if weight == 1.0 else np.float32(weight) * impact
        scored = index._scored(question, None)
        assert scored is not None
        assert scored[0].tobytes() == expected.tobytes(), question
    assert any(weight != 1.0 for _, weight in index._query_terms(LONG_QUESTION))


def test_a_process_with_other_threads_at_work_builds_alone() -> None:
    """Forking while another thread works (a server answering other requests) could start a
    worker with a lock that thread holds: such a process analyses every batch itself."""
    import threading

    release = threading.Event()
    other = threading.Thread(target=release.wait, name="another request")
    other.start()
    try:
        assert bm25._threads_at_work()
        assert bm25._worker_pool(2, Analyzer(), None) is None
    finally:
        release.set()
        other.join()
