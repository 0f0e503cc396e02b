"""`hql vault doctor` on an Obsidian vault laid out as people keep them (about 450 notes).

The vault is built here with its defects planted, so what the doctor must find is known
from the construction: the planted orphans, dead links, links found only by case or by
an alias, and near-duplicate titles, and nothing else (daily notes one day apart,
chapters one digit apart, templates and embedded images are not defects).
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

import hql
from hql.vault.doctor import diagnose, near_duplicate_titles, title_key

TOPICS = [f"Topic {word}" for word in ("Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot")]
TOPICS += [f"{area} {part}" for area in ("Soil", "Water", "Light", "Seed", "Root") for part in (
    "Basics", "Survey", "Methods", "Results", "Questions", "Sources", "Glossary", "Timeline",
    "Budget", "Risks", "Tools", "Partners", "Maps", "Photos", "Reading", "Archive",
    "Weather", "Harvest", "Pests", "Ideas",
)]  # fmt: skip
PEOPLE = [f"{first} {last}" for first in ("Ada", "Bea", "Cyd", "Dov", "Eli", "Fay") for last in (
    "Okafor", "Lind", "Marsh", "Quist", "Ruiz",
)]  # fmt: skip
DAYS = [datetime.date(2024, 1, 1) + datetime.timedelta(days=n) for n in range(300)]

# The planted defects.
ORPHANS = ["Loose idea", "Stray thought", "Unfiled clipping"]
DEAD = [
    ("Soil Basics", "Soil Chemistry Handbook"),
    ("Water Survey", "Rain gauge"),
    ("2024-02-01", "Team offsite"),
    ("Ada Okafor", "Ada's CV"),
]
BY_CASE = [
    ("Soil Methods", "water basics", "Water Basics"),
    ("2024-03-03", "seed budget", "Seed Budget"),
]
BY_ALIAS = [("Root Ideas", "Alpha", "Topic Alpha"), ("2024-04-04", "Bravo", "Topic Bravo")]
NEAR = [["Colour theory", "Color theory"], ["Meeting notes", "Meeting-Notes"]]
NOT_NEAR = [["Chapter 1", "Chapter 2"]]


def _write(root: Path, relpath: str, text: str) -> None:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def build_vault(root: Path) -> Path:
    """An Obsidian-style vault: daily notes, topics, people, templates, attachments."""
    _write(root, ".obsidian/app.json", '{"alwaysUpdateLinks": true}\n')
    _write(root, "Attachments/plot.png", "not really a picture\n")
    _write(root, "Templates/Daily.md", "---\ncreated: {{date}}\n---\n# {{title}}\n\n## Log\n")
    _write(root, "Home.md", "# Home\n\n" + "".join(f"- [[{t}]]\n" for t in TOPICS))
    for at, topic in enumerate(TOPICS):
        nxt = TOPICS[(at + 1) % len(TOPICS)]
        head = f"---\naliases: [{topic.split()[-1]}]\n---\n" if topic.startswith("Topic ") else ""
        body = f"# {topic}\n\nSee [[{nxt}#Notes|the next one]] and ![[plot.png]].\n\n## Notes\n"
        body += "Back to [[#Notes]] and [[Home]].\n"
        _write(root, f"Topics/{topic}.md", head + body)
    for at, person in enumerate(PEOPLE):
        _write(root, f"People/{person}.md", f"# {person}\n\nWorks on [[{TOPICS[at]}]].\n")
    for at, day in enumerate(DAYS):
        previous = f"[[{DAYS[at - 1].isoformat()}]] " if at else ""
        person = PEOPLE[at % len(PEOPLE)]
        text = f"# {day:%A %d %B}\n\n{previous}Met [[{person}]] about [[{TOPICS[at % len(TOPICS)]}]].\n"
        _write(root, f"Daily/{day.year}/{day.isoformat()}.md", text)
    for title in ORPHANS:
        _write(
            root, f"Inbox/{title}.md", f"# {title}\n\nNothing links here, and it links nowhere.\n"
        )
    for group in [*NEAR, *NOT_NEAR]:
        for title in group:
            _write(root, f"Notes/{title}.md", f"# {title}\n\nSee [[Home]].\n")
    for source, written in DEAD:
        _append(root, source, f"\nAlso [[{written}]].\n")
    for source, written, _ in [*BY_CASE, *BY_ALIAS]:
        _append(root, source, f"\nCompare [[{written}]].\n")
    return root


def _append(root: Path, name: str, text: str) -> None:
    path = next(root.rglob(f"{name}.md"))
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


@pytest.fixture(scope="module")
def vault_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_vault(tmp_path_factory.mktemp("doctor") / "Garden")


def test_the_doctor_finds_what_was_planted_and_nothing_else(vault_root: Path) -> None:
    vault = hql.open_vault(vault_root, use_cache=False)
    assert vault.dialect == "obsidian" and len(vault.cards) > 400
    found = diagnose(vault)
    assert found.orphans == sorted(ORPHANS + ["Daily"])  # the template, too: nothing links to it
    assert [(link.source, link.written) for link in found.dead] == sorted(DEAD)
    assert [(x.source, x.written, x.found) for x in found.by_case] == sorted(BY_CASE)
    assert [(x.source, x.written, x.found) for x in found.by_alias] == sorted(BY_ALIAS)
    assert [[title for _, title in group] for group in found.near_duplicates] == sorted(
        sorted(group) for group in NEAR
    )


def test_the_command_prints_a_summary_and_sections_and_json(
    vault_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hql.cli import main

    assert main(["--vault", str(vault_root), "vault", "doctor"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"{len(hql.open_vault(vault_root).cards)} cards: 4 orphans, 4 dead links, "
        "2 links found only by case, 2 only by alias, 2 groups of near-duplicate titles"
    )
    assert "  Soil Methods -> [[water basics]] finds Water Basics" in out
    assert "  Root Ideas -> [[Alpha]] finds Topic Alpha" in out
    assert "  2024-02-01 -> [[Team offsite]]" in out
    assert "  Color theory, Colour theory" in out
    assert main(["--vault", str(vault_root), "vault", "doctor", "--format", "json"]) == 0
    tree = json.loads(capsys.readouterr().out)
    assert tree["orphans"] == sorted(ORPHANS + ["Daily"])
    assert {"source": "Water Survey", "written": "Rain gauge"} in tree["dead_links"]
    assert {"source": "2024-04-04", "written": "Bravo", "found": "Topic Bravo"} in tree[
        "alias_links"
    ]
    assert [card["title"] for card in tree["near_duplicate_titles"][1]] == [
        "Meeting notes",
        "Meeting-Notes",
    ]


def test_a_healthy_vault_has_nothing_to_mend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hql.cli import main

    _write(tmp_path, "a.md", "# A\n\n[[b]]\n")
    _write(tmp_path, "b.md", "# B\n\n[[a]]\n")
    assert main(["--vault", str(tmp_path), "vault", "doctor"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "nothing to mend"


@pytest.mark.parametrize(
    ("titles", "near"),
    [
        (["Colour", "Color"], True),
        (["Café notes", "cafe-notes"], True),
        (["Meeting", "Meetings"], True),
        (["Recieve", "Receive"], True),  # two letters swapped
        (["2024-01-01", "2024-01-02"], False),
        (["Chapter 1", "Chapter 12"], False),
        (["Cat", "Car"], False),  # too short to be one letter apart
        (["Cat", "cat"], True),
        (["Garden", "Harden"], True),
        (["Garden", "Gardening"], False),
        (["{{title}}", "{{title}}"], False),  # unfilled templates
    ],
)
def test_near_duplicate_titles(titles: list[str], near: bool) -> None:
    groups = near_duplicate_titles((f"n{at}", title) for at, title in enumerate(titles))
    assert bool(groups) == near, (titles, [title_key(t) for t in titles])
