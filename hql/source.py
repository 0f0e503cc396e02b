"""Program text and spans.

Spans are zero-based half-open UTF-8 byte ranges, as the reference reports them;
lines and columns (1-based, columns counted in characters) are derived on demand.
"""

from __future__ import annotations

from hql.record import record


@record
class Span:
    start: int
    end: int

    def to(self, other: Span) -> Span:
        return Span(min(self.start, other.start), max(self.end, other.end))


@record
class Source:
    text: str
    origin: str = "<expression>"

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8")

    def byte_offset(self, char_index: int) -> int:
        return len(self.text[:char_index].encode("utf-8"))

    def char_index(self, byte_offset: int) -> int:
        return len(self.data[:byte_offset].decode("utf-8", errors="ignore"))

    def location(self, byte_offset: int) -> tuple[int, int]:
        """1-based line and column (in characters) of a byte offset."""
        before = self.data[:byte_offset].decode("utf-8", errors="ignore")
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        return line, column

    def line_text(self, line: int) -> str:
        lines = self.text.split("\n")
        return lines[line - 1] if 0 < line <= len(lines) else ""
