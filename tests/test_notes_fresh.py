"""Freshness: with `[semantics] embed_on_write = true` a note's vectors are written with it (the
next `semantic` query sees it); without, `hql index status` shows the note as stale."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from standin_embedder import BASE_CARDS, http_toml, standin_server, write_vault

import hql
import hql.notes
from hql.index.producer import build_index

QUESTION = "import semantic\ncards | semantic($q) | take(1) | map(h => h.card.name)"


def _status(root: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "hql", "--vault", str(root), "--format", "json", "index", "status"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_write_embeds_the_note_only_when_asked(tmp_path: Path) -> None:
    with standin_server() as (endpoint, state):
        for flag, root in (("", tmp_path / "off"), ("embed_on_write = true\n", tmp_path / "on")):
            write_vault(root, BASE_CARDS, http_toml(endpoint, "embed_queries = true\n" + flag))
            (root / "Birds").mkdir()
            (root / "Birds" / "heron.md").write_text("---\ntitle: Heron\n---\nHerons wade.\n")
            build_index(hql.Vault.open(root))
            before = len(state.texts_embedded)
            written = hql.notes.open(root).append("heron", "Herons stalk frogs in reed marshes.")
            assert written.freshness is not None
            status = _status(root)
            asked = hql.run(
                QUESTION, vault=hql.Vault.open(root), params={"q": "frogs reed marshes"}
            )
            if flag:
                assert written.freshness.embedded == ["heron"]
                assert len(state.texts_embedded) > before  # this note's sections, no others
                assert status["stale"] == 0 and status["embedded"] == 5
                assert list(asked.value) == ["heron"]
            else:
                assert written.freshness.embedded == []
                assert "embed_on_write" in (written.freshness.vectors or "")
                assert status["stale"] == 1 and status["embedded"] == 4
                assert status["folders"]["Birds"]["stale_cards"] == ["heron"]  # type: ignore[index]


@pytest.mark.parametrize("store", ["hnsw", "qdrant"])
def test_a_write_reaches_the_hnsw_graph_and_qdrant_too(tmp_path: Path, store: str) -> None:
    from store_parity import as_store

    pytest.importorskip("hnswlib" if store == "hnsw" else "qdrant_client")
    root = tmp_path / store
    with standin_server() as (endpoint, _state):
        toml = http_toml(endpoint, "embed_queries = true\nembed_on_write = true\n")
        if store == "hnsw":
            toml = toml.replace("[semantics]\n", '[semantics]\nann = "hnsw"\n', 1)
        else:
            toml = as_store(toml, "qdrant", collection="notes")
        write_vault(root, BASE_CARDS, toml)
        build_index(hql.Vault.open(root))
        params = {"q": "frogs reed marshes"}
        before = hql.run(QUESTION, vault=hql.Vault.open(root), params=params)
        assert list(before.value) != ["duck"]
        written = hql.notes.open(root).append("duck", "Ducks stalk frogs in reed marshes.")
        assert written.freshness is not None and written.freshness.embedded == ["duck"]
        vault = hql.Vault.open(root)
        asked = hql.run(QUESTION, vault=vault, params=params)
        assert list(asked.value) == ["duck"]
        ranking = hql.run(
            "import semantic\ncards | semantic($q) | take(2)", vault=vault, params=params
        )
        search = ranking.value.retrieval.extra["search"]
        assert search["store"] == ("qdrant" if store == "qdrant" else "sqlite")
        if store == "hnsw":
            assert search["exact"] is False and search["ann"] == "hnsw", (
                search
            )  # the graph answered


BM25 = "import bm25\ncards | bm25($q) | map(h => [h.card.name, h.score])"
WORDS = ("heron", "marsh", "reed", "frog", "tide", "salt", "willow", "otter", "kelp", "dune")


def _ranked(root: Path, questions: list[str]) -> list[object]:
    vault = hql.Vault.open(root)
    return [list(hql.run(BM25, vault=vault, params={"q": q}).value) for q in questions]


def test_bm25_after_many_writes_scores_as_a_store_built_from_scratch(tmp_path: Path) -> None:
    import shutil

    from hql.search.bm25 import DELTA_NAME, STORE_NAME

    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    for number in range(24):
        words = " ".join(WORDS[(number + step) % len(WORDS)] for step in range(number % 5 + 2))
        recall = f"summary: gist {WORDS[number % len(WORDS)]}\n" if number % 3 == 0 else ""
        (root / "notes" / f"note {number}.md").write_text(
            f"---\ntitle: Note {number}\n{recall}---\nSome {words} and more {words}.\n"
        )
    questions = [
        "heron marsh",
        "otter kelp dune",
        "salt tide",
        "willow frog reed",
        "gist",
        "chiefly heron",
    ]
    _ranked(root, questions)  # the store, built once
    store, delta = root / ".hql" / STORE_NAME, root / ".hql" / DELTA_NAME
    notes = hql.notes.open(root)
    for number in range(15):
        name = f"note {(number * 7) % 24}"
        word = WORDS[number % len(WORDS)]
        if number % 3 == 0:
            notes.append(name, f"A {word} seen again, and a {word} more.")
        elif number % 3 == 1:
            notes.set(name, "summary", f"chiefly {word}")
        else:
            notes.section(name, "Seen", f"{word} {WORDS[(number + 1) % len(WORDS)]}")
        if number == 1:
            saved = store.stat().st_mtime_ns
        if number in (1, 2, 3):  # writes in a row: the store stays, the delta grows
            assert store.stat().st_mtime_ns == saved and delta.is_file()
        if number % 5 == 4:  # a question between writes folds the delta into the store
            _ranked(root, questions[:1])
            assert not delta.exists()
    scratch = tmp_path / "scratch"
    shutil.copytree(root, scratch, ignore=shutil.ignore_patterns(".hql"))
    after_writes, from_scratch = _ranked(root, questions), _ranked(scratch, questions)
    assert all(after_writes) and after_writes == from_scratch  # names, scores, to the float


def test_a_note_written_again_leaves_one_analysis_in_the_delta(tmp_path: Path) -> None:
    import shutil

    from hql.search.bm25 import STORE_NAME, _delta_entries
    from hql.search.fields import fields_of, search_fields_for
    from hql.search.terms import store_fingerprint
    from hql.text.analyzer import Analyzer

    root = tmp_path / "vault"
    root.mkdir()
    for number, word in enumerate(WORDS):
        (root / f"{word}.md").write_text(f"# {word.title()}\n\nAbout the {word}, note {number}.\n")
    _ranked(root, ["heron"])  # the store
    notes = hql.notes.open(root)
    for number in range(5):
        notes.append("heron", f"Seen by the {WORDS[number + 1]} at dawn.")
    notes.append("otter", "Seen by the heron too.")
    vault = hql.Vault.open(root)
    fingerprint = store_fingerprint(
        Analyzer.from_config(vault.config.section("search")).fingerprint,
        search_fields_for(vault)[0] or fields_of(),
    )
    entries = _delta_entries(root / ".hql" / STORE_NAME, fingerprint)
    assert entries is not None
    assert sorted(name for name, _ in entries.values()) == ["heron", "otter"]
    scratch = tmp_path / "scratch"
    shutil.copytree(root, scratch, ignore=shutil.ignore_patterns(".hql"))
    questions = ["heron", "dawn marsh", "otter heron"]
    assert _ranked(root, questions) == _ranked(scratch, questions)
