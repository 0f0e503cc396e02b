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
