"""Reports: what went wrong (or deserves a warning), where, and how it is shown.

A `Report` is data: stage, severity, message and span. `render` draws the
caret form of the reference (section 10); `HqlError` carries one report out of
the phase that found it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence

from hql.record import record
from hql.source import Source, Span


class Stage(enum.Enum):
    SYNTAX = "syntax"
    TYPE = "type"
    NAME = "name"
    EVALUATION = "evaluation"


class Severity(enum.IntEnum):
    WARNING = 0
    ERROR = 1
    FAILURE = 2

    @property
    def word(self) -> str:
        return self.name.lower()


@record
class Report:
    stage: Stage
    severity: Severity
    message: str
    span: Span

    @property
    def failed(self) -> bool:
        return self.severity >= Severity.ERROR

    def to_json(self) -> dict[str, object]:
        return {
            "severity": self.severity.word,
            "stage": self.stage.value,
            "message": self.message,
            "span": {"start": self.span.start, "end": self.span.end},
        }


def syntax(message: str, span: Span) -> Report:
    return Report(Stage.SYNTAX, Severity.FAILURE, message, span)


def type_error(message: str, span: Span) -> Report:
    return Report(Stage.TYPE, Severity.ERROR, message, span)


def name_error(message: str, span: Span) -> Report:
    return Report(Stage.NAME, Severity.ERROR, message, span)


def evaluation(message: str, span: Span) -> Report:
    return Report(Stage.EVALUATION, Severity.FAILURE, message, span)


def warning(message: str, span: Span) -> Report:
    return Report(Stage.EVALUATION, Severity.WARNING, message, span)


class HqlError(Exception):
    """Carries one report out of the phase that found it."""

    def __init__(self, report: Report) -> None:
        super().__init__(report.message)
        self.report = report


def render(report: Report, source: Source) -> str:
    """The caret form: header, `-->` location, gutter, source line, carets."""
    line, column = source.location(report.span.start)
    text = source.line_text(line)
    number = str(line)
    pad = " " * len(number)
    start_char = column - 1
    end_line, end_column = source.location(report.span.end)
    width = max(1, end_column - column) if end_line == line else max(1, len(text) - start_char)
    # Keep the line's tabs under it, so the carets line up however wide a terminal draws a tab.
    indent = "".join("\t" if char == "\t" else " " for char in text[:start_char])
    indent += " " * (start_char - len(indent))  # a span past the line's end (end of input)
    carets = indent + "^" * width
    return "\n".join(
        [
            f"{report.stage.value} {report.severity.word}: {report.message}",
            f"{pad}--> {source.origin}:{line}:{column}",
            f"{pad} |",
            f"{number} | {text}".rstrip() if text else f"{number} |",
            f"{pad} | {carets}",
        ]
    )


def summary(reports: Sequence[Report]) -> str:
    counts = {severity: 0 for severity in Severity}
    for report in reports:
        counts[report.severity] += 1
    return (
        f"{len(reports)} reports: {counts[Severity.FAILURE]} failure, "
        f"{counts[Severity.ERROR]} error, {counts[Severity.WARNING]} warning"
    )


def render_all(reports: Iterable[Report], source: Source) -> str:
    """Every report followed by a blank line, then the summary when there is more than one."""
    reports = list(reports)
    blocks = [render(report, source) + "\n" for report in reports]
    if len(reports) > 1:
        blocks.append(summary(reports))
    return "\n".join(blocks)
