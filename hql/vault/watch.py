"""Asking the vault's watcher whether anything changed, so a load need not `stat` every file.

`hql --vault V vault watch` (hql/vault/watcher.py) holds an inotify watch on
every folder of the vault and counts the changes it is told of. A load asks it
for its token (the watcher's identity and that count) through the Unix socket
`.hql/watch.sock`. When the catalogue recorded a walk made under the very same
token, nothing below the vault has changed since, and the load takes that walk
from the catalogue instead of walking again. No watcher, or no answer within
ASK_SECONDS, and the load walks as always.

This runs on every load: without a socket file it costs one `lstat`, and the
socket module (its C part, `_socket`) is imported only when there is one.

With `[vault] watch = true` a load that no watcher answered starts one itself,
detached from the command that loaded (`start_detached`), as git starts its
fsmonitor daemon: the commands after it find it running.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from hql.unix_socket import exchange

SOCKET = "watch.sock"
# How long a load waits for a watcher's answer before walking as usual.
ASK_SECONDS = 2.0
_TOKEN = re.compile(r"[0-9a-f]{16} [0-9]{1,19}")
# A started watcher's output goes here; its age keeps loads from starting one after another
# while a watcher comes up (or cannot: the log then says why).
LOG = "watch.log"
RESTART_SECONDS = 10.0
_LOG_LIMIT = 64 * 1024


# The watcher answering a command in this very process (hql/served.py): its state directory
# and how it gives its token without a question over its own socket, which it cannot answer
# while it runs the command.
_in_process: tuple[str, Callable[[], str | None]] | None = None


@contextlib.contextmanager
def answer_in_process(state_dir: Path, token: Callable[[], str | None]) -> Iterator[None]:
    """While a watcher answers a command in its own process, loads of its vault ask it here."""
    global _in_process
    saved, _in_process = _in_process, (os.path.realpath(state_dir), token)
    try:
        yield
    finally:
        _in_process = saved


def ask(state_dir: Path) -> str | None:
    """The token of the watcher serving this state directory, or None (no watcher, or it
    did not answer in time: the load walks)."""
    if _in_process is not None and _in_process[0] == os.path.realpath(state_dir):
        local = _in_process[1]()
        if local is not None:
            return local
    answer = tell(state_dir, b"token")
    if answer is None:
        return None
    token = answer.decode("ascii", "replace").strip()
    return token if _TOKEN.fullmatch(token) else None


def tell(state_dir: Path, question: bytes) -> bytes | None:
    """Ask the watcher one question and return its one-line answer, or None (no watcher)."""
    return exchange(state_dir / SOCKET, question + b"\n", ASK_SECONDS, ASK_SECONDS, line_only=True)


def start_detached(root: Path, state_dir: Path) -> bool:
    """Start `hql --vault ROOT vault watch` in a session of its own, its output in
    `.hql/watch.log`; False when one was started less than RESTART_SECONDS ago.

    The load that calls this walks as usual: the watcher answers the loads after it.
    Two loads racing here may both start one; the second finds the lock held and stops.
    """
    import subprocess
    import sys
    import time

    log_path = state_dir / LOG
    try:
        state_dir.mkdir(exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            if time.time() - os.lstat(log_path).st_mtime < RESTART_SECONDS:
                return False
        large = log_path.exists() and os.lstat(log_path).st_size > _LOG_LIMIT
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if large else os.O_APPEND)
        log = os.open(log_path, flags, 0o600)
    except OSError:
        return False
    try:
        os.utime(log)
        command = [sys.executable, "-m", "hql", "--vault", os.path.abspath(root), "vault", "watch"]
        subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return False
    finally:
        os.close(log)
    return True
