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
- Documents (the user's own notes, written by render and note writes) go through
  `write_document` alone: every folder is opened relative to a descriptor of the
  vault's root and never through a symlink, the new text replaces the old only if
  the old is still what the work started from, and an edit that lands while the
  new file is swapped in is put back (see `write_document`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hql.deadline import shielded

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
        return _read_open(descriptor, limit)
    finally:
        os.close(descriptor)


def read_contained(path: str | os.PathLike[str], containment: Containment, limit: int) -> bytes:
    """`read_regular`, for a file whose real path `containment` allows to be read.

    The real path is checked before opening (a symlink out of the vault is never
    opened) and again on the opened file itself (a link swapped in between is
    caught): raises `Outside`, or OSError like `read_regular`.
    """
    if not containment.readable(path):
        raise Outside(os.fspath(path))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags)
    try:
        opened = _opened_path(descriptor, path)
        if opened is None or not containment.readable(opened):
            raise Outside(os.fspath(path))
        return _read_open(descriptor, limit)
    finally:
        os.close(descriptor)


class Outside(RefusedFile):
    """A file whose real path is outside the vault (and the roots it allows)."""

    def __init__(self, path: str) -> None:
        super().__init__("its real path is outside the vault")
        self.path = path


def _opened_path(descriptor: int, path: str | os.PathLike[str]) -> str | None:
    """The real path of an open file: Linux names it in /proc; elsewhere the path's real
    path, if it is still the file that was opened (None when it is not)."""
    with contextlib.suppress(OSError):
        return os.readlink(f"/proc/self/fd/{descriptor}")
    resolved = real(path)
    try:
        same = os.path.samestat(os.fstat(descriptor), os.stat(resolved))
    except OSError:
        return None
    return resolved if same else None


def _read_open(descriptor: int, limit: int) -> bytes:
    """The bytes of the open file `descriptor` (see `read_regular`)."""
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


def write_atomically(
    path: str | os.PathLike[str], data: bytes | Iterable[bytes | memoryview]
) -> Path:
    """Replace the file at `path` (through a symlink) by `data` (bytes, or parts written one
    after the other: never joined in memory), all or nothing. Returns the target."""
    target = write_target(path)
    temporary = temporary_beside(target)
    try:
        with open(temporary, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                for part in data:
                    handle.write(part)
        finish_replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return target


def clean_stale_temporaries(
    directory: Path | int, name: str, also: tuple[str, ...] = ()
) -> list[str]:
    """Remove what killed writers of `directory/name` left: their temporaries and journals.

    `directory` is a path or an open directory descriptor. `also` names older prefixes
    of temporaries of the same file, removed when stale.
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
        if isinstance(directory, int):
            where: dict[str, Any] = {"path": entry, "dir_fd": directory}
        else:
            where = {"path": directory / entry}
        if _abandoned(entry, where, now):
            with contextlib.suppress(OSError):
                os.unlink(**where)
                removed.append(entry)
    return removed


def _abandoned(entry: str, where: dict[str, Any], now: float) -> bool:
    marked = entry.rfind(_TEMP_MARK)
    if marked >= 0:
        pid_text = entry[marked + len(_TEMP_MARK) :].split("-", 1)[0]
        if pid_text.isdigit():
            return not _alive(int(pid_text))
    try:
        return now - os.lstat(**where).st_mtime > STALE_SECONDS
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


# --- documents: the one writer ----------------------------------------------------


class WriteRefused(OSError):
    """A document write HQL refused before touching the file; `strerror` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EPERM, reason)


class Conflict(WriteRefused):
    """The document is no longer what the work started from: nothing was written."""

    def __init__(self, reason: str, current_digest: str | None) -> None:
        super().__init__(reason)
        self.current_digest = current_digest


class Exists(WriteRefused):
    """`create=True` named a document that is already there: nothing was written."""


def document_digest(data: bytes) -> str:
    """The digest `write_document` compares: "sha256:<hex>"."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


_DIRECTORY_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
# The largest document `write_document` reads back to compare (render's own cap).
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024


def write_document(
    root: str | os.PathLike[str],
    relpath: str | os.PathLike[str],
    data: bytes,
    *,
    base_digest: str | None,
    create: bool = False,
) -> str:
    """Replace (or with `create`, make) the document `relpath` of the vault at `root`; its new digest.

    Every folder on the way is opened relative to a descriptor of `root` opened
    once for this write, never through a symlink (a folder swapped for a symlink
    is refused, whatever it points to). The new text goes to a temporary beside
    the document, gets the old file's mode (a new file the umask's), is synced,
    and is swapped in only if the document still has `base_digest` (None: the
    digest it had when this call began); otherwise `Conflict`, nothing written.
    With `create`, an existing name raises `Exists` and missing folders are made.

    Writers of HQL hold the folder's advisory lock, so they take turns. An editor
    that saves in the instant between the last comparison and the swap is caught
    too: where the file system can exchange two names atomically (Linux's
    renameat2), the file swapped out is compared once more and, if it is not what
    the work started from, swapped back (`Conflict`). Elsewhere the window is the
    time between that comparison and the rename.
    """
    parts = _document_parts(relpath)
    shown = "/".join(parts)
    root_fd = os.open(
        root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        parent = _open_folders(root_fd, parts, create)
        try:
            with _holding_lock(parent):
                return _swap_in(root_fd, parent, parts[-1], shown, data, base_digest, create)
        finally:
            if parent != root_fd:
                os.close(parent)
    finally:
        os.close(root_fd)


def _document_parts(relpath: str | os.PathLike[str]) -> list[str]:
    text = os.fspath(relpath)
    path = Path(text)
    parts = [part for part in path.parts if part not in ("", ".")]
    if path.is_absolute() or not parts or ".." in parts or "\0" in text:
        raise WriteRefused(_messages().document_not_inside(text))
    return parts


def _messages() -> Any:
    from hql import messages  # wording lives in one module; files.py stays importable alone

    return messages


def _open_folders(root_fd: int, parts: list[str], create: bool) -> int:
    """A descriptor of the document's folder, reached from `root_fd` without following a link."""
    current = root_fd
    for depth, name in enumerate(parts[:-1]):
        try:
            opened = _open_folder(current, name, create)
        except BaseException:
            if current != root_fd:
                os.close(current)
            raise
        if current != root_fd:
            os.close(current)
        if opened is None:
            raise WriteRefused(_messages().document_symlinked("/".join(parts[: depth + 1])))
        current = opened
    return current


def _open_folder(parent: int, name: str, create: bool) -> int | None:
    """The folder `name` in `parent`; None when it is a symlink (or not a folder)."""
    try:
        return os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=parent)
        return _open_folder(parent, name, create=False)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            return None
        raise


@contextlib.contextmanager
def _holding_lock(directory: int) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with shielded():
        with contextlib.suppress(OSError):
            fcntl.flock(directory, fcntl.LOCK_EX)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(directory, fcntl.LOCK_UN)


def _read_at(directory: int, name: str, shown: str) -> tuple[bytes, os.stat_result] | None:
    """The document's bytes and status, None when it is not there; refuses links and non-files."""
    try:
        descriptor = os.open(name, _READ_FLAGS, dir_fd=directory)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise WriteRefused(_messages().document_symlinked(shown)) from None
        raise
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise WriteRefused(_messages().document_not_regular(shown))
        if status.st_size > MAX_DOCUMENT_BYTES:
            raise TooLarge(status.st_size, MAX_DOCUMENT_BYTES)
        chunks = []
        while chunk := os.read(descriptor, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), status
    finally:
        os.close(descriptor)


def _digest_at(directory: int, name: str, shown: str) -> str | None:
    found = _read_at(directory, name, shown)
    return None if found is None else document_digest(found[0])


def _swap_in(
    root_fd: int,
    parent: int,
    name: str,
    shown: str,
    data: bytes,
    base_digest: str | None,
    create: bool,
) -> str:
    words = _messages()
    found = _read_at(parent, name, shown)
    if create and found is not None:
        raise Exists(words.document_exists(shown))
    if not create and found is None:
        raise Conflict(words.document_gone(shown), None)
    expected = base_digest
    if found is not None:
        current = document_digest(found[0])
        expected = expected or current
        if current != expected:
            raise Conflict(words.document_changed(shown), current)
    mode = stat.S_IMODE(found[1].st_mode) if found is not None else new_file_mode()
    clean_stale_temporaries(parent, name)
    temporary = _temporary_at(parent, name)
    ours = os.stat(temporary, dir_fd=parent, follow_symlinks=False).st_ino
    try:
        _fill(parent, temporary, data, mode)
        if not _below_root(root_fd, parent):
            raise WriteRefused(words.document_moved_outside(shown))
        if create:
            _place_new(parent, temporary, name, shown)
        else:
            _replace_checked(parent, temporary, name, shown, expected)
    except BaseException:
        with contextlib.suppress(OSError):
            # after a swap back the name holds our text again, unless yet another writer
            # put its own file there in between: that one is kept
            if os.stat(temporary, dir_fd=parent, follow_symlinks=False).st_ino == ours:
                os.unlink(temporary, dir_fd=parent)
        raise
    with contextlib.suppress(OSError):
        os.fsync(parent)  # the rename itself is durable
    return document_digest(data)


def _temporary_at(parent: int, name: str) -> str:
    while True:
        candidate = f".{name}{_TEMP_MARK}{os.getpid()}-{os.urandom(4).hex()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            descriptor = os.open(
                candidate, flags | getattr(os, "O_CLOEXEC", 0), 0o600, dir_fd=parent
            )
        except FileExistsError:
            continue
        os.close(descriptor)
        return candidate


def _fill(parent: int, temporary: str, data: bytes, mode: int) -> None:
    descriptor = os.open(temporary, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=parent)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
        os.fchmod(descriptor, mode)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _below_root(root_fd: int, parent: int) -> bool:
    """Whether the folder is still below the root (a folder moved out meanwhile is not).

    Read from /proc where there is one; elsewhere the descriptors alone vouch for it."""
    try:
        root = os.readlink(f"/proc/self/fd/{root_fd}")
        folder = os.readlink(f"/proc/self/fd/{parent}")
    except OSError:
        return True
    return _below(folder, root)


def _place_new(parent: int, temporary: str, name: str, shown: str) -> None:
    try:
        outcome = _rename_flags(parent, temporary, name, _RENAME_NOREPLACE)
    except FileExistsError:
        raise Exists(_messages().document_exists(shown)) from None
    if outcome:
        return
    try:  # no renameat2: a hard link refuses an existing name just as well
        os.link(temporary, name, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
    except FileExistsError:
        raise Exists(_messages().document_exists(shown)) from None
    os.unlink(temporary, dir_fd=parent)


def _replace_checked(
    parent: int, temporary: str, name: str, shown: str, expected: str | None
) -> None:
    current = _digest_at(parent, name, shown)
    if current != expected:
        raise Conflict(_messages().document_changed(shown), current)
    try:
        exchanged = _rename_flags(parent, temporary, name, _RENAME_EXCHANGE)
    except FileNotFoundError:
        raise Conflict(_messages().document_gone(shown), None) from None
    if not exchanged:
        os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
        return
    # `temporary` now names the file that was the document a moment ago
    try:
        displaced = _digest_at(parent, temporary, shown)
    except OSError:
        displaced = None
    if displaced != expected:
        # an edit landed between the comparison and the exchange: give it back its name
        _rename_flags(parent, temporary, name, _RENAME_EXCHANGE)
        raise Conflict(_messages().document_changed(shown), displaced)
    os.unlink(temporary, dir_fd=parent)


_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_RENAMEAT2: Any = None
_RENAMEAT2_MISSING = False


def _rename_flags(parent: int, source: str, target: str, flags: int) -> bool:
    """renameat2 within one folder; False where the system or the file system lacks it."""
    global _RENAMEAT2, _RENAMEAT2_MISSING
    if _RENAMEAT2_MISSING:
        return False
    if _RENAMEAT2 is None:
        try:
            function = ctypes.CDLL(None, use_errno=True).renameat2
        except (AttributeError, OSError):
            _RENAMEAT2_MISSING = True
            return False
        function.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        ]
        function.restype = ctypes.c_int
        _RENAMEAT2 = function
    result = _RENAMEAT2(parent, os.fsencode(source), parent, os.fsencode(target), flags)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False  # this file system cannot: the plain rename does
    raise OSError(code, os.strerror(code))


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
    with shielded():
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
    with shielded():
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
