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
