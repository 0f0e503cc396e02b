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
