"""The time guard stops a program by raising inside its thread, and raises again every
0.1 s until it is gone; no stop may land while the program holds a file lock, or the lock
stays held for the life of the process and the next writer waits forever."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from hql import files
from hql.deadline import Overrun, within


def _busy(seconds: float) -> None:
    """Python-level work that a stop would interrupt at once."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        sum(range(100))


def _free(directory: Path) -> bool:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(descriptor)


def test_a_stop_waits_until_the_lock_is_let_go(tmp_path: Path) -> None:
    done: list[str] = []

    def work() -> None:
        with files.locked(tmp_path):
            _busy(0.4)
            done.append("held to the end")
        _busy(2.0)  # outside the lock the stop lands at once
        done.append("after the lock")

    started = time.monotonic()
    try:
        within(0.05, work)
        stopped = False
    except Overrun:
        stopped = True
    assert stopped and done == ["held to the end"]
    assert time.monotonic() - started < 1.5
    assert _free(tmp_path)


def test_a_stop_waits_for_the_refresh_turn_and_the_writers_lock(tmp_path: Path) -> None:
    from hql.notes.fresh import _turn

    state = tmp_path / ".hql"
    done: list[str] = []

    def work() -> None:
        with _turn(state), files.try_locked(state) as held:
            assert held
            _busy(0.3)
            done.append("held to the end")
        _busy(2.0)

    with pytest.raises(Overrun):
        within(0.05, work)
    assert done == ["held to the end"]
    assert _free(state)
