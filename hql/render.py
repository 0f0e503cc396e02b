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
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hql import messages
from hql.api import HostError, Outcome, Session
from hql.printing import display, table
from hql.values import Data, ListValue, Presentation, Ranking, SetValue

QUERY_INFOS = {"hql", "hql#eval", "hql#query"}
RESULT_INFO = "hql#result"
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


@dataclass
class Rendered:
    text: str
    blocks: int
    failed: int


def answer(outcome: Outcome) -> str:
    """What a block's result shows: a presentation's text, a table for collections, else the display."""
    if outcome.failed:
        return "\n".join(f"{r.severity.word}: {r.message}" for r in outcome.reports if r.failed)
    value = outcome.value
    if isinstance(value, Presentation):
        return value.text
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


def render_text(text: str, run: Callable[[str], Outcome]) -> Rendered:
    lines = text.split("\n")
    out: list[str] = []
    blocks = failed = 0
    index = 0
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            out.append(lines[index])
            index += 1
            continue
        indent, marker, info = match.group(1), match.group(2), match.group(3).strip()
        end = _fence_end(lines, index, marker)
        block = lines[index : end + 1]
        if info == RESULT_INFO:  # an old result: dropped with the blank lines before it
            while out and not out[-1].strip():
                out.pop()
            index = end + 1
            continue
        out.extend(block)
        index = end + 1
        if info not in QUERY_INFOS or end >= len(lines):
            continue
        program = "\n".join(
            line[len(indent) :] if line.startswith(indent) else line for line in block[1:-1]
        )
        outcome = run(program)
        blocks += 1
        failed += outcome.failed
        out += ["", f"{indent}{marker}{RESULT_INFO}"]
        out += [indent + line if line else line for line in answer(outcome).split("\n")]
        out.append(f"{indent}{marker}")
    return Rendered("\n".join(out), blocks, failed)


def render_document(text: str, path: str, session: Session) -> Rendered:
    """Render a document's text; each block runs as its own program against the session's vault."""

    def run(program: str) -> Outcome:
        return Session(session.vault, session.mode).run(program, path)

    return render_text(text, run)


def carries_blocks(text: str) -> bool:
    return any(
        (match := FENCE.match(line)) is not None and match.group(3).strip() in QUERY_INFOS
        for line in text.split("\n")
    )


def _save(path: str, text: str) -> None:
    try:
        write_atomically(path, text)
    except OSError as error:
        raise HostError(messages.cannot_write(path, error)) from None


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise HostError(messages.cannot_read(path, error)) from None


def write_atomically(path: str, text: str) -> None:
    """Write beside the file, flush to disk, then rename over it: never a half-written document."""
    target = Path(path)
    mode = target.stat().st_mode & 0o7777 if target.exists() else 0o644
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def render_command(
    args: argparse.Namespace, session_for: Callable[[argparse.Namespace], Session]
) -> int:
    if args.all:
        return _render_all(args, session_for)
    if not args.file:
        raise HostError(messages.render_needs_file())
    session = session_for(args)
    text = _read(args.file)
    rendered = render_document(text, args.file, session)
    if args.write and args.file != "-":
        if rendered.text != text:
            _save(args.file, rendered.text)
        print(f"{args.file}: {messages.plural(rendered.blocks, 'block')} rendered")
    else:
        sys.stdout.write(rendered.text)
    return 1 if rendered.failed else 0


def _render_all(
    args: argparse.Namespace, session_for: Callable[[argparse.Namespace], Session]
) -> int:
    session = session_for(args)
    if session.vault is None:
        raise HostError(messages.render_all_needs_vault())
    failed = 0
    for card in session.vault.cards:
        try:
            text = Path(card.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not carries_blocks(text):
            continue
        rendered = render_document(text, card.path, session)
        failed += rendered.failed
        changed = rendered.text != text
        if args.write and changed:
            _save(card.path, rendered.text)
        state = messages.render_state(changed, args.write)
        print(f"{card.path}: {messages.plural(rendered.blocks, 'block')} rendered{state}")
    return 1 if failed else 0
