"""tests/fixtures/obsidian, a vault written the way people write Obsidian notes.

`obsidian-expected.json` holds what its generator meant each note to link,
tag and track (make_obsidian_vault.py); what a user sees in Obsidian is
that. Links are compared per note and per form, and the everyday questions
of everyday.md §6 that need only the vault are asked of it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import hql
from hql.vault import Card, Vault

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED: dict[str, dict[str, list]] = json.loads(
    (FIXTURES / "obsidian-expected.json").read_text(encoding="utf-8")
)


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    root = tmp_path_factory.mktemp("vault") / "obsidian"
    shutil.copytree(FIXTURES / "obsidian", root)
    return Vault.open(root, use_cache=False)


@pytest.fixture(scope="module")
def by_path(vault: Vault) -> dict[str, Card]:
    return {card.relpath: card for card in vault.cards}


def test_every_note_is_a_card_and_nothing_else_is(by_path: dict[str, Card]) -> None:
    assert set(by_path) == set(EXPECTED)
    assert len(by_path) > 250


@pytest.mark.parametrize("relpath", sorted(EXPECTED))
def test_outlinks_unresolved_tags_and_tasks_per_note(
    relpath: str, by_path: dict[str, Card]
) -> None:
    card = by_path[relpath]
    expected = EXPECTED[relpath]
    assert card.outlinks == [by_path[target].name for target in expected["outlinks"]]
    assert card.unresolved == expected["unresolved"]
    assert card.tags == expected["tags"]
    assert [[task["text"], task["done"]] for task in card.tasks] == expected["tasks"]


def test_backlinks_are_the_inverse_of_outlinks(by_path: dict[str, Card]) -> None:
    for relpath, card in by_path.items():
        expected = sorted(
            by_path[source].name for source, seen in EXPECTED.items() if relpath in seen["outlinks"]
        )
        assert card.inlinks == expected, relpath


HOME_OUTLINKS = [
    "Soil Food Web",  # pinned: "[[Soil Food Web]]" (a property), then [[…|shown]]
    "Mycorrhiza",  # [[Mycorrhiza#Notes]]
    "Biochar",  # [[Biochar#^key]]
    "Humus",  # ![[Humus]]
    "Tilth",  # [[Concepts/Tilth]]
    "Hardpan",  # [[hardpan]]
    "Café ecology",
    "土壌",
    "Zoë Okafor",  # a Markdown link, URL-encoded
    "Notes",  # the root Notes.md, not a project's Notes.md
    "Ada Mensah",  # [[Ada]], an alias
]


def test_home_states_each_form(vault: Vault) -> None:
    home = vault.card("Home")
    assert home is not None
    assert home.outlinks == HOME_OUTLINKS
    assert home.unresolved == ["Rainfall Log", "Tool Shed Inventory"]
    assert home.tags == ["hub", "status/active"]
    assert [(t["text"], t["done"]) for t in home.tasks] == [
        ("turn the compost", False),
        ("sow the cover crop", True),
    ]
    assert home.headings == ["Garden research", "Today"]
    assert home.aliases == ["Start", "Dashboard"]
    edges = {edge.target: edge.data for edge in vault.uplinks("Home")}
    assert edges["Humus"] == {"embed": True}
    assert edges["Biochar"] == {"block": "key"}
    assert edges["Mycorrhiza"] == {"heading": "Notes"}
    assert edges["Home"] == {"heading": "Today"}  # [[#Today]]: an edge, never a backlink
    assert edges["Tool Shed Inventory"] == {"embed": True, "heading": "Shelves"}
    assert "Home" not in home.inlinks
    for hidden in ("Drainage", "Swales", "Keyline Design", "Raised Beds"):
        assert hidden not in edges


def test_same_name_notes(vault: Vault) -> None:
    notes = sorted(card.name for card in vault.cards if card.relpath.endswith("/Notes.md"))
    assert len(notes) == 12 and all(name.startswith("Projects/") for name in notes)
    assert vault.card("Notes") is not None and vault.card("Notes").relpath == "Notes.md"
    plot = vault.card("Allotment Plot 7")
    assert plot is not None and plot.outlinks[-2:] == [
        "Projects/Allotment Plot 7/Notes",
        "Projects",
    ]


def test_templates_keep_their_notes(vault: Vault) -> None:
    template = vault.card("Daily template")
    assert template is not None and template.header.get("created") is None
    assert template.outlinks == ["Home"]
    warned = [w for w in vault.warnings if w.path.endswith("template.md")]
    assert len(warned) == 3
    assert all("line 2" in w.message for w in warned)


def test_edges_point_at_cards_or_at_missing_nodes(vault: Vault) -> None:
    missing = {name for card in vault.cards for name in card.unresolved}
    for edge in vault.edges:
        assert vault.card(edge.source) is not None
        assert vault.card(edge.target) is not None or edge.target in missing
    assert missing == {name for seen in EXPECTED.values() for name in seen["unresolved"]}
    assert missing == {
        "Soil Chemistry Handbook",
        "Rainfall Log",
        "Tool Shed Inventory",
        "Beekeeping",
    }


def test_expand_without_missing_draws_only_cards(vault: Vault) -> None:
    everything = hql.run("[[Home]] | expand(depth = 2)", vault=vault).value
    assert {"Rainfall Log", "Tool Shed Inventory"} <= set(everything.nodes)
    assert everything.presence["Rainfall Log"].label() == "missing"
    cards_only = hql.run("[[Home]] | expand(depth = 2, missing = false)", vault=vault).value
    assert all(vault.card(name) is not None for name in cards_only.nodes)
    assert all(vault.card(edge.target) is not None for edge in cards_only.induced_edges)
    assert (
        len(cards_only.nodes)
        == len(everything.nodes)
        - 2
        - sum(1 for how in everything.presence.values() if how.label() == "missing")
        + 2
    )


def ask(vault: Vault, program: str) -> object:
    outcome = hql.run(program, vault=vault)
    assert not outcome.failed, outcome.render_reports()
    return outcome.value


def test_everyday_questions(vault: Vault) -> None:
    assert ask(vault, "[[Soil Food Web]].title") == "Soil Food Web"
    assert ask(vault, "[[soil food web]].name") == "Soil Food Web"
    assert ask(vault, "[[Start]].name") == "Home"
    inlinks = ask(vault, "[[Home]].inlinks")
    assert "Daily template" in list(inlinks)
    statuses = ask(vault, 'cards | filter(c => c.metadata.status == "done") | count')
    assert (
        statuses == sum(1 for card in vault.cards if card.metadata.get("status") == "done")
        and statuses > 0
    )
    tagged = ask(vault, 'cards | filter(c => has_tag(c, "paper")) | count')
    assert tagged == 61  # sixty field notes and the paper template
    nested = ask(vault, 'cards | filter(c => has_tag(c, "mood")) | count')
    assert nested == 20
    papers = ask(vault, 'cards | filter(c => in_folder(c, "Projects")) | count')
    assert papers == 24
    linking = ask(vault, 'cards | filter(c => has_link(c, "soil food web")) | count')
    assert linking == sum(1 for card in vault.cards if "Soil Food Web" in card.outlinks)
    created = hql.run("[[2026-01-01]].created", vault=vault)
    assert created.text() == "2026-01-01" and str(created.type) == "Option<Date>"
    assert ask(vault, "[[Home]].folder") == "" and ask(vault, "[[Humus]].folder") == "Concepts"
    projects = list(ask(vault, "[[Projects]].inlinks"))
    assert len(projects) == 12 and "Compost Trial" in projects
    tasks = [task for seen in EXPECTED.values() for task in seen["tasks"]]
    open_tasks = ask(vault, "cards | flat_map(c => c.tasks) | filter(t => not t.done) | count")
    assert open_tasks == sum(1 for _, done in tasks if not done) > 0
    undated = ask(vault, "cards | filter(c => not exists(c.metadata.owner)) | count")
    assert undated == len(vault.cards) - 12  # only the projects name an owner
    assert ask(vault, "[[Humus]].relpath") == "Concepts/Humus.md"
