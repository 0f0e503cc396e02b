"""hql.progress: a bar on terminals, nothing on pipes."""

from __future__ import annotations

import io

from hql.progress import Progress, track


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_the_bar_and_then_a_clean_line() -> None:
    stream = FakeTerminal()
    with Progress(4, "loading cards", stream, interval=0) as bar:
        bar.advance(1)
        assert stream.getvalue().endswith("loading cards [#######-----------------------] 1/4 25%")
        bar.advance(3)
        assert "4/4 100%" in stream.getvalue()
    assert stream.getvalue().endswith("\r")  # erased: what follows starts on a clean line


def test_pipes_and_files_get_nothing() -> None:
    stream = io.StringIO()
    assert list(track(range(5), 5, "work", stream)) == [0, 1, 2, 3, 4]
    assert stream.getvalue() == ""


def test_small_jobs_below_the_minimum_draw_nothing() -> None:
    stream = FakeTerminal()
    with Progress(3, "tiny", stream, minimum=100) as bar:
        bar.advance(3)
    assert stream.getvalue() == ""


def test_redraws_are_throttled() -> None:
    stream = FakeTerminal()
    with Progress(1000, "fast", stream, interval=60) as bar:
        for _ in range(1000):
            bar.advance()
    assert stream.getvalue().count("\r") == 4  # the first draw, the last, the erase (two)
