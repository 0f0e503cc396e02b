"""Which dialect a vault is written in when nothing says so.

A vault with an `.obsidian/` folder, or with `[vault] dialect`, says how it
is read. A clone of an Obsidian vault rarely carries `.obsidian/`, so
without either its notes decide: links in forms only Obsidian reads
(`[[a|shown]]`, `[[a#Heading]]`, `[[a#^block]]`, `![[embed]]`, targets with
spaces, `[[folder/a]]`, names that match a note only ignoring case or by an
alias, Markdown links to notes) make it an Obsidian vault. Names that match
only an alias are looked for when no other form decides (reading every
note's aliases would cost more than the rest of the scan). A vault holding
`.hmd` cards is the reference's own and keeps the reference dialect, and so
does one whose links are all plain `[[name]]`: the two dialects read those
alike.

The scan reads each Markdown file's bytes once, without parsing, and stops
once `ENOUGH_NOTES` notes have shown such links; its verdict is kept in
`.hql/dialect.json` beside a digest of the walk (every path and `stat`), so
an unchanged vault is not read again to decide.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hql.vault.catalog import listing_key
from hql.vault.walk import OBSIDIAN, REFERENCE, Walk

DECISION_FILE = "dialect.json"
# Once this many notes have shown a form only Obsidian reads, the rest are not read: the
# verdict is Obsidian's whatever they hold.
ENOUGH_NOTES = 32
_FORMAT = 1
_MAX_BYTES = 8 * 1024 * 1024  # larger files are refused by the load anyway

# The kinds of evidence, in the order a note lists them.
KINDS = (
    "alias",  # [[a|shown]]
    "heading",  # [[a#Heading]]
    "block",  # [[a#^block]]
    "embed",  # ![[a]]
    "spaces",  # [[Two words]] naming a note
    "path",  # [[folder/a]] naming a note by its path
    "case",  # [[a]] matching a note only ignoring case
    "by-alias",  # [[a]] matching a note only by its `aliases`
    "markdown",  # [text](folder/Note.md)
)

_CODE = re.compile(rb"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|%%.*?(?:%%|\Z)|`[^`\n]*`", re.S)
_WIKILINK = re.compile(rb"\[\[([^\[\]\n]+)\]\]")  # starting at `[[`: searched for fast
_MARKDOWN_LINK = re.compile(rb"\]\(([^()\s]+?\.md)(?:#[^()\s]*)?\)")
_HEADER = re.compile(rb"\A---\r?\n(.*?)\r?\n---\r?\n", re.S)
_ALIASES = re.compile(rb"^alias(?:es)?:", re.M)


@dataclass(frozen=True)
class Choice:
    """A dialect and why: evidence counted by kind, the first note showing any."""

    dialect: str
    links: int = 0  # wikilinks and Markdown links scanned
    forms: dict[str, int] = field(default_factory=dict)
    first: str | None = None
    hmd: bool = False  # the vault holds `.hmd` cards
    notes: int = 0  # the notes read to decide
    complete: bool = True  # every note was read (else `ENOUGH_NOTES` showed some)

    def evidence(self) -> int:
        return sum(self.forms.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "dialect": self.dialect,
            "links": self.links,
            "forms": self.forms,
            "first": self.first,
            "hmd": self.hmd,
            "notes": self.notes,
            "complete": self.complete,
        }


def choose(walked: Walk, state_dir: Path | None) -> Choice:
    """The dialect of a walked vault: the remembered verdict when the walk is the one it
    was made for, else a scan of its Markdown files (remembered when `state_dir` is given)."""
    digest = _walk_digest(walked)
    if state_dir is not None and digest is not None:
        remembered = _remembered(state_dir, digest)
        if remembered is not None:
            return remembered
    choice = Choice(REFERENCE, hmd=True) if "Hmd" in walked.formats else scan(walked)
    if state_dir is not None and digest is not None:
        _remember(state_dir, digest, choice)
    return choice


def scan(walked: Walk) -> Choice:
    """Read the walk's Markdown files and count the links only Obsidian reads, until
    `ENOUGH_NOTES` notes have shown some (the rest could not change the verdict).

    The notes of a large vault that its first `_READ_ALONE` notes have not decided are
    read by this process and a forked one at once; their findings are still counted in
    walk order, so the verdict, counts and first note are the ones one reader gives."""
    names = _Names(walked.relpaths)
    files = list(zip(walked.relpaths, walked.paths, walked.statuses, strict=True))
    tally = _Tally()
    alone = _READ_ALONE if len(files) >= SHARED_SCAN_FROM else len(files)
    stopped = tally.count(files[:alone], _read_here(files[:alone], names))
    if not stopped and alone < len(files):
        rest = files[alone:]
        if tally.enough():  # the last of the first notes decided: the rest is not read
            stopped = True
        else:
            shared = _shared_findings(rest, names)
            stopped = tally.count(rest, shared if shared is not None else _read_here(rest, names))
    return tally.choice(names, complete=not stopped)


def _read_here(files: list[_File], names: _Names) -> Iterator[_Found | None]:
    """`_findings` of each file, made as they are counted (the count may stop early)."""
    return (_findings(file, names) for file in files)


# A scan of this many files or more shares them with a forked process once its first
# `_READ_ALONE` files have not decided: a vault showing Obsidian's forms early is read no
# further, and only many notes are worth a fork.
SHARED_SCAN_FROM = 20_000
_READ_ALONE = 2_000
_FILES_PER_TASK = 500

# What one note shows: its wikilinks and Markdown links to notes counted, each form's count,
# the casefolded targets of plain links naming no note (perhaps an alias), and its header
# when it declares aliases. None: not a regular file, or one that could not be read.
_Found = tuple[int, dict[str, int], list[str], bytes | None]
_NOTHING: _Found = (0, {}, [], None)  # a note without links or aliases (never changed)
_File = tuple[str, str, os.stat_result | OSError]  # a file of the walk: relative path, path, `stat`


class _Names:
    """The walk's notes by name, as a link may name them."""

    def __init__(self, relpaths: list[str]) -> None:
        self.stems: dict[str, str] = {}  # casefolded file name -> as written
        self.paths: set[str] = set()  # casefolded vault-relative paths without extension
        self.exact: set[str] = set()
        for relpath in relpaths:
            stem_path = relpath.rsplit(".", 1)[0]
            stem = stem_path.rsplit("/", 1)[-1]
            self.exact.add(stem)
            self.stems.setdefault(stem.casefold(), stem)
            self.paths.add(stem_path.casefold())


def _findings(file: _File, names: _Names) -> _Found | None:
    """What one of the walk's files shows."""
    relpath, path, status = file
    # Only regular files: opening a FIFO would wait for a writer (the load refuses those).
    if not (isinstance(status, os.stat_result) and stat.S_ISREG(status.st_mode)):
        return None
    data = _read(path)
    if data is None:
        return None
    header = _HEADER.match(data)
    aliases = header.group(1) if header is not None and _ALIASES.search(header.group(1)) else None
    if b"[" not in data:  # no link of either kind
        return _NOTHING if aliases is None else (0, {}, [], aliases)
    code = b"`" in data or b"~~~" in data or b"%%" in data
    text = _CODE.sub(b"", data) if code else data
    forms = dict.fromkeys(KINDS, 0)
    links = 0
    pending: list[str] = []
    for match in _WIKILINK.finditer(text):
        links += 1
        bang = text[match.start() - 1 : match.start()] == b"!"
        missed = _count_wikilink(bang, match.group(1), names.exact, names.stems, names.paths, forms)
        if missed is not None:
            pending.append(missed)
    if b"](" in text:
        links += _count_markdown(text, relpath, names.paths, forms)
    return links, {kind: count for kind, count in forms.items() if count}, pending, aliases


def _shared_findings(files: list[_File], names: _Names) -> list[_Found | None] | None:
    """`_findings` of each file, made by this process and a forked one; None when no process
    can be forked, or the machine has no core to spare (then they are read as counted)."""
    from hql.vault import workers

    if not (workers.usable() and workers.core_free()):
        return None
    tasks = -(-len(files) // _FILES_PER_TASK)
    done: list[list[_Found | None] | None] = [None] * tasks

    def part(task: int) -> list[_File]:
        return files[task * _FILES_PER_TASK : (task + 1) * _FILES_PER_TASK]

    def there(task: int) -> list[_Found | None]:
        return [_findings(file, names) for file in part(task)]

    def here(task: int) -> None:
        done[task] = there(task)

    def received(task: int, found: object) -> None:
        if done[task] is None and isinstance(found, list) and len(found) == len(part(task)):
            done[task] = found

    workers.share(tasks, here, there, received)
    return [found for task in range(tasks) for found in done[task] or there(task)]


class _Tally:
    """The findings of the notes counted so far, in walk order."""

    def __init__(self) -> None:
        self.forms = dict.fromkeys(KINDS, 0)
        self.first: str | None = None
        self.links = self.notes = self.showing = 0
        self.alias_headers: list[bytes] = []
        self.pending: list[tuple[str, str]] = []  # plain links naming no note: perhaps an alias

    def enough(self) -> bool:
        return self.showing >= ENOUGH_NOTES

    def count(self, files: list[_File], found: Iterable[_Found | None]) -> bool:
        """Count the files' findings (made as they are counted, when `found` is lazy) until
        enough notes have shown forms; whether a file was left uncounted for that."""
        findings_of = iter(found)
        for relpath, _, _ in files:
            if self.enough():  # before the next file's findings are made: it is not read
                return True
            findings = next(findings_of)
            if findings is _NOTHING:
                self.notes += 1
            elif findings is not None:
                self._add(relpath, findings)
        return False

    def _add(self, relpath: str, findings: _Found) -> None:
        links, forms, pending, aliases = findings
        self.notes += 1
        if aliases is not None:
            self.alias_headers.append(aliases)
        self.links += links
        self.pending.extend((relpath, target) for target in pending)
        if forms:
            for kind, count in forms.items():
                self.forms[kind] += count
            self.showing += 1
            self.first = self.first or relpath

    def choice(self, names: _Names, complete: bool) -> Choice:
        forms, first = self.forms, self.first
        if self.pending and not any(forms.values()):
            # Only now, when nothing else decides, are the notes' aliases read (`hql vault
            # doctor` lists every link found only by an alias).
            aliases = {
                alias.casefold() for header in self.alias_headers for alias in _aliases_of(header)
            }
            for relpath, folded in self.pending:
                if folded in aliases:
                    forms["by-alias"] += 1
                    first = first or relpath
        kept = {kind: count for kind, count in forms.items() if count}
        dialect = OBSIDIAN if kept else REFERENCE
        return Choice(dialect, self.links, kept, first, notes=self.notes, complete=complete)


def _count_wikilink(
    bang: bool,
    inner: bytes,
    exact: set[str],
    stems: dict[str, str],
    paths: set[str],
    forms: dict[str, int],
) -> str | None:
    """Count the link's form; a plain link naming no note gives its casefolded target (it
    may name an alias), anything else None."""
    text = inner.decode("utf-8", "replace")
    if bang:
        forms["embed"] += 1
        return None
    target, bar, _ = text.partition("|")
    target, hash_, anchor = target.partition("#")
    if bar:
        forms["alias"] += 1
        return None
    if hash_:
        forms["block" if anchor.startswith("^") else "heading"] += 1
        return None
    target = target.strip()
    if not target or target in exact and " " not in target:
        return None
    folded = target.casefold().removesuffix(".md")
    if "/" in target:
        if folded in paths or any(path.endswith("/" + folded) for path in paths):
            forms["path"] += 1
        return None
    if folded in stems:
        forms["spaces" if target in exact else "case"] += 1
        return None
    return folded


def _count_markdown(text: bytes, relpath: str, paths: set[str], forms: dict[str, int]) -> int:
    """Markdown links to notes of the vault (relative to the note or to the root)."""
    count = 0
    folder = relpath.rsplit("/", 1)[0] if "/" in relpath else ""
    for raw in _MARKDOWN_LINK.findall(text):
        target = raw.decode("utf-8", "replace")
        if ":" in target:  # a URL
            continue
        from urllib.parse import unquote

        target = unquote(target).removesuffix(".md").casefold()
        joined = os.path.normpath(os.path.join(folder, target)).replace(os.sep, "/")
        if target in paths or joined.casefold() in paths:
            forms["markdown"] += 1
            count += 1
    return count


def _aliases_of(header: bytes) -> list[str]:
    from hql.vault import yamldata

    text = header.decode("utf-8", "replace")
    value: Any = yamldata.load_simple_block_mapping(text)
    if value is None:
        try:
            value = yamldata.load(text)
        except Exception:  # noqa: BLE001 - a header YAML refuses names no alias
            return []
    if not isinstance(value, dict):
        return []
    found = value.get("aliases", value.get("alias"))
    if isinstance(found, str):
        return [found]
    if isinstance(found, list):
        return [item for item in found if isinstance(item, str)]
    return []


def _read(path: str) -> bytes | None:
    """The file's bytes; None for anything but a regular file of at most 8 MiB (opened
    without blocking, so a FIFO put in its place since the walk never waits)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        with os.fdopen(descriptor, "rb") as handle:
            found = os.fstat(handle.fileno())
            if not stat.S_ISREG(found.st_mode) or found.st_size > _MAX_BYTES:
                return None
            return handle.read()  # sized by the file (a read of 8 MiB would allocate that much)
    except OSError:
        return None


def _walk_digest(walked: Walk) -> str | None:
    key = listing_key(walked.relpaths, walked.signature_columns(), ("dialect", _FORMAT))
    return key.hex() if key is not None else None


def evidence_of(data: bytes) -> tuple[object, ...]:
    """All that `scan` reads of one file's bytes: its aliases, its wikilinks and its
    Markdown link targets outside code. Two versions of a file with the same evidence
    leave a scan's verdict, counts and first file as they were."""
    if len(data) > _MAX_BYTES:
        return ("unread",)
    header = _HEADER.match(data)
    aliases: tuple[str, ...] = ()
    if header is not None and _ALIASES.search(header.group(1)):
        aliases = tuple(_aliases_of(header.group(1)))
    if b"[" not in data:
        return aliases, (), ()
    code = b"`" in data or b"~~~" in data or b"%%" in data
    text = _CODE.sub(b"", data) if code else data
    found = tuple(
        (text[match.start() - 1 : match.start()] == b"!", match.group(1))
        for match in _WIKILINK.finditer(text)
    )
    markdown = tuple(_MARKDOWN_LINK.findall(text)) if b"](" in text else ()
    return aliases, found, markdown


def remembered(state_dir: Path, relpaths: list[str], signatures: list[bytes]) -> Choice | None:
    """The verdict kept for the walk of these paths and signature columns, if it is the one
    kept."""
    key = listing_key(relpaths, signatures, ("dialect", _FORMAT))
    return _remembered(state_dir, key.hex()) if key is not None else None


def keep(walked: Walk, state_dir: Path, choice: Choice) -> None:
    """Keep `choice` as the verdict for this walk (one known to give it without a scan)."""
    digest = _walk_digest(walked)
    if digest is not None:
        _remember(state_dir, digest, choice)


def last_choice(state_dir: Path) -> Choice | None:
    """The verdict the last deciding load kept, whatever walk it was made for."""
    return _remembered(state_dir, None)


def _remembered(state_dir: Path, digest: str | None) -> Choice | None:
    try:
        with open(state_dir / DECISION_FILE, encoding="utf-8") as handle:
            stored = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or digest is not None and stored.get("walk") != digest:
        return None
    dialect, forms, first = stored.get("dialect"), stored.get("forms"), stored.get("first")
    if dialect not in (REFERENCE, OBSIDIAN) or not isinstance(forms, dict):
        return None
    if not all(kind in KINDS and type(count) is int for kind, count in forms.items()):
        return None
    links, notes = stored.get("links"), stored.get("notes")
    return Choice(
        dialect,
        links if type(links) is int else 0,
        forms,
        first if isinstance(first, str) else None,
        stored.get("hmd") is True,
        notes if type(notes) is int else 0,
        stored.get("complete") is not False,
    )


def _remember(state_dir: Path, digest: str, choice: Choice) -> None:
    """Keep the verdict for the next load (best effort: a read-only vault decides again)."""
    from hql import files

    if not files.state_dir_contained(state_dir):
        return
    with contextlib.suppress(OSError):
        state_dir.mkdir(exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=state_dir, prefix=".dialect-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump({"walk": digest, **choice.as_json()}, out)
            os.replace(temp, state_dir / DECISION_FILE)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp)
