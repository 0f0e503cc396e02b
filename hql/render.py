"""`hql render`: documents that carry live answers (reference section 14).

Every fence whose info string is exactly `hql`, `hql#eval` or `hql#query` is
run as its own program against the vault, and its answer is written beneath it
as a `hql#result` block. Old results are dropped and regenerated, so a second
render changes nothing. `--write` replaces the file atomically.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from hql import files, messages
from hql.api import HostError, Outcome, Session
from hql.diagnostics import Report
from hql.printing import columns_table, display, records_of, table
from hql.values import Data, ListValue, Presentation, Ranking, SetValue
from hql.vault.walk import OBSIDIAN

QUERY_INFOS = {"hql", "hql#eval", "hql#query"}
RESULT_INFO = "hql#result"
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
# A document larger than this is not rendered: it is read whole, and written whole.
MAX_DOCUMENT_BYTES = files.MAX_DOCUMENT_BYTES


@dataclass
class Rendered:
    text: str
    blocks: int
    failed: int
    # (line in the document, "severity: message") for each failing report of a block
    failures: list[tuple[int, str]] = field(default_factory=list)


def answer(outcome: Outcome, columns: bool = False) -> str:
    """What a block's result shows: a presentation's text, a table for collections, else the
    display; with `columns` (an Obsidian vault), a list of records as a table with columns."""
    if outcome.failed:
        return "\n".join(_said(r) for r in outcome.reports if r.failed)
    value = outcome.value
    if isinstance(value, Presentation):
        return value.text
    records = records_of(value) if columns else None
    if records is not None:
        return columns_table(records)
    if isinstance(value, ListValue | SetValue | Ranking | Data) or _is_graph(value):
        return table(value)
    return display(value)


def _is_graph(value: object) -> bool:
    from hql.printing import is_graph

    return is_graph(value)


def _fence_end(lines: list[str], start: int, marker: str) -> int:
    """Index of the closing fence line, or len(lines) when the fence never closes."""
    for index in range(start + 1, len(lines)):
        match = FENCE.match(lines[index])
        if (
            match
            and match.group(2)[0] == marker[0]
            and len(match.group(2)) >= len(marker)
            and not match.group(3).strip()
        ):
            return index
    return len(lines)


_RUN = re.compile(r"^\s*(`+|~+)")


def _result_fence(marker: str, shown: list[str]) -> str:
    """The block's fence, made longer than any fence (of its character) in the answer: an
    answer holding a code block must neither close the result early nor plant a live block."""
    longest = 0
    for line in shown:
        run = _RUN.match(line)
        if run and run.group(1)[0] == marker[0]:
            longest = max(longest, len(run.group(1)))
    return marker[0] * max(len(marker), longest + 1)


_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")


class RenderRefused(Exception):
    """A document render will not touch; the message says why and where."""


def split_lines(text: str) -> tuple[list[str], list[str]]:
    """The lines of `text` and the break ending each (CRLF, CR or LF; "" for the last)."""
    parts = _LINE_BREAK.split(text)
    return parts[0::2], [*parts[1::2], ""]


def dominant_break(breaks: list[str]) -> str:
    """The document's usual line break: what new lines are written with."""
    counts = {ending: breaks.count(ending) for ending in ("\n", "\r\n", "\r")}
    best = max(counts, key=lambda ending: counts[ending])
    return best if counts[best] else "\n"


def render_text(text: str, run: Callable[[str], Outcome], columns: bool = False) -> Rendered:
    """Each block's answer beneath it; every other byte of the document is kept, line breaks too."""
    lines, breaks = split_lines(text)
    newline = dominant_break(breaks)
    out: list[str] = []
    out_breaks: list[str] = []
    blocks = failed = 0
    failures: list[tuple[int, str]] = []
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            out.append(lines[index])
            out_breaks.append(breaks[index])
            index += 1
            continue
        indent, marker, info = match.group(1), match.group(2), match.group(3).strip()
        end = _fence_end(lines, index, marker)
        if info == RESULT_INFO:  # an old result: dropped with the blank lines before it
            if end >= len(lines):  # dropping it would drop the rest of the document
                raise RenderRefused(messages.render_result_never_closes(index + 1))
            while out and not out[-1].strip():
                out.pop()
                out_breaks.pop()
            if out_breaks:
                out_breaks[-1] = breaks[end]
            index = end + 1
            continue
        last = min(end, len(lines) - 1)
        out.extend(lines[index : last + 1])
        out_breaks.extend(breaks[index : last + 1])
        if info not in QUERY_INFOS or end >= len(lines):
            index = end + 1
            continue
        block = lines[index : end + 1]
        index = end + 1
        program = "\n".join(
            line[len(indent) :] if line.startswith(indent) else line for line in block[1:-1]
        )
        outcome = run(program)
        blocks += 1
        failed += outcome.failed
        if outcome.failed:
            first_line = index - len(block) + 2  # 1-based line of the program's first line
            data = program.encode("utf-8")
            failures += [
                (first_line + data[: r.span.start].count(b"\n"), _said(r))
                for r in outcome.reports
                if r.failed
            ]
        shown = answer(outcome, columns).split("\n")
        fence = _result_fence(marker, shown)
        added = ["", f"{indent}{fence}{RESULT_INFO}"]
        added += [indent + line if line else line for line in shown]
        added.append(f"{indent}{fence}")
        closing_break = out_breaks[-1]
        out_breaks[-1] = newline
        out.extend(added)
        out_breaks.extend([newline] * (len(added) - 1) + [closing_break])
    text = "".join(map("".join, zip(out, out_breaks, strict=True)))
    return Rendered(text, blocks, failed, failures)


def _said(report: Report) -> str:
    return f"{report.severity.word}: {report.message}"


def report_failures(path: str, rendered: Rendered) -> None:
    """Name each failing block on stderr: the answer written beneath it is easy to miss."""
    for line, said in rendered.failures:
        print(messages.render_block_failed(path, line, said), file=sys.stderr)


def render_document(text: str, path: str, session: Session) -> Rendered:
    """Render a document's text; each block runs as its own program against the session's vault."""

    def run(program: str) -> Outcome:
        return Session(session.vault, session.mode, seconds=getattr(session, "seconds", None)).run(
            program, path
        )

    vault = session.vault
    return render_text(text, run, vault is not None and vault.dialect == OBSIDIAN)


def carries_blocks(text: str) -> bool:
    return any(
        (match := FENCE.match(line)) is not None and match.group(3).strip() in QUERY_INFOS
        for line in text.split("\n")
    )


def _save(path: str, original: bytes, text: str, root: str | None = None) -> None:
    """Replace the document, unless it changed since it was read (then say so, write nothing).

    `root` is the vault the document belongs to (None: its own folder); the write is
    made relative to it and refuses symlinked folders (files.write_document)."""
    try:
        save_document(path, original, text.encode("utf-8"), root)
    except files.Conflict:
        raise HostError(messages.render_changed_meanwhile(path)) from None
    except OSError as error:
        raise HostError(messages.cannot_write(path, error)) from None


def save_document(path: str, original: bytes, data: bytes, root: str | None) -> str:
    """Write `data` over the document at `path` if it still holds `original`; its new digest.

    A symlinked document updates its target, when that is inside `root` (else
    WriteRefused); the file keeps its mode."""
    target = files.real(path)
    base = files.real(root) if root is not None else os.path.dirname(target)
    if not files.Containment(base).inside_vault(target) or target == base:
        raise files.WriteRefused(messages.render_outside_vault(path))
    relpath = os.path.relpath(target, base)
    return files.write_document(base, relpath, data, base_digest=files.document_digest(original))


def _read_bytes(path: str) -> bytes:
    try:
        return files.read_regular(path, MAX_DOCUMENT_BYTES)
    except OSError as error:
        raise HostError(messages.cannot_read(path, error)) from None


def _decode(path: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise HostError(messages.cannot_read(path, error)) from None


def _vault_of(session: Session, path: str) -> str | None:
    """The session's vault root when the document is inside it (its writes are then checked
    from the root down), else None."""
    if session.vault is None:
        return None
    root = os.fspath(session.vault.root)
    return root if files.Containment(root).inside_vault(path) else None


def render_command(
    args: argparse.Namespace, session_for: Callable[[argparse.Namespace], Session]
) -> int:
    if args.all:
        return _render_all(args, session_for)
    if not args.file:
        raise HostError(messages.render_needs_file())
    session = session_for(args)
    if args.file == "-":
        original, text = b"", sys.stdin.read()
    else:
        original = _read_bytes(args.file)
        text = _decode(args.file, original)
    try:
        rendered = render_document(text, args.file, session)
    except RenderRefused as refusal:
        raise HostError(f"{args.file}: {refusal}") from None
    if args.write and args.file != "-":
        if rendered.text != text:
            _save(args.file, original, rendered.text, _vault_of(session, args.file))
        print(f"{args.file}: {messages.plural(rendered.blocks, 'block')} rendered")
    else:
        sys.stdout.write(rendered.text)
    report_failures("<stdin>" if args.file == "-" else args.file, rendered)
    return 1 if rendered.failed else 0


def _render_all(
    args: argparse.Namespace, session_for: Callable[[argparse.Namespace], Session]
) -> int:
    session = session_for(args)
    if session.vault is None:
        raise HostError(messages.render_all_needs_vault())
    failed = 0
    containment = files.Containment(session.vault.root)
    for card in session.vault.cards:
        try:
            original = files.read_regular(card.path, MAX_DOCUMENT_BYTES)
            text = original.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not carries_blocks(text):
            continue
        try:
            rendered = render_document(text, card.path, session)
        except RenderRefused as refusal:
            print(f"{card.path}: {refusal}", file=sys.stderr)
            failed += 1
            continue
        failed += rendered.failed
        changed = rendered.text != text
        if args.write and changed:
            if not containment.inside_vault(card.path):
                print(messages.render_outside_vault(card.path), file=sys.stderr)
                failed += 1
                continue
            _save(card.path, original, rendered.text, os.fspath(session.vault.root))
        state = messages.render_state(changed, args.write)
        print(f"{card.path}: {messages.plural(rendered.blocks, 'block')} rendered{state}")
        report_failures(card.path, rendered)
    return 1 if failed else 0
