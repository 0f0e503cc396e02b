"""The cards of a vault opened from its catalogue, each built when a program first reads it.

A ranker that keeps a stored index needs, per card, only what the index is
matched by (name, retrieval-text digest, search title): the catalogue's
`search` columns hold that for the load its listing describes. The ranker
then asks for the few cards it hands out, and each is built from its `files`
row exactly as a whole load builds it: the name the load gave it, the vault's
names (a relation card's endpoints must be cards), the extensions' metadata.

Once the vault has built all its cards, the sequence reads them from there;
a card built here earlier is the very object the vault holds, unless its file
changed in between (then the vault holds the file as it is now).
"""

from __future__ import annotations

import bisect
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

from hql.vault.catalog import (
    Catalog,
    RowReader,
    SearchColumns,
    SearchEntry,
    Stamp,
    StoredSearch,
)
from hql.vault.model import Card, LoadWarning

# Asked for more cards than this share of the vault, the vault builds them all at once
# (one pass over the catalogue is cheaper than that many single lookups).
_WHOLE_LOAD_SHARE = 8
_FEW = 64


class CardMaker:
    """Builds chosen cards of the load a catalogue's listing and search columns describe."""

    def __init__(
        self,
        root: str,
        catalog: Catalog,
        search: StoredSearch,
        extension_metadata: Mapping[str, Mapping[str, Any]],
        dialect: str,
        key: bytes | None = None,
    ) -> None:
        self._root = root  # as given: a card's path is it joined with the relative path
        self._catalog = catalog
        self._key = key  # the listing's, which the catalogue's tag column is kept under
        self._search = search
        self._extension_metadata = extension_metadata
        self._dialect = dialect
        self._known: _Names | None = None
        self._contributions: dict[str, dict[str, Any]] | None = None

    def make(self, positions: Sequence[int]) -> list[Card] | None:
        """The cards at these positions (name order), or None if any cannot be built as the
        listing describes it (its columns or row are gone or damaged, its `stat` failed)."""
        from hql.vault import assembly

        entries = self._search.entries(positions)
        if entries is None or any(entry.size < 0 for entry in entries):
            return None
        if self._known is None:
            self._known = _Names(self._search)
            self._contributions = assembly.contributions_of(self._extension_metadata)
        try:
            return self._from_rows(entries)
        except _Unreadable:
            return None

    def text_rows(self, positions: Sequence[int]) -> TextRows | None:
        """The catalogue rows of the cards at these positions, as stored (`TextRows` reads
        their texts); None if any cannot be read as the listing describes it."""
        entries = self._search.entries(positions)
        if entries is None or any(entry.size < 0 for entry in entries):
            return None
        reader = self._catalog.row_reader()
        if reader is None:
            return None
        described = [
            (entry.relpath, entry.name, entry.digest, entry.title, entry.stamp) for entry in entries
        ]
        return TextRows(self._dialect, described, reader)

    def _from_rows(self, entries: list[SearchEntry]) -> list[Card] | None:
        """The cards of these entries, each from its `files` row as a whole load builds it."""
        from hql.vault import assembly, document, loader

        assert self._known is not None and self._contributions is not None
        wanted = [(entry.relpath, entry.stamp) for entry in entries]
        payloads = self._catalog.payloads(wanted)
        cards = []
        ignored: list[LoadWarning] = []  # the listing holds the load's warnings
        for entry in entries:
            payload = payloads.get(entry.relpath)
            if payload is None or payload[0] != "ok":
                return None
            path = os.path.join(self._root, entry.relpath)  # as the walk joins them
            found = loader.FoundFile(entry.relpath, path, entry.format, None)
            parsed = document.ParsedDocument(*payload[1:])
            read = loader.ReadDocument(found, entry.size, entry.mtime_ns, parsed)
            card = assembly.build_card(
                read, entry.name, self._known, self._contributions, ignored, self._dialect
            )
            if card.digest != entry.digest or card.search_title != entry.title:
                return None
            cards.append(card)
        return cards

    def superseding(self, table: Callable[[], Any]) -> Any:
        """hql.vault.currency's `superseding` for this load: from the catalogue, else from
        `table()` (the link table of the vault's cards, or None), then kept there."""
        import datetime

        from hql.vault import currency

        entries = self._catalog.superseded_entries(self._key)
        if entries is not None:
            try:
                return {
                    old: tuple(
                        (name, None if day is None else datetime.date.fromisoformat(day))
                        for name, day in newer
                    )
                    for old, newer in entries
                }
            except ValueError:
                pass  # a damaged day: worked out again below
        whole = table()
        if whole is None:
            return None
        found = currency.superseding(whole)
        kept = [
            [old, [[name, None if day is None else day.isoformat()] for name, day in newer]]
            for old, newer in sorted(found.items())
        ]
        self._catalog.record_superseded(self._key, kept)
        return found

    def tags(self, cards: Callable[[], Sequence[Card] | None]) -> list[list[str]] | None:
        """Each card's tags, casefolded, in name order: from the catalogue, else from
        `cards()` (the vault's cards as listed, or None), then kept there for next time."""
        column = self._catalog.tag_column(self._key, self._search.cards)
        if column is not None:
            return column
        built = cards()
        if built is None:
            return None
        column = [[tag.casefold() for tag in card.tags] for card in built]
        self._catalog.record_tags(self._key, column)
        return column


class CardSequence(Sequence[Card]):
    """The vault's cards in name order; a card is built on first read (see the module).

    `names` and `search_keys` come from the catalogue without building any card.
    """

    only_cards = True  # every element is a card: a size budget counts them unbuilt

    in_name_order = True  # names strictly increase: a card's position is its name's rank

    def __init__(
        self,
        search: StoredSearch,
        maker: CardMaker,
        built: Callable[[], tuple[Card, ...] | None],
        build_all: Callable[[], tuple[Card, ...]],
        table: Any,
    ) -> None:
        self.search_digest = search.digest  # names the names and search keys
        self._search = search
        self._count = search.cards
        self._maker = maker
        self._built = built  # the vault's cards if it has built them, else None
        self._build_all = build_all
        self._table = table
        self._made: dict[int, Card] = {}
        self._lock = threading.Lock()
        self._agrees: bool | None = None

    @property
    def names(self) -> list[str]:
        return self._columns().names

    def _columns(self) -> SearchColumns:
        """Every card's search columns: as stored, else (a block found damaged) as the
        vault's cards give them."""
        columns = self._search.columns()
        if columns is None:
            cards = self._built() or self._build_all()
            columns = SearchColumns(
                [card.name for card in cards],
                [card.relpath for card in cards],
                [card.digest for card in cards],
                [card.search_title for card in cards],
            )
        return columns

    def position_of(self, name: str) -> int | None:
        """Where the card named `name` is (names are in order: a bisection), if there is one;
        only the stored blocks the bisection looks at are read."""
        found = self._search.position_of(name)
        if found is not None:
            return found if found >= 0 else None
        names = self._columns().names
        at = bisect.bisect_left(names, name)
        return at if at < len(names) and names[at] == name else None

    def path_of(self, name: str) -> str | None:
        """The relative path of the card named `name`."""
        position = self.position_of(name)
        if position is None:
            return None
        entries = self._search.entries([position])
        if entries is not None:
            return entries[0].relpath
        return self._columns().relpaths[position]

    def search_keys(self) -> list[tuple[str, str]]:
        """(retrieval-text digest, search title) per card."""
        columns = self._columns()
        return list(zip(columns.digests, columns.titles, strict=True))

    def made(self) -> dict[str, Card]:
        """The cards built here so far, by vault-relative path."""
        return {card.relpath: card for card in list(self._made.values())}

    @property
    def stale(self) -> bool:
        """The vault has built its cards and they are not the ones listed here (a file
        changed after the vault was opened)."""
        whole = self._whole()
        return whole is None and self._built() is not None

    def _whole(self) -> tuple[Card, ...] | None:
        """The vault's cards, when built and the same cards as listed here."""
        cards = self._built()
        if cards is None:
            return None
        if self._agrees is None:
            self._agrees = len(cards) == len(self.names) and all(
                card.name == name for card, name in zip(cards, self.names, strict=True)
            )
        return cards if self._agrees else None

    def matching(self, conditions: Sequence[tuple[str, str]]) -> CardSubset | None:
        """The cards meeting every condition, found from their paths and tags alone:
        ("folder", f) is `c.folder == f`, ("folder_tree", f) is `in_folder(c, f)` and
        ("tag_tree", t) is `has_tag(c, t)`; None when the tags cannot be known so."""
        relpaths = self._columns().relpaths
        folders = [(field, value) for field, value in conditions if field != "tag_tree"]
        wanted = [value for field, value in conditions if field == "tag_tree"]
        positions = [at for at, relpath in enumerate(relpaths) if _folder_meets(relpath, folders)]
        if wanted:
            tags = self._maker.tags(self.whole_if_built)
            if tags is None:
                return None
            positions = [at for at in positions if _tags_meet(tags[at], wanted)]
        return CardSubset(self, positions)

    def whole_if_built(self) -> tuple[Card, ...] | None:
        """The vault's cards as listed here, built now if need be (None: they differ)."""
        self._build_all()
        return self._whole()

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Card: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Card]: ...
    def __getitem__(self, index: int | slice) -> Card | Sequence[Card]:
        if isinstance(index, slice):
            return [self[at] for at in range(*index.indices(len(self)))]
        whole = self._whole()
        if whole is not None:
            return whole[index]
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(index)
        card = self._made.get(position)
        if card is None:
            self.prefetch([position])
            card = self._made.get(position)
        if card is None:  # cannot be built as listed: the vault built them all instead
            whole = self._whole()
            if whole is not None:
                return whole[position]
            built = self._built() or self._build_all()  # changed since: the card of that name
            card = next((c for c in built if c.name == self.names[position]), None)
            if card is None:
                raise IndexError(index)
        return card

    def prefetch(self, positions: Sequence[int]) -> None:
        """Build the cards at these positions together (one catalogue query)."""
        if self._whole() is not None:
            return
        with self._lock:
            missing = sorted({p for p in positions if p not in self._made})
            if not missing:
                return
            if len(missing) > max(_FEW, len(self) // _WHOLE_LOAD_SHARE) and self._built() is None:
                self._build_all()
                if self._whole() is not None:
                    return
            made = self._maker.make(missing)
            if made is None:
                if self._built() is None:
                    self._build_all()  # then read from the vault (or, if changed, by name)
                return
            for position, card in zip(missing, made, strict=True):
                object.__setattr__(card, "_table", self._table)
                self._made[position] = card

    def passing(self, positions: Sequence[int]) -> list[Card] | None:
        """The cards at these positions built for one reading (their texts, say) and kept
        nowhere: a reader of every card then holds a few at a time, not the vault. None:
        read them through the sequence (the vault has built its cards, or these cannot be
        built as listed)."""
        if self._whole() is not None or not positions:
            return None
        made = self._maker.make(positions)
        if made is not None:
            for card in made:
                object.__setattr__(card, "_table", self._table)
        return made

    def text_rows(self, positions: Sequence[int]) -> TextRows | None:
        """The catalogue rows of the cards at these positions, for reading their texts once
        with no card built (`TextRows.cards`, in this process or another). None: read them
        through the sequence (the vault has built its cards, or a row cannot be read)."""
        if self._whole() is not None or not positions:
            return None
        return self._maker.text_rows(positions)

    def __iter__(self) -> Iterator[Card]:
        """Every card: the vault builds them all (if a file changed since it was opened,
        they are the cards as they are now; `stale` says so)."""
        built = self._built()
        return iter(built if built is not None else self._build_all())

    def __repr__(self) -> str:
        return f"CardSequence({len(self)} cards, {len(self._made)} built)"


class TextCard:
    """What ranking reads of a card, read from its catalogue row alone: its name, title,
    search title, authored header, body, retrieval text and that text's digest."""

    __slots__ = ("authored", "body", "digest", "name", "search_title", "text", "title")

    def __init__(
        self,
        name: str,
        title: str,
        search_title: str,
        authored: dict[str, Any],
        body: str,
        text: str,
        digest: str,
    ) -> None:
        self.name, self.title, self.search_title = name, title, search_title
        self.authored, self.body, self.text, self.digest = authored, body, text, digest


class TextRows:
    """Some cards' catalogue rows, to be read (`reader`), and what the listing says of each
    card (path, name, retrieval-text digest, search title, the file's stamp). It pickles,
    so another process reads the rows and the texts (`cards`)."""

    def __init__(
        self,
        dialect: str,
        described: list[tuple[str, str, str, str, Stamp]],
        reader: RowReader,
    ) -> None:
        self.dialect = dialect
        self.described = described
        self.reader = reader

    def __len__(self) -> int:
        return len(self.described)

    def cards(self) -> list[TextCard] | None:
        """Each card's texts as the card built from its row would give them (its title as
        the load gives it, its retrieval text); None if the rows cannot be read, or any is
        missing, stale or damaged (the catalogue's check), or is not the card the listing
        describes (the digest of its retrieval text or its search title differ): then build
        the cards instead."""
        from hql.vault.assembly import title_of
        from hql.vault.catalog import checked_payload
        from hql.vault.model import retrieval_text, search_title_of, text_digest

        read = self.reader.rows([relpath for relpath, *_ in self.described])
        if read is None:
            return None
        rows = [read.get(relpath) for relpath, *_ in self.described]
        dialect = self.dialect
        cards = []
        for (relpath, name, digest, listed_title, stamp), row in zip(
            self.described, rows, strict=True
        ):
            payload = checked_payload(relpath, stamp, row) if row is not None else None
            if payload is None or payload[0] != "ok":
                return None
            _, authored, body, heading = payload[:4]
            title = title_of(authored, heading, relpath, dialect)
            if title is None:
                title = name
            search_title = search_title_of(title, relpath, dialect)
            text = retrieval_text(title, authored, body)
            if search_title != listed_title or text_digest(text) != digest:
                return None
            cards.append(TextCard(name, title, search_title, authored, body, text, digest))
        return cards


class _Names:
    """Whether a name is a card's (a relation card's endpoints must be): read from the
    search columns only when a relation card asks."""

    def __init__(self, search: StoredSearch) -> None:
        self._search = search
        self._names: set[str] | None = None

    def __contains__(self, name: object) -> bool:
        if self._names is None:
            columns = self._search.columns()
            if columns is None:
                raise _Unreadable
            self._names = set(columns.names)
        return name in self._names


class _Unreadable(Exception):
    """The search columns cannot be read whole: the card is not built alone."""


def _folder_meets(relpath: str, conditions: Sequence[tuple[str, str]]) -> bool:
    folder = relpath.rsplit("/", 1)[0] if "/" in relpath else ""  # as `Card.folder`
    for field, value in conditions:
        if field == "folder" and folder != value:
            return False
        if field == "folder_tree" and not (folder == value or folder.startswith(value + "/")):
            return False
    return True


def _tags_meet(tags: list[str], wanted: list[str]) -> bool:
    """Whether every wanted tag is one of `tags` or above one (`has_tag`'s rule)."""
    return all(any(tag == one or tag.startswith(one + "/") for tag in tags) for one in wanted)


class CardSubset(Sequence[Card]):
    """Some of a `CardSequence`'s cards, by position, in its order; built when first read."""

    only_cards = True

    def __init__(self, base: CardSequence, positions: list[int]) -> None:
        self.base = base
        self.positions = positions

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, index: int) -> Card: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Card]: ...
    def __getitem__(self, index: int | slice) -> Card | Sequence[Card]:
        if isinstance(index, slice):
            return [self.base[at] for at in self.positions[index]]
        return self.base[self.positions[index]]

    def __iter__(self) -> Iterator[Card]:
        self.base.prefetch(self.positions)
        return (self.base[at] for at in self.positions)

    def __repr__(self) -> str:
        return f"CardSubset({len(self)} of {len(self.base)} cards)"


class DeferredTable:
    """The link table of a card built alone: the vault builds every card on first use, except
    for who supersedes whom, which the catalogue keeps (`stored_superseding`)."""

    def __init__(
        self,
        build_all: Callable[[], tuple[Card, ...]],
        dialect: str,
        maker: CardMaker | None = None,
    ) -> None:
        self._build_all = build_all
        self._dialect = dialect
        self._maker = maker
        self._superseding: Any = None  # hql.vault.currency's, once worked out
        # The vault's cards when they are the ones listed (set by the CardSequence), else None.
        self.listed: Callable[[], tuple[Card, ...] | None] | None = None

    def stored_superseding(self) -> Any:
        """hql.vault.currency's `superseding` as the catalogue keeps it for this load, else
        worked out from every card and kept there (None: the cards differ from the listing)."""
        if self._maker is None:
            return None
        return self._maker.superseding(self._whole_table)

    def _whole_table(self) -> Any:
        """The link table of the vault's cards, when they are the cards listed (else None)."""
        cards = self.listed() if self.listed is not None else None
        if not cards:
            return None
        table = cards[0]._table
        return None if isinstance(table, DeferredTable) else table

    def __getattr__(self, name: str) -> Any:
        cards = self._build_all()
        table = cards[0]._table if cards else None
        if table is None or isinstance(table, DeferredTable):
            from hql.vault import links

            table = links.LinkTable([], self._dialect)
        return getattr(table, name)
