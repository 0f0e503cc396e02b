"""`hql memory suggest`: cards often retrieved together, proposed as relation cards (memory.md §5).

The retrieval log (`[log] retrieval = true`, hql.context.log) keeps, for every
context block, the names of the cards it selected. Two cards selected in the same
block at least `minimum` times are a proposal: a relation card between them
(`knowledge.type: Relation`, `source` and `target` the two names in name order,
since being retrieved together has no direction), with how often they were
retrieved together, in how many blocks each was, and the share of the blocks of
either that held both (Jaccard), and whether either card already links to the
other. Pairs already joined by a relation card, pairs with a relation card in
them (a relation card is an edge, not a concept to relate), and names that are
no longer cards of this vault (or that belong to another library) are left out
and counted.

Nothing is written unless the caller says so (`write`): a proposal is a score, and
a score proposes; it never decides. A written proposal is a new note through
`hql.notes` (the `[memory] folder`; refused, and said so, when the name is taken).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hql import messages

if TYPE_CHECKING:
    from hql.notes.writer import Notes

DEFAULT_MINIMUM = 3
DEFAULT_LIMIT = 20


@dataclass(frozen=True)
class Proposal:
    source: str
    target: str
    together: int  # blocks that selected both
    blocks: tuple[int, int]  # blocks that selected each
    title: str
    linked: bool = False  # one of the two links to the other already

    @property
    def share(self) -> float:
        union = self.blocks[0] + self.blocks[1] - self.together
        return self.together / union if union else 0.0

    def properties(self) -> dict[str, Any]:
        return {
            "knowledge": {
                "type": "Relation",
                "relation": {"source": self.source, "target": self.target},
            }
        }

    def text(self) -> str:
        return messages.suggest_card_text(self.source, self.target, self.together, self.blocks)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "title": self.title,
            "together": self.together,
            "blocks": list(self.blocks),
            "share": round(self.share, 4),
            "linked": self.linked,
        }


@dataclass
class Suggestions:
    proposals: list[Proposal]
    blocks: int  # blocks read from the log
    related: int  # pairs left out: a relation card joins them already
    elsewhere: int  # pairs left out: a name that is no card of this vault
    edges: int = 0  # pairs left out: one of them is a relation card

    def to_json(self) -> dict[str, Any]:
        return {
            "blocks": self.blocks,
            "proposals": [proposal.to_json() for proposal in self.proposals],
            "left_out": {
                "related": self.related,
                "not_in_vault": self.elsewhere,
                "relation_cards": self.edges,
            },
        }


def co_retrieved(
    selections: Iterable[Sequence[str]],
) -> tuple[Counter[tuple[str, str]], Counter[str]]:
    """How many blocks selected each pair of names (in name order), and each name."""
    pairs: Counter[tuple[str, str]] = Counter()
    alone: Counter[str] = Counter()
    for selected in selections:
        names = sorted(set(selected))
        alone.update(names)
        pairs.update(itertools.combinations(names, 2))
    return pairs, alone


def suggest(
    vault: Any,
    entries: Sequence[Mapping[str, Any]],
    minimum: int = DEFAULT_MINIMUM,
    limit: int | None = DEFAULT_LIMIT,
) -> Suggestions:
    """The proposals the log's `entries` (hql.context.log.read_entries) support."""
    from hql.notes.recall import relation_ends
    from hql.notes.writer import file_stem

    selections = [
        [name for name in entry.get("selected", []) if isinstance(name, str)] for entry in entries
    ]
    pairs, alone = co_retrieved(selections)
    joined = set()
    for card in vault.cards:
        ends = relation_ends(card)
        if len(ends) == 2:
            joined.add(tuple(sorted(ends)))
    proposals: list[Proposal] = []
    related = elsewhere = edges = 0
    ranked = sorted(pairs.items(), key=lambda item: (-item[1], item[0]))
    for (first, second), together in ranked:
        if together < minimum:
            break
        one, other = vault.card(first), vault.card(second)
        if one is None or other is None:
            elsewhere += 1
            continue
        if "RelationCard" in (one.kind, other.kind):
            edges += 1
            continue
        if (first, second) in joined:
            related += 1
            continue
        title = file_stem(messages.suggest_card_title(first, second))
        linked = second in one.outlinks or first in other.outlinks
        blocks = (alone[first], alone[second])
        proposals.append(Proposal(first, second, together, blocks, title, linked))
    proposals.sort(key=lambda p: (-p.together, -p.share, p.source, p.target))
    if limit is not None:
        proposals = proposals[:limit]
    return Suggestions(proposals, len(entries), related, elsewhere, edges)


def write(
    notes: Notes, proposals: Sequence[Proposal], *, dry_run: bool = False
) -> list[dict[str, Any]]:
    """Each proposal written as a relation card (or its diff, with `dry_run`); a refused one
    (its name taken, …) is answered as refused and the others still written."""
    from hql.notes.writer import NoteRefused

    answers = []
    for proposal in proposals:
        try:
            written = notes.new(
                proposal.title, proposal.text(), properties=proposal.properties(), dry_run=dry_run
            )
            answers.append({**written.to_json(), "proposal": proposal.to_json()})
        except NoteRefused as refusal:
            answers.append({**refusal.to_json(), "proposal": proposal.to_json()})
    return answers
