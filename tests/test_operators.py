"""Operators of everyday.md section 1: precedence, typing, evaluation, absence and messy Data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hql
from hql.source import Span

EVERYDAY = hql.open_vault(Path(__file__).parent / "fixtures" / "everyday")
VAULT = hql.open_vault(Path(__file__).parent / "fixtures" / "vault")


def shown(text: str, vault: hql.Vault | None = None) -> str:
    outcome = hql.run(text, vault=vault)
    assert not outcome.failed, outcome.render_reports()
    return outcome.text()


def type_of(text: str) -> str:
    outcome = hql.check(text)
    assert not outcome.failed, outcome.render_reports()
    return str(outcome.type)


def only_report(text: str, vault: hql.Vault | None = None) -> tuple[str, str, Span]:
    outcome = hql.run(text, vault=vault)
    assert len(outcome.reports) == 1, outcome.reports
    report = outcome.reports[0]
    return report.stage.value, report.message, report.span


# --- precedence --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1 + 2 * 3", "7"),
        ("(1 + 2) * 3", "9"),
        ("10 - 4 - 3", "3"),  # left-associative
        ("2 * 3 % 4", "2"),
        ("-2 * 3", "-6"),
        ("- 2 * 3", "-6"),
        ("1 -2", "-1"),  # after an operand `-` subtracts
        ("[1, -2]", "[1, -2]"),
        ("-(1 + 2)", "-3"),
        ("not true and false", "false"),  # (not true) and false
        ("not false and false", "false"),
        ("true or false and false", "true"),  # and binds tighter than or
        ("false and true or true", "true"),
        ("1 + 1 == 2 and 3 > 2", "true"),
        ("not 1 > 2", "true"),
        ("{a: 1}.b ?? 2 == 2 or false", "true"),  # ?? binds loosest: a ?? (… or …)
        ("[1, 2, 3] | filter(x => x > 1 and x < 3)", "[2]"),
        ('"ab" + "cd"', "abcd"),
        ("7 / 2", "3.5"),
        ("7.0 / 2.0", "3.5"),
        ("7 % 3", "1"),
        ("-7 % 3", "-1"),  # the sign of the dividend
        ("7 % -3", "1"),
        ("1.5 * 2.0", "3.0"),
    ],
)
def test_precedence_and_values(text: str, value: str) -> None:
    assert shown(text) == value


def test_comparisons_do_not_chain() -> None:
    for text, operator in (("1 < 2 < 3", "<"), ("1 <= 2 > 0", ">"), ("1 == 1 == true", "==")):
        stage, message, span = only_report(text)
        assert stage == "syntax" and message.startswith("comparisons do not chain")
        assert f"`{operator}`" in message
    assert only_report("1 < 2 < 3")[2] == Span(6, 7)
    assert shown("(1 < 2) == true") == "true"  # brackets make it one comparison


def test_ordering_on_each_orderable_type() -> None:
    assert shown("2 > 1") == "true"
    assert shown("2.5 <= 2.5") == "true"
    assert shown('"apple" < "banana"') == "true"
    assert shown('"Z" < "a"') == "true"  # by code point
    assert shown('date("2024-01-02") > date("2024-01-01")') == "true"


# --- typing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 < 2.0", "ordering compares two numbers, two strings or two dates, not Int and Float"),
        ('1 >= "a"', "ordering compares two numbers, two strings or two dates, not Int and String"),
        (
            "true < false",
            "ordering compares two numbers, two strings or two dates, not Bool and Bool",
        ),
        (
            "1 - 2.0",
            "subtraction subtracts two numbers of one type, two dates, or an Int from a date, not Int and Float",
        ),
        (
            '"a" - "b"',
            "subtraction subtracts two numbers of one type, two dates, or an Int from a date, not String and String",
        ),
        ("2 * true", "multiplication multiplies two Int or two Float, not Int and Bool"),
        ('1 / "x"', "division divides two Int or two Float, not Int and String"),
        ("1.5 % 2.0", "`%` takes the remainder of two Int, not Float and Float"),
        (
            '"a" + 1',
            "addition adds two numbers of one type, two strings, or an Int to a date, not String and Int",
        ),
        ("1 and true", "`and` requires two Bool operands, not Int and Bool"),
        ('true or "x"', "`or` requires two Bool operands, not Bool and String"),
    ],
)
def test_misuse_names_both_operand_types_at_the_operator(text: str, message: str) -> None:
    stage, found, span = only_report(text)
    assert stage == "type" and found.startswith(message)
    assert span == Span(0, len(text))


def test_mixed_numbers_get_a_hint() -> None:
    assert only_report("1 < 2.0")[1].endswith("convert one side with `float(n)`")


def test_unary_operators_name_their_operand_type() -> None:
    assert only_report('not "x"')[1:] == ("`not` requires a Bool operand, not String", Span(0, 7))
    assert only_report("-true")[1:] == (
        "unary minus requires an Int or Float operand, not Bool",
        Span(0, 5),
    )


def test_the_reference_addition_report_is_kept() -> None:
    assert only_report('1 + "a"') == (
        "type",
        "addition requires two Int or two Float operands",
        Span(4, 7),
    )
    assert only_report("true + 1")[2] == Span(0, 4)


def test_result_types() -> None:
    assert type_of("1 - 2") == "Int"
    assert type_of("1 / 2") == "Float"
    assert type_of("1 < 2") == "Bool"
    assert type_of('date("2024-01-01") - 1') == "Date"
    assert type_of('date("2024-01-01") - date("2023-01-01")') == "Int"
    assert type_of("{a: 1}.a > 0") == "Option<Bool>"  # Data may be empty
    assert type_of("{a: 1}.a ?? 0") == "Data"


# --- evaluation failures ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("9223372036854775807 * 2", "numeric overflow"),
        ("-9223372036854775807 - 2", "numeric overflow"),
        ("x = -9223372036854775807 - 1\n-x", "numeric overflow"),
        ("1 / 0", "division by zero"),
        ("1.0 / 0.0", "division by zero"),
        ("5 % 0", "remainder by zero: `%` needs a divisor other than 0"),
        ('date("9999-12-31") + 1', "date out of range: years go from 1 to 9999"),
    ],
)
def test_evaluation_failures_carry_the_operation_span(text: str, message: str) -> None:
    stage, found, span = only_report(text)
    assert (stage, found) == ("evaluation", message)
    assert span.end == len(text.encode()) and span.start == text.rfind("\n") + 1


# --- absence ----------------------------------------------------------------------------------


def test_absent_operands_give_absent() -> None:
    absent = "{a: 1}.missing"
    assert shown(f"{absent} > 1") == "none"
    assert shown(f"not ({absent} > 1)") == "none"
    assert shown('[[nowhere]].title + "!"', VAULT) == "none"


def test_and_or_let_the_other_side_decide() -> None:
    absent = "{a: 1}.missing > 1"
    assert shown(f"false and {absent}") == "false"
    assert shown(f"{absent} and false") == "false"
    assert shown(f"true and {absent}") == "none"
    assert shown(f"true or {absent}") == "true"
    assert shown(f"{absent} or true") == "true"
    assert shown(f"false or {absent}") == "none"


def test_and_or_short_circuit() -> None:
    assert shown("false and 1 / 0 > 1.0") == "false"
    assert shown("true or 1 / 0 > 1.0") == "true"


def test_otherwise() -> None:
    assert shown("{a: 1}.missing ?? 2") == "2"
    assert shown("{a: 1}.a ?? 2") == "1"
    assert shown('[[nowhere]].title ?? "untitled"', VAULT) == "untitled"
    assert type_of('[[x]].title ?? "untitled"') == "String"
    assert type_of("[[x]].title ?? [[y]].title") == "Option<String>"
    assert type_of("[[x]].title ?? 1") == "Data"  # two Data members join as Data
    stage, message, _ = only_report("[[x]] ?? 1")
    assert stage == "type" and message.startswith("`??` needs a fallback of the left side's type")


def test_equality_keeps_the_reference_rules() -> None:
    assert shown("{a: 1}.missing == {b: 1}.missing") == "true"
    assert shown("1 == 1 and 2 != 3") == "true"


def test_filter_keeps_only_present_true() -> None:
    program = "[{r: 5}, {r: 1}, {x: 1}] | filter(d => d.r > 2) | count"
    assert shown(program) == "1"


# --- messy Data ---------------------------------------------------------------------------------


def test_messy_data_is_false_with_one_warning_counting_the_cards() -> None:
    program = "cards | filter(c => c.metadata.rating >= 4) | map(c => c.name)"
    outcome = hql.run(program, vault=EVERYDAY)
    assert not outcome.failed
    assert outcome.text() == "[dune, walden]"  # 3.5 is below 4; "high" is text
    (warning,) = outcome.reports
    assert warning.severity.word == "warning"
    assert "`c.metadata.rating >= 4`" in warning.message and "1 card" in warning.message
    assert warning.span == Span(20, 42)


def test_messy_data_counts_every_card_once() -> None:
    program = 'cards | filter(c => c.metadata.rating < "m") | count'  # numbers are the wrong kind
    outcome = hql.run(program, vault=EVERYDAY)
    assert outcome.text() == "1"  # "high"
    (warning,) = outcome.reports
    assert "3 cards" in warning.message


def test_data_numbers_compare_with_ints_and_floats() -> None:
    assert shown("cards | filter(c => c.metadata.rating > 3.9) | count", EVERYDAY) == "2"


# --- keywords where an operator can stand ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("and = 1\nand", "1"),
        ("or = 2\nor + 1", "3"),
        ("not = true\nnot", "true"),
        ("{and: 1, or: 2}.or", "2"),
        ("[1, 2] | map(not => not + 1)", "[2, 3]"),
        ("x = {not: true}\nx.not", "true"),
        ("and = 1\nor = 2\nand\nor", "2"),
        ("x = true\ny = false\nx\nand y", "false"),  # a line starting with `and` continues
    ],
)
def test_and_or_not_stay_names_where_no_operator_can_stand(text: str, value: str) -> None:
    assert shown(text) == value


# --- dates -----------------------------------------------------------------------------------------


def test_dates_parse_print_and_convert() -> None:
    assert shown('date("2024-05-01")') == "2024-05-01"
    assert shown('date("2024-05-01T09:30")') == "2024-05-01T09:30:00"
    assert shown('date("2024-05-01T09:30:00Z")') == "2024-05-01T09:30:00+00:00"
    assert hql.run('[date("2024-05-01")]').to_json()["value"] == ["2024-05-01"]
    assert shown('{d: date("2024-05-01")}') == '{d: "2024-05-01"}'
    stage, message, span = only_report('date("soon")')  # a literal: known when checking
    assert stage == "type" and message.startswith("`soon` is not an ISO 8601 date")
    assert span == Span(5, 11)
    stage, message, span = only_report('date("so" + "on")')  # computed: known when running
    assert stage == "evaluation" and message.startswith("`soon` is not an ISO 8601 date")
    assert span == Span(5, 16)


def test_date_fields_arithmetic_and_format() -> None:
    d = 'date("2024-02-28")'
    assert shown(f"{d}.year + {d}.month + {d}.day") == str(2024 + 2 + 28)
    assert shown(f"{d}.weekday") == "3"  # a Wednesday; Monday is 1
    assert shown(f"{d} + 2") == "2024-03-01"
    assert shown(f"{d} - 28") == "2024-01-31"
    assert shown(f'date("2024-03-01") - {d}') == "2"
    assert shown(f'format({d}, "DD.MM.YYYY")') == "28.02.2024"
    assert (
        shown('format(date("2024-02-28T07:05:09"), "YYYY-MM-DD HH:mm:ss")') == "2024-02-28 07:05:09"
    )


def test_a_date_compares_with_a_date_time_as_its_midnight() -> None:
    assert shown('date("2024-01-01") < date("2024-01-01T00:30")') == "true"
    assert shown('date("2024-01-01") <= date("2024-01-01T00:00")') == "true"
    # midnight in the date-time's offset: 2024-01-01T00:00+02:00 is before 00:30+02:00
    assert shown('date("2024-01-01") < date("2024-01-01T00:30+02:00")') == "true"
    assert shown('date("2024-01-02") > date("2024-01-01T23:59+02:00")') == "true"


def test_front_matter_dates_compare_and_absent_ones_drop_out() -> None:
    program = 'cards | filter(c => date(c.metadata.due) < date("2025-01-01")) | map(c => c.name)'
    outcome = hql.run(program, vault=EVERYDAY)
    assert outcome.text() == "[dune]"
    (warning,) = outcome.reports  # "someday"; a card without `due` is simply absent
    assert "`date(c.metadata.due)`" in warning.message and "1 card" in warning.message
    program = 'cards | filter(c => c.metadata.due >= date("2025-01-01")) | count'
    assert shown(program, EVERYDAY) == "1"  # front-matter text that names a date compares as one


def test_today_and_now_read_the_clock_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import hql.dates

    calls = []
    real = hql.dates.now

    def counting() -> object:
        calls.append(1)
        return real()

    monkeypatch.setattr(hql.dates, "now", counting)
    outcome = hql.run('[1, 2, 3] | map(x => format(now(), "YYYY") == format(today(), "YYYY"))')
    assert outcome.text() == "[true, true, true]"
    assert len(calls) == 1
    hql.run("now()")
    assert len(calls) == 2


def test_sorting_dates() -> None:
    program = '[date("2024-01-02"), date("2023-06-01T10:00"), date("2023-06-01")] | sort'
    assert shown(program) == "[2023-06-01, 2023-06-01T10:00:00, 2024-01-02]"


def test_startup_does_not_load_dates() -> None:
    code = (
        "import sys\nfrom hql.cli import main\nmain(['eval', '1 - 2 * 3 < 4 and not false'])\n"
        "print(sorted(m for m in ('datetime', '_datetime', 'hql.dates') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["true", "[]"], done.stderr
