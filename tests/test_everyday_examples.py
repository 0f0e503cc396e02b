"""The questions of everyday.md section 6 that the language alone answers, over a small vault of
notes with messy front matter (the card fields `tags`, `folder`, `tasks` and `modified` belong
to the vault's half, so these read the same facts from the front matter)."""

from __future__ import annotations

import pytest

import hql
from hql.vault import Vault

NOTES = {
    "alpha": "rating: 5\nowner: ada\ntags: [paper]\ndue: 2025-01-10\nstatus: todo",
    "beta": "rating: 4\ntags: [paper, draft]\ndue: 2027-03-01\nstatus: done",
    "gamma": 'rating: "high"\nowner: bob\ntags: [idea]\nstatus: todo',
    "delta": "rating: 3\nowner: ada\ndue: 2024-12-31\nstatus: doing",
    "epsilon": "rating: 4.5\nowner:\nstatus: todo",
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    root = tmp_path_factory.mktemp("everyday")
    for name, front in NOTES.items():
        metadata = "".join(f"  {line}\n" for line in front.splitlines())
        text = f"---\ntitle: {name.title()}\nmetadata:\n{metadata}---\n# {name.title()}\n"
        (root / f"{name}.hmd").write_text(text, encoding="utf-8")
    return hql.open_vault(root)


def answer(program: str, vault: Vault, **params: object) -> str:
    outcome = hql.run(program, vault=vault, params=params or None)
    assert not outcome.failed, outcome.render_reports()
    return outcome.text()


def test_well_rated_notes_that_are_not_drafts_best_first(vault: Vault) -> None:
    program = (
        "cards | filter(c => number(c.metadata.rating) >= 4"
        ' and not (c.metadata.tags | contains("draft")))'
        " | sort(by = c => c.metadata.rating, descending = true) | take(10) | map(c => c.name)"
    )
    assert answer(program, vault) == "[alpha, epsilon]"


def test_notes_per_owner(vault: Vault) -> None:
    program = (
        'cards | group(by = c => string(c.metadata.owner) ?? "nobody")'
        " | sort(by = g => g.key) | map(g => {owner: g.key, notes: size(g.items)})"
    )
    assert answer(program, vault) == (
        '[{notes: 2, owner: "ada"}, {notes: 1, owner: "bob"}, {notes: 2, owner: "nobody"}]'
    )


def test_overdue_notes_drop_the_ones_without_a_due_date(vault: Vault) -> None:
    program = (
        'cards | filter(c => date(c.metadata.due) < date("2026-01-01"))'
        " | sort(by = c => c.name) | map(c => c.name)"
    )
    assert answer(program, vault) == "[alpha, delta]"


def test_notes_without_an_owner(vault: Vault) -> None:
    assert answer("cards | filter(c => not exists(c.metadata.owner)) | count", vault) == "2"


def test_a_parameter_feeds_a_text_step(vault: Vault) -> None:
    program = "cards | filter(c => c.name | starts_with($prefix)) | map(c => upper(c.name)) | sort"
    assert answer(program, vault, prefix="e") == "[EPSILON]"
    assert answer(program, vault, prefix='"\\') == "[]"


def test_aggregates_over_messy_numbers(vault: Vault) -> None:
    outcome = hql.run("cards | map(c => c.metadata.rating) | avg", vault=vault)
    assert outcome.text() == "4.125"  # "high" is left out, and the warning says so
    (report,) = outcome.reports
    assert report.message == "`avg` works on numbers: 1 element holding something else left out"
    tags = 'cards | flat_map(c => c.metadata.tags) | distinct | sort | join(" ")'
    assert answer(tags, vault) == "draft idea paper"
