"""`hql index doctor`: the store's health, coverage and the model's cross-language check.

The vault is real notes in folders with a real SQLite index; the models are stand-ins: one
that knows each paired question's meaning whatever its language (as a multilingual model
does) and one that only sees words (as an English-only model does across languages).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from standin_embedder import standin_vector

import hql
from hql.index.commands import build_command, doctor_command
from hql.index.doctor import CROSS_LANGUAGE_MARGIN, PAIRED_QUESTIONS
from hql.index.reader import clear_cache
from hql.vault import Vault

TOML = '[semantics]\nindex = ".hql/index.sqlite"\n'


class WordsEmbedder:
    """Hashed bag of words: translations share few words, so it cannot cross languages."""

    model_id, revision = "words", "1"

    def embed_passages(self, texts):
        return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

    embed_queries = embed_passages


class MeaningEmbedder(WordsEmbedder):
    """A paired question's vector is its meaning's (its position in the set), plus a little
    of its words, whatever the language."""

    model_id = "meaning"

    def embed_queries(self, texts):
        rows = []
        for text in texts:
            position = next(
                (qs.index(text) for qs in PAIRED_QUESTIONS.values() if text in qs), None
            )
            row = np.asarray(standin_vector(text), dtype=np.float32) * 0.1
            if position is not None:
                row[position] += 1.0
            rows.append(row)
        return np.asarray(rows)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("doctor") / "garden"
    (root / ".obsidian").mkdir(parents=True)
    (root / "hql.toml").write_text(TOML, encoding="utf-8")
    for number in range(30):
        folder = root / ("Birds", "Projects")[number % 2]
        folder.mkdir(exist_ok=True)
        (folder / f"Note {number:02d}.md").write_text(
            f"# Note {number}\n\nowls and penguins {number}.\n", encoding="utf-8"
        )
    code, text = build_command(Vault.open(root, use_cache=False), embedder=WordsEmbedder())
    assert code == 0, text
    return root


@pytest.fixture
def root(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "garden"
    shutil.copytree(built, copy)
    clear_cache()
    return copy


def _doctor(root: Path, embedder, as_json: bool = True):
    code, text = doctor_command(Vault.open(root, use_cache=False), as_json, embedder)
    return code, json.loads(text) if as_json else text


def test_a_healthy_index_and_a_multilingual_model_pass(root: Path) -> None:
    code, report = _doctor(root, MeaningEmbedder())
    assert code == 0 and report["ok"]
    assert report["store"] == {"ok": True, "problems": []}
    assert (report["coverage"]["cards"], report["coverage"]["embedded"]) == (30, 30)
    languages = report["cross_language"]["languages"]
    assert {row["language"] for row in languages} == set(PAIRED_QUESTIONS) - {"en"}
    assert all(row["margin"] >= CROSS_LANGUAGE_MARGIN and row["matched"] == 8 for row in languages)


def test_a_model_that_cannot_cross_languages_is_a_warning_naming_them(root: Path) -> None:
    code, report = _doctor(root, WordsEmbedder())
    assert code == 1 and not report["cross_language"]["ok"]
    weak = [row["language"] for row in report["cross_language"]["languages"] if not row["ok"]]
    assert {"ja", "zh"} <= set(weak)
    assert report["store"]["ok"] and report["coverage"]["ok"]  # the rest still reported
    code, text = _doctor(root, WordsEmbedder(), as_json=False)
    assert "WARNING" in text and "ja" in text.splitlines()[-1] and "zh" in text.splitlines()[-1]


def test_coverage_counts_stale_and_missing_cards(root: Path) -> None:
    (root / "Birds" / "Note 00.md").write_text("# Note 0\n\nnow about ducks.\n", encoding="utf-8")
    (root / "Birds" / "Note 98.md").write_text("# New\n\nherons.\n", encoding="utf-8")
    code, report = _doctor(root, MeaningEmbedder())
    found = report["coverage"]
    assert code == 1 and not found["ok"]
    assert (found["cards"], found["embedded"], found["stale"], found["missing"]) == (31, 29, 1, 1)
    assert any("Note 00" in problem for problem in report["store"]["problems"])


def test_a_tampered_vector_is_a_store_problem(root: Path) -> None:
    db = sqlite3.connect(root / ".hql" / "index.sqlite")
    with db:
        (blob,) = db.execute("SELECT embedding FROM card ORDER BY name LIMIT 1").fetchone()
        edited = bytearray(blob)
        edited[0] ^= 0x01
        db.execute(
            "UPDATE card SET embedding = ? WHERE name = (SELECT MIN(name) FROM card)",
            (bytes(edited),),
        )
    db.close()
    code, report = _doctor(root, MeaningEmbedder())
    assert code == 1 and not report["store"]["ok"] and report["store"]["problems"]
    assert "hql index build" in report["store"]["problems"][-1]
    # the store refuses to be read from, so coverage says so rather than counting
    assert "hql index build" in report["coverage"]["problems"][0]
    assert report["cross_language"]["ok"]


def test_the_command_line_prints_json_and_no_traceback_without_a_model(root: Path) -> None:
    environment = {**os.environ, "PYTHONPATH": str(Path(hql.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-m", "hql", "--vault", str(root), "--format", "json", "index", "doctor"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert done.returncode == 1  # no [semantics.embedder]: the languages cannot be checked
    assert report["store"]["ok"] and not report["cross_language"]["ok"]
    assert report["cross_language"]["problems"]
