"""The catalogue under `.hql/`: used when files are unchanged, never trusted otherwise."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from kept_stat import rewrite_keeping_stat

from hql.vault import Vault, document
from hql.vault.catalog import CATALOG_FILE

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    target = tmp_path / "vault"
    shutil.copytree(FIXTURES / "vault", target, ignore=shutil.ignore_patterns(".hql"))
    return target


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the body of every document actually parsed (not served from the cache)."""
    seen: list[str] = []
    real = document.parse

    def counting(text: str) -> document.ParsedDocument:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(document, "parse", counting)
    return seen


def summary(vault: Vault) -> tuple[object, ...]:
    return (
        [(c.name, c.kind, c.title, c.header, c.metadata, c.body, c.links) for c in vault.cards],
        vault.edges,
        [str(w) for w in vault.warnings],
    )


def test_second_load_parses_nothing_and_matches(root: Path, parses: list[str]) -> None:
    first = Vault.open(root)
    assert len(parses) == 6 and (root / ".hql" / CATALOG_FILE).is_file()
    parses.clear()
    second = Vault.open(root)
    assert parses == []
    assert summary(second) == summary(first)


def test_a_changed_file_is_parsed_again(root: Path, parses: list[str]) -> None:
    Vault.open(root)
    parses.clear()
    card = root / "sessions.hmd"
    status = card.stat()
    text = card.read_text().replace("Session cookies", "Session cookie!")  # same size
    card.write_text(text)
    os.utime(card, ns=(status.st_atime_ns, status.st_mtime_ns + 1))
    vault = Vault.open(root)
    assert len(parses) == 1
    sessions = vault.card("sessions")
    assert sessions is not None and sessions.title == "Session cookie!"


def test_an_edit_that_keeps_size_mtime_and_inode_is_read_again(
    root: Path, parses: list[str]
) -> None:
    """`cp -p` or `tar -x` over a note: only its change time moved."""
    assert Vault.open(root).card("sessions") is not None
    parses.clear()
    card = root / "sessions.hmd"
    rewrite_keeping_stat(card, b"title: Session cookies", b"title: Session cookie!")
    vault = Vault.open(root)
    sessions = vault.card("sessions")
    assert sessions is not None and sessions.title == "Session cookie!"
    assert len(parses) == 1
    assert sessions.mtime_ns == card.stat().st_mtime_ns  # the file's own mtime, as shown
    parses.clear()
    assert Vault.open(root).card("sessions").title == "Session cookie!"  # type: ignore[union-attr]
    assert parses == []  # the new row is kept


def test_a_catalogue_row_is_not_reused_for_an_edit_that_keeps_size_and_mtime(
    root: Path, parses: list[str]
) -> None:
    """The row check alone: a file added too means the listing is not reused whatever the
    key, so the load goes through every file's row."""
    Vault.open(root)
    parses.clear()
    rewrite_keeping_stat(
        root / "sessions.hmd", b"title: Session cookies", b"title: Session cookie!"
    )
    (root / "new.md").write_text("# New\n")
    vault = Vault.open(root)
    assert vault.card("sessions").title == "Session cookie!"  # type: ignore[union-attr]
    assert sorted(parses) == sorted(
        [(root / "sessions.hmd").read_text(), (root / "new.md").read_text()]
    )


def test_deleted_and_added_files(root: Path, parses: list[str]) -> None:
    Vault.open(root)
    (root / "sessions.hmd").unlink()
    (root / "new.md").write_text("# New\n")
    parses.clear()
    vault = Vault.open(root)
    assert len(parses) == 1
    assert vault.card("sessions") is None and vault.card("new") is not None


def test_refusals_are_cached_with_their_warning(root: Path, parses: list[str]) -> None:
    (root / "bad.md").write_text("---\na: 1\na: 2\n---\n")
    first = Vault.open(root)
    parses.clear()
    second = Vault.open(root)
    assert parses == []
    assert [str(w) for w in second.warnings] == [str(w) for w in first.warnings]
    assert len(second.warnings) == 2


def catalog_rows(root: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(root / ".hql" / CATALOG_FILE) as connection:
        return connection.execute("SELECT * FROM files ORDER BY relpath").fetchall()


def rewrite(root: Path, statement: str, *values: object) -> None:
    connection = sqlite3.connect(root / ".hql" / CATALOG_FILE)
    with connection:
        connection.execute(statement, values)
    connection.close()


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"\x00\x01garbage",
        b"\xe3" + b"x" * 100,
        b"[\xff\xff\xff\x7f",
        b"SQLite format 3\x00" + b"\xff" * 200,  # the header, then nonsense
    ],
)
def test_corrupt_catalogue_is_ignored_and_rebuilt(
    root: Path, parses: list[str], garbage: bytes
) -> None:
    expected = summary(Vault.open(root, use_cache=False))
    (root / ".hql").mkdir()
    (root / ".hql" / CATALOG_FILE).write_bytes(garbage)
    parses.clear()
    assert summary(Vault.open(root)) == expected
    assert len(parses) == 6
    parses.clear()
    assert summary(Vault.open(root)) == expected
    assert parses == []


def test_every_flipped_byte_of_a_catalogue_is_harmless(root: Path, parses: list[str]) -> None:
    """Damage anywhere in the file: the answers stay the files' own."""
    expected = summary(Vault.open(root, use_cache=False))
    Vault.open(root)
    file = root / ".hql" / CATALOG_FILE
    pristine = file.read_bytes()
    for offset in range(0, len(pristine), 157):  # a prime stride reaches every page and field kind
        damaged = bytearray(pristine)
        damaged[offset] ^= 0x55
        file.write_bytes(bytes(damaged))
        assert summary(Vault.open(root)) == expected, offset
    parses.clear()
    file.write_bytes(pristine)
    Vault.open(root)
    assert summary(Vault.open(root)) == expected


def test_a_row_whose_payload_was_changed_is_a_miss(root: Path, parses: list[str]) -> None:
    import marshal

    Vault.open(root)
    (relpath, *_, stored, _digest) = next(r for r in catalog_rows(root) if r[0] == "oauth.hmd")
    payload = marshal.loads(stored)
    forged = marshal.dumps(("ok", {"title": "Forged"}, *payload[2:]))
    rewrite(root, "UPDATE files SET payload = ? WHERE relpath = ?", forged, relpath)
    parses.clear()
    vault = Vault.open(root)
    assert [card.title for card in vault.cards if card.name == "oauth"] != ["Forged"]
    assert len(parses) == 1


def test_catalogue_rows_of_the_wrong_shape_are_ignored(root: Path, parses: list[str]) -> None:
    """Rows that pass their digest (written by a catalogue made to lie) but hold nonsense."""
    from hql.vault.catalog import Catalog, stamp_of
    from hql.vault.loader import parser_fingerprint

    file = root / "oauth.hmd"
    status = file.stat()
    writer = Catalog(root / ".hql", parser_fingerprint())
    bogus = ("ok", "not a dict", 3, None, [])
    writer.store("oauth.hmd", stamp_of(status), bogus)
    writer.save(["oauth.hmd"], None, None)
    writer.close()
    vault = Vault.open(root)
    assert len(vault.cards) == 6 and len(parses) == 6


def test_the_listing_row_is_checked(root: Path, parses: list[str]) -> None:
    """A forged card count in the catalogue is not believed."""
    Vault.open(root)
    rewrite(root, "UPDATE listing SET cards = 1000")
    vault = Vault.open(root)
    assert len(vault) == 6 and len(vault.cards) == 6


def test_unwritable_state_dir_means_no_cache(root: Path, parses: list[str]) -> None:
    (root / ".hql").write_text("a file where the directory would be")
    Vault.open(root)
    parses.clear()
    vault = Vault.open(root)
    assert len(vault.cards) == 6 and len(parses) == 6


def test_use_cache_false_writes_nothing(root: Path) -> None:
    Vault.open(root, use_cache=False)
    assert not (root / ".hql").exists()


def test_a_catalogue_from_another_parser_is_ignored(root: Path, parses: list[str]) -> None:
    Vault.open(root)
    rewrite(root, "UPDATE meta SET value = 'another parser' WHERE key = 'parser'")
    parses.clear()
    Vault.open(root)
    assert len(parses) == 6
    parses.clear()
    Vault.open(root)
    assert parses == []


def test_a_catalogue_of_the_earlier_layout_is_rewritten(root: Path, parses: list[str]) -> None:
    """A catalogue written before the change time joined a row's stamp (`files` without
    its column, format v1): nothing in it is used, and the next save writes this layout."""
    expected = summary(Vault.open(root, use_cache=False))
    Vault.open(root)
    rewrite(root, "UPDATE meta SET value = 'hql.catalog.v1' WHERE key = 'format'")
    rewrite(root, "ALTER TABLE files DROP COLUMN ctime_ns")
    parses.clear()
    assert summary(Vault.open(root)) == expected
    assert len(parses) == 6
    parses.clear()
    assert summary(Vault.open(root)) == expected
    assert parses == []
    with sqlite3.connect(root / ".hql" / CATALOG_FILE) as connection:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(files)")]
    assert "ctime_ns" in columns


def test_threads_share_one_vault(root: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    vault = Vault.open(root)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: (vault.edges, vault.uplinks("oauth")), range(32)))
    assert all(edges is results[0][0] for edges, _ in results)
    assert all(len(up) == 2 for _, up in results)


READER = """
import sys
from hql.vault import Vault
root, rounds = sys.argv[1], int(sys.argv[2])
for _ in range(rounds):
    vault = Vault.open(root)
    announced = len(vault)
    cards = vault.cards
    assert len(vault) == len(cards), (announced, len(cards))
    for card in cards:  # every file is written whole, once: its card says what it holds
        assert card.title == "Card " + card.name.split("-")[1], card.name
    print(len(cards))
"""


def test_readers_never_see_a_half_written_catalogue(tmp_path: Path) -> None:
    """Two processes open the vault over and over while a third adds cards and refreshes."""
    import subprocess
    import sys

    root = tmp_path / "busy"
    root.mkdir()

    def add(index: int) -> None:
        temporary = root / f".card-{index}.tmp"
        temporary.write_text(f"# Card {index}\n\nbody {index}\n")
        temporary.rename(root / f"card-{index}.md")

    for index in range(300):
        add(index)
    Vault.open(root)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", READER, str(root), "15"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    index = 300
    while any(reader.poll() is None for reader in readers):
        for _ in range(20):
            add(index)
            index += 1
        assert len(Vault.open(root).cards) == index
    for reader in readers:
        out, err = reader.communicate()
        assert reader.returncode == 0, err
        counts = [int(line) for line in out.split()]
        assert len(counts) == 15 and counts == sorted(counts), counts


def test_reading_the_cards_of_an_unchanged_vault_writes_nothing(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader takes no write lock: other processes' refreshes never wait for it."""
    from hql.vault.catalog import Catalog

    Vault.open(root)
    writes: list[int] = []
    write = Catalog._write

    def counted(self: Catalog, *args: object) -> None:
        writes.append(1)
        write(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Catalog, "_write", counted)
    vault = Vault.open(root)
    assert len(vault.cards) == 6 and writes == []
    (root / "new.md").write_text("# New\n")
    assert len(Vault.open(root).cards) == 7 and writes == [1]


def test_closing_the_catalogue_waits_for_a_read_in_another_thread(tmp_path: Path) -> None:
    """A lazily built vault shares its catalogue with the threads building its cards: a
    close while one of them reads would free the SQLite connection under it (a crash)."""
    import threading

    from hql.vault.catalog import Catalog

    reading, let_go = threading.Event(), threading.Event()
    events: list[str] = []

    class SlowConnection:
        def execute(self, *_: object) -> list[object]:
            reading.set()
            let_go.wait(10)
            events.append("read")
            return []

        def close(self) -> None:
            events.append("closed")

    catalog = Catalog(tmp_path)
    catalog._connection = SlowConnection()  # type: ignore[assignment]
    reader = threading.Thread(target=catalog.payloads, args=([("a.md", (1, 2, 3, 4))],))
    reader.start()
    assert reading.wait(10)
    closer = threading.Thread(target=catalog.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive() and events == []  # the close waits for the read
    let_go.set()
    reader.join(10)
    closer.join(10)
    assert events == ["read", "closed"]


def _catalogue_rows(root: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table of the catalogue, each row with its rowid (the order rows were written)."""
    connection = sqlite3.connect(root / ".hql" / CATALOG_FILE)
    try:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master")]
        return {
            table: connection.execute(f"SELECT rowid, * FROM {table} ORDER BY rowid").fetchall()
            for table in tables
            if not table.startswith("sqlite_")
        }
    finally:
        connection.close()


@pytest.fixture
def insertions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many fresh rows each write of them put into the catalogue, in order."""
    from hql.vault import catalog

    inserted: list[int] = []
    insert = catalog.Catalog._insert_fresh

    def counting(self: catalog.Catalog, connection: sqlite3.Connection) -> None:
        inserted.append(len(self._fresh))
        insert(self, connection)

    monkeypatch.setattr(catalog.Catalog, "_insert_fresh", counting)
    return inserted


def test_rows_written_during_a_load_are_the_rows_a_save_writes(
    root: Path, monkeypatch: pytest.MonkeyPatch, insertions: list[int]
) -> None:
    """A load that parses many files writes their rows as it reads, in its save's
    transaction: the catalogue is the one it would write all at once, row for row."""
    from hql.vault import catalog

    monkeypatch.setattr(catalog, "_STREAM_ROWS", 10**9)
    whole = summary(Vault.open(root))
    at_once = _catalogue_rows(root)
    assert len(at_once["files"]) == 6
    shutil.rmtree(root / ".hql")
    monkeypatch.setattr(catalog, "_STREAM_ROWS", 2)
    insertions.clear()
    assert summary(Vault.open(root)) == whole
    assert insertions[:3] == [2, 2, 2]  # written two at a time while reading
    assert _catalogue_rows(root) == at_once


def test_a_load_that_fails_after_writing_rows_leaves_the_catalogue_as_it_was(
    root: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch, insertions: list[int]
) -> None:
    """The rows a failed load wrote early are rolled back; readers meanwhile see the
    catalogue as it was; the next load parses those files again and saves them."""
    from hql.vault import assembly, catalog

    monkeypatch.setattr(catalog, "_STREAM_ROWS", 2)
    Vault.open(root)
    before = _catalogue_rows(root)
    for card in ("oauth.hmd", "sessions.hmd", "bearer-tokens.hmd"):
        path = root / card
        path.write_text(path.read_text() + "\nOne more line.\n")
    seen_meanwhile: list[list[tuple[object, ...]]] = []
    real = assembly.build_cards
    insertions.clear()

    def failing(*args: object, **kwargs: object) -> object:
        seen_meanwhile.append(_catalogue_rows(root)["files"])  # another connection reads
        raise RuntimeError("stopped while building cards")

    monkeypatch.setattr(assembly, "build_cards", failing)
    parses.clear()
    with pytest.raises(RuntimeError):
        Vault.open(root)
    assert len(parses) == 3 and insertions == [2]  # two rows written before the failure
    assert seen_meanwhile == [before["files"]]
    assert _catalogue_rows(root) == before
    monkeypatch.setattr(assembly, "build_cards", real)
    parses.clear()
    changed = summary(Vault.open(root))
    assert len(parses) == 3
    assert changed == summary(Vault.open(root, use_cache=False))
    parses.clear()
    assert summary(Vault.open(root)) == changed
    assert parses == []
