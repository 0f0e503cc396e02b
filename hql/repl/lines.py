"""The plain line mode of the REPL (reference section 14): one program per line."""

from __future__ import annotations

from typing import TextIO

from hql import messages
from hql.api import Session
from hql.repl.commands import MetaCommands
from hql.version import __version__

PROMPT = "hql> "


def run_lines(
    session: Session, stdin: TextIO, stdout: TextIO, stderr: TextIO, *, interactive: bool
) -> int:
    meta = MetaCommands(session, stdout, stderr)
    if interactive:
        print(messages.repl_banner(__version__), file=stdout)
    while True:
        if interactive:
            stdout.write(PROMPT)
            stdout.flush()
        line = stdin.readline()
        if not line:
            return 0
        line = line.rstrip("\n")
        if not line.strip():
            continue
        if meta.is_command(line):
            if meta.run(line) == "quit":
                return 0
            continue
        outcome = session.run(line, "<stdin>" if not interactive else "<repl>")
        if outcome.reports:
            print(outcome.render_reports(), file=stderr)
        if not outcome.failed:
            print(outcome.text(), file=stdout)
        stdout.flush()
