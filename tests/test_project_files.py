"""The files a newcomer meets first: pyproject.toml, README.md, the sample vault's hql.toml."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_setuptools_reads_the_project_table_without_a_deprecation_warning() -> None:
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip("SPDX license strings need setuptools 77 or later")
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        distribution = apply_configuration(Distribution(), ROOT / "pyproject.toml")
    assert [str(w.message).splitlines()[0] for w in caught] == []
    assert distribution.metadata.license_expression == "MIT"
    build = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]
    assert "setuptools>=77" in build["requires"]  # the first release that takes an SPDX string


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def _hql(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("HQL_REPORT", None)
    return subprocess.run(
        [sys.executable, "-m", "hql", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_the_readme_names_every_command() -> None:
    from hql.cli import build_parser

    parser = build_parser()
    commands = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    listed = _readme().split("Commands:", 1)[1].split("Exit codes", 1)[0]
    for name in commands.choices:
        assert f"`{name}" in listed, f"README's command list leaves out `{name}`"


def test_the_readme_commands_run_from_the_repository_root() -> None:
    """What a newcomer types after `make demo`: each one-line command of "Using it" works."""
    lines = re.findall(r"^    \.venv/bin/hql (.*)$", _readme(), re.M)
    assert len(lines) >= 6
    ran = 0
    for line in lines:
        words = shlex.split(line, posix=True) if line.count("'") % 2 == 0 else None
        if words is None or {"repl", "mcp", "--write"} & set(words):
            continue  # interactive, a server, or a command that changes a file
        done = _hql(*words)
        assert done.returncode == 0, (line, done.stderr)
        ran += 1
    assert ran >= 5


def test_the_readme_python_example_runs(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    code = re.search(r"```python\n(.*?)```", _readme(), re.S)
    assert code is not None
    monkeypatch.chdir(ROOT)
    exec(compile(code.group(1), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.count("hql.bm25.v1") >= 3  # the loop printed each hit with its model
    assert '"type": "Ranking<Card>"' in out  # json_text()


def test_the_sample_vaults_own_suggestions_run_from_the_repository_root() -> None:
    config = (ROOT / "vaults" / "web-auth" / "hql.toml").read_text(encoding="utf-8")
    suggested = re.findall(r"^#\s+hql (.*)$", config, re.M)
    assert suggested
    for line in suggested:
        done = _hql(*shlex.split(line))
        assert done.returncode == 0, (line, done.stderr)


def test_every_folder_of_the_package_that_ships_files_is_listed() -> None:
    """setuptools warns at length about a folder it could import but was not told about."""
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
            "packages"
        ]
    )
    for folder in (ROOT / "hql").rglob("*"):
        if not folder.is_dir() or folder.name == "__pycache__":
            continue
        parts = folder.relative_to(ROOT).parts
        if all(part.isidentifier() for part in parts) and any(f.is_file() for f in folder.rglob("*")):
            assert ".".join(parts) in listed, f"{folder} ships files but is not in `packages`"


def test_the_tutorial_shows_what_eval_prints() -> None:
    tutorial = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    shown = re.findall(r"^    \$ \.venv/bin/hql (.*)\n((?:    (?!\$).*\n)+)", tutorial, re.M)
    assert len(shown) >= 2
    for command, output in shown:
        done = _hql(*shlex.split(command))
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout == "".join(line[4:] + "\n" for line in output.splitlines()), command


def test_the_repl_shows_the_tutorials_answers_as_render_wrote_them() -> None:
    """As the tutorial says: the same tables, except a single Data value shown as it is."""
    import hql
    from hql.render import answer
    from hql.repl.app import answer_text
    from hql.values import Data

    vault = hql.open_vault(ROOT / "vaults" / "web-auth")
    tutorial = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    programs = re.findall(r"```hql\n(.*?)```", tutorial, re.S)
    assert len(programs) >= 10
    for program in programs:
        outcome = hql.Session(vault).run(program)
        if outcome.failed:
            continue  # both show the report
        if isinstance(outcome.value, Data) and not isinstance(outcome.value.tree, dict | list):
            continue
        assert answer_text(outcome.value) == answer(outcome), program
