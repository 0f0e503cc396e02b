from __future__ import annotations

import pytest

from hql.search.fusion import FusionError, InputRank, fuse


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
