"""The catalogue after an edit (hql/vault/edits.py): only the edited files are read, and the
next load opens from the listing with exactly what a whole load of the files gives."""

from __future__ import annotations

import os
from pathlib import Path

from kept_stat import rewrite_keeping_stat

import hql
import hql.notes
from hql.api import extension_metadata
from hql.vault.edits import record_edits

RELATION = """---
title: Alpha relates to beta
metadata:
  knowledge:
    type: Relation
    relation:
      source: alpha
      target: {target}
---
# Alpha relates to beta
"""


def _vault(root: Path, notes: int = 12) -> None:
    (root / "topics").mkdir(parents=True)
    (root / "alpha.md").write_text("---\ntags: [greek]\n---\n# Alpha\n\nThe first letter.\n")
    (root / "beta.md").write_text("# Beta\n\nThe second letter, see [[alpha]].\n")
    for number in range(notes):
        (root / "topics" / f"note {number}.md").write_text(
            f"---\ntitle: Note {number}\nstatus: active\n---\nBody of note {number}.\n"
        )
    (root / "link.md").write_text(RELATION.format(target="gamma"))  # warns: no gamma card


def _shape(vault: hql.Vault) -> tuple[object, ...]:
    """What a load gives, read before anything builds the vault's cards whole: its warnings,
    the cards as the listing's columns give them one at a time, then all of them."""
    warnings = sorted((w.path, w.message, w.subject) for w in vault.warnings)
    lazy = vault.lazy_cards()
    columns = (
        list(zip(lazy.names, lazy.search_keys(), strict=True)) if hasattr(lazy, "names") else None
    )
    names = list(lazy.names) if columns is not None else [c.name for c in vault.cards]
    alone = [_card(vault.card_alone(card_name)) for card_name in names]
    whole = [_card(card) for card in vault.cards]
    assert alone == whole
    if columns is not None:
        assert columns == [(c.name, (c.digest, c.search_title)) for c in vault.cards]
    return tuple(whole), tuple(warnings)


def _card(c: object) -> tuple[object, ...]:
    return (c.name, c.relpath, c.digest, c.search_title, c.title, c.tags, repr(c.metadata))


def _listed(root: Path) -> None:
    """A whole load: the catalogue lists the vault as it is."""
    assert len(hql.Vault.open(root).cards) > 0


def _fresh_load(root: Path) -> tuple[object, ...]:
    return _shape(hql.Vault.open(root, use_cache=False))


def _opened_from_listing(root: Path) -> hql.Vault:
    vault = hql.Vault.open(root)
    assert vault._cards is None, "the load read its cards instead of opening from the listing"
    return vault


def test_an_edit_is_recorded_without_a_whole_load(tmp_path: Path) -> None:
    _vault(tmp_path)
    _listed(tmp_path)  # the listing of the vault as it is
    path = tmp_path / "topics" / "note 3.md"
    path.write_text("---\ntitle: Note three, renamed\nstatus: draft\n---\nNew body [[beta]].\n")
    assert record_edits(tmp_path, ["topics/note 3.md"], extension_metadata())
    vault = _opened_from_listing(tmp_path)
    assert _shape(vault) == _fresh_load(tmp_path)
    assert vault.card("note 3").title == "Note three, renamed"


def test_a_warning_given_by_the_edited_file_follows_it(tmp_path: Path) -> None:
    _vault(tmp_path)
    before = hql.Vault.open(tmp_path)
    assert any("link.md" in w.path for w in before.warnings)
    (tmp_path / "link.md").write_text(RELATION.format(target="beta"))  # now it resolves
    assert record_edits(tmp_path, ["link.md"], extension_metadata())
    vault = _opened_from_listing(tmp_path)
    assert not any("link.md" in w.path for w in vault.warnings)
    assert _shape(vault) == _fresh_load(tmp_path)
    (tmp_path / "link.md").write_text(RELATION.format(target="delta"))  # and warns again
    assert record_edits(tmp_path, ["link.md"], extension_metadata())
    vault = _opened_from_listing(tmp_path)
    assert any("link.md" in w.path for w in vault.warnings)
    assert _shape(vault) == _fresh_load(tmp_path)


def test_tags_kept_by_the_catalogue_follow_the_edit(tmp_path: Path) -> None:
    _vault(tmp_path)
    _listed(tmp_path)
    program = "cards | filter(c => has_tag(c, $t)) | map(c => c.name)"
    assert list(hql.run(program, vault=hql.Vault.open(tmp_path), params={"t": "greek"}).value)
    (tmp_path / "alpha.md").write_text("---\ntags: [latin]\n---\n# Alpha\n\nThe first letter.\n")
    assert record_edits(tmp_path, ["alpha.md"], extension_metadata())
    vault = _opened_from_listing(tmp_path)
    assert list(hql.run(program, vault=vault, params={"t": "latin"}).value) == ["alpha"]
    assert not list(
        hql.run(program, vault=_opened_from_listing(tmp_path), params={"t": "greek"}).value
    )


def test_anything_but_an_edit_of_the_named_files_loads_whole(tmp_path: Path) -> None:
    _vault(tmp_path)
    _listed(tmp_path)
    (tmp_path / "topics" / "note 1.md").write_text("changed\n")
    (tmp_path / "topics" / "note 2.md").write_text("changed too, but not named\n")
    assert not record_edits(tmp_path, ["topics/note 1.md"], extension_metadata())
    assert _shape(hql.Vault.open(tmp_path)) == _fresh_load(tmp_path)  # the whole load
    (tmp_path / "new.md").write_text("# New\n")
    assert not record_edits(tmp_path, ["new.md"], extension_metadata())
    _listed(tmp_path)
    os.unlink(tmp_path / "new.md")
    assert not record_edits(tmp_path, ["new.md"], extension_metadata())
    _listed(tmp_path)
    (tmp_path / "beta.md").write_text("---\ntitle: [unclosed\n---\nbroken now\n")
    assert not record_edits(tmp_path, ["beta.md"], extension_metadata())
    assert _shape(hql.Vault.open(tmp_path)) == _fresh_load(tmp_path)


def test_an_edit_that_keeps_size_mtime_and_inode_is_recorded(tmp_path: Path) -> None:
    """The named file rewritten as `cp -p` does: only its change time tells the walk."""
    _vault(tmp_path)
    _listed(tmp_path)
    path = tmp_path / "topics" / "note 3.md"
    rewrite_keeping_stat(path, b"Body of note 3", b"Body of nota 3")
    assert record_edits(tmp_path, ["topics/note 3.md"], extension_metadata())
    vault = _opened_from_listing(tmp_path)
    assert vault.card_alone("note 3").body == "Body of nota 3.\n"  # type: ignore[union-attr]
    assert _shape(vault) == _fresh_load(tmp_path)


def test_an_unnamed_file_changed_keeping_size_and_mtime_loads_whole(tmp_path: Path) -> None:
    _vault(tmp_path)
    _listed(tmp_path)
    (tmp_path / "topics" / "note 1.md").write_text("changed\n")
    rewrite_keeping_stat(tmp_path / "topics" / "note 2.md", b"Body of note 2", b"Body of nota 2")
    assert not record_edits(tmp_path, ["topics/note 1.md"], extension_metadata())
    vault = hql.Vault.open(tmp_path)
    assert vault.card("note 2").body == "Body of nota 2.\n"  # type: ignore[union-attr]
    assert _shape(vault) == _fresh_load(tmp_path)


def test_obsidian_links_that_change_load_whole(tmp_path: Path) -> None:
    _vault(tmp_path)
    (tmp_path / ".obsidian").mkdir()
    _listed(tmp_path)
    (tmp_path / "beta.md").write_text("# Beta\n\nThe second letter, see [[alpha]]. More.\n")
    assert record_edits(tmp_path, ["beta.md"], extension_metadata())  # same links
    assert _shape(_opened_from_listing(tmp_path)) == _fresh_load(tmp_path)
    (tmp_path / "beta.md").write_text("# Beta\n\nNow see [[nowhere]].\n")
    assert not record_edits(tmp_path, ["beta.md"], extension_metadata())
    assert _shape(hql.Vault.open(tmp_path)) == _fresh_load(tmp_path)


def test_a_note_written_through_hql_notes_leaves_the_listing_current(tmp_path: Path) -> None:
    _vault(tmp_path, notes=40)
    _listed(tmp_path)
    notes = hql.notes.open(tmp_path)
    state = notes.read("note 7")
    notes.append("note 7", "An appended line about zymurgy.", base_digest=state.digest)
    notes.set("note 8", "status", "archived")
    vault = _opened_from_listing(tmp_path)
    assert _shape(vault) == _fresh_load(tmp_path)
    found = hql.run(
        'import bm25\ncards | bm25("zymurgy") | take(1) | map(h => h.card.name)', vault=vault
    )
    assert list(found.value) == ["note 7"]


def test_a_note_whose_links_stay_needs_no_dialect_scan(tmp_path: Path, monkeypatch) -> None:
    from hql.vault import detect

    _vault(tmp_path)
    _listed(tmp_path)
    scans = []
    real_scan = detect.scan
    monkeypatch.setattr(detect, "scan", lambda walked: scans.append(1) or real_scan(walked))
    notes = hql.notes.open(tmp_path)
    notes.append("beta", "More about the second letter.")
    notes.set("beta", "status", "draft")
    assert scans == []  # the same links: the dialect stays without reading every file
    vault = _opened_from_listing(tmp_path)
    assert vault.dialect == "reference"
    assert _shape(vault) == _fresh_load(tmp_path)
    notes.append("beta", "Shown otherwise: [[alpha|the first]].")  # a form only Obsidian reads
    assert scans  # read every file to decide again
    vault = hql.Vault.open(tmp_path)
    assert vault.dialect == "obsidian"
    assert _shape(vault) == _fresh_load(tmp_path)


def test_a_writer_records_its_own_edits_without_walking(tmp_path: Path, monkeypatch) -> None:
    from hql.vault import walk

    _vault(tmp_path, notes=20)
    _listed(tmp_path)
    notes = hql.notes.open(tmp_path)
    notes.append("note 3", "A first line.")  # walks once: the walk is kept with the listing
    walks: list[int] = []
    real_walk = walk.walk
    monkeypatch.setattr(walk, "walk", lambda *a, **k: walks.append(1) or real_walk(*a, **k))
    notes.append("note 3", "A second line about zymurgy.")
    notes.set("note 4", "status", "draft")
    assert walks == []  # neither finding the notes nor refreshing after them walked
    vault = _opened_from_listing(tmp_path)
    assert _shape(vault) == _fresh_load(tmp_path)
    walks.clear()
    # Another process's edit: the writer's next refresh does not see it, the next load does.
    (tmp_path / "topics" / "note 5.md").write_text("---\ntitle: Note five\n---\nBy another.\n")
    notes.append("note 6", "A line about kvass.")
    assert walks == []
    vault = hql.Vault.open(tmp_path)
    assert walks  # the listing is not the vault's: the load walked and read it whole
    assert vault.card("note 5").title == "Note five"
    assert _shape(vault) == _fresh_load(tmp_path)
    program = "import bm25\ncards | bm25($q) | take(1) | map(h => h.card.name)"
    for word, name in (("zymurgy", "note 3"), ("kvass", "note 6"), ("another", "note 5")):
        assert list(hql.run(program, vault=vault, params={"q": word}).value) == [name]


def test_a_note_the_watcher_saw_copied_over_keeping_size_and_mtime_reaches_bm25(
    tmp_path: Path,
) -> None:
    """What `hql vault watch` hands on (`refresh_seen`): a note written over by `cp -p`."""
    from hql.notes.fresh import refresh_seen

    _vault(tmp_path)
    program = 'import bm25\ncards | bm25("yawl") | take(1) | map(h => h.card.name)'
    assert list(hql.run(program, vault=hql.Vault.open(tmp_path)).value) == []
    rewrite_keeping_stat(tmp_path / "topics" / "note 4.md", b"Body of note 4", b"Body of yawl 4")
    fresh = refresh_seen(tmp_path, ["topics/note 4.md"])
    assert fresh.catalogue and fresh.bm25 and not fresh.problems
    vault = _opened_from_listing(tmp_path)
    assert list(hql.run(program, vault=vault).value) == ["note 4"]
    assert _shape(vault) == _fresh_load(tmp_path)
