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
# A prompt of many lines is ranked as at most this many segments (the longest kept).
MAX_SEGMENTS = 12
# How many hits each variant contributes to the fusion, beside the limit asked for.
VARIANT_DEPTH = 64


def variants_of(prompt: str, envelope: Envelope) -> list[tuple[str, str]]:
    """(name, query) per variant: the prompt, its segments (when several), its technical tokens."""
    variants = [("prompt", prompt)]
    segments = list(envelope.segments)
    if len(segments) > 1:
        if len(segments) > MAX_SEGMENTS:
            longest = sorted(range(len(segments)), key=lambda i: -len(segments[i]))
            keep = sorted(longest[:MAX_SEGMENTS])
            segments = [segments[i] for i in keep]
        variants += [(f"segment {i}", text) for i, text in enumerate(segments, start=1)]
    technical = envelope.technical
    if technical:
        variants.append(("technical", " ".join(technical)))
    return variants


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
    from hql.search.fusion import fuse
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
    rankings = [
        [(hit.card, hit.score) for hit in index.search(query, depth, among=among)]
        for _, query in variants
    ]
    fused = fuse(rankings, FUSION_K, name=lambda card: card.name)
    view = PromptView(prompt, analyzer, envelope)
    mapping = mapping_for(vault)
    allowed = tuple(statuses)
    status_of = _status_hook(vault)
    kept: list[tuple[Any, Evidence, RecallFields, Any]] = []
    rejected: list[dict[str, Any]] = []
    for item in fused:
        card = item.key
        fields = recall_fields(card, mapping)
        if status_of is not None:
            derived = status_of(card, vault)
            if derived != fields.status and derived in ("superseded", "archived", "draft"):
                fields = _with_status(fields, derived)
        found = evidence(view, card, fields, allowed)
        if found.gate is not None:
            rejected.append({"card": card.name, "gate": found.gate, "evidence": found.score})
            continue
        kept.append((card, found, fields, item))
    # Evidence first (a `must` card with evidence has its priority points), then the
    # fused rank among equals.
    kept.sort(key=lambda entry: (-entry[1].score, -entry[3].score, entry[0].name))
    if limit is not None:
        kept = kept[:limit]
    where = str(vault.state_dir) if vault is not None else ""
    extra: dict[str, Any] = {
        "envelope": envelope.to_json(),
        "variants": [
            {"name": name, "query": query, "hits": len(ranked)}
            for (name, query), ranked in zip(variants, rankings, strict=True)
        ],
        "fusion": {"rule": "rrf", "k": FUSION_K},
        "statuses": list(allowed),
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
                "fused": item.score,
                "variants": [
                    None if place is None else {"rank": place.rank, "score": place.score}
                    for place in item.inputs
                ],
            },
        )
        for card, found, fields, item in kept
    )
    return Ranking(hits, retrieval)


def _with_status(fields: RecallFields, status: str) -> RecallFields:
    from hql.record import replace

    return replace(fields, status=status)


def _status_hook(vault: Any) -> Any:
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

    view = PromptView(query, analyzer_for(vault))
    mapping = mapping_for(vault)

    def measured(card: Any) -> Evidence:
        return evidence(view, card, recall_fields(card, mapping), STATUSES_ANY)

    return measured


STATUSES_ANY = ("active", "draft", "archived", "superseded")


__all__ = ["FUSION_K", "METRIC", "MODEL", "evidence_for_query", "rank_prompt", "variants_of"]
