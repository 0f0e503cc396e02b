"""A watched vault's commands are answered by its watcher, exactly as they would be here.

A real `hql vault watch` serves a copy of the garden (440 notes) over its Unix
socket; every command runs twice as a user runs it, as a fresh `python -m hql`
process: once answered by the watcher and once with `HQL_LOCAL=1` (run where it
was typed). Output, warnings, reports and exit codes must be the same, and the
watcher's count of answered commands says which ones it answered.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_vault_watch import watching

import hql
from hql import messages, served
from hql.vault import walk, watch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs inotify")

ROOT = Path(__file__).resolve().parents[1]
GARDEN = ROOT / "bench" / "data" / "garden"


def _hql(*args: str, cwd: Path | None = None, local: bool = False, stdin: str = "") -> Any:
    environment = {k: v for k, v in os.environ.items() if k not in ("HQL_REPORT", "HQL_LOCAL")}
    if local:
        environment["HQL_LOCAL"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "hql", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=cwd,
        input=stdin,
        timeout=120,
    )


def _answered(root: Path) -> int:
    told = watch.tell(root / ".hql", b"answered")
    assert told is not None
    return int(told)


@pytest.fixture(scope="module")
def garden(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The garden served by `hql vault watch` in a process of its own."""
    root = tmp_path_factory.mktemp("served") / "garden"
    shutil.copytree(GARDEN, root, ignore=shutil.ignore_patterns(".hql"))
    (root / "hql.toml").write_text('[vault]\ndialect = "reference"\n')
    (root / "questions").mkdir()
    (root / "questions" / "reefs.hql").write_text(
        "import bm25\ncards | bm25($q) | take(3) | map(c => c.name)\n"
    )
    command = [sys.executable, "-m", "hql", "--vault", str(root), "vault", "watch"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        assert process.stderr.readline().startswith("watching ")
        yield root
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)


COMMANDS = [
    ("eval", "cards | count"),
    ("eval", 'import bm25\ncards | bm25("coral reef bleaching") | take(5)'),
    ("--format", "json", "eval", 'cards | filter(c => c.folder == "Ocean") | take(2)'),
    ("eval", "cards | nope"),  # a report with its location, exit 1
    ("eval", "cards | take($n) | map(c => c.name)", "--param-json", "n=2"),
    ("eval", "cards | take($n)", "--param-json", "n=[1"),  # a host error, exit 1
    ("run", "questions/reefs.hql", "--param", "q=coral"),  # a path from the caller's folder
    ("run", "questions/missing.hql"),
    ("check", "questions/reefs.hql"),
    ("check", "-e", "cards | take(1) | count"),
    ("explain", 'import bm25\ncards | bm25("ocean") | take(2)'),
    ("context", "how warm is the ocean near coral reefs", "--budget", "300"),
    ("--report", "collect", "eval", "cards | nope\ncards | count"),
    ("-q", "eval", "cards | take(1) | count"),
]


@pytest.mark.parametrize("arguments", COMMANDS, ids=[" ".join(c)[:40] for c in COMMANDS])
def test_a_command_answered_by_the_watcher_is_the_command_run_here(
    garden: Path, arguments: tuple[str, ...]
) -> None:
    before = _answered(garden)
    answered = _hql("--vault", str(garden), *arguments, cwd=garden)
    assert _answered(garden) == before + 1
    here = _hql("--vault", str(garden), *arguments, cwd=garden, local=True)
    assert _answered(garden) == before + 1
    assert (answered.returncode, _untimed(answered.stdout), answered.stderr) == (
        here.returncode,
        _untimed(here.stdout),
        here.stderr,
    )


def _untimed(text: str) -> str:
    """`explain` says how long each stage took, which differs from run to run (and so
    does the width of its column)."""
    return re.sub(r"-+|\s+|\b\d+\.\d+ ms\b", " ", text)


def test_a_relative_vault_path_is_answered_from_the_callers_folder(garden: Path) -> None:
    before = _answered(garden)
    answered = _hql("--vault", "garden", "eval", "cards | count", cwd=garden.parent)
    assert answered.returncode == 0 and int(answered.stdout) > 400
    assert _answered(garden) == before + 1


def test_a_change_made_just_before_the_command_is_in_its_answer(garden: Path) -> None:
    counted = int(_hql("--vault", str(garden), "eval", "cards | count").stdout)
    note = garden / "Ocean" / "Served finding.md"
    note.write_text("# Served finding\n\nA quokka at sea. #ocean\n")
    try:
        program = 'import bm25\ncards | bm25("quokka") | take(1)'
        assert int(_hql("--vault", str(garden), "eval", "cards | count").stdout) == counted + 1
        assert "Served finding" in _hql("--vault", str(garden), "eval", program).stdout
    finally:
        note.unlink()
    assert int(_hql("--vault", str(garden), "eval", "cards | count").stdout) == counted


@pytest.mark.parametrize(
    "arguments",
    [
        ("run", "-"),  # the program comes on stdin
        ("eval", "cards | count", "--svg", "out.svg"),  # writes a picture file
        ("vault", "warnings"),  # not a command the watcher answers
    ],
)
def test_what_the_watcher_cannot_answer_the_same_way_runs_here(
    garden: Path, tmp_path: Path, arguments: tuple[str, ...]
) -> None:
    before = _answered(garden)
    ran = _hql("--vault", str(garden), *arguments, cwd=tmp_path, stdin="cards | count\n")
    here = _hql(
        "--vault", str(garden), *arguments, cwd=tmp_path, stdin="cards | count\n", local=True
    )
    assert _answered(garden) == before
    assert (ran.returncode, ran.stdout, ran.stderr) == (here.returncode, here.stdout, here.stderr)


def test_another_vault_named_is_not_answered(garden: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("# A\n")
    # The watcher's socket, reached through a link inside another vault's state folder.
    (other / ".hql").mkdir()
    (other / ".hql" / watch.SOCKET).symlink_to(garden / ".hql" / watch.SOCKET)
    before = _answered(garden)
    ran = _hql("--vault", str(other), "eval", "cards | count")
    assert ran.stdout == "1\n"
    assert _answered(garden) == before


# --- in this process: what a command answered by the watcher reads ---------------------


def serving(root: Path, answering: served.Answering | None = None) -> Any:
    """The vault's watcher, on a thread of this process, answering commands."""
    return watching(root, answering or served.Answering(str(root)))


@pytest.fixture
def one_card(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    monkeypatch.delenv("HQL_LOCAL", raising=False)
    return root


def _runs_here(root: Path) -> bool:
    """Whether `cards | count` is left to run where it was typed (the watcher answers nothing)."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out):
        return served.forward(["--vault", str(root), "eval", "cards | count"]) is None


def _forwarded(root: Path, program: str) -> str:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out):
        code = served.forward(["--vault", str(root), "eval", program])
    assert code == 0
    out.seek(0)
    return out.read()


def test_the_watcher_keeps_the_vault_open_until_something_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "garden"
    shutil.copytree(GARDEN, root, ignore=shutil.ignore_patterns(".hql"))
    monkeypatch.delenv("HQL_LOCAL", raising=False)
    walked: list[str] = []
    real = walk.walk
    monkeypatch.setattr(walk, "walk", lambda *a: walked.append(a[0]) or real(*a))
    opened = 0
    real_open = served.OpenVault.get

    def counted_get(self: served.OpenVault, path: str, token: str) -> Any:
        nonlocal opened
        kept = self._vault
        vault = real_open(self, path, token)
        opened += vault is not kept
        return vault

    monkeypatch.setattr(served.OpenVault, "get", counted_get)
    asked: list[bytes] = []
    real_tell = watch.tell
    monkeypatch.setattr(watch, "tell", lambda state, q: asked.append(q) or real_tell(state, q))
    with serving(root):
        first = _forwarded(root, "cards | count")
        for _ in range(3):
            assert _forwarded(root, "cards | count") == first
        assert opened == 1 and len(walked) == 1
        (root / "Ocean" / "Another.md").write_text("# Another\n")
        assert int(_forwarded(root, "cards | count")) == int(first) + 1
        # Opened again once, and without asking its own socket (which would wait, then walk).
        assert opened == 2 and len(walked) == 2
        assert asked == []


def test_once_the_code_changes_commands_run_where_they_are_typed(
    one_card: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = io.StringIO()
    stamp = [1]
    monkeypatch.setattr(served, "code_stamp", lambda: stamp[0])
    answering = served.Answering(str(one_card), log)
    with serving(one_card, answering):
        assert _forwarded(one_card, "cards | count") == "1\n"
        stamp[0] = 2  # an HQL file edited, or a package installed, since it started
        assert _runs_here(one_card)
        stamp[0] = 1  # and it does not take answering up again on its own
        assert _runs_here(one_card)
    assert answering.answered == 1
    assert log.getvalue() == f"{messages.watch_code_changed()}\n"


def test_a_command_from_another_user_is_not_run(
    one_card: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answering = served.Answering(str(one_card))
    with serving(one_card, answering):
        assert _forwarded(one_card, "cards | count") == "1\n"
        real = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: real + 1)  # the watcher runs as another user
        assert _runs_here(one_card)
    assert answering.answered == 1


def test_a_command_the_watcher_fails_on_runs_where_it_was_typed(
    one_card: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(payload: bytes, token: str, vaults: served.OpenVault) -> bytes:
        raise RuntimeError("a defect")

    answering = served.Answering(str(one_card))
    with serving(one_card, answering):
        with monkeypatch.context() as patched:
            patched.setattr(served, "answer", broken)
            assert _runs_here(one_card)
        assert _forwarded(one_card, "cards | count") == "1\n"  # the watcher still answers
    assert answering.answered == 1
    assert messages.watch_command_failed(RuntimeError("a defect")) in capsys.readouterr().err


def test_a_watcher_answers_its_first_question_from_the_full_index(
    one_card: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hql.search import shared, terms

    monkeypatch.setattr(shared, "WORD_INDEX_QUESTIONS", 4)  # as in a process of its own
    shared.many_questions_ahead()  # what `hql vault watch` says of its process
    (one_card / "b.md").write_text("# B\n\nbearer tokens in a header\n")
    hql.Vault.open(one_card)  # the first load catalogues the cards
    earlier = hql.Vault.open(one_card)  # and a later process writes the word index
    assert not hql.run('import bm25\ncards | bm25("header") | take(1)', vault=earlier).failed
    assert terms.path_in(one_card / ".hql").exists()
    answering = served.Answering(str(one_card))
    with serving(one_card, answering):
        program = 'import bm25\ncards | bm25("bearer token") | take(1) | map(h => h.card.name)'
        assert _forwarded(one_card, program) == "[b]\n"
        vault = answering.vaults._vault
        assert vault is not None and shared._bm25_indexes.get(vault) is not None
