"""A time guard for a program: stopped from a watchdog thread when its seconds are up.

The MCP server runs every call under `within`; the command line does too when the
vault's hql.toml sets `[limits] seconds` (off by default there). The watchdog raises
an exception inside the program's own thread, which pure-Python lexing, parsing,
checking and evaluation notice at their next bytecode: no loop has to poll a clock.
"""

from __future__ import annotations

import ctypes
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any


class _Stopped(BaseException):
    """Raised inside a program's thread when its time is up (a BaseException: nothing catches it)."""


class Overrun(Exception):
    """A program stopped: its time was up, or (`closing`) the server is shutting down."""

    def __init__(self, seconds: float, closing: bool = False) -> None:
        super().__init__(seconds)
        self.seconds = seconds
        self.closing = closing


_REFIRE_SECONDS = 0.1

# Per thread, how many regions it is in that a stop must not cut in half (`shielded`).
_SHIELDS: dict[int, list[int]] = {}


class shielded:  # noqa: N801 - used as a statement: `with shielded():`
    """A region no stop lands in: the watchdog holds a stop back until the thread leaves it.

    A stop is an exception raised at whatever bytecode the thread is at, and raised again
    every 0.1 s until the program is gone; one landing in the `finally` that lets a file
    lock go would leave the lock held for the life of the process, and every later writer
    of the vault (another call of the same server) waiting on it forever. Lock holders
    (hql.files) take their locks inside this region, and let them go before leaving it.
    """

    __slots__ = ("_depth",)

    def __enter__(self) -> None:
        self._depth = _SHIELDS.setdefault(threading.get_ident(), [0])
        self._depth[0] += 1

    def __exit__(self, *_: object) -> None:
        self._depth[0] -= 1


def _shielded(ident: int) -> bool:
    depth = _SHIELDS.get(ident)
    return depth is not None and depth[0] > 0


class _Watch:
    __slots__ = ("deadline", "ident", "fired", "closing")

    def __init__(self, deadline: float, ident: int) -> None:
        self.deadline = deadline
        self.ident = ident
        self.fired = False
        self.closing = False


def _raise_in(ident: int, exception: type[BaseException] | None) -> None:
    """Raise `exception` in the thread `ident` at its next bytecode (None takes a pending one back)."""
    argument = ctypes.py_object(exception) if exception is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), argument)


class _Watchdog:
    """One thread that stops programs whose time is up, in whatever thread runs them.

    A program runs on the thread that asked for it (no thread per call); when its
    deadline passes the watchdog raises `_Stopped` there, which pure-Python
    evaluation notices at once. A program inside a long C call stops when it returns.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._watches: set[_Watch] = set()
        self._thread: threading.Thread | None = None
        self._wake_at = math.inf  # the deadline the watchdog sleeps until
        self.closing = False  # set once by `stop_all`: no program runs after it

    def watch(self, seconds: float) -> _Watch:
        entry = _Watch(time.monotonic() + seconds, threading.get_ident())
        with self._condition:
            self._watches.add(entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="hql-watchdog", daemon=True)
                self._thread.start()
            if entry.deadline < self._wake_at:  # rarely: deadlines come in the order they are set
                self._condition.notify()
        return entry

    def release(self, entry: _Watch) -> None:
        with self._condition:
            if entry in self._watches:
                self._watches.discard(entry)
                if entry.fired:  # fired but not yet raised: take it back
                    _raise_in(entry.ident, None)

    def stop_all(self) -> None:
        """Stop every program now, and every later one before it starts (the server is closing)."""
        with self._condition:
            self.closing = True
            for entry in self._watches:
                entry.deadline = 0.0
                entry.closing = True
            self._wake_at = 0.0
            self._condition.notify()

    def _loop(self) -> None:
        with self._condition:
            while True:
                now = time.monotonic()
                waiting = []
                for entry in self._watches:
                    if entry.deadline <= now and _shielded(entry.ident):
                        entry.deadline = now + _REFIRE_SECONDS  # once it leaves the region
                    elif entry.deadline <= now:
                        entry.fired = True
                        _raise_in(entry.ident, _Stopped)
                        # An exception that arrives while a finalizer or weakref callback runs
                        # is printed and lost, so raise again until the program has stopped.
                        entry.deadline = now + _REFIRE_SECONDS
                    waiting.append(entry.deadline)
                self._wake_at = min(waiting, default=math.inf)
                self._condition.wait(self._wake_at - now if waiting else None)


_WATCHDOG = _Watchdog()


def stop_every_program() -> None:
    """The server is closing: stop every program running under `within`, and refuse later ones
    (each is answered with a report saying the server is stopping)."""
    _WATCHDOG.stop_all()


def within(seconds: float, work: Callable[[], Any]) -> Any:
    """`work()` on this thread; Overrun when it is stopped after `seconds`."""
    if _WATCHDOG.closing:
        raise Overrun(seconds, closing=True)
    entry = _WATCHDOG.watch(seconds)
    try:
        try:
            return work()
        finally:
            _WATCHDOG.release(entry)
    except _Stopped:
        while True:  # a repeated raise may land here too, until the entry is released
            try:
                _WATCHDOG.release(entry)
                break
            except _Stopped:
                continue
        if (
            not entry.fired
        ):  # an enclosing guard's stop (nested calls): it is that guard's to report
            raise
        raise Overrun(seconds, closing=entry.closing) from None


def configured_seconds(section: Mapping[str, Any]) -> float | None:
    """`[limits] seconds = N` of hql.toml: a positive, finite number of seconds, else None."""
    seconds = section.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    return float(seconds) if 0 < seconds < math.inf else None
