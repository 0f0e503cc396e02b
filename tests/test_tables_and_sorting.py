"""Tables with columns for lists of records, and sorting by several keys (docs/language.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import hql
from hql.vault import Vault

BOOKS = {
    "Books/Dune.md": "---\nauthor: Frank Herbert\nyear: 1965\nrating: 5\ntags: [scifi]\n---\n",
    "Books/Emma.md": "---\nauthor: Jane Austen\nyear: 1815\nrating: 4\n---\n",
    "Books/Walden.md": "---\nauthor: Henry Thoreau\nrating: 4\n---\n",
    "Books/Ulysses.md": "---\nyear: 1922\nrating: 3\n---\n",
    "Home.md": "See [[Dune|the desert book]].\n",
}
ROWS = 'cards | filter(c => c.folder == "Books") | sort(by = c => c.name)'
RECORDS = f"{ROWS} | map(c => {{name: c.name, author: c.metadata.author, year: c.metadata.year}})"


def write(root: Path, files: dict[str, str]) -> Path:
    for relpath, text in files.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def obsidian(tmp_path: Path) -> Vault:
    vault = Vault.open(write(tmp_path / "books", BOOKS), use_cache=False)
    assert vault.dialect == "obsidian"  # `[[Dune|…]]`: a clone of an Obsidian vault
    return vault


@pytest.fixture
def reference(tmp_path: Path) -> Vault:
    files = {**BOOKS, "hql.toml": '[vault]\ndialect = "reference"\n'}
    return Vault.open(write(tmp_path / "plain", files), use_cache=False)


COLUMNS = """\
name     author         year
-------  -------------  ----
Dune     Frank Herbert  1965
Emma     Jane Austen    1815
Ulysses                 1922
Walden   Henry Thoreau"""


def test_records_tabulate_with_columns_in_an_obsidian_vault(obsidian: Vault) -> None:
    assert hql.run(f"{RECORDS} | table", vault=obsidian).value.text == COLUMNS


def test_the_reference_dialect_keeps_one_value_column(reference: Vault) -> None:
    text = hql.run(f"{RECORDS} | table", vault=reference).value.text
    assert text.splitlines()[0] == "value"
    assert '{author: "Frank Herbert", name: "Dune", year: 1965}' in text
    assert hql.run(f"{RECORDS} | table(columns = true)", vault=reference).value.text == COLUMNS
    plain = hql.run(f"{RECORDS} | table(columns = false)", vault=obsidian_of(reference))
    assert plain.value.text == text


def obsidian_of(reference: Vault) -> Vault:
    (reference.root / "hql.toml").write_text('[vault]\ndialect = "obsidian"\n')
    return Vault.open(reference.root, use_cache=False)


def test_keys_in_first_seen_order_and_blanks(obsidian: Vault) -> None:
    program = '[{b: 1, a: [1, "x"]}, {c: "z"}, {b: 2}] | table'
    assert hql.run(program, vault=obsidian).value.text == (
        "b  a     c\n-  ----  -\n1  1, x\n         z\n2"
    )
    # Not all records: the reference's layout.
    mixed = hql.run('[{a: 1}, "x"] | table', vault=obsidian).value.text
    assert mixed.splitlines()[0] == "value"


def test_json_gives_columns_and_rows(obsidian: Vault) -> None:
    shown = json.loads(hql.run(f"{RECORDS} | take(3) | table", vault=obsidian).json_text())
    assert shown["value"]["columns"] == ["name", "author", "year"]
    assert shown["value"]["rows"][2] == {"name": "Ulysses", "author": None, "year": 1922}
    assert shown["value"]["text"] == "\n".join(COLUMNS.splitlines()[:5])


def test_render_writes_columns_in_an_obsidian_vault(obsidian: Vault) -> None:
    page = obsidian.root / "Books.md"
    page.write_text(f"# Books\n\n```hql\n{RECORDS}\n```\n", encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "hql", "--vault", str(obsidian.root), "render", str(page)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert f"```hql#result\n{COLUMNS}\n```" in run.stdout


def test_sort_by_several_keys(obsidian: Vault) -> None:
    program = f"{ROWS} | sort(by = c => [c.metadata.rating, c.name], descending = [true, false])"
    names = hql.run(f"{program} | map(c => c.name)", vault=obsidian).value
    assert list(names) == ["Dune", "Emma", "Walden", "Ulysses"]
    every = f"{ROWS} | sort(by = c => [c.metadata.rating, c.name], descending = true)"
    assert list(hql.run(f"{every} | map(c => c.name)", vault=obsidian).value) == [
        "Dune",
        "Walden",
        "Emma",
        "Ulysses",
    ]
    ascending = f"{ROWS} | sort(by = c => [c.metadata.year, c.name]) | map(c => c.name)"
    # An absent key comes last whichever the direction.
    assert list(hql.run(ascending, vault=obsidian).value) == ["Emma", "Ulysses", "Dune", "Walden"]
    typed = "[ [3, 1], [2, 9], [2, 1]] | sort(by = p => p, descending = [false, true])"
    assert hql.run(typed).text() == "[[2, 9], [2, 1], [3, 1]]"


def test_sort_directions_are_checked(obsidian: Vault) -> None:
    wrong = hql.check(f"{ROWS} | sort(by = c => [c.name], descending = [1])", vault=obsidian)
    assert wrong.failed
    assert "Bool, or a List<Bool> with one direction per key, not List<Int>" in (
        wrong.render_reports()
    )
    single = hql.check(f"{ROWS} | sort(by = c => c.name, descending = [true])", vault=obsidian)
    assert "`descending` of `sort` is Bool, not List<Bool>" in single.render_reports()
