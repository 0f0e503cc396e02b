"""Bytes flipped in the saved caches never change an answer (issue 14, item 15).

The load cache and the bm25 store under `.hql/` are sealed with a checksum. Each test
saves them with one run, flips bytes in them (a title's letter, then single bits at
several positions), and shows that the next run answers exactly as a fresh copy of the
vault does (nothing under `.hql/`), with the warning where one is promised (bm25), and
that the run after it finds a sound cache again.

The cache files are found by what a run writes, not by name, so the tests keep their
meaning whatever the cache's file is called or made of.
"""

from __future__ import annotations

import json
import random
import shutil
import threading
from pathlib import Path

import pytest

import hql
from hql.search import bm25

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"
CARDS = (
    "cards | map(c => {name: c.name, title: c.title, body: c.body, header: c.header, "
    "metadata: c.metadata, kind: c.kind})",
    "(cards | graph).edges",  # the links, with their annotations
)
SEARCH = ('import bm25\ncards | bm25("bearer token header") | map(h => [h.card.name, h.score])',)
TITLE = b"Bearer tokens"
UNREADABLE = "could not be read"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".hql"))
    return root


def _finish_background_saves() -> None:
    for thread in threading.enumerate():
        if thread.name == "hql-bm25-save":
            thread.join(30)


def _run(root: Path, programs: tuple[str, ...], use_cache: bool = True) -> tuple[str, str]:
    """(the answers as JSON, the reports) of one run, as a new process would see it."""
    bm25._RECENT.clear()  # a new process: no index kept in memory from an earlier run
    vault = hql.open_vault(root, use_cache=use_cache)
    answers, reports = [], []
    for program in programs:
        outcome = hql.run(program, vault)
        assert not outcome.failed, outcome.render_reports()
        answers.append(json.dumps(outcome.to_json()["value"], sort_keys=True))
        reports.append(outcome.render_reports())
    _finish_background_saves()
    return "\n".join(answers), "\n".join(reports)


def _state_files(root: Path) -> set[Path]:
    state = root / ".hql"
    if not state.is_dir():
        return set()
    return {path for path in state.rglob("*") if path.is_file() and not path.name.endswith(".tmp")}


def _written_by(root: Path, programs: tuple[str, ...]) -> list[Path]:
    """The files under `.hql/` that running `programs` wrote (the cache they keep)."""
    before = {path: path.read_bytes() for path in _state_files(root)}
    _run(root, programs)
    after = _state_files(root)
    return sorted(path for path in after if before.get(path) != path.read_bytes())


def _flips(data: bytes, seed: int, count: int) -> list[tuple[str, bytes]]:
    """(what was changed, the changed bytes): a title's letter, then single bits spread
    over the file (its first bytes, its checksum, its body, its last byte)."""
    found: list[tuple[str, bytes]] = []
    at = data.find(TITLE)
    if at >= 0:
        found.append(("title", data[:at] + b"Beaker tokens" + data[at + len(TITLE) :]))
    rng = random.Random(seed)
    positions = [0, 9, 20, len(data) // 2, len(data) - 1]
    positions += [rng.randrange(len(data)) for _ in range(count - len(positions))]
    for position in positions:
        bit = 1 << rng.randrange(8)
        flipped = bytes([data[position] ^ bit])
        found.append(
            (f"bit {bit} of byte {position}", data[:position] + flipped + data[position + 1 :])
        )
    return found


def test_the_load_cache_holds_the_titles_it_must_guard(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    written = _written_by(root, CARDS)
    assert written, "a cached load keeps its parsed cards under .hql/"
    assert any(TITLE in path.read_bytes() for path in written)


def test_a_tampered_load_cache_answers_as_a_fresh_vault(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    fresh = _run(root, CARDS, use_cache=False)[0]  # parsed afresh, no cache read or written
    written = _written_by(root, CARDS)
    assert written
    for cache in written:
        pristine = cache.read_bytes()
        flips = _flips(pristine, seed=len(pristine), count=8)
        assert flips[0][0] == "title" or TITLE not in pristine
        for what, damaged in flips:
            cache.write_bytes(damaged)
            answer, reports = _run(root, CARDS)
            assert answer == fresh, f"{cache.name}: {what} changed an answer"
            assert "Beaker" not in answer
            again, _ = _run(root, CARDS)  # the cache written by that run is sound
            assert again == fresh, f"{cache.name}: {what}, the run after"
            assert b"Beaker tokens" not in cache.read_bytes()
            cache.write_bytes(pristine)


def test_a_tampered_bm25_store_answers_as_a_fresh_vault_with_a_warning(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    _run(root, CARDS)  # the load cache first: what the search writes is then the store
    before = _state_files(root)
    fresh, fresh_reports = _run(root, SEARCH)  # no store yet: every card analysed afresh
    assert UNREADABLE not in fresh_reports
    written = sorted(_state_files(root) - before)
    assert written, "bm25 keeps its analysed postings under .hql/"
    for store in written:
        pristine = store.read_bytes()
        for what, damaged in _flips(pristine, seed=len(pristine), count=8):
            store.write_bytes(damaged)
            answer, reports = _run(root, SEARCH)
            assert answer == fresh, f"{store.name}: {what} changed a score"
            assert UNREADABLE in reports, f"{store.name}: {what} was not reported"
            again, later_reports = _run(root, SEARCH)  # rebuilt and saved: sound again
            assert again == fresh and UNREADABLE not in later_reports, what
            store.write_bytes(pristine)


@pytest.mark.parametrize("keep", [0, 1, 20])
def test_a_truncated_cache_answers_as_a_fresh_vault(tmp_path: Path, keep: int) -> None:
    root = _copy(tmp_path)
    fresh_cards = _run(root, CARDS, use_cache=False)[0]
    written = _written_by(root, CARDS)
    before = _state_files(root)
    fresh_search = _run(root, SEARCH)[0]
    written += sorted(_state_files(root) - before)
    for path in written:
        path.write_bytes(path.read_bytes()[:keep])
    assert _run(root, CARDS)[0] == fresh_cards
    assert _run(root, SEARCH)[0] == fresh_search
