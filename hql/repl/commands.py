"""REPL meta-commands: `:help`, `:type`, `:explain`, `:vault`, `:reset`, `:quit`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from hql import messages
from hql.api import Session

COMMANDS = {
    ":help": "show this help (also :h)",
    ":type EXPR": "check an expression and print its type",
    ":explain EXPR": "show the checked plan and why each hit scored",
    ":vault": "show the vault and how many cards it has",
    ":reset": "forget every binding and import",
    ":quit": "leave (also :q, or Ctrl-D)",
}


class MetaCommands:
    def __init__(
        self, session: Session, out: TextIO, err: TextIO, paint: Callable[[str], str] | None = None
    ) -> None:
        self.session = session
        self.out = out
        self.err = err
        self.paint = paint or (lambda text: text)  # the interactive REPL colours reports

    @staticmethod
    def is_command(line: str) -> bool:
        return line.lstrip().startswith(":")

    def run(self, line: str) -> str | None:
        word, _, rest = line.strip().partition(" ")
        if word in (":quit", ":q"):
            return "quit"
        if word in (":help", ":h"):
            self.help()
        elif word in (":type", ":explain") and not rest.strip():
            usage = next(name for name in COMMANDS if name.split()[0] == word)
            print(messages.repl_command_usage(usage, COMMANDS[usage]), file=self.err)
        elif word == ":type":
            self.type(rest)
        elif word == ":explain":
            self.explain(rest)
        elif word == ":vault":
            self.vault()
        elif word == ":reset":
            self.session.reset()
            print(messages.repl_reset(), file=self.out)
        else:
            print(messages.repl_unknown_command(word), file=self.err)
        return None

    def help(self) -> None:
        from hql.registry import installed

        width = max(len(name) for name in COMMANDS)
        for name, summary in COMMANDS.items():
            print(f"{name.ljust(width)}  {summary}", file=self.out)
        print("", file=self.out)
        print(messages.repl_steps_heading(), file=self.out)
        for spec in installed().steps():
            print(f"  {spec.name.ljust(10)} {spec.summary} ({spec.extension})", file=self.out)

    def type(self, text: str) -> None:
        outcome = self.session.run(text, "<repl>", evaluate=False)
        if outcome.reports:
            print(self.paint(outcome.render_reports()), file=self.err)
        if not outcome.failed:
            print(outcome.text(), file=self.out)

    def explain(self, text: str) -> None:
        from hql.explain import explain

        rendered, reports, _ = explain(self.session, text, "<repl>")
        if reports:
            print(self.paint(reports), file=self.err)
        if rendered:
            print(rendered, file=self.out)

    def vault(self) -> None:
        vault = self.session.vault
        if vault is None:
            print("vault: none", file=self.out)
        else:
            print(
                f"vault: {vault.root} ({messages.plural(len(vault.cards), 'card')})", file=self.out
            )
