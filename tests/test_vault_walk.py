"""The walk: every document below the root with its `stat`, in component-wise name order.

A folder's plain documents are picked out in bulk and only folders, symlinks and
entries of unknown type are looked at one by one; these tests pin that the order,
the paths, the formats, the `stat`s and the warnings are what a plain depth-first
walk in name order gives, whatever mix a folder holds.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from hql import served
from hql.vault import walk
from hql.vault.model import LoadWarning


def _mixed(root: Path, outside: Path) -> None:
    """Documents, folders among them in name order, and everything else a folder holds."""
    for relpath in (
        "a.md",
        "b/inner.md",
        "b/deeper/x.hmd",
        "b/later.md",
        "b.md",
        "b-c.md",
        "c.markdown",
        "dir.md/in.md",  # a folder named like a document
        "z/last.md",
        "Z.md",
        "notes.txt",
        ".hidden.md",
        ".obsidian/app.md",
        "b/.trash/gone.md",
    ):
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {relpath}\n")
    (root / "alias.md").symlink_to(root / "b" / "inner.md")  # a document symlinked inside
    (root / "linked").symlink_to("z")  # a folder symlinked inside
    outside.mkdir()
    (outside / "o.md").write_text("# outside\n")
    (root / "y-out.md").symlink_to(outside / "o.md")
    (root / "b" / "deeper" / "out.md").symlink_to(outside / "o.md")  # first in walk order
    (root / "gone.md").symlink_to(root / "nowhere.md")  # a dangling symlink


def _expected(root: Path) -> list[str]:
    """Every document's relative path, as a plain depth-first walk in name order finds it."""
    found: list[str] = []
    seen: set[tuple[int, int]] = set()

    def visit(folder: Path, prefix: str) -> None:
        status = os.stat(folder)
        if (status.st_dev, status.st_ino) in seen:
            return
        seen.add((status.st_dev, status.st_ino))
        for name in sorted(os.listdir(folder)):
            path = folder / name
            if name.startswith("."):
                continue
            real = os.path.realpath(path)
            if path.is_symlink() and not real.startswith(str(root.resolve()) + os.sep):
                continue
            if path.is_dir():
                visit(path, prefix + name + "/")
            elif os.path.splitext(name)[1] in walk.FORMATS:
                found.append(prefix + name)

    visit(root, "")
    return found


def test_a_walk_finds_every_document_in_component_order(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    _mixed(root, tmp_path / "outside")
    warnings: list[LoadWarning] = []
    walked = walk.walk(str(root), warnings)
    assert walked.relpaths == _expected(root)
    assert "b/deeper/x.hmd" in walked.relpaths and "linked/last.md" in walked.relpaths
    assert "z/last.md" not in walked.relpaths  # the folder `linked` leads to, walked once
    assert any("already loaded" in w.message for w in warnings)
    assert walked.relpaths.index("b/later.md") < walked.relpaths.index("b.md")
    assert list(walked.paths) == [os.path.join(str(root), r) for r in walked.relpaths]
    assert walked.formats == [walk.FORMATS[os.path.splitext(r)[1]] for r in walked.relpaths]
    for relpath, status in zip(walked.relpaths, walked.statuses, strict=True):
        if relpath == "gone.md":
            assert isinstance(status, OSError)
        else:
            assert isinstance(status, os.stat_result)
            assert status == os.stat(root / relpath)
    # two symlinks lead outside; the warning names the first in the walk's order
    outside = [w for w in warnings if "outside the vault" in w.message]
    assert len(outside) == 1 and outside[0].message.startswith("2 symlinks")
    assert outside[0].path == str(root / "b" / "deeper" / "out.md")


def test_a_walk_of_a_folder_of_plain_documents_is_sorted_by_name(tmp_path: Path) -> None:
    names = [f"{n * 7919 % 1000:03d}-{n}.md" for n in range(300)]
    for name in names:
        (tmp_path / name).write_text("x")
    walked = walk.walk(str(tmp_path), [])
    assert walked.relpaths == sorted(names)
    assert all(type(status) is os.stat_result for status in walked.statuses)


def test_the_signature_columns_are_worked_out_once_and_handed_out_as_copies(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.md").write_text("a")
    walked = walk.walk(str(tmp_path), [])
    columns = walked.signature_columns()
    assert len(columns) == len(walk.SIGNATURE_CODES)
    columns.clear()
    assert walked.signature_columns() == walk.Walk.of(walked.found()).signature_columns()


def test_a_command_ends_at_once_only_when_nothing_is_left_for_an_orderly_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ended: list[int] = []
    monkeypatch.setattr(os, "_exit", ended.append)
    monkeypatch.delenv("HQL_DEBUG", raising=False)
    monkeypatch.setattr("atexit._ncallbacks", lambda: 0)
    monkeypatch.setattr("_thread._count", lambda: 1)  # a thread still runs
    served._end_at_once(0)
    assert ended == []
    monkeypatch.setattr("_thread._count", lambda: 0)
    monkeypatch.setattr("atexit._ncallbacks", lambda: 1)  # an exit handler waits
    served._end_at_once(0)
    assert ended == []
    monkeypatch.setattr("atexit._ncallbacks", lambda: 0)
    served._end_at_once(3)
    assert ended == [3]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a POSIX pipe")
def test_a_command_that_ends_at_once_has_written_all_its_output(tmp_path: Path) -> None:
    import subprocess

    for at in range(40):
        (tmp_path / f"card-{at:02d}.md").write_text(f"# Card {at}\n\n{'word ' * 2000}\n")
    environment = {k: v for k, v in os.environ.items() if k not in ("HQL_DEBUG", "HQL_LOCAL")}
    # The `hql` command as installed, its `os._exit` marked so that the test sees the
    # command did end at once (an orderly exit would write the same output).
    marked = (
        "import os, sys\n"
        "from hql import served\n"
        "real = os._exit\n"
        "def marked(code):\n"
        "    os.write(2, b'ended at once\\n')\n"
        "    real(code)\n"
        "os._exit = marked\n"
        "sys.argv = ['hql', *sys.argv[1:]]\n"
        "sys.exit(served.main())\n"
    )

    def hql(program: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", marked, "--vault", str(tmp_path), "eval", program],
            capture_output=True,
            text=True,
            env=environment,
            timeout=120,
        )

    done = hql("cards | map(c => c.body)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("word") == 40 * 2000 and done.stdout.endswith("]\n")
    assert done.stderr == "ended at once\n"
    failed = hql("cards | nope")
    assert failed.returncode == 1 and "nope" in failed.stderr and failed.stdout == ""
    assert failed.stderr.endswith("ended at once\n")


def test_a_document_gone_before_its_stat_keeps_the_error_and_the_rest_their_stats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.md", "b.md", "c.md"):
        (tmp_path / name).write_text(name)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.md").write_text("d")
    made = walk._folder_statuses

    def gone_first(folder: str, names: list[str]) -> Any:
        if os.path.exists(tmp_path / "b.md"):
            (tmp_path / "b.md").unlink()
        if folder.endswith("sub"):
            (tmp_path / "sub").rename(tmp_path / "moved")  # the folder itself is gone
        return made(folder, names)

    monkeypatch.setattr(walk, "_folder_statuses", gone_first)
    walked = walk.walk(str(tmp_path), [])
    assert walked.relpaths == ["a.md", "b.md", "c.md", "sub/d.md"]
    kinds = [type(status).__name__ for status in walked.statuses]
    assert kinds == ["stat_result", "FileNotFoundError", "stat_result", "FileNotFoundError"]
    assert walked.statuses[0] == os.stat(tmp_path / "a.md")
