"""`hql vault doctor`: what a vault's links and titles say about its health.

Four findings, each computed from the loaded vault (no file is read again):

* orphans: notes no note links to and that link to no note (relation cards, which are
  edges themselves, are not orphans);
* dead links: links that name no note (as written, per linking note);
* fragile links: links that find their note only case-insensitively, or only by one of
  its aliases (Obsidian finds them; a case-sensitive file system, a publishing tool or
  the reference dialect may not);
* near-duplicate titles: titles equal once case, accents, spacing and punctuation are
  set aside, or one letter apart (titles that differ only in a digit, such as daily
  notes, are not near-duplicates; an unfilled template's `{{title}}` is left out).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hql.vault import links
from hql.vault.model import RELATION_CARD

CASE = "case"
ALIAS = "alias"
# Titles shorter than this (once normalised) are never near-duplicates by one letter.
MIN_FUZZY_LENGTH = 5


@dataclass(frozen=True)
class Link:
    source: str  # the linking note's name
    written: str  # the target as the note writes it
    found: str | None = None  # the note it finds (None for a dead link)


@dataclass
class Diagnosis:
    cards: int
    orphans: list[str] = field(default_factory=list)
    dead: list[Link] = field(default_factory=list)
    by_case: list[Link] = field(default_factory=list)
    by_alias: list[Link] = field(default_factory=list)
    near_duplicates: list[list[tuple[str, str]]] = field(default_factory=list)  # (name, title)

    def to_json(self) -> dict[str, Any]:
        def link(item: Link) -> dict[str, Any]:
            shown: dict[str, Any] = {"source": item.source, "written": item.written}
            if item.found is not None:
                shown["found"] = item.found
            return shown

        return {
            "cards": self.cards,
            "orphans": self.orphans,
            "dead_links": [link(item) for item in self.dead],
            "case_links": [link(item) for item in self.by_case],
            "alias_links": [link(item) for item in self.by_alias],
            "near_duplicate_titles": [
                [{"card": name, "title": title} for name, title in group]
                for group in self.near_duplicates
            ],
        }


def diagnose(vault: Any) -> Diagnosis:
    """The four findings for a loaded vault, each in name order."""
    cards = sorted(vault.cards, key=lambda card: card.name)
    diagnosis = Diagnosis(len(cards))
    if not cards:
        return diagnosis
    table = cards[0]._table
    resolved = table.resolved() if table is not None else {}
    by_name = {card.name: card for card in cards}
    obsidian = vault.dialect == links.OBSIDIAN
    for card in cards:
        # A relation card is an edge itself: its links are its endpoints, not its text's.
        if not card.inlinks and not card.outlinks and card.kind != RELATION_CARD:
            diagnosis.orphans.append(card.name)
        for (written, _), (target, _, ok) in zip(
            card.raw_links, resolved.get(card.name, ()), strict=False
        ):
            if not written:  # `[[#Heading]]`: the note itself
                continue
            if not ok:
                diagnosis.dead.append(Link(card.name, written))
            elif obsidian and target != card.name:
                how = _how_found(written, card.relpath, by_name[target])
                if how == CASE:
                    diagnosis.by_case.append(Link(card.name, written, target))
                elif how == ALIAS:
                    diagnosis.by_alias.append(Link(card.name, written, target))
    diagnosis.dead = _unique(diagnosis.dead)
    diagnosis.by_case = _unique(diagnosis.by_case)
    diagnosis.by_alias = _unique(diagnosis.by_alias)
    diagnosis.near_duplicates = near_duplicate_titles((card.name, card.title) for card in cards)
    return diagnosis


def _how_found(written: str, from_relpath: str, card: Any) -> str | None:
    """None when `written` names `card` by its name, path or file name exactly; CASE when
    only case-insensitively; ALIAS when by neither (the resolver found it by an alias)."""
    if _names(written, from_relpath, card, fold=False):
        return None
    if _names(written, from_relpath, card, fold=True):
        return CASE
    return ALIAS


def _names(written: str, from_relpath: str, card: Any, fold: bool) -> bool:
    def same(text: str) -> str:
        return text.casefold() if fold else text

    wanted = links.strip_note_suffix(written.strip().lstrip("/"))
    if wanted.startswith(("./", "../")):
        folder = from_relpath.rsplit("/", 1)[0] if "/" in from_relpath else ""
        wanted = links._normalise(f"{folder}/{wanted}" if folder else wanted) or wanted
    wanted = same(wanted)
    path = same(links.strip_note_suffix(card.relpath))
    stem = path.rsplit("/", 1)[-1]
    return wanted in (same(card.name), stem, path) or path.endswith("/" + wanted)


def _unique(items: list[Link]) -> list[Link]:
    return list(dict.fromkeys(items))


def title_key(title: str) -> str:
    """A title with case, accents, spacing and punctuation set aside."""
    decomposed = unicodedata.normalize("NFKD", title.casefold())
    return "".join(char for char in decomposed if char.isalnum())


def near_duplicate_titles(cards: Iterable[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Groups of (name, title) whose titles are near-duplicates, each group in name order."""
    # An unfilled template's title (`{{title}}`) is the template's, not a note's.
    entries = [(name, title, title_key(title)) for name, title in cards if "{{" not in title]
    entries = [entry for entry in entries if entry[2]]
    parent = list(range(len(entries)))

    def root(at: int) -> int:
        while parent[at] != at:
            parent[at] = parent[parent[at]]
            at = parent[at]
        return at

    def join(a: int, b: int) -> None:
        parent[root(a)] = root(b)

    # One letter apart: two keys share a key with one letter left out (or are equal).
    by_variant: dict[str, list[int]] = {}
    for at, (_, _, key) in enumerate(entries):
        variants = {key}
        if len(key) >= MIN_FUZZY_LENGTH:
            variants |= {key[:cut] + key[cut + 1 :] for cut in range(len(key))}
        for variant in variants:
            by_variant.setdefault(variant, []).append(at)
    for group in by_variant.values():
        for place, first in enumerate(group):
            for other in group[place + 1 :]:
                if root(first) != root(other) and _near(entries[first][2], entries[other][2]):
                    join(first, other)
    groups: dict[int, list[tuple[str, str]]] = {}
    for at, (name, title, _) in enumerate(entries):
        groups.setdefault(root(at), []).append((name, title))
    found = [sorted(group) for group in groups.values() if len(group) > 1]
    return sorted(found)


def _near(a: str, b: str) -> bool:
    """Equal keys, or keys one letter apart where that letter is not a digit."""
    if a == b:
        return True
    if min(len(a), len(b)) < MIN_FUZZY_LENGTH:
        return False
    return all(not char.isdigit() for char in _difference(a, b))


def _difference(a: str, b: str) -> Sequence[str]:
    """The letters by which two keys at most one edit apart differ."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    return a[start:end_a] + b[start:end_b]
