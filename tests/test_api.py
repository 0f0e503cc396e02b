"""The Python API: `hql.run`, `hql.check`, `Outcome`, `Session`. A caller never parses printed text."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import hql
from hql.values import ListValue, Presentation
from hql.vault import Vault as LibraryVault

VAULT = Path(__file__).parent / "fixtures" / "vault"


def test_run_returns_value_type_and_no_reports() -> None:
    outcome = hql.run("[1, 2] | map(x => x + 1)")
    assert isinstance(outcome, hql.Outcome)
    assert outcome.value == ListValue((2, 3)) and list(outcome.value) == [2, 3]
    assert str(outcome.type) == "List<Int>"
    assert outcome.reports == [] and outcome.failed is False
    assert outcome.text() == "[2, 3]"
    assert outcome.to_json() == {
        "origin": "<expression>",
        "type": "List<Int>",
        "value": [2, 3],
        "reports": [],
    }


def test_scalars_are_python_values() -> None:
    assert hql.run("1 + 1").value == 2
    assert hql.run("1.5 + 1.5").value == 3.0
    assert hql.run('"s"').value == "s"
    assert hql.run("1 == 1").value is True


def test_a_failed_check_has_no_value_and_no_type() -> None:
    outcome = hql.run('1 + "a"')
    assert outcome.failed and outcome.value is None and outcome.type is None
    assert outcome.text() == ""
    (report,) = outcome.reports
    assert (report.stage.value, report.severity.word, report.span.start, report.span.end) == (
        "type",
        "error",
        4,
        7,
    )
    assert (
        outcome.to_json()["reports"][0]["message"]
        == "addition requires two Int or two Float operands"
    )


def test_an_evaluation_failure_has_no_value() -> None:
    outcome = hql.run("[1] | take(-1)")
    assert outcome.failed and outcome.value is None
    assert outcome.to_json()["value"] is None
    assert [r.message for r in outcome.reports] == ["a count cannot be negative"]


def test_check_types_without_running() -> None:
    outcome = hql.check("[9223372036854775807] | map(n => n + 1)")
    assert str(outcome.type) == "List<Int>" and outcome.value is None and not outcome.reports
    assert outcome.text() == "List<Int>"
    assert hql.check("x = nosuch").failed


def test_origin_names_the_source() -> None:
    outcome = hql.run("1 + true", origin="queries/q.hql")
    assert outcome.to_json()["origin"] == "queries/q.hql"
    assert " --> queries/q.hql:1:5" in outcome.render_reports()


def test_modes() -> None:
    assert len(hql.run('1 + "a"\n2 + "b"').reports) == 1
    assert len(hql.run('1 + "a"\n2 + "b"', mode="collect").reports) == 2
    with pytest.raises(hql.HostError):
        hql.run("1", mode="loud")


def test_vault_by_object_or_path() -> None:
    vault = hql.open_vault(VAULT)
    assert hql.run("cards | count", vault=vault).value == 6
    assert hql.run("cards | count", vault=str(VAULT)).value == 6
    assert hql.run("cards | count", vault=VAULT).value == 6
    with pytest.raises(hql.HostError, match="no such directory"):
        hql.run("1", vault=VAULT / "missing")


def test_values_are_python_objects() -> None:
    vault = hql.open_vault(VAULT)
    cards = hql.run("cards | take(2)", vault=vault).value
    assert [card.name for card in cards] == ["bearer-tokens", "broken-relation"]
    first = next(iter(cards))
    assert first.title == "Bearer tokens" and first.kind == "ConceptCard"
    presented = hql.run("[1] | table").value
    assert isinstance(presented, Presentation) and presented.text == "value\n-----\n1"


def test_warnings_leave_the_value() -> None:
    outcome = hql.run("[[nowhere]] | count", vault=hql.open_vault(VAULT))
    assert outcome.value == 0 and not outcome.failed
    assert [r.severity.word for r in outcome.reports] == ["warning"]


def test_vault_class_is_exported_lazily() -> None:
    assert hql.Vault.__name__ == "Vault"


# --- sessions -------------------------------------------------------------------------------


def test_session_keeps_bindings_between_programs() -> None:
    session = hql.Session()
    assert session.run("x = [1, 2]").text() == "()"
    assert session.run("x | count").value == 2
    assert session.run("y = x | map(n => n + 1)\ny").text() == "[2, 3]"
    assert str(session.check("y")[0].type) == "List<Int>"


def test_a_failed_program_leaves_the_session_unchanged() -> None:
    session = hql.Session()
    session.run("x = 1")
    assert session.run('x = "s"\n1 + true').failed
    assert session.run("x").value == 1
    assert session.run("x = [1] | take(-1)").failed  # fails while running
    assert session.run("x").value == 1


def test_session_keeps_imports_and_declarations() -> None:
    session = hql.Session()
    session.run("type Colour : String")
    assert session.run("x: Colour = 1").failed
    session.run("import lexical")
    assert "lexical" in session.scope.imports


def test_session_reset() -> None:
    session = hql.Session()
    session.run("x = 1")
    session.reset()
    assert [r.message for r in session.run("x").reports] == ["`x` is not bound"]


def test_session_mode() -> None:
    session = hql.Session(mode="collect")
    assert (session.mode, session.mode_origin) == ("collect", "this query")
    assert len(session.run('1 + "a"\n2 + "b"').reports) == 2


def test_lone_surrogates_are_reported_not_raised() -> None:
    outcome = hql.run('"\ud800" + \udcff')
    (report,) = outcome.reports
    assert (report.message, report.span.start, report.span.end) == (
        "unexpected character `\ufffd`",
        8,
        11,
    )
    assert '1 | "\ufffd" + \ufffd' in outcome.render_reports()


def test_hql_vault_open_gives_cards_their_extension_metadata() -> None:
    vault = hql.Vault.open(Path(__file__).parent / "fixtures" / "vault")
    assert isinstance(vault, hql.Vault) and isinstance(hql.open_vault(vault.root), hql.Vault)
    oauth = vault.card("oauth")
    assert oauth is not None and oauth.metadata["lexical"] == {
        "model": "hql.hashbag.v1",
        "indexed": True,
    }
    assert hql.run("[[oauth]].metadata.lexical.model", vault=vault).text() == '"hql.hashbag.v1"'


def test_a_missing_vault_keeps_the_originals_wording_which_the_readme_explains() -> None:
    said = "`cards` needs a vault: pass --vault <directory>"
    for outcome in (hql.run("cards | count"), hql.check("x = cards")):
        assert [r.message for r in outcome.reports] == [said]
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    assert said in readme and "passing `vault=`" in readme


# --- what `vault=` accepts ------------------------------------------------------------------


@pytest.mark.parametrize("given", [str(VAULT), VAULT, os.fsencode(VAULT)])
def test_a_session_opens_a_vault_given_by_its_path(given: object) -> None:
    session = hql.Session(given)  # type: ignore[arg-type]
    assert isinstance(session.vault, LibraryVault)
    assert session.vault.root == hql.open_vault(VAULT).root
    assert session.run("cards | count").value == 6
    assert session.run("x = cards | map(c => c.name) | take(2)").text() == "()"
    assert session.run("x").value == ListValue(("bearer-tokens", "broken-relation"))


def test_a_session_given_a_path_answers_as_one_given_the_opened_vault() -> None:
    program = "cards | sort(c => c.name) | map(c => [c.name, c.title])"
    by_path = hql.Session(str(VAULT)).run(program)
    by_object = hql.Session(hql.open_vault(VAULT)).run(program)
    assert by_path.json_text() == by_object.json_text() and not by_path.failed


@pytest.mark.parametrize("make", [hql.Session, lambda v: hql.run("1", vault=v)])
def test_a_path_that_is_no_vault_is_a_host_error(make: Any, tmp_path: Path) -> None:
    with pytest.raises(hql.HostError, match="no such directory"):
        make(tmp_path / "missing")
    (tmp_path / "note.md").write_text("# a file\n", encoding="utf-8")
    with pytest.raises(hql.HostError, match="not a directory"):
        make(str(tmp_path / "note.md"))


@pytest.mark.parametrize("given", [5, 2.5, ["vaults/web-auth"], object()])
@pytest.mark.parametrize(
    "make",
    [
        hql.Session,
        lambda v: hql.run("cards | count", vault=v),
        lambda v: hql.check("cards | count", vault=v),
    ],
)
def test_a_vault_of_another_type_is_named_in_a_host_error(given: object, make: Any) -> None:
    expected = (
        "`vault` must be an opened hql.Vault or the path of a vault folder, "
        f"not {type(given).__name__}"
    )
    with pytest.raises(hql.HostError) as raised:
        make(given)
    assert str(raised.value) == expected
