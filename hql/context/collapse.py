"""Near-duplicates in a ranking merged into one hit each (`collapse`).

Hits are grouped in rank order, each against the first member of every group
so far (a group's seed), so a chain of small edits never merges two texts that
are not alike themselves. A group shows one hit, its representative, chosen as
memory.md §3 says: a project's card over a library's, a `must` card over the
others, then the higher score (then the earlier rank). The group keeps the
place of its best-placed member, so hiding a repeat never moves a lesson down;
the representative keeps its own score and says in its detail which cards it
stands for (`collapsed`) and how alike each was (`collapse`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hql.context.similarity import (
    DEFAULT_THRESHOLD,
    METHOD_COSINE,
    METHOD_SHINGLES,
    Likeness,
    card_shingles,
    likeness,
    shingle_likeness,
)
from hql.record import record
from hql.values import Hit

DEFAULT_COSINE_THRESHOLD = 0.95
PROJECT_SCOPE = "project"

# A card's vector when it has one (its semantic index entry, fresh), else None.
VectorOf = Callable[[Any], Sequence[float] | None]


@record
class Group:
    """Hits found alike: `members` in rank order, each with how alike it is to the seed."""

    members: list[tuple[Hit, Likeness | None]]

    @property
    def seed(self) -> Hit:
        return self.members[0][0]


def scope_of(card: Any) -> str:
    """`project` for the vault's own cards, a library's scope (`global`, …) for its cards."""
    return str(getattr(card, "scope", None) or PROJECT_SCOPE)


def priority_of(hit: Hit) -> str:
    """The hit's `priority` (`must`, `should`, `may`): as a prompt ranking recorded it (through
    the vault's `[context.fields]`), else the card's front matter; `should` when unsaid."""
    # A plain detail only: a lazy one (bm25's matched terms) is worked out when read.
    value = hit.detail.get("priority") if isinstance(hit.detail, dict) else None
    if value is None and isinstance(hit.card.metadata, dict):
        value = hit.card.metadata.get("priority")
    return value if value in ("must", "should", "may") else "should"


def representative_key(
    hit: Hit, rank: int, priority: Callable[[Hit], str] = priority_of
) -> tuple[int, int, float, int]:
    """Smaller is preferred: project over library, must over others, higher score, earlier."""
    return (
        0 if scope_of(hit.card) == PROJECT_SCOPE else 1,
        0 if priority(hit) == "must" else 1,
        -hit.score,
        rank,
    )


def group_hits(
    hits: Sequence[Hit], threshold: float | None, vector_of: VectorOf | None = None
) -> list[Group]:
    """The hits grouped with their near-duplicates, groups in the rank order of their seeds."""
    if vector_of is None:
        return _grouped_by_shingles(hits, threshold)
    groups: list[Group] = []
    vectors = [vector_of(hit.card) if vector_of is not None else None for hit in hits]
    seeds: list[int] = []
    for index, hit in enumerate(hits):
        for group, seed in zip(groups, seeds, strict=True):
            measured = _alike(hit, hits[seed], vectors[index], vectors[seed])
            if measured.score >= _threshold(threshold, measured.method):
                group.members.append((hit, measured))
                break
        else:
            groups.append(Group([(hit, None)]))
            seeds.append(index)
    return groups


def _grouped_by_shingles(hits: Sequence[Hit], threshold: float | None) -> list[Group]:
    """`group_hits` without vectors: each hit's shingles are met against all the seeds' at
    once (the few it shares with any seed, then those per seed), not seed by seed."""
    floor = _threshold(threshold, METHOD_SHINGLES)
    groups: list[Group] = []
    seeds: list[frozenset[int]] = []
    held: set[int] = set()  # every seed's shingles
    for hit in hits:
        own = card_shingles(hit.card)
        common = own & held
        for group, seed in zip(groups, seeds, strict=True):
            shared = len(common & seed) if common else 0
            if not shared and floor > 0.0:
                continue  # nothing shared scores 0
            measured = shingle_likeness(len(own), len(seed), shared)
            if measured.score >= floor:
                group.members.append((hit, measured))
                break
        else:
            groups.append(Group([(hit, None)]))
            seeds.append(own)
            held |= own
    return groups


def _alike(a: Hit, b: Hit, a_vector: Any, b_vector: Any) -> Likeness:
    if a_vector is not None and b_vector is not None:
        return likeness(frozenset(), frozenset(), (a_vector, b_vector))
    return likeness(card_shingles(a.card), card_shingles(b.card))


def _threshold(threshold: float | None, method: str) -> float:
    if threshold is not None:
        return threshold
    return DEFAULT_COSINE_THRESHOLD if method == METHOD_COSINE else DEFAULT_THRESHOLD


def collapsed_hits(
    hits: Sequence[Hit],
    threshold: float | None,
    vector_of: VectorOf | None = None,
    priority: Callable[[Hit], str] = priority_of,
) -> tuple[list[Hit], dict[str, Any]]:
    """The ranking's hits with every near-duplicate hidden behind its representative, and the
    record of what was merged (for the ranking's retrieval)."""
    ranks = {id(hit): rank for rank, hit in enumerate(hits)}
    kept: list[Hit] = []
    merged: list[dict[str, Any]] = []
    methods: set[str] = set()
    for group in group_hits(hits, threshold, vector_of):
        if len(group.members) == 1:
            kept.append(group.seed)
            continue
        chosen = min(
            (hit for hit, _ in group.members),
            key=lambda hit: representative_key(hit, ranks[id(hit)], priority),
        )
        alike = {hit.card.name: measured for hit, measured in group.members}
        others = [hit for hit, _ in group.members if hit is not chosen]
        seed_name = group.seed.card.name
        record_of = {
            hit.card.name: _likeness_json(alike[hit.card.name], seed_name) for hit in others
        }
        methods.update(m.method for m in alike.values() if m is not None)
        detail = {
            **dict(chosen.detail or {}),
            "collapsed": [hit.card.name for hit in others],
            "collapse": {
                "representative": _why_representative(chosen, group.seed, priority),
                "alike": record_of,
            },
        }
        kept.append(Hit(chosen.card, chosen.score, chosen.retrieval, detail))
        merged.append({"kept": chosen.card.name, "hidden": [hit.card.name for hit in others]})
    summary = {
        "threshold": threshold
        if threshold is not None
        else {METHOD_SHINGLES: DEFAULT_THRESHOLD, METHOD_COSINE: DEFAULT_COSINE_THRESHOLD},
        "methods": sorted(methods) or [METHOD_SHINGLES],
        "groups": merged,
        "hidden": sum(len(group["hidden"]) for group in merged),
    }
    return kept, summary


def _likeness_json(measured: Likeness | None, seed: str) -> dict[str, Any]:
    if measured is None:  # the seed itself, when another member represents the group
        return {"to": seed, "score": 1.0, "why": "the group's first card"}
    return {"to": seed, "score": round(measured.score, 4), "why": measured.why()}


def _why_representative(chosen: Hit, seed: Hit, priority: Callable[[Hit], str]) -> str:
    from hql import messages

    if chosen is seed:
        return messages.collapse_kept_best_ranked()
    if scope_of(chosen.card) == PROJECT_SCOPE and scope_of(seed.card) != PROJECT_SCOPE:
        return messages.collapse_kept_project()
    if priority(chosen) == "must" and priority(seed) != "must":
        return messages.collapse_kept_must()
    return messages.collapse_kept_higher_score()


def describe(detail: Mapping[str, Any]) -> str:
    """One line for explain: what this hit stands for and why it was kept."""
    from hql import messages

    collapse = detail.get("collapse", {})
    alike = collapse.get("alike", {})
    parts = [f"{name} ({item.get('why')})" for name, item in alike.items()]
    return messages.collapse_explained(", ".join(parts), str(collapse.get("representative", "")))
