"""A note's bytes as parts to edit, and back to the same bytes.

`NoteText.decode(data).encode()` gives `data` again: the byte-order mark, the
line ends (a file written with CRLF throughout is edited as LF and written back
with CRLF), the fences exactly as written. Edits change only the parts they
name; the rest keeps its bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from hql.vault.document import find_header

BOM = "\ufeff"
CRLF = "\r\n"
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_OPENING = re.compile(r"---(?:\r\n?|\n)")
_FENCE = re.compile(r"^[ \t]{0,3}(```+|~~~+)")


class NotUtf8(ValueError):
    def __init__(self, offset: int) -> None:
        super().__init__(offset)
        self.offset = offset


@dataclass(frozen=True)
class NoteText:
    bom: bool
    newline: str  # "\r\n" when every line end of the file is CRLF, else "\n"
    opening: str  # "---\n" as written, or "" when there is no front matter
    header: str | None  # the front-matter block (between the fences), None when there is none
    closing: str  # the closing fence line with its line end, as written
    body: str

    @classmethod
    def decode(cls, data: bytes) -> NoteText:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise NotUtf8(error.start) from None
        bom = text.startswith(BOM)
        text = text.removeprefix(BOM)
        newline = CRLF if CRLF in text and text.count("\n") == text.count(CRLF) else "\n"
        if newline == CRLF:
            text = text.replace(CRLF, "\n")
        found = find_header(text)
        if found is None:
            return cls(bom, newline, "", None, "", text)
        header, body_start, _ = found
        if body_start < 0:
            raise UnclosedFrontMatter()
        start = _OPENING.match(text).end()  # type: ignore[union-attr] # find_header saw it
        closing_start = start + len(header)
        return cls(
            bom,
            newline,
            text[:start],
            header,
            text[closing_start:body_start],
            text[body_start:],
        )

    def encode(self) -> bytes:
        text = self.opening + (self.header or "") + self.closing + self.body
        if self.newline == CRLF:
            text = text.replace("\n", CRLF)
        return ((BOM if self.bom else "") + text).encode("utf-8")

    def with_header(self, header: str) -> NoteText:
        if self.header is None:
            return replace(self, opening="---\n", header=header, closing="---\n")
        return replace(self, header=header)

    def with_body(self, body: str) -> NoteText:
        return replace(self, body=body)


class UnclosedFrontMatter(ValueError):
    """The note opens a front matter with `---` and never closes it."""


def compose(header: str | None, body: str) -> NoteText:
    """A new note's text: its front matter (when any) and its body, LF line ends."""
    if header is None:
        return NoteText(False, "\n", "", None, "", body)
    return NoteText(False, "\n", "---\n", header, "---\n", body)


def appended(body: str, text: str, heading: str | None = None, level: int = 2) -> str:
    """`text` added at the end of `body` (under `heading` when given), a blank line between."""
    addition = text.strip("\n") + "\n"
    if heading is not None:
        addition = f"{'#' * level} {heading}\n\n{addition}"
    if not body.strip():
        return body + addition if not body or body.endswith("\n") else body + "\n" + addition
    if not body.endswith("\n"):
        body += "\n"
    if not body.endswith("\n\n"):
        body += "\n"
    return body + addition


def headings(body: str) -> list[tuple[int, int, str]]:
    """(line index, level, text) of each Markdown heading outside fenced code."""
    found = []
    fence: str | None = None
    for at, line in enumerate(body.split("\n")):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        match = _HEADING.match(line)
        if match:
            found.append((at, len(match.group(1)), match.group(2)))
    return found


def with_section(body: str, heading: str, text: str, level: int = 2) -> tuple[str, bool]:
    """`body` with the content under `heading` replaced by `text` (the heading line kept),
    up to the next heading of the same or a higher level; (body, whether the heading was
    there). A heading not found is added at the end, at `level`."""
    wanted = heading.strip().lstrip("#").strip()
    lines = body.split("\n")
    marks = headings(body)
    for position, (at, found_level, found_text) in enumerate(marks):
        if found_text != wanted:
            continue
        end = len(lines)
        for later_at, later_level, _ in marks[position + 1 :]:
            if later_level <= found_level:
                end = later_at
                break
        content = ["", *text.strip("\n").split("\n")]
        if end < len(lines) or lines[-1] == "":
            content.append("")
        return "\n".join([*lines[: at + 1], *content, *lines[end:]]), True
    return appended(body, text, wanted, level), False


def replaced_once(body: str, old: str, new: str) -> tuple[str, int]:
    """`body` with the one occurrence of `old` replaced; (body, occurrences found)."""
    count = body.count(old) if old else 0
    if count != 1:
        return body, count
    return body.replace(old, new, 1), 1
