"""Never lose the user's words: render, config and index writers (issue 14, items 1-6)."""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from standin_embedder import BASE_CARDS, standin_vector, write_vault

import hql
import hql.render
from hql.api import HostError, Session
from hql.index.commands import build_command
from hql.render import render_command
from hql.vault import Vault

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"
TOML = '[semantics]\nindex = ".hql/index.sqlite"\n'


def _args(**values: object) -> argparse.Namespace:
    defaults = {"file": None, "write": False, "all": False, "vault": None, "report": None}
    return argparse.Namespace(**{**defaults, **values})


def _session(vault: Path) -> object:
    return lambda args: Session(hql.open_vault(vault, use_cache=False))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root)
    return root


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


# --- 1. an unclosed result fence ------------------------------------------------

UNCLOSED = (
    "# Notes\n\n```hql\ncards | count\n```\n\n```hql#result\n18\n\n"
    "## Chapter 2\n\nTwo pages of my own prose.\nMore prose.\n"
)


def test_an_unclosed_result_fence_is_refused_and_the_document_kept(vault: Path) -> None:
    doc = vault / "doc.md"
    doc.write_text(UNCLOSED, encoding="utf-8")
    with pytest.raises(HostError, match=r"line 7: .*never closed.*nothing was written"):
        render_command(_args(file=str(doc), write=True), _session(vault))
    assert doc.read_text(encoding="utf-8") == UNCLOSED


def test_render_all_skips_a_document_with_an_unclosed_result(vault: Path, capsys) -> None:
    doc = vault / "doc.md"
    doc.write_text(UNCLOSED, encoding="utf-8")
    code = render_command(_args(all=True, write=True, vault=str(vault)), _session(vault))
    assert code == 1
    assert "never closed" in capsys.readouterr().err
    assert doc.read_text(encoding="utf-8") == UNCLOSED


# --- 2. edits made while rendering --------------------------------------------


def test_an_edit_made_during_the_render_is_not_overwritten(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = vault / "doc.md"
    doc.write_text("# Notes\n\n```hql\ncards | count\n```\n", encoding="utf-8")
    original = hql.render.render_document

    def slow_render(text: str, path: str, session: Session) -> hql.render.Rendered:
        rendered = original(text, path, session)
        with open(doc, "a", encoding="utf-8") as handle:  # the user saves meanwhile
            handle.write("A line typed during the render.\n")
        return rendered

    monkeypatch.setattr(hql.render, "render_document", slow_render)
    with pytest.raises(HostError, match="changed while it was being rendered"):
        render_command(_args(file=str(doc), write=True), _session(vault))
    assert doc.read_text(encoding="utf-8").endswith("A line typed during the render.\n")


# --- 4. line endings, symlinks, modes ---------------------------------------------


def test_crlf_and_lone_cr_are_kept(vault: Path) -> None:
    doc = vault / "doc.md"
    text = "# Notes\r\n\r\nProse with\ra lone CR.\r\n\r\n```hql\r\n1 + 1\r\n```\r\nEnd.\r\n"
    doc.write_bytes(text.encode("utf-8"))
    render_command(_args(file=str(doc), write=True), _session(vault))
    written = doc.read_bytes().decode("utf-8")
    assert "Prose with\ra lone CR.\r\n" in written
    assert "```hql#result\r\n2\r\n```\r\nEnd.\r\n" in written
    assert "\n" not in written.replace("\r\n", "")  # no line was turned into LF
    render_command(_args(file=str(doc), write=True), _session(vault))
    assert doc.read_bytes().decode("utf-8") == written  # and a second render changes nothing


def test_lf_document_without_final_newline_is_unchanged_by_a_second_render(vault: Path) -> None:
    doc = vault / "doc.md"
    doc.write_text("```hql\n1 + 1\n```", encoding="utf-8")
    render_command(_args(file=str(doc), write=True), _session(vault))
    first = doc.read_text(encoding="utf-8")
    assert first == "```hql\n1 + 1\n```\n\n```hql#result\n2\n```"
    render_command(_args(file=str(doc), write=True), _session(vault))
    assert doc.read_text(encoding="utf-8") == first


def test_a_symlinked_document_updates_its_target(vault: Path) -> None:
    (vault / "drafts").mkdir()
    target = vault / "drafts" / "real.md"
    target.write_text("```hql\n1 + 1\n```\n", encoding="utf-8")
    link = vault / "doc.md"
    link.symlink_to(Path("drafts") / "real.md")
    render_command(_args(file=str(link), write=True), _session(vault))
    assert link.is_symlink()
    assert "```hql#result\n2\n```" in target.read_text(encoding="utf-8")


def test_config_set_keeps_the_mode_and_new_files_follow_the_umask(
    tmp_path: Path, umask_022: None
) -> None:
    from hql.files import write_atomically
    from hql.init import set_setting

    toml = tmp_path / "hql.toml"
    toml.write_text('[report]\nmode = "collect"\n', encoding="utf-8")
    toml.chmod(0o644)
    set_setting(toml, "report.mode", "strict")
    assert toml.stat().st_mode & 0o777 == 0o644
    fresh = write_atomically(tmp_path / "new.bin", b"x")
    assert fresh.stat().st_mode & 0o777 == 0o644


def test_cache_and_index_files_follow_the_umask(tmp_path: Path, umask_022: None) -> None:
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, TOML)
    vault = Vault.open(root)
    code, text = build_command(vault, embedder=BagEmbedder())
    assert code == 0, text
    cache = root / ".hql" / "catalog.sqlite"
    assert cache.stat().st_mode & 0o777 == 0o644
    assert (root / ".hql" / "index.sqlite").stat().st_mode & 0o777 == 0o644


# --- 3. concurrent index builds ----------------------------------------------------


class BagEmbedder:
    model_id, revision = "bag", "1"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        time.sleep(self.delay)
        return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

    embed_queries = embed_passages


def test_two_builds_at_once_keep_both_queries(tmp_path: Path) -> None:
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, TOML)
    results: list[tuple[int, str]] = []

    def build(query: str) -> None:
        results.append(build_command(Vault.open(root), [query], embedder=BagEmbedder(0.3)))

    threads = [threading.Thread(target=build, args=(q,)) for q in ("first question", "second")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [code for code, _ in results] == [0, 0], results
    db = sqlite3.connect(root / ".hql" / "index.sqlite")
    stored = sorted(text for (text,) in db.execute("SELECT text FROM query"))
    db.close()
    assert stored == ["first question", "second"]


# --- 5. an index path naming the configuration or a card ---------------------------


@pytest.mark.parametrize("configured", ["hql.toml", "penguin.md", "notes.txt"])
def test_an_index_path_never_replaces_a_user_file(tmp_path: Path, configured: str) -> None:
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, f'[semantics]\nindex = "{configured}"\n')
    (root / "notes.txt").write_text("my notes\n", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    code, text = build_command(Vault.open(root, use_cache=False), embedder=BagEmbedder())
    assert code == 1
    assert configured in text
    after = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    assert after == before


# --- 6. leftovers of killed writers ------------------------------------------------


def _old(path: Path) -> Path:
    path.write_bytes(b"partial")
    stamp = time.time() - 3600
    os.utime(path, (stamp, stamp))
    return path


def test_render_removes_what_a_killed_render_left(vault: Path) -> None:
    doc = vault / "doc.md"
    doc.write_text("```hql\ncards | count\n```\n", encoding="utf-8")
    legacy = _old(vault / ".doc.md.x1y2z3q4.tmp")
    dead = vault / ".doc.md.hql-999999999-abcd.tmp"
    dead.write_bytes(b"partial")
    fresh = vault / ".doc.md.k9k9k9k9.tmp"  # someone's write in progress: kept
    fresh.write_bytes(b"partial")
    render_command(_args(file=str(doc), write=True), _session(vault))
    assert not legacy.exists() and not dead.exists()
    assert fresh.exists()
    assert [p.name for p in vault.iterdir() if p.name.startswith(".doc.md.")] == [fresh.name]


def test_index_build_removes_what_a_killed_build_left(tmp_path: Path) -> None:
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, TOML)
    (root / ".hql").mkdir(exist_ok=True)
    leftovers = [
        _old(root / ".hql" / ".index.sqlite.ab12cd34.tmp"),
        _old(root / ".hql" / ".index.sqlite.ab12cd34.tmp-journal"),
        _old(root / ".hql" / ".vault-cache.q1w2e3r4"),
        _old(root / ".hql" / ".bm25-q1w2e3r4.tmp"),
    ]
    assert build_command(Vault.open(root), embedder=BagEmbedder())[0] == 0
    outcome = hql.run('import bm25\ncards | bm25("penguin") | count', hql.open_vault(root))
    assert not outcome.failed, outcome.render_reports()
    assert [p.name for p in leftovers if p.exists()] == []
