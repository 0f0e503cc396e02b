"""Cards cut into sections, the unit the index embeds.

A card whose retrieval text fits the model's window stays whole: one section
whose text is exactly the card's retrieval text. A longer card is split at its
Markdown headings (ATX `#` … `######`, not inside fenced code); each section is
embedded with the card's title and its heading path in front, so a section
about "Storage" in a note about "Sync" still says what it is about. A section
still too long for the window is cut into pieces at line (then word)
boundaries, each piece repeating the end of the previous one (a small overlap)
so a sentence cut in two is read whole once. A section of a heading alone is
folded into the one after it.

Lines are counted in the card's file (1-based, inclusive), so a hit can say
where its section is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

TokenCounter = Callable[[Sequence[str]], list[int]]

# The part of the window a section may fill; the rest is room for the title and heading path.
OVERLAP_TOKENS = 32
MIN_SECTION_TOKENS = 24
# A block under 1/SECTION_FLOOR_SHARE of the window joins the next while both fit the window
# less MERGE_ROOM tokens (room for the title and heading path embedded in front).
SECTION_FLOOR_SHARE = 2
MERGE_ROOM = 32
DEFAULT_MAX_TOKENS = 256

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Section:
    """One embedded part of a card: where it is, under which headings, and the text embedded."""

    ordinal: int
    heading: tuple[str, ...]  # the heading path; () for a whole card or the part before any heading
    line_start: int
    line_end: int
    text: str

    def to_json(self) -> dict[str, object]:
        return {
            "ordinal": self.ordinal,
            "heading": list(self.heading),
            "lines": [self.line_start, self.line_end],
        }


@dataclass(slots=True)
class _Block:
    heading: tuple[str, ...]
    start: int  # index into the body's lines
    end: int  # exclusive
    lines: list[str]


def split_card(
    title: str,
    text: str,
    body: str,
    body_line: int,
    max_tokens: int,
    count: TokenCounter,
) -> list[Section]:
    """The sections of one card.

    `text` is the card's retrieval text (title, header strings, body), `body`
    its body, and `body_line` the file line (1-based) where the body starts.
    """
    body_lines = body.split("\n")
    last_line = body_line + max(len(body_lines) - 1, 0)
    count = _remembering(count)
    if count([text])[0] <= max_tokens:
        return [Section(0, (), body_line, last_line, text)]
    preamble = text[: len(text) - len(body)].strip() if text.endswith(body) else title
    blocks = _merge_to_floor(_fold_small(_blocks(body_lines), count), count, max_tokens)
    sections: list[Section] = []
    for block in blocks:
        context = _context(title, block.heading, preamble if block.start == 0 else "")
        for start, end, piece in _pieces(block, context, max_tokens, count):
            sections.append(
                Section(
                    len(sections),
                    block.heading,
                    body_line + start,
                    body_line + max(end - 1, start),
                    f"{context}\n{piece}".strip() if context else piece,
                )
            )
    return sections or [Section(0, (), body_line, last_line, text)]


def _remembering(count: TokenCounter) -> TokenCounter:
    """`count` that tokenises each distinct text once (a one-line block is also its only line)."""
    known: dict[str, int] = {}

    def counted(texts: Sequence[str]) -> list[int]:
        new = [text for text in dict.fromkeys(texts) if text not in known]
        if new:
            known.update(zip(new, count(new), strict=True))
        return [known[text] for text in texts]

    return counted


def _context(title: str, heading: tuple[str, ...], preamble: str) -> str:
    """What is embedded before a section's own lines: the title (or header strings) and heading path."""
    path = [part for part in heading if part and part != title]
    lead = preamble or title
    return " > ".join([lead, *path]) if path else lead


def _blocks(lines: list[str]) -> list[_Block]:
    """The body's lines grouped under their heading path (fenced code never holds a heading)."""
    blocks: list[_Block] = [_Block((), 0, 0, [])]
    path: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        elif opened:
            fence = opened.group(1)
        else:
            found = _HEADING.match(line)
            if found:
                level = len(found.group(1))
                name = _CLOSING_HASHES.sub("", found.group(2) or "").strip()
                path = [(lvl, text) for lvl, text in path if lvl < level] + [(level, name)]
                blocks[-1].end = number
                blocks.append(_Block(tuple(text for _, text in path), number, number, []))
        blocks[-1].lines.append(line)
    blocks[-1].end = len(lines)
    return [block for block in blocks if "".join(block.lines).strip()]


def _fold_small(blocks: list[_Block], count: TokenCounter) -> list[_Block]:
    """A block of a heading and a line or two joins the block after it, under that one's path."""
    if len(blocks) < 2:
        return blocks
    sizes = count(["\n".join(block.lines) for block in blocks])
    folded: list[_Block] = []
    carry: _Block | None = None
    for block, size in zip(blocks, sizes, strict=True):
        if carry is not None:
            block = _Block(block.heading, carry.start, block.end, carry.lines + block.lines)
            carry = None
        if size < MIN_SECTION_TOKENS and block is not blocks[-1]:
            carry = block
            continue
        folded.append(block)
    if carry is not None:
        folded.append(carry)
    return folded


def _merge_to_floor(blocks: list[_Block], count: TokenCounter, max_tokens: int) -> list[_Block]:
    """Neighbouring blocks, one of them smaller than the floor (half the window), are
    embedded together when both fit the window.

    A help page of twenty short headings would otherwise be twenty vectors of a few
    lines each: twenty times the embedding, and vectors too short to say much. The
    joined block keeps the heading path the two share (each heading line is still in
    its text).
    """
    if len(blocks) < 2:
        return blocks
    floor = max_tokens // SECTION_FLOOR_SHARE
    budget = max_tokens - MERGE_ROOM
    merged: list[_Block] = [blocks[0]]
    sizes = count(["\n".join(block.lines) for block in blocks])
    size = sizes[0]
    for block, own in zip(blocks[1:], sizes[1:], strict=True):
        joined_lines = merged[-1].lines + block.lines
        if size < floor or own < floor:
            joined = count(["\n".join(joined_lines)])[0]
            if joined <= budget:
                heading = _shared_path(merged[-1].heading, block.heading)
                merged[-1] = _Block(heading, merged[-1].start, block.end, joined_lines)
                size = joined
                continue
        merged.append(block)
        size = own
    return merged


def _shared_path(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    shared: list[str] = []
    for one, other in zip(first, second, strict=False):
        if one != other:
            break
        shared.append(one)
    return tuple(shared)


def _pieces(
    block: _Block, context: str, max_tokens: int, count: TokenCounter
) -> list[tuple[int, int, str]]:
    """(first line, end line, text) pieces of a block, each fitting the window with its context."""
    whole = "\n".join(block.lines)
    budget = max(max_tokens - count([context])[0], max_tokens // 2) if context else max_tokens
    if count([whole])[0] <= budget:
        return [(block.start, block.end, whole)]
    units = _units(block, count, budget)
    pieces: list[tuple[int, int, str]] = []
    current: list[tuple[int, str, int]] = []
    used = 0
    overlap = min(OVERLAP_TOKENS, budget // 8)
    for unit in units:
        if current and used + unit[2] > budget:
            pieces.append(_piece(current))
            current = _overlap(current, overlap)
            used = sum(size for _, _, size in current)
            if used + unit[2] > budget:
                current, used = [], 0
        current.append(unit)
        used += unit[2]
    if current:
        pieces.append(_piece(current))
    return pieces


def _units(block: _Block, count: TokenCounter, budget: int) -> list[tuple[int, str, int]]:
    """(line number, text, tokens) for each line; a line longer than the budget cut into word runs."""
    sizes = [max(size - 2, 1) for size in count(block.lines)]  # less [CLS]/[SEP] or the like
    units: list[tuple[int, str, int]] = []
    for offset, (line, size) in enumerate(zip(block.lines, sizes, strict=True)):
        number = block.start + offset
        if size <= budget:
            units.append((number, line, size))
            continue
        units.extend((number, run, tokens) for run, tokens in _word_runs(line, size, budget, count))
    return units


def _word_runs(line: str, size: int, budget: int, count: TokenCounter) -> list[tuple[str, int]]:
    """A line too long for the budget as runs of words of like length that fit it, overlapping a little.

    Each word is counted once (the model's tokens for it alone, less what an
    empty text costs), and the line is cut into as few runs as fit, of about
    the same number of tokens, so the last run is not a scrap.
    """
    words = line.split()
    if not words:
        return [(line, size)]
    blank = count([""])[0]
    sizes = [max(tokens - blank, 1) for tokens in count(words)]
    overlap = min(OVERLAP_TOKENS, budget // 8)
    total = sum(sizes)
    pieces = max(-(-(total - overlap) // max(budget - overlap, 1)), 1)
    target = -(-(total - overlap) // pieces) + overlap
    runs: list[tuple[str, int]] = []
    first = 0
    while first < len(words):
        last, used = first, 0
        while last < len(words) and (last == first or used + sizes[last] <= min(target, budget)):
            used += sizes[last]
            last += 1
        runs.append((" ".join(words[first:last]), used))
        if last >= len(words):
            break
        back, kept = last, 0
        while back - 1 > first and kept + sizes[back - 1] <= overlap:
            back -= 1
            kept += sizes[back]
        first = back
    return runs


def _overlap(units: list[tuple[int, str, int]], limit: int) -> list[tuple[int, str, int]]:
    """The last units of a piece, up to `limit` tokens, to start the next one."""
    kept: list[tuple[int, str, int]] = []
    used = 0
    for unit in reversed(units):
        if used + unit[2] > limit:
            break
        kept.insert(0, unit)
        used += unit[2]
    return kept


def _piece(units: list[tuple[int, str, int]]) -> tuple[int, int, str]:
    return units[0][0], units[-1][0] + 1, "\n".join(text for _, text, _ in units)


def body_start_line(file_text: str | None, body: str) -> int:
    """The file line (1-based) where the body starts: after the front matter, if any."""
    if file_text is None or not body or not file_text.endswith(body):
        return 1
    header = file_text[: len(file_text) - len(body)]
    return header.count("\n") + header.count("\r") - header.count("\r\n") + 1
