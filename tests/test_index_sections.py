"""Sections as the unit of meaning: splitting, the section table, best-section scores and hits.

The embedder here counts words as tokens and embeds a hashed bag of words, so
which section a question lands in is known from the words alone.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from standin_embedder import standin_vector
from store_parity import StoreVaults, exact, on_every_store

from hql.index.commands import build_command, inspect_command, verify_command
from hql.index.sections import body_start_line, split_card
from hql.index.semantic import semantic_ranking
from hql.vault import Vault

TOML = '[semantics]\nindex = ".hql/index.sqlite"\n'


class WordEmbedder:
    """Bag-of-words vectors; one token a word, a window of 40 tokens."""

    model_id, revision = "words", "1"
    max_tokens = 40

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def count_tokens(self, texts):
        return [len(text.split()) + 2 for text in texts]

    def embed_passages(self, texts):
        self.embedded.extend(texts)
        return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

    embed_queries = embed_passages


def filler(topic: str, count: int) -> str:
    return " ".join(f"{topic}{n % 7}" for n in range(count))


LONG_NOTE = f"""---
title: Sync
tags: [app]
---
# Sync

Sync keeps vaults alike on every device.

## Storage

{filler("disk", 12)} notes are stored on disk in a folder you choose.

### Backups

{filler("copy", 12)} backups are copies kept for thirty days.

```
# not a heading inside code
```

## Conflicts

{filler("merge", 30)}
{filler("merge", 30)}
when two devices edit one note the newer edit wins and the older is kept as a conflict file.
"""

SHORT_NOTE = "---\ntitle: Owl\n---\nOwls hunt at night.\n"


def write(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hql.toml").write_text(TOML)
    (root / "sync.md").write_text(LONG_NOTE)
    (root / "owl.md").write_text(SHORT_NOTE)


def write_notes(root: Path, toml: str = TOML) -> None:
    write(root)
    (root / "hql.toml").write_text(toml)


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    write(tmp_path / "notes")
    opened = Vault.open(tmp_path / "notes", use_cache=False)
    code, text = build_command(
        opened, queries=["backups copies thirty days"], embedder=WordEmbedder()
    )
    assert code == 0, text
    return opened


@pytest.fixture
def vaults(tmp_path: Path, store: str):
    """The notes in `store` (and, for Qdrant, in a SQLite twin every answer is checked against)."""
    made = StoreVaults.make(
        store, tmp_path, write_notes, TOML, collection="notes-words", name="notes"
    )
    made.build(queries=["backups copies thirty days"], embedder=WordEmbedder)
    yield made
    made.close()


def counter(texts):
    return [len(text.split()) + 2 for text in texts]


def test_a_short_note_stays_whole_with_its_retrieval_text() -> None:
    text = "Owl Owls hunt at night.\n"
    sections = split_card("Owl", text, "Owls hunt at night.\n", 4, 40, counter)
    assert [(s.heading, s.line_start, s.line_end, s.text) for s in sections] == [((), 4, 5, text)]


def test_a_long_note_is_split_at_headings_with_paths_and_file_lines() -> None:
    body = LONG_NOTE.split("---\n", 2)[2]
    first = body_start_line(LONG_NOTE, body)
    assert first == 5
    sections = split_card("Sync", "Sync app " + body, body, first, 40, counter)
    headings = [s.heading for s in sections]
    lines = LONG_NOTE.split("\n")
    # `# Sync` and its one line are too small to stand alone: they join the Storage section.
    assert headings[0] == ("Sync", "Storage") and lines[sections[0].line_start - 1] == "# Sync"
    # The code block's `#` line is not a heading; the long Conflicts section is cut in pieces.
    assert headings.count(("Sync", "Storage", "Backups")) == 1
    assert headings.count(("Sync", "Conflicts")) >= 2
    assert set(headings) == {
        ("Sync", "Storage"),
        ("Sync", "Storage", "Backups"),
        ("Sync", "Conflicts"),
    }
    backups = sections[headings.index(("Sync", "Storage", "Backups"))]
    assert lines[backups.line_start - 1] == "### Backups"
    assert "thirty days" in "\n".join(lines[backups.line_start - 1 : backups.line_end])
    # Each section says what it is about: the title (or header strings) and heading path first.
    assert backups.text.startswith("Sync > Storage > Backups\n")
    assert sections[0].text.startswith("Sync app")
    for section in sections:
        assert counter([section.text])[0] <= 40 + 2 * 3  # the window, less a word-count estimate
    # Pieces of one section overlap a little, so a sentence cut in two is read whole once.
    conflicts = [s for s in sections if s.heading == ("Sync", "Conflicts")]
    assert conflicts[-1].text.endswith("kept as a conflict file.")
    assert conflicts[0].line_start < conflicts[-1].line_start


def test_a_paragraph_longer_than_the_window_is_cut_in_overlapping_runs() -> None:
    words = [f"w{n}" for n in range(200)]
    body = " ".join(words) + "\n"
    sections = split_card("T", "T " + body, body, 1, 80, counter)
    assert len(sections) >= 3
    runs = [section.text.split("\n", 1)[1].split() for section in sections]
    assert [word for word in runs[0] if word in runs[1]]  # consecutive runs share words
    assert set().union(*runs) == set(words)  # and together hold every word
    assert all(counter([section.text])[0] <= 80 for section in sections)


@on_every_store
def test_the_best_section_scores_the_card_and_is_named_in_the_hit(vaults: StoreVaults) -> None:
    ranking = vaults.ranking("backups copies thirty days")
    assert ranking.hits[0][0] == "sync"
    section = ranking.sections[0]
    assert section is not None and section.heading == ("Sync", "Storage", "Backups")
    lines = LONG_NOTE.split("\n")
    assert lines[section.line_start - 1] == "### Backups"
    # The short note is one section, the whole note.
    owl = ranking.sections[[name for name, _ in ranking.hits].index("owl")]
    assert owl is not None and owl.heading == () and owl.sections == 1


# SQLite only, the next three: they read or change the index file's tables.
def test_the_card_row_keeps_the_references_layout(vault: Vault) -> None:
    index = vault.root / ".hql/index.sqlite"
    db = sqlite3.connect(index)
    card_rows = dict(db.execute("SELECT name, embedding FROM card").fetchall())
    sections = db.execute(
        "SELECT card, ordinal, heading, line_start, line_end, embedding FROM section "
        "ORDER BY card, ordinal"
    ).fetchall()
    db.close()
    assert set(card_rows) == {"owl", "sync"}
    sync = [row for row in sections if row[0] == "sync"]
    assert [row[1] for row in sync] == list(range(len(sync))) and len(sync) >= 4
    assert ["Sync", "Storage", "Backups"] in [json.loads(row[2]) for row in sync]
    # The card's own vector: the normalised mean of its sections' vectors.
    mean = np.mean([np.frombuffer(row[5], dtype="<f4") for row in sync], axis=0)
    card = np.frombuffer(card_rows["sync"], dtype="<f4")
    assert np.allclose(card, mean / np.linalg.norm(mean), atol=1e-6)
    owl = [row for row in sections if row[0] == "owl"]
    assert len(owl) == 1 and owl[0][5] == card_rows["owl"]


def test_an_index_without_sections_still_ranks_card_by_card(vault: Vault) -> None:
    db = sqlite3.connect(vault.root / ".hql/index.sqlite")
    with db:  # the reference's layout: no sections, no pins
        for table in ("section", "pin", "manifest"):
            db.execute(f"DROP TABLE {table}")
    db.close()
    ranking = semantic_ranking(vault, "backups copies thirty days")
    assert {name for name, _ in ranking.hits} == {"owl", "sync"}
    assert ranking.sections == [None, None]
    code, text = inspect_command(vault)
    assert code == 0 and "sections    none" in text


def test_verify_and_inspect_know_sections(vault: Vault) -> None:
    assert verify_command(vault)[0] == 0
    code, text = inspect_command(vault)
    assert code == 0
    count = (
        sqlite3.connect(vault.root / ".hql/index.sqlite")
        .execute("SELECT count(*) FROM section")
        .fetchone()[0]
    )
    assert f"sections    {count} (of 2 cards)" in text
    db = sqlite3.connect(vault.root / ".hql/index.sqlite")
    with db:
        db.execute("DELETE FROM section WHERE card = 'owl'")
        db.execute("INSERT INTO section VALUES ('gone', 0, '[]', 1, 1, zeroblob(256))")
    db.close()
    code, text = verify_command(vault)
    assert code == 1
    assert "1 card without sections: `owl`" in text
    assert "sections of 1 card not in the index: `gone`" in text


@on_every_store
def test_a_rebuild_keeps_unchanged_cards_sections(vaults: StoreVaults) -> None:
    vaults.write("owl.md", SHORT_NOTE + "Owls are quiet.\n")
    for embedder in vaults.build(embedder=WordEmbedder):
        assert embedder.embedded == ["Owl Owls hunt at night.\nOwls are quiet.\n"]
    assert vaults.ranking("backups copies thirty days").sections[0] is not None


@on_every_store
def test_a_hit_names_its_section_in_details_explain_and_json(vaults: StoreVaults) -> None:
    from hql.api import Session
    from hql.explain import explain

    program = 'import semantic\ncards | semantic("backups copies thirty days") | take(1)'
    outcome = vaults.run(program)
    hit = outcome.value.hits[0]
    assert hit.detail["section"]["heading"] == ["Sync", "Storage", "Backups"]
    data = outcome.to_json()["value"]
    assert data["hits"][0]["section"]["heading"] == ["Sync", "Storage", "Backups"]
    assert data["hits"][0]["section"]["lines"] == hit.detail["section"]["lines"]
    text, _, failed = explain(Session(vaults.open()), exact(program), "<test>")
    assert not failed and "§ Sync > Storage > Backups (lines" in text


@on_every_store
def test_a_hybrid_hit_names_the_section_its_meaning_matched(vaults: StoreVaults) -> None:
    program = 'import hybrid\ncards | hybrid("backups copies thirty days") | take(1)'
    outcome = vaults.run(program)
    hit = outcome.value.hits[0]
    assert hit.card.name == "sync"
    assert hit.detail["section"]["heading"] == ["Sync", "Storage", "Backups"]
    assert len(hit.detail["inputs"]) == 2


def dense_counter(texts):
    """Words with a digit take three tokens (numbers, units), others one; two specials."""
    return [sum(3 if any(c.isdigit() for c in w) else 1 for w in t.split()) + 2 for t in texts]


def test_a_line_denser_at_its_end_is_cut_in_even_runs_that_each_fit_the_window() -> None:
    plain = [("ab", "cd", "ef", "gh", "ij")[n % 5] for n in range(60)]
    words = plain + [f"n{n}" for n in range(40)]
    body = " ".join(words) + "\n"
    sections = split_card("T", "T\n" + body, body, 1, 100, dense_counter)
    sizes = [dense_counter([section.text])[0] for section in sections]
    assert len(sections) == 2  # 180 tokens; runs guessed by words ran over the window
    assert all(size <= 100 for size in sizes)
    assert min(sizes) * 2 > max(sizes)  # like lengths, not a full run and a scrap
    runs = [section.text.split("\n", 1)[1].split() for section in sections]
    assert set().union(*runs) == set(words)
