"""The address of a Unix socket file, however long its path (imports only `os`: the command
line reaches a vault's watcher through it before it imports anything else)."""

from __future__ import annotations

import os

# A socket address holds about 108 bytes; a longer path is reached through its folder.
_LONGEST = 100


class SocketAddress:
    """`with SocketAddress(path) as where:` gives an address for `path` to bind or connect:
    itself, or `/proc/self/fd/N/name` through its folder held open meanwhile."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._folder: int | None = None

    def __enter__(self) -> str:
        if len(os.fsencode(self.path)) < _LONGEST:
            return self.path
        folder, name = os.path.split(self.path)
        self._folder = os.open(folder or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        return f"/proc/self/fd/{self._folder}/{name}"

    def __exit__(self, *_: object) -> None:
        if self._folder is not None:
            os.close(self._folder)
            self._folder = None


def exchange(
    path: str | os.PathLike[str],
    message: bytes,
    connect_seconds: float,
    answer_seconds: float | None,
    line_only: bool = False,
) -> bytes | None:
    """Send `message` to the Unix socket at `path` and return what comes back: everything
    until the other end closes, or with `line_only` the first line (at most 64 bytes).
    None when nothing listens there (no socket file, or it cannot be reached in time).
    KeyboardInterrupt goes to the caller."""
    import stat

    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            return None
        # The C module: socket.py builds its enums on import (~5-10 ms of every watched load).
        import _socket

        connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except (OSError, AttributeError):  # nothing there, or no Unix sockets here
        return None
    chunks: list[bytes] = []
    try:
        connection.settimeout(connect_seconds)
        with SocketAddress(path) as where:
            connection.connect(where)
        connection.sendall(message)
        connection.settimeout(answer_seconds)
        while chunk := connection.recv(64 if line_only else 1 << 16):
            chunks.append(chunk)
            if line_only and (chunk.endswith(b"\n") or sum(map(len, chunks)) >= 64):
                break
    except (OSError, ValueError):
        return None
    finally:
        connection.close()
    return b"".join(chunks)
