"""A vault that declares no dialect is read as its notes are written (hql/vault/detect.py)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from obsidian_resolver import note_links

import hql
from hql.vault import Vault, detect, walk

FIXTURES = Path(__file__).resolve().parent / "fixtures"
UPSTREAM = Path("/work/shared/upstream-fixtures")
# Every vault the reference's answers are pinned on: the upstream fixtures (as copied
# into tests/fixtures) and the bundled sample vault.
REFERENCE_VAULTS = [
    FIXTURES / name
    for name in ("vault", "birds", "configured", "examples-birds", "everyday", "multilingual")
] + [FIXTURES.parent.parent / "vaults" / "web-auth"]


def cloned_obsidian_fixture(tmp_path: Path) -> Path:
    """tests/fixtures/obsidian as a git clone gives it: no `.obsidian/`, no `.trash/`."""
    root = tmp_path / "clone"
    shutil.copytree(
        FIXTURES / "obsidian", root, ignore=shutil.ignore_patterns(".obsidian", ".trash", ".hql")
    )
    return root


def hql_links(vault: Vault) -> set[tuple[str, str]]:
    relpath = {card.name: card.relpath for card in vault.cards}
    found = set()
    for edge in vault.edges:
        source, target = relpath.get(edge.source), relpath.get(edge.target)
        if source and target and source != target:
            found.add((source, target))
    return found


@pytest.mark.parametrize("root", REFERENCE_VAULTS, ids=lambda p: p.name)
def test_every_reference_vault_keeps_the_reference_dialect(root: Path) -> None:
    vault = Vault.open(root, use_cache=False)
    assert vault.dialect == "reference"
    assert not any("Obsidian" in item.message for item in vault.warnings)
    # Not only because they hold `.hmd` cards: their links have no Obsidian-only form.
    walked = walk.walk(str(root), [])
    assert detect.scan(walked).forms == {}


def test_the_upstream_fixtures_as_shared_keep_the_reference_dialect() -> None:
    if not UPSTREAM.is_dir():
        pytest.skip("the shared upstream fixtures are not on this machine")
    roots = ["vault", "birds", "configured", "examples-birds/wiki", "examples-mapreduce/wiki"]
    for name in roots:
        assert Vault.open(UPSTREAM / name, use_cache=False).dialect == "reference", name
        assert detect.scan(walk.walk(str(UPSTREAM / name), [])).forms == {}, name


def test_a_cloned_obsidian_vault_is_read_as_obsidian(tmp_path: Path) -> None:
    root = cloned_obsidian_fixture(tmp_path)
    vault = Vault.open(root)
    assert vault.dialect == "obsidian"
    note = [item.message for item in vault.warnings if "read as an Obsidian vault" in item.message]
    assert len(note) == 1 and "`[[a|shown]]`" in note[0]
    # The scan stopped once enough notes had shown Obsidian's forms, and says so.
    assert f"links of the first {detect.ENOUGH_NOTES} notes read are in forms" in note[0]
    # The same answers as with `.obsidian/`: every link the independent resolver reads.
    truth = note_links(root)
    assert len(truth) > 100
    assert hql_links(vault) == truth
    declared = Vault.open(FIXTURES / "obsidian", use_cache=False)
    assert hql_links(declared) == hql_links(vault)
    # The verdict is kept for the walk it was made for, and reused.
    kept = json.loads((root / ".hql" / "dialect.json").read_text())
    assert kept["dialect"] == "obsidian" and kept["forms"]["alias"] > 0
    again = Vault.open(root)
    assert again.dialect == "obsidian" and len(again.cards) == len(vault.cards)
    assert [w.message for w in again.warnings] == [w.message for w in vault.warnings]


def test_a_declared_dialect_wins_over_the_notes(tmp_path: Path) -> None:
    root = cloned_obsidian_fixture(tmp_path)
    (root / "hql.toml").write_text('[vault]\ndialect = "reference"\n')
    vault = Vault.open(root)
    assert vault.dialect == "reference" and vault.dialect_note is None
    assert not any("Obsidian" in item.message for item in vault.warnings)
    (root / "hql.toml").unlink()
    assert Vault.open(root).dialect == "obsidian"


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("see [[Two Words|shown]]", "alias"),
        ("see [[plain#Part]]", "heading"),
        ("see [[plain#^b1]]", "block"),
        ("see ![[plain]]", "embed"),
        ("see [[Two Words]]", "spaces"),
        ("see [[sub/deep]]", "path"),
        ("see [[PLAIN]]", "case"),
        ("see [[Other Name]]", "by-alias"),
        ("see [x](sub/deep.md)", "markdown"),
    ],
)
def test_each_obsidian_form_decides(tmp_path: Path, body: str, kind: str) -> None:
    files = {
        "plain.md": "---\naliases: [Other Name]\n---\nplain\n",
        "Two Words.md": "two\n",
        "sub/deep.md": "deep\n",
        "note.md": body + "\n",
    }
    for relpath, text in files.items():
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_text(text)
    choice = detect.scan(walk.walk(str(tmp_path), []))
    assert choice.forms == {kind: 1} and choice.dialect == "obsidian"
    assert choice.first == "note.md"


def test_plain_links_and_links_in_code_keep_the_reference_dialect(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("[[b]] and `[[b|x]]`\n```\n![[b]] [[B#h]]\n```\n%% [[b|y]] %%\n")
    (tmp_path / "b.md").write_text("[[a]] [[missing note]]\n")
    vault = Vault.open(tmp_path)
    assert vault.dialect == "reference"
    assert vault.dialect_note is not None and "3 links" in vault.dialect_note
    assert list(hql.run("[[a]].outlinks", vault=vault).value) == ["b"]


def test_the_scan_stops_once_enough_notes_show_obsidian_forms(tmp_path: Path) -> None:
    enough = detect.ENOUGH_NOTES
    for number in range(enough + 20):
        body = f"see [[n{number + 1}|the next]]\n" if number < enough + 5 else "plain\n"
        (tmp_path / f"n{number:03d}.md").write_text(body)
    choice = detect.scan(walk.walk(str(tmp_path), []))
    assert choice.dialect == "obsidian" and not choice.complete
    assert choice.notes == enough and choice.forms == {"alias": enough}
    assert choice.first == "n000.md"
    # A vault with no such link is read to its last note before it is the reference's.
    for path in tmp_path.glob("*.md"):
        path.write_text("[[n001]]\n")
    plain = detect.scan(walk.walk(str(tmp_path), []))
    assert plain.dialect == "reference" and plain.complete
    assert plain.notes == enough + 20 and plain.links == enough + 20


def test_a_changed_vault_is_decided_again(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("[[b]]\n")
    (tmp_path / "b.md").write_text("b\n")
    assert Vault.open(tmp_path).dialect == "reference"
    (tmp_path / "c.md").write_text("[[a|the first]]\n")
    assert Vault.open(tmp_path).dialect == "obsidian"
    (tmp_path / "c.md").unlink()
    assert Vault.open(tmp_path).dialect == "reference"


def test_a_damaged_verdict_file_is_decided_again(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("[[b|x]]\n")
    (tmp_path / "b.md").write_text("b\n")
    assert Vault.open(tmp_path).dialect == "obsidian"
    (tmp_path / ".hql" / "dialect.json").write_text("{not json")
    assert Vault.open(tmp_path).dialect == "obsidian"
    (tmp_path / ".hql" / "dialect.json").write_text(json.dumps({"walk": 1, "dialect": "x"}))
    assert Vault.open(tmp_path).dialect == "obsidian"


def test_the_scan_never_waits_on_a_fifo(tmp_path: Path) -> None:
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    (tmp_path / "a.md").write_text("[[b|x]]\n")
    (tmp_path / "b.md").write_text("b\n")
    os.mkfifo(tmp_path / "pipe.md")
    vault = Vault.open(tmp_path)  # would block forever if the scan opened the FIFO
    assert vault.dialect == "obsidian" and "pipe" not in vault


def _mixed_notes(root: Path, count: int, showing_every: int, seed: int) -> None:
    """`count` notes of plain text, plain links, links naming no note, aliases and, every
    `showing_every`-th note from the middle on, a form only Obsidian reads."""
    import random

    rng = random.Random(seed)
    forms = ["[[n{0}|shown]]", "![[n{0}]]", "[[n{0}#Part]]", "[[N{0}]]", "[x](n{0}.md)"]
    for number in range(count):
        lines = ["plain words"]
        if rng.random() < 0.3:
            lines.append(f"[[n{rng.randrange(count)}]] and [[nickname {number % 7}]]")
        if number >= count // 2 and number % showing_every == 0:
            lines.append(rng.choice(forms).format(rng.randrange(count)))
        header = f"---\naliases: [nickname {number}]\n---\n" if number % 11 == 0 else ""
        (root / f"n{number}.md").write_text(header + "\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("showing_every", "seed"), [(1, 1), (5, 2), (10**6, 3)], ids=["stops", "some", "alias-only"]
)
def test_a_scan_shared_with_a_forked_reader_decides_as_one_reader_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, showing_every: int, seed: int
) -> None:
    from hql.vault import workers

    _mixed_notes(tmp_path, 240, showing_every, seed)
    walked = walk.walk(str(tmp_path), [])
    alone = detect.scan(walked)
    shares: list[int] = []
    heard: list[int] = []

    def share(count: int, here: Any, there: Any, received: Any) -> None:
        def heard_from_child(task: int, found: object) -> None:
            heard.append(task)
            received(task, found)

        def slow_here(task: int) -> None:  # so that the forked reader surely takes some
            time.sleep(0.02)
            here(task)

        shares.append(count)
        real_share(count, slow_here, there, heard_from_child)

    real_share = workers.share
    monkeypatch.setattr(detect, "SHARED_SCAN_FROM", 100)
    monkeypatch.setattr(detect, "_READ_ALONE", 30)
    monkeypatch.setattr(detect, "_FILES_PER_TASK", 7)
    monkeypatch.setattr(workers, "usable", lambda: True)
    monkeypatch.setattr(workers, "core_free", lambda: True)
    monkeypatch.setattr(workers, "share", share)
    shared = detect.scan(walked)
    assert shares == [-(-210 // 7)] and heard  # the forked reader's findings were counted
    assert shared == alone
    expected = {1: (False, "obsidian"), 5: (True, "obsidian"), 10**6: (True, "obsidian")}
    assert (alone.complete, alone.dialect) == expected[showing_every]


def test_a_large_scan_with_no_core_to_spare_still_stops_once_enough_notes_decide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hql.vault import workers

    for number in range(240):
        body = f"see [[n{number + 1:03d}|the next]]\n" if number >= 30 else "plain\n"
        (tmp_path / f"n{number:03d}.md").write_text(body)
    walked = walk.walk(str(tmp_path), [])
    alone = detect.scan(walked)
    monkeypatch.setattr(detect, "SHARED_SCAN_FROM", 100)
    monkeypatch.setattr(detect, "_READ_ALONE", 30)
    monkeypatch.setattr(workers, "core_free", lambda: False)
    reads: list[str] = []
    read = detect._read

    def counted(path: str) -> bytes | None:
        reads.append(path)
        return read(path)

    monkeypatch.setattr(detect, "_read", counted)
    assert detect.scan(walked) == alone
    assert not alone.complete and alone.notes == 30 + detect.ENOUGH_NOTES
    assert len(reads) == 30 + detect.ENOUGH_NOTES  # none read past the deciding notes
