from __future__ import annotations

import pytest

from hql.search.fusion import HYBRID_CAP, FusionError, InputRank, fuse, fuse_standing, standing


def test_fused_items_keep_every_inputs_rank_and_score() -> None:
    words = [("oauth", 9.0), ("bearer", 7.0)]
    meaning = [("bearer", 0.8), ("sessions", 0.5)]
    fused = fuse([words, meaning], k=60)
    assert [item.key for item in fused] == ["bearer", "oauth", "sessions"]
    bearer = fused[0]
    assert bearer.inputs == (InputRank(2, 7.0), InputRank(1, 0.8))
    assert bearer.score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1].inputs == (InputRank(1, 9.0), None)
    assert fused[2].inputs == (None, InputRank(2, 0.5))


def test_ties_go_by_name_and_weights_tilt_the_result() -> None:
    left, right = [("b", 1.0)], [("a", 1.0)]
    assert [item.key for item in fuse([left, right])] == ["a", "b"]
    assert [item.key for item in fuse([left, right], weights=[2.0, 1.0])] == ["b", "a"]


def test_a_key_repeated_in_one_input_counts_once_at_its_best_rank() -> None:
    fused = fuse([[("a", 3.0), ("a", 1.0)]], k=1)
    assert fused[0].score == pytest.approx(1 / 2)


@pytest.mark.parametrize(("k", "weights"), [(0, None), (-1, None), (60, [1.0])])
def test_bad_arguments_are_refused(k: float, weights: list[float] | None) -> None:
    with pytest.raises(FusionError, match="`fuse`"):
        fuse([[("a", 1.0)], [("b", 1.0)]], k=k, weights=weights)


def _arm(scores: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: -item[1])


def test_a_standout_in_one_arm_is_not_buried_by_cards_middling_in_both() -> None:
    words = _arm({f"w{n}": 10.0 - n * 0.3 for n in range(20)})
    meaning = _arm({"standout": 0.9, **{f"w{n}": 0.40 - n * 0.002 for n in range(20)}})
    by_rank = [item.key for item in fuse([words, meaning])]
    by_standing = [item.key for item in fuse_standing([words, meaning])[0]]
    assert by_rank.index("standout") > 5  # reciprocal ranks bury it
    assert by_standing[0] == "standout"


def test_a_flat_arm_does_not_move_the_stronger_arms_standout() -> None:
    """A flat arm's standings stay within a step or two of its median: the other arm's
    standout stays first (the cards behind it, each a step or so from the next, it may
    reorder: that is what the cap on the standout's lead costs)."""
    words = _arm({f"c{n}": 30.0 / (n + 1) for n in range(30)})
    flat = _arm({f"c{n}": 0.500 + 0.0001 * ((n * 7) % 30) for n in range(30)})
    fused, standings, per_arm = fuse_standing([words, flat])
    assert fused[0].key == "c0" and fused[0].score > fused[1].score + 1
    assert standings[0] is not None and standings[1] is not None
    assert per_arm[0]["c0"] == pytest.approx(HYBRID_CAP)
    assert max(per_arm[1].values()) < 2


def test_one_arms_few_outliers_over_a_crowd_do_not_outweigh_the_other_arms_standout() -> None:
    """Most of bm25's candidates share only a common word with the question (their scores
    nearly equal, a spread near nothing); its few other cards would stand dozens of
    spreads up. Each arm's best stands at most HYBRID_CAP steps up, so the answer meaning
    picks out clearly, and bm25 also ranks, comes first."""
    crowd = {f"n{n}": 1.0 + 0.001 * (n % 7) for n in range(95)}
    words = _arm({**crowd, "disk": 4.0, "stored": 3.8, "answer": 2.2})
    # e5-like cosines: a median about 0.84, a spread under 0.01; the answer far above.
    crowding = {name: 0.83 + 0.02 * ((n * 37) % 95) / 94 for n, name in enumerate(crowd)}
    meaning = _arm({"answer": 0.882, "disk": 0.841, "stored": 0.839, **crowding})
    fused, standings, per_arm = fuse_standing([words, meaning])
    assert fused[0].key == "answer"
    assert standings[0] is not None and standings[0].step > standings[0].spread
    assert max(per_arm[0].values()) == pytest.approx(HYBRID_CAP)
    uncapped = [standing([score for _, score in arm], cap=None) for arm in (words, meaning)]
    assert uncapped[0] is not None and uncapped[0].of(4.0) > 100  # without the cap


def test_a_card_one_arm_left_out_stands_as_that_arms_last() -> None:
    fused, standings, _ = fuse_standing([_arm({"a": 3.0, "b": 2.0, "c": 1.0}), _arm({"d": 0.9})])
    lowest = standings[0].lowest if standings[0] else None
    only_meaning = next(item for item in fused if item.key == "d")
    assert lowest is not None and only_meaning.inputs[0] is None
    assert only_meaning.score == pytest.approx(lowest + 0.0)
    assert fuse_standing([[], []])[0] == []
