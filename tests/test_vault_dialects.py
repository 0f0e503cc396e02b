"""The two link dialects side by side (everyday.md §4): the reference's and Obsidian's.

Each test writes a small vault; the realistic one is tests/fixtures/obsidian
(tests/test_vault_obsidian.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hql
from hql import messages
from hql.vault import Vault
from hql.vault import links as dialects


def write(root: Path, files: dict[str, str]) -> Path:
    for relpath, text in files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


HOME = """---
aliases: [Start, Welcome]
tags: project, area/home
author: "[[Steph Ango]]"
status: done
---
# Welcome home

See [[Soil Food Web|the web]], [[Soil Food Web#Fungi]] and ![[Diagram#^b1]].
Also [[papers/sub/Deep]], [[#Tasks]], [md](papers/Paper%20One.md), [ext](https://x.org/a.md).
`[[Not A Link]]` and %% [[Hidden]] %% and #tag/nested #123 ok.

```
[[Code Link]] #nottag
# Not a title
- [ ] not a task
```

## Tasks
- [ ] write [[Missing One]]
- [x] done thing
"""

FILES = {
    "Home.md": HOME,
    "Daily.md": "---\ncreated: {{date}}\ntitle: x\n---\nLinks [[home]] and [[Start]]\n",
    "Soil Food Web.md": "# Soil web\n",
    "papers/sub/Deep.md": "deep [[Home]]\n",
    "papers/Paper One.md": "paper [[Index]]\n",
    "a/Index.md": "a index\n",
    "Broken.md": "---\ntitle: fine\nlist: [a, b\nnext: 1\n---\nbody #kept\n",
    "b/Index.md": "b index [[Index]]\n",
}


@pytest.fixture
def obsidian(tmp_path: Path) -> Vault:
    root = write(tmp_path / "obsidian", FILES)
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "workspace.md").write_text("[[Home]]")  # never a note
    return Vault.open(root, use_cache=False)


FORCED_REFERENCE = {"hql.toml": '[vault]\ndialect = "reference"\n'}


@pytest.fixture
def reference(tmp_path: Path) -> Vault:
    """The same notes read by the reference's rules (forced: their forms would choose Obsidian)."""
    return Vault.open(write(tmp_path / "reference", {**FILES, **FORCED_REFERENCE}), use_cache=False)


def card(vault: Vault, name: str) -> hql.vault.Card:
    found = vault.card(name)
    assert found is not None, name
    return found


def test_an_obsidian_folder_chooses_the_dialect(obsidian: Vault, reference: Vault) -> None:
    assert obsidian.dialect == "obsidian"
    assert reference.dialect == "reference"


def test_config_chooses_the_dialect(tmp_path: Path) -> None:
    write(tmp_path, {**FILES, "hql.toml": '[vault]\ndialect = "obsidian"\n'})
    assert Vault.open(tmp_path, use_cache=False).dialect == "obsidian"


def test_link_forms_resolve_as_obsidian_does(obsidian: Vault) -> None:
    home = card(obsidian, "Home")
    assert home.outlinks == ["Soil Food Web", "Deep", "Paper One"]
    assert home.unresolved == ["Steph Ango", "Diagram", "Missing One"]
    assert card(obsidian, "Soil Food Web").inlinks == ["Home"]
    # `[[home]]` (case) and `[[Start]]` (an alias) both name Home; a note is not its own backlink
    assert card(obsidian, "Daily").outlinks == ["Home"]
    assert card(obsidian, "Home").inlinks == ["Daily", "Deep"]
    edges = {(e.source, e.target): e.data for e in obsidian.uplinks("Home")}
    assert edges[("Home", "Diagram")] == {"block": "b1", "embed": True}
    assert edges[("Home", "Home")] == {"heading": "Tasks"}
    assert edges[("Home", "Steph Ango")] == {"property": "author"}
    assert ("Home", "Not A Link") not in edges and ("Home", "Hidden") not in edges
    assert ("Home", "Code Link") not in edges
    assert all(target != "x.org" and "http" not in target for _, target in edges)


def test_same_name_notes_prefer_the_same_folder_then_the_shortest_path(obsidian: Vault) -> None:
    assert {c.name for c in obsidian.cards} >= {"Index", "b/Index"}
    assert card(obsidian, "Index").relpath == "a/Index.md"
    assert card(obsidian, "Paper One").outlinks == ["Index"]
    assert card(obsidian, "b/Index").outlinks == []  # its `[[Index]]` is itself
    assert card(obsidian, "b/Index").unresolved == []


def test_tags_tasks_headings_and_titles_outside_code(obsidian: Vault) -> None:
    home = card(obsidian, "Home")
    assert home.tags == ["project", "area/home", "tag/nested"]
    assert home.aliases == ["Start", "Welcome"]
    assert home.tasks == [
        {"done": False, "line": 20, "text": "write [[Missing One]]"},
        {"done": True, "line": 21, "text": "done thing"},
    ]
    assert home.headings == ["Welcome home", "Tasks"]
    assert home.title == "Welcome home"
    assert card(obsidian, "Deep").title == "Deep"  # no H1: the file name
    assert home.metadata["status"] == "done"
    assert home.folder == "" and card(obsidian, "Deep").folder == "papers/sub"


def test_a_template_header_keeps_the_note(obsidian: Vault) -> None:
    daily = card(obsidian, "Daily")
    assert daily.authored == {} and daily.title == "Daily"
    messages = [str(w) for w in obsidian.warnings if w.path.endswith("Daily.md")]
    assert len(messages) == 1
    assert "line 2" in messages[0] and "`created: {{date}}` holds a template" in messages[0]
    broken = card(obsidian, "Broken")
    assert broken.authored == {} and broken.tags == ["kept"]
    (warning,) = [w.message for w in obsidian.warnings if w.path.endswith("Broken.md")]
    assert warning.startswith("front matter ignored (line ") and "line 1:" not in warning
    counted = [w.message for w in obsidian.warnings if "name no note" in w.message]
    assert len(counted) == 1 and counted[0].startswith("3 links in 1 card name no note")


def test_the_reference_dialect_keeps_its_rules(reference: Vault) -> None:
    assert reference.card("Daily") is None  # the refused header skips the document
    home = card(reference, "Home")
    targets = [target for target, _ in home.raw_links]
    assert "Code Link" in targets and "Not A Link" in targets
    assert "Soil Food Web|the web" in targets
    assert {c.name for c in reference.cards} >= {"a/Index", "b/Index"}
    assert not any("name no note" in w.message for w in reference.warnings)


def test_programs_resolve_references_as_links_do(obsidian: Vault) -> None:
    for written in ("Home", "home", "Start", "welcome"):
        assert hql.run(f"[[{written}]].name", vault=obsidian).value == "Home"
    assert hql.run("[[Soil Food Web]].title", vault=obsidian).value == "Soil web"
    assert hql.run("[[soil food web]].title", vault=obsidian).value == "Soil web"


def test_missing_targets_are_missing_nodes_and_can_be_left_out(obsidian: Vault) -> None:
    graph = hql.run("[[Home]] | expand(depth = 2)", vault=obsidian).value
    labels = {name: how.label() for name, how in graph.presence.items()}
    assert {name for name, label in labels.items() if label == "missing"} == {
        "Steph Ango",
        "Diagram",
        "Missing One",
    }
    cards_only = hql.run("[[Home]] | expand(depth = 2, missing = false)", vault=obsidian).value
    assert set(cards_only.nodes) <= {c.name for c in obsidian.cards}
    assert "Index" in cards_only.nodes  # reached through Paper One
    for edge in cards_only.induced_edges:
        assert obsidian.card(edge.target) is not None


def test_excluded_globs_and_hidden_folders(tmp_path: Path) -> None:
    write(tmp_path, {**FILES, "templates/Daily tpl.md": "x", "hql.toml": ""})
    (tmp_path / "hql.toml").write_text('[vault]\nexclude = ["templates/**", "*.excalidraw.md"]\n')
    write(tmp_path, {"drawing.excalidraw.md": "x", ".trash/old.md": "[[Home]]"})
    names = {c.name for c in Vault.open(tmp_path, use_cache=False).cards}
    assert "Daily tpl" not in names and "drawing.excalidraw" not in names and "old" not in names
    assert "Home" in names


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("templates/**", "templates/a/b.md", True),
        ("templates/**", "notes/templates.md", False),
        ("templates", "templates/x.md", True),
        ("*.tmp.md", "deep/in/x.tmp.md", True),
        ("a/*.md", "a/b/c.md", False),
        ("**/drafts/*", "x/drafts/y.md", True),
    ],
)
def test_exclude_globs(pattern: str, path: str, matches: bool) -> None:
    assert bool(dialects.glob_pattern(pattern).match(path)) is matches


@pytest.mark.parametrize(
    ("line", "targets"),
    [
        ("[[a|b]] [[c#d|e]] [[f#^g]]", ["a", "c", "f"]),
        ("``[[x]]`` `y` [[z]]", ["z"]),
        ("`unclosed [[w]]", ["w"]),
        ("%% [[q]] %% [[r]]", ["r"]),
        ("![[pic.png]] ![[Note]] [[doc.pdf]]", ["Note"]),
        (
            "[a](Some%20Note.md) [b](<Other Note.md>) [c](mailto:x@y) [d](#Local)",
            ["Some Note.md", "Other Note.md", ""],
        ),
        ("[[Table\\|alias]]", ["Table"]),
    ],
)
def test_link_scanning(line: str, targets: list[str]) -> None:
    assert [target for target, _ in dialects.parse_note(line).links] == targets


def test_the_command_line_shows_one_line_per_kind_and_lists_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hql.cli import main

    root = write(
        tmp_path,
        {f"Day {n}.md": "---\ncreated: {{date}}\n---\n[[Home]] [[Gone]]\n" for n in range(8)},
    )
    write(root, {"Home.md": "# Home\n"})
    (root / ".obsidian").mkdir()
    for _ in range(3):  # every command, the same lines
        assert main(["--vault", str(root), "eval", "cards | count"]) == 0
        captured = capsys.readouterr()
        assert captured.out == "9\n"
        shown = captured.err.splitlines()
        assert len(shown) == 2, shown  # the templates, the unresolved links
        assert "`created: {{date}}` holds a template placeholder" in shown[0]
        assert "line 2" in shown[0] and "Day 0.md" in shown[0]
        assert shown[0].endswith("(and 7 more like it: `hql vault warnings` lists them all)")
        assert shown[1] == (
            "warning: 8 links in 8 cards name no note of the vault "
            "(`c.unresolved` lists them; graphs show them as `missing` nodes)"
        )
    assert main(["--vault", str(root), "--quiet", "eval", "cards | count"]) == 0
    assert capsys.readouterr() == ("9\n", "")
    assert main(["--vault", str(root), "vault", "warnings", "-q"]) == 0  # listing them is the job
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 9 and all(line.startswith("warning: ") for line in listed)


def test_many_kinds_of_warning_show_five_lines_then_a_count() -> None:
    from hql.cli import WARNINGS_SHOWN, summarized_warnings
    from hql.vault.model import LoadWarning

    warnings = [
        LoadWarning(f"n{n}.md", messages.template_placeholder("a: {{b}}")) for n in range(4)
    ]
    warnings += [LoadWarning(f"odd{n}.md", f"odd problem {n}") for n in range(7)]
    lines = summarized_warnings(warnings)
    assert len(lines) == WARNINGS_SHOWN + 1
    assert lines[0].startswith("n0.md: `a: {{b}}` holds") and "(and 3 more like it" in lines[0]
    assert lines[1:WARNINGS_SHOWN] == [f"odd{n}.md: odd problem {n}" for n in range(4)]
    assert lines[-1] == "… and 3 more load warnings (`hql vault warnings` lists them all)"


def test_each_per_note_warning_has_its_kind() -> None:
    kinds = {
        messages.front_matter_ignored(
            2, messages.template_placeholder("x: {{y}}")
        ): "template placeholder",
        messages.front_matter_ignored(3, "bad indentation"): "front matter",
        messages.front_matter_unclosed(): "front matter",
        messages.name_clash("home"): "name clash",
        messages.relation_unverified(): "unresolved relation",
        messages.inline_field_clash("status", 4): "inline field",
        messages.header_refused("bad YAML"): "skipped document",
        messages.file_unreadable("denied"): "skipped document",
    }
    for message, kind in kinds.items():
        assert messages.load_warning_kind(message) == kind, message
    assert messages.load_warning_kind("something else") == "something else"


def test_the_vault_command_without_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hql.cli import main

    root = write(tmp_path, {"Home.md": "# Home\n"})
    assert main(["--vault", str(root), "vault", "warnings"]) == 0
    assert capsys.readouterr().out == (
        "no load warnings\nnote: read in the reference dialect: no `.obsidian/` folder, "
        "no `[vault] dialect`, and none of its 0 links is in a form only Obsidian reads\n"
    )
    (root / ".obsidian").mkdir()
    assert main(["--vault", str(root), "vault", "warnings"]) == 0
    assert capsys.readouterr().out == "no load warnings\n"
    assert main(["vault", "warnings"]) == 1
    assert "needs a vault" in capsys.readouterr().err


def test_bm25_finds_a_note_by_its_file_name_in_an_obsidian_vault(
    obsidian: Vault, reference: Vault
) -> None:
    program = 'import bm25\ncards | bm25("food") | take(1) | map(h => h.card.name)'
    assert list(hql.run(program, vault=obsidian).value) == ["Soil Food Web"]  # titled "Soil web"
    assert list(hql.run(program, vault=reference).value) == ["Home"]  # title and text only
