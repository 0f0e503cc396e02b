"""Finding the documents below a vault root, with one `stat` each (reference §9.1).

This is all a vault opened from its catalogue runs per file, so it imports
nothing that parses: no PyYAML, no document or link grammar. Directory
symlinks are followed once: a directory already walked is not entered
again, so a symlink loop terminates.
"""

from __future__ import annotations

import array
import contextlib
import functools
import hashlib
import operator
import os
from dataclasses import dataclass
from pathlib import Path

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
    if configured is not None:
        return configured
    return OBSIDIAN if os.path.isdir(os.path.join(root, ".obsidian")) else REFERENCE


_SIGNATURE_COLUMNS = (("q", "st_size"), ("q", "st_mtime_ns"), ("Q", "st_ino"), ("Q", "st_mode"))


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

    def signature_columns(self) -> list[bytes]:
        """`signatures` as a few byte strings (size, mtime_ns, inode and mode columns), made
        without a Python object per file; a walk with a file `stat` failed on, as marshalled
        `signatures`."""
        statuses = self.statuses
        if all(type(status) is os.stat_result for status in statuses):
            try:
                return [
                    array.array(code, map(operator.attrgetter(field), statuses)).tobytes()
                    for code, field in _SIGNATURE_COLUMNS
                ]
            except OverflowError:
                pass
        import marshal

        return [marshal.dumps(self.signatures())]

    @classmethod
    def of(cls, found: list[FoundFile]) -> Walk:
        walk = cls()
        for item in found:
            walk.relpaths.append(item.relpath)
            walk.paths.append(item.path)
            walk.formats.append(item.format)
            walk.statuses.append(item.status if item.status is not None else OSError())
        return walk


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


def _reason(error: OSError) -> str:
    return (error.strerror or str(error)).lower()
