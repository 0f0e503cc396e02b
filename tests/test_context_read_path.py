"""The read path: `hql context`, the MCP `context` tool, libraries, threads and the retrieval log."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import hql
from hql.context.read_path import assemble

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

TOML = """[vault]
libraries = [
  { path = "../global", scope = "global" },
  { path = "../team", scope = "team" },
]

[log]
retrieval = true
"""

RELEASE = """---
summary: Tag the release, build the wheel, then publish it to the package index.
triggers: [publish a release, cut a release]
use_when: publishing the garden app
ignore_when: [release notes only]
priority: must
---
# Publishing a release

1. Bump the version in pyproject.toml.
2. `git tag v1.2.3` and push the tag.
3. `make wheel`, then upload it with twine.
"""

SMOKE = """---
summary: After a deploy, run the smoke tests and watch the error rate for ten minutes.
triggers: [smoke tests after a deploy]
---
# Smoke tests

Run `make smoke` against the new deploy; roll back when the error rate doubles.
"""

# The same lesson as the project's, in the person's global notes: collapsed into the project's.
SMOKE_GLOBAL = SMOKE.replace("# Smoke tests", "# Smoke tests (global)")

TEAM = """---
summary: The team's on-call rotation changes every Monday at ten.
triggers: [on-call rotation]
---
# On-call rotation

Hand over open incidents in the channel before ten on Monday.
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("read-path")
    root = base / "project"
    shutil.copytree(FIXTURES / "obsidian", root)
    (root / "hql.toml").write_text(TOML, encoding="utf-8")
    (root / "Lessons").mkdir()
    (root / "Lessons" / "Publishing a release.md").write_text(RELEASE, encoding="utf-8")
    (root / "Lessons" / "Smoke tests.md").write_text(SMOKE, encoding="utf-8")
    for name, files in (
        ("global", {"Smoke tests.md": SMOKE_GLOBAL}),
        ("team", {"On-call rotation.md": TEAM}),
    ):
        (base / name).mkdir()
        for file, text in files.items():
            (base / name / file).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def vault(project: Path) -> hql.Vault:
    return hql.open_vault(project, use_cache=False)


def hql_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hql", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )


PROMPT = "We need to publish a release of the garden app today, then run the smoke tests after the deploy."


def test_a_block_from_every_library_without_repeats(vault: hql.Vault) -> None:
    block = assemble(vault, PROMPT, budget=1500)
    names = [item.name for item in block.items]
    assert set(names[:2]) == {"Publishing a release", "Smoke tests"}
    assert "global:Smoke tests" not in names  # the project's own copy stands for it
    rejected = {item["card"]: item["reason"] for item in block.diagnostics["rejected"]}
    assert "near-duplicate of `Smoke tests`" in rejected["global:Smoke tests"]
    assert block.diagnostics["counts"]["input"] == len(vault.cards) + 2
    assert set(block.diagnostics["versions"]["libraries"]) == {"project", "global", "team"}
    assert "On-call rotation" not in names


def test_a_library_card_is_recalled_with_its_scope(vault: hql.Vault) -> None:
    block = assemble(vault, "who is on the on-call rotation this week?", budget=800)
    (item,) = [item for item in block.items if item.name == "On-call rotation"]
    assert item.scope == "team"
    assert "- card: `On-call rotation` (team)" in block.rendered


def test_the_cli_prints_the_block_and_json_diagnostics(project: Path) -> None:
    done = hql_cli("--vault", str(project), "context", PROMPT, "--budget", "1500")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Context: ")
    assert "## Publishing a release\n- card: `Publishing a release` (required)" in done.stdout
    done = hql_cli("--vault", str(project), "--format", "json", "context", "-", stdin=PROMPT)
    assert done.returncode == 0, done.stderr
    tree = json.loads(done.stdout)
    diagnostics = tree["diagnostics"]
    assert set(diagnostics) >= {
        "versions",
        "counts",
        "threshold",
        "abstention",
        "selected",
        "rejected",
    }
    assert diagnostics["threshold"]["evidence"] == 40
    assert {"input", "eligible", "evaluated"} <= set(diagnostics["counts"])
    assert all(item["reason"] for item in diagnostics["rejected"])
    assert "Publishing a release" in [item["card"] for item in diagnostics["selected"]]
    assert tree["tokens"]["kind"] == "estimated"


def test_the_cli_abstains_with_an_empty_block_and_says_why(project: Path, tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Explain quantum chromodynamics on a lattice.", encoding="utf-8")
    done = hql_cli("--vault", str(project), "context", "--file", str(prompt))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "note: the context block is empty: no card passed" in done.stderr



def test_archived_cards_come_back_only_when_asked(tmp_path: Path) -> None:
    from hql.mcp.service import ToolFailure, VaultService

    root = tmp_path / "looking-back"
    root.mkdir()
    (root / "Old.md").write_text(
        "---\ntriggers: [release process]\nstatus: archived\n---\n# Old release process\n",
        encoding="utf-8",
    )
    (root / "New.md").write_text(
        "---\ntriggers: [release process]\n---\n# New release process\n", encoding="utf-8"
    )
    asked = "What is our release process?"
    for extra, expected in (((), ["New"]), (("--status", "active,archived"), ["New", "Old"])):
        done = hql_cli("--vault", str(root), "--format", "json", "context", asked, *extra)
        assert done.returncode == 0, done.stderr
        assert sorted(item["card"] for item in json.loads(done.stdout)["items"]) == expected
    done = hql_cli("--vault", str(root), "context", asked, "--status", "active,gone")
    assert done.returncode == 1 and "--status: unknown status `gone`" in done.stderr
    assert "Traceback" not in done.stderr
    service = VaultService(root)
    answer = service.context(asked, 1500, 8, "markdown", False, ["archived"])
    assert [item["card"] for item in answer["items"]] == ["Old"]
    assert [item["card"] for item in service.context(asked)["items"]] == ["New"]
    with pytest.raises(ToolFailure, match="unknown status `gone`"):
        service.context(asked, 1500, 8, "markdown", False, ["gone"])

def test_a_required_card_the_budget_cannot_hold_is_an_error(project: Path) -> None:
    done = hql_cli("--vault", str(project), "context", PROMPT, "--budget", "120")
    assert done.returncode == 1
    assert "the required card `Publishing a release` (priority: must) does not fit" in done.stderr
    assert "Traceback" not in done.stderr


def test_user_mistakes_are_reported_plainly(project: Path, tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("déployer la version".encode("latin-1"))
    for args, said in (
        (("context", PROMPT, "--budget", "0"), "--budget needs a number of at least 1"),
        (("context", "--file", str(tmp_path / "none.txt")), "cannot read the prompt"),
        (("context", "--file", str(tmp_path / "latin1.txt")), "not UTF-8 text (byte 0xe9 at offset 1)"),
        (("context", "   "), "the prompt is empty"),
        (("card", "no such card"), "no card is named `no such card`"),
    ):
        done = hql_cli("--vault", str(project), *args)
        assert done.returncode == 1 and said in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    done = hql_cli("context", PROMPT)
    assert done.returncode == 1 and "needs a vault" in done.stderr


def test_hql_card_reads_a_library_card_by_its_qualified_name(project: Path) -> None:
    done = hql_cli("--vault", str(project), "card", "global:Smoke tests")
    assert done.returncode == 0, done.stderr
    assert done.stdout == SMOKE_GLOBAL


def test_four_threads_agree_with_one(project: Path) -> None:
    vault = hql.open_vault(project, use_cache=False)  # fresh: the threads race to load it all
    prompts = [PROMPT, "who is on the on-call rotation?", "run the smoke tests", "mulch depth"]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda p: assemble(vault, p, budget=1200).to_json(), prompts * 3))
    alone = hql.open_vault(project, use_cache=False)
    one_by_one = [assemble(alone, p, budget=1200).to_json() for p in prompts * 3]
    assert together == one_by_one


def test_the_log_keeps_hashes_and_names_never_the_prompt(project: Path) -> None:
    secret = "Publish the zanzibar quokka release for the garden app, then run the smoke tests."
    done = hql_cli("--vault", str(project), "context", secret)
    assert done.returncode == 0, done.stderr
    log = project / ".hql" / "retrieval-log.sqlite"
    stored = log.read_bytes()
    for word in ("zanzibar", "quokka", "Publish the"):
        assert word.encode() not in stored
    with sqlite3.connect(log) as connection:
        for row in connection.execute("SELECT * FROM retrieval"):
            assert not any(isinstance(cell, str) and "quokka" in cell for cell in row)
    done = hql_cli("--vault", str(project), "--format", "json", "log", "--limit", "1")
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)
    import hashlib

    assert entry["prompt_sha256"] == "sha256:" + hashlib.sha256(secret.encode()).hexdigest()
    assert entry["prompt_chars"] == len(secret) and entry["labels"]["language"] == "en"
    assert "Publishing a release" in entry["selected"]
    assert entry["rejected"] and all(item["reason"] for item in entry["rejected"])
    done = hql_cli("--vault", str(project), "log")
    assert done.returncode == 0 and "selected: " in done.stdout
    assert "Publishing a release" in done.stdout.split("\n  rejected")[0]


def test_the_mcp_context_tool(project: Path) -> None:
    from hql.mcp.service import ToolFailure, VaultService

    service = VaultService(project)
    answer = service.context(PROMPT, 1500, 8, "markdown", True)
    assert answer["ok"] and answer["block"].startswith("# Context: ")
    assert answer["items"][0]["card"] == "Publishing a release"
    assert answer["token_kind"] == "estimated" and "rejected" in answer["diagnostics"]
    empty = service.context("quantum chromodynamics on a lattice", 1500, 8, "json", False)
    assert empty["block"] == "" and empty["abstention"].startswith("no card passed")
    with pytest.raises(ToolFailure, match="does not fit"):
        service.context(PROMPT, 120, 8, "markdown", False)
    with pytest.raises(ToolFailure, match="budget"):
        service.context(PROMPT, 0, 8, "markdown", False)


def test_a_note_kept_by_its_words_beyond_the_prompt_ranking_carries_its_evidence(
    tmp_path: Path,
) -> None:
    """The prompt ranking keeps its best 50 by evidence; a plain note its words keep beyond
    those is scored as the ranking would have scored it (not 0), and says why."""
    root = tmp_path / "v"
    root.mkdir()
    for number in range(60):  # titles the prompt names in part: more evidence than the runbook
        (root / f"signing keys {number:02}.md").write_text(f"Entry {number} of the register.\n")
    (root / "staging runbook.md").write_text(
        "To rotate the signing keys of the staging cluster, run the rotation job and "
        "check that the staging cluster accepts the new signing keys.\n"
    )
    block = assemble(hql.Vault.open(root), "rotate the signing keys of the staging cluster")
    chosen = {entry["card"]: entry for entry in block.diagnostics["selected"]}
    runbook = chosen["staging runbook"]
    assert runbook["rule"] == "words"
    assert runbook["score"] > 0
    item = next(item for item in block.items if item.name == "staging runbook")
    assert item.score == runbook["score"]
    assert any(said.startswith("title +") for said in item.matched_by), item.matched_by
