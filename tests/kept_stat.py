"""Rewriting a file as `cp -p`, `tar -x` or `rsync -t` over it do: other bytes of the same
size, written in place (the same inode), its modification time set back to what it was.
Size, mtime, inode and mode all read as before; only the change time (`st_ctime_ns`, which
the kernel sets on every write and on `utime`, and nobody can set back) tells it apart."""

from __future__ import annotations

import os
import time
from pathlib import Path


def rewrite_keeping_stat(path: Path, old: bytes, new: bytes) -> None:
    """Replace the first `old` by `new` (as long) in the file, keeping its size, mtime and
    inode."""
    assert len(old) == len(new) and old != new
    before = os.stat(path)
    data = path.read_bytes().replace(old, new, 1)
    assert data != path.read_bytes(), (path, old)
    with open(path, "r+b") as handle:  # in place: the same inode
        handle.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    # A kernel whose timestamps are coarse (a clock tick) may give the same change time to
    # a write made within the tick of the last one: set the mtime back again until it moves.
    while os.stat(path).st_ctime_ns == before.st_ctime_ns:
        time.sleep(0.005)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    kept = ("st_size", "st_mtime_ns", "st_ino", "st_mode", "st_dev")
    assert [getattr(after, name) for name in kept] == [getattr(before, name) for name in kept]
    assert path.read_bytes() == data
