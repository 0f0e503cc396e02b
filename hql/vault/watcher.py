"""The vault watcher behind `hql --vault V vault watch` (Linux inotify).

It holds an inotify watch on every folder of the vault and counts the changes
it is told of; a load asks it for that count through `.hql/watch.sock`
(hql/vault/watch.py says what the load does with the answer).

Why a count is enough: the kernel queues an inotify event before the call
that changed the file returns, and the watcher reads every queued event
before it answers. A change made before a load asks is counted in the answer.

The count is conservative: any event on a name the walk could read (names
starting with "." are never read) changes it, and an event the watcher cannot
place (its queue overflowed, a folder moved) makes it look at every folder
again. What inotify does not report, the watcher cannot count: a file changed
through a hard link from outside the vault, writes through a memory map, or
changes made by another machine on a network file system. Where that matters,
do not run the watcher: without it, every load walks.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import secrets
import selectors
import socket
import stat
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Protocol

from hql import files, messages
from hql.unix_socket import SocketAddress
from hql.vault.watch import SOCKET, answer_in_process

LOCK = "watch.lock"

# <sys/inotify.h>
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000

_FOLDER_EVENTS = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED
# A note written (closed after writing), moved in or out, or removed.
_NOTE_CHANGED = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE
# How long the vault stays quiet before the changed notes are handed on (an editor's
# save is several events).
QUIET_SECONDS = 0.2
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, length of the name that follows
# A command sent to be answered: `serve LENGTH\n` and that many bytes (hql/served.py).
_COMMAND_LIMIT = 64 << 20
# How long a caller may take to send its command, or to read the answer.
_COMMAND_SECONDS = 30.0
# After this long without a command, what the commands kept open is let go.
IDLE_SECONDS = 600.0


class Commands(Protocol):
    """What answers the commands sent to a watcher (hql/served.py implements it)."""

    answered: int  # how many commands it answered (a watcher tells it when asked)

    def answer(self, payload: bytes, token: str) -> bytes: ...

    def release(self) -> None: ...


class WatchError(Exception):
    """The watcher cannot start or cannot go on vouching for the vault; the message says why."""


# --- watching -----------------------------------------------------------------------


class _Inotify:
    """The few inotify calls the watcher makes, through libc."""

    def __init__(self) -> None:
        if not sys.platform.startswith("linux"):
            raise WatchError(messages.watch_needs_linux())
        library = ctypes.util.find_library("c")
        try:
            self._libc = ctypes.CDLL(library, use_errno=True)
            self._add = self._libc.inotify_add_watch
        except (OSError, AttributeError):
            raise WatchError(messages.watch_needs_linux()) from None
        self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        descriptor = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if descriptor < 0:
            raise _os_error()
        self.fileno = descriptor

    def add(self, path: str) -> int:
        """Watch the folder at `path` (symlinks followed); its watch descriptor."""
        found = self._add(self.fileno, os.fsencode(path), _FOLDER_EVENTS)
        if found < 0:
            raise _os_error()
        return int(found)

    def events(self) -> Iterator[tuple[int, int, str]]:
        """The queued events as (wd, mask, name), until the queue is empty."""
        while True:
            try:
                data = os.read(self.fileno, 64 * 1024)
            except BlockingIOError:
                return
            at = 0
            while at + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, at)
                at += _EVENT.size
                name = data[at : at + length].split(b"\0", 1)[0]
                at += length
                yield wd, mask, os.fsdecode(name)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fileno)


def _os_error() -> OSError:
    number = ctypes.get_errno()
    return OSError(number, os.strerror(number))


class Watcher:
    """Keeps a count of the changes below a vault, and tells it to loads that ask.

    `start` holds `.hql/watch.lock` (one watcher per vault), watches every folder
    and opens the socket; `serve` answers until `stop` is called, the vault goes
    away, or the watcher can no longer see every folder (it raises WatchError
    then, and the socket is gone, so loads walk again).
    """

    def __init__(
        self,
        root: Path,
        on_change: Callable[[list[str]], None] | None = None,
        on_command: Commands | None = None,
    ) -> None:
        """`on_change` is told, on a thread of its own, the vault-relative paths of the notes
        written, moved or removed, once the vault has been quiet for `QUIET_SECONDS`.
        `on_command` answers the commands sent to the watcher (hql/served.py)."""
        self.root = root
        self._on_change = on_change
        self._on_command = on_command
        self._serving_thread: int | None = None
        self._last_command = 0.0
        self._changed: set[str] = set()  # notes changed since `on_change` was last told
        self._telling: threading.Thread | None = None
        self.state_dir = root / ".hql"
        self.identity = secrets.token_hex(8)
        self.generation = 0
        self.folders: dict[int, str] = {}  # watch descriptor -> the folder's path
        self._inotify: _Inotify | None = None
        self._listener: socket.socket | None = None
        self._lock: int | None = None
        self._state: int | None = None
        self._wake_read, self._wake_write = os.pipe()
        self._stopping = False

    @property
    def token(self) -> str:
        return f"{self.identity} {self.generation}"

    def start(self) -> None:
        """Watch every folder and listen; WatchError says why it cannot."""
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        state_dir = os.fspath(self.state_dir)
        try:
            self._inotify = _Inotify()
        except OSError as error:
            raise WatchError(messages.watch_failed(os.fspath(self.root), _reason(error))) from None
        try:
            self.state_dir.mkdir(exist_ok=True)
            if not files.state_dir_contained(self.state_dir):
                raise WatchError(messages.watch_state_outside(state_dir))
            self._lock = _hold(self.state_dir / LOCK)
            # The socket is removed through this, wherever the vault has moved meanwhile.
            self._state = os.open(self.state_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as error:
            raise WatchError(messages.watch_failed(state_dir, _reason(error))) from None
        if self._lock is None:
            raise WatchError(messages.watch_already(os.fspath(self.root)))
        self._watch_all()
        try:
            self._listener = self._listen()
        except OSError as error:
            raise WatchError(messages.watch_failed(state_dir, _reason(error))) from None

    def _listen(self) -> socket.socket:
        path = self.state_dir / SOCKET
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                os.unlink(path)  # a socket left by a watcher that was killed
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with SocketAddress(path) as where:
                listener.bind(where)
            listener.listen(16)
        except OSError:
            listener.close()
            raise
        listener.setblocking(False)
        return listener

    def _watch_all(self) -> None:
        """Watch the root and every folder below it (symlinked ones too, each once)."""
        seen: set[tuple[int, int]] = set()
        self._watch_tree(os.fspath(self.root), seen)

    def _watch_tree(self, top: str, seen: set[tuple[int, int]]) -> None:
        pending = [top]
        while pending:
            folder = pending.pop()
            try:
                identity = os.stat(folder)
            except OSError:
                continue  # gone already: its parent's event has been counted
            key = (identity.st_dev, identity.st_ino)
            if key in seen:
                continue
            seen.add(key)
            self._watch(folder)
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                with contextlib.suppress(OSError):
                    if entry.is_dir():
                        pending.append(entry.path)
                    elif entry.is_symlink():
                        self._watch_target(entry.path)

    def _watch(self, folder: str) -> None:
        assert self._inotify is not None
        try:
            self.folders[self._inotify.add(folder)] = folder
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                return  # gone already: its parent's event has been counted
            if error.errno == errno.ENOSPC:
                raise WatchError(messages.watch_limit(folder)) from None
            raise WatchError(messages.watch_failed(folder, _reason(error))) from None

    def _watch_target(self, link: str) -> None:
        """A symlinked file changes where it really is: watch that folder too."""
        target = os.path.realpath(link)
        folder = os.path.dirname(target)
        if os.path.isdir(folder):
            self._watch(folder)

    # --- serving --------------------------------------------------------------------

    def serve(self) -> None:
        assert self._inotify is not None and self._listener is not None
        selector = selectors.DefaultSelector()
        selector.register(self._inotify.fileno, selectors.EVENT_READ, "events")
        selector.register(self._listener, selectors.EVENT_READ, "asked")
        selector.register(self._wake_read, selectors.EVENT_READ, "stop")
        self._serving_thread = threading.get_ident()
        try:
            while not self._stopping:
                ready_now = selector.select(self._wait())
                if not ready_now:
                    self._tell()
                    self._release_when_idle()
                for ready, _ in ready_now:
                    if ready.data == "events":
                        self._take_events()
                    elif ready.data == "asked":
                        self._answer()
                    else:
                        self._stopping = True
        finally:
            selector.close()
            self.close()

    def _wait(self) -> float | None:
        """How long `serve` may sleep: until the changed notes are handed on, or until what
        the commands kept open is let go."""
        if self._changed:
            return QUIET_SECONDS
        if self._last_command:
            return max(0.0, self._last_command + IDLE_SECONDS - time.monotonic())
        return None

    def _release_when_idle(self) -> None:
        if self._last_command and time.monotonic() >= self._last_command + IDLE_SECONDS:
            self._last_command = 0.0
            if self._on_command is not None:
                self._on_command.release()

    def local_token(self) -> str | None:
        """The token, for a load made by a command this watcher is answering (on the serving
        thread, after the events queued before the command were taken); None elsewhere."""
        return self.token if threading.get_ident() == self._serving_thread else None

    def _take_events(self) -> None:
        assert self._inotify is not None
        self.handle(self._inotify.events())

    def handle(self, events: Iterable[tuple[int, int, str]]) -> None:
        """Count the changes among `events` (wd, mask, name) and watch new folders."""
        rescan = False
        for wd, mask, name in events:
            if name.startswith("."):
                continue  # the walk never reads it (and `.hql` is where loads write)
            self.generation += 1
            if mask & IN_Q_OVERFLOW:
                rescan = True  # events were lost, new folders among them perhaps
                continue
            folder = self.folders.get(wd)
            if folder == os.fspath(self.root) and mask & _GONE:
                raise WatchError(messages.watch_root_gone(folder))
            if mask & IN_IGNORED:
                self.folders.pop(wd, None)
            if mask & (IN_MOVED_FROM | IN_MOVED_TO) and mask & IN_ISDIR:
                rescan = True  # folders below moved: their paths here are stale
            elif mask & (IN_CREATE | IN_MOVED_TO) and folder is not None:
                self._watch_new(os.path.join(folder, name))
            if self._on_change is not None and folder is not None and mask & _NOTE_CHANGED:
                self._note_changed(folder, name, mask)
        if rescan:
            self.folders.clear()
            self._watch_all()
        if not os.path.isdir(self.root):
            raise WatchError(messages.watch_root_gone(os.fspath(self.root)))

    def _note_changed(self, folder: str, name: str, mask: int) -> None:
        from hql.vault.walk import FORMATS

        if mask & IN_ISDIR or not name.endswith(tuple(FORMATS)):
            return
        relpath = os.path.relpath(os.path.join(folder, name), self.root)
        if not relpath.startswith(".."):
            self._changed.add(relpath.replace(os.sep, "/"))

    def _tell(self) -> None:
        """Hand the changed notes to `on_change`, unless it is still busy with the last ones
        (then they wait for the next quiet moment)."""
        if self._on_change is None or not self._changed:
            return
        if self._telling is not None and self._telling.is_alive():
            return
        changed, self._changed = sorted(self._changed), set()
        self._telling = threading.Thread(
            target=self._on_change, args=(changed,), name="hql-watch-refresh", daemon=True
        )
        self._telling.start()

    def _watch_new(self, path: str) -> None:
        """A name appeared: watch it if it is a folder, or a symlink to a file elsewhere."""
        try:
            if os.path.isdir(path):
                self._watch_tree(path, set())
            elif os.path.islink(path):
                self._watch_target(path)
        except OSError:
            pass

    def _answer(self) -> None:
        """Answer each load that asks, reading the queued events after accepting it, so every
        change made before it asked is counted."""
        assert self._listener is not None
        while True:
            try:
                connection, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            with connection:
                self._take_events()
                connection.settimeout(0.5)
                with contextlib.suppress(OSError):
                    question = connection.recv(64)
                    if question.strip() == b"token":
                        connection.sendall(f"{self.token}\n".encode("ascii"))
                    elif question.strip() == b"answered":
                        answered = self._on_command.answered if self._on_command else 0
                        connection.sendall(f"{answered}\n".encode("ascii"))
                    elif question.strip() == b"stop":  # `hql vault unwatch`
                        connection.sendall(b"stopping\n")
                        self.stop()
                    elif question.startswith(b"serve ") and self._on_command is not None:
                        self._command(connection, question)

    def _command(self, connection: socket.socket, question: bytes) -> None:
        """Read a command sent to be answered and answer it (the events queued before it
        was sent are taken: its loads see every change made before)."""
        assert self._on_command is not None
        if _peer_uid(connection) != os.getuid():
            return  # another user's command would run as this one's: never
        head, _, payload = question.partition(b"\n")
        length = head.removeprefix(b"serve ").strip()
        if not length.isdigit() or int(length) > _COMMAND_LIMIT:
            return
        connection.settimeout(_COMMAND_SECONDS)
        while len(payload) < int(length):
            chunk = connection.recv(min(1 << 20, int(length) - len(payload)))
            if not chunk:
                return
            payload += chunk
        self._last_command = time.monotonic()
        try:
            with answer_in_process(self.state_dir, self.local_token):
                answer = self._on_command.answer(payload, self.token)
        except Exception as error:  # noqa: BLE001 - no answer: the command runs where it was typed
            print(messages.watch_command_failed(error), file=sys.stderr, flush=True)
            return
        connection.sendall(answer)

    def stop(self) -> None:
        """Ask `serve` to return (from another thread or a signal handler)."""
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b"x")

    def close(self) -> None:
        """Remove the socket first, so no load is told a token after the watcher stops."""
        listener, self._listener = self._listener, None
        if listener is not None:
            if self._state is not None:
                with contextlib.suppress(OSError):
                    os.unlink(SOCKET, dir_fd=self._state)
            listener.close()
        inotify, self._inotify = self._inotify, None
        if inotify is not None:
            inotify.close()
        lock, self._lock = self._lock, None
        state, self._state = self._state, None
        for descriptor in (lock, state, self._wake_read, self._wake_write):
            if descriptor is None:
                continue
            with contextlib.suppress(OSError):
                os.close(descriptor)


def _peer_uid(connection: socket.socket) -> int | None:
    """The user id of the process at the other end of a Unix socket (Linux)."""
    try:
        credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    except (OSError, AttributeError):
        return None
    return int(struct.unpack("3i", credentials)[1])


def _hold(path: Path) -> int | None:
    """An exclusive lock on `path` held by this process, or None if another holds it."""
    import fcntl

    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


def _reason(error: OSError) -> str:
    return (error.strerror or str(error)).lower()
