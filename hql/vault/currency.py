"""Which notes are current (memory.md §5): `supersedes`, `valid_from`, `valid_to`.

A note that writes `supersedes: "[[old]]"` (or a list of such links, or plain
names) makes `old` superseded from the day it holds: its `valid_from`, else its
`created`, else always. A note whose own `valid_to` has passed is superseded
too (by time). A note whose `valid_from` is still to come is `pending`. Otherwise
a note's status is its own front matter's `status` (`archived`, `draft`,
`active`), `active` when it writes none.

Everything is read from the cards alone; the map of who supersedes whom is
built once per loaded vault (on its link table) and links resolve as a
program's `[[name]]` does.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

SUPERSEDES = "supersedes"
STATUSES = ("active", "draft", "archived", "superseded", "pending")
_LINK = re.compile(r"\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]")
_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def supersedes_of(card: Any) -> list[str]:
    """The names the card's `supersedes` writes, in order, as written."""
    value = card.metadata.get(SUPERSEDES) if isinstance(card.metadata, dict) else None
    return list(_targets(value))


def _targets(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        links = _LINK.findall(value)
        if links:
            yield from (link.strip() for link in links)
        elif value.strip():
            yield value.strip()
    elif isinstance(value, list):  # `supersedes: [[old]]` unquoted is a list in a list
        for item in value:
            yield from _targets(item)


def day_of(value: Any) -> datetime.date | None:
    """A front-matter date (`2024-05-01`, or text starting with one) as a date."""
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str):
        found = _DAY.match(value.strip())
        if found:
            try:
                return datetime.date(*(int(part) for part in found.groups()))
            except ValueError:
                return None
    return None


def starts(card: Any) -> datetime.date | None:
    """From when the note holds: its `valid_from`, else its `created`, else None (always)."""
    metadata = card.metadata if isinstance(card.metadata, dict) else {}
    return day_of(metadata.get("valid_from")) or day_of(metadata.get("created"))


def ends(card: Any) -> datetime.date | None:
    metadata = card.metadata if isinstance(card.metadata, dict) else {}
    return day_of(metadata.get("valid_to"))


# Per superseded card name: (the name of a card superseding it, the day that card holds
# from or None), one per such card, by name.
Superseding = dict[str, tuple[tuple[str, datetime.date | None], ...]]


def superseding(table: Any) -> Superseding:
    """Who supersedes whom among a link table's cards, worked out once per table (a table of
    cards built alone asks the catalogue first: see hql.vault.lazy.DeferredTable)."""
    found = getattr(table, "_superseding", None)
    if found is None:
        stored = getattr(table, "stored_superseding", None)
        found = stored() if stored is not None else None
        if found is None:
            found = superseding_of(table.cards, table.resolve_reference)
        table._superseding = found
    return cast(Superseding, found)


def superseding_of(cards: Iterable[Any], resolve: Callable[[str], str | None]) -> Superseding:
    """`superseding` worked out from every card (`resolve` reads a target as a link does)."""
    building: dict[str, dict[str, datetime.date | None]] = {}
    for card in cards:
        for target in supersedes_of(card):
            resolved = resolve(target)
            if resolved is not None and resolved != card.name:
                building.setdefault(resolved, {})[card.name] = starts(card)
    return {name: tuple(sorted(newer.items())) for name, newer in building.items()}


def superseded_by(card: Any) -> list[str]:
    table = card._table
    if table is None:
        return []
    return [name for name, _ in superseding(table).get(card.name, ())]


def status(card: Any, on: datetime.date | None = None) -> str:
    """The card's status on the day `on` (default today, UTC)."""
    day = on or datetime.datetime.now(datetime.UTC).date()
    metadata = card.metadata if isinstance(card.metadata, dict) else {}
    own = metadata.get("status")
    own = own.strip().lower() if isinstance(own, str) else None
    if own == "archived":
        return "archived"
    began = starts(card)
    if began is not None and began > day:
        return "pending"
    ended = ends(card)
    if ended is not None and ended < day:
        return "superseded"
    table = card._table
    if table is not None:
        for _, newer_start in superseding(table).get(card.name, ()):
            if newer_start is None or newer_start <= day:
                return "superseded"
    return own if own in ("draft", "active", "superseded") else "active"
