"""`relevant`: keep the hits that pass a stated rule, and say which rule (product §4.3).

A score is evidence, never relevance. These rules decide relevance explicitly and
describe themselves in a `cutoff` record that the ranking's retrieval carries:

* `relevant(min = x)`: a floor, `score >= x`, whatever the metric.
* cosine (semantic, lexical): the median-margin rule. The best score must stand out
  from the median of the candidates by at least 0.10, and a hit is kept when it is
  within 0.06 of the best. A question the vault cannot answer lifts no card above
  the crowd, so nothing is kept instead of the nearest card.
* cosine with crowded scores (models like e5, whose scores sit in a narrow band):
  the same rule measured in the candidates' own spread ("standout"): the best must lie
  STANDOUT_BEST robust deviations (1.4826 × the median absolute deviation) above the
  median, and a hit is kept within STANDOUT_WINDOW deviations of the best. A spread
  wider than the fixed rule's margin leaves the fixed rule in force (see `cosine_rule`).
* cosine from a model HQL knows the scores of (MODEL_FLOORS): the **calibrated** rule.
  Models like e5 give every pair of texts a high cosine (0.74–0.96 on real questions), so
  neither a margin over the median nor the candidates' spread can tell a vault that
  answers from one that does not, and a vault of a few cards has no spread at all. What
  does is the cosine itself, measured for that model on real questions: a hit is kept
  when it scores at least the model's floor and within COSINE_WINDOW of the best.
* hybrid (`words_or_meaning`): a hit is kept when its meaning stands out or its words are
  evidence its meaning does not contradict; for a model with a HUB_FLOORS entry, each
  cosine is read less its card's hub prior (hql.index.hubs), so a card near every
  question does not answer one the vault cannot.
* bm25: the coverage rule, on the hits that carry evidence: a hit whose only shared
  terms are 5-letter prefixes ("quantity" for "quantum"), or words the question
  negates ("do not use the hook runtime", "不要 …"), is not evidence on its own. BM25 scores have no fixed scale, but each query term can
  add at most its idf, so `score / bound` (bound = the sum of the idf of the question's
  terms, an unknown term counting as the rarest) says how much of the question a card
  answers. A hit is kept when that share is at least 0.05 and its score is at least
  0.6 of the best score. The floor is low because long prompts legitimately match a
  small share of their words; the relative cut does most of the work. A kept hit must
  also be corroborated: it shares at least CORROBORATING_TERMS distinct question words
  (fewer when the question has fewer; a CJK character counts as a word), or it answers
  at least CORROBORATED_SHARE of the question on its own. One common word ("home",
  "rules", "migration") is how an off-topic question reaches a vault's notes; a
  question the vault answers shares several. See docs/retrieval-words.md for the
  measurements behind the numbers.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from hql import messages

ItemT = TypeVar("ItemT")

COSINE_MARGIN = 0.10
COSINE_WINDOW = 0.06
BM25_COVERAGE = 0.05
BM25_RELATIVE = 0.60
CORROBORATING_TERMS = 3
CORROBORATED_SHARE = 0.25
STANDOUT_BEST = 3.0
STANDOUT_WINDOW = 1.5
MAD_TO_SIGMA = 1.4826
STANDOUT_MINIMUM = 5  # fewer candidates have no spread to speak of: the fixed rule applies
PREFIX_MARK = "pref:"
# hybrid's meaning side keeps hits within this many of its arm's robust spreads of the best
# meaning (bench/meaning.py --only help, calibration half; docs/retrieval.md).
MEANING_WINDOW = 1.5
# The cosine below which a model's hit is no evidence, measured on the OME cases and the
# questions of bench/relevance.py (bench/quality.py --only ome-e5 prints the trade-off).
# all-MiniLM-L6-v2's floor is from the Help vault's question set (bench/meaning.py --only
# help --model minilm, calibration half): its off-topic questions reach at most 0.28, the
# answerable English ones' best notes at least 0.46, and the median-margin rule kept a
# note for 13 of 14 off-topic questions.
MODEL_FLOORS: dict[str, float] = {
    "multilingual-e5-small": 0.85,
    "intfloat/multilingual-e5-small": 0.85,
    "sentence-transformers/all-MiniLM-L6-v2": 0.30,
    "all-MiniLM-L6-v2": 0.30,
}
# hybrid's floor on a hit's cosine less its card's hub prior (hql.index.hubs: the card's mean
# cosine over a fixed bank of questions, centred on the store's cards), for models whose
# cosines crowd. Chosen on the calibration halves of the Help vault's question set (and of
# Pirá in two languages for a tie): bench/meaning.py --only help,pira-mixed --model e5 --dump,
# offline (docs/retrieval.md).
HUB_FLOORS: dict[str, float] = {
    "multilingual-e5-small": 0.845,
    "intfloat/multilingual-e5-small": 0.845,
}

# A clause's words after one of these are negated ("do not use X": X is not asked for).
_NEGATION = re.compile(
    r"(?:\b(?:not|no|never|without|don't|doesn't|didn't|isn't|aren't|won't|can't|cannot|"
    r"nao|não|nunca|sem|sin|pas|sans|jamais|nicht|kein|keine|keinen|ohne)\b"
    r"|不要|不是|不用|无需|無需|不涉及|不必|不需要|别|別|勿|没有|沒有)",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[.;:!?。；：！？,，、]|\bbut\b|但是|但|而是", re.IGNORECASE)


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


@dataclass(frozen=True)
class Precut:
    """What a ranker that handed on only the hits a rule can keep left out: how many
    candidates it had, and how many of them carried evidence (bm25's rule)."""

    candidates: int
    evidence: int | None = None

    @classmethod
    def of(cls, recorded: object) -> Precut | None:
        if not isinstance(recorded, dict):
            return None
        return cls(recorded["candidates"], recorded.get("evidence"))


def floor(
    items: Sequence[ItemT],
    score: Callable[[ItemT], float],
    minimum: float,
    precut: Precut | None = None,
) -> tuple[list[ItemT], Cutoff]:
    """Keep items scoring at least `minimum` (`precut`: the items are those already)."""
    if isinstance(minimum, bool) or not isinstance(minimum, int | float):
        raise RelevanceError(messages.search_bad_relevant_min(minimum))
    kept = [item for item in items if score(item) >= minimum]
    candidates = len(items) if precut is None else precut.candidates
    return kept, Cutoff("min", {"min": float(minimum)}, len(kept), candidates)


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


def standout(
    items: Sequence[ItemT],
    score: Callable[[ItemT], float],
    best_deviations: float = STANDOUT_BEST,
    window_deviations: float = STANDOUT_WINDOW,
) -> tuple[list[ItemT], Cutoff]:
    """The crowded-cosine rule: median-margin measured in robust deviations of the candidates."""
    scores = [score(item) for item in items]
    median = statistics.median(scores)
    spread = MAD_TO_SIGMA * statistics.median(abs(value - median) for value in scores)
    best = max(scores)
    parameters: dict[str, Any] = {
        "best_deviations": best_deviations,
        "window_deviations": window_deviations,
        "best": best,
        "median": median,
        "spread": spread,
    }
    if spread <= 0.0 or best - median < best_deviations * spread:
        return [], Cutoff("standout", parameters, 0, len(items))
    threshold = best - window_deviations * spread
    parameters["threshold"] = threshold
    kept = [item for item, value in zip(items, scores, strict=True) if value >= threshold]
    return kept, Cutoff("standout", parameters, len(kept), len(items))


def calibrated(
    items: Sequence[ItemT],
    score: Callable[[ItemT], float],
    model: str,
    floor: float,
    window: float = COSINE_WINDOW,
) -> tuple[list[ItemT], Cutoff]:
    """The rule for a model whose cosines are known: at least `floor`, within `window` of the best."""
    parameters: dict[str, Any] = {"model": model, "floor": floor, "window": window}
    scores = [score(item) for item in items]
    if not scores or max(scores) < floor:
        return [], Cutoff("calibrated", parameters, 0, len(items))
    best = max(scores)
    threshold = max(floor, best - window)
    parameters.update(best=best, threshold=threshold)
    kept = [item for item, value in zip(items, scores, strict=True) if value >= threshold]
    return kept, Cutoff("calibrated", parameters, len(kept), len(items))


def cosine_rule(
    items: Sequence[ItemT], score: Callable[[ItemT], float], model: str | None = None
) -> tuple[list[ItemT], Cutoff]:
    """The cosine default: the model's calibrated floor if it has one, else median-margin.

    Scores crowd when the candidates' robust spread is narrower than the fixed
    margin can resolve (best − median under COSINE_MARGIN); then the margin is
    measured in that spread instead (`standout`). Too few candidates keep the fixed rule.
    """
    floor = MODEL_FLOORS.get(model or "")
    if floor is not None:
        return calibrated(items, score, model or "", floor)
    if len(items) < STANDOUT_MINIMUM:
        return median_margin(items, score)
    scores = [score(item) for item in items]
    if max(scores) - statistics.median(scores) >= COSINE_MARGIN:
        return median_margin(items, score)
    return standout(items, score)


@dataclass(frozen=True)
class Meaning:
    """What the meaning arm of a fusion said of one hit: its cosine, and whether the
    arm's own default rule kept it (None: the arm did not hand the hit on)."""

    cosine: float
    kept: bool


def words_or_meaning(
    items: Sequence[ItemT],
    by_words: Callable[[ItemT], bool],
    meaning: Callable[[ItemT], Meaning | None],
    median: float,
    spread: float,
    model: str | None = None,
    window: float = MEANING_WINDOW,
    hub: Callable[[ItemT], float] | None = None,
) -> tuple[list[ItemT], Cutoff]:
    """hybrid's rule: a hit is kept when its meaning stands out, or its words are evidence
    that its meaning does not contradict.

    * meaning: the meaning arm's own rule keeps it, and its cosine is within `window`
      robust spreads (`spread`, over the arm's candidates) of the best cosine. The arm's
      rule says whether anything stands out; the window keeps only what stands out as
      much as the best does, where a fixed window of cosine (0.06) reaches far into
      a crowded model's candidates (e5's spread is about 0.01).
    * words: the bm25 rule keeps it (`by_words`), and its cosine is at least the model's
      calibrated floor (MODEL_FLOORS) or, for a model without one, the arm's median. A hit
      the meaning arm did not hand on is judged by its words alone.

    `hub` (a hit's card's hub prior, hql.index.hubs), for a model with a HUB_FLOORS entry:
    every cosine above is read less its card's prior, and the arm's own rule is the
    calibrated one on those (the best at least the hub floor, a hit within COSINE_WINDOW
    of it and at least the floor); a words hit needs the hub floor. A card near every
    question (a hub) then no longer answers a question the vault cannot, and a note
    found across languages is not held to the floor of a question in its own language.
    """
    hub_floor = HUB_FLOORS.get(model or "") if hub is not None else None
    said = [meaning(item) for item in items]
    if hub_floor is not None and hub is not None:
        said = _hub_corrected(items, said, hub, hub_floor)
        against = hub_floor
    else:
        floor = MODEL_FLOORS.get(model or "")
        against = floor if floor is not None else median
    reach = meaning_reach(said, spread, window)
    kept: list[ItemT] = []
    by_meaning = by_words_only = 0
    for item, found in zip(items, said, strict=True):
        if found is not None and found.kept and found.cosine >= reach:
            by_meaning += 1
            kept.append(item)
        elif by_words(item) and (found is None or found.cosine >= against):
            by_words_only += 1
            kept.append(item)
    if hub_floor is not None:
        need = "cosine less its hub prior >= the hub floor"
    else:
        need = f"cosine >= {'the median' if MODEL_FLOORS.get(model or '') is None else 'the floor'}"
    parameters: dict[str, Any] = {
        "window": window,
        "spread": spread,
        "words_need": need,
        "against": against,
        "by_meaning": by_meaning,
        "by_words": by_words_only,
    }
    if hub_floor is not None:
        parameters["hub_floor"] = hub_floor
    if reach < math.inf:
        parameters["reach"] = reach
    return kept, Cutoff("words-or-meaning", parameters, len(kept), len(items))


def _hub_corrected(
    items: Sequence[ItemT],
    said: Sequence[Meaning | None],
    hub: Callable[[ItemT], float],
    floor: float,
    window: float = COSINE_WINDOW,
) -> list[Meaning | None]:
    """What the meaning arm says of each hit with every cosine less its card's hub prior,
    and the arm's verdicts made again by the calibrated rule on those cosines."""
    corrected = [
        None if found is None else found.cosine - hub(item)
        for item, found in zip(items, said, strict=True)
    ]
    known = [value for value in corrected if value is not None]
    best = max(known, default=-math.inf)
    threshold = max(floor, best - window) if best >= floor else math.inf
    return [None if value is None else Meaning(value, value >= threshold) for value in corrected]


def meaning_reach(
    said: Sequence[Meaning | None], spread: float, window: float = MEANING_WINDOW
) -> float:
    """The lowest cosine `words_or_meaning` keeps by meaning: `window` robust spreads below
    the best cosine the meaning arm's own rule kept (infinite when it kept none)."""
    standing_out = [found.cosine for found in said if found is not None and found.kept]
    return max(standing_out) - window * spread if standing_out else math.inf


def affirmed_text(question: str) -> str:
    """The question without its negated parts: each clause cut at its first negation."""
    from hql.text.folding import negated_clauses

    kept: list[str] = []
    for clause, negated in negated_clauses(question, _CLAUSE, _NEGATION):
        kept.append(clause[:negated] if negated is not None else clause)
    return " ".join(kept)


def evidence_filter(
    items: Sequence[ItemT], matched: Callable[[ItemT], Collection[str]], affirmed: Collection[str]
) -> list[ItemT]:
    """The hits sharing a whole word (not only a prefix) that the question does not negate."""
    return [
        item
        for item in items
        if any(not term.startswith(PREFIX_MARK) and term in affirmed for term in matched(item))
    ]


def corroboration(
    matched: Callable[[ItemT], Collection[str]],
    affirmed: Collection[str],
    vouched: Collection[str] = (),
) -> tuple[Callable[[ItemT], bool], int]:
    """Whether a hit shares enough distinct question words, and how many that is.

    Words are the question's unmarked, affirmed terms (no prefixes, pairs or synonyms);
    a question with fewer than CORROBORATING_TERMS words asks for all of them.
    `vouched`: the question's synonym terms from the vault's own groups. A hit matching
    one is corroborated by it: the vault's author said those words mean the same, which
    is how a note in another language than the question is found by its words.
    """
    words = {term for term in affirmed if ":" not in term}
    needed = max(1, min(CORROBORATING_TERMS, len(words)))
    vouching = frozenset(vouched)

    def corroborated(item: ItemT) -> bool:
        terms = matched(item)
        return len(words.intersection(terms)) >= needed or not vouching.isdisjoint(terms)

    return corroborated, needed


def coverage_threshold(
    bound: float, best: float | None, share: float = BM25_COVERAGE, relative: float = BM25_RELATIVE
) -> float:
    """The score a hit needs to pass `coverage`, given the best score among the hits with
    evidence (None: there are none, and no hit passes)."""
    if best is None:
        return math.inf
    return max(share * bound, relative * best)


def coverage(
    items: Sequence[ItemT],
    score: Callable[[ItemT], float],
    bound: float,
    share: float = BM25_COVERAGE,
    relative: float = BM25_RELATIVE,
    evidence: Callable[[Sequence[ItemT]], list[ItemT]] | None = None,
    corroborated: tuple[Callable[[ItemT], bool], int] | None = None,
    precut: Precut | None = None,
) -> tuple[list[ItemT], Cutoff]:
    """The bm25 rule: keep hits answering `share` of the question and scoring `relative` of the best.

    `evidence`, when given, first drops the hits that carry no evidence of their own;
    `corroborated` (from `corroboration`) then drops kept hits sharing too few question
    words unless they answer CORROBORATED_SHARE of the question.

    `precut`: the items are only those scoring at least `coverage_threshold`, and it says
    how many there were in all. The answer is the same: only those can be kept, and the
    best item, which sets the threshold whenever any item reaches it, is among them.
    """
    parameters: dict[str, Any] = {"coverage": share, "relative": relative, "bound": bound}
    candidates = len(items) if precut is None else precut.candidates
    remaining = len(items) if precut is None else precut.candidates
    if evidence is not None:
        items = evidence(items)
        remaining = len(items) if precut is None else cast(int, precut.evidence)
        parameters["evidence"] = "a whole word the question does not negate"
        parameters["without_evidence"] = candidates - remaining
    if not remaining or bound <= 0.0:
        return [], Cutoff("coverage", parameters, 0, candidates)
    if items:
        threshold = coverage_threshold(bound, max(score(item) for item in items), share, relative)
    else:  # every candidate's score is below the floor, the best one's too
        threshold = share * bound
    kept = [item for item in items if score(item) >= threshold]
    parameters["threshold"] = threshold
    if corroborated is not None:
        is_corroborated, needed = corroborated
        alone = CORROBORATED_SHARE * bound
        passing = [item for item in kept if score(item) >= alone or is_corroborated(item)]
        parameters["corroboration"] = {"words": needed, "or_score": alone}
        parameters["uncorroborated"] = len(kept) - len(passing)
        kept = passing
    return kept, Cutoff("coverage", parameters, len(kept), candidates)


def relevant(
    items: Sequence[ItemT],
    score: Callable[[ItemT], float],
    metric: str,
    minimum: float | None = None,
    bound: float | None = None,
    evidence: Callable[[Sequence[ItemT]], list[ItemT]] | None = None,
    corroborated: tuple[Callable[[ItemT], bool], int] | None = None,
    model: str | None = None,
    precut: Precut | None = None,
) -> tuple[list[ItemT], Cutoff]:
    """`relevant(min = …)` when `minimum` is given, else the default rule of the metric.

    `bound` is required for bm25 (the index's `score_bound(query)`); `evidence`
    (bm25) keeps the hits with evidence of their own (`evidence_filter`), and
    `corroborated` (bm25, from `corroboration`) asks them for several question words;
    `model` (cosine) picks the model's calibrated floor when it has one.
    """
    if minimum is not None:
        return floor(items, score, minimum, precut)
    if metric == "cosine":
        return cosine_rule(items, score, model)
    if metric == "bm25":
        if bound is None:
            raise RelevanceError(messages.search_relevant_needs_bound())
        return coverage(
            items, score, bound, evidence=evidence, corroborated=corroborated, precut=precut
        )
    raise RelevanceError(messages.search_relevant_unknown_metric(metric))
