"""`relevant`: keep the hits that pass a stated rule, and say which rule (product §4.3).

A score is evidence, never relevance. These rules decide relevance explicitly and
describe themselves in a `cutoff` record that the ranking's retrieval carries:

* `relevant(min = x)`: a floor, `score >= x`, whatever the metric.
* cosine (semantic, lexical): the median-margin rule. The best score must stand out
  from the median of the candidates by at least 0.10, and a hit is kept when it is
  within 0.06 of the best. A question the vault cannot answer lifts no card above
  the crowd, so nothing is kept instead of the nearest card.
* bm25: the coverage rule. BM25 scores have no fixed scale, but each query term can
  add at most its idf, so `score / bound` (bound = the sum of the idf of the question's
  terms, an unknown term counting as the rarest) says how much of the question a card
  answers. A hit is kept when that share is at least 0.05 and its score is at least
  0.6 of the best score. The floor is low because long prompts legitimately match a
  small share of their words; the relative cut does most of the work. See
  docs/retrieval-words.md for the measurements behind both numbers.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hql import messages

ItemT = TypeVar("ItemT")

COSINE_MARGIN = 0.10
COSINE_WINDOW = 0.06
BM25_COVERAGE = 0.05
BM25_RELATIVE = 0.60


class RelevanceError(ValueError):
    """A `relevant` call that cannot be applied; the message says why."""


@dataclass(frozen=True)
class Cutoff:
    """The rule `relevant` applied, as recorded in a retrieval's `cutoff`."""

    rule: str
    parameters: dict[str, Any] = field(default_factory=dict)
    kept: int = 0
    candidates: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            **self.parameters,
            "kept": self.kept,
            "candidates": self.candidates,
        }


def floor(
    items: Sequence[ItemT], score: Callable[[ItemT], float], minimum: float
) -> tuple[list[ItemT], Cutoff]:
    """Keep items scoring at least `minimum`."""
    if isinstance(minimum, bool) or not isinstance(minimum, int | float):
        raise RelevanceError(messages.search_bad_relevant_min(minimum))
    kept = [item for item in items if score(item) >= minimum]
    return kept, Cutoff("min", {"min": float(minimum)}, len(kept), len(items))


def median_margin(
    items: Sequence[ItemT],
    score: Callable[[ItemT], float],
    margin: float = COSINE_MARGIN,
    window: float = COSINE_WINDOW,
) -> tuple[list[ItemT], Cutoff]:
    """The cosine rule: the best must beat the median by `margin`; keep hits within `window`."""
    parameters: dict[str, Any] = {"margin": margin, "window": window}
    if not items:
        return [], Cutoff("median-margin", parameters, 0, 0)
    scores = [score(item) for item in items]
    best, median = max(scores), statistics.median(scores)
    parameters.update(best=best, median=median)
    if best - median < margin:  # one candidate cannot stand out from itself
        return [], Cutoff("median-margin", parameters, 0, len(items))
    kept = [item for item, value in zip(items, scores, strict=True) if value >= best - window]
    return kept, Cutoff("median-margin", parameters, len(kept), len(items))


def coverage(
    items: Sequence[ItemT],
    score: Callable[[ItemT], float],
    bound: float,
    share: float = BM25_COVERAGE,
    relative: float = BM25_RELATIVE,
) -> tuple[list[ItemT], Cutoff]:
    """The bm25 rule: keep hits answering `share` of the question and scoring `relative` of the best."""
    parameters: dict[str, Any] = {"coverage": share, "relative": relative, "bound": bound}
    if not items or bound <= 0.0:
        return [], Cutoff("coverage", parameters, 0, len(items))
    best = max(score(item) for item in items)
    threshold = max(share * bound, relative * best)
    kept = [item for item in items if score(item) >= threshold]
    parameters["threshold"] = threshold
    return kept, Cutoff("coverage", parameters, len(kept), len(items))


def relevant(
    items: Sequence[ItemT],
    score: Callable[[ItemT], float],
    metric: str,
    minimum: float | None = None,
    bound: float | None = None,
) -> tuple[list[ItemT], Cutoff]:
    """`relevant(min = …)` when `minimum` is given, else the default rule of the metric.

    `bound` is required for bm25 (the index's `score_bound(query)`).
    """
    if minimum is not None:
        return floor(items, score, minimum)
    if metric == "cosine":
        return median_margin(items, score)
    if metric == "bm25":
        if bound is None:
            raise RelevanceError(messages.search_relevant_needs_bound())
        return coverage(items, score, bound)
    raise RelevanceError(messages.search_relevant_unknown_metric(metric))
