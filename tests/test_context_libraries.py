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
    # The entry's own line of hql.toml (line 5: the third entry).
    assert any(
        message.endswith(
            "hql.toml:5: the library `other` (../nowhere) was left out: "
            + message.rsplit("was left out: ", 1)[-1]
        )
        for message in said
    ), said


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


def test_each_bad_entry_is_reported_at_its_line(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    (root / "a.md").write_text("# A\n", encoding="utf-8")
    (root / "hql.toml").write_text(
        "# libraries beside the project\n"
        "[vault]\n"
        "libraries = [\n"
        '  { path = "../global", scope = "global" },  # fine, but missing\n'
        '  { path = "x, [y] = z", scope = "project" },\n'
        '  { scope = "team" },\n'
        "]\n"
        'watch = "often"\n',
        encoding="utf-8",
    )
    vault = hql.open_vault(root, use_cache=False)
    shown = {str(warning).split(": ", 1)[0].rsplit("/", 1)[-1] for warning in vault.warnings}
    said = {
        str(warning).split(": ", 1)[1].split("`")[1]: str(warning) for warning in vault.warnings
    }
    assert shown == {"hql.toml:5", "hql.toml:6", "hql.toml:8"}
    assert "hql.toml:5: `vault.libraries[2].scope`" in said["vault.libraries[2].scope"]
    assert "hql.toml:6: `vault.libraries[3]`" in said["vault.libraries[3]"]
    assert "hql.toml:8: `vault.watch`" in said["vault.watch"]
    (failed,) = vault.library_warnings()
    assert "hql.toml:4: the library `global` (../global) was left out" in failed


def test_an_array_of_tables_is_reported_at_its_header_or_key(tmp_path: Path) -> None:
    from hql.vault.toml_lines import key_line

    text = (
        '[[vault.libraries]]\npath = "../a"\n\n'
        '[[vault.libraries]]\npath = """../b\nscope = "x"\n"""\nscope = "project"\n'
    )
    assert key_line(text, "vault.libraries[1]") == 1
    assert key_line(text, "vault.libraries[2]") == 4
    # The `scope =` inside the multi-line string is not a key.
    assert key_line(text, "vault.libraries[2].scope") == 8
    assert key_line(text, "vault.libraries[2].name") == 4  # not written: its table
    assert key_line(text, "report.mode") is None
    dotted = 'vault.libraries = [{ path = "a" }, { path = "b", name = "x y" }]\nvault.watch = 1\n'
    assert key_line(dotted, "vault.libraries[2].name") == 1
    assert key_line(dotted, "vault.watch") == 2
