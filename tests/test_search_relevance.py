from __future__ import annotations

import pytest
from test_search_cards import FIXTURES, load_cards

from hql.search.bm25 import Bm25Index
from hql.search.relevance import RelevanceError, coverage, floor, median_margin, relevant
from hql.text.analyzer import Analyzer


def _score(pair: tuple[str, float]) -> float:
    return pair[1]


def test_floor_keeps_scores_at_or_above_min_and_records_the_rule() -> None:
    kept, cutoff = floor([("a", 0.5), ("b", 0.35), ("c", 0.2)], _score, 0.35)
    assert [name for name, _ in kept] == ["a", "b"]
    assert cutoff.to_json() == {"rule": "min", "min": 0.35, "kept": 2, "candidates": 3}


def test_median_margin_keeps_a_standout_and_its_close_neighbours() -> None:
    items = [("a", 0.82), ("b", 0.78), ("c", 0.70), ("d", 0.61), ("e", 0.60), ("f", 0.59)]
    kept, cutoff = median_margin(items, _score)
    assert [name for name, _ in kept] == ["a", "b"]
    assert cutoff.rule == "median-margin" and cutoff.parameters["median"] == pytest.approx(0.655)


def test_median_margin_abstains_when_nothing_stands_out() -> None:
    items = [("a", 0.84), ("b", 0.84), ("c", 0.83), ("d", 0.83), ("e", 0.82)]
    kept, cutoff = median_margin(items, _score)
    assert kept == [] and cutoff.to_json()["kept"] == 0


def test_nonsense_question_gives_nothing_with_bm25_and_relevant() -> None:
    index = Bm25Index.build(load_cards(FIXTURES / "multilingual"), Analyzer())
    question = "zorgle blimfast quibbering"
    kept, cutoff = relevant(
        index.search(question), lambda h: h.score, "bm25", bound=index.score_bound(question)
    )
    assert kept == [] and cutoff.rule == "coverage"


def test_bm25_relevant_keeps_the_answer_and_drops_weak_matches() -> None:
    index = Bm25Index.build(load_cards(FIXTURES / "multilingual"), Analyzer())
    question = "when does the sourdough starter double in the tower"
    hits = index.search(question)
    assert len(hits) >= 2
    kept, cutoff = coverage(hits, lambda h: h.score, index.score_bound(question))
    assert [hit.card.name for hit in kept] == ["sourdough"]
    assert 0 < cutoff.parameters["threshold"] <= hits[0].score


def test_unknown_metric_needs_a_floor() -> None:
    with pytest.raises(RelevanceError, match="min"):
        relevant([("a", 1.0)], _score, "rrf")
    assert relevant([("a", 1.0)], _score, "rrf", minimum=0.5)[0] == [("a", 1.0)]


def test_crowded_cosine_scores_are_judged_in_their_own_spread() -> None:
    from hql.search.relevance import cosine_rule

    # e5-like: every score between 0.80 and 0.86, the answer a little above the crowd.
    crowd = [(f"c{n}", 0.80 + 0.002 * (n % 10)) for n in range(40)]
    kept, cutoff = cosine_rule([("owl", 0.858), ("barn-owl", 0.852), *crowd], _score)
    assert [name for name, _ in kept] == ["owl", "barn-owl"]
    assert cutoff.rule == "standout" and cutoff.parameters["spread"] > 0
    # Nothing above the crowd: abstain.
    kept, cutoff = cosine_rule(crowd, _score)
    assert kept == [] and cutoff.rule == "standout"
    # Scores that spread wide keep the fixed rule of the specification.
    wide = [("a", 0.82), ("b", 0.78), ("c", 0.70), ("d", 0.61), ("e", 0.60), ("f", 0.59)]
    assert cosine_rule(wide, _score)[1].rule == "median-margin"


def test_negated_clauses_are_cut_from_the_question() -> None:
    from hql.search.relevance import affirmed_text

    kept = affirmed_text("Fix the UI, but do not run the browser.").split()
    assert "UI" in kept and "run" not in kept and "browser" not in kept
    assert "runtime" not in affirmed_text("这不是 provider adapter hook runtime 任务。")
    assert affirmed_text("reset my password") == "reset my password"
    # Negations in any case, beside letters that lower or fold apart (İ, ı, ſ).
    assert affirmed_text("Ship it, NEVER the Ölmodul. Keep Tests").split() == [
        "Ship",
        "it",
        "Keep",
        "Tests",
    ]
    assert affirmed_text("İzmir build, but DON'T deploy").split() == ["İzmir", "build"]
    assert affirmed_text("ſtore Ölmodul NOT saved").split() == ["ſtore", "Ölmodul"]
    assert "deploy" not in affirmed_text("但don't deploy")  # a clause after 但 starts anew


def test_a_model_with_known_cosines_is_judged_by_its_floor() -> None:
    from hql.search.relevance import MODEL_FLOORS, cosine_rule

    e5 = "multilingual-e5-small"
    floor_of_e5 = MODEL_FLOORS[e5]
    # One card: no spread to measure, but e5's own floor still decides.
    kept, cutoff = cosine_rule([("owl", floor_of_e5 + 0.01)], _score, e5)
    assert [name for name, _ in kept] == ["owl"]
    assert cutoff.rule == "calibrated" and cutoff.parameters["floor"] == floor_of_e5
    kept, cutoff = cosine_rule([("owl", floor_of_e5 - 0.01)], _score, e5)
    assert kept == [] and cutoff.to_json()["kept"] == 0
    # Above the floor, hits within the window of the best are kept.
    items = [("a", floor_of_e5 + 0.05), ("b", floor_of_e5 + 0.02), ("c", floor_of_e5 - 0.03)]
    assert [name for name, _ in cosine_rule(items, _score, e5)[0]] == ["a", "b"]
    # A model without a floor keeps the general rules.
    assert cosine_rule(items, _score, "some-http-model")[1].rule == "median-margin"


def test_hybrid_keeps_what_stands_out_by_meaning_or_words_meaning_does_not_contradict() -> None:
    """words_or_meaning on e5-like cosines (floor 0.85, spread 0.01): meaning keeps only
    what is within 1.5 spreads of the best it kept; a words hit needs the floor."""
    from hql.search.relevance import Meaning, words_or_meaning

    # (name, bm25 rule kept it, meaning: (cosine, semantic rule kept it) or None)
    hits = [
        ("callouts", False, (0.878, True)),
        ("close", False, (0.866, True)),  # within 1.5 x 0.01 of 0.878
        ("far", False, (0.855, True)),  # the semantic rule's 0.06 window kept it; too far
        ("words", True, (0.851, False)),  # words, and meaning above the floor
        ("contradicted", True, (0.80, False)),  # words, but meaning below the floor
        ("beyond", True, None),  # the meaning arm did not hand it on: words alone
    ]
    kept, cutoff = words_or_meaning(
        hits,
        lambda hit: hit[1],
        lambda hit: None if hit[2] is None else Meaning(*hit[2]),
        median=0.84,
        spread=0.01,
        model="multilingual-e5-small",
    )
    assert [name for name, _, _ in kept] == ["callouts", "close", "words", "beyond"]
    assert cutoff.rule == "words-or-meaning"
    assert cutoff.parameters["by_meaning"] == 2 and cutoff.parameters["by_words"] == 2
    assert cutoff.parameters["reach"] == pytest.approx(0.863)
    # An off-topic question: the semantic rule kept nothing, bm25's one common word is
    # below the floor: nothing is kept.
    off_topic = [("templates", True, (0.83, False)), ("tables", False, (0.82, False))]
    kept, cutoff = words_or_meaning(
        off_topic,
        lambda hit: hit[1],
        lambda hit: Meaning(*hit[2]),
        median=0.80,
        spread=0.01,
        model="multilingual-e5-small",
    )
    assert kept == [] and "reach" not in cutoff.parameters
    # A model without a calibrated floor: words need at least the meaning arm's median.
    kept, _ = words_or_meaning(
        off_topic, lambda hit: hit[1], lambda hit: Meaning(*hit[2]), 0.82, 0.05, "other"
    )
    assert [name for name, _, _ in kept] == ["templates"]


def test_hybrid_reads_cosines_less_their_hub_prior_for_a_model_with_a_hub_floor() -> None:
    """e5-like cosines with hub priors (hub floor 0.845): a hub above the raw floor is not
    kept when its prior brings it under the hub floor; a note found across languages under
    the raw floor is kept when its card is no hub; a words hit needs the hub floor too."""
    from hql.search.relevance import HUB_FLOORS, Meaning, words_or_meaning

    e5 = "multilingual-e5-small"
    hub_floor = HUB_FLOORS[e5]
    # (name, bm25 rule kept it, (cosine, semantic rule kept it), hub prior)
    off_topic = [
        ("callouts", False, (0.863, True), 0.025),  # a hub: 0.838 once corrected
        ("credits", False, (0.855, True), 0.015),
        ("settings", True, (0.853, False), 0.012),  # words, meaning 0.841 corrected
    ]

    def judge(hits):
        return words_or_meaning(
            hits,
            lambda hit: hit[1],
            lambda hit: Meaning(*hit[2]),
            median=0.81,
            spread=0.01,
            model=e5,
            hub=lambda hit: hit[3],
        )

    kept, cutoff = judge(off_topic)
    assert kept == [] and cutoff.parameters["hub_floor"] == hub_floor
    assert cutoff.parameters["against"] == hub_floor and "reach" not in cutoff.parameters
    # Without priors the same hits are read raw: the hub and the words hit are kept.
    kept, _ = words_or_meaning(
        off_topic, lambda hit: hit[1], lambda hit: Meaning(*hit[2]), 0.81, 0.01, e5
    )
    assert [name for name, *_ in kept] == ["callouts", "credits", "settings"]
    across = [
        ("discount", False, (0.842, False), -0.006),  # under 0.85 raw, 0.848 corrected
        ("credits", False, (0.831, False), 0.015),
        ("refunds", False, (0.838, False), -0.004),  # 0.842: under the hub floor
    ]
    kept, cutoff = judge(across)
    assert [name for name, *_ in kept] == ["discount"] and cutoff.parameters["by_meaning"] == 1
    assert cutoff.parameters["reach"] == pytest.approx(0.848 - 1.5 * 0.01)
