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
    __slots__ = (
        "deadline",
        "ident",
        "fired",
        "closing",
        "ends",
        "base",
        "attained",
        "calls",
        "seen",
        "granted",
        "paused",
        "wake",
    )

    def __init__(self, deadline: float, ident: int) -> None:
        self.deadline = deadline
        self.ident = ident
        self.fired = False
        self.closing = False
        self.ends = deadline  # `deadline` moves when a stop is raised again; this does not
        self.base = time.thread_time()  # `watch` runs on the program's own thread
        self.attained = 0.0  # its thread's CPU seconds since it began, as of its last turn
        self.calls = 0
        self.seen = time.monotonic()  # when it began or last took its turn
        self.granted = 0.0  # its CPU seconds when it was last given the baton
        self.paused = False
        self.wake = threading.Event()


def _raise_in(ident: int, exception: type[BaseException] | None) -> None:
    """Raise `exception` in the thread `ident` at its next bytecode (None takes a pending one back)."""
    argument = ctypes.py_object(exception) if exception is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), argument)


WATCHDOG_NAME = "hql-watchdog"


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
        self.running: dict[int, _Watch] = {}  # per thread, its outermost program (fair shares)

    def watch(self, seconds: float) -> _Watch:
        entry = _Watch(time.monotonic() + seconds, threading.get_ident())
        with self._condition:
            self._watches.add(entry)
            self.running.setdefault(entry.ident, entry)
            CROWDED[0] = len(self.running) > 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=WATCHDOG_NAME, daemon=True)
                self._thread.start()
            if entry.deadline < self._wake_at:  # rarely: deadlines come in the order they are set
                self._condition.notify()
        return entry

    def release(self, entry: _Watch) -> None:
        with self._condition:
            left = self.running.get(entry.ident) is entry
            if left:
                del self.running[entry.ident]
                CROWDED[0] = len(self.running) > 1
            if entry in self._watches:
                self._watches.discard(entry)
                if entry.fired:  # fired but not yet raised: take it back
                    _raise_in(entry.ident, None)
        if left:
            _left(entry)  # a program paused behind this one may go now

    def stop_all(self) -> None:
        """Stop every program now, and every later one before it starts (the server is closing)."""
        with self._condition:
            self.closing = True
            for entry in self._watches:
                entry.deadline = entry.ends = 0.0
                entry.closing = True
            self._wake_at = 0.0
            self._condition.notify()
        with shielded():
            for entry in tuple(self.running.values()):
                entry.wake.set()  # a paused program stops now, not when its pause ends

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


# --- fair shares: one program evaluates at a time, the least served first ------------
#
# Python runs one thread at a time: with sixty runaway calls in flight a cheap call had
# a sixty-first of the interpreter, and waited a switch interval for it back after every
# read of a file. So while more than one program runs, they pass a baton: only its
# holder evaluates, the others pause. The holder keeps it for QUANTUM seconds of its
# CPU, then hands it to the waiting program that has had the least CPU, if that one has
# had less than the holder: a new call is served at once, long ones take turns, and a
# runaway still ends at its deadline (it pauses no later than that). A program takes
# its turn once every CHECK_EVERY calls of a function value (`take_turn`, only while
# CROWDED[0]); one inside a region no stop may cut (`shielded`: it may hold a lock
# another call waits for) never pauses. A holder that has not taken a turn for WANTS
# seconds (it waits for a file, a lock or a server, or runs a long step of its own) is
# not waited for: the next program takes the baton. Programs that call no function
# value (a search, a count) never hold it and never pause; they share the processor
# with the one holder only.

QUANTUM = 0.02
PAUSE = 1.0
WANTS = 1.0
CHECK_EVERY = 64
CROWDED = [False]  # more than one program running: read on every call of a function value
_BATON: list[_Watch | None] = [None]


def take_turn() -> None:
    """Evaluate on while this program holds the baton (or may take it); else pause."""
    entry = _WATCHDOG.running.get(threading.get_ident())
    if entry is None:
        return
    entry.calls += 1
    if entry.calls % CHECK_EVERY:
        return
    while True:
        entry.attained = time.thread_time() - entry.base
        entry.seen = now = time.monotonic()
        left = entry.ends - now
        if left <= 0 or not CROWDED[0] or _shielded(entry.ident) or _may_go(entry, now):
            entry.paused = False
            return
        entry.paused = True
        # A stop waits until the pause is over (at the deadline, at most): one landing
        # inside the event's own lock would leave it held, and the program never woken.
        with shielded():
            entry.wake.wait(min(PAUSE, left))
            entry.wake.clear()


def _may_go(entry: _Watch, now: float) -> bool:
    """Whether `entry` holds the baton after this turn (taking or keeping it), else False
    (it was handed on, or another holds it)."""
    holder = _BATON[0]
    running = _WATCHDOG.running
    if holder is not entry:
        gone = holder is None or running.get(holder.ident) is not holder
        if not gone and (holder.paused or now - holder.seen <= WANTS):  # type: ignore[union-attr]
            return False
        _BATON[0] = entry  # nobody holds it, or its holder is busy elsewhere
        entry.granted = entry.attained
        return True
    if entry.attained - entry.granted < QUANTUM:
        return True
    chosen = _least_served_waiting(entry)
    if chosen is None or chosen.attained >= entry.attained:
        entry.granted = entry.attained  # nobody waiting has had less: another quantum
        return True
    _hand_to(chosen)
    return False


def _least_served_waiting(leaving: _Watch | None) -> _Watch | None:
    waiting = [
        other
        for other in tuple(_WATCHDOG.running.values())
        if other is not leaving and other.paused
    ]
    return min(waiting, key=lambda other: other.attained) if waiting else None


def _hand_to(chosen: _Watch) -> None:
    _BATON[0] = chosen
    chosen.granted = chosen.attained
    with shielded():  # a stop landing inside `set` would leave the event's lock held
        chosen.wake.set()


def _left(entry: _Watch) -> None:
    """`entry`'s program ended: its baton goes to the waiting program served least."""
    if _BATON[0] is entry:
        _BATON[0] = None
        chosen = _least_served_waiting(entry)
        if chosen is not None:
            _hand_to(chosen)


def paused() -> int:
    """How many programs are waiting for their turn now."""
    return sum(1 for entry in tuple(_WATCHDOG.running.values()) if entry.paused)


def turns() -> dict[int, tuple[float, int, bool]]:
    """Per thread running a program: its CPU seconds as of its last turn, how many calls
    of function values it made, and whether it is paused."""
    return {
        ident: (entry.attained, entry.calls, entry.paused)
        for ident, entry in tuple(_WATCHDOG.running.items())
    }


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
