"""Golden tests: each tests/golden/*.hql runs, and its answer must match the files beside it.

    name.hql   the program; header comments say how to run it and what the original answered
    name.out   the expected stdout of `hql run name.hql` (the value's plain display)
    name.err   the expected reports as rendered on stderr (absent: no reports at all)

Header comments (the upstream examples use the same ones):

    // vault: examples-birds       a vault under tests/fixtures/ or tests/golden/vaults/
    // mode: collect               the report mode (default strict)
    // expected-type: List<Int>    the checked type
    // expected: [1, 2]            the plain display, on one line
    // expected-json: [1,2]        the JSON projection of the value
    // stage: typecheck            the stage of the first report (typecheck, evaluate, parse)

Regenerate .out/.err after a deliberate change with `HQL_GOLDEN_UPDATE=1 pytest tests/test_golden.py`,
then read the diff: the upstream headers are the original's answers and must keep passing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import hql
from hql.api import Outcome
from hql.vault import Vault

GOLDEN = Path(__file__).parent / "golden"
VAULT_HOMES = (Path(__file__).parent / "fixtures", GOLDEN / "vaults")
STAGES = {"parse": "syntax", "typecheck": ("type", "name"), "evaluate": "evaluation"}
UPDATE = os.environ.get("HQL_GOLDEN_UPDATE") == "1"

_vaults: dict[str, Vault] = {}


def headers(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("// ") and ":" in line:
            key, _, value = line[3:].partition(":")
            if key.replace("-", "").isalpha():
                found.setdefault(key.strip(), value.strip())
    return found


def vault_named(name: str) -> Vault:
    if name not in _vaults:
        root = next(home / name for home in VAULT_HOMES if (home / name).is_dir())
        _vaults[name] = hql.open_vault(root)
    return _vaults[name]


def run(path: Path) -> tuple[Outcome, dict[str, str]]:
    text = path.read_text(encoding="utf-8")
    given = headers(text)
    vault = vault_named(given["vault"]) if "vault" in given else None
    outcome = hql.run(text, vault=vault, mode=given.get("mode", "strict"), origin=path.name)
    return outcome, given


def expected_stdout(outcome: Outcome) -> str:
    return "" if outcome.failed else outcome.text() + "\n"


def expected_stderr(outcome: Outcome) -> str:
    return outcome.render_reports() + "\n" if outcome.reports else ""


PROGRAMS = sorted(GOLDEN.glob("*.hql"))


def test_there_are_golden_programs() -> None:
    assert len(PROGRAMS) >= 20


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_golden(path: Path) -> None:
    outcome, given = run(path)
    out, err = path.with_suffix(".out"), path.with_suffix(".err")
    if UPDATE:
        out.write_text(expected_stdout(outcome), encoding="utf-8")
        if outcome.reports:
            err.write_text(expected_stderr(outcome), encoding="utf-8")
        elif err.exists():
            err.unlink()
    assert expected_stdout(outcome) == out.read_text(encoding="utf-8")
    assert expected_stderr(outcome) == (err.read_text(encoding="utf-8") if err.exists() else "")
    check_headers(outcome, given)


def check_headers(outcome: Outcome, given: dict[str, str]) -> None:
    if "expected-type" in given and not outcome.failed:
        assert str(outcome.type) == given["expected-type"]
    if "expected" in given:
        assert outcome.text() == given["expected"]
    if "expected-json" in given:
        assert outcome.to_json()["value"] == json.loads(given["expected-json"])
    if "stage" in given:
        wanted = STAGES[given["stage"]]
        assert outcome.failed and outcome.reports[0].stage.value in wanted


@pytest.mark.parametrize(
    "name", ["fixture-nowhere", "error-collect", "fixture-expand", "birds-tree"]
)
def test_the_command_line_prints_the_same(name: str) -> None:
    """`hql run` in the golden folder prints exactly the .out and .err files."""
    import subprocess
    import sys

    path = GOLDEN / f"{name}.hql"
    given = headers(path.read_text(encoding="utf-8"))
    args = [sys.executable, "-m", "hql", "--report", given.get("mode", "strict")]
    if "vault" in given:
        args += [
            "--vault",
            str(next(h / given["vault"] for h in VAULT_HOMES if (h / given["vault"]).is_dir())),
        ]
    environment = {key: value for key, value in os.environ.items() if key != "HQL_REPORT"}
    done = subprocess.run(
        [*args, "run", path.name],
        cwd=GOLDEN,
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )
    err = path.with_suffix(".err")
    load_warnings = [
        line for line in done.stderr.splitlines(keepends=True) if line.startswith("warning: ")
    ]
    assert done.stdout == path.with_suffix(".out").read_text(encoding="utf-8")
    assert (
        "".join(load_warnings) + (err.read_text(encoding="utf-8") if err.exists() else "")
        == done.stderr
    )
