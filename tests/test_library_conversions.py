"""Conversions and helpers of everyday.md section 2: number float string if round floor ceil
abs join slice keys values: values, types, absence, Data and refusals with spans."""

from __future__ import annotations

from pathlib import Path

import pytest

import hql
from hql.vault import Vault

VAULT = Path(__file__).parent / "fixtures" / "vault"


@pytest.fixture(scope="module")
def vault() -> Vault:
    return hql.open_vault(VAULT)


def answer(text: str, vault: Vault | None = None) -> tuple[str, str]:
    outcome = hql.run(text, vault=vault)
    assert not outcome.failed, outcome.reports
    return outcome.text(), str(outcome.type)


def refusal(text: str) -> tuple[str, str, str]:
    outcome = hql.run(text)
    assert outcome.failed
    report = outcome.reports[0]
    pointed = text.encode()[report.span.start : report.span.end].decode()
    return report.stage.value, report.message, pointed


@pytest.mark.parametrize(
    ("program", "value", "type_"),
    [
        ('number("412")', "412", "Data"),
        ('number(" -3.5e2 ")', "-350.0", "Data"),
        ('number("12 apples")', "none", "Data"),
        ('number("inf")', "none", "Data"),
        ("number(3)", "3", "Int"),
        ("number(2.5)", "2.5", "Float"),
        ('{p: "12"}.p | number', "12", "Data"),
        ("{p: 7}.p | number", "7", "Data"),
        ("{p: true}.p | number", "none", "Data"),
        ("float(3)", "3.0", "Float"),
        ("float(3) + 0.5", "3.5", "Float"),
        ("{p: 2}.p | float", "2.0", "Option<Float>"),
        ("string(3)", "3", "String"),
        ("string(1.0)", "1.0", "String"),
        ("string([1, 2])", "[1, 2]", "String"),
        ('{s: "x"}.s | string', "x", "Option<String>"),
        ("{s: [1]}.s | string", "[1]", "Option<String>"),
        ("[[nowhere]] | string", "none", "Option<String>"),
        ("if(true, 1, 2)", "1", "Int"),
        ("if(false, [1], [])", "[]", "List<Int>"),
        ("if({b: true}.b, 1, 2)", "1", "Int"),
        ("if({}.b == true, 1, 2)", "2", "Int"),
        ("round(2.5)", "3", "Int"),
        ("round(-2.5)", "-3", "Int"),
        ("round(2.4)", "2", "Int"),
        ("round(7)", "7", "Int"),
        ("round(2.675, 2)", "2.68", "Float"),
        ("round(1234, -2)", "1200.0", "Float"),
        ("floor(-2.5)", "-3", "Int"),
        ("ceil(2.1)", "3", "Int"),
        ("floor({n: 2.5}.n)", "2", "Option<Int>"),
        ("abs(-3)", "3", "Int"),
        ("abs(-0.5)", "0.5", "Float"),
        ("abs({n: -2}.n)", "2", "Data"),
        ('["a", "b"] | join', "a, b", "String"),
        ('join([1, 2], "-")', "1-2", "String"),
        ('{t: ["x", "y"]}.t | join("+")', "x+y", "String"),
        ('"bearer" | slice(0, 4)', "bear", "String"),
        ('"bearer" | slice(-3)', "rer", "String"),
        ("[1, 2, 3, 4] | slice(1, 3)", "[2, 3]", "List<Int>"),
        ("slice([1, 2, 3, 4], -2)", "[3, 4]", "List<Int>"),
        ("{t: [1, 2, 3]}.t | slice(1)", "[2, 3]", "Data"),
        ('{t: "owl"}.t | slice(1)', '"wl"', "Data"),
        ("{b: 1, a: 2} | keys", "[a, b]", "List<String>"),
        ("{b: 1, a: 2} | values", "[2, 1]", "List<Data>"),
        ('Map(["a"], [1]) | keys', "[a]", "Set<String>"),
        ('OrderedMap(["b", "a"], [1, 2]) | keys', "[b, a]", "List<String>"),
        ('OrderedMap(["b", "a"], [1, 2]) | values', "[1, 2]", "List<Int>"),
        ("{}.missing | keys", "[]", "List<String>"),
    ],
)
def test_values_and_types(program: str, value: str, type_: str) -> None:
    assert answer(program) == (value, type_)


def test_if_evaluates_only_the_branch_it_takes() -> None:
    assert answer("if(true, 1, 9223372036854775807 + 1)") == ("1", "Int")
    outcome = hql.run("if(false, 1, 9223372036854775807 + 1)")
    assert outcome.failed and outcome.reports[0].message == "numeric overflow"


def test_numbers_from_messy_front_matter(vault: Vault) -> None:
    text, type_ = answer(
        "cards | map(c => number(c.metadata.status)) | filter(n => exists(n)) | size", vault
    )
    assert (text, type_) == ("0", "Int")


def test_failures_of_rounding() -> None:
    outcome = hql.run("floor(100000000000000000000.0)")
    assert outcome.reports[0].message == "numeric overflow"
    outcome = hql.run("abs(-9223372036854775807 + -1)")
    assert outcome.reports[0].message == "numeric overflow"


@pytest.mark.parametrize(
    ("program", "message", "pointed"),
    [
        ('float("3")', "`float` converts a number, not String; for text write `number(s)`", '"3"'),
        (
            "number([1])",
            "`number` works on a number or text, not List<Int>; for each element write `map(x => number(x))`",
            "[1]",
        ),
        ("if(1, 2, 3)", "the condition of `if` is Bool, not Int", "1"),
        ("if(true, 1)", "`if` takes 3 arguments, not 2", "if(true, 1)"),
        (
            "if(true, [[nowhere]], {1})",
            "the two branches of `if` have no common type: Option<Card> and Set<Int>",
            "{1}",
        ),
        ('round("2")', "`round` works on a number, not String", '"2"'),
        ('round(2.5, "x")', "`digits` of `round` is Int, not String", '"x"'),
        ('abs("x")', "`abs` works on a number, not String", '"x"'),
        ("join([1], 2)", "`sep` of `join` is String, not Int", "2"),
        (
            "slice({1, 2}, 0, 1)",
            "`slice` works on a String or a sequence, and Set<Int> has no positions; sort it first",
            "{1, 2}",
        ),
        ('slice("abc", "a")', "`from` of `slice` is Int, not String", '"a"'),
        ("keys(1)", "`keys` works on Data or a map, not Int", "1"),
        ("values([1])", "`values` works on Data or a map, not List<Int>", "[1]"),
    ],
)
def test_refusals(program: str, message: str, pointed: str) -> None:
    stage, found, at = refusal(program)
    assert stage == "type"
    assert (found, at) == (message, pointed)
