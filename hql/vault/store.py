"""`Vault`: a loaded directory of cards, their edges, warnings and configuration."""

from __future__ import annotations

import contextlib
import functools
import gc
import marshal
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from hql import files, messages
from hql.vault import walk, watch
from hql.vault.catalog import (
    Catalog,
    Listing,
    SearchColumns,
    Stamp,
    listing_key,
    stamp_of,
    walk_digest,
)
from hql.vault.config import CONFIG_FILE, VaultConfig, load_config
from hql.vault.lazy import CardMaker, CardSequence, DeferredTable
from hql.vault.model import Card, Edge, LoadWarning, VaultError

STATE_DIR = ".hql"


@dataclass(frozen=True)
class _EdgeTables:
    edges: tuple[Edge, ...]
    uplinks: dict[str, tuple[Edge, ...]]
    downlinks: dict[str, tuple[Edge, ...]]
    unique: bool


class Vault:
    """Immutable after `open`; safe to share between threads.

    Edges and their indexes are built on first use (under a lock): a program
    that only filters cards never pays for them. A vault opened from its
    catalogue knows how many cards it has and its warnings at once, and
    builds its cards on first use too.
    """

    root: Path
    root_text: str  # the root exactly as given (`./notes/`), for messages; Path normalises it
    warnings: tuple[LoadWarning, ...]
    config: VaultConfig
    state_dir: Path

    def __init__(
        self,
        root: Path,
        cards: tuple[Card, ...],
        edges: tuple[Edge, ...] | None,
        warnings: tuple[LoadWarning, ...],
        config: VaultConfig,
        root_text: str | None = None,
    ) -> None:
        """`edges=None` derives them from the cards when first needed."""
        self.root = root
        self.root_text = os.fspath(root) if root_text is None else root_text
        self._cards: tuple[Card, ...] | None = cards
        self._count = len(cards)
        self._pending: Callable[[], tuple[tuple[Card, ...], tuple[LoadWarning, ...]]] | None = None
        self._cards_lock = threading.Lock()
        self._stored_warnings = 0  # how many of `warnings` the catalogue gave
        self.warnings = warnings
        self.config = config
        self.state_dir = root / STATE_DIR
        self._names: dict[str, Card] | None = None
        self.dialect = walk.REFERENCE  # how the files were read; set by `open`
        self.dialect_note: str | None = None  # why the notes chose the reference dialect
        self._given_edges = edges
        self._tables: _EdgeTables | None = None
        self._tables_lock = threading.Lock()
        # A vault opened from its catalogue: how to read its cards one at a time.
        self._lazy_source: Callable[[], CardSequence | None] | None = None
        self._lazy: CardSequence | None = None
        self._lazy_lock = threading.Lock()
        # A whole first load's cards, while no one has read them but a planned lazy step:
        # how to read them from the catalogue the load just wrote instead (`_settle`).
        self._reopen: Callable[[Vault], bool] | None = None
        self._libraries: tuple[Any, ...] | None = None
        self._libraries_lock = threading.Lock()
        self.use_cache = True  # how it was opened: its libraries are opened the same way

    @property
    def cards(self) -> tuple[Card, ...]:
        """Every card, in name order."""
        if self._reopen is not None:
            self._settle(release=False)  # handed out: they stay
        cards = self._cards
        if cards is None:
            with self._cards_lock:
                cards = self._cards
                if cards is None:
                    cards = self._materialise()
        return cards

    def lazy_cards(self, release: bool = False) -> Sequence[Card]:
        """The cards in name order, as `cards`; a vault opened from its catalogue that has
        not built them yet gives a `CardSequence` that builds each card when first read.

        `release`: the program reads only the cards a step hands on (a planned `lazy-cards`),
        so a vault whose first load built every card, and whose cards no one has read yet,
        lets them go and reads them from the catalogue that load wrote, as the next process
        would: a large vault's first question then does not hold every card while its index
        is built, and the index is kept as the next process reads it."""
        if self._reopen is not None:
            self._settle(release)
        cards = self._cards
        if cards is not None and (self._lazy is None or self._lazy.stale):
            return cards
        with self._lazy_lock:
            source, self._lazy_source = self._lazy_source, None
            if source is not None and self._cards is None:
                self._lazy = source()
        return self._lazy if self._lazy is not None else self.cards

    def _settle(self, release: bool) -> None:
        """Decide, once, whether a first load's cards are let go (`release`) or kept.

        Under the cards lock, so a thread that reads the cards meanwhile waits for the
        decision: it never gets the cards being let go (the vault would then hold others)."""
        with self._cards_lock, self._lazy_lock:
            reopen = self._reopen
            try:
                if not release or reopen is None or self._cards is None or self._lazy is not None:
                    return
                if not reopen(self):
                    return
            finally:
                self._reopen = None  # only now: a reader that finds it gone finds it done
        _free_released_cards()

    def holds_all(self, cards: object) -> bool:
        """Whether `cards` is this vault's own sequence of all its cards."""
        return cards is self._cards or (self._lazy is not None and cards is self._lazy)

    @property
    def _by_name(self) -> dict[str, Card]:
        names = self._names
        if names is None:
            names = self._names = {card.name: card for card in self.cards}
        return names

    def _materialise(self) -> tuple[Card, ...]:
        """Build the cards of a vault opened from its catalogue (under the cards lock)."""
        pending = self._pending
        assert pending is not None, "a vault without cards has a way to build them"
        with _collector_paused():
            cards, rest = pending()
        if self._lazy is not None:
            cards = _with_cards_made(cards, self._lazy.made())
        # The same as the catalogue said, unless a file changed between opening and now.
        self.warnings = self.warnings[: len(self.warnings) - self._stored_warnings] + rest
        self._count = len(cards)
        self._pending = None
        self._cards = cards
        return cards

    @property
    def edges(self) -> tuple[Edge, ...]:
        """Link edges merged by (source, target) and sorted, then relation edges (§9.4)."""
        return self._edge_tables().edges

    @property
    def edges_unique(self) -> bool:
        """No two edges share (source, target, data); graphs rely on it to skip a check."""
        return self._edge_tables().unique

    def _edge_tables(self) -> _EdgeTables:
        tables = self._tables
        if tables is None:
            with self._tables_lock:
                tables = self._tables
                if tables is None:
                    with _collector_paused():
                        tables = self._tables = self._build_edge_tables()
        return tables

    def _build_edge_tables(self) -> _EdgeTables:
        edges = self._given_edges
        if edges is None:
            cards = list(self.cards)
            from hql.vault import assembly

            edges = tuple(assembly.build_edges(cards))
            if self.dialect == walk.OBSIDIAN:
                unique = _edges_unique(edges)
            else:
                unique = assembly.edges_unique(cards, self._by_name)
        else:
            unique = _edges_unique(edges)
        uplinks, downlinks = _index(edges)
        return _EdgeTables(edges, uplinks, downlinks, unique)

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        extension_metadata: Mapping[str, Mapping[str, Any]] | None = None,
        use_cache: bool = True,
    ) -> Vault:
        """Load every document below `path`; raises VaultError if it is not a directory.

        `extension_metadata` maps an extension's name to the entries it
        contributes to every card's metadata, under that name (reference §9.3).
        """
        shown = os.fspath(path)
        root = Path(path)
        check_root(shown, root)
        with _collector_paused():
            return cls._load(shown, root, extension_metadata or {}, use_cache)

    @classmethod
    def open_listed(
        cls, path: str | Path, *, extension_metadata: Mapping[str, Mapping[str, Any]] | None = None
    ) -> Vault | None:
        """The vault as its catalogue's last listing lists it, opened without walking: what a
        writer that recorded its own edits (`hql.vault.edits.record_listed_edits`) reads
        next. Files changed by others since that listing are not seen (the next `open`
        walks and sees them). None when the catalogue keeps no walk of its listing, or a
        watcher serves the vault (then `open`)."""
        shown = os.fspath(path)
        root = Path(path)
        check_root(shown, root)
        metadata = extension_metadata or {}
        listed = listed_walk(root, shown, metadata)
        if listed is None:
            return None
        with _collector_paused():
            return cls._load(shown, root, metadata, True, listed)

    @classmethod
    def _load(
        cls,
        shown: str,
        root: Path,
        extension_metadata: Mapping[str, Mapping[str, Any]],
        use_cache: bool,
        listed: tuple[walk.Walk, list[LoadWarning]] | None = None,
    ) -> Vault:
        """`listed`: the walk to take instead of walking, and its warnings."""
        warnings: list[LoadWarning] = []
        config, config_warnings = load_config(root)
        declared = walk.declared_dialect(root, config.dialect)
        state_dir = root / STATE_DIR
        # A `.hql` that leads outside the vault is neither read nor written.
        cached = use_cache and files.state_dir_contained(state_dir)
        last = None
        if declared is None and cached:
            from hql.vault import detect

            last = detect.last_choice(state_dir)
        dialect = declared or (last.dialect if last is not None else walk.REFERENCE)
        metadata = sorted((name, dict(entries)) for name, entries in extension_metadata.items())
        catalog, context = _catalogue(
            state_dir if cached else None, dialect, declared is None, shown, metadata
        )
        token = watch.ask(state_dir) if cached and listed is None else None
        if token is None and cached and config.watch and listed is None:
            _start_watcher(root, state_dir, warnings)
        decided = declared is not None or last is not None
        note = None  # why the notes chose the reference dialect (`hql vault warnings`)
        if last is not None and last.dialect == walk.REFERENCE:
            note = messages.dialect_chosen_reference(last)
        recorded = _recorded_walk(catalog, token, context, config) if token and decided else None
        walked_of: Callable[[], walk.Walk]
        if recorded is not None:  # nothing changed since: the walk is unpacked if read
            read_walk, key, walk_warnings = recorded
            warnings.extend(walk_warnings)
            walked_of = functools.cache(functools.partial(_unpacked_walk, read_walk, shown, config))
            unrecorded: list[Callable[[], None]] = []
        else:
            if listed is not None:
                walked_files = listed[0]
                warnings.extend(listed[1])
            else:
                walked_files = _walk_files(shown, warnings, config)
            if declared is None:
                from hql.vault import detect

                choice = detect.choose(walked_files, state_dir if cached else None)
                if choice.dialect != dialect:
                    dialect = choice.dialect
                    catalog.close()
                    catalog, context = _catalogue(
                        state_dir if cached else None, dialect, True, shown, metadata
                    )
                if choice.dialect == walk.OBSIDIAN:
                    warnings.append(LoadWarning("", messages.dialect_detected(choice)))
                else:
                    note = messages.dialect_chosen_reference(choice)
            walked_of = functools.partial(_same, walked_files)
            key = None
            if cached:
                key = listing_key(walked_files.relpaths, walked_files.signature_columns(), context)
            unrecorded = _walk_record(catalog, token, context, config, walked_files, key, warnings)
        walked = tuple(config_warnings + warnings)

        def read_cards() -> tuple[tuple[Card, ...], tuple[LoadWarning, ...]]:
            """Everything after the walk: names, the documents (from the catalogue), cards."""
            from hql.vault import assembly, links, loader

            rest: list[LoadWarning] = []
            walked_files = walked_of()
            relpaths = walked_files.relpaths
            found = walked_files.found()
            names = assembly.assign_names(found, rest, dialect)
            catalog.expect(relpaths)
            try:
                documents = loader.read_all(found, catalog, rest, dialect)
                cards = assembly.build_cards(documents, names, extension_metadata, rest, dialect)
                if dialect == links.OBSIDIAN and cards:
                    missing, linking = cards[0]._table.count_unresolved()
                    if missing:
                        rest.append(LoadWarning("", messages.unresolved_links(missing, linking)))
                listing = Listing(len(cards), tuple((w.path, w.message, w.subject) for w in rest))
                search = functools.partial(_search_columns, cards, walked_files)
                catalog.save(relpaths, key, listing, stored, search)
            except BaseException:
                catalog.abandon()  # rows written ahead of the save are rolled back
                raise
            while unrecorded:
                unrecorded.pop()()
            catalog.close()
            return tuple(cards), tuple(rest)

        stored: Listing | None = None  # the catalogue's listing of this load, once read

        def from_catalogue(vault: Vault, listed: Listing) -> None:
            """The vault's cards built when needed, from the catalogue's rows of `listed`."""
            vault._cards, vault._count, vault._pending = None, listed.cards, read_cards
            vault._names = None
            vault._stored_warnings = len(listed.warnings)

            def sequence() -> CardSequence | None:
                search = catalog.search_columns(key, listed.cards)
                if search is None:
                    return None
                maker = CardMaker(shown, catalog, search, extension_metadata, dialect, key)
                built = functools.partial(getattr, vault, "_cards")
                build_all = functools.partial(getattr, vault, "cards")
                table = DeferredTable(build_all, dialect, maker)
                cards = CardSequence(search, maker, built, build_all, table)
                table.listed = cards.whole_if_built
                return cards

            vault._lazy_source = sequence

        def reopen(vault: Vault) -> bool:
            """After a whole load: its cards let go for the catalogue it saved (`_settle`);
            False, cards kept, when the catalogue does not hold that load's listing."""
            nonlocal catalog, stored
            catalog.close()
            catalog = _catalogue(state_dir, dialect, declared is None, shown, metadata)[0]
            stored = catalog.listing(key)
            # Search columns that cannot be read would have the vault build every card again.
            if stored is None or catalog.search_columns(key, stored.cards) is None:
                catalog.close()
                return False
            from_catalogue(vault, stored)
            return True

        stored = catalog.listing(key)
        if stored is None:
            cards, rest = read_cards()
            vault = cls(root, cards, None, walked + rest, config, root_text=shown)
            if cached and key is not None:
                vault._reopen = reopen  # given the vault when called: no cycle through it
        else:  # the files are as the catalogue last saw them: cards are built when needed
            rest = tuple(LoadWarning(*warning) for warning in stored.warnings)
            vault = cls(root, (), None, walked + rest, config, root_text=shown)
            from_catalogue(vault, stored)
            while unrecorded:
                unrecorded.pop()()
        vault.dialect = dialect
        vault.use_cache = use_cache
        vault.dialect_note = note
        return vault

    @classmethod
    def empty(cls) -> Vault:
        """No vault: what a program run without `--vault` sees."""
        return cls(Path(""), (), (), (), VaultConfig())

    def card(self, name: str) -> Card | None:
        return self._by_name.get(name)

    def card_lookup(self) -> Callable[[str], Card | None]:
        """`card`, for many names in a row: the lookup of the card map itself."""
        return self._by_name.get

    def card_alone(self, name: str) -> Card | None:
        """The card named exactly `name`; a vault opened from its catalogue builds it alone."""
        lazy = self.lazy_cards()
        if isinstance(lazy, CardSequence):
            position = lazy.position_of(name)
            return lazy[position] if position is not None else None
        return self._by_name.get(name)

    def path_of(self, name: str) -> str | None:
        """The vault-relative path of the card named exactly `name`; a vault opened from its
        catalogue answers from its stored columns, building no card."""
        lazy = self.lazy_cards()
        if isinstance(lazy, CardSequence):
            return lazy.path_of(name)
        card = self._by_name.get(name)
        return card.relpath if card is not None else None

    @property
    def libraries(self) -> tuple[Any, ...]:
        """The vaults `[vault] libraries` names (hql.vault.libraries.Library), opened on
        first use; none unless the vault's hql.toml names some."""
        found = self._libraries
        if found is None:
            with self._libraries_lock:
                if self._libraries is None:
                    from hql.vault.libraries import open_libraries

                    self._libraries = open_libraries(self, self.use_cache)
                found = self._libraries
        return found

    def library_warnings(self) -> list[str]:
        """Why each library that could not be opened was left out."""
        return [library.warning for library in self.libraries if library.warning]

    def resolve(self, name: str) -> Card | None:
        """The card `[[name]]` names in a program: the exact name, else as a link resolves."""
        card = self._by_name.get(name)
        if card is not None or not self.cards:
            return card
        table = self.cards[0]._table
        found = table.resolve_reference(name) if table is not None else None
        return self._by_name.get(found) if found is not None else None

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        """How many cards; a vault opened from its catalogue knows without building them."""
        return self._count

    def uplinks(self, name: str) -> tuple[Edge, ...]:
        """Edges leaving `name`, in vault edge order."""
        return self._edge_tables().uplinks.get(name, ())

    def downlinks(self, name: str) -> tuple[Edge, ...]:
        """Edges entering `name`, in vault edge order."""
        return self._edge_tables().downlinks.get(name, ())

    def __repr__(self) -> str:
        return f"Vault({self.root_text!r}, {messages.plural(len(self), 'card')})"


def _free_released_cards() -> None:
    """Free the cards a vault let go of and hand their memory back to the system.

    The cards and their link table refer to each other, so only the collector frees them;
    and glibc keeps the freed pages for later small allocations, which the index built
    next does not make (its large arrays are mapped afresh): without the trim a large
    vault's first question would hold the cards' pages and the index's at once."""
    gc.collect()
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).malloc_trim(0)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a load allocates its many small dicts.

    Loading creates no reference cycles, but every few hundred allocations the
    collector would scan all of them again; on 10k cards that is a third of a
    cached load. The previous state is restored whatever happens.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _catalogue(
    state_dir: Path | None, dialect: str, detected: bool, shown: str, metadata: list[Any]
) -> tuple[Catalog, tuple[object, ...]]:
    """The catalogue of one dialect's parses and what a load's listing key depends on
    (a dialect the notes chose is marked, so a declared one never reuses its listing)."""
    fingerprint = walk.parser_fingerprint()
    if dialect != walk.REFERENCE:  # one dialect's parses are not another's
        fingerprint = f"{fingerprint}:{dialect}"
    marked = f"{dialect}?" if detected else dialect
    context = (fingerprint, walk.assembly_fingerprint(), marked, shown, metadata)
    return Catalog(state_dir, fingerprint), context


def _walk_files(shown: str, warnings: list[LoadWarning], config: VaultConfig) -> walk.Walk:
    """Walk the vault, leaving out what `[vault] exclude` names."""
    walked = walk.walk(shown, warnings, config.allow_outside)
    if config.exclude:
        from hql.vault import links

        walked = walk.Walk.of(links.without_excluded(walked.found(), config.exclude))
    return walked


def listed_walk(
    root: Path, shown: str, extension_metadata: Mapping[str, Mapping[str, Any]]
) -> tuple[walk.Walk, list[LoadWarning]] | None:
    """The walk the catalogue's last listing was worked out from, and its warnings, as kept
    under its key (`Catalog.listing_walk`), if it gives that key again; None otherwise, or
    when a watcher serves the vault or the notes' dialect was never decided."""
    state_dir = root / STATE_DIR
    if not files.state_dir_contained(state_dir) or watch.ask(state_dir) is not None:
        return None
    config, _ = load_config(root)
    declared = walk.declared_dialect(root, config.dialect)
    dialect = declared
    if dialect is None:
        from hql.vault import detect

        last = detect.last_choice(state_dir)
        if last is None:
            return None
        dialect = last.dialect
    metadata = sorted((name, dict(entries)) for name, entries in extension_metadata.items())
    catalog, context = _catalogue(state_dir, dialect, declared is None, shown, metadata)
    try:
        stored = catalog.last_listing()
        key = stored[0] if stored is not None else None
        return unpacked_listing_walk(catalog.listing_walk(key), key, shown, context)
    finally:
        catalog.close()


def unpacked_listing_walk(
    kept: bytes | None, key: bytes | None, shown: str, context: tuple[object, ...]
) -> tuple[walk.Walk, list[LoadWarning]] | None:
    """A walk kept by `packed_listing_walk`, if it gives the listing `key` again."""
    if kept is None or key is None:
        return None
    try:
        warnings, packed = marshal.loads(kept)
    except Exception:  # noqa: BLE001 - not a kept walk: walk
        return None
    if type(warnings) is not list or type(packed) is not bytes:
        return None
    if not all(type(item) is tuple and len(item) == 3 for item in warnings):
        return None
    walked = walk.Walk.unpacked(packed, shown)
    if walked is None:
        return None
    if listing_key(walked.relpaths, walked.signature_columns(), context) != key:
        return None
    return walked, [LoadWarning(*item) for item in warnings]


def packed_listing_walk(walked: walk.Walk, warnings: Sequence[LoadWarning]) -> bytes | None:
    """The walk and its warnings as `Catalog.record_listing_walk` keeps them (None: a walk
    that cannot be kept, one with a failed `stat`)."""
    packed = walked.packed()
    if packed is None:
        return None
    items = [(item.path, item.message, item.subject) for item in warnings]
    return marshal.dumps((items, packed))


def _same(walked: walk.Walk) -> walk.Walk:
    return walked


def _start_watcher(root: Path, state_dir: Path, warnings: list[LoadWarning]) -> None:
    """`[vault] watch = true` and no watcher answered: start one for the loads after this."""
    if not sys.platform.startswith("linux"):
        warnings.append(LoadWarning(os.fspath(root / CONFIG_FILE), messages.watch_needs_linux()))
        return
    watch.start_detached(root, state_dir)


def _recorded_walk(
    catalog: Catalog, token: str, context: tuple[object, ...], config: VaultConfig
) -> tuple[Callable[[], bytes | None], bytes, list[LoadWarning]] | None:
    """The walk the catalogue recorded under the watcher's `token` for this very load (the
    same parser, dialect, path, extensions and walk settings): what reads it, still
    packed, with its key and warnings; None means walk."""
    stored = catalog.recorded_walk(token)
    if stored is None:
        return None
    try:
        recorded_context, key, warnings, digest = marshal.loads(stored)
    except Exception:  # noqa: BLE001 - not a record: walk
        return None
    if recorded_context != _walk_context(context, config) or type(key) is not bytes:
        return None
    if type(warnings) is not list or type(digest) is not bytes:
        return None
    if not all(type(item) is tuple and len(item) == 3 for item in warnings):
        return None
    read = functools.partial(catalog.recorded_walk_files, token, digest)
    return read, key, [LoadWarning(*item) for item in warnings]


def _unpacked_walk(read: Callable[[], bytes | None], shown: str, config: VaultConfig) -> walk.Walk:
    """The recorded walk; a record gone or damaged since its head was read, or sealed
    right but not a walk (only a hand-made one can be), means walking after all."""
    packed = read()
    unpacked = walk.Walk.unpacked(packed, shown) if packed is not None else None
    return unpacked if unpacked is not None else _walk_files(shown, [], config)


def _walk_record(
    catalog: Catalog,
    token: str | None,
    context: tuple[object, ...],
    config: VaultConfig,
    walked: walk.Walk,
    key: bytes | None,
    warnings: list[LoadWarning],
) -> list[Callable[[], None]]:
    """What keeps this walk under the watcher's token: a call to make once the catalogue
    is written (none when no watcher answered, or the walk cannot be kept)."""
    if token is None or key is None:
        return []
    packed = walked.packed()
    if packed is None:
        return []
    items = [(item.path, item.message, item.subject) for item in warnings]
    head = (_walk_context(context, config), key, items, walk_digest(packed))
    return [functools.partial(catalog.record_walk, token, marshal.dumps(cast(Any, head)), packed)]


def _walk_context(context: tuple[object, ...], config: VaultConfig) -> tuple[object, ...]:
    """What a walk's result depends on besides the files: the load's context and how the
    configuration shapes the walk."""
    return (*context, tuple(config.exclude), tuple(config.allow_outside))


def _search_columns(cards: list[Card], walked: walk.Walk) -> SearchColumns:
    """The cards' search columns, with each file's format and the `stat` its walk found
    (what builds the card alone while the listing holds)."""
    where = {relpath: at for at, relpath in enumerate(walked.relpaths)}
    stamps = [_stamp(walked.statuses[where[card.relpath]]) for card in cards]
    return SearchColumns(
        [card.name for card in cards],
        [card.relpath for card in cards],
        [card.digest for card in cards],
        [card.search_title for card in cards],
        (
            [card.format for card in cards],
            [stamp[0] for stamp in stamps],
            [stamp[1] for stamp in stamps],
            [stamp[2] for stamp in stamps],
            [stamp[3] for stamp in stamps],
        ),
    )


def _stamp(status: os.stat_result | OSError) -> Stamp:
    """Size, mtime_ns, inode and ctime_ns; a size of -1 when the walk's `stat` failed."""
    if type(status) is os.stat_result:
        return stamp_of(status)
    return -1, 0, 0, 0


def _with_cards_made(cards: tuple[Card, ...], made: dict[str, Card]) -> tuple[Card, ...]:
    """The whole load's cards, where a card was already built alone from the same file,
    that very object (so a hit handed out before is the vault's card), given the table."""
    if not made:
        return cards
    table = cards[0]._table if cards else None
    chosen = list(cards)
    for at, card in enumerate(cards):
        early = made.get(card.relpath)
        if early is not None and _same_card(early, card):
            object.__setattr__(early, "_table", table)
            chosen[at] = early
    return tuple(chosen)


def _same_card(one: Card, other: Card) -> bool:
    return (
        (one.name, one.size, one.mtime_ns, one.kind, one.title, one.body)
        == (other.name, other.size, other.mtime_ns, other.kind, other.title, other.body)
        and one.header == other.header
        and one.metadata == other.metadata
        and one.raw_links == other.raw_links
        and one.extras == other.extras
    )


def check_root(shown: str, root: Path) -> None:
    try:
        if root.is_dir():
            return
        exists = root.exists()
    except OSError as error:
        raise VaultError(messages.vault_unreadable_directory(shown, str(error))) from None
    if exists:
        raise VaultError(messages.vault_not_a_directory(shown))
    raise VaultError(messages.vault_no_such_directory(shown))


def _edges_unique(edges: tuple[Edge, ...]) -> bool:
    """Whether no two edges share (source, target, data).

    Link edges are unique per (source, target) and relation edges per card, so
    only a link edge whose annotation is exactly `{card: <relation>}` between
    the relation's endpoints could repeat one: check just those pairs.
    """
    links: dict[tuple[str, str], dict[str, Any]] = {}
    for edge in edges:
        key = (edge.source, edge.target)
        if key in links and links[key] == edge.data:
            return False
        links.setdefault(key, edge.data)
    return True


def _index(
    edges: tuple[Edge, ...],
) -> tuple[dict[str, tuple[Edge, ...]], dict[str, tuple[Edge, ...]]]:
    """Edges by source and by target, each group in edge order."""
    leaving: dict[str, list[Edge]] = {}
    entering: dict[str, list[Edge]] = {}
    for edge in edges:
        group = leaving.get(edge.source)
        if group is None:
            leaving[edge.source] = [edge]
        else:
            group.append(edge)
        group = entering.get(edge.target)
        if group is None:
            entering[edge.target] = [edge]
        else:
            group.append(edge)
    return (
        {name: tuple(group) for name, group in leaving.items()},
        {name: tuple(group) for name, group in entering.items()},
    )
