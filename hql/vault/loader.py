"""Finding and reading the documents below a vault root (reference §9.1).

Every way a file can be hostile ends here as a LoadWarning naming it: it
cannot be read, it vanished, it is not a regular file, it is too large, it is
not UTF-8, its header or annotations are refused. Directory symlinks are
followed once: a directory already loaded is not entered again, so a
symlink loop terminates.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import operator
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from hql import files, messages
from hql.vault import document, links, yamldata
from hql.vault.catalog import Catalog, Payload
from hql.vault.model import LoadWarning

# A card larger than this is refused unread: one file must not cost the whole load.
MAX_CARD_BYTES = 8 * 1024 * 1024

FORMATS = {".hmd": "Hmd", ".md": "Markdown", ".markdown": "Markdown"}


@functools.cache
def parser_fingerprint() -> str:
    """Identifies the code that turns text into cached payloads.

    A cache written by another version of the parser (or of PyYAML) must not
    be trusted, so its entries carry this; changing the parsing modules
    changes it without anyone remembering to bump a number.
    """
    digest = hashlib.sha256()
    for module in (document, yamldata, links, sys.modules[__name__]):
        source = getattr(module, "__file__", None)
        if source is not None:
            with contextlib.suppress(OSError):
                digest.update(Path(source).read_bytes())
    digest.update(f"{yaml.__version__} {yamldata._BaseLoader.__name__}".encode())
    return digest.hexdigest()[:16]


@dataclass(slots=True)  # not frozen: built 10k times a load, and frozen init is slower
class FoundFile:
    relpath: str  # vault-relative, "/"-separated
    path: str  # root as given, joined with relpath
    format: str
    # What `stat` said during the walk (symlinks followed), or the error it raised.
    status: os.stat_result | OSError | None = None


class Walk:
    """The documents a walk found, as columns: a vault opened from its catalogue
    needs only their paths and `stat`s, so no object is made per file until
    the cards are read."""

    __slots__ = ("relpaths", "paths", "formats", "statuses")

    def __init__(self) -> None:
        self.relpaths: list[str] = []
        self.paths: list[str] = []
        self.formats: list[str] = []
        self.statuses: list[os.stat_result | OSError] = []

    def found(self) -> list[FoundFile]:
        return list(map(FoundFile, self.relpaths, self.paths, self.formats, self.statuses))

    def signatures(self) -> list[object]:
        """Per document what must be unchanged for what was read from it to still hold."""
        return [
            (status.st_size, status.st_mtime_ns, status.st_ino, status.st_mode)
            if type(status) is os.stat_result
            else repr(status)
            for status in self.statuses
        ]

    @classmethod
    def of(cls, found: list[FoundFile]) -> Walk:
        walk = cls()
        for item in found:
            walk.relpaths.append(item.relpath)
            walk.paths.append(item.path)
            walk.formats.append(item.format)
            walk.statuses.append(item.status if item.status is not None else OSError())
        return walk


@dataclass(slots=True)
class ReadDocument:
    found: FoundFile
    size: int
    mtime_ns: int
    parsed: document.ParsedDocument


def discover(
    root: str, warnings: list[LoadWarning], allow_outside: tuple[str, ...] = ()
) -> list[FoundFile]:
    """Every document below root, sorted by path component-wise (as the reference does)."""
    return walk(root, warnings, allow_outside).found()


def walk(root: str, warnings: list[LoadWarning], allow_outside: tuple[str, ...] = ()) -> Walk:
    """Every document below root with its `stat`, sorted by path component-wise.

    A symlink whose target is outside the vault (and outside every root the
    vault allows) is skipped; one warning counts them all. Each folder's
    entries are visited in name order, depth first, which is that order.
    """
    containment = files.Containment(root, allow_outside)
    outside: list[str] = []
    found = Walk()
    _walk(root, "", set(), warnings, containment, outside, found)
    if outside:
        warnings.append(LoadWarning(outside[0], messages.symlinks_outside(len(outside))))
    return found


_BY_NAME = operator.attrgetter("name")


def _walk(
    directory: str,
    prefix: str,
    visited: set[tuple[int, int]],
    warnings: list[LoadWarning],
    containment: files.Containment,
    outside: list[str],
    found: Walk,
) -> None:
    """Add the documents below `directory` to `found`.

    This loop runs once per file of the vault on every load, so it asks each
    directory entry only what the listing already knows (its type), plus one
    `stat` per document, and makes no object per file.
    """
    try:
        identity = os.stat(directory)
        key = (identity.st_dev, identity.st_ino)
        if key in visited:
            warnings.append(LoadWarning("", messages.directory_loop(directory)))
            return
        visited.add(key)
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=_BY_NAME)
    except OSError as error:
        warnings.append(LoadWarning(directory, messages.directory_unreadable(_reason(error))))
        return
    formats = FORMATS
    add_relpath, add_path = found.relpaths.append, found.paths.append
    add_format, add_status = found.formats.append, found.statuses.append
    for entry in entries:
        name = entry.name
        if name[0] == ".":
            continue
        dot = name.rfind(".")
        format_name = formats.get(name[dot:]) if dot > 0 else None
        is_dir = _is_dir(entry)
        if (is_dir or format_name) and _is_symlink(entry) and not containment.readable(entry.path):
            outside.append(entry.path)
            continue
        if is_dir:
            _walk(entry.path, prefix + name + "/", visited, warnings, containment, outside, found)
        elif format_name is not None:
            try:
                status: os.stat_result | OSError = entry.stat()
            except OSError as error:
                status = error
            add_relpath(prefix + name)
            add_path(entry.path)
            add_format(format_name)
            add_status(status)


def _is_symlink(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


PROGRESS_FROM = 2000  # files


def read_all(
    found: list[FoundFile],
    catalog: Catalog,
    warnings: list[LoadWarning],
    dialect: str = links.REFERENCE,
) -> list[ReadDocument]:
    from hql.progress import Progress

    documents = []
    # A large first load shows progress on a terminal; cached loads finish before it would draw.
    with Progress(len(found), messages.loading_cards(), minimum=PROGRESS_FROM) as bar:
        for item in found:
            result = _read_one(item, catalog, dialect)
            if isinstance(result, str):
                warnings.append(LoadWarning(item.path, result))
            else:
                documents.append(result)
                extras = result.parsed.extras
                if extras and "warning" in extras:  # read, but not as written
                    warnings.append(LoadWarning(item.path, extras["warning"]))
            bar.advance(1)
    return documents


def _read_one(item: FoundFile, catalog: Catalog, dialect: str) -> ReadDocument | str:
    """The parsed document, or the warning message that skips it."""
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
    payload = catalog.lookup(item.relpath, status.st_size, status.st_mtime_ns, status.st_ino)
    if payload is None:
        loaded = _read_and_parse(item, dialect)
        if isinstance(loaded, str):
            return loaded
        size, mtime_ns, inode, payload = loaded
        catalog.store(item.relpath, size, mtime_ns, inode, payload)
    else:
        size, mtime_ns = status.st_size, status.st_mtime_ns
    if payload[0] == "refused":
        return str(payload[1])
    parsed = document.ParsedDocument(*payload[1:])
    return ReadDocument(item, size, mtime_ns, parsed)


def _read_and_parse(item: FoundFile, dialect: str) -> tuple[int, int, int, Payload] | str:
    """Read (size and mtime from the open file, so they describe what was read) and parse."""
    try:
        with open(item.path, "rb") as handle:
            status = os.fstat(handle.fileno())
            if not stat.S_ISREG(status.st_mode):
                return messages.file_not_regular()
            data = handle.read(MAX_CARD_BYTES + 1)
    except FileNotFoundError:
        return messages.file_vanished()
    except OSError as error:
        return messages.file_unreadable(_reason(error))
    if len(data) > MAX_CARD_BYTES:
        return messages.file_too_large(len(data), MAX_CARD_BYTES)
    return status.st_size, status.st_mtime_ns, status.st_ino, _parse(data, dialect)


def _parse(data: bytes, dialect: str = links.REFERENCE) -> Payload:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return ("refused", messages.file_not_utf8(error.start))
    text = text.removeprefix("\ufeff")  # a byte-order mark is an encoding detail, not content
    if dialect == links.OBSIDIAN:
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
