"""What a vault is made of: cards, the links their bodies write, edges, warnings.

Data (headers, metadata, annotations, edge data) is a plain tree of dict
(str keys, sorted), list, str, int, float, bool and None. Cards are
immutable after load: the language shares them between values and threads.
"""

from __future__ import annotations

import re
from typing import Any

from hql import messages
from hql.record import record

PROJECT = "project"  # the library and scope of a vault's own cards
CONCEPT_CARD = "ConceptCard"
RELATION_CARD = "RelationCard"

# Header keys the loader derives; authored keys of these names are overwritten.
DERIVED_KEYS = frozenset({"name", "path", "format", "title"})


@record
class Link:
    """A `[[target]]` reference in a body, with its YAML flow annotation ({} if none)."""

    target: str
    annotation: dict[str, Any]


@record
class Edge:
    """A vault edge: a merged link, or the edge a verified relation card stands for."""

    source: str
    target: str
    data: dict[str, Any]


@record
class LoadWarning:
    """Something loading wanted to say without refusing to load."""

    path: str  # the file it concerns; "" for a vault-wide warning
    message: str
    subject: str | None = None  # what the printed form names, when not the path (a card name)

    def __str__(self) -> str:
        shown = self.path if self.subject is None else self.subject
        return messages.load_warning(shown, self.message)


class VaultError(Exception):
    """The vault itself cannot be opened (a host error, not a load warning)."""


class Card:
    """One document of the vault and the knowledge layer assembled over it.

    Identity and equality are by path. `text` and `digest` are computed on
    first use: most programs never rank, so most loads never need them.
    """

    __slots__ = (
        "name",
        "path",
        "relpath",
        "format",
        "title",
        "header",
        "authored",
        "metadata",
        "kind",
        "body",
        "raw_links",
        "size",
        "mtime_ns",
        "_text",
        "_digest",
        "_links",
        "dialect",
        "extras",
        "_table",
        "_note",
        "_origin",
    )

    name: str
    path: str
    relpath: str
    format: str
    title: str
    header: dict[str, Any]
    authored: dict[str, Any]
    metadata: dict[str, Any]
    kind: str
    body: str
    raw_links: list[tuple[str, dict[str, Any]]]  # (target, annotation), as parsed
    size: int
    mtime_ns: int
    _text: str | None
    _digest: str | None
    _links: tuple[Link, ...] | None
    dialect: str  # "reference" or "obsidian": how the file was read
    extras: dict[str, Any] | None  # what the Obsidian dialect read beside the links
    _table: Any  # the vault's LinkTable, shared by its cards (outlinks, inlinks)
    _note: dict[str, Any] | None  # tags, aliases, tasks, ... worked out on first use
    _origin: tuple[str, str] | None  # (library, scope) of a library's card; None: the project's

    def __init__(
        self,
        *,
        name: str,
        path: str,
        relpath: str,
        format: str,
        title: str,
        header: dict[str, Any],
        authored: dict[str, Any],
        metadata: dict[str, Any],
        kind: str,
        body: str,
        raw_links: list[tuple[str, dict[str, Any]]],
        size: int = 0,
        mtime_ns: int = 0,
        dialect: str = "reference",
        extras: dict[str, Any] | None = None,
        digest: str | None = None,
    ) -> None:
        """`digest`, when given, is `text_digest_of` this card's title, authored header and body."""
        setter = object.__setattr__
        setter(self, "name", name)
        setter(self, "path", path)
        setter(self, "relpath", relpath)
        setter(self, "format", format)
        setter(self, "title", title)
        setter(self, "header", header)
        setter(self, "authored", authored)
        setter(self, "metadata", metadata)
        setter(self, "kind", kind)
        setter(self, "body", body)
        setter(self, "raw_links", raw_links)
        setter(self, "size", size)
        setter(self, "mtime_ns", mtime_ns)
        setter(self, "_text", None)
        setter(self, "_digest", digest)
        setter(self, "_links", None)
        setter(self, "dialect", dialect)
        setter(self, "extras", extras)
        setter(self, "_table", None)
        setter(self, "_note", None)
        setter(self, "_origin", None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Card is immutable; cannot set `{name}`")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a Card is immutable; cannot delete `{name}`")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Card) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"Card({self.name!r}, {self.kind})"

    @property
    def library(self) -> str:
        """The library the card comes from: `project` for the vault's own cards."""
        return self._origin[0] if self._origin is not None else PROJECT

    @property
    def scope(self) -> str:
        """`project` for the vault's own cards, the library's scope (`global`, …) for others."""
        return self._origin[1] if self._origin is not None else PROJECT

    def in_library(self, library: str, scope: str, name: str | None = None) -> Card:
        """This card as a library's card in another vault's candidate set: the same file,
        tagged with its library and scope, named `name` (qualified) when given."""
        copy = object.__new__(Card)
        for slot in Card.__slots__:
            object.__setattr__(copy, slot, getattr(self, slot))
        object.__setattr__(copy, "_origin", (library, scope))
        if name is not None:
            object.__setattr__(copy, "name", name)
        return copy

    @property
    def is_relation(self) -> bool:
        return self.kind == RELATION_CARD

    @property
    def endpoints(self) -> tuple[str, str] | None:
        """(source, target) named by `metadata.knowledge.relation`, when both are strings."""
        relation = _path(self.metadata, ("knowledge", "relation"))
        if not isinstance(relation, dict):
            return None
        source, target = relation.get("source"), relation.get("target")
        if isinstance(source, str) and isinstance(target, str):
            return source, target
        return None

    @property
    def links(self) -> tuple[Link, ...]:
        """Every `[[target]]` of the body, in order, with its annotation."""
        cached = self._links
        if cached is None:
            cached = tuple(Link(target, annotation) for target, annotation in self.raw_links)
            object.__setattr__(self, "_links", cached)
        return cached

    # --- notes as people write them (everyday.md §4) ---------------------------

    def _notes(self) -> dict[str, Any]:
        cached = self._note
        if cached is None:
            from hql.vault import links

            extras = self.extras
            if self.dialect != links.OBSIDIAN:  # the reference dialect reads these on demand
                first = extras.get("body_line", 0) if extras else 0
                extras = links.inline_extras(self.body, first)
            elif extras is None:
                extras = {}
            cached = {
                "tags": links.tags_of(self.metadata, extras.get("tags", ())),
                "tasks": [
                    {"done": done, "line": line, "text": text}
                    for text, done, line in extras.get("tasks", ())
                ],
                "headings": [text for _, text in extras.get("headings", ())],
                "created": links.created_of(self.metadata),
            }
            object.__setattr__(self, "_note", cached)
        return cached

    @property
    def tags(self) -> list[str]:
        """Front-matter `tags`/`tag` and inline `#tags` outside code, without `#`."""
        return self._notes()["tags"]

    @property
    def aliases(self) -> list[str]:
        """Front-matter `aliases`/`alias`: other names links may use."""
        from hql.vault import links

        return links.aliases_of(self.metadata)

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """`{done, line, text}` per `- [ ]` / `- [x]` item outside code (line in the file)."""
        return self._notes()["tasks"]

    @property
    def headings(self) -> list[str]:
        return self._notes()["headings"]

    @property
    def created(self) -> Any:
        """The front matter's `created` (else `date`) as a date, or None."""
        return self._notes()["created"]

    @property
    def day(self) -> Any:
        """The date a daily note is for: from its file name (`2023-09-12.md`), else its
        `date` property; None when it has neither."""
        from hql.vault import links

        return links.day_of(self.relpath, self.metadata)

    @property
    def ctime(self) -> Any:
        """When the file was created, a UTC datetime, where the system says (a birth time:
        macOS, the BSDs and Windows); None elsewhere (Linux's `stat` does not give it)."""
        import datetime
        import os

        try:
            born = getattr(os.stat(self.path), "st_birthtime", None)
        except OSError:
            return None
        if born is None:
            return None
        return datetime.datetime.fromtimestamp(int(born), datetime.UTC)

    @property
    def folder(self) -> str:
        """The vault-relative folder, `""` at the root."""
        relpath = self.relpath
        return relpath.rsplit("/", 1)[0] if "/" in relpath else ""

    @property
    def modified(self) -> Any:
        """The file's modification time, a UTC datetime."""
        import datetime

        seconds = self.mtime_ns // 1_000_000_000  # to the second, as a file manager shows it
        return datetime.datetime.fromtimestamp(seconds, datetime.UTC)

    @property
    def outlinks(self) -> list[str]:
        """Names of the cards this card links to, in order, each once."""
        return self._table.outlinks(self.name) if self._table is not None else []

    @property
    def inlinks(self) -> list[str]:
        """Names of the cards linking to this card (its backlinks), in name order."""
        return self._table.inlinks(self.name) if self._table is not None else []

    @property
    def unresolved(self) -> list[str]:
        """The link targets this card names that no card resolves, in order, each once."""
        if self._table is None:
            return []
        return self._table.unresolved(self.name)

    @property
    def superseded_by(self) -> list[str]:
        """The names of the notes whose `supersedes` names this one (memory.md §5)."""
        from hql.vault import currency

        return currency.superseded_by(self)

    @property
    def search_title(self) -> str:
        """What ranking reads as the title: in an Obsidian vault, the file name as well."""
        return search_title_of(self.title, self.relpath, self.dialect)

    @property
    def search_body(self) -> str:
        """The body as ranking reads it: without the answers `hql render` wrote into it."""
        return without_answers(self.body)

    @property
    def section_body(self) -> str:
        """The body with each line of a rendered answer empty: what sections are cut from."""
        return answers_blanked(self.body)

    @property
    def text(self) -> str:
        """The retrieval text (reference §12.2 step 1)."""
        cached = self._text
        if cached is None:
            cached = retrieval_text(self.title, self.authored, self.body)
            object.__setattr__(self, "_text", cached)
        return cached

    @property
    def digest(self) -> str:
        """sha256 of `text`, lowercase hex: what an index compares to find stale cards."""
        cached = self._digest
        if cached is None:
            text = self._text
            if text is None:  # not kept: most cards' text is never needed again
                cached = text_digest_of(self.title, self.authored, self.body)
            else:
                cached = text_digest(text)
            object.__setattr__(self, "_digest", cached)
        return cached


def search_title_of(title: str, relpath: str, dialect: str) -> str:
    """`Card.search_title` of a card with this title and path, in a vault of this dialect."""
    if dialect != "obsidian":
        return title
    stem = relpath.rsplit("/", 1)[-1]
    dot = stem.rfind(".")
    stem = stem[:dot] if dot > 0 else stem
    return title if stem == title else f"{title} {stem}"


def text_digest_of(title: str, authored: dict[str, Any], body: str) -> str:
    """`Card.digest` of a card with this title, authored header and body."""
    return text_digest(retrieval_text(title, authored, body))


def text_digest(text: str) -> str:
    """A retrieval text's digest (`Card.digest`)."""
    import hashlib  # only ranking needs digests; starting up should not pay for hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def retrieval_text(title: str, authored: dict[str, Any], body: str) -> str:
    """Title, every string of the authored header (sorted keys, depth-first), body.

    The body is read without the answers `hql render` wrote into it (`without_answers`):
    a page must not rank its own rendered answers, or each render would change the next.
    """
    parts = [title]
    for key in sorted(authored):
        if key not in DERIVED_KEYS:
            _collect_strings(authored[key], parts)
    parts.append(without_answers(body))
    return " ".join(parts)


ANSWER_INFO = "hql#result"  # the info string of a block `hql render` writes
_FENCE = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")


def without_answers(body: str) -> str:
    """`body` with every rendered answer block (a fence whose info is `hql#result`) dropped,
    with the blank lines before it, as `hql render` drops old answers: the body as it was
    before its first render, so rendering never changes it.

    Fences are read as `hql render` reads them: a block inside another fence is that
    fence's text, not an answer.
    """
    if ANSWER_INFO not in body:  # nearly every card: nothing to read
        return body
    lines = body.split("\n")
    kept: list[str] = []
    at = 0
    for start, end in _answer_blocks(lines):
        kept += lines[at:start]
        while kept and not kept[-1].strip():
            kept.pop()
        at = end + 1
    return "\n".join(kept + lines[at:])


def answers_blanked(body: str) -> str:
    """`body` with each line of every rendered answer block empty: the lines after an
    answer keep their numbers (sections of a long card point at file lines)."""
    if ANSWER_INFO not in body:
        return body
    lines = body.split("\n")
    for start, end in _answer_blocks(lines):
        lines[start : end + 1] = [""] * (end + 1 - start)
    return "\n".join(lines)


def _answer_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """The (first, last) line of each closed answer block, outside other fences."""
    found = []
    index = 0
    while index < len(lines):
        opening = _FENCE.fullmatch(lines[index])
        if opening is None:
            index += 1
            continue
        marker = opening.group(2)
        end = index + 1
        while end < len(lines) and not _closes(lines[end], marker):
            end += 1
        if opening.group(3).strip() == ANSWER_INFO and end < len(lines):
            found.append((index, end))
        index = end + 1
    return found


def _closes(line: str, marker: str) -> bool:
    closing = _FENCE.fullmatch(line.rstrip("\r"))
    return (
        closing is not None
        and closing.group(2)[0] == marker[0]
        and len(closing.group(2)) >= len(marker)
        and not closing.group(3).strip()
    )


def _collect_strings(value: Any, into: list[str]) -> None:
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, list):
        for item in value:
            _collect_strings(item, into)
    elif isinstance(value, dict):
        for key in sorted(value):
            _collect_strings(value[key], into)


def _path(data: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
