"""The catalogue's search columns as stored: joined texts, the older list form, damage."""

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
from hql.vault.catalog import CATALOG_FILE, SearchColumns, _digest

COLUMNS = [
    (["a", "b"], ["x/a.md", "b.md"], ["d1", "d2"], ["Alpha", "Beta\nsecond line"]),
    (["only"], ["only.md"], ["d"], [""]),  # a single empty item
    (["a", "b", "c"], ["a.md", "b.md", "c.md"], ["", "", ""], ["", "", "C"]),
    (["a", "b"], ["a.md", "b.md"], ["d1", "d2"], ["with a \0 inside", "plain"]),
    (["ünï", "日本"], ["ünï.md", "日本.md"], ["d1", "d2"], ["Ü", "本"]),
    ([], [], [], []),
]


@pytest.mark.parametrize("columns", COLUMNS)
def test_columns_read_back_as_written(columns: tuple[list[str], ...]) -> None:
    packed = SearchColumns(*columns).packed()
    back = SearchColumns.unpacked(packed, len(columns[0]), b"named")
    assert back is not None and back.digest == b"named"
    assert (back.names, back.relpaths, back.digests, back.titles) == columns
    assert SearchColumns.unpacked(packed, len(columns[0]) + 1) is None


def test_columns_are_stored_as_joined_texts() -> None:
    stored = marshal.loads(SearchColumns(*COLUMNS[0]).packed())
    assert all(type(column) is str for column in stored)
    with_nul = marshal.loads(SearchColumns(*COLUMNS[3]).packed())
    assert type(with_nul[4]) is list and type(with_nul[1]) is str


@pytest.mark.parametrize(
    "stored",
    [
        marshal.dumps(("joined", "a\0b", "a\0b", "a\0b")),  # a column short
        marshal.dumps(("joined", "a\0b", "a\0b", "a\0b", 7)),
        marshal.dumps(("joined", "a\0b", "a\0b", "a\0b", ["a", 2])),
        marshal.dumps(("joined", "a\0b", "a\0b", "a\0b\0c", "a\0b")),
        marshal.dumps(("other", "a\0b", "a\0b", "a\0b", "a\0b")),
        marshal.dumps(["a", "b"]),
        b"\x00not marshal",
    ],
)
def test_malformed_columns_are_refused(stored: bytes) -> None:
    assert SearchColumns.unpacked(stored, 2) is None


@pytest.fixture
def garden(tmp_path: Path) -> Path:
    root = tmp_path / "garden"
    shutil.copytree(GARDEN, root, ignore=shutil.ignore_patterns(".hql"))
    return root


def test_columns_in_the_older_list_form_are_still_read(
    garden: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _catalogued(garden)
    with sqlite3.connect(garden / ".hql" / CATALOG_FILE) as connection:
        key, packed = connection.execute("SELECT key, columns FROM search").fetchone()
        lists = tuple(column.split("\0") for column in marshal.loads(packed)[1:])
        old = marshal.dumps(lists)
        connection.execute("UPDATE search SET columns = ?, digest = ?", (old, _digest(key, old)))
    built: list[str] = []
    real = assembly.build_card
    monkeypatch.setattr(
        assembly,
        "build_card",
        lambda item, name, *rest: built.append(name) or real(item, name, *rest),
    )
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
