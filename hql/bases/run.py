"""`hql base FILE.base`: each view of an Obsidian base run as a table (docs/bases.md)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hql import messages
from hql.api import HostError, Outcome, Session
from hql.bases.translate import Base, BaseError, View, read_base
from hql.diagnostics import Report, render, render_all
from hql.printing import layout
from hql.source import Source, Span


def base_command(
    args: argparse.Namespace, session_for: Callable[[argparse.Namespace], Session]
) -> int:
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise HostError(messages.base_unreadable(args.file, str(error))) from None
    session = session_for(args)
    vault = session.vault
    if vault is None:
        raise HostError(messages.base_needs_vault())
    source = Source(text, args.file)
    try:
        base = read_base(args.file, text, args.this, _relpath(path, vault.root))
    except BaseError as error:
        report = Report(
            _stage(), _failure(), str(error), _byte_span(source, error.start, error.end)
        )
        print(render(report, source), file=sys.stderr)
        return 1
    if args.this is not None and vault.resolve(args.this) is None:
        raise HostError(messages.base_this_missing(args.this))
    views = [view for view in base.views if args.view is None or view.name == args.view]
    if not views:
        raise HostError(messages.base_no_view(args.view, [view.name for view in base.views]))
    results = [(view, session.run(view.program.text, args.file)) for view in views]
    if args.format == "json":
        from hql.printing import dumps

        print(dumps([_json(view, outcome) for view, outcome in results]))
        return 1 if any(outcome.failed for _, outcome in results) else 0
    failed = False
    for at, (view, outcome) in enumerate(results):
        for note in view.notes:
            print(f"note: {note}", file=sys.stderr)
        if at:
            print()
        if args.explain:
            print(f"// view: {view.name}")
            print(view.program.text.rstrip("\n"))
            print()
        if outcome.failed:
            failed = True
            print(_reports(base, view, outcome), file=sys.stderr)
            continue
        rows = outcome.value.rows if outcome.value is not None else None
        print(messages.base_view_heading(view.name, len(rows or ())))
        if rows:
            print(outcome.value.text)
        else:  # no records, so the table could not know its columns: the view does
            print(layout(view.columns, [], cells=True))
    return 1 if failed else 0


def _json(view: View, outcome: Outcome) -> dict[str, Any]:
    value = outcome.value
    return {
        "view": view.name,
        "program": view.program.text,
        "notes": view.notes,
        "columns": view.columns if not outcome.failed else None,
        "rows": [dict(zip(value.columns or (), row, strict=True)) for row in value.rows or ()]
        if value is not None and not outcome.failed
        else None,
        "reports": [report.to_json() for report in outcome.reports],
    }


def _reports(base: Base, view: View, outcome: Outcome) -> str:
    """The view's reports, each pointing into the `.base` file where a piece of it came from
    (else into the program, which is shown)."""
    source = Source(base.text, base.path)
    program = Source(view.program.text, f"{base.path} (view {view.name})")
    placed, unplaced = [], []
    for report in outcome.reports:
        start = program.char_index(report.span.start)
        end = program.char_index(report.span.end)
        found = view.base_span(start, end)
        if found is None:
            unplaced.append(report)
        else:
            span = _byte_span(source, *found)
            placed.append(Report(report.stage, report.severity, report.message, span))
    parts = []
    if placed:
        parts.append(render_all(placed, source))
    if unplaced:
        parts.append(render_all(unplaced, program))
    return "\n".join(parts).rstrip("\n")


def _byte_span(source: Source, start: int, end: int) -> Span:
    return Span(source.byte_offset(start), source.byte_offset(end))


def _relpath(path: Path, root: Path) -> str:
    try:
        relative = Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()
    except ValueError:
        return path.name
    return path.name if relative.startswith("../") else relative


def _stage() -> Any:
    from hql.diagnostics import Stage

    return Stage.SYNTAX


def _failure() -> Any:
    from hql.diagnostics import Severity

    return Severity.ERROR
