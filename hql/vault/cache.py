"""The load cache: parsed documents kept under `<root>/.hql/`, keyed by file.

An entry is trusted only while its file has the same size and mtime_ns as
when it was parsed; anything else is parsed again. The cache is the user's
own file but still input: whatever fails while reading it (missing, corrupt,
truncated, another Python's marshal format, wrong shapes) means "start
empty", silently. If `.hql/` cannot be written, loading simply does not cache.

Format: the sha256 of the rest, then marshal of ((MAGIC, parser fingerprint),
python version, {relpath: (size, mtime_ns, payload)}), payload being
`("ok", authored, body, heading, links)` (plus, read by the Obsidian dialect
or with a front matter, a map of extras) or `("refused", message)`. marshal is
fast, handles exactly the plain data a Data tree is, and executes nothing when
read; the checksum is verified before marshal sees a byte, so a damaged or
tampered cache (a changed title, a crafted length that would allocate
gigabytes) is rebuilt, never believed. Entries are checked again one by one
as they are used, down to every key and value of the data they hold.
"""

from __future__ import annotations

import contextlib
import marshal
import sys
from pathlib import Path
from typing import Any, cast

from hql import files

CACHE_FILE = "vault-cache.marshal"
_MAGIC = "hql.vault-cache.v2"
# A cache larger than this is ignored (and rebuilt): it is read whole.
MAX_CACHE_BYTES = 2 * 1024 * 1024 * 1024
_PYTHON = tuple(sys.version_info[:2])

Payload = tuple[Any, ...]
Entry = tuple[int, int, Payload]


class LoadCache:
    """Entries read from disk, plus what this load parsed afresh."""

    def __init__(self, state_dir: Path | None, fingerprint: str = "") -> None:
        """`fingerprint` names the parser that made the entries; another one's are ignored."""
        self._file = state_dir / CACHE_FILE if state_dir is not None else None
        self._fingerprint = fingerprint
        self._old: dict[str, Entry] = self._read() if self._file is not None else {}
        self._new: dict[str, Entry] = {}
        self._changed = False

    def lookup(self, relpath: str, size: int, mtime_ns: int) -> Payload | None:
        """The payload parsed from this very file (same size and mtime), if cached.

        Entries are checked here, one by one as they are used, rather than all
        up front: a malformed entry is simply a miss.
        """
        entry: object = self._old.get(relpath)
        if not _well_formed(entry):
            return None
        checked = cast(Entry, entry)
        if checked[0] != size or checked[1] != mtime_ns:
            return None
        self._new[relpath] = checked
        return checked[2]

    def store(self, relpath: str, size: int, mtime_ns: int, payload: Payload) -> None:
        self._new[relpath] = (size, mtime_ns, payload)
        self._changed = True

    def save(self) -> None:
        """Write the entries of this load, if anything changed; failure is silent."""
        if self._file is None:
            return
        if not self._changed and self._new.keys() == self._old.keys():
            return
        with contextlib.suppress(OSError, ValueError):
            self._write(self._file)

    def _read(self) -> dict[str, Entry]:
        assert self._file is not None
        try:
            # One read (marshal.load on a file reads in tiny pieces), of a regular file only.
            body = files.unseal(files.read_regular(self._file, MAX_CACHE_BYTES))
            if body is None:
                return {}
            magic, python, entries = marshal.loads(body)
        except Exception:  # noqa: BLE001 - any failure of the cache means "rebuild"
            return {}
        if magic != (_MAGIC, self._fingerprint) or python != _PYTHON:
            return {}
        return entries if type(entries) is dict else {}

    def _write(self, file: Path) -> None:
        file.parent.mkdir(exist_ok=True)
        files.clean_stale_temporaries(file.parent, file.name, also=(".vault-cache.",))
        data = marshal.dumps(((_MAGIC, self._fingerprint), _PYTHON, self._new))
        files.write_atomically(file, files.seal(data))


def _well_formed(entry: object) -> bool:
    """(size, mtime_ns, payload) with a payload of the documented shape."""
    if type(entry) is not tuple or len(entry) != 3:
        return False
    size, mtime_ns, payload = entry
    if type(size) is not int or type(mtime_ns) is not int or type(payload) is not tuple:
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
