"""Finding and reading the documents below a vault root (reference §9.1).

Every way a file can be hostile ends here as a LoadWarning naming it: it
cannot be read, it vanished, it is not a regular file, it is too large, it is
not UTF-8, its header or annotations are refused. Directory symlinks are
followed once: a directory already loaded is not entered again, so a
symlink loop terminates.
"""

from __future__ import annotations

import io
import marshal
import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from hql import messages
from hql.vault import document, yamldata
from hql.vault.catalog import Catalog, Payload, Row, Stamp, row_of, stamp_of
from hql.vault.model import LoadWarning, text_digest_of
from hql.vault.walk import (  # noqa: F401 - the walk's names, as the loader has always offered them
    FORMATS,
    OBSIDIAN,
    REFERENCE,
    FoundFile,
    Walk,
    discover,
    parser_fingerprint,
    walk,
)

if TYPE_CHECKING:
    from hql.progress import Progress

# A card larger than this is refused unread: one file must not cost the whole load.
MAX_CARD_BYTES = 8 * 1024 * 1024


@dataclass(slots=True)
class ReadDocument:
    found: FoundFile
    size: int
    mtime_ns: int
    parsed: document.ParsedDocument
    text_digest: str | None = None  # `Card.digest`, when worked out while reading


PROGRESS_FROM = 2000  # files
# A load that must parse this many files or more shares them with a forked process.
SHARED_FROM = 2000

# A file read afresh: (size, mtime_ns, payload, its catalogue row or None, the digest of
# its card's retrieval text or None).
_Fresh = tuple[int, int, Payload, Row | None, str | None]


def read_all(
    found: list[FoundFile],
    catalog: Catalog,
    warnings: list[LoadWarning],
    dialect: str = REFERENCE,
) -> list[ReadDocument]:
    from hql.progress import Progress

    documents = []
    # A large first load shows progress on a terminal; cached loads finish before it would draw.
    with Progress(len(found), messages.loading_cards(), minimum=PROGRESS_FROM) as bar:
        early = _read_new_shared(found, catalog, dialect, bar)
        for at, item in enumerate(found):
            fresh = None
            if early is not None:  # let each go once used: its row is the catalogue's now
                fresh, early[at] = early[at], None
            if fresh is None:
                result = _read_one(item, catalog, dialect)
                bar.advance(1)
            else:
                result = _kept(item, catalog, fresh)
            if isinstance(result, str):
                warnings.append(LoadWarning(item.path, result))
            else:
                documents.append(result)
                extras = result.parsed.extras
                if extras and "warning" in extras:  # read, but not as written
                    warnings.append(LoadWarning(item.path, extras["warning"]))
    return documents


def _read_one(item: FoundFile, catalog: Catalog, dialect: str) -> ReadDocument | str:
    """The parsed document, or the warning message that skips it."""
    status = _status(item)
    if isinstance(status, str):
        return status
    stamp = stamp_of(status)
    payload = catalog.lookup(item.relpath, stamp)
    if payload is None:
        loaded = _read_and_parse(item, dialect)
        if isinstance(loaded, str):
            return loaded
        stamp, payload = loaded
        catalog.store(item.relpath, stamp, payload)
    return _document(item, stamp[0], stamp[1], payload)


def _status(item: FoundFile) -> os.stat_result | str:
    """What the walk's `stat` said of the file, or the warning message that skips it."""
    status = item.status
    if status is None:
        try:
            status = os.stat(item.path)
        except OSError as error:
            status = error
    if isinstance(status, FileNotFoundError):
        return messages.file_vanished()
    if isinstance(status, OSError):
        return messages.file_unreadable(_reason(status))
    if not stat.S_ISREG(status.st_mode):
        return messages.file_not_regular()
    if status.st_size > MAX_CARD_BYTES:
        return messages.file_too_large(status.st_size, MAX_CARD_BYTES)
    return status


def _document(
    item: FoundFile, size: int, mtime_ns: int, payload: Payload, text_digest: str | None = None
) -> ReadDocument | str:
    if payload[0] == "refused":
        return str(payload[1])
    return ReadDocument(item, size, mtime_ns, document.ParsedDocument(*payload[1:]), text_digest)


def _read_new_shared(
    found: list[FoundFile], catalog: Catalog, dialect: str, bar: Progress
) -> list[_Fresh | str | None] | None:
    """The files the catalogue holds no row for, read and parsed by this process and a
    forked one at once, when there are many (a first load); None: nothing was.

    A file without a result (the other process failed) is left to `_read_one`.
    """
    new = [at for at, item in enumerate(found) if not catalog.holds(item.relpath)]
    if len(new) < SHARED_FROM:
        return None
    from hql.vault import workers

    if not workers.usable() or not workers.core_free():
        return None
    early: list[_Fresh | str | None] = [None] * len(found)
    # A load that writes the catalogue writes every card's digest too: worked out here, on
    # both cores, it costs the load nothing after the reading.
    keep_rows = catalog.keeps_rows
    # Every file is new (a first load): the ones read here, from the front, are the first
    # in load order, so their rows go to the catalogue at once (which writes them as it
    # goes), not after the whole read. The child's rows follow in the loop of `read_all`.
    at_once = keep_rows and len(new) == len(found)

    def here(task: int) -> None:
        at = new[task]
        if early[at] is None:
            fresh = _read_new(found[at], dialect, keep_rows, keep_rows)
            if at_once and not isinstance(fresh, str) and fresh[3] is not None:
                catalog.keep(found[at].relpath, fresh[3])
                fresh = (fresh[0], fresh[1], fresh[2], None, fresh[4])
            early[at] = fresh
            bar.advance(1)

    def there(task: int) -> tuple[Row, str | None] | str:
        result = _read_new(found[new[task]], dialect, True, keep_rows)
        return result if isinstance(result, str) else (cast(Row, result[3]), result[4])

    def received(task: int, result: object) -> None:
        at = new[task]
        if early[at] is None:
            early[at] = _from_row(result)
            if early[at] is not None:
                bar.advance(1)

    workers.share(len(new), here, there, received)
    return early


def _read_new(item: FoundFile, dialect: str, with_row: bool, with_digest: bool) -> _Fresh | str:
    """A file the catalogue holds no row for, the row that records it and the digest of
    its card's retrieval text (when the document alone decides the card's title), if wanted."""
    status = _status(item)
    if isinstance(status, str):
        return status
    loaded = _read_and_parse(item, dialect)
    if isinstance(loaded, str):
        return loaded
    stamp, payload = loaded
    row = row_of(item.relpath, stamp, payload) if with_row else None
    text_digest = None
    if with_digest and payload[0] == "ok":
        from hql.vault import assembly

        title = assembly.title_of(payload[1], payload[3], item.relpath, dialect)
        if title is not None:  # else the card's name is its title, and names are the vault's
            text_digest = text_digest_of(title, payload[1], payload[2])
    return stamp[0], stamp[1], payload, row, text_digest


def _from_row(result: object) -> _Fresh | str | None:
    """What the other process sent for a file: a warning, or the file's row and digest."""
    if type(result) is str:
        return result
    if type(result) is not tuple or len(result) != 2:
        return None
    row, text_digest = result
    if type(row) is not tuple or len(row) != 6:
        return None
    if text_digest is not None and type(text_digest) is not str:
        return None
    size, mtime_ns, inode, ctime_ns, stored, digest = row
    if not (type(size) is type(mtime_ns) is type(inode) is type(ctime_ns) is int):
        return None
    if type(stored) is not bytes or type(digest) is not bytes:
        return None
    try:
        payload = marshal.loads(stored)
    except (EOFError, ValueError, TypeError):
        return None
    if type(payload) is not tuple or not payload or payload[0] not in ("ok", "refused"):
        return None
    return size, mtime_ns, payload, row, text_digest


def _kept(item: FoundFile, catalog: Catalog, fresh: _Fresh | str) -> ReadDocument | str:
    """A file read ahead: its row goes to the catalogue (in load order, as `_read_one`'s)."""
    if isinstance(fresh, str):
        return fresh
    size, mtime_ns, payload, row, text_digest = fresh
    if row is not None:
        catalog.keep(item.relpath, row)
    return _document(item, size, mtime_ns, payload, text_digest)


def _read_and_parse(item: FoundFile, dialect: str) -> tuple[Stamp, Payload] | str:
    """Read (the stamp from the open file, so it describes what was read) and parse."""
    try:
        data, status = _read_file(item.path)
    except FileNotFoundError:
        return messages.file_vanished()
    except OSError as error:
        return messages.file_unreadable(_reason(error))
    if data is None:
        return messages.file_not_regular()
    if len(data) > MAX_CARD_BYTES:
        return messages.file_too_large(len(data), MAX_CARD_BYTES)
    return stamp_of(status), _parse(data, dialect)


def _read_file(path: str) -> tuple[bytes | None, os.stat_result]:
    """The file's bytes (None: not a regular file) and its `fstat`; up to the cap plus a byte.

    Unbuffered: a buffered reader costs a third more per file, for nothing here.
    """
    with open(path, "rb", buffering=0) as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            return None, status
        # As much as `stat` says, plus one byte to notice growth: a read of the cap
        # itself would allocate 8 MB per file.
        data = _read_up_to(handle, min(status.st_size, MAX_CARD_BYTES) + 1)
        if len(data) > status.st_size:  # it grew while being read: up to the cap
            data += _read_up_to(handle, MAX_CARD_BYTES + 1 - len(data))
        return data, status


def _read_up_to(handle: io.FileIO, wanted: int) -> bytes:
    """`wanted` bytes, fewer only at the end of the file (one read may return fewer)."""
    data = handle.read(wanted)
    if len(data) == wanted or not data:
        return data
    parts, got = [data], len(data)
    while got < wanted and (chunk := handle.read(wanted - got)):
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _parse(data: bytes, dialect: str = REFERENCE) -> Payload:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return ("refused", messages.file_not_utf8(error.start))
    text = text.removeprefix("\ufeff")  # a byte-order mark is an encoding detail, not content
    if dialect == OBSIDIAN:
        # The Obsidian grammar costs milliseconds to import; a reference vault never needs it.
        from hql.vault import links

        try:
            note = links.parse_note(text)
        except RecursionError:
            return ("refused", messages.header_refused(messages.yaml_too_deep(yamldata.MAX_DEPTH)))
        return ("ok", note.authored, note.body, note.heading, note.links, note.extras)
    try:
        parsed = document.parse(text)
    except document.DocumentRefused as refusal:
        return ("refused", str(refusal))
    except RecursionError:
        return ("refused", messages.header_refused(messages.yaml_too_deep(yamldata.MAX_DEPTH)))
    before_body = len(text) - len(parsed.body)
    if before_body:  # where the body starts, so task lines count from the file's top
        extras = {"body_line": text.count("\n", 0, before_body)}
        return ("ok", parsed.authored, parsed.body, parsed.heading, parsed.links, extras)
    return ("ok", parsed.authored, parsed.body, parsed.heading, parsed.links)


def _reason(error: OSError) -> str:
    return (error.strerror or str(error)).lower()
