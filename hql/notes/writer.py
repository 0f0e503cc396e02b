"""The one way notes are written: by the CLI (`hql note`), the Python API (`hql.notes`) and
the MCP tools alike.

Every change reads the note, checks the caller's `base_digest` (the digest of the
file's bytes as the caller last read it: "sha256:<hex>"), edits the parts it names
(`hql.notes.text`, front matter through `hql.notes.frontmatter`) and writes through
`hql.files.write_document`, which compares the digest once more just before the swap:
a note that changed since the caller read it is never overwritten (`Stale`), and
the answer says so. `dry_run` answers the unified diff the change would make and
writes nothing. Nothing is deleted unless asked for in so many words.

After a write the vault's catalogue and bm25 store (and, when configured, the
semantic index) are brought up to date at once (`hql.notes.fresh`), so the next
query sees the note as written.
"""

from __future__ import annotations

import datetime
import difflib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from hql import files, messages
from hql.notes.frontmatter import BrokenFrontMatter, FrontMatter
from hql.notes.text import NoteText, NotUtf8, UnclosedFrontMatter, compose
from hql.vault.walk import FORMATS

if TYPE_CHECKING:
    from hql.notes.fresh import Freshness
    from hql.vault import Vault

# Characters a note's file name may not hold (Obsidian's list, and the path separators).
_UNSAFE_NAME = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+')
MAX_NAME_CHARS = 120
READ_LIMIT = files.MAX_DOCUMENT_BYTES


class NoteRefused(Exception):
    """A change that was not made; `reason` is a short code, the message says why and where."""

    reason = "refused"

    def __init__(self, message: str, *, path: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.details = details

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": False,
            "written": False,
            "reason": self.reason,
            "message": self.message,
            "path": self.path,
            **self.details,
        }


class Stale(NoteRefused):
    """The note changed since the caller read it (its digest is not `base_digest`)."""

    reason = "stale"


class NotFound(NoteRefused):
    reason = "not_found"


class Exists(NoteRefused):
    reason = "exists"


class Outside(NoteRefused):
    """The path leaves the vault, or goes through a symbolic link."""

    reason = "outside"


class Broken(NoteRefused):
    """The note cannot be edited faithfully: its front matter is broken, it is not UTF-8."""

    reason = "broken"


class Invalid(NoteRefused):
    """The request itself is wrong: an empty title, a text to replace that is not there."""

    reason = "invalid"


@dataclass
class Written:
    """What a change did (or, with `dry_run`, would do)."""

    action: str  # new, append, set, unset, section, edit, move, archive, delete
    name: str
    path: str  # vault-relative, posix
    digest: str | None  # the note's digest after the change (None once deleted)
    previous: str | None  # its digest before (None for a new note)
    written: bool  # False for a dry run
    diff: str
    moved_from: str | None = None
    linked_from: list[str] = field(default_factory=list)  # notes linking to an old name
    freshness: Freshness | None = None

    def to_json(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "ok": True,
            "action": self.action,
            "written": self.written,
            "name": self.name,
            "path": self.path,
            "digest": self.digest,
            "previous_digest": self.previous,
            "diff": self.diff,
        }
        if self.moved_from is not None:
            answer["moved_from"] = self.moved_from
            answer["linked_from"] = list(self.linked_from)
        if self.freshness is not None:
            answer["fresh"] = self.freshness.to_json()
        return answer


@dataclass(frozen=True)
class NoteState:
    """A note as read now: what an edit needs to pass as `base_digest`."""

    name: str
    path: str
    digest: str
    text: str  # the whole file, decoded
    properties: dict[str, Any]


class Notes:
    """Writes to the notes of the vault at `root`.

        notes = hql.notes.open("vaults/web-auth")
        state = notes.read("oauth")
        notes.set("oauth", "status", "draft", base_digest=state.digest)

    `fresh=False` leaves the catalogue and stores for the next load to update.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        fresh: bool = True,
        today: Callable[[], datetime.date] | None = None,
    ) -> None:
        from hql.vault.store import check_root

        shown = os.fspath(root)
        check_root(shown, Path(root))
        self.root = Path(root)
        self.fresh = fresh
        self._today = today or (lambda: datetime.datetime.now(datetime.UTC).date())
        self._vault: Vault | None = None

    # --- reading ----------------------------------------------------------------

    def vault(self) -> Vault:
        """The vault as its files are now (a load that the catalogue makes cheap)."""
        from hql.api import open_vault

        self._vault = open_vault(self.root)
        return self._vault

    def locate(self, note: str) -> tuple[str, str]:
        """(name, vault-relative path) of a note given by name, link text or path."""
        note = note.strip()
        if not note:
            raise Invalid(messages.note_needs_name())
        if "/" in note or "\\" in note or note.endswith(tuple(FORMATS)):
            relpath = self._inside(note)
            return PurePosixPath(relpath).stem, relpath
        wanted = note.removeprefix("[[").removesuffix("]]")
        found = self._listed_path(wanted)
        if found is not None:
            return wanted, found
        vault = self.vault()
        found = vault.path_of(wanted)  # the usual case: no card is built to find it
        if found is not None:
            return wanted, found
        card = vault.resolve(wanted)
        if card is None:
            close = difflib.get_close_matches(note, [c.name for c in vault.cards], n=3)
            raise NotFound(messages.note_not_found(note, close), path=None, similar=close)
        return card.name, card.relpath

    def _listed_path(self, name: str) -> str | None:
        """The path of the card named exactly `name` as the catalogue last listed the vault
        (read without walking it), if a note is still there; None: ask the vault as it is."""
        from hql.api import HostError, open_listed_vault

        try:
            listed = open_listed_vault(self.root)
        except HostError:
            return None
        found = listed.path_of(name) if listed is not None else None
        if found is None or not files.is_regular(self.root / found):
            return None
        return found

    def read(self, note: str) -> NoteState:
        name, relpath = self.locate(note)
        data = self._read(relpath)
        if data is None:
            raise NotFound(messages.note_not_found(note, []), path=relpath)
        text = self._decode(data, relpath)
        properties: dict[str, Any] = {}
        if text.header is not None:
            properties = self._properties(text.header, relpath)
        return NoteState(
            name, relpath, files.document_digest(data), data.decode("utf-8"), properties
        )

    # --- changes ----------------------------------------------------------------

    def new(
        self,
        title: str,
        text: str = "",
        *,
        properties: Mapping[str, Any] | None = None,
        folder: str | None = None,
        dry_run: bool = False,
    ) -> Written:
        """A new note `folder/<title>.md`: its properties as front matter, `# title`, the text."""
        title = " ".join(title.split())
        stem = file_stem(title)
        if not stem:
            raise Invalid(messages.note_needs_title())
        folder = self.default_folder() if folder is None else folder.strip("/")
        relpath = self._inside(f"{folder}/{stem}.md" if folder else f"{stem}.md")
        taken = self.vault().path_of(stem)
        if taken is not None:
            raise Exists(messages.note_name_taken(stem, taken), path=taken)
        header = None
        if properties:
            front = FrontMatter.parse("")
            for key, value in properties.items():
                front.set(str(key), value)
            header = front.text()
        body = f"# {title}\n\n{text.strip(chr(10))}\n" if text.strip() else f"# {title}\n"
        data = compose(header, body).encode()
        diff = _diff("", data.decode("utf-8"), relpath)
        if dry_run:
            return Written("new", stem, relpath, files.document_digest(data), None, False, diff)
        try:
            digest = files.write_document(self.root, relpath, data, base_digest=None, create=True)
        except files.Exists:
            raise Exists(messages.note_path_taken(relpath), path=relpath) from None
        except files.WriteRefused as refusal:
            raise Outside(refusal.strerror or str(refusal), path=relpath) from None
        return self._done(Written("new", stem, relpath, digest, None, True, diff))

    def append(
        self,
        note: str,
        text: str,
        *,
        heading: str | None = None,
        dated: bool = False,
        base_digest: str | None = None,
        dry_run: bool = False,
    ) -> Written:
        """`text` added at the end of the note (under `heading`; `dated`: under today's date)."""
        from hql.notes.text import appended

        if not text.strip():
            raise Invalid(messages.note_needs_text())
        if dated:
            day = self._today().isoformat()
            heading = f"{day} {heading}" if heading else day
        return self._change(
            "append",
            note,
            lambda current, _: current.with_body(appended(current.body, text, heading)),
            base_digest,
            dry_run,
        )

    def section(
        self,
        note: str,
        heading: str,
        text: str,
        *,
        base_digest: str | None = None,
        dry_run: bool = False,
    ) -> Written:
        """The content under `heading` replaced by `text` (the section added when missing)."""
        from hql.notes.text import with_section

        if not heading.strip():
            raise Invalid(messages.note_needs_heading())
        return self._change(
            "section",
            note,
            lambda current, _: current.with_body(with_section(current.body, heading, text)[0]),
            base_digest,
            dry_run,
        )

    def edit(
        self,
        note: str,
        new_text: str,
        *,
        old_text: str | None = None,
        base_digest: str | None = None,
        dry_run: bool = False,
    ) -> Written:
        """The body replaced by `new_text`; with `old_text`, only that passage (found once)."""
        from hql.notes.text import replaced_once

        def edited(current: NoteText, relpath: str) -> NoteText:
            if old_text is None:
                body = new_text if new_text.endswith("\n") or not new_text else new_text + "\n"
                return current.with_body(body)
            body, found = replaced_once(current.body, old_text, new_text)
            if found != 1:
                raise Invalid(messages.note_passage_count(relpath, found), path=relpath)
            return current.with_body(body)

        return self._change("edit", note, edited, base_digest, dry_run)

    def set(
        self,
        note: str,
        key: str,
        value: Any,
        *,
        base_digest: str | None = None,
        dry_run: bool = False,
    ) -> Written:
        """The front-matter property `key` given `value` (added when missing)."""
        key = _property_key(key)
        return self._change(
            "set",
            note,
            lambda current, where: self._with_property(current, where, key, value),
            base_digest,
            dry_run,
        )

    def unset(
        self, note: str, key: str, *, base_digest: str | None = None, dry_run: bool = False
    ) -> Written:
        """The front-matter property `key` removed (a note without it is left as it is)."""
        key = _property_key(key)
        return self._change(
            "unset",
            note,
            lambda current, where: self._with_property(current, where, key, _UNSET),
            base_digest,
            dry_run,
        )

    def set_many(
        self,
        note: str,
        properties: Mapping[str, Any],
        *,
        base_digest: str | None = None,
        dry_run: bool = False,
    ) -> Written:
        """Several properties set in one write (one digest check, one diff)."""

        def edited(current: NoteText, where: str) -> NoteText:
            for key, value in properties.items():
                current = self._with_property(current, where, _property_key(key), value)
            return current

        return self._change("set", note, edited, base_digest, dry_run)

    def archive(
        self,
        note: str,
        *,
        delete: bool = False,
        base_digest: str | None = None,
        dry_run: bool = False,
    ) -> Written:
        """`status: archived`; with `delete`, the file itself removed (the only real delete)."""
        if delete:
            return self._delete(note, base_digest, dry_run)
        return self._change(
            "archive",
            note,
            lambda current, where: self._with_property(current, where, "status", "archived"),
            base_digest,
            dry_run,
        )

    def supersede(
        self,
        note: str,
        old: str,
        *,
        valid_from: str | datetime.date | None = None,
        base_digest: str | None = None,
        dry_run: bool = False,
    ) -> Written:
        """`note` replaces `old`: `supersedes: "[[old]]"` added to `note` (and `valid_from`).

        Only the new note is written; the old one reads as superseded from then on.
        """
        old_name, _ = self.locate(old)

        def edited(current: NoteText, where: str) -> NoteText:
            properties = self._properties(current.header, where) if current.header else {}
            kept = properties.get("supersedes")
            links = [kept] if isinstance(kept, str) else list(kept or [])
            wanted = f"[[{old_name}]]"
            value: Any = wanted
            if links and wanted not in links:
                value = [*links, wanted]
            elif links:
                value = kept
            current = self._with_property(current, where, "supersedes", value)
            if valid_from is not None:
                day = valid_from if isinstance(valid_from, str) else valid_from.isoformat()
                current = self._with_property(current, where, "valid_from", day)
            return current

        return self._change("supersede", note, edited, base_digest, dry_run)

    def move(
        self, note: str, to: str, *, base_digest: str | None = None, dry_run: bool = False
    ) -> Written:
        """The note moved to `to` (a folder ending in `/`, or a new path). Links to it are not
        rewritten: a move that changes its name lists the notes linking to the old one."""
        name, relpath = self.locate(note)
        target = to.strip()
        if target.endswith("/") or target in ("", "."):
            target = f"{target.strip('/')}/{PurePosixPath(relpath).name}".lstrip("/")
        elif not target.endswith(tuple(FORMATS)):
            target += PurePosixPath(relpath).suffix
        target = self._inside(target)
        if target == relpath:
            raise Invalid(messages.note_move_same(relpath), path=relpath)
        data = self._read(relpath)
        if data is None:
            raise NotFound(messages.note_not_found(note, []), path=relpath)
        current = files.document_digest(data)
        _check_base(base_digest, current, relpath)
        new_name = PurePosixPath(target).stem
        vault = self._vault or self.vault()
        taken = vault.card(new_name)
        if new_name != name and taken is not None:
            raise Exists(messages.note_name_taken(new_name, taken.relpath), path=taken.relpath)
        linked = sorted(card.name for card in vault.cards if name in card.outlinks)
        linked = linked if new_name != name else []
        diff = messages.note_move_diff(relpath, target)
        if dry_run:
            return Written("move", new_name, target, current, current, False, diff, relpath, linked)
        try:
            files.write_document(self.root, target, data, base_digest=None, create=True)
        except files.Exists:
            raise Exists(messages.note_path_taken(target), path=target) from None
        except files.WriteRefused as refusal:
            raise Outside(refusal.strerror or str(refusal), path=target) from None
        try:
            self._remove(relpath, current)
        except NoteRefused:
            self._remove(target, current)  # the copy goes again: the original stays as it is
            raise
        written = Written("move", new_name, target, current, current, True, diff, relpath, linked)
        return self._done(written, gone=[name] if new_name != name else [])

    # --- the common path ----------------------------------------------------------

    def _change(
        self,
        action: str,
        note: str,
        edit: Callable[[NoteText, str], NoteText],
        base_digest: str | None,
        dry_run: bool,
    ) -> Written:
        name, relpath = self.locate(note)
        data = self._read(relpath)
        if data is None:
            raise NotFound(messages.note_not_found(note, []), path=relpath)
        current = files.document_digest(data)
        _check_base(base_digest, current, relpath)
        before = self._decode(data, relpath)
        after = edit(before, relpath)
        new_data = after.encode()
        diff = _diff(data.decode("utf-8"), new_data.decode("utf-8"), relpath)
        if dry_run:
            return Written(
                action, name, relpath, files.document_digest(new_data), current, False, diff
            )
        if new_data == data:  # nothing to change: no write, the digest stays
            return Written(action, name, relpath, current, current, False, "")
        try:
            digest = files.write_document(self.root, relpath, new_data, base_digest=current)
        except files.Conflict as conflict:
            raise Stale(
                messages.note_stale(relpath), path=relpath, current_digest=conflict.current_digest
            ) from None
        except files.WriteRefused as refusal:
            raise Outside(refusal.strerror or str(refusal), path=relpath) from None
        return self._done(Written(action, name, relpath, digest, current, True, diff), before=data)

    def _delete(self, note: str, base_digest: str | None, dry_run: bool) -> Written:
        name, relpath = self.locate(note)
        data = self._read(relpath)
        if data is None:
            raise NotFound(messages.note_not_found(note, []), path=relpath)
        current = files.document_digest(data)
        _check_base(base_digest, current, relpath)
        diff = _diff(data.decode("utf-8", "replace"), "", relpath)
        if dry_run:
            return Written("delete", name, relpath, None, current, False, diff)
        self._remove(relpath, current)
        return self._done(Written("delete", name, relpath, None, current, True, diff), gone=[name])

    def _remove(self, relpath: str, digest: str) -> None:
        """Remove the note if it still has `digest`, under the folder's lock writers take."""
        path = self.root / relpath
        self._inside(relpath)
        with files.locked(path.parent):
            data = self._read(relpath)
            if data is None:
                raise NotFound(messages.note_not_found(relpath, []), path=relpath)
            now = files.document_digest(data)
            if now != digest:
                raise Stale(messages.note_stale(relpath), path=relpath, current_digest=now)
            os.unlink(path)

    def _done(
        self, written: Written, gone: Sequence[str] = (), before: bytes | None = None
    ) -> Written:
        """`before`: the note's bytes before an edit that moved nothing."""
        self._vault = None
        if self.fresh:
            from hql.notes.fresh import refresh

            names = [written.name] if written.digest is not None else []
            edited = {written.path: before} if written.action in _EDITS else {}
            written.freshness = refresh(self.root, names, gone, edited, listed=True)
        return written

    # --- helpers ------------------------------------------------------------------

    def default_folder(self) -> str:
        from hql.notes.config import memory_config

        return memory_config(self.root).folder

    def _inside(self, relpath: str) -> str:
        """The vault-relative posix path, refused when it leaves the vault or passes a link."""
        text = relpath.replace("\\", "/").strip()
        parts = [part for part in text.split("/") if part not in ("", ".")]
        if text.startswith("/") or not parts or ".." in parts or "\0" in text:
            raise Outside(messages.note_outside(relpath), path=relpath)
        if parts[0] == ".hql":
            raise Outside(messages.note_outside(relpath), path=relpath)
        if not parts[-1].endswith(tuple(FORMATS)):
            raise Invalid(messages.note_not_a_note(relpath, sorted(FORMATS)), path=relpath)
        walked = self.root
        for part in parts:
            walked = walked / part
            if walked.is_symlink():
                shown = "/".join(parts[: parts.index(part) + 1])
                raise Outside(messages.document_symlinked(shown), path=relpath)
        return "/".join(parts)

    def _read(self, relpath: str) -> bytes | None:
        path = self.root / relpath
        try:
            return files.read_regular(path, READ_LIMIT)
        except FileNotFoundError:
            return None
        except files.TooLarge as error:
            raise Broken(messages.note_too_large(relpath, error.size), path=relpath) from None
        except OSError as error:
            raise Broken(
                messages.note_unreadable(relpath, error.strerror or str(error)), path=relpath
            ) from None

    def _decode(self, data: bytes, relpath: str) -> NoteText:
        try:
            return NoteText.decode(data)
        except NotUtf8 as error:
            raise Broken(messages.note_not_utf8(relpath, error.offset), path=relpath) from None
        except UnclosedFrontMatter:
            raise Broken(messages.note_front_matter_unclosed(relpath), path=relpath) from None

    def _properties(self, header: str, relpath: str) -> dict[str, Any]:
        from hql.vault import yamldata

        try:
            return yamldata.load_mapping(header)
        except yamldata.YamlRefused as refusal:
            reason, line = _located(str(refusal))
            raise Broken(
                messages.note_front_matter_broken(relpath, reason, line), path=relpath
            ) from None
        except RecursionError:
            raise Broken(
                messages.note_front_matter_broken(relpath, "too deep"), path=relpath
            ) from None

    def _with_property(self, current: NoteText, relpath: str, key: str, value: Any) -> NoteText:
        header = current.header or ""
        before = self._properties(header, relpath) if current.header is not None else {}
        try:
            front = FrontMatter.parse(header)
        except BrokenFrontMatter as broken:
            line = broken.line + 1 if broken.line is not None else None  # after the `---` line
            raise Broken(
                messages.note_front_matter_broken(relpath, broken.reason, line), path=relpath
            ) from None
        expected = dict(before)
        base = before.get("metadata")
        if key not in before and isinstance(base, dict) and key in base:
            # `c.metadata.key` reads a key inside `metadata:` first: that is the one to edit.
            inner = dict(base)
            if value is _UNSET:
                front.delete_inside("metadata", key)
                inner.pop(key, None)
            else:
                front.set_inside("metadata", key, value)
                inner[key] = as_data(value)
            expected["metadata"] = inner
        elif value is _UNSET:
            if key not in before:
                return current
            front.delete(key)
            expected.pop(key, None)
        else:
            front.set(key, value)
            expected[key] = as_data(value)
        new_header = front.text()
        # What HQL reads back must be the old properties with just this one changed.
        if self._properties(new_header, relpath) != expected:
            raise Broken(messages.note_edit_unfaithful(relpath, key), path=relpath)
        return current.with_header(new_header)


_UNSET = object()
# Changes that leave every path as it was: only the note's content changed.
_EDITS = frozenset({"append", "section", "edit", "set", "unset", "archive", "supersede"})


_AT_LINE = re.compile(r"\s*\(?at line (\d+), column \d+\)?|\s*\(line (\d+), column \d+\)")


def _located(reason: str) -> tuple[str, int | None]:
    """A YAML reason without its `at line N, column M`, and the file's line it names (the
    block starts on the file's second line, after `---`)."""
    found = _AT_LINE.search(reason)
    if found is None:
        return reason, None
    line = int(found.group(1) or found.group(2)) + 1
    return (reason[: found.start()] + reason[found.end() :]).strip(), line


def _check_base(base_digest: str | None, current: str, relpath: str) -> None:
    if base_digest is not None and base_digest != current:
        raise Stale(messages.note_stale(relpath), path=relpath, current_digest=current)


def _property_key(key: str) -> str:
    key = key.strip()
    if not key or "\n" in key:
        raise Invalid(messages.note_bad_property(key))
    return key


def _diff(before: str, after: str, relpath: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{relpath}" if before else "/dev/null",
        tofile=f"b/{relpath}" if after else "/dev/null",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def file_stem(title: str) -> str:
    """The file name a note titled `title` gets: what a file name may hold, at most 120 chars."""
    stem = _UNSAFE_NAME.sub(" ", title)
    stem = " ".join(stem.split()).strip(". ")
    return stem[:MAX_NAME_CHARS].rstrip(". ")


def as_data(value: Any) -> Any:
    """A value as HQL reads it back from YAML: dates as ISO text, tuples as lists."""
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [as_data(item) for item in value]
    if isinstance(value, dict):
        return {str(key): as_data(item) for key, item in value.items()}
    return value
