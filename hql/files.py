"""How HQL touches the user's files (docs/vault.md, "What HQL reads and writes").

- Reading: only regular files, opened without blocking (a FIFO never hangs a
  command) and checked against a size cap before a byte is read.
- Containment: a path is inside the vault when its real path (symlinks
  resolved) is below the vault's real root or below a root the vault allows
  explicitly (`[vault] allow_outside`).
- Writing: a temporary file beside the real target (a symlink is written
  through, not replaced), flushed, given the old file's mode (or the umask's
  for a new file), then renamed over the target. Temporaries carry the
  writer's process id, so the leftovers of a killed writer are recognised
  and removed by the next writer in that directory.
- Caches: sealed with a sha256 of their contents; a seal that does not match
  means the cache is rebuilt.
- Locks: an advisory `flock` on the written file's directory, so concurrent writers wait.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

# A temporary of another writer is only removed once its process is gone; one in the
# old naming (no process id) once it is older than this.
STALE_SECONDS = 600
_TEMP_MARK = ".hql-"
_TEMP_SUFFIXES = (".tmp", ".tmp-journal", ".tmp-wal", ".tmp-shm")


class RefusedFile(OSError):
    """A file HQL will not read: not regular, too large. `strerror` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EINVAL, reason)


class TooLarge(RefusedFile):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the file is {size} bytes, more than the {limit} it may be")
        self.size, self.limit = size, limit


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; raises OSError otherwise.

    The file is opened non-blocking (a FIFO opens at once and is then refused)
    and its size checked before reading; a file that grows while read is
    still cut at `limit + 1` bytes and refused.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags)
    try:
        status = os.fstat(descriptor)
        if stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        if not stat.S_ISREG(status.st_mode):
            raise RefusedFile("not a regular file")
        if status.st_size > limit:
            raise TooLarge(status.st_size, limit)
        # One read of the size `fstat` gave, so a large file is not held twice while
        # its pieces are joined; a file that grows meanwhile is read on, up to the cap.
        # Each read allocates what it asks for: ask for about the file's size, not 16 MiB.
        step = min(max(status.st_size + 1, 1 << 16), 1 << 24)
        chunks = [os.read(descriptor, min(status.st_size, limit) + 1)]
        total = len(chunks[0])
        while total <= limit:
            chunk = os.read(descriptor, min(limit + 1 - total, step))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if len(data) > limit:
            raise TooLarge(len(data), limit)
        return data
    finally:
        os.close(descriptor)


def state_dir_contained(state_dir: Path) -> bool:
    """Whether a vault's `.hql/` (however linked) is really inside the vault it belongs to."""
    return _below(real(state_dir), real(state_dir.parent))


def is_regular(path: str | os.PathLike[str]) -> bool:
    """Whether `path` (symlinks followed) is a regular file; False when it cannot be seen."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


# --- containment ----------------------------------------------------------------


def real(path: str | os.PathLike[str]) -> str:
    """The real path; a symlink loop or an over-long name gives the path made absolute."""
    try:
        return os.path.realpath(path)
    except (OSError, RuntimeError, ValueError):
        return os.path.abspath(path)


class Containment:
    """The vault's real root plus the outside roots it allows to be read."""

    def __init__(self, root: str | os.PathLike[str], allowed: Iterable[str] = ()) -> None:
        self.root = real(root)
        self.allowed = tuple(real(Path(self.root, entry)) for entry in allowed)

    def inside_vault(self, path: str | os.PathLike[str]) -> bool:
        return _below(real(path), self.root)

    def readable(self, path: str | os.PathLike[str]) -> bool:
        resolved = real(path)
        return _below(resolved, self.root) or any(_below(resolved, a) for a in self.allowed)


def _below(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


# --- writing --------------------------------------------------------------------

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask (read from /proc when it can be, else set and restored)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode `open()` would give a new file: 0o666 less the umask."""
    return 0o666 & ~current_umask()


def write_target(path: str | os.PathLike[str]) -> Path:
    """Where writing `path` lands: a symlink's final target, else the path itself."""
    target = Path(path)
    if target.is_symlink():
        return Path(real(target))
    return target


def temporary_beside(target: Path) -> Path:
    """A fresh, empty temporary file beside `target` (mode 0600), named for this process."""
    clean_stale_temporaries(target.parent, target.name)
    while True:
        name = f".{target.name}{_TEMP_MARK}{os.getpid()}-{os.urandom(4).hex()}.tmp"
        candidate = target.parent / name
        try:
            descriptor = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        os.close(descriptor)
        return candidate


def finish_replace(temporary: Path, target: Path) -> None:
    """Give the temporary the target's mode (or a new file's), sync it and rename it over."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = new_file_mode()
    os.chmod(temporary, mode)
    with open(temporary, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, target)


def write_atomically(path: str | os.PathLike[str], data: bytes) -> Path:
    """Replace the file at `path` (through a symlink) by `data`, all or nothing. Returns the target."""
    target = write_target(path)
    temporary = temporary_beside(target)
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
        finish_replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return target


def clean_stale_temporaries(directory: Path, name: str, also: tuple[str, ...] = ()) -> list[str]:
    """Remove what killed writers of `directory/name` left: their temporaries and journals.

    `also` names older prefixes of temporaries of the same file, removed when stale.
    """
    removed: list[str] = []
    prefix = f".{name}."
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        ours = entry.startswith(prefix) and entry.endswith(_TEMP_SUFFIXES)
        if not ours and not (also and entry.startswith(also)):
            continue
        path = directory / entry
        if _abandoned(entry, path, now):
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed.append(entry)
    return removed


def _abandoned(entry: str, path: Path, now: float) -> bool:
    marked = entry.rfind(_TEMP_MARK)
    if marked >= 0:
        pid_text = entry[marked + len(_TEMP_MARK) :].split("-", 1)[0]
        if pid_text.isdigit():
            return not _alive(int(pid_text))
    try:
        return now - os.lstat(path).st_mtime > STALE_SECONDS
    except OSError:
        return False


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


# --- caches ---------------------------------------------------------------------

SEAL_BYTES = 32


def seal(data: bytes) -> bytes:
    """`data` preceded by its sha256."""
    return hashlib.sha256(data).digest() + data


def unseal(sealed: bytes, start: int = 0) -> memoryview | None:
    """The data of a blob sealed from `start` on (a view, not a copy), or None when the seal
    does not match."""
    view = memoryview(sealed)
    digest, data = view[start : start + SEAL_BYTES], view[start + SEAL_BYTES :]
    if len(digest) != SEAL_BYTES or hashlib.sha256(data).digest() != digest:
        return None
    return data


# --- locks ----------------------------------------------------------------------


@contextlib.contextmanager
def try_locked(directory: Path) -> Iterator[bool]:
    """Hold the lock `locked` takes if no one holds it now; yields whether it is held.

    Where locks are not available this holds nothing and yields True.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield True
        return
    try:
        descriptor = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        except OSError:
            pass  # a file system without flock: writes stay atomic
        yield True
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on `directory` itself (waits for other holders).

    Locking the directory leaves no lock file behind. Where locks are not
    available (no fcntl, a file system without flock) this holds nothing:
    writes stay atomic, only the merging of concurrent writers is lost.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    try:
        descriptor = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock
