"""The word index (hql.search.terms): a vault's first questions read their terms' rows only.

Its answers must equal the full index's in everything a user sees (hits, scores to the
float, matched terms, the retrieval, the text); damage to any part of it must mean a
warning and the full index's answer, never a wrong one; it must be for the very cards
asked about.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_vault_lazy import GARDEN, _assert_same

import hql
from hql.search import shared, terms
from hql.vault import Vault

ROOT = Path(__file__).resolve().parents[1]
AGENT_MEMORY = ROOT / "vaults" / "agent-memory"  # cards with recall fields (BM25F)
QUESTIONS = [
    "ocean temperature along the Brazilian coast",
    "coral reef coral",  # a term asked twice weighs twice
    "relevance of search results",
    "garden gardening gardens",  # prefixes weigh half
    "zzzz-held-by-no-card",
    "the of and",
]
PROGRAMS = [
    "import bm25\ncards | bm25($q) | take(1)",
    "import bm25\ncards | bm25($q) | take(7)",
    "import bm25\ncards | bm25($q) | take(500)",
]


@pytest.fixture
def garden(tmp_path: Path) -> Path:
    root = tmp_path / "garden"
    shutil.copytree(GARDEN, root, ignore=shutil.ignore_patterns(".hql"))
    _backdate(root)
    return root


def _backdate(root: Path) -> None:
    an_hour_ago = time.time() - 3600  # a file changed just now is read again by every load
    for path in root.rglob("*"):
        os.utime(path, (an_hour_ago, an_hour_ago))


@pytest.fixture
def every_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """The word index answers every question of a vault (not only its first few)."""
    monkeypatch.setattr(shared, "WORD_INDEX_QUESTIONS", 10**9)


def _written(root: Path) -> Path:
    """Open the vault and ask until a load is opened from the catalogue (its cards named by
    a digest): the full index then writes the word index (the first loads write the
    catalogue and the dialect's choice)."""
    path = root / ".hql" / terms.TERMS_NAME
    for _ in range(4):
        if path.is_file():
            break
        hql.run(PROGRAMS[0], vault=Vault.open(root), params={"q": "ocean"})
    assert path.is_file()
    return path


def _answered_from_words(vault: Vault) -> bool:
    return vault not in shared._bm25_indexes


@pytest.mark.usefixtures("every_question")
def test_the_word_index_answers_as_the_full_index(garden: Path) -> None:
    _written(garden)
    words, full = Vault.open(garden), Vault.open(garden, use_cache=False)
    for program in PROGRAMS:
        for q in QUESTIONS:
            answer = hql.run(program, vault=words, params={"q": q})
            _assert_same(answer, hql.run(program, vault=full, params={"q": q}))
    assert _answered_from_words(words)
    assert not _answered_from_words(full)


@pytest.mark.usefixtures("every_question")
def test_the_word_index_scores_the_recall_fields_as_the_full_index(tmp_path: Path) -> None:
    root = tmp_path / "agent-memory"
    shutil.copytree(AGENT_MEMORY, root, ignore=shutil.ignore_patterns(".hql"))
    _backdate(root)
    _written(root)
    words, full = Vault.open(root), Vault.open(root, use_cache=False)
    asked = ["cut a release", "validate the UI in a real browser", "浏览器验证", "release notes"]
    for program in PROGRAMS:
        for q in asked:
            answer = hql.run(program, vault=words, params={"q": q})
            _assert_same(answer, hql.run(program, vault=full, params={"q": q}))
    assert _answered_from_words(words)


def test_a_fresh_process_answers_without_numpy(garden: Path) -> None:
    """`hql eval` as a user runs it: once the catalogue names the cards by a digest (the
    first loads write it, then the full index writes the word index), a question is
    answered from the word index alone."""
    probe = (
        "import atexit, runpy, sys\n"
        "atexit.register(lambda: print('numpy', 'numpy' in sys.modules, file=sys.stderr))\n"
        "sys.argv = ['hql', *sys.argv[1:]]\n"
        "runpy.run_module('hql', run_name='__main__')\n"
    )
    command = [sys.executable, "-c", probe, "eval", "--vault", str(garden), "--format", "json"]
    command += ["--param", f"q={QUESTIONS[0]}", PROGRAMS[1]]
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    said = [
        subprocess.run(command, env=environment, capture_output=True, text=True, check=True)
        for _ in range(4)
    ]
    assert (garden / ".hql" / terms.TERMS_NAME).is_file()
    numpy = [done.stderr.splitlines()[-1] for done in said]
    assert numpy[0] == "numpy True" and numpy[-2:] == ["numpy False", "numpy False"]
    assert len({done.stdout for done in said}) == 1
    assert json.loads(said[-1].stdout)


def test_after_a_few_questions_the_full_index_answers(garden: Path) -> None:
    _written(garden)
    vault, full = Vault.open(garden), Vault.open(garden, use_cache=False)
    for at in range(shared.WORD_INDEX_QUESTIONS + 2):
        q = QUESTIONS[at % len(QUESTIONS)]
        _assert_same(
            hql.run(PROGRAMS[1], vault=vault, params={"q": q}),
            hql.run(PROGRAMS[1], vault=full, params={"q": q}),
        )
        assert _answered_from_words(vault) == (at < shared.WORD_INDEX_QUESTIONS)


def _damage_row(path: Path, term: str) -> None:
    connection = sqlite3.connect(path)
    (posting,) = connection.execute("SELECT id FROM term WHERE term = ?", (term,)).fetchone()
    impacts = connection.execute("SELECT impacts FROM posting WHERE id = ?", (posting,)).fetchone()
    damaged = bytes([impacts[0][0] ^ 0x40]) + impacts[0][1:]
    connection.execute("UPDATE posting SET impacts = ? WHERE id = ?", (damaged, posting))
    connection.commit()
    connection.close()


@pytest.mark.parametrize(
    "damage",
    [
        "a row",
        "the identity",
        "a row given another term's postings",
        "not SQLite",
        "truncated",
    ],
)
@pytest.mark.usefixtures("every_question")
def test_a_damaged_word_index_warns_answers_right_and_is_written_anew(
    garden: Path, damage: str
) -> None:
    path = _written(garden)
    q = QUESTIONS[0]
    if damage == "a row":
        _damage_row(path, "ocean")
    elif damage == "the identity":
        with sqlite3.connect(path) as connection:
            connection.execute("UPDATE identity SET cards = cards + 1")
    elif damage == "a row given another term's postings":
        with sqlite3.connect(path) as connection:
            (other,) = connection.execute("SELECT id FROM term WHERE term = 'coast'").fetchone()
            connection.execute("UPDATE term SET id = ? WHERE term = 'ocean'", (other,))
    elif damage == "not SQLite":
        path.write_bytes(b"not a database at all" * 100)
    else:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    expected = hql.run(PROGRAMS[1], vault=Vault.open(garden, use_cache=False), params={"q": q})
    answer = hql.run(PROGRAMS[1], vault=Vault.open(garden), params={"q": q})
    assert not answer.failed
    assert answer.text() == expected.text()
    assert "could not be read" in answer.render_reports()
    assert terms.TERMS_NAME in answer.render_reports()
    again = Vault.open(garden)  # the full index wrote the word index anew
    _assert_same(hql.run(PROGRAMS[1], vault=again, params={"q": q}), expected)
    assert _answered_from_words(again)


@pytest.mark.usefixtures("every_question")
def test_a_word_index_of_other_cards_is_not_read_and_is_written_anew(garden: Path) -> None:
    _written(garden)
    note = next(garden.rglob("*.md"))
    note.write_text(note.read_text(encoding="utf-8") + "\nOcean ocean ocean.\n", encoding="utf-8")
    changed = Vault.open(garden)
    q = QUESTIONS[0]
    answer = hql.run(PROGRAMS[1], vault=changed, params={"q": q})
    expected = hql.run(PROGRAMS[1], vault=Vault.open(garden, use_cache=False), params={"q": q})
    _assert_same(answer, expected)
    assert not _answered_from_words(changed)  # the word index was for the cards before
    assert not answer.render_reports()
    # That process's load read every file and wrote the catalogue; its ranking then read the
    # cards from there and wrote the word index anew: the loads after answer from it.
    for _ in range(2):
        later = Vault.open(garden)
        _assert_same(hql.run(PROGRAMS[1], vault=later, params={"q": q}), expected)
        assert _answered_from_words(later)


def test_a_ranking_that_builds_every_card_or_cuts_by_relevance_uses_the_full_index(
    garden: Path, every_question: None
) -> None:
    _written(garden)
    for program in ("import bm25\ncards | bm25($q)", "import bm25\ncards | bm25($q) | relevant"):
        vault = Vault.open(garden)
        answer = hql.run(program, vault=vault, params={"q": QUESTIONS[0]})
        expected = hql.run(
            program, vault=Vault.open(garden, use_cache=False), params={"q": QUESTIONS[0]}
        )
        _assert_same(answer, expected)
        assert not _answered_from_words(vault)
