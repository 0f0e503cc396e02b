"""Read documents to cards and edges: names, titles, derived entries, kinds (§9.1–§9.4).

Everything here depends on the whole vault (a name depends on other stems, a
kind on other names), so it runs on every load; the per-file work before it
is what the cache saves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Mapping
from typing import Any

from hql import messages
from hql.vault.loader import FoundFile, ReadDocument
from hql.vault.model import CONCEPT_CARD, RELATION_CARD, Card, Edge, LoadWarning
from hql.vault.walk import OBSIDIAN, REFERENCE


def assign_names(
    found: list[FoundFile], warnings: list[LoadWarning], dialect: str = REFERENCE
) -> dict[str, str]:
    """Name per relpath: the stem, or the relative path without extension when stems clash.

    Every discovered file counts, even one that then fails to load, as in the
    reference: a card's name does not change because a neighbour is broken.
    An Obsidian vault names clashes as `links.clash_names` says.
    """
    if dialect == OBSIDIAN:
        # The link grammar costs milliseconds to import; a card built alone never needs it.
        from hql.vault import links

        return links.clash_names([item.relpath for item in found])
    stems = [_stem(item.relpath) for item in found]
    counts = Counter(stems)
    names = [
        _without_extension(item.relpath) if counts[stem] > 1 else stem
        for item, stem in zip(found, stems, strict=True)
    ]
    # `x.md` beside `x.hmd` clash even by path; only the full path tells them apart.
    repeated = Counter(names)
    for index, item in enumerate(found):
        if repeated[names[index]] > 1:
            warnings.append(LoadWarning(item.path, messages.name_clash(names[index])))
            names[index] = item.relpath
    return {item.relpath: name for item, name in zip(found, names, strict=True)}


def build_cards(
    documents: list[ReadDocument],
    names_by_relpath: dict[str, str],
    extension_metadata: Mapping[str, Mapping[str, Any]],
    warnings: list[LoadWarning],
    dialect: str = REFERENCE,
) -> list[Card]:
    from hql.vault import links  # see assign_names

    names = [names_by_relpath[item.found.relpath] for item in documents]
    known = set(names)
    contributions = contributions_of(extension_metadata)
    cards = [
        build_card(item, name, known, contributions, warnings, dialect)
        for item, name in zip(documents, names, strict=True)
    ]
    cards.sort(key=lambda card: card.name)
    table = links.LinkTable(cards, dialect)
    for card in cards:
        object.__setattr__(card, "_table", table)
    return cards


def contributions_of(
    extension_metadata: Mapping[str, Mapping[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Each extension's entries, as one sorted map that every card shares (Data is
    never mutated once loaded), so a contribution costs nothing per card."""
    return {
        extension: dict(sorted(_copy(dict(entries)).items()))
        for extension, entries in extension_metadata.items()
    }


def build_card(
    item: ReadDocument,
    name: str,
    known: Container[str],
    contributions: dict[str, dict[str, Any]],
    warnings: list[LoadWarning],
    dialect: str,
) -> Card:
    """One card, given its name and every name of the vault (a relation's endpoints)."""
    parsed = item.parsed
    authored = parsed.authored
    title = title_of(authored, parsed.heading, item.found.relpath, dialect)

    header = dict(authored)
    header["name"] = name
    header["path"] = item.found.path
    header["format"] = item.found.format
    if title is not None:
        header["title"] = title
    header = dict(sorted(header.items()))

    authored_metadata = authored.get("metadata")
    # A shallow copy; `_insert` copies each map it writes into, so the
    # authored tree (shared with `header.metadata`) is never touched.
    metadata = dict(authored_metadata) if isinstance(authored_metadata, dict) else {}
    if len(authored) > ("title" in authored) + ("metadata" in authored):
        # Flat front matter is metadata too; a key inside `metadata:` wins (everyday.md §4).
        for key, value in authored.items():
            if key not in _NOT_METADATA and key not in metadata:
                metadata[key] = value
        metadata = dict(sorted(metadata.items()))
    extras = parsed.extras
    if extras is not None and "fields" in extras and dialect == OBSIDIAN:
        metadata = _with_inline_fields(metadata, extras, item.found.path, name, warnings)
    kind = CONCEPT_CARD
    if _get(metadata, "knowledge", "type") == "Relation":
        if _endpoints_resolve(metadata, known):
            kind = RELATION_CARD
        else:
            warnings.append(
                LoadWarning(item.found.path, messages.relation_unverified(), subject=name)
            )
            _insert(metadata, ("knowledge", "unverified"), messages.RELATION_UNVERIFIED_NOTE)
    for extension, entries in contributions.items():
        if extension not in metadata:
            metadata[extension] = entries
        else:  # authored data under an extension's key: merge, as the reference does
            for key, value in entries.items():
                _insert(metadata, (extension, key), value)
    if len(metadata) > 1:
        metadata = dict(sorted(metadata.items()))

    return Card(
        name=name,
        path=item.found.path,
        relpath=item.found.relpath,
        format=item.found.format,
        title=title if title is not None else name,
        header=header,
        authored=authored,
        metadata=metadata,
        kind=kind,
        body=parsed.body,
        raw_links=parsed.links,
        size=item.size,
        mtime_ns=item.mtime_ns,
        dialect=dialect,
        extras=parsed.extras,
        digest=item.text_digest if title is not None else None,
    )


def _with_inline_fields(
    metadata: dict[str, Any],
    extras: dict[str, Any],
    path: str,
    name: str,
    warnings: list[LoadWarning],
) -> dict[str, Any]:
    """The metadata with the note's Dataview fields (`key:: value`) beside its front matter;
    on a clash the front matter wins, with a warning naming the line."""
    from hql.vault import links

    fields = links.fields_of(extras)
    merged = dict(metadata)
    for key, value in fields.items():
        if key in merged:
            line = next(line for written, _, line in extras["fields"] if written == key)
            warnings.append(LoadWarning(path, messages.inline_field_clash(key, line), subject=name))
        else:
            merged[key] = value
    return dict(sorted(merged.items()))


def title_of(
    authored: dict[str, Any], heading: str | None, relpath: str, dialect: str
) -> str | None:
    """The title a document gives its card; None: the card is titled by its name."""
    authored_title = authored.get("title")
    title = authored_title if isinstance(authored_title, str) else heading
    if title is None and dialect == OBSIDIAN:  # Obsidian shows the file name
        title = _stem(relpath)
    return title


# Header keys that are not metadata: the title has its own field, `metadata:` is the base.
_NOT_METADATA = frozenset({"title", "metadata"})


def _endpoints_resolve(metadata: dict[str, Any], known: Container[str]) -> bool:
    source = _get(metadata, "knowledge", "relation", "source")
    target = _get(metadata, "knowledge", "relation", "target")
    return (
        isinstance(source, str) and isinstance(target, str) and source in known and target in known
    )


def build_edges(cards: list[Card]) -> list[Edge]:
    """Link edges merged by (source, target) and sorted, then one edge per relation card.

    In an Obsidian vault a link's target is the card it resolves to (or the
    target as written, when it resolves to none).
    """
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    table = cards[0]._table if cards else None
    if table is not None and table.dialect == OBSIDIAN:
        for name, target, annotation in table.link_pairs():
            data = merged.setdefault((name, target), {})
            if annotation:
                data.update(annotation)
    else:
        for card in cards:
            name = card.name
            for target, annotation in card.raw_links:
                data = merged.setdefault((name, target), {})
                if annotation:
                    data.update(annotation)
    edges = [
        Edge(source, target, dict(sorted(data.items())) if len(data) > 1 else data)
        for (source, target), data in sorted(merged.items())
    ]
    for card in cards:  # already in name order
        endpoints = card.endpoints if card.kind == RELATION_CARD else None
        if endpoints is not None:
            edges.append(Edge(endpoints[0], endpoints[1], {"card": card.name}))
    return edges


def _stem(relpath: str) -> str:
    filename = relpath.rsplit("/", 1)[-1]
    return _without_extension(filename)


def _without_extension(path: str) -> str:
    slash = path.rfind("/")
    dot = path.rfind(".")
    return path[:dot] if dot > slash + 1 else path


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _insert(data: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    """Set a nested entry, creating maps on the way; a non-map on the way blocks it.

    (The reference does the same: a contribution never replaces authored data
    of another shape.) Maps stay key-sorted.
    """
    head, *rest = keys
    if not rest:
        data[head] = value
    else:
        child = data.get(head)
        if child is None and head not in data:
            child = {}
        if not isinstance(child, dict):
            return
        child = data[head] = dict(child)  # copy on write
        _insert(child, tuple(rest), value)
    if list(data) != sorted(data):
        items = sorted(data.items())
        data.clear()
        data.update(items)


def _copy(value: Any) -> Any:
    """A private copy of a Data tree, so cards never share what a caller passed in."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def edges_unique(cards: list[Card], by_name: Mapping[str, Card]) -> bool:
    """Whether `build_edges(cards)` holds no two equal edges, without building it.

    Link edges are unique per (source, target) and relation edges per card, so
    only a link whose merged annotation is exactly `{card: <relation>}`
    between that relation's endpoints could repeat an edge.
    """
    for card in cards:
        endpoints = card.endpoints if card.kind == RELATION_CARD else None
        if endpoints is None:
            continue
        source_card = by_name.get(endpoints[0])
        if source_card is None:
            continue
        merged: dict[str, Any] | None = None
        for target, annotation in source_card.raw_links:
            if target == endpoints[1]:
                merged = {**(merged or {}), **annotation}
        if merged == {"card": card.name}:
            return False
    return True
