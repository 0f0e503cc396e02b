"""Sharing a long run of independent tasks with one forked process.

A first load of a large vault parses every file, and parsing one file needs
nothing from another: this process takes the tasks from the front while a
forked child takes them from the back, until they meet. The child sends each
result back marshalled, through a pipe; the two positions sit in a shared
page, so neither waits for the other and the split follows whichever is
faster.

Only where forking is safe and worth it: Linux, more than one core, and a
process with a single thread (a fork copies only the thread that calls it).
Nothing here can lose a task: a child that cannot start, dies, or sends
something unreadable simply leaves its tasks undone, and the caller does
every task it was not given a result for itself. Near the meeting point a
task may be done by both; the caller keeps one result.
"""

from __future__ import annotations

import contextlib
import marshal
import mmap
import os
import signal
import struct
from collections.abc import Callable

# The front position (tasks below it are this process's) and the back one (tasks
# from it on are the child's), each written by one side only, as aligned native
# 64-bit integers (one store each; `struct.pack_into` zeroes before it writes, so the
# other side could read 0).
_FRONT, _BACK = 0, 1
_FRAME = struct.Struct("<Q")  # the length of the marshalled results that follow
_FRAME_TASKS = 64  # results per frame
_LISTEN_EVERY = 4  # tasks done here between looks at the pipe
_PIPE_BYTES = 1 << 20  # asked of the kernel so the child seldom waits for a look


def usable() -> bool:
    """Whether a child may be forked to share work: Linux, two cores or more, one thread."""
    if not hasattr(os, "fork"):
        return False
    try:
        cores = len(os.sched_getaffinity(0))
        threads = len(os.listdir("/proc/self/task"))  # threads the interpreter does not know of too
    except (AttributeError, OSError):
        return False
    return cores >= 2 and threads == 1


def core_free() -> bool:
    """Whether the machine has a core to spare (load average of the last minute, which
    counts this process too, at least half a core below the cores this process may use).

    On a busy machine a forked process only competes for the cores: the work costs more
    CPU in two processes than in one, and the load would take longer.
    """
    try:
        cores = len(os.sched_getaffinity(0))
        return os.getloadavg()[0] < cores - 0.5
    except (AttributeError, OSError):
        return False


def share(
    count: int,
    here: Callable[[int], None],
    there: Callable[[int], object],
    received: Callable[[int, object], None],
) -> None:
    """Tasks 0 .. count-1: `here(task)` runs in this process, `there(task)` in the child,
    whose (marshallable) result comes back as `received(task, result)`.

    A task may be given to both `here` and `received`, or to neither (a child that
    failed): the caller does the ones it has no result for.
    """
    if count <= 0:
        return
    try:
        shared = mmap.mmap(-1, mmap.PAGESIZE)  # anonymous and shared with the child
    except (OSError, ValueError):
        return
    positions = memoryview(shared).cast("q")
    try:
        positions[_FRONT], positions[_BACK] = 0, count
        try:
            reader, writer = os.pipe()
        except OSError:
            return
        try:
            child = os.fork()
        except OSError:
            os.close(reader)
            os.close(writer)
            return
        if child == 0:
            _child(positions, reader, writer, count, there)
        os.close(writer)
        heard_all = False
        try:
            heard_all = _front(positions, reader, count, here, received)
        finally:
            os.close(reader)
            _reap(child, heard_all)
    finally:
        positions.release()
        shared.close()


def _child(
    positions: memoryview, reader: int, writer: int, count: int, there: Callable[[int], object]
) -> None:
    """Take tasks from the back until meeting the front; never returns."""
    status = 1
    try:
        os.close(reader)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # an interrupt ends the child at once
        # The parent's handlers and event-loop wakeup are the parent's: a resized terminal
        # or a signal must not wake its loop through the child.
        if hasattr(signal, "SIGWINCH"):
            signal.signal(signal.SIGWINCH, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        results: list[tuple[int, object]] = []
        task = count - 1
        while task >= positions[_FRONT]:
            positions[_BACK] = task
            results.append((task, there(task)))
            if len(results) == _FRAME_TASKS:
                _send(writer, results)
                results = []
            task -= 1
        _send(writer, results)
        status = 0
    finally:
        os._exit(status)  # no cleanup of the parent's state: not its own


def _send(writer: int, results: list[tuple[int, object]]) -> None:
    if not results:
        return
    data = marshal.dumps(results)
    view = memoryview(_FRAME.pack(len(data)) + data)
    while view:
        view = view[os.write(writer, view) :]


def _front(
    positions: memoryview,
    reader: int,
    count: int,
    here: Callable[[int], None],
    received: Callable[[int, object], None],
) -> bool:
    """Take tasks from the front until meeting the child, looking at the pipe now and
    then; then hear the rest. True when the child's every frame was heard."""
    with contextlib.suppress(OSError, AttributeError):
        import fcntl

        fcntl.fcntl(reader, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    os.set_blocking(reader, False)
    inbox = _Inbox(count, received)
    task = 0
    while task < count:
        positions[_FRONT] = task + 1
        if task >= positions[_BACK]:
            break  # the child has this one and every one after it
        here(task)
        task += 1
        if task % _LISTEN_EVERY == 0:
            inbox.listen(reader)
    os.set_blocking(reader, True)
    inbox.listen(reader)
    return inbox.ended


class _Inbox:
    """The child's frames as they arrive; anything unreadable stops the listening."""

    def __init__(self, count: int, received: Callable[[int, object], None]) -> None:
        self.count = count
        self.received = received
        self.pending = bytearray()
        self.listening = True
        self.ended = False  # the pipe was closed after whole frames only

    def listen(self, reader: int) -> None:
        """Read what the pipe holds; a blocking pipe: until the child closes it."""
        while self.listening:
            try:
                chunk = os.read(reader, _PIPE_BYTES)
            except BlockingIOError:
                return
            except OSError:
                self.listening = False
                return
            if not chunk:
                self.listening = False
                self.ended = not self.pending
                return
            self.pending += chunk
            self.listening = self._unpack()

    def _unpack(self) -> bool:
        """Hand over every whole frame; False if one cannot be read."""
        pending = self.pending
        while len(pending) >= _FRAME.size:
            (length,) = _FRAME.unpack_from(pending)
            end = _FRAME.size + length
            if len(pending) < end:
                break
            try:
                results = marshal.loads(pending[_FRAME.size : end])
            except (EOFError, ValueError, TypeError):
                return False
            del pending[:end]
            if type(results) is not list:
                return False
            for result in results:
                if type(result) is not tuple or len(result) != 2:
                    return False
                task = result[0]
                if type(task) is not int or not 0 <= task < self.count:
                    return False
                self.received(task, result[1])
        return True


def _reap(child: int, finished: bool) -> None:
    """Wait for the child, ending it first unless it has finished (it is no longer heard)."""
    if not finished:
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(child, 0)
