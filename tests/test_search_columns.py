"""The catalogue's search columns as stored: blocks of joined texts, damage, the older form."""

from __future__ import annotations

import marshal
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_vault_lazy import GARDEN, PROGRAMS, QUESTIONS, _assert_same, _catalogued, _run

from hql.search import bm25
from hql.vault import Vault, assembly
from hql.vault.catalog import CATALOG_FILE, SEARCH_BLOCK, SearchColumns, _block_of, _digest

COLUMNS = [
    (["a", "b"], ["x/a.md", "b.md"], ["d1", "d2"], ["Alpha", "Beta\nsecond line"]),
    (["only"], ["only.md"], ["d"], [""]),  # a single empty item
    (["a", "b", "c"], ["a.md", "b.md", "c.md"], ["", "", ""], ["", "", "C"]),
    (["a", "b"], ["a.md", "b.md"], ["d1", "d2"], ["with a \0 inside", "plain"]),
    (["ünï", "日本"], ["ünï.md", "日本.md"], ["d1", "d2"], ["Ü", "本"]),
    ([], [], [], []),
    tuple([f"{column}{n:04d}" for n in range(600)] for column in "nrdt"),  # three blocks
]
KEY = b"the listing key"


def _files(count: int) -> tuple[list[str], list[int], list[int], list[int], list[int]]:
    return (
        ["markdown"] * count,
        [n * 10 - 1 for n in range(count)],  # the first: a failed stat
        [2**62 + n for n in range(count)],
        [2**63 + n for n in range(count)],
        [-(2**62) + n for n in range(count)],
    )


def _stored(columns: tuple[list[str], ...]) -> list[tuple[bytes, bytes]]:
    blocks = SearchColumns(*columns, _files(len(columns[0]))).blocks()
    return [(block, _digest(KEY, str(n).encode(), block)) for n, block in enumerate(blocks)]


@pytest.mark.parametrize("columns", COLUMNS)
def test_columns_read_back_as_written(columns: tuple[list[str], ...]) -> None:
    count = len(columns[0])
    stored = _stored(columns)
    assert len(stored) == -(-count // SEARCH_BLOCK)
    read: list[list[object]] = [[] for _ in range(9)]
    for number, row in enumerate(stored):
        size = min(SEARCH_BLOCK, count - number * SEARCH_BLOCK)
        block = _block_of(row, KEY, number, row[1], size)
        assert block is not None
        for part, column in zip(read, block, strict=True):
            part.extend(column)
        assert _block_of(row, KEY, number, row[1], size + 1) is None
        assert _block_of(row, b"another key", number, row[1], size) is None
        assert _block_of(row, KEY, number + 1, row[1], size) is None
    names, relpaths, formats, digests, titles, *numbers = read
    assert [names, relpaths, digests, titles] == list(columns)
    assert [formats, *numbers] == list(_files(count))


def test_columns_are_stored_as_joined_texts() -> None:
    stored = marshal.loads(_stored(COLUMNS[0])[0][0])
    assert all(type(column) is str for column in stored[1:6])
    with_nul = marshal.loads(_stored(COLUMNS[3])[0][0])
    assert type(with_nul[5]) is list and type(with_nul[2]) is str


@pytest.mark.parametrize(
    "stored",
    [
        ("joined", "a\0b", "a\0b", "a\0b", "a\0b", "a\0b", [1, 2], [1, 2], [1, 2]),  # one short
        ("joined", "a\0b", "a\0b", "a\0b", "a\0b", 7, [1, 2], [1, 2], [1, 2], [1, 2]),
        ("joined", "a\0b", "a\0b", "a\0b", "a\0b", ["a", 2], [1, 2], [1, 2], [1, 2], [1, 2]),
        ("joined", "a\0b", "a\0b", "a\0b", "a\0b\0c", "a\0b", [1, 2], [1, 2], [1, 2], [1, 2]),
        ("joined", "a\0b", "a\0b", "a\0b", "a\0b", "a\0b", [1, 2], [1, 2.5], [1, 2], [1, 2]),
        ("joined", "a\0b", "a\0b", "a\0b", "a\0b", "a\0b", [1, 2], [1], [1, 2], [1, 2]),
        ("joined", "a\0b", "a\0b", "a\0b", "a\0b", "a\0b", [1, 2], [1, 2], [1, 2], [1, 2.5]),
        ("other", "a\0b", "a\0b", "a\0b", "a\0b", "a\0b", [1, 2], [1, 2], [1, 2], [1, 2]),
        ["a", "b"],
    ],
)
def test_malformed_blocks_are_refused(stored: object) -> None:
    block = marshal.dumps(stored)
    digest = _digest(KEY, b"0", block)
    assert _block_of((block, digest), KEY, 0, digest, 2) is None
    assert _block_of((b"\x00not marshal", digest), KEY, 0, digest, 2) is None


@pytest.fixture
def garden(tmp_path: Path) -> Path:
    root = tmp_path / "garden"
    shutil.copytree(GARDEN, root, ignore=shutil.ignore_patterns(".hql"))
    return root


def test_a_catalogue_with_the_single_row_columns_of_before_is_rewritten(
    garden: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _catalogued(garden)
    with sqlite3.connect(garden / ".hql" / CATALOG_FILE) as connection:
        connection.execute("DROP TABLE search_head")
        connection.execute("DROP TABLE search_blocks")
        connection.execute("CREATE TABLE search (id INTEGER PRIMARY KEY, key, columns, digest)")
        connection.execute("CREATE TABLE walked (id INTEGER PRIMARY KEY, token, walk, digest)")
        connection.execute("DELETE FROM listing")  # the next load reads every file
    built: list[str] = []
    real = assembly.build_card
    monkeypatch.setattr(
        assembly,
        "build_card",
        lambda item, name, *rest: built.append(name) or real(item, name, *rest),
    )
    _run(Vault.open(garden), PROGRAMS[6], QUESTIONS[0])
    with sqlite3.connect(garden / ".hql" / CATALOG_FILE) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    assert "search" not in tables and "walked" not in tables
    assert {"search_head", "search_blocks"} <= tables
    for q in QUESTIONS:
        built.clear()
        answer = _run(Vault.open(garden), PROGRAMS[6], q)
        assert len(built) <= 12
        _assert_same(answer, _run(Vault.open(garden, use_cache=False), PROGRAMS[6], q))


def test_a_warm_vault_matches_its_store_by_the_record(
    garden: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _catalogued(garden)
    _run(Vault.open(garden), PROGRAMS[0], QUESTIONS[0])  # matched by key, recorded
    calls: list[Any] = []
    real = bm25._keys_of
    monkeypatch.setattr(bm25, "_keys_of", lambda cards: calls.append(1) or real(cards))
    for q in QUESTIONS:
        vault = Vault.open(garden)
        answer = _run(vault, PROGRAMS[6], q)
        assert vault._cards is None and calls == []
        _assert_same(answer, _run(Vault.open(garden, use_cache=False), PROGRAMS[6], q))
        calls.clear()  # the whole load above matched by key
    (garden / "Ocean" / "new-note.md").write_text("# Ocean currents\n\nWarm water.\n")
    answer = _run(Vault.open(garden), PROGRAMS[6], "ocean currents")
    assert calls  # another listing: matched by key again
    _assert_same(answer, _run(Vault.open(garden, use_cache=False), PROGRAMS[6], "ocean currents"))
