"""`hql repl` in a real pseudo-terminal: a completion and an answer appear on the screen."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

BIRDS = Path(__file__).parent / "fixtures" / "birds"

pty = pytest.importorskip("pty")


class Terminal:
    """A child process on a pseudo-terminal, read until a pattern shows up."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        import fcntl
        import struct
        import termios

        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.process = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            close_fds=True,
            start_new_session=True,
        )
        os.close(slave)
        self.screen = b""

    def expect(self, pattern: bytes, timeout: float = 20.0, since: int = 0) -> int | None:
        """Read until `pattern` shows up after offset `since`; the offset where it ends, or None."""
        deadline = time.monotonic() + timeout
        while True:
            match = re.compile(pattern).search(self.screen, since)
            if match:
                return match.end()
            if time.monotonic() >= deadline:
                return None
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.screen += os.read(self.master, 65536)
                except OSError:
                    return None

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def close(self, timeout: float = 20.0) -> int | None:
        """Wait for the child to leave, reading what it writes meanwhile (a full terminal blocks it)."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self.expect(rb"(?!)", timeout=0.1)  # never matches: just drains the terminal
        os.close(self.master)
        return self.process.poll()


def test_completion_and_answer_in_a_pseudo_terminal(tmp_path: Path) -> None:
    from hql.api import open_vault

    count = len(open_vault(BIRDS).cards)
    env = dict(os.environ, TERM="xterm", XDG_STATE_HOME=str(tmp_path), PROMPT_TOOLKIT_NO_CPR="1")
    terminal = Terminal([sys.executable, "-m", "hql", "--vault", str(BIRDS), "repl"], env)
    try:
        assert terminal.expect(rb"hql>") is not None, terminal.screen
        terminal.type(b"cards | cou")
        assert terminal.expect(rb"how many elements") is not None, (
            terminal.screen
        )  # the menu with the summary
        terminal.type(b"\t")  # the lone candidate is inserted by one Tab
        assert terminal.expect(rb"cou(\x1b\[[0-9;]*m)*nt") is not None, (
            terminal.screen
        )  # completed in place
        time.sleep(0.2)
        terminal.type(b"\r")  # one Enter runs `cards | count`: nothing is left to accept
        answered = terminal.expect(rb"(?<![0-9;])%d\r\n" % count)
        assert answered is not None, terminal.screen
        assert terminal.expect(rb"hql>", since=answered), terminal.screen  # the next prompt
        terminal.type(b"\x04")
        assert terminal.close() == 0
    finally:
        if terminal.process.poll() is None:
            terminal.process.kill()
    assert "+cards | count" in (tmp_path / "hql" / "history").read_text(encoding="utf-8")


def repl(tmp_path: Path, history: str = "") -> tuple[Terminal, int]:
    """`hql repl` on the birds vault with `history` as its history file; and the card count."""
    from hql.api import open_vault

    if history:
        (tmp_path / "hql").mkdir(parents=True, exist_ok=True)
        (tmp_path / "hql" / "history").write_text(history, encoding="utf-8")
    env = dict(os.environ, TERM="xterm", XDG_STATE_HOME=str(tmp_path), PROMPT_TOOLKIT_NO_CPR="1")
    terminal = Terminal([sys.executable, "-m", "hql", "--vault", str(BIRDS), "repl"], env)
    return terminal, len(open_vault(BIRDS).cards)


def test_reverse_search_enter_accepts_the_found_line(tmp_path: Path) -> None:
    terminal, count = repl(tmp_path, "\n# earlier\n+cards | count\n")
    try:
        assert terminal.expect(rb"hql>") is not None, terminal.screen
        terminal.type(b"\x12")  # Ctrl-R
        assert terminal.expect(rb"I-search backward") is not None, terminal.screen
        terminal.type(b"cou")
        assert terminal.expect(rb"cou") is not None, terminal.screen
        time.sleep(0.2)
        terminal.type(b"\r")  # accepts the search: the found line is back at the prompt
        time.sleep(0.3)
        terminal.type(b"\r")  # and runs
        answered = terminal.expect(rb"(?<![0-9;])%d\r\n" % count)
        assert answered is not None, terminal.screen
        assert terminal.expect(rb"hql>", since=answered), terminal.screen  # the next prompt
        time.sleep(0.3)  # a Ctrl-D typed while the next prompt starts can be lost
        terminal.type(b"\x04")
        assert terminal.close() == 0
    finally:
        if terminal.process.poll() is None:
            terminal.process.kill()


def test_tab_after_a_prefix_picks_the_everyday_step(tmp_path: Path) -> None:
    terminal, count = repl(tmp_path)
    try:
        assert terminal.expect(rb"hql>") is not None, terminal.screen
        terminal.type(b"cards | fi")
        assert terminal.expect(rb"keep the elements") is not None, terminal.screen  # the menu
        terminal.type(b"\t")  # `filter`, the registry's everyday step, before `first`
        time.sleep(0.2)
        terminal.type(b"(c => true) | count")
        time.sleep(0.3)
        terminal.type(b"\r")
        answered = terminal.expect(rb"(?<![0-9;])%d\r\n" % count)
        assert answered is not None, terminal.screen
        assert terminal.expect(rb"hql>", since=answered), terminal.screen  # the next prompt
        time.sleep(0.3)  # a Ctrl-D typed while the next prompt starts can be lost
        terminal.type(b"\x04")
        assert terminal.close() == 0
    finally:
        if terminal.process.poll() is None:
            terminal.process.kill()
    assert "+cards | filter(c => true) | count" in (tmp_path / "hql" / "history").read_text(
        encoding="utf-8"
    )
