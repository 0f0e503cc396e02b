"""Finding the documents below a vault root, with one `stat` each (reference §9.1).

This is all a vault opened from its catalogue runs per file, so it imports
nothing that parses: no PyYAML, no document or link grammar. Directory
symlinks are followed once: a directory already walked is not entered
again, so a symlink loop terminates.
"""

from __future__ import annotations

import array
import bisect
import contextlib
import functools
import hashlib
import marshal
import operator
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, cast, overload

from hql import files, messages
from hql.vault.model import LoadWarning

FORMATS = {".hmd": "Hmd", ".md": "Markdown", ".markdown": "Markdown"}

REFERENCE = "reference"
OBSIDIAN = "obsidian"
DIALECTS = (REFERENCE, OBSIDIAN)

# The modules whose code decides what a file parses to, and what a whole load assembles.
_PARSING = ("document.py", "yamldata.py", "links.py", "loader.py")
_ASSEMBLING = ("assembly.py", "model.py", "store.py")


@functools.cache
def parser_fingerprint() -> str:
    """Identifies the code that turns text into catalogued payloads.

    A catalogue written by another version of the parser (or of PyYAML) must
    not be trusted, so its rows carry this; changing the parsing modules
    changes it without anyone remembering to bump a number. It is worked out
    from the files, without importing them.
    """
    return _fingerprint(_PARSING, _yaml_identity())


@functools.cache
@functools.cache
def assembly_fingerprint() -> str:
    """Identifies the code that assembles cards, kinds and warnings from the payloads."""
    return _fingerprint(_ASSEMBLING, "")


def _fingerprint(names: tuple[str, ...], extra: str) -> str:
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for name in names:
        with contextlib.suppress(OSError):
            digest.update((here / name).read_bytes())
    digest.update(extra.encode())
    return digest.hexdigest()[:16]


def _yaml_identity() -> str:
    """PyYAML's package source (it names its version) and its compiled parts, unimported."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("yaml")
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.origin is None:
        return "no yaml"
    package = Path(spec.origin)
    try:
        parts = [hashlib.sha256(package.read_bytes()).hexdigest()]
        parts += sorted(entry.name for entry in package.parent.iterdir() if "_yaml" in entry.name)
    except OSError:
        return "yaml unreadable"
    return " ".join(parts)


def dialect_of(root: str | os.PathLike[str], configured: str | None) -> str:
    """`[vault] dialect` when set, else Obsidian's when the vault has an `.obsidian/` folder."""
    return declared_dialect(root, configured) or REFERENCE


def declared_dialect(root: str | os.PathLike[str], configured: str | None) -> str | None:
    """The dialect the vault declares (`[vault] dialect`, or an `.obsidian/` folder); None
    when it declares none and its notes decide (`hql.vault.detect`)."""
    if configured is not None:
        return configured
    return OBSIDIAN if os.path.isdir(os.path.join(root, ".obsidian")) else None


# What must be unchanged for what was read from a file to still hold: its stamp (size,
# mtime, inode and change time: hql.vault.catalog.stamp_of says why the change time) and
# its mode. A column of each, as array codes and `stat` fields.
_SIGNATURE_COLUMNS = (
    ("q", "st_size"),
    ("q", "st_mtime_ns"),
    ("Q", "st_ino"),
    ("Q", "st_mode"),
    ("q", "st_ctime_ns"),
)
SIGNATURE_CODES = "".join(code for code, _ in _SIGNATURE_COLUMNS)


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

    __slots__ = ("relpaths", "paths", "formats", "statuses", "_columns")

    def __init__(
        self,
        relpaths: list[str] | None = None,
        paths: Sequence[str] | None = None,
        formats: list[str] | None = None,
        statuses: Sequence[os.stat_result | OSError] | None = None,
    ) -> None:
        self.relpaths: list[str] = [] if relpaths is None else relpaths
        self.paths: Sequence[str] = [] if paths is None else paths
        self.formats: list[str] = [] if formats is None else formats
        self.statuses: Sequence[os.stat_result | OSError] = [] if statuses is None else statuses
        self._columns: list[bytes] | None = None

    def found(self) -> list[FoundFile]:
        return list(map(FoundFile, self.relpaths, self.paths, self.formats, self.statuses))

    def signatures(self) -> list[object]:
        """Per document what must be unchanged for what was read from it to still hold."""
        return [
            (status.st_size, status.st_mtime_ns, status.st_ino, status.st_mode, status.st_ctime_ns)
            if type(status) is os.stat_result
            else repr(status)
            for status in self.statuses
        ]

    def signature_columns(self) -> list[bytes]:
        """`signatures` as a few byte strings (size, mtime_ns, inode, mode, ctime_ns), made
        without a Python object per file; a walk with a file `stat` failed on, as marshalled
        `signatures`. Worked out once: a load asks for them more than once."""
        columns = self._columns
        if columns is None:
            columns = self._columns = self._signature_columns()
        return list(columns)

    def _signature_columns(self) -> list[bytes]:
        statuses = self.statuses
        if isinstance(statuses, _RecordedStatuses):
            return statuses.columns
        if all(type(status) is os.stat_result for status in statuses):
            try:
                return _signature_columns(cast(Sequence[os.stat_result], statuses))
            except OverflowError:
                pass
        return [marshal.dumps(self.signatures())]

    def packed(self) -> bytes | None:
        """The walk as bytes, to be `unpacked` while nothing below the vault changes; None
        when a file's `stat` failed (such a walk is simply made again)."""
        columns = self.signature_columns()
        if len(columns) != len(_SIGNATURE_COLUMNS):
            return None
        # A path holds no NUL, so joined columns split back exactly (and only into text).
        return marshal.dumps(("\0".join(self.relpaths), "\0".join(self.formats), *columns))

    @classmethod
    def unpacked(cls, stored: bytes, root: str) -> Walk | None:
        """The walk `packed` gave, below `root` as given; None when `stored` is not one."""
        try:
            relpaths, formats, *columns = marshal.loads(stored)
            statuses = _RecordedStatuses(columns)
            relpaths, formats = relpaths.split("\0"), formats.split("\0")
        except Exception:  # noqa: BLE001 - not a packed walk: walk again
            return None
        if relpaths == [""]:
            relpaths, formats = [], []
        if not len(relpaths) == len(formats) == len(statuses):
            return None
        if not _FORMAT_NAMES.issuperset(formats):
            return None
        return cls(relpaths, _Joined(root, relpaths), formats, statuses)

    def with_statuses(self, changed: dict[int, os.stat_result]) -> Walk:
        """This walk with the `stat`s at these positions replaced (a file seen again)."""
        statuses: Sequence[os.stat_result | OSError]
        if isinstance(self.statuses, _RecordedStatuses):
            statuses = self.statuses.with_statuses(changed)
        else:
            statuses = list(self.statuses)
            for at, status in changed.items():
                statuses[at] = status
        return Walk(self.relpaths, self.paths, self.formats, statuses)

    @classmethod
    def of(cls, found: list[FoundFile]) -> Walk:
        return cls(
            [item.relpath for item in found],
            [item.path for item in found],
            [item.format for item in found],
            [item.status if item.status is not None else OSError() for item in found],
        )


_FORMAT_NAMES = frozenset(FORMATS.values())


def _signature_columns(statuses: Sequence[os.stat_result]) -> list[bytes]:
    """The size, mtime_ns, inode, mode and ctime_ns of each `stat`, a byte string per column
    (raises OverflowError for a value a column cannot hold)."""
    return [
        array.array(code, map(operator.attrgetter(field), statuses)).tobytes()
        for code, field in _SIGNATURE_COLUMNS
    ]


class _Joined(Sequence[str]):
    """`root` joined with each relative path, as the walk joins them, when first asked for."""

    __slots__ = ("_root", "_relpaths")

    def __init__(self, root: str, relpaths: list[str]) -> None:
        self._root, self._relpaths = root, relpaths

    def __len__(self) -> int:
        return len(self._relpaths)

    @overload
    def __getitem__(self, at: int) -> str: ...
    @overload
    def __getitem__(self, at: slice) -> list[str]: ...
    def __getitem__(self, at: int | slice) -> str | list[str]:
        if isinstance(at, slice):
            return [os.path.join(self._root, relpath) for relpath in self._relpaths[at]]
        return os.path.join(self._root, self._relpaths[at])

    def __iter__(self) -> Iterator[str]:
        join, root = os.path.join, self._root
        return (join(root, relpath) for relpath in self._relpaths)


class _RecordedStatuses(Sequence[os.stat_result]):
    """The `stat`s of a recorded walk, each made from the columns when first asked for
    (size, mtime_ns, inode, mode and ctime_ns are all a load reads of them)."""

    __slots__ = ("columns", "_arrays")

    def __init__(self, columns: list[bytes]) -> None:
        if len(columns) != len(_SIGNATURE_COLUMNS) or not all(type(c) is bytes for c in columns):
            raise ValueError("not the columns of a walk")
        arrays = []
        for (code, _), column in zip(_SIGNATURE_COLUMNS, columns, strict=True):
            values = array.array(code)
            values.frombytes(column)
            arrays.append(values)
        if len({len(values) for values in arrays}) != 1:
            raise ValueError("columns of different lengths")
        self.columns = columns
        self._arrays = arrays

    def __len__(self) -> int:
        return len(self._arrays[0])

    def with_statuses(self, changed: dict[int, os.stat_result]) -> _RecordedStatuses:
        """These columns with the `stat`s at these positions replaced."""
        arrays = [array.array(values.typecode, values) for values in self._arrays]
        for at, status in changed.items():
            for values, (_, field) in zip(arrays, _SIGNATURE_COLUMNS, strict=True):
                values[at] = getattr(status, field)
        return _RecordedStatuses([values.tobytes() for values in arrays])

    @overload
    def __getitem__(self, at: int) -> os.stat_result: ...
    @overload
    def __getitem__(self, at: slice) -> list[os.stat_result]: ...
    def __getitem__(self, at: int | slice) -> os.stat_result | list[os.stat_result]:
        if isinstance(at, slice):
            return [self[index] for index in range(len(self))[at]]
        size, mtime_ns, inode, mode, ctime_ns = (values[at] for values in self._arrays)
        seconds, changed = mtime_ns // 1_000_000_000, ctime_ns // 1_000_000_000
        fields = (mode, inode, 0, 1, 0, 0, size, seconds, seconds, changed)
        extra = {
            "st_mtime_ns": mtime_ns,
            "st_mtime": mtime_ns / 1e9,
            "st_ctime_ns": ctime_ns,
            "st_ctime": ctime_ns / 1e9,
        }
        return os.stat_result(fields, extra)

    def __iter__(self) -> Iterator[os.stat_result]:
        return map(self.__getitem__, range(len(self)))


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
    found = _Columns([], [], [], [], [])
    _walk(root, "", set(), warnings, containment, outside, found)
    if outside:  # named by the first in the walk's order
        first = min(outside, key=_components)
        warnings.append(LoadWarning(first, messages.symlinks_outside(len(outside))))
    return Walk(found.relpaths, found.paths, found.formats, _statuses(found.entries, found.runs))


class _Columns(NamedTuple):
    """What `_walk` appends to: the Walk's columns, and each document's entry to `stat`."""

    relpaths: list[str]
    paths: list[str]
    formats: list[str]
    entries: list[os.DirEntry[str]]
    # Runs of documents in walk order: each one's folder, names, and whether all of them are
    # plain (regular files, not symlinks, as listed), whose `stat` is an `lstat` of the name.
    runs: list[tuple[str, list[str], bool]]


# A walk of this many documents or more shares their `stat`s with a forked process
# (hql/vault/workers.py) when the machine has a core to spare: each `stat` is a system
# call of a few microseconds, and two processes make them side by side.
SHARED_STATS_FROM = 20_000
_STATS_PER_TASK = 1_000


def _statuses(
    entries: list[os.DirEntry[str]], runs: list[tuple[str, list[str], bool]]
) -> Sequence[os.stat_result | OSError]:
    """Each document's `stat` (symlinks followed), or the error it raised."""
    if len(entries) >= SHARED_STATS_FROM:
        from hql.vault import workers

        if workers.usable() and workers.core_free():
            shared = _shared_statuses(entries, workers.share)
            if shared is not None:
                return shared
    statuses: list[os.stat_result | OSError] = []
    at = 0
    for folder, names, plain in runs:
        run = entries[at : at + len(names)]
        at += len(names)
        made = _folder_statuses(folder, names) if plain else None
        if made is None:
            try:
                made = list(map(_STAT, run))
            except OSError:  # one failed: each keeps its `stat` or its error
                made = [_status(entry) for entry in run]
        statuses.extend(made)
    return statuses


_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _folder_statuses(folder: str, names: list[str]) -> list[os.stat_result | OSError] | None:
    """The `lstat` of each plain document of a folder (what its entry's `stat` makes of a
    file that is no symlink), each name looked up in the folder opened once rather than
    along its whole path: a tenth or so less than the path's `stat`. None when the folder
    cannot be opened (then each entry makes its own)."""
    if os.stat not in os.supports_dir_fd:
        return None
    try:
        descriptor = os.open(folder, _FOLDER_FLAGS)
    except OSError:
        return None
    try:
        lstat = os.lstat
        try:
            return [lstat(name, dir_fd=descriptor) for name in names]
        except OSError:  # one failed: each keeps its `lstat` or its error
            return [_lstatus(name, descriptor) for name in names]
    finally:
        os.close(descriptor)


def _lstatus(name: str, descriptor: int) -> os.stat_result | OSError:
    try:
        return os.lstat(name, dir_fd=descriptor)
    except OSError as error:
        return error


_STAT = os.DirEntry.stat


def _status(entry: os.DirEntry[str]) -> os.stat_result | OSError:
    try:
        return entry.stat()
    except OSError as error:
        return error


def _shared_statuses(
    entries: list[os.DirEntry[str]], share: Callable[..., None]
) -> _RecordedStatuses | None:
    """The `stat`s made by this process and a forked one, as columns; None when one failed
    (then they are made again here, each failure kept as its error)."""
    tasks = -(-len(entries) // _STATS_PER_TASK)
    done: list[list[bytes] | None] = [None] * tasks

    def part(task: int) -> list[os.DirEntry[str]]:
        return entries[task * _STATS_PER_TASK : (task + 1) * _STATS_PER_TASK]

    def columns_of(task: int) -> list[bytes] | None:
        try:
            return _signature_columns([entry.stat() for entry in part(task)])
        except (OSError, OverflowError):
            return None

    def here(task: int) -> None:
        done[task] = columns_of(task)

    def received(task: int, columns: object) -> None:
        size = 8 * len(part(task))
        if type(columns) is not list or len(columns) != len(_SIGNATURE_COLUMNS):
            return
        if all(type(column) is bytes and len(column) == size for column in columns):
            done[task] = columns

    share(tasks, here, columns_of, received)
    for task in range(tasks):
        if done[task] is None:  # not sent back by the forked process
            done[task] = columns_of(task)
    made = [columns for columns in done if columns is not None]
    if len(made) < tasks:
        return None
    joined = [b"".join(columns[at] for columns in made) for at in range(len(_SIGNATURE_COLUMNS))]
    try:
        statuses = _RecordedStatuses(joined)
    except ValueError:  # columns of different lengths: not the forked process's to say
        return None
    return statuses if len(statuses) == len(entries) else None


_BY_NAME = operator.attrgetter("name")
_SUFFIXES = tuple(FORMATS)


def _walk(
    directory: str,
    prefix: str,
    visited: set[tuple[int, int]],
    warnings: list[LoadWarning],
    containment: files.Containment,
    outside: list[str],
    found: _Columns,
) -> None:
    """Add the documents below `directory` to `found`.

    This runs once per file of the vault on every load, so a folder's plain documents
    (regular files, not symlinks, with a document's extension: nearly all of them) are
    picked out, sorted and added in bulk, asking each entry only what the listing
    already knows (its type); only the rest (folders, symlinks, entries of unknown type)
    are looked at one by one. The documents' entries are `stat`ed afterwards.
    """
    try:
        identity = os.stat(directory)
        key = (identity.st_dev, identity.st_ino)
        if key in visited:
            warnings.append(LoadWarning("", messages.directory_loop(directory)))
            return
        visited.add(key)
        with os.scandir(directory) as listing:
            entries = list(listing)
    except OSError as error:
        warnings.append(LoadWarning(directory, messages.directory_unreadable(_reason(error))))
        return
    suffixes = _SUFFIXES
    try:
        documents = [
            entry
            for entry in entries
            if (name := entry.name).endswith(suffixes)
            and name[0] != "."
            and entry.is_file(follow_symlinks=False)
        ]
        others = [entry for entry in entries if not entry.is_file(follow_symlinks=False)]
    except OSError:  # an entry of unknown type gone since the listing: each is asked alone
        documents, others = [], entries
    listed = len(documents)
    folders = _sorted_out(others, documents, containment, outside)
    plain = len(documents) == listed  # no symlink nor entry of unknown type among them
    documents.sort(key=_BY_NAME)
    if not folders:
        _add(documents, directory, prefix, plain, found)
        return
    # Each folder's documents come where its name sorts among this folder's documents.
    names = [entry.name for entry in documents]
    start = 0
    for folder in folders:
        end = bisect.bisect_left(names, folder.name, start)
        _add(documents[start:end], directory, prefix, plain, found)
        _walk(
            folder.path, prefix + folder.name + "/", visited, warnings, containment, outside, found
        )
        start = end
    _add(documents[start:], directory, prefix, plain, found)


def _sorted_out(
    entries: list[os.DirEntry[str]],
    documents: list[os.DirEntry[str]],
    containment: files.Containment,
    outside: list[str],
) -> list[os.DirEntry[str]]:
    """The folders among `entries` to walk, in name order; their documents (symlinks among
    them) are added to `documents`, and what leads outside the vault to `outside`."""
    formats = FORMATS
    folders = []
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
            folders.append(entry)
        elif format_name is not None:
            documents.append(entry)
    folders.sort(key=_BY_NAME)
    return folders


def _add(
    documents: list[os.DirEntry[str]], directory: str, prefix: str, plain: bool, found: _Columns
) -> None:
    """Add a run of one folder's documents, in name order."""
    if not documents:
        return
    names = [entry.name for entry in documents]
    found.relpaths.extend([prefix + name for name in names] if prefix else names)
    found.paths.extend([entry.path for entry in documents])
    formats = FORMATS
    found.formats.extend([formats[name[name.rfind(".") :]] for name in names])
    found.entries.extend(documents)
    found.runs.append((directory, names, plain))


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


def _components(path: str) -> list[str]:
    return path.split(os.sep)


def _reason(error: OSError) -> str:
    return (error.strerror or str(error)).lower()
