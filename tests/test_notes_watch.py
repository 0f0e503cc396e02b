"""A change `hql vault watch` sees, made by anyone (an editor, a script), reaches the bm25
store and, with `[semantics] embed_on_write = true`, that note's vectors in the index."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from standin_embedder import BASE_CARDS, http_toml, standin_server, write_vault

import hql
from hql.index.producer import build_index
from hql.index.stores import open_store
from hql.notes.fresh import bm25_store

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")

QUESTION = "import semantic\ncards | semantic($q) | take(1) | map(h => h.card.name)"


def _fresh(root: Path, name: str) -> bool:
    vault = hql.Vault.open(root)
    card = vault.card(name)
    return card is not None and open_store(vault).digests().get(name) == card.digest


def test_an_edit_the_watcher_sees_is_embedded_and_indexed(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    with standin_server() as (endpoint, _state):
        write_vault(
            root, BASE_CARDS, http_toml(endpoint, "embed_queries = true\nembed_on_write = true\n")
        )
        (root / "Birds").mkdir()
        heron = root / "Birds" / "heron.md"
        heron.write_text("---\ntitle: Heron\n---\nHerons wade.\n")
        build_index(hql.Vault.open(root))
        watcher = subprocess.Popen(
            [sys.executable, "-m", "hql", "--vault", str(root), "vault", "watch"],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert watcher.stderr is not None
            assert "watching" in watcher.stderr.readline()
            with heron.open("a") as note:  # as an editor saves: in place, not through hql
                note.write("Herons stalk frogs in reed marshes at dawn.\n")
            deadline = time.monotonic() + 60
            while not _fresh(root, "heron") and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _fresh(root, "heron"), "the watcher did not embed the edited note"
            vault = hql.Vault.open(root)
            assert bm25_store(vault).analysed == 0  # the store already held the edit
            asked = hql.run(QUESTION, vault=vault, params={"q": "frogs reed marshes dawn"})
            assert list(asked.value) == ["heron"]
        finally:
            watcher.send_signal(signal.SIGTERM)
            watcher.wait(timeout=30)
