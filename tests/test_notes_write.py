"""Writing notes (hql.notes, `hql note`): edits that keep what the person wrote, compare-and-swap
on the digest, dry runs, refusals that say why, and a vault that is fresh after every write."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import hql
import hql.notes
from hql import files
from hql.notes import writer
from hql.notes.frontmatter import FrontMatter

FIXTURES = Path(__file__).parent / "fixtures"
HQL = [sys.executable, "-m", "hql"]


@pytest.fixture
def garden(tmp_path: Path) -> Path:
    """The 255-note Obsidian garden vault, copied."""
    root = tmp_path / "garden"
    shutil.copytree(FIXTURES / "obsidian", root)
    return root


@pytest.fixture
def web(tmp_path: Path) -> Path:
    root = tmp_path / "web"
    shutil.copytree(Path(__file__).parent.parent / "vaults" / "web-auth", root)
    return root


PERSON_WROTE = """title: "Bearer tokens"   # the RFC's own words
aliases: ['bearer', "token auth"]
tags:
    - auth
    - http
# reviewed by ada
status: draft
when: 2024-05-01
notes: |
  line one
  # not a comment
"""


def test_a_property_edit_rewrites_only_its_own_line() -> None:
    front = FrontMatter.parse(PERSON_WROTE)
    front.set("status", "active")
    assert front.text() == PERSON_WROTE.replace("status: draft", "status: active")
    front.set("title", "Bearer tokens (RFC 6750)")
    assert (
        front.text().splitlines()[0] == 'title: "Bearer tokens (RFC 6750)"   # the RFC\'s own words'
    )
    front.set("tags", ["auth", "http", "oauth"])
    lines = front.text().splitlines()
    assert lines[2:6] == ["tags:", "    - auth", "    - http", "    - oauth"]  # its indent kept
    front.set("aliases", ["bearer"])
    assert front.text().splitlines()[1] == "aliases: ['bearer']"  # flow and quotes kept
    front.set("supersedes", "[[old token note]]")
    assert front.text().endswith('supersedes: "[[old token note]]"\n')
    front.delete("when")
    assert "when:" not in front.text() and "# reviewed by ada\n" in front.text()
    assert "  # not a comment\n" in front.text()


def test_an_edit_of_a_note_keeps_its_bytes_elsewhere_crlf_bom_and_mode(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    original = "\ufeff---\r\ntitle: Keys   # why\r\nstatus: draft\r\n---\r\n# Keys\r\n\r\nBody.\r\n"
    path = root / "keys.md"
    path.write_bytes(original.encode("utf-8"))
    os.chmod(path, 0o640)
    notes = hql.notes.open(root, fresh=False)
    done = notes.set("keys", "status", "active")
    data = path.read_bytes()
    assert data == original.replace("status: draft", "status: active").encode("utf-8")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert done.digest == files.document_digest(data) and done.written
    appended = notes.append("keys", "More.", base_digest=done.digest)
    assert path.read_bytes().endswith(b"Body.\r\n\r\nMore.\r\n")
    assert appended.previous == done.digest


def test_a_stale_digest_writes_nothing_and_says_so(web: Path) -> None:
    notes = hql.notes.open(web, fresh=False)
    state = notes.read("oauth")
    path = web / state.path
    before = path.read_bytes()
    notes.set("oauth", "owner", "ada", base_digest=state.digest)
    edited = path.read_bytes()
    with pytest.raises(writer.Stale) as refused:
        notes.set("oauth", "owner", "grace", base_digest=state.digest)
    assert path.read_bytes() == edited != before
    answer = refused.value.to_json()
    assert answer["reason"] == "stale" and answer["written"] is False
    assert answer["current_digest"] == files.document_digest(edited)
    assert "changed since it was read" in answer["message"]


def test_a_dry_run_answers_the_diff_and_writes_nothing(web: Path) -> None:
    notes = hql.notes.open(web, fresh=False)
    path = web / "concepts" / "oauth.md"
    before = path.read_bytes()
    answer = notes.archive("oauth", dry_run=True)
    assert path.read_bytes() == before and not answer.written
    assert (
        "-  status: done\n+  status: archived\n" in answer.diff
    )  # inside `metadata:`, where it is read
    assert answer.diff.startswith("--- a/concepts/oauth.md\n+++ b/concepts/oauth.md\n")


def test_archive_keeps_the_file_and_only_delete_removes_it(web: Path) -> None:
    notes = hql.notes.open(web, fresh=False)
    notes.archive("oauth")
    assert notes.vault().card("oauth").metadata["status"] == "archived"
    with pytest.raises(writer.Stale):
        notes.archive("oauth", delete=True, base_digest="sha256:" + "0" * 64)
    assert (web / "concepts" / "oauth.md").exists()
    gone = notes.archive("oauth", delete=True)
    assert gone.action == "delete" and gone.digest is None
    assert not (web / "concepts" / "oauth.md").exists()


def test_new_notes_refuse_names_and_paths_that_exist_or_leave_the_vault(
    garden: Path, tmp_path: Path
) -> None:
    notes = hql.notes.open(garden, fresh=False)
    made = notes.new("Compost tea", "Steep a week.", properties={"tags": ["soil"]}, folder="Inbox")
    assert (garden / "Inbox" / "Compost tea.md").read_text() == (
        "---\ntags:\n  - soil\n---\n# Compost tea\n\nSteep a week.\n"
    )
    assert made.path == "Inbox/Compost tea.md" and made.previous is None
    with pytest.raises(writer.Exists, match="already exists"):
        notes.new("Compost tea", "again", folder="Elsewhere")
    for bad in ("../escape.md", "/etc/passwd.md", ".hql/catalog.md"):
        with pytest.raises(writer.Outside):
            notes.set(bad, "a", 1)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\na: 1\n---\nsecret\n")
    (garden / "linked").symlink_to(outside)
    with pytest.raises(writer.Outside, match="symbolic link"):
        notes.set("linked/secret.md", "a", 2)
    with pytest.raises(writer.Outside, match="symbolic link"):
        notes.new("Leak", "x", folder="linked")
    assert (outside / "secret.md").read_text() == "---\na: 1\n---\nsecret\n"
    assert not (outside / "Leak.md").exists()


def test_broken_front_matter_and_bad_text_are_refused_with_where(garden: Path) -> None:
    notes = hql.notes.open(garden, fresh=False)
    (garden / "broken.md").write_text("---\ntitle: a\ntags: [unclosed\n---\nbody\n")
    (garden / "unclosed.md").write_text("---\ntitle: a\nbody\n")
    (garden / "latin1.md").write_bytes(b"caf\xe9\n")
    before = {name: (garden / name).read_bytes() for name in ("broken.md", "unclosed.md")}
    with pytest.raises(writer.Broken, match=r"broken\.md:\d+: the front matter cannot be read"):
        notes.set("broken.md", "status", "x")
    with pytest.raises(writer.Broken, match=r"unclosed\.md:1: .* never closed"):
        notes.set("unclosed.md", "status", "x")
    with pytest.raises(writer.Broken, match="not UTF-8"):
        notes.append("latin1.md", "more")
    assert {name: (garden / name).read_bytes() for name in before} == before
    with pytest.raises(writer.Invalid, match="occurs 0 times|is not in"):
        notes.edit("broken.md", "new", old_text="nowhere")


def test_a_move_keeps_the_bytes_and_lists_the_links_it_did_not_rewrite(garden: Path) -> None:
    notes = hql.notes.open(garden, fresh=False)
    vault = notes.vault()
    target = next(card for card in vault.cards if len(card.inlinks) >= 2)
    data = (garden / target.relpath).read_bytes()
    moved = notes.move(target.name, "Archive/Renamed note.md")
    assert (garden / "Archive" / "Renamed note.md").read_bytes() == data
    assert not (garden / target.relpath).exists()
    assert set(moved.linked_from) >= set(target.inlinks) - {target.name}
    kept = notes.move("Renamed note", "Archive/Deeper/")
    assert kept.linked_from == [] and kept.path == "Archive/Deeper/Renamed note.md"


def test_the_next_query_sees_a_write_and_the_stores_are_saved(garden: Path) -> None:
    from hql.notes.fresh import bm25_store

    vault = hql.Vault.open(garden)
    question = 'import bm25\ncards | bm25("zymurgy scoby") | take(3) | map(h => h.card.name)'
    assert list(hql.run(question, vault=vault).value) == []
    notes = hql.notes.open(garden)
    written = notes.new("Kombucha", "Zymurgy of kombucha: a scoby, sweet tea, two weeks.")
    assert written.freshness is not None and written.freshness.catalogue and written.freshness.bm25
    assert list(hql.run(question, vault=hql.Vault.open(garden)).value) == ["Kombucha"]
    # the store saved by the write already holds every card: a fresh build analyses none
    assert bm25_store(hql.Vault.open(garden)).analysed == 0
    notes.edit("Kombucha", "Now about sourdough starters only.")
    assert list(hql.run(question, vault=hql.Vault.open(garden)).value) == []


def test_the_command_line_writes_refuses_and_answers_json(web: Path) -> None:
    def hql_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*HQL, "--vault", str(web), *args], capture_output=True, text=True, timeout=60
        )

    read = hql_cli("--format", "json", "note", "read", "oauth")
    digest = json.loads(read.stdout)["digest"]
    done = hql_cli("note", "set", "oauth", "reviewed", "true", "--base-digest", digest)
    assert done.returncode == 0, done.stderr
    assert "reviewed: true\n" in (web / "concepts" / "oauth.md").read_text()
    stale = hql_cli("--format", "json", "note", "set", "oauth", "reviewed", "false",
                    "--base-digest", digest)  # fmt: skip
    assert stale.returncode == 1 and json.loads(stale.stdout)["reason"] == "stale"
    assert "changed since it was read" in stale.stderr and "Traceback" not in stale.stderr
    dry = hql_cli("note", "append", "oauth", "--text", "Later.", "--dated", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith("--- a/concepts/oauth.md")
    outside = hql_cli("note", "new", "x", "--folder", "../..")
    assert outside.returncode == 1 and "not a place inside the vault" in outside.stderr
