"""README's way in, from scratch: `make setup` in a fresh clone named `hql`, then README's
Python lines run in the folder that holds the clone (where `hql/`, the clone, has no
__init__.py and would be imported as a namespace package if the install lost to it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_NOT_COPIED = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", "*.egg-info", "build", ".*_cache", ".hql"
)
_OFFLINE = re.compile(
    r"Could not find a version|Failed to establish a new connection|NewConnectionError|Temporary failure in name resolution"
)


def readme_python() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "README.md has no ```python block"
    return blocks[0]


def test_readme_python_runs_from_the_clones_parent_folder(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("no `make` on this machine: README's setup cannot be followed")
    probe = subprocess.run(
        [sys.executable, "-c", "import venv, ensurepip"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        pytest.skip(f"this Python has no venv/ensurepip module: {probe.stderr.strip()}")
    clone = tmp_path / "hql"
    shutil.copytree(ROOT, clone, ignore=_NOT_COPIED, symlinks=True)
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    }
    # pip keeps using the user's cache (~/.cache/pip): the wheels built once, pyicu's too.
    setup = subprocess.run(
        ["make", "setup", f"PYTHON={sys.executable}"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    if setup.returncode != 0 and _OFFLINE.search(setup.stdout + setup.stderr):
        pytest.skip("`make setup` needs the package index and it cannot be reached")
    assert setup.returncode == 0, setup.stdout + setup.stderr
    snippet = readme_python().replace('"vaults/web-auth"', '"hql/vaults/web-auth"')
    assert "hql/vaults/web-auth" in snippet  # README's vault, seen from the parent folder
    python = clone / ".venv" / "bin" / "python"
    ran = subprocess.run(
        [str(python), "-c", snippet + "\nprint('HQL FROM', hql.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"HQL FROM {clone / 'hql' / '__init__.py'}" in ran.stdout
    assert "hql.bm25.v1" in ran.stdout  # the hits were printed
