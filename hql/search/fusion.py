"""Reciprocal rank fusion with provenance (product §4.2).

`fuse` combines rankings given as best-first lists of (key, score): a key's fused score
is the sum over the inputs that hold it of `weight / (k + rank)`, ranks counted from 1.
Every fused item keeps, per input, the rank and score it had there (None where the
input did not hold it), so explain can show why it came out where it did.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from hql import messages

DEFAULT_K = 60
METRIC = "rrf"

KeyT = TypeVar("KeyT", bound=Hashable)


class FusionError(ValueError):
    """Arguments `fuse` cannot use; the message names the fix."""


@dataclass(frozen=True, slots=True)
class InputRank:
    """Where one input ranking put an item: its 1-based rank and its score there."""

    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class Fused(Generic[KeyT]):
    """One fused item: the key, its fused score, and its rank per input (None: absent)."""

    key: KeyT
    score: float
    inputs: tuple[InputRank | None, ...]


def fuse(
    rankings: Sequence[Sequence[tuple[KeyT, float]]],
    k: float = DEFAULT_K,
    weights: Sequence[float] | None = None,
    name: Callable[[KeyT], str] = str,
) -> list[Fused[KeyT]]:
    """Fuse best-first rankings by reciprocal rank; ties by `name(key)`."""
    if isinstance(k, bool) or not isinstance(k, int | float) or k <= 0:
        raise FusionError(messages.search_bad_fusion_k(k))
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise FusionError(messages.search_bad_fusion_weights(len(weights), len(rankings)))
    scores: dict[KeyT, float] = {}
    positions: dict[KeyT, list[InputRank | None]] = {}
    for which, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        for rank, (key, score) in enumerate(ranking, start=1):
            slots = positions.setdefault(key, [None] * len(rankings))
            if slots[which] is not None:
                continue  # a key twice in one input counts at its best rank
            slots[which] = InputRank(rank, score)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    fused = [Fused(key, scores[key], tuple(positions[key])) for key in scores]
    fused.sort(key=lambda item: (-item.score, name(item.key)))
    return fused


# --- hybrid: each arm's scores measured in its own spread ---------------------------------

HYBRID_METRIC = "standing"
HYBRID_DEPTH = 100  # each arm hands on its best this many
MAD_TO_SIGMA = 1.4826
# An arm's best candidate stands at most this many steps above the arm's median: a step is the
# arm's robust spread, or a fifth of the best's lead over the median when that is wider.
# Chosen on the even-numbered questions of LoCoMo, Pirá and SciFact (bench/meaning.py --dump,
# offline; 4 and 5 tie there), reported on the odd ones (docs/retrieval.md).
HYBRID_CAP = 5.0


@dataclass(frozen=True, slots=True)
class Standing:
    """Where an arm's candidates stand: their median score and robust spread
    (1.4826 x the median absolute deviation), over the arm's best HYBRID_DEPTH, and the step
    a standing is counted in (the spread, widened so the best stands at most HYBRID_CAP
    steps above the median)."""

    median: float
    spread: float
    lowest: float  # the standing of the arm's last candidate: what a card it left out gets
    step: float

    def of(self, score: float) -> float:
        return (score - self.median) / self.step

    def to_json(self) -> dict[str, float]:
        return {
            "median": self.median,
            "spread": self.spread,
            "step": self.step,
            "lowest": self.lowest,
        }


def standing(scores: Sequence[float], cap: float | None = HYBRID_CAP) -> Standing | None:
    """The standing of an arm's candidate scores (best first); None for an arm without any.

    `cap`: the most steps the best stands above the median. Without it, an arm whose
    candidates mostly share one common word with the question (a spread near nothing)
    puts its few other cards dozens of spreads up, and the sum follows that arm alone."""
    import statistics

    if not scores:
        return None
    median = statistics.median(scores)
    spread = MAD_TO_SIGMA * statistics.median(abs(value - median) for value in scores)
    if spread <= 0.0:  # all alike (or one candidate): a tenth of the scale, so one step is one
        spread = max(abs(median), 1e-6) * 0.1
    step = spread if cap is None else max(spread, (max(scores) - median) / cap)
    return Standing(median, spread, (min(scores) - median) / step, step)


def fuse_standing(
    rankings: Sequence[Sequence[tuple[KeyT, float]]],
    name: Callable[[KeyT], str] = str,
    depth: int = HYBRID_DEPTH,
) -> tuple[list[Fused[KeyT]], list[Standing | None], list[dict[KeyT, float]]]:
    """Fuse by the sum of each arm's standing: how far above its arm's median a card scores,
    in that arm's step (its robust spread, or a fifth of its best's lead when wider: see
    `standing`). A card an arm did not hand on stands as its lowest.

    Unlike reciprocal ranks, a card far ahead in one arm stays ahead (a standout is not
    buried by cards both arms put at middling ranks), and an arm whose scores are flat
    (a weak arm for this question) moves the order little; the cap keeps one arm's few
    outliers from outweighing everything the other arm says.
    Returns the fused items, each arm's standing, and each arm's standing per card.
    """
    heads = [list(ranking[:depth]) for ranking in rankings]
    standings = [standing([score for _, score in head]) for head in heads]
    per_arm: list[dict[KeyT, float]] = []
    places: list[dict[KeyT, InputRank]] = []
    for head, where in zip(heads, standings, strict=True):
        seen: dict[KeyT, float] = {}
        ranks: dict[KeyT, InputRank] = {}
        for rank, (key, score) in enumerate(head, start=1):
            if key not in seen and where is not None:
                seen[key] = where.of(score)
                ranks[key] = InputRank(rank, score)
        per_arm.append(seen)
        places.append(ranks)
    keys = list(dict.fromkeys(key for head in heads for key, _ in head))
    fused = [
        Fused(
            key,
            sum(
                arm.get(key, where.lowest)
                for arm, where in zip(per_arm, standings, strict=True)
                if where is not None
            ),
            tuple(ranks.get(key) for ranks in places),
        )
        for key in keys
    ]
    fused.sort(key=lambda item: (-item.score, name(item.key)))
    return fused, standings, per_arm
