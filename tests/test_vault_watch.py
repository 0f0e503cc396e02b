"""A watched vault opens without walking while nothing changes, and sees every change.

A real watcher (inotify, a Unix socket) serves real vaults in a temporary
folder. Every answer of a load that took its walk from the catalogue is
compared with a load that read every file (`use_cache=False`); every kind of
change a user makes must make the next load walk and see it.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kept_stat import rewrite_keeping_stat

from hql import messages
from hql.api import Session
from hql.vault import Vault, walk, watch
from hql.vault.catalog import CATALOG_FILE, _digest, walk_digest
from hql.vault.watcher import IN_ISDIR, IN_MOVED_TO, IN_Q_OVERFLOW, Watcher, WatchError

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs inotify")

ROOT = Path(__file__).resolve().parents[1]
GARDEN = ROOT / "bench" / "data" / "garden"  # 440 notes in folders, with tags and links
OBSIDIAN = Path(__file__).parent / "fixtures" / "obsidian"

PROGRAMS = [
    "cards | count",
    "cards | map(c => [c.name, c.path, c.folder, c.kind, c.title, c.tags, c.metadata, c.size])",
    "cards | map(c => [c.name, c.outlinks, c.inlinks])",
    'import bm25\ncards | bm25("ocean temperature coral reef") | take(5)',
    'cards | filter(c => c.folder == "Ocean") | count',
]


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The root of every walk a load makes."""
    roots: list[str] = []
    real = walk.walk

    def counted(root: str, *rest: Any) -> walk.Walk:
        roots.append(root)
        return real(root, *rest)

    monkeypatch.setattr(walk, "walk", counted)
    return roots


@contextlib.contextmanager
def watching(root: Path, on_command: Any = None) -> Iterator[Watcher]:
    """A watcher serving `root` from a thread, stopped afterwards (answering commands with
    `on_command`: hql.served.Answering)."""
    watcher = Watcher(root, on_command=on_command)
    watcher.start()
    failure: list[BaseException] = []

    def serve() -> None:
        try:
            watcher.serve()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            failure.append(error)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield watcher
    finally:
        watcher.stop()
        thread.join(10)
        assert not thread.is_alive()
    if failure and not isinstance(failure[0], WatchError):
        raise failure[0]


def _copy(tmp_path: Path, source: Path, name: str = "vault") -> Path:
    target = tmp_path / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".hql"))
    return target


def _answers(vault: Vault) -> list[tuple[object, ...]]:
    session = Session(vault)
    found = []
    for text in PROGRAMS:
        outcome = session.run(text)
        found.append((outcome.text(), outcome.to_json(), outcome.render_reports()))
    return found


def _assert_as_read_afresh(vault: Vault, root: Path) -> None:
    fresh = Vault.open(root, use_cache=False)
    assert [str(w) for w in vault.warnings] == [str(w) for w in fresh.warnings]
    assert _answers(vault) == _answers(fresh)


@pytest.fixture
def garden(tmp_path: Path) -> Path:
    return _copy(tmp_path, GARDEN)


@pytest.mark.parametrize("source", [GARDEN, OBSIDIAN], ids=["garden", "obsidian"])
def test_an_unchanged_vault_opens_without_walking(
    tmp_path: Path, walks: list[str], source: Path
) -> None:
    root = _copy(tmp_path, source)
    Vault.open(root)  # the catalogue, before any watcher
    with watching(root):
        first = Vault.open(root)
        assert len(walks) == 2  # no token recorded yet: this load walks, and records its walk
        _assert_as_read_afresh(first, root)
        walks.clear()
        for _ in range(3):
            again = Vault.open(root)
            assert walks == []
            _assert_as_read_afresh(again, root)
            assert len(walks) == 1  # only the fresh load of the comparison walked
            walks.clear()


def _a_note(root: Path, folder: str) -> Path:
    return sorted((root / folder).rglob("*.md"))[0]


def _edit(root: Path) -> None:
    note = _a_note(root, "Ocean")
    note.write_text(note.read_text() + "\nEntirely new words: zyzzyva quokka.\n")


def _same_size_edit(root: Path) -> None:
    note = _a_note(root, "Ocean")
    data = bytearray(note.read_bytes())
    data[-2] = ord("Q") if data[-2] != ord("Q") else ord("R")
    note.write_bytes(bytes(data))


def _same_size_and_mtime_edit(root: Path) -> None:
    """As `cp -p` or `tar -x` write a note: only its change time moves."""
    note = _a_note(root, "Ocean")
    tail = note.read_bytes()[-12:]
    rewrite_keeping_stat(
        note, tail, tail.replace(tail[-2:-1], b"Q" if tail[-2:-1] != b"Q" else b"R")
    )


def _touch(root: Path) -> None:
    note = _a_note(root, "Reading")
    os.utime(note, ns=(0, 1_234_567_890_000_000_000))


def _add(root: Path) -> None:
    (root / "Ocean" / "New finding.md").write_text("# New finding\n\nA quokka at sea. #ocean\n")


def _delete(root: Path) -> None:
    _a_note(root, "Ocean").unlink()


def _rename(root: Path) -> None:
    note = _a_note(root, "Ocean")
    note.rename(note.with_name("Renamed note.md"))


def _atomic_save(root: Path) -> None:
    """As editors save: a temporary beside the note, renamed over it."""
    note = _a_note(root, "Reading")
    temporary = note.with_name(".saving.tmp")
    temporary.write_text("# Saved atomically\n\nquokka\n")
    temporary.replace(note)


def _new_folder(root: Path) -> None:
    (root / "Fresh" / "Deeper").mkdir(parents=True)
    (root / "Fresh" / "Deeper" / "Inside.md").write_text("# Inside\n\nquokka\n")


def _move_folder(root: Path) -> None:
    (root / "Ocean").rename(root / "Sea")


def _chmod(root: Path) -> None:
    note = _a_note(root, "Reading")
    note.chmod(0o600)


def _unreadable_folder(root: Path) -> None:
    shutil.rmtree(root / "Reading")


def _config(root: Path) -> None:
    (root / "hql.toml").write_text('[vault]\nexclude = ["Ocean/**"]\n')


CHANGES = [
    _edit,
    _same_size_edit,
    _same_size_and_mtime_edit,
    _touch,
    _add,
    _delete,
    _rename,
    _atomic_save,
    _new_folder,
    _move_folder,
    _chmod,
    _unreadable_folder,
    _config,
]


@pytest.mark.parametrize("change", CHANGES, ids=lambda change: change.__name__.strip("_"))
def test_every_change_is_seen(
    garden: Path, walks: list[str], change: Callable[[Path], None]
) -> None:
    Vault.open(garden)
    with watching(garden):
        Vault.open(garden)  # records its walk
        walks.clear()
        Vault.open(garden)
        assert walks == []
        change(garden)
        changed = Vault.open(garden)
        assert walks == [str(garden)]
        _assert_as_read_afresh(changed, garden)
        walks.clear()
        assert Vault.open(garden) is not None and walks == []  # recorded again


def test_changes_inside_new_and_moved_folders_are_seen(garden: Path, walks: list[str]) -> None:
    """A folder made or moved while watched is watched where it now is."""
    with watching(garden):
        Vault.open(garden)
        _new_folder(garden)
        Vault.open(garden)
        _move_folder(garden)
        Vault.open(garden)
        walks.clear()
        for note in (garden / "Fresh" / "Deeper" / "Inside.md", _a_note(garden, "Sea")):
            note.write_text(f"# Edited\n\n{note.name} edited: wombat\n")
            edited = Vault.open(garden)
            assert walks == [str(garden)]
            walks.clear()
            assert "wombat" in Session(edited).run('cards | map(c => c.body) | join(" ")').text()
            _assert_as_read_afresh(edited, garden)
            walks.clear()


def test_names_a_load_never_reads_do_not_count(garden: Path, walks: list[str]) -> None:
    with watching(garden) as watcher:
        Vault.open(garden)
        before = watcher.generation
        (garden / "Ocean" / ".note.md.swp").write_bytes(b"editor state")
        (garden / ".obsidian").mkdir()  # not read by this vault's walk, though it sets the dialect
        shutil.rmtree(garden / ".obsidian")
        (garden / ".trash").mkdir()
        (garden / ".trash" / "old.md").write_text("# old\n")
        walks.clear()
        Vault.open(garden)
        assert walks == []
        assert watcher.generation == before


def test_the_dialect_folder_changes_the_load(garden: Path, walks: list[str]) -> None:
    """`.obsidian/` is not watched, but the load checks it each time: a new dialect walks."""
    with watching(garden):
        Vault.open(garden)
        (garden / ".obsidian").mkdir()
        walks.clear()
        vault = Vault.open(garden)
        assert walks == [str(garden)] and vault.dialect == walk.OBSIDIAN
        _assert_as_read_afresh(vault, garden)


def test_a_symlinked_note_is_watched_where_it_lives(tmp_path: Path, walks: list[str]) -> None:
    root = _copy(tmp_path, GARDEN)
    outside = tmp_path / "shared"
    outside.mkdir()
    (outside / "Glossary.md").write_text("# Glossary\n\nreef: a ridge\n")
    (root / "hql.toml").write_text('[vault]\nallow_outside = ["../shared"]\n')
    (root / "Glossary.md").symlink_to(outside / "Glossary.md")
    with watching(root):
        Vault.open(root)
        walks.clear()
        Vault.open(root)
        assert walks == []
        (outside / "Glossary.md").write_text("# Glossary\n\nreef: a ridge of coral, quokka\n")
        vault = Vault.open(root)
        assert walks == [str(root)]
        assert "quokka" in vault.card("Glossary").body  # type: ignore[union-attr]
        _assert_as_read_afresh(vault, root)


def test_a_change_made_just_before_asking_is_counted(garden: Path) -> None:
    """The kernel queues the event before the write returns; the watcher reads the queue
    before answering. So no change is ever missed by a load that starts after it."""
    note = _a_note(garden, "Ocean")
    with watching(garden):
        state = garden / ".hql"
        seen = watch.ask(state)
        for round_ in range(500):
            note.write_text(f"# Reef survey\n\nround {round_}\n")
            token = watch.ask(state)
            assert token is not None and token != seen
            seen = token


def test_loads_walk_when_no_watcher_answers(
    garden: Path, walks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state = garden / ".hql"
    state.mkdir()
    # A socket left behind by a watcher that was killed: refused at once.
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(os.fspath(state / watch.SOCKET))
    stale.close()
    started = time.monotonic()
    assert watch.ask(state) is None
    assert time.monotonic() - started < 1
    os.unlink(state / watch.SOCKET)
    # A listener that never answers: the load waits ASK_SECONDS, then walks.
    monkeypatch.setattr(watch, "ASK_SECONDS", 0.2)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(os.fspath(state / watch.SOCKET))
    silent.listen(1)
    try:
        vault = Vault.open(garden)
        assert walks == [str(garden)]
        _assert_as_read_afresh(vault, garden)
    finally:
        silent.close()
        os.unlink(state / watch.SOCKET)


@pytest.mark.parametrize("answer", [b"nonsense\n", b"", b"0123456789abcdef -1\n", b"x" * 500])
def test_an_answer_that_is_not_a_token_is_none(tmp_path: Path, answer: bytes) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(os.fspath(tmp_path / watch.SOCKET))
    server.listen(1)

    def reply() -> None:
        connection, _ = server.accept()
        with connection:
            connection.recv(64)
            connection.sendall(answer)

    thread = threading.Thread(target=reply, daemon=True)
    thread.start()
    try:
        assert watch.ask(tmp_path) is None
    finally:
        thread.join(5)
        server.close()


def _walked_row(root: Path) -> tuple[str, bytes, bytes]:
    with contextlib.closing(sqlite3.connect(root / ".hql" / CATALOG_FILE)) as connection:
        found = connection.execute("SELECT token, head, walk FROM walk_record").fetchone()
    return found[0], found[1], found[2]


def _replace_walked(
    root: Path, token: str, head: bytes, files: bytes, digest: bytes | None = None
) -> None:
    digest = _digest(token.encode(), head) if digest is None else digest
    with contextlib.closing(sqlite3.connect(root / ".hql" / CATALOG_FILE)) as connection:
        connection.execute(
            "UPDATE walk_record SET token = ?, head = ?, digest = ?, walk = ?",
            (token, head, digest, files),
        )
        connection.commit()


def _head_naming(head: bytes, files: bytes) -> bytes:
    """The head, naming these files as the walk's."""
    context, key, warnings, _ = marshal.loads(head)
    return marshal.dumps((context, key, warnings, walk_digest(files)))


DAMAGE: list[Callable[[str, bytes, bytes], tuple[str, bytes, bytes, bytes | None]]] = [
    lambda token, head, files: (token, head[:-7], files, None),  # cut short, sealed again
    lambda token, head, files: (token, b"\x00garbage", files, None),
    lambda token, head, files: (token, head, files, b"\x00" * 16),  # a digest that does not match
    lambda token, head, files: (token, marshal.dumps((1, 2, 3, 4)), files, None),
    lambda token, head, files: (token, marshal.dumps(("c", b"k", [], b"w")), files, None),
    lambda token, head, files: (token, head, files[:-7], None),  # files not the ones named
    lambda token, head, files: (token, head, files[:7] + b"x" + files[8:], None),
]


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_record_means_walking(
    garden: Path,
    walks: list[str],
    damage: Callable[[str, bytes, bytes], tuple[str, bytes, bytes, bytes | None]],
) -> None:
    with watching(garden):
        Vault.open(garden)
        Vault.open(garden)
        _replace_walked(garden, *damage(*_walked_row(garden)))
        walks.clear()
        vault = Vault.open(garden)
        vault.cards  # noqa: B018 - files only damaged are found when read
        assert walks == [str(garden)]
        _assert_as_read_afresh(vault, garden)


def test_a_head_is_read_without_its_files(garden: Path, walks: list[str]) -> None:
    """A count needs the head alone: files damaged after it was written are not read."""
    with watching(garden):
        Vault.open(garden)
        token, head, files = _walked_row(garden)
        _replace_walked(garden, token, head, files[:-7])
        walks.clear()
        vault = Vault.open(garden)
        assert len(vault) > 400 and walks == []
        assert len(vault.cards) == len(vault) and walks == [str(garden)]
        _assert_as_read_afresh(vault, garden)


def test_a_record_of_another_load_is_not_taken(garden: Path, walks: list[str]) -> None:
    """The same files opened by another path, or with other extensions, walk."""
    with watching(garden):
        Vault.open(garden)
        walks.clear()
        by_other_path = Vault.open(f"{garden}/")
        assert walks == [f"{garden}/"]
        _assert_as_read_afresh(by_other_path, garden)
        walks.clear()
        Vault.open(garden, extension_metadata={"extra": {"x": 1}})
        assert walks == [str(garden)]


def test_one_watcher_per_vault(garden: Path) -> None:
    with watching(garden):
        second = Watcher(garden)
        with pytest.raises(WatchError, match="already watched"):
            second.start()
    assert not (garden / ".hql" / watch.SOCKET).exists()


def test_lost_events_and_moved_folders_make_it_look_again(garden: Path) -> None:
    watcher = Watcher(garden)
    watcher.start()
    try:
        folders = sorted(watcher.folders.values())
        (garden / "Ocean").rename(garden / "Sea")
        watcher.handle([(-1, IN_Q_OVERFLOW, "")])
        assert watcher.generation == 1
        assert sorted(watcher.folders.values()) == sorted(
            folder.replace("/Ocean", "/Sea") for folder in folders
        )
        root_wd = next(wd for wd, folder in watcher.folders.items() if folder == str(garden))
        (garden / "Sea").rename(garden / "Ocean")
        watcher.handle([(root_wd, IN_MOVED_TO | IN_ISDIR, "Ocean")])
        assert sorted(watcher.folders.values()) == folders
    finally:
        watcher.close()


def test_the_watcher_stops_when_the_vault_goes(tmp_path: Path) -> None:
    root = _copy(tmp_path, GARDEN)
    watcher = Watcher(root)
    watcher.start()
    outcome: list[BaseException] = []

    def serve() -> None:
        try:
            watcher.serve()
        except WatchError as error:
            outcome.append(error)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    root.rename(tmp_path / "elsewhere")
    thread.join(10)
    assert not thread.is_alive()
    assert outcome and "moved or removed" in str(outcome[0])
    assert not (tmp_path / "elsewhere" / ".hql" / watch.SOCKET).exists()


def test_a_long_vault_path(tmp_path: Path, walks: list[str]) -> None:
    deep = tmp_path / ("folder-with-a-long-name-" * 3) / ("and-another-one-" * 3)
    deep.mkdir(parents=True)
    root = _copy(deep, GARDEN)
    assert len(os.fsencode(root / ".hql" / watch.SOCKET)) > 108
    with watching(root):
        Vault.open(root)
        walks.clear()
        Vault.open(root)
        assert walks == []


def _hql(*args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "HQL_REPORT"}
    return subprocess.run(
        [sys.executable, "-m", "hql", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        **options,
    )


def test_hql_vault_watch_from_the_command_line(garden: Path) -> None:
    command = [sys.executable, "-m", "hql", "--vault", str(garden), "vault", "watch"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        assert process.stderr.readline().startswith("watching ")
        counted = _hql("--vault", str(garden), "eval", "cards | count")
        assert counted.returncode == 0
        total = int(counted.stdout)
        assert _hql("--vault", str(garden), "eval", "cards | count").stdout == counted.stdout
        _add(garden)
        assert int(_hql("--vault", str(garden), "eval", "cards | count").stdout) == total + 1
        refused = _hql("--vault", str(garden), "vault", "watch")
        assert refused.returncode == 1
        assert refused.stderr == f"hql: {messages.watch_already(str(garden))}\n"
    finally:
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=20)
    assert process.returncode == 0
    assert rest == f"{messages.watch_stopped()}\n"
    assert not (garden / ".hql" / watch.SOCKET).exists()


def _until(condition: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_the_watch_setting_starts_a_detached_watcher_that_unwatch_stops(garden: Path) -> None:
    # The garden's links have spaces, which would read it as an Obsidian vault (with a note).
    (garden / "hql.toml").write_text('[vault]\nwatch = true\ndialect = "reference"\n')
    state = garden / ".hql"
    try:
        counted = _hql("--vault", str(garden), "eval", "cards | count")
        assert counted.returncode == 0 and counted.stderr == ""
        # The command returned at once; the watcher it started comes up on its own.
        assert _until(lambda: watch.ask(state) is not None)
        token = watch.ask(state)
        for _ in range(2):  # loads now find it: none starts another, none changes the count
            assert _hql("--vault", str(garden), "eval", "cards | count").stdout == counted.stdout
        assert watch.ask(state) == token
        log = (state / watch.LOG).read_text()
        assert log.count("watching ") == 1 and "already watched" not in log
        _add(garden)
        assert int(_hql("--vault", str(garden), "eval", "cards | count").stdout) == (
            int(counted.stdout) + 1
        )
        stopped = _hql("--vault", str(garden), "vault", "unwatch")
        assert stopped.returncode == 0
        assert messages.unwatched(str(garden)) in stopped.stderr
        assert messages.unwatch_while_configured() in stopped.stderr
        assert _until(lambda: not (state / watch.SOCKET).exists(), 10)
    finally:
        watch.tell(state, b"stop")
    again = _hql("--vault", str(garden), "vault", "unwatch")
    assert again.stderr == f"{messages.not_watched(str(garden))}\n"


def test_no_watcher_is_started_without_the_setting_or_too_soon(garden: Path) -> None:
    state = garden / ".hql"
    assert _hql("--vault", str(garden), "eval", "cards | count").returncode == 0
    assert not (state / watch.LOG).exists()
    assert watch.start_detached(garden, state)  # a start stamps the log ...
    try:
        assert not watch.start_detached(garden, state)  # ... so a second, at once, does not run
        assert _until(lambda: watch.ask(state) is not None)
    finally:
        assert _until(lambda: watch.tell(state, b"stop") == b"stopping\n")


def test_a_watch_setting_that_is_not_a_boolean_is_a_warning(garden: Path) -> None:
    (garden / "hql.toml").write_text('[vault]\nwatch = "yes"\n')
    vault = Vault.open(garden)
    assert messages.config_bad_entry("vault.watch", "true or false") in [
        w.message for w in vault.warnings
    ]
    assert not (garden / ".hql" / watch.LOG).exists()


def test_hql_vault_watch_refuses_what_is_not_a_vault(tmp_path: Path) -> None:
    missing = _hql("--vault", str(tmp_path / "nowhere"), "vault", "watch")
    assert missing.returncode == 1
    assert missing.stderr.startswith("hql: ") and "Traceback" not in missing.stderr
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / ".hql").write_text("a file where the state folder goes")
    refused = _hql("--vault", str(blocked), "vault", "watch")
    assert refused.returncode == 1
    assert refused.stderr.startswith("hql: cannot watch") and "Traceback" not in refused.stderr


def test_a_record_sealed_right_but_not_a_walk_means_walking_when_the_files_are_read(
    garden: Path, walks: list[str]
) -> None:
    """Only a hand-made record can be one: the load believes its key, and walks the moment it
    needs the files themselves."""
    with watching(garden):
        Vault.open(garden)
        token, head, _ = _walked_row(garden)
        _replace_walked(garden, token, _head_naming(head, b"not a walk"), b"not a walk")
        walks.clear()
        vault = Vault.open(garden)
        assert walks == [] and len(vault) > 400  # the count is the listing's
        assert len(vault.cards) == len(vault) and walks == [str(garden)]
        _assert_as_read_afresh(vault, garden)


def test_asking_the_watcher_imports_no_socket_module(garden: Path) -> None:
    """A watched load asks through the C socket module: socket.py costs ms to import."""
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from hql.vault import watch\n"
        "print(watch.ask(Path(sys.argv[1])) is not None, 'socket' in sys.modules)\n"
    )
    with watching(garden):
        done = subprocess.run(
            [sys.executable, "-c", probe, str(garden / ".hql")],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.stdout.split() == ["True", "False"], done.stderr
