"""Extensions and unrelated installed packages that misbehave: HQL reports them and goes on.

A package is planted as a bare `.dist-info` folder and a module on a path entry, the
way pip leaves one; the command line sees it through PYTHONPATH as a user's would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hql
from hql import extend
from hql.extend import Extension, register
from hql.mcp.service import VaultService
from hql.registry import REGISTRY, Registry

ROOT = Path(__file__).resolve().parent.parent


def plant(where: Path, module: str, entry_points: bytes | str) -> None:
    info = where / f"{module}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    data = entry_points.encode() if isinstance(entry_points, str) else entry_points
    (info / "entry_points.txt").write_bytes(data)


def hql_cli(packages: Path, vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HQL_REPORT",)}
    env["PYTHONPATH"] = os.pathsep.join([str(packages), str(ROOT)])
    return subprocess.run(
        [sys.executable, "-m", "hql", "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=vault,
    )


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nA body.\n", encoding="utf-8")
    return root


@pytest.mark.parametrize("raised", ["SystemExit(7)", "KeyboardInterrupt"])
def test_an_extension_exiting_on_import_is_reported_not_obeyed(
    tmp_path: Path, vault: Path, raised: str
) -> None:
    packages = tmp_path / "site"
    plant(packages, "quitter", "[hql.extensions]\nquitter = quitter_ext:extension\n")
    (packages / "quitter_ext.py").write_text(f"raise {raised}\n")
    counted = hql_cli(packages, vault, "eval", "cards | count")
    assert (counted.returncode, counted.stdout.strip()) == (0, "1"), counted.stderr
    imported = hql_cli(packages, vault, "eval", "import quitter\ncards | count")
    assert imported.returncode == 1
    assert "the `quitter` extension is installed but did not load" in imported.stderr
    assert raised.split("(")[0] in imported.stderr
    assert "internal error" not in imported.stderr


@pytest.mark.parametrize(
    "entry_points",
    [
        b"[hql.extensions]\nbroken = broken_ext:extension\n\xff\xfe not UTF-8\n",
        b"[hql.extensions]\nbroken\n= \n[unclosed\n",
        b"[console_scripts]\n\xc3\x28 = x:y\n",
    ],
    ids=["not-utf8", "malformed", "not-utf8-other-group"],
)
def test_an_unreadable_distribution_does_not_break_every_vault(
    tmp_path: Path, vault: Path, entry_points: bytes
) -> None:
    packages = tmp_path / "site"
    plant(packages, "broken", entry_points)
    plant(packages, "fine", "[hql.extensions]\nfine = fine_ext:extension\n")
    (packages / "fine_ext.py").write_text(
        "from hql.extend import Extension\n"
        "extension = Extension('fine', version='1', summary='loads')\n"
        "@extension.function('twice(n: Int) -> Int', summary='doubles')\n"
        "def twice(n):\n    return 2 * n\n"
    )
    done = hql_cli(packages, vault, "eval", "import fine\ntwice(cards | count)")
    assert (done.returncode, done.stdout.strip()) == (0, "2"), done.stderr
    assert "internal error" not in done.stderr


def test_an_extension_that_loops_on_import_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant(tmp_path, "looper", "[hql.extensions]\nlooper = looper_ext:extension\n")
    (tmp_path / "looper_ext.py").write_text("while True:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(extend, "IMPORT_SECONDS", 0.5)
    registry = Registry()
    started = time.monotonic()
    extend.load_installed(registry)
    assert time.monotonic() - started < 10
    assert "looper" not in registry.extensions
    assert "does it loop on import?" in registry.load_failures["looper"]
    sys.modules.pop("looper_ext", None)


@pytest.fixture
def quitting() -> Iterator[Extension]:
    declared = Extension("quitting", version="1", summary="steps that exit")

    @declared.step("Collection<T> | leave() -> Int", summary="raises SystemExit")
    def leave(items: list[Any]) -> int:
        raise SystemExit(3)

    @declared.step("Collection<T> | interrupt() -> Int", summary="raises KeyboardInterrupt")
    def interrupt(items: list[Any]) -> int:
        raise KeyboardInterrupt

    register(declared)
    try:
        yield declared
    finally:
        REGISTRY.remove("quitting")


@pytest.mark.parametrize(("step", "raised"), [("leave", "SystemExit"), ("interrupt", "Keyboard")])
def test_a_step_raising_an_exit_is_the_extensions_report(
    quitting: Extension, vault: Path, step: str, raised: str
) -> None:
    outcome = hql.run(f"import quitting\ncards | {step}", vault=hql.open_vault(vault))
    assert outcome.failed
    message = outcome.reports[-1].message
    assert f"the step `{step}` of the `quitting` extension failed ({raised}" in message


def test_the_server_survives_a_step_raising_an_exit(quitting: Extension, vault: Path) -> None:
    service = VaultService(vault)
    for step in ("leave", "interrupt"):
        answer = service.query(f"import quitting\ncards | {step}")
        assert "quitting" in str(answer), answer
    assert service.query("cards | count")["value"] == 1
