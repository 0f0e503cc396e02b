"""The catalogue brought up to date after a few notes were edited, without a whole load.

A whole load after one note changed reads every file's row from the catalogue,
builds every card and writes the listing and search columns anew (half a second
at 5,000 cards). When the catalogue's listing described the vault exactly as it
is now except for the content of the edited files (the same paths; every other
file with the same size, mtime, inode, mode and change time), only those files are
read: each one's row is stored, its search columns and tags replaced, and the
warnings it gave in the listing swapped for the ones it gives now. The next load opens from the
listing, as after any walk that found nothing changed.

Anything else (a file added, removed or renamed, a watcher serving the vault, a
dialect the notes decide that changes, a file that no longer reads as a card, links
that change in a vault whose load counts unresolved links) answers False, and the
caller loads the vault whole.
"""

from __future__ import annotations

import array
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hql import files
from hql.vault import walk, watch
from hql.vault.catalog import Catalog, Listing, SearchColumns, listing_key, row_of, stamp_of
from hql.vault.config import load_config
from hql.vault.model import Card, LoadWarning

_Warning = tuple[str, str, str | None]  # (path, message, subject), as the listing keeps them


def record_edits(
    root: str | os.PathLike[str],
    edited: Mapping[str, bytes | None] | Sequence[str],
    extension_metadata: Mapping[str, Mapping[str, Any]],
    listed: bool = False,
) -> bool:
    """Update the catalogue for edits of these vault-relative files; False: load it whole.

    `edited` may map each file to its bytes before the edit: in a vault whose notes decide
    its dialect, files whose links read the same before and after need no scan of every
    file to know the dialect stays.

    `listed`: the writer of these edits knows they are all it changed, so the vault is
    not walked: the walk the listing was worked out from (kept with it by an earlier
    edit) stands for it, with the edited files' `stat`s taken again. What others changed
    meanwhile is then not seen here; the next load walks, finds another key and reads
    those files (False when no walk is kept under the listing's key)."""
    from hql.vault import store

    relpaths = list(edited)
    before = dict(edited) if isinstance(edited, Mapping) else {}
    shown = os.fspath(root)
    root_path = Path(root)
    state_dir = root_path / store.STATE_DIR
    if not relpaths or not files.state_dir_contained(state_dir) or watch.ask(state_dir):
        return False
    config, _ = load_config(root_path)
    declared = walk.declared_dialect(root_path, config.dialect)
    dialect = declared
    if dialect is None:
        from hql.vault import detect

        last = detect.last_choice(state_dir)
        if last is None:
            return False
        dialect = last.dialect
    metadata = sorted((name, dict(entries)) for name, entries in extension_metadata.items())
    catalog, context = store._catalogue(state_dir, dialect, declared is None, shown, metadata)
    try:
        if listed:
            stored = catalog.last_listing()
            key = stored[0] if stored is not None else None
            kept = store.unpacked_listing_walk(catalog.listing_walk(key), key, shown, context)
            if kept is None:
                return False
            walked, walk_warnings = _seen_again(root_path, *kept, relpaths)
        else:
            walk_warnings = []
            walked = store._walk_files(shown, walk_warnings, config)
        edit = _Edit(catalog, walked, dialect, extension_metadata)
        detected = state_dir if declared is None else None
        if not edit.record(context, relpaths, before, detected):
            return False
        packed = store.packed_listing_walk(walked, walk_warnings)
        now = catalog.last_listing()
        if packed is not None and now is not None:
            catalog.record_listing_walk(now[0], packed)
        return True
    finally:
        catalog.close()


def _seen_again(
    root: Path, walked: walk.Walk, warnings: list[LoadWarning], relpaths: Sequence[str]
) -> tuple[walk.Walk, list[LoadWarning]]:
    """The kept walk with each edited file's `stat` as it is now (a file that cannot be
    `stat`ed keeps the old one: the edit is then not recorded)."""
    where = {relpath: at for at, relpath in enumerate(walked.relpaths)}
    changed = {}
    for relpath in relpaths:
        at = where.get(relpath)
        if at is None:
            continue
        try:
            changed[at] = os.stat(root / relpath)
        except OSError:
            continue
    return walked.with_statuses(changed), warnings


class _Edit:
    def __init__(
        self,
        catalog: Catalog,
        walked: walk.Walk,
        dialect: str,
        extension_metadata: Mapping[str, Mapping[str, Any]],
    ) -> None:
        self.catalog = catalog
        self.walked = walked
        self.dialect = dialect
        self.extension_metadata = extension_metadata
        self.read: dict[str, bytes] = {}  # each edited file's bytes as read now
        self.listed: dict[str, tuple[Any, ...]] = {}  # its payload as the listing had it
        # Whether every edit so far leaves who supersedes whom as it was (hql.vault.currency).
        self.superseding_kept = True

    def record(
        self,
        context: tuple[object, ...],
        relpaths: Sequence[str],
        before: Mapping[str, bytes | None],
        detected: Path | None,
    ) -> bool:
        """`detected`: the state folder, when the notes decide the vault's dialect."""
        catalog, walked = self.catalog, self.walked
        stored = catalog.last_listing()
        if stored is None:
            return False
        old_key, listing = stored
        search = catalog.search_columns(old_key, listing.cards)
        columns = search.columns() if search is not None else None
        if columns is None or columns.files is None:
            return False
        new_key = listing_key(walked.relpaths, walked.signature_columns(), context)
        if new_key is None:
            return False
        if new_key == old_key:
            return True  # listed as the files are already
        in_walk = {relpath: at for at, relpath in enumerate(walked.relpaths)}
        in_listing = {relpath: at for at, relpath in enumerate(columns.relpaths)}
        edited = [
            (in_walk.get(relpath, -1), in_listing.get(relpath, -1))
            for relpath in dict.fromkeys(relpaths)
        ]
        if any(at < 0 or position < 0 for at, position in edited):
            return False  # a file added, removed or not a card: the whole load says what
        signatures = _before(walked, columns, edited)
        if listing_key(walked.relpaths, signatures, context) != old_key:
            return False  # something else changed too
        warnings = list(listing.warnings)
        tags = catalog.tag_column(old_key, listing.cards)
        fresh = _copy(columns)
        for at, position in edited:
            card = self._swap(at, position, columns, warnings)
            if card is None:
                return False
            _put(fresh, position, card, walked.statuses[at])
            if tags is not None:
                tags[position] = [tag.casefold() for tag in card.tags]
        if detected is not None and not self._same_dialect(detected, signatures, before):
            return False
        catalog.holds(walked.relpaths[0])  # the rows it holds: the save drops those gone
        listed = Listing(listing.cards, tuple(warnings))
        catalog.save(walked.relpaths, new_key, listed, None, lambda: fresh)
        now = catalog.last_listing()
        if now is None or now[0] != new_key:
            return False
        if tags is not None:
            catalog.record_tags(new_key, tags)
        superseded = catalog.superseded_entries(old_key) if self.superseding_kept else None
        if superseded is not None:
            catalog.record_superseded(new_key, superseded)
        return True

    def _same_dialect(
        self, state_dir: Path, signatures: list[bytes], before: Mapping[str, bytes | None]
    ) -> bool:
        """Whether the notes still decide the dialect the listing was read in (then kept for
        this walk). No scan when each edited file's bytes before the edit are known, are
        what the listing read (the same parse) and hold the same link evidence as now."""
        from hql.vault import detect, loader

        choice = detect.remembered(state_dir, self.walked.relpaths, signatures)
        unscanned = choice is not None and choice.dialect == self.dialect
        for relpath, now in self.read.items():
            old = before.get(relpath)
            unscanned = (
                unscanned
                and old is not None
                and loader._parse(old, self.dialect) == self.listed[relpath]
                and detect.evidence_of(old) == detect.evidence_of(now)
            )
        if unscanned and choice is not None:
            detect.keep(self.walked, state_dir, choice)
            return True
        return detect.choose(self.walked, state_dir).dialect == self.dialect

    def _swap(
        self, at: int, position: int, columns: SearchColumns, warnings: list[_Warning]
    ) -> Card | None:
        """The file's card as it is now, its row kept for the save and its warnings in
        place of the ones it gave before; None when it cannot be done so."""
        from hql.vault import loader

        walked = self.walked
        assert columns.files is not None
        _, sizes, mtimes, inodes, ctimes = columns.files
        relpath, path = walked.relpaths[at], walked.paths[at]
        item = loader.FoundFile(relpath, path, walked.formats[at], None)
        listed_stamp = (sizes[position], mtimes[position], inodes[position], ctimes[position])
        listed = self.catalog.payloads([(relpath, listed_stamp)])
        old_payload = listed.get(relpath)
        if old_payload is None or old_payload[0] != "ok":
            return None
        try:
            data, read = loader._read_file(path)
        except OSError:
            return None
        if data is None or len(data) > loader.MAX_CARD_BYTES:
            return None
        stamp = stamp_of(read)
        payload = loader._parse(data, self.dialect)
        self.read[relpath], self.listed[relpath] = data, old_payload
        status = walked.statuses[at]
        if not isinstance(status, os.stat_result) or payload[0] != "ok":
            return None
        if stamp != stamp_of(status):
            return None  # changed again since the walk
        if self.dialect == walk.OBSIDIAN and old_payload[4] != payload[4]:
            return None  # its links changed: the load's count of unresolved links may too
        name = columns.names[position]
        known = frozenset(columns.names)
        old_card, old_warnings = self._card(
            item, name, known, sizes[position], mtimes[position], old_payload
        )
        if (
            old_card.digest != columns.digests[position]
            or old_card.search_title != columns.titles[position]
        ):
            return None
        card, new_warnings = self._card(item, name, known, stamp[0], stamp[1], payload)
        first = len(warnings)
        for warning in old_warnings:
            if warning not in warnings:
                return None
            found = warnings.index(warning)
            first = min(first, found)
            del warnings[found]
        warnings[first:first] = new_warnings
        self.catalog.keep(relpath, row_of(relpath, stamp, payload))
        if not _leaves_superseding(old_card, card):
            self.superseding_kept = False
        return card

    def _card(
        self,
        item: Any,
        name: str,
        known: frozenset[str],
        size: int,
        mtime_ns: int,
        payload: tuple[Any, ...],
    ) -> tuple[Card, list[_Warning]]:
        """The card a whole load builds from this payload, and the warnings it adds."""
        from hql.vault import assembly, document, loader

        parsed = document.ParsedDocument(*payload[1:])
        read = loader.ReadDocument(item, size, mtime_ns, parsed)
        found: list[LoadWarning] = []
        if parsed.extras and "warning" in parsed.extras:
            found.append(LoadWarning(item.path, parsed.extras["warning"]))
        contributions = assembly.contributions_of(self.extension_metadata)
        card = assembly.build_card(read, name, known, contributions, found, self.dialect)
        return card, [(warning.path, warning.message, warning.subject) for warning in found]


def _before(
    walked: walk.Walk, columns: SearchColumns, edited: list[tuple[int, int]]
) -> list[bytes]:
    """The walk's signature columns with each edited file's stamp (size, mtime, inode and
    change time) as the listing recorded it (its mode is the writer's to keep): the key of
    the walk before."""
    now = walked.signature_columns()
    assert columns.files is not None
    if len(now) != len(walk.SIGNATURE_CODES):
        return now  # a `stat` failed: no key of the walk before matches
    size, mtime, inode, mode, ctime = (
        array.array(code, data) for code, data in zip(walk.SIGNATURE_CODES, now, strict=True)
    )
    _, sizes, mtimes, inodes, ctimes = columns.files
    for at, position in edited:
        size[at], mtime[at], inode[at] = sizes[position], mtimes[position], inodes[position]
        ctime[at] = ctimes[position]
    return [column.tobytes() for column in (size, mtime, inode, mode, ctime)]


def _copy(columns: SearchColumns) -> SearchColumns:
    assert columns.files is not None
    formats, sizes, mtimes, inodes, ctimes = columns.files
    return SearchColumns(
        list(columns.names),
        list(columns.relpaths),
        list(columns.digests),
        list(columns.titles),
        (list(formats), list(sizes), list(mtimes), list(inodes), list(ctimes)),
    )


def _put(columns: SearchColumns, position: int, card: Card, status: Any) -> None:
    assert columns.files is not None
    formats, sizes, mtimes, inodes, ctimes = columns.files
    columns.digests[position] = card.digest
    columns.titles[position] = card.search_title
    formats[position] = card.format
    stamp = stamp_of(status)
    sizes[position], mtimes[position], inodes[position], ctimes[position] = stamp


def _leaves_superseding(old: Card, new: Card) -> bool:
    """Whether an edit leaves who supersedes whom as it was: the card writes no `supersedes`
    before or after (so no day of its own counts), and its aliases, which other cards'
    targets may resolve to, are the same."""
    from hql.vault import currency

    return (
        not currency.supersedes_of(old)
        and not currency.supersedes_of(new)
        and old.aliases == new.aliases
    )
