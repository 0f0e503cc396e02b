"""A vault opened from its catalogue answers `cards | bm25(q) | take(k)` building only the hits.

Every answer is compared with the same program on a load that reads every file
(`use_cache=False`) and with the planner off: values, types, printing, hit
details and reports must agree, and a changed vault must be seen.
"""

from __future__ import annotations

import gc
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from kept_stat import rewrite_keeping_stat

import hql
from hql.api import Outcome, Session
from hql.search.terms import TERMS_NAME
from hql.values import Ranking
from hql.vault import Vault, catalog
from hql.vault.catalog import CATALOG_FILE

ROOT = Path(__file__).resolve().parents[1]
GARDEN = ROOT / "bench" / "data" / "garden"  # 440 notes in folders, with tags and links
WEB_AUTH = ROOT / "vaults" / "web-auth"  # relation cards among them
OBSIDIAN = Path(__file__).parent / "fixtures" / "obsidian"

QUESTIONS = [
    "ocean temperature along the Brazilian coast",
    "how does a client prove who it is with a token",
    "relevance of search results",
    "coral reef",
]

PROGRAMS = [
    "import bm25\ncards | bm25($q) | take(5)",
    "import bm25\ncards | bm25($q) | take(1)",
    "import bm25\ncards | bm25($q) | take(0)",
    "import bm25\ncards | bm25($q) | take(3) | explain",
    "import bm25\ncards | bm25($q) | take(8) | relevant",
    "import bm25\ncards | bm25($q) | take(4) | map(h => h.card)",
    "import bm25\ncards | bm25($q) | take(3) | map(h => [h.score, h.card.name, h.card.kind, "
    "h.card.title, h.card.metadata, h.card.tags, h.card.folder, h.card.path])",
    "import bm25\ncards | bm25($q) | take(3) | map(h => [h.card.outlinks, h.card.inlinks])",
    "import bm25\n[cards | bm25($q) | take(2), cards | bm25($q) | take(4)]",
    "import bm25\nr = cards | bm25($q) | take(6)\n[r | count, cards | count, r | map(h => h.retrieval)]",
    'import bm25\ncards | filter(c => c.folder == "Ocean/Papers") | bm25($q) | take(5)',
    'import bm25\ncards | filter(c => in_folder(c, "/web-auth/")) | bm25($q) | take(4)',
    'import bm25\ncards | filter(c => in_folder(c, "Reading") and c.folder == "Reading") '
    "| bm25($q) | take(3) | explain",
    'import bm25\ncards | filter(c => c.folder == "nowhere") | bm25($q) | take(3)',
]
# Filters the catalogue cannot answer: every card is built, the answers agree all the same.
FILTERED = [
    'import bm25\ncards | filter(c => c.folder != "Reading") | bm25($q) | take(5)',
    'import bm25\ncards | filter(c => has_tag(c, "ocean")) | bm25($q) | take(5)',
    'import bm25\ncards | filter(c => in_folder(c, "Ocean") or c.folder == "") | bm25($q) | take(5)',
    'import bm25\ncards | filter(c => in_folder(c, "Ocean")) | bm25($q) | relevant',
]


def _copy(tmp_path: Path, source: Path, name: str = "vault") -> Path:
    target = tmp_path / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".hql"))
    return target


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """The garden with the web-auth vault inside it and two notes whose names clash."""
    root = _copy(tmp_path, GARDEN)
    shutil.copytree(WEB_AUTH, root / "web-auth", ignore=shutil.ignore_patterns(".hql"))
    (root / "Ocean" / "oauth.md").write_text("# OAuth at sea\n\nA token on a ship.\n")
    return root


def _catalogued(root: Path) -> int:
    """Open once reading every file (the catalogue and the bm25 store are written)."""
    vault = Vault.open(root)
    hql.run('import bm25\ncards | bm25("x") | take(1)', vault=vault)
    return len(vault.cards)


def _run(vault: Vault, text: str, q: str, optimize: bool = True) -> Outcome:
    return Session(vault, optimize=optimize).run(text, params={"q": q})


def _assert_same(one: Outcome, other: Outcome) -> None:
    assert one.failed == other.failed
    assert str(one.type) == str(other.type)
    assert one.render_reports() == other.render_reports()
    assert one.text() == other.text()
    assert one.to_json() == other.to_json()
    if isinstance(other.value, Ranking):
        assert isinstance(one.value, Ranking)
        assert [h.detail for h in one.value] == [h.detail for h in other.value]
        assert one.value.retrieval == other.value.retrieval


@pytest.mark.parametrize("text", PROGRAMS)
def test_a_catalogued_vault_answers_as_a_full_load(
    mixed: Path, built: list[str], text: str
) -> None:
    total = _catalogued(mixed)
    assert total > 400
    for q in QUESTIONS:
        built.clear()
        lazy = Vault.open(mixed)
        answer = _run(lazy, text, q)
        assert not answer.failed, answer.render_reports()
        if "outlinks" not in text:  # links need the whole vault's table
            assert len(built) <= 12 and lazy._cards is None, (q, len(built))
        full = Vault.open(mixed, use_cache=False)
        _assert_same(answer, _run(full, text, q))
        _assert_same(answer, _run(Vault.open(mixed), text, q, optimize=False))


@pytest.mark.parametrize("text", FILTERED)
def test_other_filters_before_a_ranker_answer_as_a_full_load(mixed: Path, text: str) -> None:
    _catalogued(mixed)
    for q in QUESTIONS:
        answer = _run(Vault.open(mixed), text, q)
        assert not answer.failed, answer.render_reports()
        _assert_same(answer, _run(Vault.open(mixed, use_cache=False), text, q))
        _assert_same(answer, _run(Vault.open(mixed), text, q, optimize=False))


def test_a_hit_reads_only_the_blocks_of_search_columns_that_hold_it(
    tmp_path: Path, built: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "many"
    for n in range(1500):  # six blocks of search columns
        folder = root / f"part{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        topic = "tidal flats" if n % 500 == 3 else f"note number {n}"
        (folder / f"note {n:04d}.md").write_text(f"# {topic.title()}\n\nAbout {topic}.\n")
    _catalogued(root)
    _run(Vault.open(root), PROGRAMS[0], "x")  # matches the store's slots by key, once
    read: list[int] = []
    real = catalog.Catalog.search_blocks
    monkeypatch.setattr(
        catalog.Catalog,
        "search_blocks",
        lambda self, numbers: read.extend(numbers) or real(self, numbers),
    )
    built.clear()
    vault = Vault.open(root)
    answer = _run(vault, PROGRAMS[0], "tidal flats")
    assert vault._cards is None and len(built) <= 3
    assert 0 < len(read) <= 3 and len(set(read)) == len(read)  # each block read once, at most
    _assert_same(answer, _run(Vault.open(root, use_cache=False), PROGRAMS[0], "tidal flats"))


def test_a_relation_card_built_alone_is_one(tmp_path: Path, built: list[str]) -> None:
    root = _copy(tmp_path, WEB_AUTH)
    _catalogued(root)
    text = "import bm25\ncards | bm25($q) | take(3) | map(h => [h.card.name, h.card.kind])"
    for q in ("oauth defines bearer", "relation between token and client"):
        built.clear()
        vault = Vault.open(root)
        answer = _run(vault, text, q)
        assert vault._cards is None and 0 < len(built) <= 3
        _assert_same(answer, _run(Vault.open(root, use_cache=False), text, q))
    kinds = [kind for _, kind in _run(Vault.open(root), text, "defines").to_json()["value"]]
    assert "RelationCard" in kinds


def test_a_hit_built_alone_is_the_vaults_own_card_later(mixed: Path, built: list[str]) -> None:
    _catalogued(mixed)
    built.clear()
    vault = Vault.open(mixed)
    hits = _run(vault, PROGRAMS[0], QUESTIONS[1]).value
    assert len(built) == len(hits) and vault._cards is None
    for hit in hits:
        assert hit.card is vault.card(hit.card.name)  # the whole load reuses the object
    assert len(built) == len(vault.cards) + len(hits)
    again = _run(vault, PROGRAMS[0], QUESTIONS[1]).value
    assert [h.card for h in again] == [h.card for h in hits]
    assert all(a.card is b.card for a, b in zip(again, hits, strict=True))


def test_the_index_opens_without_cards_only_when_its_store_is_there(
    mixed: Path, built: list[str]
) -> None:
    Vault.open(mixed)  # catalogue written, no bm25 store yet
    built.clear()
    vault = Vault.open(mixed)
    answer = _run(vault, PROGRAMS[0], QUESTIONS[0])
    # Every card analysed, each read from its catalogue row with no card built: only the
    # hits are built, as they are handed out (the vault has not built its cards).
    assert vault._cards is None
    assert 0 < len(built) == len(set(built)) == len(answer.value)
    _assert_same(answer, _run(Vault.open(mixed, use_cache=False), PROGRAMS[0], QUESTIONS[0]))


@pytest.mark.parametrize("vault_of", ["mixed", "obsidian"])
def test_a_first_index_reads_the_texts_from_the_catalogue_as_the_cards_give_them(
    mixed: Path, tmp_path: Path, built: list[str], vault_of: str
) -> None:
    root = mixed if vault_of == "mixed" else _copy(tmp_path, OBSIDIAN, "obsidian")
    Vault.open(root)  # catalogue written, no bm25 store yet
    for q in QUESTIONS:
        (root / ".hql" / "bm25.v1.bin").unlink(missing_ok=True)
        (root / ".hql" / "bm25.v1.terms.sqlite").unlink(missing_ok=True)
        built.clear()
        vault = Vault.open(root)
        answer = _run(vault, PROGRAMS[0], q)
        assert vault._cards is None and len(built) == len(answer.value)
        _assert_same(answer, _run(Vault.open(root, use_cache=False), PROGRAMS[0], q))


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE files SET payload = x'00' WHERE rowid IN (SELECT rowid FROM files LIMIT 200)",
        "UPDATE files SET digest = x'00' WHERE rowid = (SELECT max(rowid) FROM files)",
        "UPDATE files SET mtime_ns = mtime_ns + 1 WHERE rowid = (SELECT min(rowid) FROM files)",
        "DELETE FROM files WHERE rowid = (SELECT max(rowid) FROM files)",
    ],
)
def test_a_first_index_reading_a_damaged_row_builds_the_cards(
    mixed: Path, built: list[str], damage: str
) -> None:
    Vault.open(mixed)  # catalogue written, no bm25 store yet
    _search_rows(mixed, damage)
    built.clear()
    vault = Vault.open(mixed)
    answer = _run(vault, PROGRAMS[0], QUESTIONS[2])
    assert len(built) >= len(vault.cards)  # the row is a miss: the cards are built
    _assert_same(answer, _run(Vault.open(mixed, use_cache=False), PROGRAMS[0], QUESTIONS[2]))


def test_edited_added_and_removed_cards_are_seen(mixed: Path, built: list[str]) -> None:
    _catalogued(mixed)
    text = "import bm25\ncards | bm25($q) | take(3) | map(h => h.card.path)"
    first = _run(Vault.open(mixed), text, QUESTIONS[1]).to_json()["value"]
    note = next(mixed.rglob("*.md"))
    edited = note.read_text(encoding="utf-8") + "\nzanzibarite quokka\n"
    note.write_text(edited, encoding="utf-8")
    os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns + 5_000_000_000))
    (mixed / "Ocean" / "new note.md").write_text("# Quokka\n\nA quokka, twice: quokka.\n")
    Path(first[0]).unlink()
    for q in ("zanzibarite", "quokka", QUESTIONS[1]):
        answer = _run(Vault.open(mixed), text, q)
        _assert_same(answer, _run(Vault.open(mixed, use_cache=False), text, q))
    assert _run(Vault.open(mixed), text, "zanzibarite").to_json()["value"] == [str(note)]
    assert _run(Vault.open(mixed), text, "quokka").to_json()["value"][0].endswith("new note.md")
    assert first[0] not in _run(Vault.open(mixed), text, QUESTIONS[1]).to_json()["value"]
    built.clear()
    _run(Vault.open(mixed), text, "quokka")  # the refreshed catalogue opens lazily again
    assert len(built) <= 3


def test_an_edit_that_keeps_size_mtime_and_inode_is_seen(mixed: Path, built: list[str]) -> None:
    """`cp -p` over a note (only its change time moved): the listing is not reused."""
    _catalogued(mixed)
    text = "import bm25\ncards | bm25($q) | take(1) | map(h => [h.card.name, h.card.body])"
    note = mixed / "Ocean" / "oauth.md"
    rewrite_keeping_stat(note, b"on a ship", b"on a zork")
    answer = _run(Vault.open(mixed), text, "zork")
    _assert_same(answer, _run(Vault.open(mixed, use_cache=False), text, "zork"))
    assert answer.to_json()["value"] == [["oauth", "# OAuth at sea\n\nA token on a zork.\n"]]
    built.clear()
    again = _run(Vault.open(mixed), text, "zork")  # the refreshed catalogue opens lazily again
    assert again.to_json()["value"] == answer.to_json()["value"] and len(built) <= 3


def _search_rows(root: Path, statement: str, *args: Any) -> None:
    with sqlite3.connect(root / ".hql" / CATALOG_FILE) as connection:
        connection.execute(statement, args)


def test_a_catalogue_without_search_columns_loads_whole_then_writes_them(
    mixed: Path, built: list[str]
) -> None:
    _catalogued(mixed)
    _search_rows(mixed, "DROP TABLE search_head")  # as a catalogue from before them
    _search_rows(mixed, "DROP TABLE search_blocks")
    _search_rows(mixed, "CREATE TABLE search (id INTEGER PRIMARY KEY, key, columns, digest)")
    built.clear()
    answer = _run(Vault.open(mixed), PROGRAMS[0], QUESTIONS[2])
    assert len(built) > 400
    _assert_same(answer, _run(Vault.open(mixed, use_cache=False), PROGRAMS[0], QUESTIONS[2]))
    built.clear()
    _assert_same(_run(Vault.open(mixed), PROGRAMS[0], QUESTIONS[2]), answer)
    assert len(built) <= 5


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE search_blocks SET columns = substr(columns, 1, 40) || x'00' || substr(columns, 42)",
        "UPDATE search_blocks SET digest = x'00' WHERE block = 1",
        "DELETE FROM search_blocks WHERE block = 0",
        "UPDATE search_head SET blocks = substr(blocks, 2)",
        "UPDATE search_head SET digest = x'00'",
        "UPDATE search_head SET key = x'00'",
        "UPDATE search_head SET cards = cards + 1",
        "UPDATE files SET payload = x'00' WHERE rowid IN (SELECT rowid FROM files LIMIT 200)",
    ],
)
def test_damaged_search_columns_or_rows_mean_a_whole_load(
    mixed: Path, built: list[str], damage: str
) -> None:
    _catalogued(mixed)
    _search_rows(mixed, damage)
    for q in QUESTIONS:
        answer = _run(Vault.open(mixed), PROGRAMS[6], q)
        _assert_same(answer, _run(Vault.open(mixed, use_cache=False), PROGRAMS[6], q))


def test_an_obsidian_vault_answers_as_a_full_load(tmp_path: Path, built: list[str]) -> None:
    root = _copy(tmp_path, OBSIDIAN)
    assert (root / ".obsidian").is_dir()
    _catalogued(root)
    for text in (PROGRAMS[0], PROGRAMS[6]):
        for q in ("project meeting notes", "paper on graphs", "daily"):
            built.clear()
            vault = Vault.open(root)
            answer = _run(vault, text, q)
            assert vault._cards is None and len(built) <= 5
            _assert_same(answer, _run(Vault.open(root, use_cache=False), text, q))


def test_explain_names_the_rewrite(mixed: Path) -> None:
    from hql.explain import explain

    text, _, failed = explain(
        Session(Vault.open(mixed)), 'import bm25\ncards | bm25("token") | take(2)', "-"
    )
    assert not failed
    assert "lazy-cards: bm25 builds only the cards it hands on" in text


def test_threads_sharing_a_catalogued_vault_agree(mixed: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    _catalogued(mixed)
    text = (
        "import bm25\ncards | bm25($q) | take(4) | map(h => [h.card.name, h.score, h.card.title])"
    )
    expected = {q: _run(Vault.open(mixed, use_cache=False), text, q).text() for q in QUESTIONS}
    vault = Vault.open(mixed)

    def ask(q: str) -> str:
        return _run(vault, text, q).text()

    def names(_: str) -> int:
        return len(vault.cards)  # one thread makes the vault build every card meanwhile

    with ThreadPoolExecutor(6) as pool:
        asked = [pool.submit(ask, q) for q in QUESTIONS * 4]
        pool.submit(names, "")
        answers = [future.result() for future in asked]
    assert answers == [expected[q] for q in QUESTIONS * 4]
    hits = _run(vault, "import bm25\ncards | bm25($q) | take(4)", QUESTIONS[0]).value
    assert all(hit.card is vault.card(hit.card.name) for hit in hits)


def test_folder_mask_fires_only_on_folder_conditions_before_a_cut_ranker(mixed: Path) -> None:
    session = Session(Vault.open(mixed))
    mask = (
        "folder-mask: filter keeps cards by their paths and bm25 builds only the cards it hands on"
    )
    for text, fires in (
        ('cards | filter(c => c.folder == "x") | bm25("q") | take(2)', True),
        (
            'cards | filter(c => in_folder(c, "x") and c.folder == "x/y") | bm25("q") | take(2)',
            True,
        ),
        ('cards | filter(c => in_folder(c, "x")) | bm25("q")', False),  # no take: every hit
        ('cards | filter(c => has_tag(c, "x")) | bm25("q") | take(2)', False),
        ('cards | filter(c => c.folder != "x") | bm25("q") | take(2)', False),
        ('[[oauth]] | filter(c => c.folder == "x") | bm25("q") | take(2)', False),
        ('cards | filter(c => c.folder == "x") | take(2)', False),
    ):
        _, plan, _ = session.check("import bm25\n" + text)
        assert plan is not None and (mask in plan.rewrites) == fires, text


def test_a_file_changed_after_opening_is_read_as_it_is_then(mixed: Path) -> None:
    _catalogued(mixed)
    text = "import bm25\ncards | bm25($q) | take(3) | map(h => [h.card.name, h.card.body])"
    before = _run(Vault.open(mixed), text, QUESTIONS[1]).to_json()["value"]
    vault = Vault.open(mixed)  # opened from the catalogue, no card built yet
    top = next(mixed.rglob(f"{before[0][0]}.md"))
    top.write_text(top.read_text(encoding="utf-8") + "\nAn added line.\n", encoding="utf-8")
    os.utime(top, ns=(top.stat().st_atime_ns, top.stat().st_mtime_ns + 5_000_000_000))
    Vault.open(mixed)  # another reader refreshes the catalogue: the old row is gone
    answer = _run(vault, text, QUESTIONS[1])
    assert not answer.failed, answer.render_reports()
    names = [name for name, _ in answer.to_json()["value"]]
    assert names == [name for name, _ in before]  # ranked as the vault was opened
    assert answer.to_json()["value"][0][1].endswith("An added line.\n")  # the file as it is now


TAGGED = [
    'import bm25\ncards | filter(c => has_tag(c, "paper")) | bm25($q) | take(5)',
    'import bm25\ncards | filter(c => has_tag(c, "#Reef") and in_folder(c, "Ocean")) '
    "| bm25($q) | take(3)",
    'import bm25\ncards | filter(c => has_tag(c, "sea/deep") and has_tag(c, "ocean")) '
    "| bm25($q) | take(3) | explain",
    'import bm25\ncards | filter(c => has_tag(c, "no-such-tag")) | bm25($q) | take(3)',
]


def _tagged_notes(root: Path) -> None:
    """Nested tags, in the header and inline, in two cases."""
    (root / "Ocean" / "Tagged reef.md").write_text(
        "---\ntags: [Reef/Coral, ocean]\n---\n# Tagged reef\n\nA coral token at sea, #sea/deep.\n"
    )
    (root / "Reading" / "Tagged token.md").write_text(
        "---\ntags: reef\n---\n# Tagged token\n\nHow a client proves who it is with a token.\n"
    )


@pytest.mark.parametrize("text", TAGGED)
def test_a_tag_filter_before_a_ranker_builds_the_cards_once_then_only_its_hits(
    mixed: Path, built: list[str], text: str
) -> None:
    _tagged_notes(mixed)
    total = _catalogued(mixed)
    built.clear()
    _run(Vault.open(mixed), text, QUESTIONS[0])  # works out the tags, and keeps them
    assert len(built) == total
    for q in QUESTIONS:
        built.clear()
        lazy = Vault.open(mixed)
        answer = _run(lazy, text, q)
        assert not answer.failed, answer.render_reports()
        assert len(built) <= 12 and lazy._cards is None, (q, len(built))
        _assert_same(answer, _run(Vault.open(mixed, use_cache=False), text, q))
        _assert_same(answer, _run(Vault.open(mixed), text, q, optimize=False))


def test_the_tag_column_follows_the_files_and_is_checked(mixed: Path, built: list[str]) -> None:
    _tagged_notes(mixed)
    _catalogued(mixed)
    text = TAGGED[1]
    _run(Vault.open(mixed), text, QUESTIONS[1])
    note = mixed / "Reading" / "Tagged token.md"
    note.write_text(note.read_text().replace("tags: reef", "tags: other"))  # a new listing
    answer = _run(Vault.open(mixed), text, QUESTIONS[1])
    _assert_same(answer, _run(Vault.open(mixed, use_cache=False), text, QUESTIONS[1]))
    for damage in (
        "UPDATE tags SET digest = x'00'",
        "UPDATE tags SET tags = x'00', digest = x'00'",
        "DROP TABLE tags",
    ):
        _run(Vault.open(mixed), text, QUESTIONS[0])  # the column again, if it was lost
        _search_rows(mixed, damage)
        built.clear()
        answer = _run(Vault.open(mixed), text, QUESTIONS[0])
        assert len(built) > 400, damage  # not believed: every card built, tags worked out
        _assert_same(answer, _run(Vault.open(mixed, use_cache=False), text, QUESTIONS[0]))


def test_tag_mask_fires_on_tag_and_folder_conditions_before_a_cut_ranker(mixed: Path) -> None:
    session = Session(Vault.open(mixed))
    mask = "tag-mask: filter keeps cards by their paths and tags and bm25 builds only the cards it hands on"
    for text, fires in (
        ('cards | filter(c => has_tag(c, "x")) | bm25("q") | take(2)', True),
        ('cards | filter(c => has_tag(c, "x") and c.folder == "y") | bm25("q") | take(2)', True),
        ('cards | filter(c => has_tag(c, "x") or c.folder == "y") | bm25("q") | take(2)', False),
        ('cards | filter(c => has_tag(c, "#")) | bm25("q") | take(2)', False),  # no tag at all
        ('cards | filter(c => has_tag(c, "x")) | bm25("q")', False),
        ('cards | filter(c => c.metadata.status == "x") | bm25("q") | take(2)', False),
    ):
        _, plan, _ = session.check("import bm25\n" + text)
        assert plan is not None and (mask in plan.rewrites) == fires, text


def test_a_card_is_found_by_name_reading_only_the_blocks_a_bisection_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "garden"
    shutil.copytree(GARDEN, root)
    assert Vault.open(root).cards  # the listing and its search columns (two blocks of 256 and more)
    vault = Vault.open(root)
    lazy = vault.lazy_cards()
    read: list[list[int]] = []
    real_read = catalog.Catalog.search_blocks

    def counted(self: catalog.Catalog, numbers: list[int]) -> Any:
        read.append(list(numbers))
        return real_read(self, numbers)

    monkeypatch.setattr(catalog.Catalog, "search_blocks", counted)
    names = sorted(card.name for card in Vault.open(root, use_cache=False).cards)
    assert len(names) > catalog.SEARCH_BLOCK
    assert lazy.position_of(names[-1]) == len(names) - 1
    assert lazy.path_of(names[-1]) == vault.card(names[-1]).relpath
    assert sum(map(len, read)) < -(-len(names) // catalog.SEARCH_BLOCK)  # not every block
    for at, name in enumerate(names):
        assert lazy.position_of(name) == at
    for absent in ("", "\0", names[0] + "\0", names[300] + "\0", names[-1] + "~", "\uffff"):
        assert lazy.position_of(absent) is None and lazy.path_of(absent) is None


@pytest.mark.parametrize("damage", [None, "UPDATE files SET digest = x'00' WHERE relpath = ?"])
def test_worker_processes_read_the_catalogue_rows_as_one_process_does(
    mixed: Path, monkeypatch: pytest.MonkeyPatch, damage: str | None, request: pytest.FixtureRequest
) -> None:
    """A first index of a catalogued vault, its batches read from their rows and analysed
    by worker processes, is the one a single process builds: the same store, the same
    answers; a row a worker cannot read as its card is read by the build itself."""
    from hql.search import bm25

    Vault.open(mixed)  # catalogue written, no bm25 store yet
    monkeypatch.setattr(bm25, "_BATCH", 64)
    store = mixed / ".hql" / bm25.STORE_NAME

    def first_index(workers: int) -> tuple[bytes, Outcome]:
        store.unlink(missing_ok=True)
        (mixed / ".hql" / TERMS_NAME).unlink(missing_ok=True)  # else it answers, no build
        if damage is not None:  # a card of the third batch
            _search_rows(mixed, damage, Vault.open(mixed).lazy_cards().path_of(names[150]))
        vault = Vault.open(mixed)
        monkeypatch.setattr(bm25, "_processors", lambda: workers)
        answer = _run(vault, PROGRAMS[0], QUESTIONS[0])
        assert (vault._cards is not None) == (damage is not None)  # a miss builds the cards
        return store.read_bytes(), answer

    names = [card.name for card in Vault.open(mixed, use_cache=False).cards]
    seen = request.getfixturevalue("worker_pools")
    alone, answer = first_index(1)
    assert not seen.pools
    shared, again = first_index(2)
    assert seen.pools and seen.pools[0] is not None  # workers did take part
    assert seen.analysed > 0  # and the build used the batches they analysed
    assert shared == alone
    _assert_same(again, answer)
    _assert_same(answer, _run(Vault.open(mixed, use_cache=False), PROGRAMS[0], QUESTIONS[0]))


def test_a_row_reader_reads_the_rows_of_the_catalogue_as_it_is(mixed: Path) -> None:
    """A batch's rows are read where its texts are (`TextRows` pickles, its `RowReader` reads
    in that process): the texts the cards give; no rows when the catalogue holds another
    parser's; a catalogue written anew since is read anew, not through the file it
    replaced."""
    import pickle

    Vault.open(mixed)  # catalogue written
    lazy = Vault.open(mixed).lazy_cards()
    rows = lazy.text_rows(list(range(len(lazy))))
    assert rows is not None
    sent = pickle.loads(pickle.dumps(rows))
    made = sent.cards()
    whole = Vault.open(mixed, use_cache=False).cards
    assert made is not None and [card.text for card in made] == [card.text for card in whole]
    relpaths = [relpath for relpath, *_ in rows.described]
    assert set(rows.reader.rows(relpaths) or {}) == set(relpaths)
    other = catalog.RowReader(rows.reader.path, {**rows.reader.meta, "parser": "another"})
    assert other.rows(relpaths) is None and sent.reader.rows(relpaths) is not None
    path = Path(rows.reader.path)
    written = path.with_name("written-anew.sqlite")
    shutil.copyfile(path, written)
    with sqlite3.connect(written) as connection:
        connection.execute("DELETE FROM files WHERE relpath = ?", (relpaths[0],))
    connection.close()
    os.replace(written, path)
    assert set(rows.reader.rows(relpaths) or {}) == set(relpaths[1:])
    assert sent.cards() is None  # a row is missing: the cards are built instead


def _live_cards() -> int:
    """The `Card` objects the collector tracks, garbage not yet collected among them."""
    from hql.vault.model import Card

    return sum(1 for thing in gc.get_objects() if type(thing) is Card)


@pytest.mark.parametrize("text", PROGRAMS)
def test_a_first_load_lets_its_cards_go_for_a_program_that_reads_only_its_hits(
    mixed: Path, text: str
) -> None:
    """The first load of a vault builds every card; a planned ranker that hands on only its
    hits lets them go and reads the catalogue that load wrote, as the next process would:
    the answers are a full load's, and the word index is written in this very process."""
    vault = Vault.open(mixed)  # no catalogue yet: every file read, every card built
    assert vault._cards is not None
    full = Vault.open(mixed, use_cache=False)
    gc.collect()
    held = _live_cards()  # both vaults' cards
    gc.disable()  # what is freed meanwhile, the release itself freed
    try:
        first = _run(vault, text, QUESTIONS[0])
        after = _live_cards()
    finally:
        gc.enable()
    if "outlinks" not in text:  # links need the whole vault's table: its cards are built
        assert vault._cards is None
        assert after <= held - len(full.cards) + 8  # at most 8 hits built
    _assert_same(first, _run(full, text, QUESTIONS[0]))
    for q in QUESTIONS[1:]:
        _assert_same(_run(vault, text, q), _run(full, text, q))
    assert (mixed / ".hql" / TERMS_NAME).is_file()
    assert [card.name for card in vault.cards] == [card.name for card in full.cards]
    assert vault.warnings == Vault.open(mixed).warnings


def test_a_first_load_whose_cards_were_read_keeps_them(mixed: Path) -> None:
    vault = Vault.open(mixed)
    cards = vault.cards
    answer = _run(vault, PROGRAMS[0], QUESTIONS[0])
    assert vault._cards is cards
    _assert_same(answer, _run(Vault.open(mixed, use_cache=False), PROGRAMS[0], QUESTIONS[0]))


@pytest.mark.parametrize("lost", ["not saved", "search columns damaged"])
def test_a_first_load_the_catalogue_could_not_keep_keeps_its_cards(
    mixed: Path, monkeypatch: pytest.MonkeyPatch, lost: str
) -> None:
    """A catalogue that does not hold the load's listing and readable search columns cannot
    give the cards back one by one: the vault keeps the very cards it built."""
    if lost == "not saved":
        monkeypatch.setattr(catalog.Catalog, "save", lambda *args, **kwargs: None)
    vault = Vault.open(mixed)
    if lost == "search columns damaged":
        _search_rows(mixed, "UPDATE search_head SET digest = x'00'")
    cards = vault._cards
    answer = _run(vault, PROGRAMS[0], QUESTIONS[1])
    assert cards is not None and vault._cards is cards
    _assert_same(answer, _run(Vault.open(mixed, use_cache=False), PROGRAMS[0], QUESTIONS[1]))


def test_threads_sharing_a_first_load_that_lets_its_cards_go_agree(mixed: Path) -> None:
    """Threads ask a fresh vault's first questions while another reads every card: whichever
    comes first, the answers are a full load's and every hit is the vault's own card."""
    from concurrent.futures import ThreadPoolExecutor

    text = "import bm25\ncards | bm25($q) | take(4) | map(h => [h.card.name, h.score, h.card.path])"
    expected = {q: _run(Vault.open(mixed, use_cache=False), text, q).text() for q in QUESTIONS}
    for reader_first in (False, True):
        shutil.rmtree(mixed / ".hql", ignore_errors=True)
        vault = Vault.open(mixed)
        with ThreadPoolExecutor(6) as pool:
            counted = pool.submit(getattr, vault, "cards") if reader_first else None
            asked = [pool.submit(_run, vault, text, q) for q in QUESTIONS * 3]
            counted = counted or pool.submit(getattr, vault, "cards")
            answers = [future.result().text() for future in asked]
        assert counted.result() == vault.cards
        assert answers == [expected[q] for q in QUESTIONS * 3]
        hits = _run(vault, "import bm25\ncards | bm25($q) | take(4)", QUESTIONS[0]).value
        assert all(hit.card is vault.card(hit.card.name) for hit in hits)
