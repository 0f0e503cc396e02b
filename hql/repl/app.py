"""The interactive REPL on prompt-toolkit (used when stdin and stdout are terminals).

    hql> cards | take(3) |        Enter continues: the statement is not complete
    ...>   expand(depth = 1)     Enter runs it; Esc Enter always inserts a newline
    node  presence …

Highlighting comes from hql.repl.lexer, completion from hql.repl.completer,
the Enter rule from hql.repl.continuation and meta-commands from
hql.repl.commands. Ctrl-C drops the input being typed; Ctrl-D leaves.
"""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.filters import is_searching
from prompt_toolkit.history import History
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output
from prompt_toolkit.search import accept_search

from hql import messages
from hql.api import Outcome, Session
from hql.printing import display, is_graph, table
from hql.progress import is_terminal
from hql.repl.commands import MetaCommands
from hql.repl.completer import HqlCompleter
from hql.repl.continuation import is_complete
from hql.repl.history import open_history
from hql.repl.lexer import STYLE, HqlLexer
from hql.values import Presentation, Unit, is_collection
from hql.version import __version__

PROMPT = "hql> "
CONTINUATION = "...> "

# ANSI colours for reports: what the caret form says in red (errors) or yellow (warnings).
_RED, _YELLOW, _BLUE, _BOLD, _RESET = "\x1b[31m", "\x1b[33m", "\x1b[34m", "\x1b[1m", "\x1b[0m"
_HEADER = re.compile(r"^((?:\w+ )?(error|warning|failure)):(.*)$")
_GUTTER = re.compile(r"^(\s*\d*\s*\|)(.*)$")


def paint_reports(text: str, color: bool = True) -> str:
    """The caret form with the header and carets coloured by severity and the gutter in blue."""
    if not color:
        return text
    painted: list[str] = []
    severity_color = _RED
    for line in text.split("\n"):
        if header := _HEADER.match(line):
            severity_color = _YELLOW if header.group(2) == "warning" else _RED
            painted.append(
                f"{_BOLD}{severity_color}{header.group(1)}:{_RESET}{_BOLD}{header.group(3)}{_RESET}"
            )
        elif line.lstrip().startswith("-->"):
            painted.append(f"{_BLUE}{line}{_RESET}")
        elif gutter := _GUTTER.match(line):
            rest = gutter.group(2)
            carets = rest.strip()
            if carets and set(carets) == {"^"}:
                rest = f"{rest[: rest.index('^')]}{_BOLD}{severity_color}{carets}{_RESET}"
            painted.append(f"{_BLUE}{gutter.group(1)}{_RESET}{rest}")
        else:
            painted.append(line)
    return "\n".join(painted)


def answer_text(value: Any) -> str | None:
    """What the REPL shows for a value: presentations as they are, tables for collections and graphs."""
    if isinstance(value, Unit):
        return None  # a binding or an import: nothing to show
    if isinstance(value, Presentation):
        return value.text
    if is_collection(value) or is_graph(value):
        return table(value)
    return display(value)


def show_outcome(outcome: Outcome, out: TextIO, err: TextIO, color: bool) -> None:
    if outcome.reports:
        print(paint_reports(outcome.render_reports(), color), file=err)
    if not outcome.failed and outcome.evaluated:
        text = answer_text(outcome.value)
        if text is not None:
            print(text, file=out)
    out.flush()


def key_bindings() -> KeyBindings:
    bindings = KeyBindings()
    editing = ~is_searching  # in Ctrl-R search, Enter and Tab belong to the search line

    @bindings.add("enter", filter=is_searching)
    def _accept_search(event: KeyPressEvent) -> None:
        # The found line stays, as in a plain prompt-toolkit session, with the cursor at
        # its end so that the next Enter runs it rather than splitting the line.
        accept_search()
        buffer = event.app.current_buffer
        buffer.cursor_position = len(buffer.text)

    @bindings.add("enter", filter=editing)
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)
            return
        if buffer.document.is_cursor_at_the_end and is_complete(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    @bindings.add("escape", "enter", filter=editing)
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("tab", filter=editing)
    def _tab(event: KeyPressEvent) -> None:
        complete_with_tab(event.current_buffer)

    return bindings


def complete_with_tab(buffer: Buffer) -> None:
    """Tab: a lone candidate is inserted at once; several open (or step through) the menu."""
    state = buffer.complete_state
    if state is not None and (state.current_completion is not None or len(state.completions) > 1):
        buffer.complete_next()
        return
    completer = buffer.completer
    if completer is None:
        return
    found = list(
        completer.get_completions(buffer.document, CompleteEvent(completion_requested=True))
    )
    if len(found) == 1:
        buffer.apply_completion(found[0])
    elif found:
        buffer.cancel_completion()
        buffer.start_completion(insert_common_part=True)


def make_prompt(
    session: Session, history: History, *, input: Input | None = None, output: Output | None = None
) -> PromptSession[str]:
    return PromptSession(
        PROMPT,
        multiline=True,
        prompt_continuation=lambda width, line_number, wrapped: CONTINUATION.rjust(width),
        lexer=HqlLexer(),
        completer=HqlCompleter(session),
        complete_while_typing=True,
        auto_suggest=AutoSuggestFromHistory(),
        history=history,
        key_bindings=key_bindings(),
        style=STYLE,
        input=input,
        output=output,
    )


def run_interactive(
    session: Session,
    *,
    input: Input | None = None,
    output: Output | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    history: History | None = None,
    color: bool | None = None,
) -> int:
    """Read, check, run and show programs until Ctrl-D or `:quit`; returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    color = is_terminal(err) if color is None else color  # reports go to err: colour only a screen
    warning = None
    if history is None:
        history, warning = open_history()
    prompt = make_prompt(session, history, input=input, output=output)
    meta = MetaCommands(session, out, err, paint=lambda text: paint_reports(text, color))
    print(messages.repl_banner(__version__), file=out)
    if warning:
        print(f"warning: {warning}", file=err)
    while True:
        try:
            text = prompt.prompt()
        except KeyboardInterrupt:
            continue  # Ctrl-C: the input is dropped, the session goes on
        except EOFError:
            return 0
        if not text.strip():
            continue
        if meta.is_command(text):
            if meta.run(text) == "quit":
                return 0
            continue
        try:
            show_outcome(session.run(text, "<repl>"), out, err, color)
        except KeyboardInterrupt:  # Ctrl-C during a long evaluation stops it, not the REPL
            print(messages.interrupted(), file=err)
