"""Tasks as typed records, Dataview inline fields, and the file fields `day`, `ctime`, `size`."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

import hql
from hql.vault import Vault

DAY = """---
status: draft
---
# Tuesday
rating:: 4
status:: done
- [ ] pay rent 📅 2023-09-30 ⏳ 2023-09-20
- [x] file taxes ✅ 2023-09-10 [due:: 2023-09-15]
- [ ] call mom
- [ ] a bad date 📅 2023-02-30
Read [author:: Ada Lovelace] and (year:: 1843); topic:: not a field mid-line
mood:: calm
mood:: glad
```
code:: not a field
- [ ] not a task
```
"""


PLAIN = "---\ndate: 2024-01-05\n---\nno tasks\n"


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / "Daily").mkdir()
    (tmp_path / "Daily" / "2023-09-12.md").write_text(DAY, encoding="utf-8")
    (tmp_path / "Plain.md").write_text(PLAIN, encoding="utf-8")
    (tmp_path / "Undated.md").write_text("nothing\n", encoding="utf-8")
    return Vault.open(tmp_path, use_cache=False)


def run(program: str, vault: Vault) -> object:
    outcome = hql.run(program, vault=vault)
    assert not outcome.failed, outcome.render_reports()
    return outcome


def test_tasks_are_typed_records(vault: Vault) -> None:
    outcome = hql.run("cards | flat_map(c => c.tasks) | filter(t => not t.done)", vault=vault)
    assert str(outcome.type) == "List<Task>"
    assert [task.text for task in outcome.value] == [
        "pay rent 📅 2023-09-30 ⏳ 2023-09-20",
        "call mom",
        "a bad date 📅 2023-02-30",
    ]
    dates = run(
        "[[2023-09-12]].tasks | map(t => {line: t.line, due: t.due, scheduled: t.scheduled,"
        " completed: t.completed})",
        vault,
    )
    assert json.loads(dates.json_text())["value"] == [
        {"line": 7, "due": "2023-09-30", "scheduled": "2023-09-20", "completed": None},
        {"line": 8, "due": "2023-09-15", "scheduled": None, "completed": "2023-09-10"},
        {"line": 9, "due": None, "scheduled": None, "completed": None},
        {"line": 10, "due": None, "scheduled": None, "completed": None},
    ]
    overdue = (
        'cards | flat_map(c => c.tasks) | filter(t => not t.done and t.due < date("2023-10-01"))'
    )
    assert [task.line for task in run(overdue, vault).value] == [7]
    by_due = "cards | flat_map(c => c.tasks) | sort(by = t => t.due) | map(t => t.line)"
    assert list(run(by_due, vault).value)[:2] == [8, 7]


def test_a_task_prints_as_the_map_it_was(vault: Vault) -> None:
    text = run("[[2023-09-12]].tasks | take(3)", vault).text()
    assert text == (
        "[{done: false, due: 2023-09-30, line: 7, scheduled: 2023-09-20, "
        'text: "pay rent 📅 2023-09-30 ⏳ 2023-09-20"}, '
        "{completed: 2023-09-10, done: true, due: 2023-09-15, line: 8, "
        'text: "file taxes ✅ 2023-09-10 [due:: 2023-09-15]"}, '
        '{done: false, line: 9, text: "call mom"}]'
    )


def test_inline_fields_are_metadata_and_the_front_matter_wins(vault: Vault) -> None:
    metadata = vault.card("2023-09-12").metadata
    assert metadata["rating"] == 4 and metadata["author"] == "Ada Lovelace"
    assert metadata["year"] == 1843 and metadata["mood"] == ["calm", "glad"]
    assert metadata["status"] == "draft"  # the front matter's
    assert "code" not in metadata and "topic" not in metadata and "due" not in metadata
    clash = [w for w in vault.warnings if "inline field" in w.message]
    assert len(clash) == 1 and "`status::` on line 6" in clash[0].message
    assert clash[0].path.endswith("2023-09-12.md")
    found = run("cards | filter(c => c.metadata.rating >= 4) | map(c => c.name)", vault)
    assert list(found.value) == ["2023-09-12"]


def test_the_reference_dialect_reads_no_inline_fields(tmp_path: Path) -> None:
    (tmp_path / "hql.toml").write_text('[vault]\ndialect = "reference"\n')
    (tmp_path / "a.md").write_text("rating:: 4\n")
    vault = Vault.open(tmp_path, use_cache=False)
    assert "rating" not in vault.card("a").metadata


def test_day_size_and_ctime(vault: Vault) -> None:
    days = run("cards | map(c => c.day)", vault).text()
    assert days == "[2023-09-12, 2024-01-05, none]"
    assert str(hql.check("[[Plain]].day", vault=vault).type) == "Option<Date>"
    sizes = run("cards | map(c => c.size)", vault).value
    assert list(sizes) == [len(DAY.encode()), len(PLAIN), 8]
    ctime = run("[[Undated]].ctime", vault).value
    born = getattr(__import__("os").stat(vault.card("Undated").path), "st_birthtime", None)
    if born is None:  # Linux: `stat` gives no birth time
        assert ctime is None or ctime is hql.values.ABSENT
    else:
        assert ctime.value == datetime.datetime.fromtimestamp(int(born), datetime.UTC)
