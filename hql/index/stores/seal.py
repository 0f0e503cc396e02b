"""A seal over the files of a store folder HQL wrote: Qdrant's local mode.

qdrant-client's local mode keeps each point as a pickle, and opening the folder
unpickles every one: a folder planted in a vault (or edited) would run its code
the moment a `semantic` query or `hql index verify` opened it. So HQL opens a
local folder only when it carries HQL's own seal: `hql-seal.json` lists every
file of the folder with its sha256, and an HMAC of that list keyed by a secret
of this user (`store-seal.key` in HQL's state folder, made on first use, mode
0600) says HQL wrote the list. A folder copied from elsewhere, one whose files
changed after HQL's last write, or one holding anything but regular files
(a FIFO, a symlink) is refused before qdrant-client sees it; `hql index build`
sets such a folder aside and builds anew.

The check and qdrant-client's open are two steps: a process that rewrites the
folder between them is not what this guards against (files planted or damaged
beforehand are).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path

from hql import files

SEAL_NAME = "hql-seal.json"
LOCK_NAME = ".lock"  # qdrant-client's own lock file: rewritten by every open, never read
KEY_NAME = "store-seal.key"
KEY_BYTES = 32
FORMAT = 1
_MAX_SEAL_BYTES = 1 << 24
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class Unsealed(Exception):
    """Why a folder is not HQL's sealed folder (a finished phrase for a message)."""

    def __init__(self, reason: str, ours: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.ours = ours  # sealed by this user's HQL, changed since: damage, not a stranger's


def state_dir(environ: dict[str, str] | None = None) -> Path:
    """HQL's state folder: $XDG_STATE_HOME/hql, else ~/.local/state/hql."""
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME") or ""
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "hql"


def _key(create: bool) -> bytes:
    path = state_dir() / KEY_NAME
    try:
        key = files.read_regular(path, 1024)
        if len(key) == KEY_BYTES:
            return key
        raise Unsealed(f"the seal key {path} is not {KEY_BYTES} bytes")
    except FileNotFoundError:
        if not create:
            raise Unsealed("this user's HQL has sealed no store yet") from None
    except OSError as error:
        raise Unsealed(f"the seal key {path} cannot be read ({error.strerror or error})") from None
    key = secrets.token_bytes(KEY_BYTES)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # another process made it meanwhile: use theirs
        return _key(create=False)
    except OSError as error:
        raise Unsealed(f"the seal key {path} cannot be made ({error.strerror or error})") from None
    try:
        os.write(descriptor, key)
    finally:
        os.close(descriptor)
    return key


def _digest(path: Path) -> str:
    """The sha256 of a regular file, opened without following a link or blocking."""
    try:
        descriptor = os.open(path, _READ_FLAGS)
    except OSError as error:
        raise Unsealed(f"`{path.name}` cannot be read ({error.strerror or error})") from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise Unsealed(f"`{path.name}` is not a regular file")
        digest = hashlib.sha256()
        while chunk := os.read(descriptor, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(descriptor)


def listing(folder: Path) -> dict[str, str]:
    """Every file of the folder (but the seal and qdrant-client's lock) with its sha256.

    `Unsealed` for anything but folders and regular files, and for a lock file that
    is not a regular file (qdrant-client opens it).
    """
    found: dict[str, str] = {}
    for parent, folders, names in os.walk(folder, followlinks=False):
        here = Path(parent)
        for name in folders:
            if not stat.S_ISDIR(os.lstat(here / name).st_mode):
                raise Unsealed(f"`{name}` is a link, not a folder")
        for name in names:
            path = here / name
            relative = path.relative_to(folder).as_posix()
            mode = os.lstat(path).st_mode
            if not stat.S_ISREG(mode):
                raise Unsealed(f"`{relative}` is not a regular file")
            if relative not in (SEAL_NAME, LOCK_NAME):
                found[relative] = _digest(path)
    return found


def _mac(key: bytes, listed: dict[str, str]) -> str:
    text = json.dumps({"format": FORMAT, "files": listed}, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def write_seal(folder: Path) -> None:
    """Seal the folder as it is now (after HQL's own writes). Raises `Unsealed` or OSError."""
    listed = listing(folder)
    record = {"format": FORMAT, "files": listed, "mac": _mac(_key(create=True), listed)}
    files.write_atomically(folder / SEAL_NAME, json.dumps(record, sort_keys=True).encode("utf-8"))


def check_seal(folder: Path) -> None:
    """`Unsealed` unless the folder is empty (a new store) or holds exactly what HQL sealed."""
    seal_path = folder / SEAL_NAME
    if not os.path.lexists(seal_path):
        if listing(folder):
            raise Unsealed("it has no seal of HQL's")
        return  # nothing for qdrant-client to load
    recorded = _recorded(seal_path)
    try:
        listed = listing(folder)
    except Unsealed as problem:
        raise Unsealed(problem.reason, ours=True) from None
    if recorded != listed:
        changed = sorted(set(recorded) ^ set(listed)) or sorted(
            name for name in listed if recorded.get(name) != listed[name]
        )
        raise Unsealed(f"`{changed[0]}` changed after HQL last wrote the folder", ours=True)


def _recorded(seal_path: Path) -> dict[str, str]:
    """The files a seal lists, when this user's HQL made it."""
    try:
        record = json.loads(files.read_regular(seal_path, _MAX_SEAL_BYTES))
    except OSError as error:
        raise Unsealed(f"its seal cannot be read ({error.strerror or error})") from None
    except (ValueError, RecursionError):
        raise Unsealed("its seal is not HQL's JSON") from None
    if not isinstance(record, dict) or not isinstance(record.get("mac"), str):
        raise Unsealed("its seal is not HQL's")
    recorded = record.get("files")
    if not isinstance(recorded, dict) or not hmac.compare_digest(
        _mac(_key(create=False), recorded), record["mac"]
    ):
        raise Unsealed("its seal was not made by this user's HQL")
    return recorded
