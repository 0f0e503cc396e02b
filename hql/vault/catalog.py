"""The catalogue: what the vault's files held when they were last read, in `.hql/catalog.sqlite`.

An SQLite database (WAL journal, so readers never wait for a writer and see
either the catalogue before a refresh or after it, never half of one) with
three tables:

* `meta`: the format, the parser that wrote the rows (a fingerprint of its
  code and of PyYAML) and the Python version; rows of another are ignored.
* `files`: per document, keyed by its vault-relative path: the file's stamp
  when it was read (size, mtime_ns, inode and ctime_ns: `stamp_of`), the parse
  (marshal of the payload: `("ok", authored, body, heading, links[, extras])`
  or `("refused", message)`) and a digest of all of that.
* `listing`: one row describing the last whole load: a key naming every
  file's (path, size, mtime_ns, inode, mode, ctime_ns), the dialect, the
  parser, the extensions' metadata and the vault path as given; how many
  cards that load gave and the warnings it gave after the walk. When a walk
  finds exactly that key again, a vault opens from this row alone and reads
  its cards only when a program needs them.
* `search_head` and `search_blocks`: written with the listing, under its key:
  per card of that load, in name order, its name, path, format, retrieval-text
  digest, search title and the stamp its walk found, in blocks of
  `SEARCH_BLOCK` cards (the head lists each block's digest). A ranker
  opens its stored index from these columns and builds only the cards it hands
  out (each from its `files` row), reading only the blocks that hold them.
* `tags`: under the listing's key, per card in name order, its tags casefolded;
  written by the first program that keeps cards by tag before a ranker, so the
  next keeps them without building any card.
* `listing_walk`: the walk the listing's key was worked out from (its files, their
  `stat`s and the walk's warnings), under that key: kept by a writer that records its
  own edits (hql/vault/edits.py), so the next one records its edit, and opens the vault
  it wrote to, without walking; believed only while it gives that very key again.
* `walk_record`: the last walk made while a watcher served the vault
  (hql/vault/watch.py), under the watcher's token: a load told the same token
  takes its walk from here instead of walking (its head, with the listing's key,
  first; the files only when it reads them).

The catalogue is the user's file but still input. A row is believed only
while its file has the same stamp and its digest matches what it holds; its
data is checked again, down to every key and value, before use. Anything else
is a miss, and the file is parsed again. A catalogue that SQLite cannot read
(not a database, a damaged page), that has the wrong tables, or that is not a
regular file (a FIFO, a symlink, a device) is replaced by a new one; a `.hql`
that cannot be written means the vault loads without one. A catalogue of another
format (an earlier layout of `files`) is read as empty and rewritten in this
one's layout by the next save. Nothing here raises: every failure means "read
the files".
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import hashlib
import marshal
import os
import sqlite3
import stat
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from hql import files

CATALOG_FILE = "catalog.sqlite"
# v2: the change time joined the stamp that says a file is unchanged (a `files` column).
FORMAT = "hql.catalog.v2"
# How long a reader or writer waits for another process's lock before going without.
BUSY_SECONDS = 2.0
_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]} marshal {marshal.version}"
# Rows read from the catalogue at once while a load goes through its files.
_BATCH = 500
# A load that parses this many files afresh writes their rows as it goes, a batch at a
# time, in the transaction its save commits: the stored forms are never all in memory.
_STREAM_ROWS = 2000
# Set when a catalogue is created (its first table fixes it).
_PAGE_SIZE = 16384
# Tables of earlier layouts (the search columns in one row, the walk record in one value).
_RETIRED_TABLES = ("search", "walked")
# Files left by the load cache this catalogue replaced.
_RETIRED = ("vault-cache.marshal",)

Payload = tuple[Any, ...]
# What says a file is the one a row was read from: (size, mtime_ns, inode, ctime_ns).
Stamp = tuple[int, int, int, int]
Row = tuple[int, int, int, int, bytes, bytes]  # the stamp, the stored payload, its digest


def stamp_of(status: os.stat_result) -> Stamp:
    """The file's size, mtime, inode and change time, as rows and listings compare them.

    Size, mtime and inode alone miss an edit that keeps the size and sets the mtime back
    (`cp -p`, `tar -x`, `rsync -t` writing over a file in place). The kernel sets the
    change time on every write, `utime` and rename, and nothing can set it back: a row
    outlives such an edit only when it falls within one tick of the kernel's clock after
    the read (a few milliseconds where timestamps are coarse). A `chmod`, a new link or a
    rename moves it too: that file is simply read again. Cards show the mtime, never the
    change time.
    """
    return status.st_size, status.st_mtime_ns, status.st_ino, status.st_ctime_ns


_FILES_SCHEMA = """CREATE TABLE IF NOT EXISTS files (
    relpath TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    payload BLOB NOT NULL,
    digest BLOB NOT NULL
)"""
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
{_FILES_SCHEMA};
CREATE TABLE IF NOT EXISTS listing (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB NOT NULL,
    cards INTEGER NOT NULL,
    warnings BLOB NOT NULL,
    digest BLOB NOT NULL
);
"""
# Added to catalogues written before they existed, by their next write.
_SEARCH_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS search_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB NOT NULL,
    cards INTEGER NOT NULL,
    blocks BLOB NOT NULL,
    digest BLOB NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS search_blocks (
    block INTEGER PRIMARY KEY,
    columns BLOB NOT NULL,
    digest BLOB NOT NULL
)""",
)


def _keyed_row_schema(table: str, column: str) -> str:
    """A table of one row: a value kept under the listing key it was worked out for."""
    return f"""
CREATE TABLE IF NOT EXISTS {table} (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB NOT NULL,
    {column} BLOB NOT NULL,
    digest BLOB NOT NULL
);
"""


# Written by the first query that keeps cards by tag before a ranker.
_TAGS_SCHEMA = _keyed_row_schema("tags", "tags")
# Written by the first status a process asks of a card built alone (hql.vault.currency).
_SUPERSEDED_SCHEMA = _keyed_row_schema("superseded", "entries")
# Written by a writer that records its own edits (`record_listing_walk`).
_LISTING_WALK_SCHEMA = _keyed_row_schema("listing_walk", "walk")
# Written by the first load a watcher serves. The head (sealed by `digest`) names the
# walk's digest and comes before it, so a load that needs only the head reads no more.
_WALKED_SCHEMA = """
CREATE TABLE IF NOT EXISTS walk_record (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    token TEXT NOT NULL,
    head BLOB NOT NULL,
    digest BLOB NOT NULL,
    walk BLOB NOT NULL
);
"""


@dataclass(frozen=True)
class Listing:
    """What the last whole load found: its card count and the warnings after the walk."""

    cards: int
    warnings: tuple[tuple[str, str, str | None], ...]  # (path, message, subject)


class SearchColumns:
    """Per card of a load, in name order: what a ranker's stored index is matched by, and
    what builds the card alone.

    `names`, `relpaths`, `digests` (sha256 of the retrieval text, hex) and `titles` (the
    title ranking reads, `Card.search_title`) are lists of str. `files`, when known, holds
    per card the file's format and the size, mtime_ns, inode and ctime_ns its walk found
    (size -1: its `stat` failed); only columns with `files` are stored. `digest` names the
    stored columns (their head's digest), b"" for columns not read from a catalogue.
    """

    __slots__ = ("names", "relpaths", "digests", "titles", "files", "digest")

    def __init__(
        self,
        names: list[str],
        relpaths: list[str],
        digests: list[str],
        titles: list[str],
        files: tuple[list[str], list[int], list[int], list[int], list[int]] | None = None,
        digest: bytes = b"",
    ) -> None:
        self.names, self.relpaths, self.digests, self.titles = names, relpaths, digests, titles
        self.files = files
        self.digest = digest

    def blocks(self) -> list[bytes]:
        """The columns as stored: a block per `SEARCH_BLOCK` cards, each column of it one
        NUL-joined text (a column whose items hold a NUL, a list), the numbers as lists."""
        assert self.files is not None
        columns = (self.names, self.relpaths, self.files[0], self.digests, self.titles)
        return [
            marshal.dumps(
                (
                    _SEARCH_PACKING,
                    *(_joined(column[start : start + SEARCH_BLOCK]) for column in columns),
                    *(numbers[start : start + SEARCH_BLOCK] for numbers in self.files[1:]),
                )
            )
            for start in range(0, len(self.names), SEARCH_BLOCK)
        ]


@dataclass(frozen=True, slots=True)
class SearchEntry:
    """One card's search columns: enough to build it alone from its `files` row."""

    name: str
    relpath: str
    format: str
    digest: str
    title: str
    size: int  # -1: the walk could not `stat` the file
    mtime_ns: int
    inode: int
    ctime_ns: int

    @property
    def stamp(self) -> Stamp:
        return self.size, self.mtime_ns, self.inode, self.ctime_ns


class StoredSearch:
    """The search columns of a listing as the catalogue holds them, a block of cards at a
    time: a ranker that hands out ten cards reads ten blocks, not a column per card of the
    vault. Each block is checked against its digest, which the checked head lists."""

    def __init__(self, catalog: Catalog, key: bytes, cards: int, blocks: bytes, digest: bytes):
        self.cards = cards
        self.digest = digest  # names these columns (a store's match record is kept under it)
        self._catalog = catalog
        self._key = key
        self._block_digests = [blocks[at : at + 16] for at in range(0, len(blocks), 16)]
        self._blocks: dict[int, tuple[Any, ...]] = {}
        self._whole: SearchColumns | None = None

    def entries(self, positions: Sequence[int]) -> list[SearchEntry] | None:
        """The entries of the cards at these positions (None: a block is missing or damaged)."""
        blocks = self._read({position // SEARCH_BLOCK for position in positions})
        if blocks is None:
            return None
        found = []
        for position in positions:
            block, at = blocks[position // SEARCH_BLOCK], position % SEARCH_BLOCK
            found.append(SearchEntry(*(column[at] for column in block)))
        return found

    def position_of(self, name: str) -> int | None:
        """Where the card named `name` is, found by bisection over the blocks (names are in
        order), reading only the few blocks it looks at: -1 when no card has that name,
        None when a block is missing or damaged."""
        if self._whole is not None:
            names = self._whole.names
            at = bisect.bisect_left(names, name)
            return at if at < len(names) and names[at] == name else -1
        low, high = 0, len(self._block_digests) - 1
        while low < high:  # the last block whose first name is not after `name`
            middle = (low + high + 1) // 2
            read = self._read({middle})
            if read is None:
                return None
            low, high = (middle, high) if read[middle][0][0] <= name else (low, middle - 1)
        read = self._read({low}) if self._block_digests else {}
        if read is None:
            return None
        names = read[low][0] if read else []
        at = bisect.bisect_left(names, name)
        return low * SEARCH_BLOCK + at if at < len(names) and names[at] == name else -1

    def columns(self) -> SearchColumns | None:
        """Every card's columns (None: a block is missing or damaged)."""
        if self._whole is None:
            blocks = self._read(set(range(len(self._block_digests))))
            if blocks is None:
                return None
            parts: list[list[Any]] = [[] for _ in range(9)]
            for number in range(len(self._block_digests)):
                for part, column in zip(parts, blocks[number], strict=True):
                    part.extend(column)
            names, relpaths, formats, digests, titles, sizes, mtimes, inodes, ctimes = parts
            files = (formats, sizes, mtimes, inodes, ctimes)
            self._whole = SearchColumns(names, relpaths, digests, titles, files, self.digest)
        return self._whole

    def _read(self, numbers: set[int]) -> dict[int, tuple[Any, ...]] | None:
        missing = sorted(number for number in numbers if number not in self._blocks)
        if missing:
            if missing[-1] >= len(self._block_digests):
                return None
            read = self._catalog.search_blocks(missing)
            for number in missing:
                block = _block_of(
                    read.get(number),
                    self._key,
                    number,
                    self._block_digests[number],
                    self._size(number),
                )
                if block is None:
                    return None
                self._blocks[number] = block
        return {number: self._blocks[number] for number in numbers}

    def _size(self, number: int) -> int:
        return min(SEARCH_BLOCK, self.cards - number * SEARCH_BLOCK)


# Cards per stored block of search columns: a few tens of kilobytes.
SEARCH_BLOCK = 256
# A column is joined by this; a column whose items hold it is stored as a list.
_SEPARATOR = "\0"
_SEARCH_PACKING = "joined"


def _joined(column: list[str]) -> list[str] | str:
    """The column as one text, unless an item holds the separator (or it is the one
    column a text cannot tell from no items: a single empty str)."""
    joined = _SEPARATOR.join(column)
    if joined.count(_SEPARATOR) != len(column) - 1 or column == [""]:
        return column
    return joined


def _block_of(
    row: tuple[bytes, bytes] | None, key: bytes, number: int, digest: bytes, cards: int
) -> tuple[Any, ...] | None:
    """A stored block's columns (texts split), if it is the one the head lists and holds
    `cards` cards' columns."""
    if row is None or type(row[0]) is not bytes or row[1] != digest:
        return None
    if digest != _digest(key, str(number).encode(), row[0]):
        return None
    block = _loads(row[0])
    if type(block) is not tuple or len(block) != 10 or block[0] != _SEARCH_PACKING:
        return None
    columns = list(block[1:])
    for at, column in enumerate(columns[:5]):
        if not _column_of(column, cards):
            return None
        if type(column) is str:
            columns[at] = column.split(_SEPARATOR) if column else []
    for numbers in columns[5:]:
        if type(numbers) is not list or len(numbers) != cards:
            return None
        if not all(type(number) is int for number in numbers):
            return None
    return tuple(columns)


def _column_of(column: object, cards: int) -> bool:
    """Whether a stored column holds `cards` str (a joined text is checked by its count)."""
    if type(column) is str:
        return column.count(_SEPARATOR) + 1 == cards if column else cards == 0
    if type(column) is not list or len(column) != cards:
        return False
    return all(type(item) is str for item in column)


def listing_key(
    relpaths: list[str], signatures: list[bytes], context: tuple[object, ...]
) -> bytes | None:
    """A digest naming every file, its signature and what else the load depends on.

    None when something in it cannot be written down (then nothing is reused).
    """
    try:
        hasher = hashlib.sha256()
        for part in (
            marshal.dumps(cast(Any, context)),
            "\0".join(relpaths).encode("utf-8", "surrogatepass"),
            *signatures,
        ):
            hasher.update(len(part).to_bytes(8, "little"))
            hasher.update(part)
        return hasher.digest()
    except (ValueError, UnicodeError):
        return None


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _one_at_a_time(method: _Method) -> _Method:
    """The method under the catalogue's lock: a vault built lazily shares its catalogue
    with the threads that build its cards, and one closing the SQLite connection while
    another reads from it would crash the process (sqlite3 does not guard a connection)."""

    @functools.wraps(method)
    def guarded(self: Catalog, *args: Any, **kwargs: Any) -> Any:
        with self._guard:
            return method(self, *args, **kwargs)

    return cast(_Method, guarded)


class Catalog:
    """The rows one load reads and the rows it parsed afresh; `save` writes them back."""

    def __init__(self, state_dir: Path | None, fingerprint: str = "") -> None:
        """`state_dir=None` is no catalogue: every lookup misses and nothing is written."""
        self._path = state_dir / CATALOG_FILE if state_dir is not None else None
        self._fingerprint = fingerprint
        self._guard = threading.RLock()  # see `_one_at_a_time`
        self._connection: sqlite3.Connection | None = None
        self._rows: dict[str, Row] | None = None  # read on first lookup, each dropped once used
        self._stored: set[str] = set()  # the paths the catalogue held when read
        self._fetched: set[str] = set()  # the paths whose rows were read
        self._order: list[str] = []
        self._index: dict[str, int] | None = None
        self._fresh: dict[str, Row] = {}
        # A load's save transaction, begun once many fresh rows were kept (`_STREAM_ROWS`):
        # the rows written so far wait in it for the save to commit them.
        self._streaming = False  # a whole load (`expect`): its rows may be written early
        self._stream: sqlite3.Connection | None = None
        self._stream_lost = False  # the transaction failed: this load writes nothing
        self._replace = False  # the file on disk is unusable: write a new one
        self._foreign = False  # written by another parser or Python: nothing in it is used
        if self._path is not None:
            self._connection = self._connect(self._path)

    # --- reading ------------------------------------------------------------------

    @_one_at_a_time
    def listing(self, key: bytes | None) -> Listing | None:
        """The stored description of the last load, if it was made from exactly `key`."""
        if key is None:
            return None
        found = self.last_listing()
        return found[1] if found is not None and found[0] == key else None

    @_one_at_a_time
    def last_listing(self) -> tuple[bytes, Listing] | None:
        """The stored description of the last load and its key, whatever walk it was for."""
        if self._connection is None or self._foreign:
            return None
        try:
            found = self._connection.execute(
                "SELECT key, cards, warnings, digest FROM listing WHERE id = 1"
            ).fetchone()
        except sqlite3.Error:
            self._give_up(replace=True)
            return None
        if found is None:
            return None
        key, cards, warnings_blob, digest = found
        if type(key) is not bytes or type(cards) is not int or type(warnings_blob) is not bytes:
            return None
        if digest != _digest(key, str(cards).encode(), warnings_blob):
            return None
        warnings = _loads(warnings_blob)
        if type(warnings) is not tuple or not all(map(_well_formed_warning, warnings)):
            return None
        return key, Listing(cards, warnings)

    @_one_at_a_time
    def search_columns(self, key: bytes | None, cards: int) -> StoredSearch | None:
        """The search columns stored with the listing of `key` (None: not stored, or damaged);
        their blocks are read when first needed."""
        if key is None or self._connection is None or self._foreign:
            return None
        try:
            found = self._connection.execute(
                "SELECT key, cards, blocks, digest FROM search_head WHERE id = 1"
            ).fetchone()
        except sqlite3.Error:  # a catalogue from before the table: written with the next listing
            return None
        if found is None or found[0] != key or found[1] != cards or type(found[2]) is not bytes:
            return None
        blocks = found[2]
        if len(blocks) != 16 * -(-cards // SEARCH_BLOCK):
            return None
        if found[3] != _digest(key, str(cards).encode(), blocks):
            return None
        return StoredSearch(self, key, cards, blocks, found[3])

    @_one_at_a_time
    def search_blocks(self, numbers: list[int]) -> dict[int, tuple[bytes, bytes]]:
        """These blocks of search columns, as stored (columns, digest), unchecked."""
        connection = self._reopened()
        if connection is None or not numbers:
            return {}
        marks = ",".join("?" * len(numbers))
        query = f"SELECT block, columns, digest FROM search_blocks WHERE block IN ({marks})"  # noqa: S608 - only placeholders
        try:
            return {row[0]: row[1:] for row in connection.execute(query, numbers)}
        except sqlite3.Error:
            return {}

    @_one_at_a_time
    def has_search(self, key: bytes | None) -> bool:
        if key is None or self._connection is None or self._foreign:
            return False
        try:
            found = self._connection.execute("SELECT key FROM search_head WHERE id = 1").fetchone()
        except sqlite3.Error:
            return False
        return found is not None and found[0] == key

    @_one_at_a_time
    def recorded_walk(self, token: str) -> bytes | None:
        """The head of the walk recorded under the watcher's `token` (None: none, another,
        or damaged); the walk itself is read by `recorded_walk_files`."""
        return self._read_one("walk_record", "token", "head", token)

    @_one_at_a_time
    def recorded_walk_files(self, token: str, digest: bytes) -> bytes | None:
        """The files of the walk recorded under `token`, if their digest is `digest` (the
        one its head names)."""
        connection = self._reopened()
        if connection is None:
            return None
        try:
            found = connection.execute(
                "SELECT token, walk FROM walk_record WHERE id = 1"
            ).fetchone()
        except sqlite3.Error:
            return None
        if found is None or found[0] != token or type(found[1]) is not bytes:
            return None
        return cast(bytes, found[1]) if walk_digest(found[1]) == digest else None

    @_one_at_a_time
    def record_walk(self, token: str, head: bytes, walk: bytes) -> None:
        """Keep a walk under `token`: its `head` (which names `walk_digest(walk)`) and its
        files, in a transaction of their own; a catalogue that cannot take it (none yet,
        locked, read-only) keeps nothing, and the next load walks."""
        self._write_one(_WALKED_SCHEMA, "walk_record", token, head, walk)

    @_one_at_a_time
    def listing_walk(self, key: bytes | None) -> bytes | None:
        """The walk kept under the listing `key` (packed with its warnings), if any; the
        caller checks that it gives `key` again."""
        return None if key is None else self._read_one("listing_walk", "key", "walk", key)

    @_one_at_a_time
    def record_listing_walk(self, key: bytes | None, walk: bytes) -> None:
        """Keep the walk (packed with its warnings) the listing `key` was worked out from."""
        if key is not None:
            self._write_one(_LISTING_WALK_SCHEMA, "listing_walk", key, walk)

    @_one_at_a_time
    def tag_column(self, key: bytes | None, cards: int) -> list[list[str]] | None:
        """Each card's casefolded tags, recorded under the listing `key` (None: not recorded,
        or damaged)."""
        if key is None:
            return None
        column = _loads(self._read_one("tags", "key", "tags", key))
        if type(column) is not list or len(column) != cards:
            return None
        for tags in column:
            if type(tags) is not list or not all(type(tag) is str for tag in tags):
                return None
        return column

    @_one_at_a_time
    def record_tags(self, key: bytes | None, column: list[list[str]]) -> None:
        """Keep each card's casefolded tags under the listing `key` (see `record_walk`)."""
        if key is not None:
            self._write_one(_TAGS_SCHEMA, "tags", key, marshal.dumps(column))

    @_one_at_a_time
    def superseded_entries(self, key: bytes | None) -> list[Any] | None:
        """Who supersedes whom in the load the listing `key` describes, as
        `record_superseded` kept it (None: not recorded, or damaged)."""
        if key is None:
            return None
        entries = _loads(self._read_one("superseded", "key", "entries", key))
        if type(entries) is not list or not all(_superseded_entry(e) for e in entries):
            return None
        return entries

    @_one_at_a_time
    def record_superseded(self, key: bytes | None, entries: list[Any]) -> None:
        """Keep [old name, [[newer name, its first day or None], ...]] per superseded card
        under the listing `key` (see `record_walk`)."""
        if key is not None:
            self._write_one(_SUPERSEDED_SCHEMA, "superseded", key, marshal.dumps(entries))

    def _read_one(self, table: str, key_column: str, column: str, key: str | bytes) -> bytes | None:
        """`table`'s one row's value, if stored under `key` and its digest matches."""
        connection = self._reopened()
        if connection is None:
            return None
        query = f"SELECT {key_column}, {column}, digest FROM {table} WHERE id = 1"  # noqa: S608 - fixed names
        try:
            found = connection.execute(query).fetchone()
        except sqlite3.Error:  # no such table yet
            return None
        if found is None or found[0] != key or type(found[1]) is not bytes:
            return None
        sealed = key.encode() if isinstance(key, str) else key
        return cast(bytes, found[1]) if found[2] == _digest(sealed, found[1]) else None

    def _write_one(
        self, schema: str, table: str, key: str | bytes, value: bytes, *rest: bytes
    ) -> None:
        """Replace `table`'s one row (key, value, digest, *rest), in a transaction of its
        own; the digest seals the key and the value only."""
        connection = self._reopened()
        if connection is None:
            return
        sealed = key.encode() if isinstance(key, str) else key
        with contextlib.suppress(sqlite3.Error):
            connection.execute(schema)
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute(f"DELETE FROM {table}")  # noqa: S608 - a fixed name
                marks = ", ?" * len(rest)
                connection.execute(
                    f"INSERT INTO {table} VALUES (1, ?, ?, ?{marks})",  # noqa: S608 - fixed names
                    (key, value, _digest(sealed, value), *rest),
                )
            except BaseException:
                connection.rollback()
                raise
            connection.commit()

    def _reopened(self) -> sqlite3.Connection | None:
        """The connection, opened again after a whole load closed it; None without a usable
        catalogue."""
        if self._foreign or self._replace or self._path is None:
            return None
        if self._connection is None:
            self._connection = self._connect(self._path)
        return self._connection

    @_one_at_a_time
    def payloads(self, wanted: list[tuple[str, Stamp]]) -> dict[str, Payload]:
        """The checked payloads of these (relpath, stamp), read in one query; a file whose
        row is missing, stale or damaged is left out."""
        rows = self.rows([relpath for relpath, _ in wanted]) or {}
        found = {}
        for relpath, stamp in wanted:
            row = rows.get(relpath)
            payload = checked_payload(relpath, stamp, row) if row is not None else None
            if payload is not None:
                found[relpath] = payload
        return found

    @_one_at_a_time
    def rows(self, relpaths: list[str]) -> dict[str, Row] | None:
        """The `files` rows of these paths as stored, read in one query and not checked
        (`checked_payload` checks one, in any process); None: the catalogue cannot be read."""
        if self._connection is None or self._foreign:
            return None
        try:
            return _select_rows(self._connection, relpaths)
        except sqlite3.Error:
            return None

    def row_reader(self) -> RowReader | None:
        """What another process reads this catalogue's `files` rows with (`RowReader`);
        None without a usable catalogue."""
        if self._connection is None or self._foreign or self._path is None:
            return None
        return RowReader(os.fspath(self._path), self._meta())

    @_one_at_a_time
    def expect(self, relpaths: list[str]) -> None:
        """The order the load will look files up in: rows are read ahead in it, a batch at a
        time, so the stored forms are never all in memory at once."""
        self._order = relpaths
        self._index = None
        self._streaming = True

    @_one_at_a_time
    def lookup(self, relpath: str, stamp: Stamp) -> Payload | None:
        """The payload parsed from this very file (the same `stamp_of`), if stored.

        Rows are checked here, one by one as they are used: a row whose digest
        or shape is wrong is simply a miss.
        """
        if self._rows is None:
            self._rows, self._stored = {}, self._stored_relpaths()
        rows = self._rows
        row = rows.pop(relpath, None)  # a load looks each file up once: free its row
        if row is None and relpath in self._stored and relpath not in self._fetched:
            self._read_ahead(relpath)
            row = rows.pop(relpath, None)
        if row is None:
            return None
        return checked_payload(relpath, stamp, row)

    def _stored_relpaths(self) -> set[str]:
        if self._connection is None:
            return set()
        try:
            return {row[0] for row in self._connection.execute("SELECT relpath FROM files")}
        except sqlite3.Error:
            self._give_up(replace=True)
            return set()

    def _read_ahead(self, relpath: str) -> None:
        """Read the rows of `relpath` and of the files expected after it."""
        if self._index is None:
            self._index = {path: at for at, path in enumerate(self._order)}
        at = self._index.get(relpath)
        following = self._order[at : at + _BATCH] if at is not None else [relpath]
        batch = [path for path in following if path in self._stored and path not in self._fetched]
        if relpath not in batch:
            batch.append(relpath)
        self._fetched.update(batch)
        if self._connection is None or self._rows is None:
            return
        marks = ",".join("?" * len(batch))
        query = f"SELECT {_ROW_COLUMNS} FROM files WHERE relpath IN ({marks})"  # noqa: S608 - only placeholders
        try:
            for row in self._connection.execute(query, batch):
                self._rows[row[0]] = row[1:]
        except sqlite3.Error:
            self._give_up(replace=True)

    def store(self, relpath: str, stamp: Stamp, payload: Payload) -> None:
        if self._path is not None and not self._stream_lost:  # else no row need be made
            self.keep(relpath, row_of(relpath, stamp, payload))

    @_one_at_a_time
    def keep(self, relpath: str, row: Row) -> None:
        """Store a row made by `row_of` (elsewhere, perhaps in another process)."""
        if self._path is not None and not self._stream_lost:
            self._fresh[relpath] = row
            if self._streaming and len(self._fresh) >= _STREAM_ROWS:
                self._flush()

    def _flush(self) -> None:
        """Write the fresh rows kept so far in the save's transaction, begun now if need be
        (the save writes the rest and commits; a load that fails rolls them back)."""
        try:
            if self._stream is None:
                self._stream = self._begin(self._order)
                if self._stream is None:  # nothing can be written: the save finds so too
                    self._streaming = False
                    return
            self._insert_fresh(self._stream)
        except (OSError, sqlite3.Error, ValueError):
            self._lose_stream()

    @_one_at_a_time
    def abandon(self) -> None:
        """A load that failed before its save: the rows it wrote early are rolled back (a
        later attempt keeps and saves its own)."""
        if self._stream is not None:
            self._lose_stream()
            self._stream_lost = False

    def _lose_stream(self) -> None:
        """The early rows' transaction failed or was closed: this load saves nothing."""
        stream, self._stream = self._stream, None
        if stream is not None:
            with contextlib.suppress(sqlite3.Error):
                stream.rollback()
        self._stream_lost, self._streaming, self._fresh = True, False, {}

    @property
    @_one_at_a_time
    def keeps_rows(self) -> bool:
        """Whether `store` and `keep` keep anything (not without a catalogue)."""
        return self._path is not None

    @_one_at_a_time
    def holds(self, relpath: str) -> bool:
        """Whether a row of `relpath` may be stored: if not, `lookup` certainly misses."""
        if self._rows is None:
            self._rows, self._stored = {}, self._stored_relpaths()
        return relpath in self._stored

    # --- writing ------------------------------------------------------------------

    @_one_at_a_time
    def save(
        self,
        relpaths: list[str],
        key: bytes | None,
        listing: Listing | None,
        already: Listing | None = None,
        search: Callable[[], SearchColumns] | None = None,
    ) -> None:
        """Store the fresh rows, drop rows of files no longer found, record the load.

        One transaction: another process sees the catalogue before or after it.
        `listing` is None when the load may not be reused as a whole; `already` is the
        listing the catalogue holds, so an unchanged one is not written again.
        `search` gives the load's search columns, asked for only when they are written.
        """
        if self._path is None or self._stream_lost:
            return
        stale = bool(self._stored - set(relpaths))
        unchanged = listing is None or listing == already
        searchable = listing is None or search is None or self.has_search(key)
        if self._stream is None and not self._fresh and not stale and unchanged and searchable:
            return  # nothing new: a reader takes no write lock
        columns = search() if search is not None and listing is not None else None
        with contextlib.suppress(OSError, sqlite3.Error, ValueError):
            self._write(relpaths, key, listing, columns)

    def _write(
        self,
        relpaths: list[str],
        key: bytes | None,
        listing: Listing | None,
        search: SearchColumns | None,
    ) -> None:
        assert self._path is not None
        state_dir = self._path.parent
        connection, self._stream = self._stream, None
        if connection is not None and relpaths is not self._order:  # not the files expected
            self._remove_gone(connection, relpaths)
        if connection is None:
            connection = self._begin(relpaths)
        if connection is None:
            return
        try:
            self._insert_fresh(connection)
            self._write_rest(connection, key, listing, search)
        except BaseException:
            connection.rollback()
            raise
        connection.commit()
        connection.execute("PRAGMA journal_mode=WAL")
        for retired in _RETIRED:  # the load cache this catalogue replaced, and its temporaries
            files.clean_stale_temporaries(state_dir, retired, also=(".vault-cache.",))
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.lstat(state_dir / retired).st_mode):
                    os.unlink(state_dir / retired)

    def _begin(self, relpaths: list[str]) -> sqlite3.Connection | None:
        """The save's transaction, begun: the catalogue made ready for this parser's rows and
        the rows of files no longer found removed. None: nothing can be written."""
        assert self._path is not None
        state_dir = self._path.parent
        state_dir.mkdir(exist_ok=True)
        if not files.state_dir_contained(state_dir):
            return None
        if self._replace or self._connection is None:
            self._start_afresh(self._path)
        connection = self._connection
        if connection is None:
            return None
        # WAL lets readers read while a writer writes; a catalogue filled for the first
        # time is filled with the rollback journal, which writes new pages once (the WAL
        # would write them twice), and then turned to WAL.
        filling = not self._stored and len(self._fresh) > 1000
        if filling:
            connection.execute("PRAGMA journal_mode=DELETE")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute("PRAGMA secure_delete=ON")  # a replaced row leaves no old bytes behind
        connection.execute("BEGIN IMMEDIATE")  # waits BUSY_SECONDS at most for another writer
        try:
            meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
            if meta != self._meta():  # another parser's rows, perhaps in another format's layout
                connection.execute("DROP TABLE IF EXISTS files")
                connection.execute(_FILES_SCHEMA)
                connection.execute("DELETE FROM meta")
                connection.executemany("INSERT INTO meta VALUES (?, ?)", self._meta().items())
            else:
                self._remove_gone(connection, relpaths)
        except BaseException:
            connection.rollback()
            raise
        return connection

    def _remove_gone(self, connection: sqlite3.Connection, relpaths: list[str]) -> None:
        kept = set(relpaths)
        gone = [(relpath,) for relpath in self._stored if relpath not in kept]
        connection.executemany("DELETE FROM files WHERE relpath = ?", gone)

    def _insert_fresh(self, connection: sqlite3.Connection) -> None:
        """Write the fresh rows kept so far (in the order they were kept) and let them go."""
        connection.executemany(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?)",
            ((relpath, *row) for relpath, row in self._fresh.items()),
        )
        self._fresh = {}

    def _write_rest(
        self,
        connection: sqlite3.Connection,
        key: bytes | None,
        listing: Listing | None,
        search: SearchColumns | None,
    ) -> None:
        connection.execute("DELETE FROM listing")
        if key is not None and listing is not None:
            warnings = marshal.dumps(listing.warnings)
            digest = _digest(key, str(listing.cards).encode(), warnings)
            connection.execute(
                "INSERT INTO listing VALUES (1, ?, ?, ?, ?)", (key, listing.cards, warnings, digest)
            )
        for retired in _RETIRED_TABLES:
            connection.execute(f"DROP TABLE IF EXISTS {retired}")
        for statement in _SEARCH_SCHEMA:  # one by one: `executescript` would commit
            connection.execute(statement)
        connection.execute("DELETE FROM search_head")
        connection.execute("DELETE FROM search_blocks")
        if (
            key is not None
            and listing is not None
            and search is not None
            and search.files is not None
        ):
            blocks = search.blocks()
            digests = [
                _digest(key, str(number).encode(), block) for number, block in enumerate(blocks)
            ]
            connection.executemany(
                "INSERT INTO search_blocks VALUES (?, ?, ?)",
                zip(range(len(blocks)), blocks, digests, strict=True),
            )
            listed = b"".join(digests)
            cards = len(search.names)
            connection.execute(
                "INSERT INTO search_head VALUES (1, ?, ?, ?, ?)",
                (key, cards, listed, _digest(key, str(cards).encode(), listed)),
            )

    # --- the connection -----------------------------------------------------------

    def _connect(self, path: Path, create: bool = False) -> sqlite3.Connection | None:
        """An open catalogue whose `meta` says it holds rows of this parser, else None.

        A file that is there but unusable marks the catalogue for replacement.
        """
        try:
            status = os.lstat(path)
        except FileNotFoundError:
            if not create:
                return None
            status = None
        except OSError:
            return None
        if status is not None and not stat.S_ISREG(status.st_mode):
            self._replace = not stat.S_ISDIR(status.st_mode)
            return None
        connection = None
        try:
            connection = sqlite3.connect(
                path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False
            )
            if create:  # the first write fills it with the rollback journal (see `_write`)
                # Pages of 16 KB hold a typical card's parse without overflow pages: a first
                # load of 100k cards writes its rows in 0.6 s less than with the default 4 KB.
                connection.execute(f"PRAGMA page_size={_PAGE_SIZE}")
                connection.executescript(_SCHEMA)
                return connection
            meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
            if meta != self._meta():  # another parser's rows: written over by `save`
                self._rows, self._stored, self._foreign = {}, set(), True
            return connection
        except sqlite3.Error:
            if connection is not None:
                with contextlib.suppress(sqlite3.Error):
                    connection.close()
            self._replace = True
            return None

    def _start_afresh(self, path: Path) -> None:
        """Replace a missing or unusable catalogue by an empty one.

        Only while holding the state directory's lock without waiting: a
        process that finds it taken (another replacing, an index build)
        leaves the catalogue alone this time.
        """
        self.close()
        self._rows, self._stored = {}, set()
        with files.try_locked(path.parent) as held:
            if held:
                _remove_catalog(path)
                self._connection = self._connect(path, create=True)
                self._replace = False

    def _meta(self) -> dict[str, str]:
        return {"format": FORMAT, "parser": self._fingerprint, "python": _PYTHON}

    def _give_up(self, replace: bool) -> None:
        self.close()
        self._replace = replace

    @_one_at_a_time
    def close(self) -> None:
        if self._stream is not None:  # a load that did not save: its early rows go
            self._lose_stream()
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(sqlite3.Error):
                connection.close()


def _remove_catalog(path: Path) -> None:
    """Remove an unusable catalogue and its journals (not a directory in its place)."""
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm", f"{path.name}-journal"):
        entry = path.parent / name
        with contextlib.suppress(OSError):
            if not stat.S_ISDIR(os.lstat(entry).st_mode):
                os.unlink(entry)


def walk_digest(walk: bytes) -> bytes:
    return _digest(b"walk", walk)


def _digest(*parts: bytes) -> bytes:
    hasher = hashlib.blake2b(digest_size=16)
    for part in parts:
        hasher.update(len(part).to_bytes(8, "little"))
        hasher.update(part)
    return hasher.digest()


def row_of(relpath: str, stamp: Stamp, payload: Payload) -> Row:
    """The `files` row recording `payload` as parsed from the file of this stamp."""
    stored = marshal.dumps(payload)
    return (*stamp, stored, _row_digest(relpath, stamp, stored))


# A `files` row as read, after its relpath: the stamp's four columns, payload, digest.
_ROW_COLUMNS = "relpath, size, mtime_ns, inode, ctime_ns, payload, digest"


def _row_digest(relpath: str, stamp: Stamp, stored: bytes) -> bytes:
    """The digest of a `files` row: its key, the file's stamp and the stored parse."""
    size, mtime_ns, inode, ctime_ns = stamp
    signature = f"{relpath}\0{size}\0{mtime_ns}\0{inode}\0{ctime_ns}\0"
    hasher = hashlib.blake2b(signature.encode("utf-8", "surrogatepass"), digest_size=16)
    hasher.update(stored)  # the same digest as of the two joined, without copying the parse
    return hasher.digest()


class RowReader:
    """A catalogue's `files` rows as `Catalog.rows` reads them, read in whichever process
    asks (it pickles: a worker process reads the rows it needs instead of being sent them).
    Each process opens the file once, read-only, and reads rows only while its `meta` is
    the one the catalogue had when this was made (another parser's rows: None); the rows
    themselves are checked by `checked_payload`, as any are."""

    def __init__(self, path: str, meta: dict[str, str]) -> None:
        self.path, self.meta = path, meta

    def rows(self, relpaths: list[str]) -> dict[str, Row] | None:
        """The `files` rows of these paths (None: the catalogue cannot be read as one with
        this meta)."""
        try:
            status = os.stat(self.path)
        except OSError:
            return None
        key = (os.getpid(), self.path)
        with _READERS_LOCK:
            opened = _READERS.get(key)
            try:
                if opened is None or opened[0] != (status.st_dev, status.st_ino):
                    if opened is not None:  # the catalogue was written anew since
                        opened[1].close()
                        del _READERS[key]
                    uri = f"{Path(self.path).resolve().as_uri()}?mode=ro"
                    connection = sqlite3.connect(
                        uri, uri=True, timeout=BUSY_SECONDS, check_same_thread=False
                    )
                    opened = _READERS[key] = ((status.st_dev, status.st_ino), connection)
                connection = opened[1]
                if dict(connection.execute("SELECT key, value FROM meta").fetchall()) != self.meta:
                    return None
                return _select_rows(connection, relpaths)
            except sqlite3.Error:
                return None


def _select_rows(connection: sqlite3.Connection, relpaths: list[str]) -> dict[str, Row]:
    """The `files` rows of these paths as stored, in one query (sqlite3.Error goes up)."""
    if not relpaths:
        return {}
    marks = ",".join("?" * len(relpaths))
    query = f"SELECT {_ROW_COLUMNS} FROM files WHERE relpath IN ({marks})"  # noqa: S608 - only placeholders
    return {row[0]: row[1:] for row in connection.execute(query, relpaths)}


# Each process's read-only connection of `RowReader`s, by (process, path), with the file
# it opened (device, inode); used one at a time.
_READERS: dict[tuple[int, str], tuple[tuple[int, int], sqlite3.Connection]] = {}
_READERS_LOCK = threading.Lock()


def checked_payload(relpath: str, stamp: Stamp, row: Row) -> Payload | None:
    """The payload of a `files` row (as `Catalog.rows` reads it), if it was read from this
    very file (the same stamp) and is intact."""
    if row[0] != stamp[0] or row[1] != stamp[1] or row[2] != stamp[2] or row[3] != stamp[3]:
        return None
    stored, digest = row[4], row[5]
    if digest != _row_digest(relpath, stamp, stored):
        return None
    payload = _loads(stored)
    if not _well_formed(payload):
        return None
    return cast(Payload, payload)


def _superseded_entry(entry: object) -> bool:
    if type(entry) is not list or len(entry) != 2 or type(entry[0]) is not str:
        return False
    newer = entry[1]
    return type(newer) is list and all(
        type(item) is list
        and len(item) == 2
        and type(item[0]) is str
        and (item[1] is None or type(item[1]) is str)
        for item in newer
    )


def _loads(stored: object) -> object:
    if type(stored) is not bytes:
        return None
    try:
        return marshal.loads(stored)
    except Exception:  # noqa: BLE001 - a damaged row is a miss
        return None


def _well_formed(payload: object) -> bool:
    """A payload of the documented shape, its data plain."""
    if type(payload) is not tuple:
        return False
    if len(payload) in (5, 6) and payload[0] == "ok":
        _, authored, body, heading, links = payload[:5]
        return (
            (len(payload) == 5 or (type(payload[5]) is dict and _plain(payload[5])))
            and type(authored) is dict
            and type(body) is str
            and (heading is None or type(heading) is str)
            and type(links) is list
            and all(map(_well_formed_link, links))
            and _plain(authored)
        )
    return len(payload) == 2 and payload[0] == "refused" and type(payload[1]) is str


def _well_formed_link(link: object) -> bool:
    return (
        type(link) is tuple
        and len(link) == 2
        and type(link[0]) is str
        and type(link[1]) is dict
        and _plain(link[1])
    )


def _well_formed_warning(warning: object) -> bool:
    return (
        type(warning) is tuple
        and len(warning) == 3
        and type(warning[0]) is str
        and type(warning[1]) is str
        and (warning[2] is None or type(warning[2]) is str)
    )


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: object, depth: int = 0) -> bool:
    """Data as a header gives it: str-keyed dicts, lists and scalars, not absurdly deep."""
    if depth > 200:
        return False
    if type(value) is dict:
        return all(
            type(key) is str and (type(item) in _SCALARS or _plain(item, depth + 1))
            for key, item in value.items()
        )
    if type(value) is list:
        return all(type(item) in _SCALARS or _plain(item, depth + 1) for item in value)
    return type(value) in _SCALARS
