"""A tiny progress bar on stderr, drawn only when stderr is a terminal.

    with Progress(len(cards), "embedding cards") as bar:
        for batch in batches:
            ...
            bar.advance(len(batch))

It redraws at most every `interval` seconds so a fast loop does not spend its
time drawing, erases itself when done, and does nothing at all when the
stream is not a terminal (pipes, files, CI logs stay clean). Long work such
as `hql index build` or a first load of a large vault takes one.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import TextIO, TypeVar

T = TypeVar("T")
WIDTH = 30


class Progress:
    def __init__(
        self,
        total: int,
        label: str,
        stream: TextIO | None = None,
        *,
        interval: float = 0.1,
        minimum: int = 1,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total, self.label, self.done = total, label, 0
        self.interval = interval
        self.enabled = total >= minimum and total > 0 and is_terminal(self.stream)
        self._drawn_at = 0.0
        self._width = 0

    def advance(self, count: int = 1) -> None:
        self.done = min(self.total, self.done + count)
        now = time.monotonic()
        if self.enabled and (now - self._drawn_at >= self.interval or self.done == self.total):
            self._drawn_at = now
            self.draw()

    def line(self) -> str:
        filled = WIDTH * self.done // self.total if self.total else WIDTH
        percent = 100 * self.done // self.total if self.total else 100
        return f"{self.label} [{'#' * filled}{'-' * (WIDTH - filled)}] {self.done}/{self.total} {percent}%"

    def draw(self) -> None:
        text = self.line()
        self._width = max(self._width, len(text))
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()

    def finish(self) -> None:
        """Erase the bar (the work's own output follows on a clean line)."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
        self._width = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.finish()


def track(
    items: Iterable[T], total: int, label: str, stream: TextIO | None = None, minimum: int = 1
) -> Iterator[T]:
    """Yield `items`, advancing a bar by one for each."""
    with Progress(total, label, stream, minimum=minimum) as bar:
        for item in items:
            yield item
            bar.advance()


class Status:
    """One line such as "loading model …" on a terminal while slow work without steps runs.

    Written at once, erased when the work ends, nothing at all on pipes and files.
    """

    def __init__(self, text: str, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.text = text
        self.enabled = is_terminal(self.stream)

    def __enter__(self) -> Status:
        if self.enabled:
            self.stream.write("\r" + self.text)
            self.stream.flush()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * len(self.text) + "\r")
            self.stream.flush()


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real stream
        return False
