"""The one writer of documents (hql.files.write_document) and MCP `render` racing an editor
and a folder swapped for a symlink."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hql import files

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"


def _digest(path: Path) -> str:
    return files.document_digest(path.read_bytes())


@pytest.fixture
def root(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "doc.md").write_text("old\n", encoding="utf-8")
    return vault


def test_a_write_replaces_the_document_keeps_its_mode_and_returns_the_new_digest(
    root: Path,
) -> None:
    doc = root / "notes" / "doc.md"
    doc.chmod(0o640)
    digest = files.write_document(root, "notes/doc.md", b"new\n", base_digest=_digest(doc))
    assert doc.read_bytes() == b"new\n" and digest == files.document_digest(b"new\n")
    assert digest.startswith("sha256:") and len(digest) == 7 + 64
    assert doc.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in (root / "notes").iterdir()) == ["doc.md"]


def test_a_document_that_changed_since_the_work_began_is_a_conflict(root: Path) -> None:
    doc = root / "notes" / "doc.md"
    base = _digest(doc)
    doc.write_text("typed meanwhile\n", encoding="utf-8")
    with pytest.raises(files.Conflict, match="changed since it was read") as caught:
        files.write_document(root, "notes/doc.md", b"rendered\n", base_digest=base)
    assert caught.value.current_digest == _digest(doc)
    assert doc.read_text(encoding="utf-8") == "typed meanwhile\n"
    doc.unlink()
    with pytest.raises(files.Conflict, match="removed"):
        files.write_document(root, "notes/doc.md", b"rendered\n", base_digest=base)
    assert not doc.exists()


def test_an_edit_saved_between_the_last_check_and_the_swap_is_given_back(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = root / "notes" / "doc.md"
    base = _digest(doc)
    real_rename = files._rename_flags

    def editor_saves_first(parent: int, source: str, target: str, flags: int) -> bool:
        if flags == files._RENAME_EXCHANGE and source.endswith(".tmp"):
            monkeypatch.setattr(files, "_rename_flags", real_rename)
            saved = root / "notes" / "saved-by-editor"
            saved.write_text("old\nthe editor's line\n", encoding="utf-8")
            os.replace(saved, doc)  # an editor's save: a new file renamed over the old
        return real_rename(parent, source, target, flags)

    monkeypatch.setattr(files, "_rename_flags", editor_saves_first)
    with pytest.raises(files.Conflict):
        files.write_document(root, "notes/doc.md", b"rendered\n", base_digest=base)
    assert doc.read_text(encoding="utf-8") == "old\nthe editor's line\n"
    assert sorted(p.name for p in (root / "notes").iterdir()) == ["doc.md"]


def test_symlinked_folders_and_documents_are_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "doc.md").write_text("outside\n", encoding="utf-8")
    shutil.move(root / "notes", root / "notes.real")
    (root / "notes").symlink_to(outside)
    with pytest.raises(files.WriteRefused, match="notes is a symbolic link"):
        files.write_document(root, "notes/doc.md", b"x", base_digest=None)
    (root / "notes").unlink()
    (root / "notes").symlink_to(root / "notes.real")  # even one pointing inside the vault
    with pytest.raises(files.WriteRefused, match="symbolic link"):
        files.write_document(root, "notes/doc.md", b"x", base_digest=None)
    (root / "link.md").symlink_to(outside / "doc.md")
    with pytest.raises(files.WriteRefused, match="link.md is a symbolic link"):
        files.write_document(root, "link.md", b"x", base_digest=None)
    assert (outside / "doc.md").read_text(encoding="utf-8") == "outside\n"
    assert sorted(p.name for p in outside.iterdir()) == ["doc.md"]
    for bad in ("../outside/doc.md", str(outside / "doc.md"), "", "notes/../../x"):
        with pytest.raises(files.WriteRefused, match="inside the vault"):
            files.write_document(root, bad, b"x", base_digest=None)


def test_a_fifo_in_place_of_the_document_is_refused_at_once(root: Path) -> None:
    os.mkfifo(root / "pipe.md")
    with pytest.raises(files.WriteRefused, match="not a regular file"):
        files.write_document(root, "pipe.md", b"x", base_digest=None)


def test_create_refuses_an_existing_name_and_makes_missing_folders(root: Path) -> None:
    old = os.umask(0o022)
    try:
        digest = files.write_document(
            root, "new/deeper/card.md", b"hi\n", base_digest=None, create=True
        )
    finally:
        os.umask(old)
    card = root / "new" / "deeper" / "card.md"
    assert card.read_bytes() == b"hi\n" and digest == files.document_digest(b"hi\n")
    assert card.stat().st_mode & 0o777 == 0o644
    with pytest.raises(files.Exists, match="already exists"):
        files.write_document(root, "new/deeper/card.md", b"other\n", base_digest=None, create=True)
    assert card.read_bytes() == b"hi\n"


# --- MCP render against an editor and a folder swapper -------------------------------

EDITOR = textwrap.dedent(
    """
    import os, sys, time
    doc = sys.argv[1]
    for i in range(100):
        with open(doc, encoding="utf-8", newline="") as handle:
            text = handle.read()
        text += f"\\nedit {i}\\n\\n```hql\\n{i} + 1000\\n```\\n"
        temporary = doc + ".editor"
        with open(temporary, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(temporary, doc)  # how most editors save
        time.sleep(0.004)
    """
)

SWAPPER = textwrap.dedent(
    """
    import os, sys, time
    vault, outside, fresh = sys.argv[1], sys.argv[2], sys.argv[3]
    folder = os.path.join(vault, "folder")
    for i in range(100):
        os.rename(folder, folder + ".real")
        os.symlink(outside, folder)
        time.sleep(0.003)
        os.unlink(folder)
        os.rename(folder + ".real", folder)
        temporary = os.path.join(folder, "fresh.tmp-swapper")
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(fresh)  # unrendered again: the next render writes
        os.replace(temporary, os.path.join(folder, "swapped.md"))
        time.sleep(0.003)
    """
)

FRESH = "# Swapped\n\n```hql\ncards | count\n```\n"


def test_mcp_render_loses_no_edit_and_writes_nothing_outside(tmp_path: Path) -> None:
    mcp = pytest.importorskip("mcp")
    anyio = pytest.importorskip("anyio")
    from mcp.client.stdio import StdioServerParameters

    vault = tmp_path / "vault"
    shutil.copytree(SAMPLE, vault, ignore=shutil.ignore_patterns(".hql"))
    edited = vault / "edited.md"
    edited.write_text("# Edited\n\n```hql\ncards | count\n```\n", encoding="utf-8")
    (vault / "folder").mkdir()
    (vault / "folder" / "swapped.md").write_text(FRESH, encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "swapped.md").write_text(FRESH, encoding="utf-8")
    outcomes: dict[str, list[Any]] = {"edited.md": [], "folder/swapped.md": []}
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hql", "--vault", str(vault), "mcp", "--allow-write"],
        env=env,
    )

    async def main() -> None:
        async with mcp.Client(params) as client:
            await client.call_tool("query", {"program": "cards | count"})  # started and loaded
            racers = [
                subprocess.Popen([sys.executable, "-c", EDITOR, str(edited)]),
                subprocess.Popen([sys.executable, "-c", SWAPPER, str(vault), str(outside), FRESH]),
            ]
            while any(racer.poll() is None for racer in racers):
                for document in outcomes:
                    result = await client.call_tool("render", {"document": document})
                    text = result.content[0].text
                    outcomes[document].append(
                        text if result.is_error else json.loads(text)["written"]
                    )
            assert [racer.wait() for racer in racers] == [0, 0]

    anyio.run(main)
    text = edited.read_text(encoding="utf-8")
    assert [f"edit {i}" in text for i in range(100)] == [True] * 100  # no edit lost
    assert (outside / "swapped.md").read_text(encoding="utf-8") == FRESH
    assert sorted(p.name for p in outside.iterdir()) == ["swapped.md"]  # nothing written outside
    # the race was run: renders wrote both documents while the others worked
    tally = {document: Counter(said) for document, said in outcomes.items()}
    assert tally["edited.md"][True] >= 1 and tally["folder/swapped.md"][True] >= 1, tally
