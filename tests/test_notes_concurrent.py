"""Four writer processes on the same 20 notes: compare-and-swap on the digest keeps every accepted
write, refuses the rest out loud, tears no file, and leaves the catalogue, the bm25 store and the
semantic index agreeing with a fresh load.

By default 160 changes (40 per process); HQL_SLOW=1 makes it the full 500.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from standin_embedder import http_toml, standin_server

import hql
from hql.notes.fresh import bm25_store
from hql.notes.text import NoteText
from hql.search.bm25 import Bm25Index
from hql.text.analyzer import Analyzer
from hql.vault import yamldata

WORKER = Path(__file__).parent / "notes_worker.py"
PROCESSES = 4
CHANGES = 500 if os.environ.get("HQL_SLOW") else 160


def _vault(root: Path, endpoint: str) -> None:
    root.mkdir()
    (root / "hql.toml").write_text(http_toml(endpoint, "embed_on_write = true\n"))
    for number in range(20):
        folder = root / ("Projects" if number % 2 else "Areas")
        folder.mkdir(exist_ok=True)
        (folder / f"shared {number:02d}.md").write_text(
            f"---\ntags:\n  - shared\n# kept by hand\nstatus: active\n---\n"
            f"# Shared {number:02d}\n\nA note every writer touches.\n\n<!-- slot -->\n"
        )
    (root / "Library").mkdir()
    for number in range(100):
        (root / "Library" / f"book {number:03d}.md").write_text(
            f"---\nauthor: author {number % 7}\n---\n# Book {number:03d}\n\n"
            f"Notes on reading number {number}, about gardens and [[shared {number % 20:02d}]].\n"
        )


def _start_together(start: Path, running: list[subprocess.Popen[str]]) -> None:
    """Let the writers go once all have opened the vault: started one after another on a
    loaded machine, the first could otherwise finish before the last begins, and writers
    that never overlap never meet."""
    deadline = time.monotonic() + 300
    ready = [start.with_name(f"{start.name}.{worker}") for worker in range(PROCESSES)]
    while not all(path.exists() for path in ready) and time.monotonic() < deadline:
        assert all(process.poll() is None for process in running), "a writer ended early"
        time.sleep(0.01)
    start.touch()


def test_four_processes_lose_no_accepted_write_and_tear_no_file(tmp_path: Path) -> None:
    from hql.index.producer import build_index, verify_index

    root = tmp_path / "vault"
    with standin_server() as (endpoint, _state):
        _vault(root, endpoint)
        build_index(hql.Vault.open(root))
        environment = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
        logs = [tmp_path / f"worker{worker}.jsonl" for worker in range(PROCESSES)]
        start = tmp_path / "start"
        running = [
            subprocess.Popen(
                [sys.executable, str(WORKER), str(root), str(worker),
                 str(CHANGES // PROCESSES), str(1000 + worker), str(log), str(start)],
                env=environment, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            for worker, log in enumerate(logs)
        ]
        _start_together(start, running)
        for process in running:
            _, errors = process.communicate(timeout=600)
            assert process.returncode == 0, errors
        outcomes = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
        assert len(outcomes) == CHANGES
        counted = Counter(item["outcome"] for item in outcomes)
        assert set(counted) <= {"accepted", "stale"}, counted
        # The first changes all meet on one note (tests/notes_worker.py); the rest meet by chance.
        assert counted["stale"] >= PROCESSES - 1, "the writers never met: the test proves nothing"

        texts = {}
        for path in root.rglob("shared *.md"):
            text = NoteText.decode(path.read_bytes())  # whole: decodes, front matter closed
            assert text.header is not None and text.body.count("<!-- slot -->") == 1, path
            texts[path.stem] = (yamldata.load_mapping(text.header), text.body)
        assert len(texts) == 20
        for item in outcomes:
            properties, body = texts[item["note"]]
            token = item["token"]
            key = f"p_{token}"
            if item["kind"] == "append":
                found = body.count(f"appended {token}\n")
            elif item["kind"] == "edit":
                found = body.count(f"edited {token} ")
            else:
                found = int(key in properties)
            expected = 1 if item["outcome"] == "accepted" else 0
            assert found == expected, (item, found)
            if item["kind"] == "set" and expected:
                assert properties[key] == int(token.split("n")[-1])
        for properties, _ in texts.values():
            assert properties["status"] == "active" and properties["tags"] == ["shared"]

        # what the writes left in .hql/ is what a load from the files alone finds
        cached, fresh = hql.Vault.open(root), hql.Vault.open(root, use_cache=False)
        assert {c.name: (c.digest, c.metadata, c.body) for c in cached.cards} == {
            c.name: (c.digest, c.metadata, c.body) for c in fresh.cards
        }
        stored = bm25_store(cached)
        assert stored.analysed == 0  # the saved store already held every card as it is now
        anew = Bm25Index.build(fresh.cards, Analyzer.from_config(None), None)
        for question in ("appended w1n3", "edited w2n5", "shared gardens reading"):
            assert [(h.card.name, round(h.score, 6)) for h in stored.search(question, 10)] == [
                (h.card.name, round(h.score, 6)) for h in anew.search(question, 10)
            ]
        verified = verify_index(fresh)
        assert verified.ok, (verified.stale, verified.missing)
