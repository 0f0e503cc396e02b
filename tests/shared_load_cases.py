"""A first load shares its parsing with a forked process and gives exactly what a load alone gives.

Run by tests/test_vault_shared_load.py in a fresh interpreter (see there).

Cards (every field), edges, warnings in order and the catalogue written (every
row of every table) are compared with the same vault loaded by one process,
on realistic vaults and on hostile files; a forked process that dies, sends
garbage or is interrupted loses nothing and is always waited for.
"""

from __future__ import annotations

import marshal
import os
import shutil
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hql.vault import Vault, loader, walk, workers
from hql.vault.catalog import CATALOG_FILE

ROOT = Path(__file__).resolve().parents[1]
GARDEN = ROOT / "bench" / "data" / "garden"
WEB_AUTH = ROOT / "vaults" / "web-auth"
OBSIDIAN = Path(__file__).parent / "fixtures" / "obsidian"

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or not os.path.isdir("/proc/self/task"),
    reason="sharing a load needs fork and /proc",
)


REAL_CORE_FREE = workers.core_free


@pytest.fixture(autouse=True)
def core_free(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases share whatever the machine's load (a loaded machine loads alone)."""
    monkeypatch.setattr(workers, "core_free", lambda: True)


def test_a_busy_machine_loads_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: list[int]
) -> None:
    monkeypatch.setattr(workers, "core_free", REAL_CORE_FREE)  # said busy, then idle
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setattr(os, "getloadavg", lambda: (cores - 0.5, 0.0, 0.0))
    assert not workers.core_free()
    root = _copy(tmp_path, GARDEN)
    monkeypatch.setattr(loader, "SHARED_FROM", 1)
    Vault.open(root, use_cache=False)
    assert forked == []
    monkeypatch.setattr(os, "getloadavg", lambda: (cores - 0.6, 0.0, 0.0))
    assert workers.core_free()


def _copy(tmp_path: Path, source: Path, name: str = "vault") -> Path:
    target = tmp_path / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".hql"))
    return target


def _mixed(tmp_path: Path) -> Path:
    root = _copy(tmp_path, GARDEN)
    shutil.copytree(WEB_AUTH, root / "web-auth", ignore=shutil.ignore_patterns(".hql"))
    (root / "Ocean" / "oauth.md").write_text("# OAuth at sea\n\nA token on a ship.\n")
    return root


def _hostile(tmp_path: Path) -> Path:
    """Good cards among every kind of file a load refuses or reads with a warning."""
    root = tmp_path / "hostile"
    root.mkdir()
    for number in range(60):
        folder = root / f"f{number % 4}"
        folder.mkdir(exist_ok=True)
        (folder / f"note{number}.md").write_text(
            f"---\ntitle: Note {number}\ntags: [t{number % 3}]\n---\n# Heading {number}\n\n"
            f"Text {number} links [[note{(number + 1) % 60}]] and [[missing{number}]].\n"
            "- [ ] a task\n"
        )
    (root / "latin1.md").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (root / "big.md").write_text("# Big\n" + "word " * 400)
    (root / "bad-yaml.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (root / "unterminated.md").write_text("---\ntitle: never closed\nbody\n")
    (root / "deep.md").write_text("---\nx: " + "[" * 300 + "]" * 300 + "\n---\nbody\n")
    (root / "bom.md").write_bytes(b"\xef\xbb\xbf# With a BOM\n\nText.\n")
    (root / "crlf.md").write_bytes(b"---\r\ntitle: CRLF\r\n---\r\nBody [[note1]]\r\n")
    (root / "f0" / "note1.md").write_text("# A clashing stem\n")  # note1 clashes
    (root / "empty.md").write_text("")
    (root / "ghost.md").write_text("# Ghost\n")
    (root / "dir.md").mkdir()
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "pipe.md")
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    return root


@pytest.fixture
def hostile_setting(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """A small size cap (big.md is too large) and ghost.md deleted after the walk found it."""
    monkeypatch.setattr(loader, "MAX_CARD_BYTES", 1000)
    real_walk = walk.walk

    def walk_then_delete(root: str, warnings: list[Any], *rest: Any) -> walk.Walk:
        found = real_walk(root, warnings, *rest)
        ghost = Path(root) / "ghost.md"
        if ghost.exists():
            ghost.unlink()
        return found

    monkeypatch.setattr(walk, "walk", walk_then_delete)

    def restore(root: Path) -> None:
        (root / "ghost.md").write_text("# Ghost\n")

    return restore


@pytest.fixture
def heard(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The tasks whose results came from the forked process; parsing is slowed a little so
    that both processes surely take a share of a small vault."""
    got: list[int] = []
    real_share = workers.share
    real_read = loader._read_and_parse

    def slow_read(item: Any, dialect: str) -> Any:
        time.sleep(0.0005)
        return real_read(item, dialect)

    def hearing(count: int, here: Any, there: Any, received: Any) -> None:
        def counted(task: int, result: object) -> None:
            got.append(task)
            received(task, result)

        real_share(count, here, there, counted)

    monkeypatch.setattr(loader, "_read_and_parse", slow_read)
    monkeypatch.setattr(workers, "share", hearing)
    return got


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The process ids forked; each must have been waited for (no zombie left)."""
    pids: list[int] = []
    real_fork = os.fork

    def recording() -> int:
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recording)
    yield pids
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _summary(vault: Vault) -> tuple[object, ...]:
    cards = [
        (
            card.name,
            card.path,
            card.relpath,
            card.format,
            card.title,
            card.header,
            card.authored,
            card.metadata,
            card.kind,
            card.body,
            card.raw_links,
            card.size,
            card.mtime_ns,
            card.dialect,
            card.extras,
            card.digest,
            card.search_title,
            card.links,
            card.outlinks,
            card.inlinks,
            card.unresolved,
            card.tags,
            card.tasks,
            card.headings,
        )
        for card in vault.cards
    ]
    warnings = [(w.path, w.message, w.subject) for w in vault.warnings]
    return cards, vault.edges, warnings


def _catalogue(root: Path, keyed: bool) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table; without the listing's key and what is digested with it
    when a file was written again between the loads (its inode is part of the key)."""
    with sqlite3.connect(root / ".hql" / CATALOG_FILE) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master")]
        rows = {
            table: connection.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()  # noqa: S608
            for table in tables
            if not table.startswith("sqlite_")
        }
    if not keyed:
        rows["listing"] = [row[2:4] for row in rows["listing"]]  # cards, warnings
        rows["search_head"] = [row[2:3] for row in rows["search_head"]]  # cards
        # each block's columns but the files' inodes
        rows["search_blocks"] = [marshal.loads(row[1])[:-1] for row in rows["search_blocks"]]
    return rows


def _load(
    root: Path, monkeypatch: pytest.MonkeyPatch, shared: bool, keyed: bool = True
) -> tuple[object, ...]:
    shutil.rmtree(root / ".hql", ignore_errors=True)
    monkeypatch.setattr(loader, "SHARED_FROM", 1 if shared else 10**9)
    vault = Vault.open(root)
    return _summary(vault), _catalogue(root, keyed)


def _both(
    root: Path, monkeypatch: pytest.MonkeyPatch, between: Callable[[Path], None] | None = None
) -> tuple[tuple[object, ...], tuple[object, ...]]:
    keyed = between is None
    alone = _load(root, monkeypatch, shared=False, keyed=keyed)
    if between is not None:
        between(root)
    return alone, _load(root, monkeypatch, shared=True, keyed=keyed)


def test_the_process_can_share() -> None:
    assert workers.usable(), "one thread, two cores, Linux: sharing must be possible here"


@pytest.mark.parametrize("vault", ["mixed", "obsidian"])
def test_a_shared_first_load_is_a_load_alone(
    vault: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    heard: list[int],
    forked: list[int],
) -> None:
    root = _mixed(tmp_path) if vault == "mixed" else _copy(tmp_path, OBSIDIAN)
    alone, shared = _both(root, monkeypatch)
    assert len(forked) == 1 and heard, "the forked process parsed part of the vault"
    assert len(alone[0][0]) > 40  # type: ignore[index]
    assert shared == alone
    # The next load reads the catalogue the shared load wrote, and agrees too.
    assert _summary(Vault.open(root)) == alone[0]


def test_hostile_files_give_the_same_warnings(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    hostile_setting: Callable[[Path], None],
    heard: list[int],
    forked: list[int],
) -> None:
    root = _hostile(tmp_path)
    alone, shared = _both(root, monkeypatch, hostile_setting)
    assert heard and len(forked) == 1
    assert shared == alone
    messages = {path.rsplit("/", 1)[-1]: message for path, message, _ in alone[0][2]}  # type: ignore[index]
    for name in ("latin1.md", "big.md", "bad-yaml.md", "unterminated.md", "deep.md", "ghost.md"):
        assert name in messages, name
    assert "vanished" in messages["ghost.md"]
    assert "UTF-8" in messages["latin1.md"] or "utf-8" in messages["latin1.md"].lower()


def _dying_child(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """The forked process fails: killed after its first frame, before any, or sending garbage."""
    parent = os.getpid()
    real_send = workers._send

    def failing_send(writer: int, results: list[tuple[int, object]]) -> None:
        if os.getpid() == parent:
            real_send(writer, results)
            return
        if how == "killed-at-once":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "garbage":
            os.write(writer, b"\x08\x00\x00\x00\x00\x00\x00\x00not marshal")
            return
        real_send(writer, results)
        if how == "killed-later":
            os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(workers, "_send", failing_send)


@pytest.mark.parametrize("how", ["killed-at-once", "killed-later", "garbage"])
def test_a_failing_forked_process_loses_nothing(
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    hostile_setting: Callable[[Path], None],
    heard: list[int],
    forked: list[int],
) -> None:
    root = _hostile(tmp_path)
    shutil.copytree(GARDEN, root / "garden", ignore=shutil.ignore_patterns(".hql"))
    alone = _load(root, monkeypatch, shared=False, keyed=False)
    hostile_setting(root)
    _dying_child(monkeypatch, how)
    shared = _load(root, monkeypatch, shared=True, keyed=False)
    assert len(forked) == 1
    assert shared == alone
    if how == "killed-later":
        assert heard  # what it sent before it died is used
    else:
        assert not heard


def test_an_interrupt_ends_the_forked_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: list[int]
) -> None:
    root = _mixed(tmp_path)
    monkeypatch.setattr(loader, "SHARED_FROM", 1)
    real_read = loader._read_and_parse
    parent = os.getpid()
    reads = []

    def interrupted(item: Any, dialect: str) -> Any:
        if os.getpid() == parent:
            reads.append(item)
            if len(reads) == 30:
                raise KeyboardInterrupt
        return real_read(item, dialect)

    monkeypatch.setattr(loader, "_read_and_parse", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Vault.open(root)
    assert len(forked) == 1  # and it was waited for (the fixture checks)


def test_share_gives_every_task_once_to_someone(forked: list[int]) -> None:
    done_here: list[int] = []
    heard: dict[int, object] = {}

    def here(task: int) -> None:
        time.sleep(0.001)
        done_here.append(task)

    def there(task: int) -> object:
        time.sleep(0.001)
        return [task, task * task, f"t{task}"]

    workers.share(300, here, there, heard.__setitem__)
    assert done_here and heard, "both processes took a share"
    assert done_here == list(range(len(done_here)))  # this process takes from the front
    assert set(done_here) | set(heard) == set(range(300))
    assert len(set(done_here) & set(heard)) <= 2  # at most where they met
    assert all(result == [task, task * task, f"t{task}"] for task, result in heard.items())


def test_no_sharing_beside_another_thread() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not workers.usable()
    finally:
        stop.set()
        thread.join()
    for _ in range(200):  # a joined thread leaves /proc/self/task a moment later
        if workers.usable():
            break
        time.sleep(0.01)
    assert workers.usable()


def test_a_load_beside_another_thread_is_done_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: list[int]
) -> None:
    root = _mixed(tmp_path)
    alone = _load(root, monkeypatch, shared=False)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert _load(root, monkeypatch, shared=True) == alone
    finally:
        stop.set()
        thread.join()
    assert forked == []


def _walk_summary(found: walk.Walk) -> list[tuple[object, ...]]:
    """Each document's path, format and `stat` (what a load reads of it), or its error."""
    return [
        (
            relpath,
            path,
            form,
            (s.st_size, s.st_mtime_ns, s.st_ino, s.st_mode, s.st_ctime_ns)
            if type(s) is os.stat_result
            else type(s).__name__,
        )
        for relpath, path, form, s in zip(
            found.relpaths, found.paths, found.formats, found.statuses, strict=True
        )
    ]


@pytest.mark.parametrize("make", [_mixed, _hostile], ids=["mixed", "hostile"])
def test_a_walk_shares_its_stats_and_finds_what_one_process_finds(
    make: Callable[[Path], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    forked: list[int],
) -> None:
    root = make(tmp_path)
    alone = walk.walk(str(root), [])
    assert forked == []  # a small vault's walk makes its stats itself
    monkeypatch.setattr(walk, "SHARED_STATS_FROM", 1)
    monkeypatch.setattr(walk, "_STATS_PER_TASK", 7)
    warnings: list[Any] = []
    shared = walk.walk(str(root), warnings)
    assert len(forked) == 1 and warnings == []
    assert _walk_summary(shared) == _walk_summary(alone)
    assert shared.signature_columns() == alone.signature_columns()
    # a `stat` that failed (hostile's dangling symlink) keeps its error, made here
    failed = any(type(s) is not os.stat_result for s in alone.statuses)
    assert type(shared.statuses).__name__ == ("list" if failed else "_RecordedStatuses")


@pytest.mark.parametrize("how", ["killed-at-once", "killed-later", "garbage"])
def test_a_failing_forked_stat_process_loses_nothing(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forked: list[int]
) -> None:
    root = _mixed(tmp_path)
    alone = _walk_summary(walk.walk(str(root), []))
    monkeypatch.setattr(walk, "SHARED_STATS_FROM", 1)
    monkeypatch.setattr(walk, "_STATS_PER_TASK", 3)
    _dying_child(monkeypatch, how)
    assert _walk_summary(walk.walk(str(root), [])) == alone
    assert len(forked) == 1
