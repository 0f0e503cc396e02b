"""Time in notes: `supersedes`, `valid_from` and `valid_to` make a note superseded (with
`c.superseded_by`), not current yet or expired; `as_of(day)` keeps what was current on a day;
the prompt ranker leaves superseded and archived notes out and records the rule."""

from __future__ import annotations

from pathlib import Path

import hql
import hql.notes

NOTES = {
    # the token lifetime, replaced on 2024-03-01
    "lifetime 2023": "---\ncreated: 2023-01-10\n---\nAccess tokens expire after one hour.\n",
    "lifetime 2024": (
        '---\nsupersedes: "[[lifetime 2023]]"\nvalid_from: 2024-03-01\n---\n'
        "Access tokens expire after thirty minutes.\n"
    ),
    # a rule that held for a while only
    "freeze": "---\nvalid_from: 2022-12-01\nvalid_to: 2023-01-15\n---\nNo deploys in the freeze.\n",
    # not begun yet
    "next policy": "---\nvalid_from: 2999-01-01\n---\nTokens will be bound to the client.\n",
    "old checklist": "---\nstatus: archived\n---\nDeploy tokens by hand.\n",
    "glossary": "Tokens, scopes and grants.\n",
}


def _vault(root: Path) -> hql.Vault:
    root.mkdir()
    (root / "hql.toml").write_text('[vault]\ndialect = "reference"\n')
    for name, text in NOTES.items():
        (root / f"{name}.md").write_text(text)
    return hql.Vault.open(root)


def _names(outcome: hql.Outcome) -> list[str]:
    assert not outcome.failed, outcome.render_reports()
    return sorted(outcome.value.items)


def test_status_and_superseded_by_follow_the_front_matter(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v")
    outcome = hql.run(
        "cards | map(c => {n: c.name, s: c.status, by: c.superseded_by})", vault=vault
    )
    assert not outcome.failed, outcome.render_reports()
    found = {row.tree["n"]: (row.tree["s"], row.tree["by"]) for row in outcome.value.items}
    assert found == {
        "lifetime 2023": ("superseded", ["lifetime 2024"]),
        "lifetime 2024": ("active", []),
        "freeze": ("superseded", []),  # its valid_to has passed
        "next policy": ("draft", []),  # not current yet
        "old checklist": ("archived", []),
        "glossary": ("active", []),
    }
    card = vault.card("lifetime 2023")
    assert hql.notes.status_of(card, vault) == "superseded"
    assert hql.notes.superseded_by(card, vault) == ["lifetime 2024"]


def test_as_of_answers_as_the_vault_stood_on_a_day(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v")
    program = "cards | as_of($day) | map(c => c.name)"
    on = {day: _names(hql.run(program, vault=vault, params={"day": day})) for day in (
        "2023-01-01", "2023-06-01", "2024-06-01", "3000-01-01",
    )}  # fmt: skip
    # the old lifetime held from its `created` until the new one began; the freeze only in
    # its window
    assert on["2023-01-01"] == ["freeze", "glossary"]
    assert on["2023-06-01"] == ["glossary", "lifetime 2023"]
    assert on["2024-06-01"] == ["glossary", "lifetime 2024"]
    assert on["3000-01-01"] == ["glossary", "lifetime 2024", "next policy"]
    dated = hql.run('cards | as_of(date("2024-06-01")) | map(c => c.name)', vault=vault)
    assert _names(dated) == on["2024-06-01"]
    bad = hql.run('cards | as_of("June 2024")', vault=vault)
    assert bad.failed and "YYYY-MM-DD" in bad.render_reports()


def test_the_prompt_ranker_prefers_current_notes_and_records_the_rule(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v")
    outcome = hql.run('import bm25\ncards | prompt("when do access tokens expire?")', vault=vault)
    assert not outcome.failed, outcome.render_reports()
    names = [hit.card.name for hit in outcome.value.hits]
    assert "lifetime 2024" in names and "lifetime 2023" not in names
    retrieval = outcome.value.retrieval.extra
    assert retrieval["statuses"] == ["active"]
    gated = {item["card"]: item["gate"] for item in retrieval["rejected"]}
    assert "lifetime 2023" in gated and "superseded" in gated["lifetime 2023"]
    # the plain ranker keeps its answer: superseded notes are where bm25 puts them
    plain = hql.run('import bm25\ncards | bm25("access tokens expire")', vault=vault)
    assert "lifetime 2023" in [hit.card.name for hit in plain.value.hits]


def test_supersede_writes_the_link_and_the_old_note_reads_as_replaced(tmp_path: Path) -> None:
    root = tmp_path / "v"
    _vault(root)
    notes = hql.notes.open(root)
    written = notes.supersede("glossary", "old checklist", valid_from="2025-01-01")
    assert written.written and 'supersedes: "[[old checklist]]"' in written.diff
    again = notes.supersede("glossary", "freeze")  # a second one makes a list
    text = (root / "glossary.md").read_text()
    assert again.written and "[[old checklist]]" in text and "[[freeze]]" in text
    vault = hql.Vault.open(root)
    assert sorted(vault.card("freeze").superseded_by) == ["glossary"]


def test_the_context_block_does_not_let_a_superseded_note_back_in_by_its_words(
    tmp_path: Path,
) -> None:
    from hql.context.read_path import assemble

    vault = _vault(tmp_path / "v")
    block = assemble(vault, "when do access tokens expire? deploy tokens by hand")
    chosen = [item.name for item in block.items]
    assert "lifetime 2024" in chosen
    assert "lifetime 2023" not in chosen and "old checklist" not in chosen
    reasons = {item["card"]: item["reason"] for item in block.diagnostics["rejected"]}
    assert reasons["lifetime 2023"] == "status: superseded"
    assert reasons["old checklist"] == "status: archived"


def test_a_catalogued_vault_knows_who_is_superseded_without_building_every_card(
    tmp_path: Path, built: list[str]
) -> None:
    """Who supersedes whom is kept in the catalogue: a process that asks for one card's
    status (the context read path asks for each candidate's) builds that card alone, and a
    write is seen (the record is kept per listing)."""
    from hql.context.read_path import assemble

    root = tmp_path / "v"
    _vault(root)
    for name in range(40):  # enough other notes that building them all would show
        (root / f"other {name}.md").write_text(f"Unrelated note {name} about gardening.\n")
    assert len(hql.Vault.open(root).cards) == 46  # a whole load writes the catalogue
    expected = assemble(hql.Vault.open(root), "when do access tokens expire?").diagnostics
    for _ in range(2):  # the first works the record out once, the second reads it
        vault = hql.Vault.open(root)
        built.clear()
        card = vault.card_alone("lifetime 2023")
        assert hql.notes.status_of(card, vault) == "superseded"
        assert card.superseded_by == ["lifetime 2024"]
        assert assemble(vault, "when do access tokens expire?").diagnostics == expected
        assert vault._cards is None
    assert len(built) < 10, built
    (root / "glossary.md").write_text('---\nsupersedes: "[[lifetime 2024]]"\n---\nTokens.\n')
    vault = hql.Vault.open(root)
    card = vault.card_alone("lifetime 2024")
    assert hql.notes.status_of(card, vault) == "superseded"
    assert card.superseded_by == ["glossary"]


def test_a_damaged_record_of_who_supersedes_whom_is_worked_out_again(tmp_path: Path) -> None:
    import sqlite3

    from hql.vault.catalog import CATALOG_FILE

    root = tmp_path / "v"
    _vault(root)
    hql.Vault.open(root).cards  # noqa: B018 - a whole load writes the catalogue
    vault = hql.Vault.open(root)
    assert hql.notes.status_of(vault.card_alone("lifetime 2023"), vault) == "superseded"
    with sqlite3.connect(root / ".hql" / CATALOG_FILE) as connection:
        (entries,) = connection.execute("SELECT entries FROM superseded").fetchone()
        damaged = bytes([entries[0] ^ 0xFF]) + entries[1:]
        connection.execute("UPDATE superseded SET entries = ?", (damaged,))
    vault = hql.Vault.open(root)
    assert hql.notes.status_of(vault.card_alone("lifetime 2023"), vault) == "superseded"
    assert hql.notes.status_of(vault.card_alone("lifetime 2024"), vault) == "active"


def test_an_edit_that_leaves_supersedes_alone_keeps_the_record(
    tmp_path: Path, built: list[str]
) -> None:
    """A note edited in place through hql.notes carries the catalogue's record of who
    supersedes whom to the new listing when the edit cannot change it; an edit that writes
    `supersedes` leaves it to be worked out again."""
    root = tmp_path / "v"
    _vault(root)
    for number in range(40):
        (root / f"other {number}.md").write_text(f"Unrelated note {number} about gardening.\n")
    assert len(hql.Vault.open(root).cards) == 46  # a whole load writes the catalogue
    vault = hql.Vault.open(root)
    assert hql.notes.status_of(vault.card_alone("lifetime 2023"), vault) == "superseded"
    notes = hql.notes.open(root)
    assert notes.append("other 3", "A line about compost.").written
    vault = hql.Vault.open(root)
    built.clear()
    assert hql.notes.status_of(vault.card_alone("lifetime 2023"), vault) == "superseded"
    assert hql.notes.status_of(vault.card_alone("glossary"), vault) == "active"
    assert vault._cards is None and len(built) <= 3, built
    assert notes.supersede("glossary", "lifetime 2024").written
    vault = hql.Vault.open(root)
    assert hql.notes.status_of(vault.card_alone("lifetime 2024"), vault) == "superseded"
    assert vault.card_alone("lifetime 2024").superseded_by == ["glossary"]
