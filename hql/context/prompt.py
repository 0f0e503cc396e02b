"""Ranking cards for a prompt: query variants fused by reciprocal rank, gates, evidence.

A long prompt holds several tasks; one BM25 query of the whole text lets the longest
task drown the others. The prompt is ranked as several queries (variants): the whole
prompt, each of its segments, and its technical tokens (commands, paths, symbols). The
variants' rankings are fused by reciprocal rank (k = 60), each candidate's evidence is
worked out from the prompt and the card alone, the gates (status, `ignore_when`) take
out the cards that must not be recalled, and the rest are ordered: a `must` card with
enough evidence first, then by evidence, then by the fused rank.

The ranking's hits score their evidence (0-100); each hit's detail holds the evidence
tree, the fused score and its rank in every variant, and the Retrieval lists the
variants, the fusion rule and every rejected candidate with its gate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hql.context.envelope import Envelope, read_envelope
from hql.context.evidence import DEFAULT_EVIDENCE, Evidence, PromptView, evidence
from hql.context.fields import RecallFields, field_mapping, recall_fields
from hql.values import Hit, Ranking, Retrieval

MODEL = "hql.prompt.v1"
METRIC = "evidence"
FUSION_K = 60
# A prompt of many lines is ranked as at most this many runs of neighbouring segments.
MAX_SEGMENTS = 8
# How many hits each variant contributes to the fusion, beside the limit asked for.
VARIANT_DEPTH = 64
# How many of the fused candidates have their evidence worked out (the best by fused rank).
EVIDENCE_DEPTH = 60


def variants_of(prompt: str, envelope: Envelope) -> list[tuple[str, str]]:
    """(name, query) per variant: the prompt, its segments (when several), its technical tokens."""
    variants = [("prompt", prompt)]
    segments = list(envelope.segments)
    if len(segments) > 1:
        variants += _segment_variants(segments)
    technical = envelope.technical
    if technical:
        variants.append(("technical", " ".join(technical)))
    return variants


def _segment_variants(segments: Sequence[str]) -> list[tuple[str, str]]:
    """A variant per segment; a prompt of more than MAX_SEGMENTS segments is ranked as that
    many runs of neighbouring segments (named by their numbers, `segment 3-5`)."""
    if len(segments) <= MAX_SEGMENTS:
        return [(f"segment {i}", text) for i, text in enumerate(segments, start=1)]
    made = []
    for group in range(MAX_SEGMENTS):
        first = group * len(segments) // MAX_SEGMENTS
        last = (group + 1) * len(segments) // MAX_SEGMENTS
        name = f"segment {first + 1}-{last}" if last - first > 1 else f"segment {first + 1}"
        made.append((name, "\n".join(segments[first:last])))
    return made


def mapping_for(vault: Any) -> dict[str, tuple[str, ...]]:
    """The `[context.fields]` mapping of a vault (the defaults without one)."""
    section = vault.config.section("context").get("fields") if vault is not None else None
    return field_mapping(section)[0]


def rank_prompt(
    cards: Sequence[Any],
    prompt: str,
    *,
    vault: Any,
    limit: int | None = 50,
    statuses: Iterable[str] = ("active",),
    threshold: int = DEFAULT_EVIDENCE,
    index: Any = None,
    warn: Any = None,
) -> Ranking:
    """The cards a prompt calls for, best first (see the module's docstring).

    `statuses`: the recall statuses a card may have to be kept (`active` alone by default;
    `superseded` is derived by hql.notes when it is present). `threshold` only orders:
    a `must` card at or above it comes first; keeping is `relevant`'s decision.
    `index` is the BM25 index to use (the vault's, shared, when None); `warn` receives
    the index's warnings.
    """
    from hql.search.shared import analyzer_for, bm25_index

    if index is None:
        index, warnings = bm25_index(vault, cards)
        for message in warnings:
            if warn is not None:
                warn(message)
    whole = vault is None or vault.holds_all(cards)
    among = None if whole else cards
    analyzer = analyzer_for(vault) if vault is not None else index.analyzer
    envelope = read_envelope(prompt, analyzer)
    variants = variants_of(prompt, envelope)
    depth = max(VARIANT_DEPTH, (limit or 0) * 2)
    keep = max(EVIDENCE_DEPTH, limit or 0)
    # The segment variants hold every segment: the whole prompt scores as their sum.
    whole_is_sum = len(envelope.segments) > 1
    fused, places, counts, considered = _fused(index, variants, depth, among, keep, whole_is_sum)
    view = PromptView(prompt, analyzer, envelope)
    mapping = mapping_for(vault)
    allowed = tuple(statuses)
    status_of = status_hook()
    kept: list[tuple[Any, Evidence, RecallFields, Any]] = []
    rejected: list[dict[str, Any]] = []
    for card, fused_score in fused:
        fields = recall_fields(card, mapping)
        if status_of is not None:
            derived = status_of(card, vault)
            if derived != fields.status and derived in ("superseded", "archived", "draft"):
                fields = _with_status(fields, derived)
        found = evidence(view, card, fields, allowed)
        if found.gate is not None:
            rejected.append({"card": card.name, "gate": found.gate, "evidence": found.score})
            continue
        kept.append((card, found, fields, fused_score))
    # Evidence first (a `must` card with evidence has its priority points), then the
    # fused rank among equals.
    kept.sort(key=lambda entry: (-entry[1].score, -entry[3], entry[0].name))
    if limit is not None:
        kept = kept[:limit]
    where = str(vault.state_dir) if vault is not None else ""
    extra: dict[str, Any] = {
        "envelope": envelope.to_json(),
        "variants": [
            {"name": name, "query": query, "hits": ranked}
            for (name, query), ranked in zip(variants, counts, strict=True)
        ],
        "fusion": {"rule": "rrf", "k": FUSION_K},
        "statuses": list(allowed),
        "candidates": considered,
        "evaluated": len(fused),
        "rejected": rejected,
    }
    retrieval = Retrieval(prompt, where, MODEL, index.revision, METRIC, False, extra)
    hits = tuple(
        Hit(
            card,
            float(found.score),
            retrieval,
            {
                "evidence": found.as_tree(),
                "priority": fields.priority,
                "fused": fused_score,
                "variants": places[id(card)],
            },
        )
        for card, found, fields, fused_score in kept
    )
    return Ranking(hits, retrieval)


def _fused(
    index: Any,
    variants: Sequence[tuple[str, str]],
    depth: int,
    among: Any,
    keep: int,
    whole_is_sum: bool,
) -> tuple[list[tuple[Any, float]], dict[int, list[dict[str, Any] | None]], list[int], int]:
    """Reciprocal rank fusion of the variants' best `depth` cards: the best `keep` (and any
    tied with the last) as (card, fused score), best first, ties by name; each one's place
    in every variant (by `id(card)`); how many cards each variant ranked; how many cards
    the fusion held. Worked out on positions: no card is made that is not kept."""
    import numpy as np

    fused = np.zeros(len(index.cards), dtype=np.float64)
    named = [(name, query) for name, query in variants if name != "prompt"]
    many = index.scores_of_many([query for _, query in named], among)
    scored = {name: scores for (name, _), scores in zip(named, many, strict=True)}
    segments = [scores for name, scores in scored.items() if name.startswith("segment")]
    if segments and whole_is_sum:
        # BM25 is a sum over the query's terms, so the whole prompt scores as the sum of
        # its segments (terms that span two segments, such as a CJK bigram, aside).
        present = [scores for scores in segments if scores is not None]
        scored["prompt"] = np.sum(present, axis=0) if present else None
    else:
        scored["prompt"] = index.scores(variants[0][1], among)
    ranked = [index.best(scored[name], depth) for name, _ in variants]
    for positions, _ in ranked:
        fused[positions] += 1.0 / (FUSION_K + np.arange(1, len(positions) + 1))
    candidates = np.flatnonzero(fused)
    if len(candidates) > keep:  # only these cards are made (a lazy vault builds them now)
        floor = np.partition(fused[candidates], len(candidates) - keep)[len(candidates) - keep]
        candidates = candidates[fused[candidates] >= floor]
    cards = index.cards
    prefetch = getattr(cards, "prefetch", None)
    if prefetch is not None:
        prefetch(candidates.tolist())
    chosen = {int(at): cards[int(at)] for at in candidates}
    places: dict[int, list[dict[str, Any] | None]] = {
        id(card): [None] * len(variants) for card in chosen.values()
    }
    for which, (positions, scores) in enumerate(ranked):
        for rank, (at, score) in enumerate(zip(positions.tolist(), scores.tolist(), strict=True)):
            if at in chosen:
                places[id(chosen[at])][which] = {"rank": rank + 1, "score": score}
    order = sorted(chosen, key=lambda at: (-fused[at], chosen[at].name))
    return (
        [(chosen[at], float(fused[at])) for at in order],
        places,
        [len(positions) for positions, _ in ranked],
        int(np.count_nonzero(fused)),
    )


def _with_status(fields: RecallFields, status: str) -> RecallFields:
    from hql.record import replace

    return replace(fields, status=status)


def status_hook() -> Any:
    """hql.notes' `status_of(card, vault)` when it is present (it derives `superseded`)."""
    import importlib

    try:
        notes = importlib.import_module("hql.notes")
    except ImportError:
        return None
    return getattr(notes, "status_of", None)


def evidence_for_query(query: str, vault: Any) -> Any:
    """A function giving each card's evidence for `query` (active and draft cards pass the
    status gate: a ranking's own step chose them)."""
    from hql.search.shared import analyzer_for

    made: list[tuple[PromptView, Any]] = []

    def measured(card: Any) -> Evidence:
        if not made:  # most rankings carry their evidence: read the query only when asked
            made.append((PromptView(query, analyzer_for(vault)), mapping_for(vault)))
        view, mapping = made[0]
        return evidence(view, card, recall_fields(card, mapping), STATUSES_ANY)

    return measured


STATUSES_ANY = ("active", "draft", "archived", "superseded")


__all__ = ["FUSION_K", "METRIC", "MODEL", "evidence_for_query", "rank_prompt", "variants_of"]
