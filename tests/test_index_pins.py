"""Pinned vectors: swapped or edited vectors are refused on every read and by `verify`.

The vault is a few hundred notes in folders; the index is a real SQLite file edited
with sqlite3 the way a careless script (or an attacker) would, and the refusals are
checked through `hql.run`, `hql index verify` and a real `hql` process.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from standin_embedder import standin_vector

import hql
from hql.index.commands import build_command, verify_command
from hql.index.reader import clear_cache
from hql.vault import Vault

TOML = '[semantics]\nindex = ".hql/index.sqlite"\n'
QUESTION = "penguins swim underwater"
TOPICS = ("owls hunt at night", "penguins swim underwater", "weavers weave nests", "ducks dabble")


class BagEmbedder:
    model_id, revision = "bag", "1"

    def embed_passages(self, texts):
        return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

    embed_queries = embed_passages


def _write_vault(root: Path) -> None:
    """240 notes in an Obsidian layout; some long enough to be cut into several sections."""
    (root / ".obsidian").mkdir(parents=True)
    (root / "hql.toml").write_text(TOML, encoding="utf-8")
    for number in range(240):
        folder = root / ("Birds", "Projects", "Daily")[number % 3]
        folder.mkdir(exist_ok=True)
        topic = TOPICS[number % len(TOPICS)]
        parts = [f"---\ntags: [note{number % 7}]\n---\n# Note {number}\n\n{topic} {number}.\n"]
        if number % 5 == 0:
            parts += [
                f"\n## Part {part}\n\n" + f"{topic} in detail {part}. " * 120 for part in range(3)
            ]
        (folder / f"Note {number:03d}.md").write_text("".join(parts), encoding="utf-8")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pins") / "garden"
    _write_vault(root)
    code, text = build_command(_open(root), queries=[QUESTION], embedder=BagEmbedder())
    assert code == 0, text
    return root


@pytest.fixture
def vault_root(built: Path, tmp_path: Path) -> Path:
    """A fresh copy of the built vault for each test (so one's tampering cannot leak)."""
    import shutil

    root = tmp_path / "garden"
    shutil.copytree(built, root)
    clear_cache()
    return root


def _open(root: Path) -> Vault:
    return Vault.open(root, use_cache=False)


def _index(root: Path) -> Path:
    return root / ".hql/index.sqlite"


def _ask(root: Path) -> hql.Outcome:
    return hql.run(f'import semantic\ncards | semantic("{QUESTION}") | take(5)', vault=_open(root))


def _swap(root: Path, first: str, second: str) -> None:
    """Exchange two cards' vectors, their own and their sections', inside the file."""
    db = sqlite3.connect(_index(root))
    with db:
        cards = dict(
            db.execute("SELECT name, embedding FROM card WHERE name IN (?, ?)", (first, second))
        )
        sections = {
            name: db.execute(
                "SELECT ordinal, embedding FROM section WHERE card = ? ORDER BY ordinal", (name,)
            ).fetchall()
            for name in (first, second)
        }
        for name, other in ((first, second), (second, first)):
            db.execute("UPDATE card SET embedding = ? WHERE name = ?", (cards[other], name))
            db.execute("DELETE FROM section WHERE card = ?", (name,))
            for ordinal, blob in sections[other]:
                db.execute(
                    "INSERT INTO section (card, ordinal, heading, line_start, line_end, embedding) "
                    "VALUES (?, ?, '[]', 1, 1, ?)",
                    (name, ordinal, blob),
                )
    db.close()


def _edit_one_float(root: Path, card: str) -> None:
    """Nudge one component of one section's vector: still a unit vector within 1e-3."""
    db = sqlite3.connect(_index(root))
    with db:
        ordinal, blob = db.execute(
            "SELECT ordinal, embedding FROM section WHERE card = ? ORDER BY ordinal", (card,)
        ).fetchone()
        data = bytearray(blob)
        (value,) = struct.unpack_from("<f", data, 8)
        struct.pack_into("<f", data, 8, value + 1e-4)
        db.execute(
            "UPDATE section SET embedding = ? WHERE card = ? AND ordinal = ?",
            (bytes(data), card, ordinal),
        )
    db.close()


def _names(root: Path, ranked_first: int = 2) -> list[str]:
    outcome = _ask(root)
    assert not outcome.failed, outcome.render_reports()
    return [hit.card.name for hit in outcome.value][:ranked_first]


def test_an_untouched_index_answers_and_verifies(vault_root: Path) -> None:
    assert _names(vault_root)
    code, text = verify_command(_open(vault_root))
    assert code == 0, text
    db = sqlite3.connect(_index(vault_root))
    manifest = dict(db.execute("SELECT key, value FROM manifest"))
    pinned = db.execute("SELECT count(*) FROM pin WHERE kind = 'card'").fetchone()[0]
    assert manifest["vectors"].startswith("sha256:") and pinned == 240
    assert int(manifest["sections"]) > 240  # long notes have several sections


def test_two_swapped_cards_are_refused_on_read_and_by_verify(vault_root: Path) -> None:
    first, second = _names(vault_root)
    _swap(vault_root, first, second)
    outcome = _ask(vault_root)
    assert outcome.failed
    reports = outcome.render_reports()
    assert f"`{first}`" in reports and f"`{second}`" in reports
    assert "hql index build" in reports and "Traceback" not in reports
    code, text = verify_command(_open(vault_root))
    assert code == 1
    assert f"`{first}`" in text and f"`{second}`" in text and "hql index build" in text


def test_swapped_vectors_are_refused_by_hybrid_and_fuse_too(vault_root: Path) -> None:
    """The rankers that read the index through another step refuse as semantic does."""
    first, second = _names(vault_root)
    _swap(vault_root, first, second)
    for program in (
        f'import hybrid\ncards | hybrid("{QUESTION}") | take(3)',
        f'import bm25\nimport semantic\nfuse(cards | bm25("{QUESTION}"), '
        f'cards | semantic("{QUESTION}")) | take(3)',
    ):
        outcome = hql.run(program, vault=_open(vault_root))
        assert outcome.failed, program
        reports = outcome.render_reports()
        assert f"`{first}`" in reports and "hql index build" in reports, reports


def test_one_edited_float_is_refused_on_read_and_by_verify(vault_root: Path) -> None:
    (card,) = _names(vault_root, 1)
    _edit_one_float(vault_root, card)
    outcome = _ask(vault_root)
    assert outcome.failed and f"`{card}`" in outcome.render_reports()
    code, text = verify_command(_open(vault_root))
    assert code == 1 and f"`{card}`" in text
    assert text.startswith("1 card whose vectors changed") and text.count("`Note") == 1


def test_an_edited_stored_question_is_refused(vault_root: Path) -> None:
    db = sqlite3.connect(_index(vault_root))
    with db:
        (blob,) = db.execute("SELECT embedding FROM query WHERE text = ?", (QUESTION,)).fetchone()
        other = np.frombuffer(blob, dtype="<f4")[::-1].copy()  # same norm, other direction
        db.execute("UPDATE query SET embedding = ? WHERE text = ?", (other.tobytes(), QUESTION))
    db.close()
    outcome = _ask(vault_root)
    assert outcome.failed and QUESTION in outcome.render_reports()
    code, text = verify_command(_open(vault_root))
    assert code == 1 and QUESTION in text


def test_a_removed_manifest_or_card_is_refused(vault_root: Path) -> None:
    db = sqlite3.connect(_index(vault_root))
    with db:
        db.execute("DELETE FROM manifest")
    db.close()
    assert _ask(vault_root).failed
    assert verify_command(_open(vault_root))[0] == 1


def test_a_rebuild_embeds_the_changed_cards_again(vault_root: Path) -> None:
    expected = _names(vault_root)
    first, second = expected
    _swap(vault_root, first, second)
    code, text = build_command(_open(vault_root), embedder=BagEmbedder())
    assert code == 0, text
    assert "embedded 2 cards, kept 238 unchanged" in text
    assert _names(vault_root) == expected
    assert verify_command(_open(vault_root))[0] == 0


def test_the_command_line_refuses_with_one_report(vault_root: Path) -> None:
    first, second = _names(vault_root)
    _swap(vault_root, first, second)
    environment = {**os.environ, "PYTHONPATH": str(Path(hql.__file__).parents[1])}
    command = [sys.executable, "-m", "hql", "--vault", str(vault_root)]
    asked = subprocess.run(
        [*command, "eval", f'import semantic\ncards | semantic("{QUESTION}") | take(3)'],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert asked.returncode == 1
    assert "hql index build" in asked.stderr and "Traceback" not in asked.stderr
    assert asked.stderr.count("does not hold the vectors its build pinned") == 1
    verified = subprocess.run(
        [*command, "index", "verify"], capture_output=True, text=True, env=environment, timeout=120
    )
    assert verified.returncode == 1
    assert f"`{first}`" in verified.stdout + verified.stderr
