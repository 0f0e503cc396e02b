"""A damaged semantic index or HNSW sidecar: one report each (never a traceback), and a
build repairs what a read refuses (issue 31).

The damage is done the way a careless script or an attacker would: rows edited with
sqlite3 (the pins sealed again, so only the rows' own checks can catch it), bytes of
the SQLite file flipped, the graph's JSON sidecar rewritten, a FIFO in its place.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from standin_embedder import BASE_CARDS, standin_vector, write_vault

import hql
from hql.index import pins
from hql.index.commands import build_command, inspect_command, verify_command
from hql.index.reader import clear_cache, read_model
from hql.index.semantic import semantic_ranking
from hql.vault import Vault

QUESTION = "penguins swim underwater"
DEEP = "[" * 100_000 + "]" * 100_000


class BagEmbedder:
    model_id, revision = "bag", "1"

    def embed_passages(self, texts):
        return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

    embed_queries = embed_passages


def _open(root: Path) -> Vault:
    return Vault.open(root, use_cache=False)


def _build(root: Path, embedder: Any = None) -> tuple[int, str]:
    clear_cache()
    return build_command(_open(root), [QUESTION], embedder=embedder or BagEmbedder())


def _ask(root: Path) -> hql.Outcome:
    clear_cache()
    return hql.run(f'import semantic\ncards | semantic("{QUESTION}") | take(2)', vault=_open(root))


@pytest.fixture
def garden(tmp_path: Path) -> Path:
    root = tmp_path / "garden"
    write_vault(root, BASE_CARDS, '[semantics]\nindex = ".hql/index.sqlite"\n')
    code, text = _build(root)
    assert code == 0, text
    return root


def _edit_section(root: Path, assignment: str, value: object, reseal: bool = True) -> None:
    """Change one section row of `penguin`; with `reseal`, pin the edited rows again."""
    connection = sqlite3.connect(root / ".hql/index.sqlite")
    with connection:
        connection.execute(f"UPDATE section SET {assignment} = ? WHERE card = 'penguin'", (value,))
        if reseal:
            pins.seal(connection, read_model(connection))
    connection.close()


@pytest.mark.parametrize(
    ("assignment", "value"),
    [
        ("heading", DEEP),
        ("heading", '{"a": [' * 5000 + "]}" * 5000),
        ("heading", '{"not": "a list"}'),
        ("line_start", "seven"),
        ("ordinal", "first"),
    ],
    ids=["deep-list", "deep-map", "map", "text-line", "text-ordinal"],
)
def test_a_damaged_section_row_is_reported_and_a_build_repairs_it(
    garden: Path, assignment: str, value: object
) -> None:
    _edit_section(garden, assignment, value)
    asked = _ask(garden)
    assert asked.failed
    message = asked.render_reports()
    assert "section row of `penguin`" in message and "hql index build" in message
    code, text = verify_command(_open(garden))
    assert code == 1 and "`penguin`" in text and "hql index build" in text
    code, text = inspect_command(_open(garden))
    assert code == 0 and "cards       4" in text  # inspect still describes the file
    code, text = _build(garden)
    assert code == 0 and "embedded 1 card" in text, text
    assert verify_command(_open(garden))[0] == 0
    repaired = _ask(garden)
    assert not repaired.failed, repaired.render_reports()
    assert [hit.card.name for hit in repaired.value][0] == "penguin"


def test_the_command_line_reports_a_deep_heading_without_a_traceback(garden: Path) -> None:
    _edit_section(garden, "heading", DEEP)
    environment = {**os.environ, "PYTHONPATH": str(Path(hql.__file__).parents[1])}
    command = [sys.executable, "-m", "hql", "--vault", str(garden)]
    for action in (
        ["index", "verify"],
        ["index", "inspect"],
        ["eval", 'import semantic\ncards | semantic("penguins swim underwater")'],
    ):
        done = subprocess.run(
            [*command, *action], capture_output=True, text=True, env=environment, timeout=120
        )
        output = done.stdout + done.stderr
        assert "Traceback" not in output and "internal error" not in output, output
        assert "nests too deeply" not in output  # the file's nesting, not the program's
    assert done.returncode == 1 and "section row of `penguin`" in done.stderr


def _flip_schema_text(root: Path) -> None:
    """A byte of the schema's own SQL made invalid UTF-8: SQLite's error then is not UTF-8."""
    path = root / ".hql/index.sqlite"
    raw = bytearray(path.read_bytes())
    at = raw.index(b"PRIMARY KEY") + len(b"PRIMARY KE")
    raw[at] = 0xD9
    path.write_bytes(bytes(raw))


def test_an_index_whose_schema_is_not_utf8_is_reported_and_rebuilt(garden: Path) -> None:
    _flip_schema_text(garden)
    asked = _ask(garden)
    assert asked.failed and "hql index build" in asked.render_reports()
    assert verify_command(_open(garden))[0] == 1
    assert inspect_command(_open(garden))[0] == 1
    code, text = _build(garden)
    assert code == 0 and "could not be read (damaged): built anew" in text, text
    assert not _ask(garden).failed


def test_a_flipped_header_bit_says_what_the_build_does(garden: Path) -> None:
    """A file that no longer starts as SQLite is left alone by the build: the read says so."""
    path = garden / ".hql/index.sqlite"
    raw = bytearray(path.read_bytes())
    raw[3] ^= 0x02
    path.write_bytes(bytes(raw))
    message = _ask(garden).render_reports()
    assert "leaves it alone" in message and "remove it" in message
    code, text = _build(garden)
    assert code == 1 and "left alone" in text
    path.unlink()
    assert _build(garden)[0] == 0 and not _ask(garden).failed


# --- the HNSW graph's sidecar -------------------------------------------------------------

hnswlib = pytest.importorskip("hnswlib")

from test_index_hnsw import WideBag, toml, write_cards  # noqa: E402


@pytest.fixture
def birds(tmp_path: Path) -> Path:
    root = tmp_path / "birds"
    root.mkdir()
    (root / "hql.toml").write_text(toml(), encoding="utf-8")
    write_cards(root, 300)
    code, text = build_command(_open(root), [_first_card_words(root)], embedder=WideBag())
    assert code == 0 and "HNSW graph built whole" in text, text
    return root


def _first_card_words(root: Path) -> str:
    return (root / "card-0000.md").read_text(encoding="utf-8").splitlines()[-1]


def _sidecar(root: Path) -> Path:
    return root / ".hql/index.sqlite.hnsw.json"


def _rewrite(root: Path, change: Any) -> None:
    path = _sidecar(root)
    meta = json.loads(path.read_text(encoding="utf-8"))
    change(meta)
    status = path.stat()
    path.write_text(json.dumps(meta), encoding="utf-8")
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


def _swap_labels(meta: dict[str, Any]) -> None:
    cards = meta["cards"]
    cards["card-0000"][1], cards["card-0001"][1] = cards["card-0001"][1], cards["card-0000"][1]


def _fifo(root: Path) -> None:
    _sidecar(root).unlink()
    os.mkfifo(_sidecar(root))


DAMAGE = {
    "deep-json": lambda root: _sidecar(root).write_text(DEEP, encoding="utf-8"),
    "huge-label": lambda root: _rewrite(
        root, lambda m: m["cards"]["card-0000"].__setitem__(1, [2**70])
    ),
    "null-entry": lambda root: _rewrite(root, lambda m: m["cards"].__setitem__("card-0000", None)),
    "text-count": lambda root: _rewrite(root, lambda m: m.__setitem__("removed", "x")),
    "swapped-labels": lambda root: _rewrite(root, _swap_labels),
    "fifo": _fifo,
}


def _in_time(work: Any, seconds: float = 60) -> Any:
    """`work()`'s result, failing the test when it blocks (a FIFO read would)."""
    found: list[Any] = []
    thread = threading.Thread(target=lambda: found.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the command blocked"
    assert found, "the command raised"
    return found[0]


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_sidecar_is_searched_exactly_and_a_build_rebuilds_it(
    birds: Path, damage: str
) -> None:
    DAMAGE[damage](birds)
    question = _first_card_words(birds)
    result = _in_time(lambda: semantic_ranking(_open(birds), question, k=5, embedder=WideBag()))
    assert result.retrieval.approximate is False
    assert any("hql index build" in warning for warning in result.warnings), result.warnings
    assert result.hits[0][0] == "card-0000"
    code, text = _in_time(lambda: inspect_command(_open(birds)))
    assert code == 0 and "hnsw graph  not used" in text, text
    code, text = _in_time(lambda: build_command(_open(birds), [], embedder=WideBag()))
    assert code == 0 and "HNSW graph built whole (300 vectors)" in text, text
    again = semantic_ranking(_open(birds), question, k=5, embedder=WideBag())
    assert again.retrieval.approximate is True and not again.warnings
    assert again.hits[0][0] == "card-0000"


# --- Qdrant's local folder: sealed by HQL, never opened otherwise ---------------------------

MARKER = "executed-by-unpickling"


class _Planted:
    """Unpickling this creates the marker file: what a crafted local folder would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def _qdrant_toml(endpoint: str) -> str:
    return (
        '[semantics]\nstore = "qdrant"\nembed_queries = true\n'
        '\n[semantics.qdrant]\npath = ".hql/qdrant"\ncollection = "notes"\n'
        '\n[semantics.embedder]\nprovider = "http"\n'
        f'endpoint = "{endpoint}"\nmodel = "standin-bow"\nrevision = "1"\n'
    )


def _plant(folder: Path, marker: Path) -> None:
    """A local folder as qdrant-client writes one, whose one point is a hostile pickle."""
    import pickle

    storage = folder / "collection" / "notes"
    storage.mkdir(parents=True)
    meta = {
        "collections": {"notes": {"vectors": {"size": 64, "distance": "Dot"}}},
        "aliases": {},
    }
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    connection = sqlite3.connect(storage / "storage.sqlite")
    with connection:
        connection.execute("CREATE TABLE points (id TEXT PRIMARY KEY, point BLOB)")
        connection.execute(
            "INSERT INTO points VALUES (?, ?)", ("a", pickle.dumps(_Planted(marker)))
        )
    connection.close()


@pytest.fixture
def standin() -> Any:
    pytest.importorskip("qdrant_client")
    from standin_embedder import standin_server

    from hql.index.stores.qdrant import close_clients

    with standin_server() as (url, _):
        yield url
    close_clients()


def _hql(root: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(Path(hql.__file__).parents[1])}
    return subprocess.run(
        [sys.executable, "-m", "hql", "--vault", str(root), *arguments],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def test_a_planted_qdrant_folder_is_never_opened(tmp_path: Path, standin: str) -> None:
    root = tmp_path / "garden"
    write_vault(root, BASE_CARDS, _qdrant_toml(standin))
    marker = tmp_path / MARKER
    _plant(root / ".hql" / "qdrant", marker)
    for arguments in (
        ("eval", f'import semantic\ncards | semantic("{QUESTION}")'),
        ("index", "verify"),
        ("index", "inspect"),
        ("index", "build"),
    ):
        done = _hql(root, *arguments)
        assert not marker.exists(), f"`hql {' '.join(arguments)}` ran the planted pickle"
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert "qdrant-client's local mode runs code" in done.stderr, done.stderr
    assert "left alone" in done.stderr  # the build neither opened nor moved it
    assert (root / ".hql" / "qdrant" / "meta.json").exists()


def _built_qdrant(tmp_path: Path, endpoint: str) -> Path:
    from hql.index.stores.qdrant import close_clients

    root = tmp_path / "garden"
    write_vault(root, BASE_CARDS, _qdrant_toml(endpoint))
    code, text = build_command(_open(root), [QUESTION])
    assert code == 0, text
    close_clients()  # the folder sealed and free, as after a command
    return root


def _storage(root: Path) -> Path:
    return root / ".hql" / "qdrant" / "collection" / "notes" / "storage.sqlite"


def _flip_a_point(root: Path) -> None:
    path = _storage(root)
    raw = bytearray(path.read_bytes())
    raw[len(raw) - 200] ^= 0x10
    path.write_bytes(bytes(raw))


def _replace_meta_by_fifo(root: Path) -> None:
    meta = root / ".hql" / "qdrant" / "meta.json"
    meta.unlink()
    os.mkfifo(meta)


QDRANT_DAMAGE = {
    "flipped-byte": _flip_a_point,
    "truncated": lambda root: _storage(root).write_bytes(_storage(root).read_bytes()[:1000]),
    "text-file": lambda root: _storage(root).write_text("not a database\n", encoding="utf-8"),
    "fifo-meta": _replace_meta_by_fifo,
}


@pytest.mark.parametrize("damage", sorted(QDRANT_DAMAGE))
def test_a_damaged_qdrant_folder_is_one_report_and_a_build_repairs_it(
    tmp_path: Path, standin: str, damage: str
) -> None:
    from hql.index.stores.qdrant import close_clients

    root = _built_qdrant(tmp_path, standin)
    QDRANT_DAMAGE[damage](root)
    source = f'import semantic\ncards | semantic("{QUESTION}") | take(2)'
    asked = _in_time(lambda: hql.run(source, vault=_open(root)))
    assert asked.failed
    message = asked.render_reports()
    assert "does not open it" in message and "hql index build" in message, message
    code, text = _in_time(lambda: verify_command(_open(root)))
    assert code == 1 and "does not open it" in text
    code, text = _in_time(lambda: build_command(_open(root)))
    assert code == 0 and "moved, unopened, to" in text, text
    close_clients()
    repaired = hql.run(source, vault=_open(root))
    assert not repaired.failed, repaired.render_reports()
    assert [hit.card.name for hit in repaired.value][0] == "penguin"
    assert any(path.name.startswith("qdrant.refused-") for path in (root / ".hql").iterdir())


def test_a_sealed_folder_stays_open_to_later_commands(tmp_path: Path, standin: str) -> None:
    """HQL's own writes (a build, a question kept at run time) keep the folder sealed."""
    from hql.index.stores.qdrant import close_clients

    root = _built_qdrant(tmp_path, standin)
    source = 'import semantic\ncards | semantic("ducks dabble for weeds") | take(1)'
    first = hql.run(source, vault=_open(root))  # embeds the question now and keeps it
    assert not first.failed, first.render_reports()
    close_clients()
    again = hql.run(source, vault=_open(root))
    assert not again.failed, again.render_reports()
    assert [hit.card.name for hit in again.value] == ["duck"]
