"""docs/dataview.md's answers are the rows Dataview's documentation says its queries give.

The docs test checks that HQL still prints each written answer; this test works the
eight DQL queries out again from tests/fixtures/obsidian's files by Dataview's documented
rules, without HQL: `FROM #tag` takes the tag and the tags nested below it, ignoring
case; `FROM "folder"` takes its subfolders too; `FROM [[Note]]` is the notes linking to
it and `outgoing([[Note]])` the notes it links to (links resolved by path and file name,
as Obsidian does: tests/obsidian_resolver.py with no aliases); `SORT a DESC, b` breaks
ties on the next key; `GROUP BY` gives one row per key; `file.day` is the date in a daily
note's name. Tags and tasks are what tests/fixtures/obsidian-expected.json says a user
sees in Obsidian (written with the vault, not read by HQL).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from obsidian_resolver import Resolver, aliases_of, notes_of, split_front_matter, targets_of

ROOT = Path(__file__).resolve().parent.parent
VAULT = ROOT / "tests" / "fixtures" / "obsidian"
EXPECTED = json.loads((ROOT / "tests" / "fixtures" / "obsidian-expected.json").read_text())
PAGE = (ROOT / "docs" / "dataview.md").read_text(encoding="utf-8")


def sections() -> dict[int, tuple[str, list[list[str]]]]:
    """Per numbered section: its DQL query and the rows of its answer block."""
    found = {}
    for part in re.split(r"^## (?=\d+\. )", PAGE, flags=re.M)[1:]:
        number = int(part.split(".", 1)[0])
        query = re.search(r"```text\n(.*?)```", part, re.S)
        answer = re.search(r"```hql#result\n(.*?)```", part, re.S)
        assert query is not None and answer is not None, f"section {number}"
        found[number] = (query.group(1).strip(), table_rows(answer.group(1)))
    return found


def table_rows(block: str) -> list[list[str]]:
    """The cells of a printed table, split where the rule line's dashes split."""
    lines = block.rstrip("\n").split("\n")
    spans = [match.span() for match in re.finditer(r"-+", lines[1])]
    return [
        [
            line[start : (spans[i + 1][0] if i + 1 < len(spans) else None)].strip()
            for i, (start, _) in enumerate(spans)
        ]
        for line in lines[2:]
    ]


class Notes:
    def __init__(self) -> None:
        self.paths = notes_of(VAULT)
        self.texts = {p: (VAULT / p).read_text(encoding="utf-8") for p in self.paths}
        self.by_file_name = Resolver(self.paths, {})  # Obsidian's resolution: no aliases
        self.with_aliases = Resolver(self.paths, {p: aliases_of(t) for p, t in self.texts.items()})

    def name(self, path: str) -> str:
        return Path(path).stem

    def header(self, path: str) -> dict[str, Any]:
        found, _ = split_front_matter(self.texts[path])
        return found if isinstance(found, dict) else {}

    def in_folder(self, path: str, folder: str) -> bool:
        return path.startswith(folder + "/")

    def outgoing(self, path: str, resolver: Resolver) -> list[str]:
        found: list[str] = []
        for target in targets_of(self.texts[path]):
            note = resolver.resolve(path, target)
            if note is not None and note != path and note not in found:
                found.append(note)
        return found


@pytest.fixture(scope="module")
def notes() -> Notes:
    return Notes()


def by_name(notes: Notes, paths: list[str]) -> list[str]:
    return sorted(paths, key=notes.name)


def test_the_page_has_eight_queries() -> None:
    assert sorted(sections()) == list(range(1, 9))


def test_1_notes_with_a_tag_or_a_tag_below_it(notes: Notes) -> None:
    query, rows = sections()[1]
    assert query == "LIST FROM #paper/soil SORT file.name LIMIT 5"
    tagged = [
        path
        for path in notes.paths
        if any(
            tag.casefold() == "paper/soil" or tag.casefold().startswith("paper/soil/")
            for tag in EXPECTED[path]["tags"]
        )
    ]
    assert len(tagged) > 5
    assert [row[0] for row in rows] == [notes.name(p) for p in by_name(notes, tagged)[:5]]


def test_2_a_table_sorted_on_three_keys(notes: Notes) -> None:
    query, rows = sections()[2]
    assert "SORT rating DESC, year ASC, file.name ASC LIMIT 6" in query
    kept = [
        p
        for p in notes.paths
        if notes.in_folder(p, "Papers") and (notes.header(p).get("rating") or 0) >= 4
    ]
    kept.sort(key=notes.name)
    kept.sort(key=lambda p: notes.header(p)["year"])
    kept.sort(key=lambda p: notes.header(p)["rating"], reverse=True)
    expected = [
        [
            notes.name(p),
            notes.header(p)["author"],
            str(notes.header(p)["rating"]),
            str(notes.header(p)["year"]),
        ]
        for p in kept[:6]
    ]
    assert rows == expected
    assert len({row[2] for row in expected}) == 1  # the ties the second key breaks


def test_3_open_tasks_of_the_daily_notes(notes: Notes) -> None:
    query, rows = sections()[3]
    assert query == 'TASK FROM "Daily" WHERE !completed LIMIT 4'
    open_tasks = [
        (notes.name(p), text)
        for p in by_name(notes, [p for p in notes.paths if notes.in_folder(p, "Daily")])
        for text, done in EXPECTED[p]["tasks"]
        if not done
    ]
    assert [(row[0], row[2]) for row in rows] == open_tasks[:4]
    assert all(row[3] == "false" for row in rows)
    for note, line, text, _ in rows:  # the line HQL gives is the task's line in the file
        written = (VAULT / "Daily" / f"{note}.md").read_text(encoding="utf-8").split("\n")
        assert written[int(line) - 1] == f"- [ ] {text}"


def test_4_the_notes_linking_to_a_note(notes: Notes) -> None:
    query, rows = sections()[4]
    assert query == "LIST FROM [[Soil Food Web]] SORT file.name LIMIT 5"
    target = "Concepts/Soil Food Web.md"
    linking = [p for p in notes.paths if target in notes.outgoing(p, notes.by_file_name)]
    assert [row[0] for row in rows] == [notes.name(p) for p in by_name(notes, linking)[:5]]


def test_5_the_notes_a_note_links_to(notes: Notes) -> None:
    query, rows = sections()[5]
    assert query == "LIST FROM outgoing([[Home]])"
    dataview = notes.outgoing("Home.md", notes.by_file_name)
    with_aliases = notes.outgoing("Home.md", notes.with_aliases)
    shown = [row[0] for row in rows]
    # Without SORT, Dataview gives these pages in no set order. HQL's list is Dataview's
    # and the one link found only by an alias, as the page says.
    assert len(shown) == len(set(shown))
    assert set(shown) - {"Ada Mensah"} == {notes.name(p) for p in dataview}
    assert set(shown) == {notes.name(p) for p in with_aliases}
    assert len(dataview) == 10 and "the other ten" in PAGE.split("## 6.")[0]


def test_6_one_row_per_key(notes: Notes) -> None:
    query, rows = sections()[6]
    assert query == 'TABLE length(rows) AS papers FROM "Papers" GROUP BY year SORT year'
    counts = Counter(
        notes.header(p).get("year") for p in notes.paths if notes.in_folder(p, "Papers")
    )
    assert rows == [[str(year), str(count)] for year, count in sorted(counts.items())]


def test_7_daily_notes_by_the_date_in_their_name(notes: Notes) -> None:
    query, rows = sections()[7]
    assert "file.day >= date(2026-03-01) AND file.day <= date(2026-03-05)" in query
    days = sorted(
        (Path(p).stem, notes.header(p).get("mood"))
        for p in notes.paths
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", Path(p).stem)
        and "2026-03-01" <= Path(p).stem <= "2026-03-05"
    )
    assert rows == [[day, day, str(mood)] for day, mood in days]


def test_8_notes_whose_property_holds_a_link(notes: Notes) -> None:
    query, rows = sections()[8]
    assert (
        query == 'LIST FROM "Papers" WHERE contains(author, [[Ada Mensah]]) SORT file.name LIMIT 4'
    )
    by_ada = [
        p
        for p in notes.paths
        if notes.in_folder(p, "Papers")
        and notes.by_file_name.resolve(p, str(notes.header(p).get("author", "")).strip("[]"))
        == "People/Ada Mensah.md"
    ]
    assert [row[0] for row in rows] == [notes.name(p) for p in by_name(notes, by_ada)[:4]]


def test_the_front_matter_is_read_as_yaml_reads_it() -> None:
    # The reading above leans on PyYAML; a header it cannot read would silently drop rows.
    for path in notes_of(VAULT):
        text = (VAULT / path).read_text(encoding="utf-8")
        if text.startswith("---\n") and "{{" not in text.split("\n---", 1)[0]:
            assert isinstance(yaml.safe_load(text[4:].split("\n---", 1)[0]) or {}, dict), path
