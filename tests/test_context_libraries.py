"""Libraries: other vaults in one candidate set, `c.library`, `c.scope`, qualified names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import hql

FIXTURES = Path(__file__).parent / "fixtures"

TOML = """[vault]
libraries = [
  { path = "../global", scope = "global" },
  { path = "../team", scope = "team", name = "platform" },
  { path = "../nowhere", scope = "other" },
]
"""


def lesson(title: str, body: str, front: str = "") -> str:
    return f"---\ntitle: {title}\n{front}---\n{body}\n"


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("libraries")
    project = base / "project"
    shutil.copytree(FIXTURES / "obsidian", project)
    (project / "hql.toml").write_text(TOML, encoding="utf-8")
    (project / "Lessons").mkdir()
    (project / "Lessons" / "Deploy checklist.md").write_text(
        lesson("Deploy checklist", "Run `make smoke` after every deploy of the garden app."),
        encoding="utf-8",
    )
    glob = base / "global"
    glob.mkdir()
    (glob / "Deploy checklist.md").write_text(
        lesson("Deploy checklist", "Run the smoke tests after every deploy of any app."),
        encoding="utf-8",
    )
    (glob / "Commit messages.md").write_text(
        lesson("Commit messages", "Say why in the first line.", "priority: must\n"),
        encoding="utf-8",
    )
    team = base / "team"
    team.mkdir()
    (team / "Deploy checklist.md").write_text(
        lesson("Deploy checklist", "The platform team's deploy checklist lives in the wiki."),
        encoding="utf-8",
    )
    return {"project": project, "global": glob, "team": team}


@pytest.fixture(scope="module")
def vault(roots: dict[str, Path]) -> hql.Vault:
    return hql.open_vault(roots["project"], use_cache=False)


def run(program: str, vault: hql.Vault) -> hql.Outcome:
    outcome = hql.run(program, vault=vault)
    assert not outcome.failed, outcome.render_reports()
    return outcome


def test_cards_stays_the_projects_own(vault: hql.Vault) -> None:
    assert run("cards | count", vault).value == len(vault.cards) == 255
    assert run('cards | filter(c => c.scope != "project") | count', vault).value == 0


def test_cards_with_libraries_tags_and_qualifies(vault: hql.Vault) -> None:
    outcome = run(
        'cards(libraries = true) | filter(c => c.title == "Deploy checklist")'
        " | map(c => [c.name, c.library, c.scope])",
        vault,
    )
    assert outcome.text() == (
        "[[Deploy checklist, project, project], [global:Deploy checklist, global, global], "
        "[platform:Deploy checklist, platform, team]]"
    )
    # A name no other card has stays bare.
    assert (
        run(
            'cards(libraries = true) | filter(c => c.name == "Commit messages") | count', vault
        ).value
        == 1
    )
    assert run("cards(libraries = false) | count", vault).value == 255


def test_a_library_that_cannot_be_opened_is_a_warning(vault: hql.Vault) -> None:
    outcome = run("cards(libraries = true) | count", vault)
    assert outcome.value == 255 + 2 + 1
    said = [report.message for report in outcome.reports]
    assert any("the library `other` (../nowhere) was left out" in message for message in said)


def test_bad_library_entries_are_warnings_not_failures(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    (root / "a.md").write_text("# A\n", encoding="utf-8")
    (root / "hql.toml").write_text(
        '[vault]\nlibraries = [{ scope = "global" }, { path = "x", scope = "project" }, "y"]\n',
        encoding="utf-8",
    )
    vault = hql.open_vault(root, use_cache=False)
    said = "\n".join(str(warning) for warning in vault.warnings)
    assert "vault.libraries[1]" in said and "vault.libraries[2].scope" in said
    assert "vault.libraries[3]" in said
    assert vault.libraries == ()
    assert run("cards(libraries = true) | count", vault).value == 1


def test_cards_call_is_checked(vault: hql.Vault) -> None:
    outcome = hql.run("cards(libraries = 1) | count", vault=vault)
    assert outcome.failed and "libraries" in outcome.render_reports()
    outcome = hql.run("cards(everything = true) | count", vault=vault)
    assert outcome.failed and "`libraries = true`" in outcome.render_reports()
    outcome = hql.run("cards(libraries = true) | count")
    assert outcome.failed and "needs a vault" in outcome.render_reports()
