"""One document's text to its parts: authored header, body, heading, links.

This layer knows nothing about the vault (names, kinds, edges); its result is
plain data so the catalogue can keep it. Reference §9.2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hql import messages
from hql.vault import yamldata
from hql.vault.yamldata import YamlRefused

# More references than this refuse the document: one card must not cost the whole load.
MAX_LINKS = 100_000


class DocumentRefused(Exception):
    """The document cannot be loaded faithfully; the message is the warning text."""


@dataclass(slots=True)  # not frozen: built for every document of every load
class ParsedDocument:
    authored: dict[str, Any]
    body: str
    heading: str | None  # the first `# ` heading of the body, the fallback title
    links: list[tuple[str, dict[str, Any]]]
    # What only the Obsidian dialect reads: tags, tasks, headings, a header warning.
    extras: dict[str, Any] | None = None


def parse(text: str) -> ParsedDocument:
    """Split and parse a document; raises DocumentRefused with the warning to record."""
    header_text, body = split_header(text)
    try:
        authored = yamldata.load_mapping(header_text) if header_text else {}
    except YamlRefused as refusal:
        raise DocumentRefused(messages.header_refused(str(refusal))) from None
    return ParsedDocument(authored, body, first_heading(body), references(body))


def split_header(text: str) -> tuple[str, str]:
    """(header text, body). No opening fence: no header. An unclosed fence refuses."""
    found = find_header(text)
    if found is None:
        return "", text
    header, body_start, _ = found
    if body_start < 0:
        raise DocumentRefused(messages.header_unterminated())
    return header, text[body_start:]


# A line break: CRLF, a lone CR (classic Mac files) or LF. The header is read
# with any of them; the body keeps its bytes as written.
_BREAK = re.compile(r"\r\n?|\n")


def split_lines(text: str) -> list[str]:
    """The lines of a body, whatever its line breaks (without them)."""
    return _BREAK.split(text) if "\r" in text else text.split("\n")


def find_header(text: str) -> tuple[str, int, int] | None:
    """(header text as written, where the body starts, lines before the body).

    None when the text opens with no `---` line; a body start of -1 when the
    fence never closes.
    """
    opening = _BREAK.match(text, 3) if text.startswith("---") else None
    if opening is None:
        return None
    start = offset = opening.end()
    lines = 1
    while offset < len(text):
        found = _BREAK.search(text, offset)
        end = len(text) if found is None else found.end()
        line_end = end if found is None else found.start()
        lines += 1
        if text[offset:line_end].rstrip() == "---":
            return text[start:offset], end, lines
        offset = end
    return "", -1, 0


def first_heading(body: str) -> str | None:
    """The text of the first line whose trimmed form starts with `# `."""
    if "# " not in body:
        return None
    for line in split_lines(body):
        stripped = line.strip()
        if stripped.startswith("# "):
            return stripped[2:].strip()
    return None


def references(body: str) -> list[tuple[str, dict[str, Any]]]:
    """Every `[[target]]` in order, with the `{...}` annotation that directly follows it.

    An annotation binds only when it follows on the same line after nothing
    but spaces; its braces are matched quote-aware, then YAML parses it.
    Offsets in messages count bytes of the body, as the reference does.
    """
    found: list[tuple[str, dict[str, Any]]] = []
    position = 0
    while True:
        start = body.find("[[", position)
        if start < 0:
            break
        opened = start + 2
        closed = body.find("]]", opened)
        if closed < 0:
            break
        target = body[opened:closed].strip()
        position = closed + 2
        if not target:
            continue
        probe = position
        while probe < len(body) and body[probe] == " ":
            probe += 1
        annotation: dict[str, Any] = {}
        if probe < len(body) and body[probe] == "{":
            end = annotation_end(body, probe)
            if end is None:
                raise DocumentRefused(messages.annotation_unterminated(_byte_offset(body, probe)))
            annotation = _parse_annotation(body, probe, end)
            position = end
        found.append((target, annotation))
        if len(found) > MAX_LINKS:
            raise DocumentRefused(messages.too_many_links(MAX_LINKS))
    return found


def _parse_annotation(body: str, start: int, end: int) -> dict[str, Any]:
    text = body[start:end]
    simple = yamldata.load_simple_flow_mapping(text)
    if simple is not None:
        return simple
    try:
        return yamldata.load_mapping(text)
    except YamlRefused as refusal:
        offset = _byte_offset(body, start)
        raise DocumentRefused(messages.annotation_refused(offset, str(refusal))) from None


def annotation_end(text: str, start: int) -> int | None:
    """Index just past the `}` closing the flow mapping that opens at `start`.

    A quote opens a string only where YAML would let a scalar start (after
    `{`, `[`, `,` or `:`), so an apostrophe inside a plain word is a letter.
    """
    depth = 0
    quote: str | None = None
    escaped = False
    previous: str | None = None
    index = start
    length = len(text)
    while index < length:
        char = text[index]
        index += 1
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                if quote == "'" and index < length and text[index] == "'":
                    index += 1  # '' is an escaped quote inside single quotes
                else:
                    quote = None
                    previous = char
            continue
        if char in "'\"" and previous in ("{", "[", ",", ":"):
            quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
        if not char.isspace():
            previous = char
    return None


def _byte_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8"))
