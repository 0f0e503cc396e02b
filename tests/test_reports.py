"""Reports (reference section 10): data, caret rendering, summary line, modes and their resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

import hql
from hql.api import HostError, resolve_mode
from hql.diagnostics import (
    Report,
    Severity,
    Stage,
    evaluation,
    name_error,
    render,
    render_all,
    summary,
    syntax,
    type_error,
    warning,
)
from hql.source import Source, Span

VAULT = Path(__file__).parent / "fixtures" / "vault"


# --- reports as data ---------------------------------------------------------------------


def test_stage_and_severity_of_each_kind() -> None:
    span = Span(0, 1)
    assert (syntax("m", span).stage, syntax("m", span).severity) == (Stage.SYNTAX, Severity.FAILURE)
    assert (type_error("m", span).stage, type_error("m", span).severity) == (
        Stage.TYPE,
        Severity.ERROR,
    )
    assert (name_error("m", span).stage, name_error("m", span).severity) == (
        Stage.NAME,
        Severity.ERROR,
    )
    assert evaluation("m", span).severity is Severity.FAILURE
    assert (warning("m", span).stage, warning("m", span).severity) == (
        Stage.EVALUATION,
        Severity.WARNING,
    )
    assert Severity.WARNING < Severity.ERROR < Severity.FAILURE
    assert not warning("m", span).failed and type_error("m", span).failed


def test_report_json() -> None:
    report = type_error("addition requires two Int or two Float operands", Span(4, 7))
    assert report.to_json() == {
        "severity": "error",
        "stage": "type",
        "message": "addition requires two Int or two Float operands",
        "span": {"start": 4, "end": 7},
    }


# --- caret rendering ------------------------------------------------------------------------


def test_render_points_at_the_span() -> None:
    source = Source("x = 1\n  true + 1", "<expression>")
    report = type_error("addition requires two Int or two Float operands", Span(8, 12))
    assert render(report, source) == "\n".join(
        [
            "type error: addition requires two Int or two Float operands",
            " --> <expression>:2:3",
            "  |",
            "2 |   true + 1",
            "  |   ^^^^",
        ]
    )


def test_columns_count_characters_not_bytes() -> None:
    source = Source('"é" == 1 + "ü"', "q.hql")
    report = type_error("addition requires two Int or two Float operands", Span(12, 16))
    lines = render(report, source).splitlines()
    assert lines[1] == " --> q.hql:1:12"
    assert lines[4] == "  |            ^^^"


def test_an_empty_span_gets_one_caret_at_end_of_input() -> None:
    outcome = hql.run("1 +")
    assert outcome.render_reports() == "\n".join(
        [
            "syntax failure: expected an expression",
            " --> <expression>:1:4",
            "  |",
            "1 | 1 +",
            "  |    ^",
            "",
        ]
    )


def test_the_gutter_widens_with_the_line_number() -> None:
    text = "\n" * 11 + "1 + true"
    rendered = hql.run(text, origin="<stdin>").render_reports().splitlines()
    assert rendered[1:5] == ["  --> <stdin>:12:5", "   |", "12 | 1 + true", "   |     ^^^^"]


def test_a_span_over_several_lines_underlines_to_the_end_of_its_first_line() -> None:
    source = Source("[1,\n2] | take(-1)", "<expression>")
    report = evaluation("a count cannot be negative", Span(0, 17))
    assert render(report, source).splitlines()[3:] == ["1 | [1,", "  | ^^^"]


def test_several_reports_end_with_a_summary_line() -> None:
    outcome = hql.run("a = nosuchthing\nb = a + 1", mode="collect")
    assert outcome.render_reports() == "\n".join(
        [
            "name error: `nosuchthing` is not bound",
            " --> <expression>:1:5",
            "  |",
            "1 | a = nosuchthing",
            "  |     ^^^^^^^^^^^",
            "",
            "type error: addition requires two Int or two Float operands",
            " --> <expression>:2:5",
            "  |",
            "2 | b = a + 1",
            "  |     ^",
            "",
            "2 reports: 0 failure, 2 error, 0 warning",
        ]
    )


def test_summary_counts_each_severity() -> None:
    span = Span(0, 0)
    reports = [syntax("a", span), warning("b", span), warning("c", span)]
    assert summary(reports) == "3 reports: 1 failure, 0 error, 2 warning"
    assert render_all([], Source("")) == ""


def test_warnings_keep_the_value() -> None:
    vault = hql.open_vault(VAULT)
    outcome = hql.run("[[nowhere]] | count\n[[x]]", vault=vault, origin="q.hql")
    assert not outcome.failed and outcome.text() == "none"
    rendered = outcome.render_reports()
    assert rendered.startswith(
        "evaluation warning: `[[nowhere]]` does not resolve in this vault\n --> q.hql:1:1"
    )
    assert rendered.endswith("2 reports: 0 failure, 0 error, 2 warning")


def test_render_of_a_report_past_the_text_is_safe() -> None:
    report = Report(Stage.TYPE, Severity.ERROR, "m", Span(50, 60))
    assert render(report, Source("short")).startswith("type error: m\n --> <expression>:1:6")


# --- modes ---------------------------------------------------------------------------------------


def test_strict_is_the_default_and_stops_at_the_first_error() -> None:
    assert len(hql.run('1 + "a"\n2 + "b"').reports) == 1


@pytest.mark.parametrize("mode", ["collect", "all"])
def test_collect_and_its_alias(mode: str) -> None:
    assert len(hql.run('1 + "a"\n2 + "b"', mode=mode).reports) == 2


def make_vault(root: Path, mode: str | None) -> Path:
    root.mkdir()
    (root / "note.md").write_text("# Note\n", encoding="utf-8")
    if mode is not None:
        (root / "hql.toml").write_text(f'[report]\nmode = "{mode}"\n', encoding="utf-8")
    return root


def test_mode_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    collecting = hql.open_vault(make_vault(tmp_path / "collecting", "collect"))
    plain = hql.open_vault(make_vault(tmp_path / "plain", None))
    monkeypatch.delenv("HQL_REPORT", raising=False)
    assert resolve_mode(None, None) == ("strict", "the default")
    assert resolve_mode(None, plain) == ("strict", "the default")
    monkeypatch.setenv("HQL_REPORT", "collect")
    assert resolve_mode(None, plain) == ("collect", "$HQL_REPORT")
    monkeypatch.setenv("HQL_REPORT", "strict")
    assert resolve_mode(None, collecting) == ("collect", "the vault's hql.toml")
    assert resolve_mode("strict", collecting) == ("strict", "this query")
    assert resolve_mode("all", None) == ("collect", "this query")


def test_a_vault_mode_applies_to_its_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HQL_REPORT", raising=False)
    vault = hql.open_vault(make_vault(tmp_path / "v", "collect"))
    assert len(hql.run('1 + "a"\n2 + "b"', vault=vault).reports) == 2
    assert len(hql.run('1 + "a"\n2 + "b"', vault=vault, mode="strict").reports) == 1


def test_unknown_mode_is_a_host_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(
        HostError, match="unknown report mode `loud`; expected `strict` or `collect`"
    ):
        resolve_mode("loud", None)
    monkeypatch.setenv("HQL_REPORT", "")
    assert resolve_mode(None, None) == ("strict", "the default")  # an empty variable means unset


def test_carets_keep_the_tabs_of_the_line() -> None:
    rendered = hql.run("\tx = 1\n\t1 +\ttrue").render_reports().splitlines()
    assert rendered[3:5] == ["2 | \t1 +\ttrue", "  | \t   \t^^^^"]
