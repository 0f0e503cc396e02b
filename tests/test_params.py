"""Parameters (`$name`) and the plan cache: everyday.md section 5."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

import hql
import hql.api
from hql.api import HostError, PlanCache, Session
from hql.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "vault"
VAULT = hql.open_vault(FIXTURE)


@pytest.mark.parametrize(
    ("value", "type_", "shown"),
    [
        ("ada", "String", "ada"),
        (3, "Int", "3"),
        (2.5, "Float", "2.5"),
        (True, "Bool", "true"),
        ([1, 2], "List<Int>", "[1, 2]"),
        ([1, "a"], "List<Data>", "[1, a]"),
        ([], "List<Never>", "[]"),
        ({"a": 1, "b": [True]}, "Data", "{a: 1, b: [true]}"),
        (datetime.date(2024, 5, 1), "Date", "2024-05-01"),
        (datetime.datetime(2024, 5, 1, 9, 30), "Date", "2024-05-01T09:30:00"),
    ],
)
def test_parameters_are_typed_as_the_language_types_them(value: Any, type_: str, shown: str) -> None:
    outcome = hql.run("$x", params={"x": value})
    assert not outcome.failed, outcome.reports
    assert (str(outcome.type), outcome.text()) == (type_, shown)


def test_a_question_with_quotes_and_backslashes_passes_untouched() -> None:
    question = 'say "hi" \\ there\\n'
    outcome = hql.run("[$q, $q + $q]", params={"q": question})
    assert outcome.value.items == (question, question + question)


def test_parameters_work_in_queries() -> None:
    program = "cards | filter(c => c.metadata.owner == $who) | map(c => c.name)"
    assert hql.run(program, vault=VAULT, params={"who": "ada"}).text() == "[bearer-tokens, sessions]"
    assert hql.run(program, vault=VAULT, params={"who": "grace"}).text() == "[oauth]"


def test_an_unbound_parameter_is_a_name_error_naming_it() -> None:
    outcome = hql.run("$who + $what", params={"who": "ada"})
    (report,) = outcome.reports
    assert report.stage.value == "name" and "`$what`" in report.message
    assert (report.span.start, report.span.end) == (7, 12)


def test_a_value_hql_cannot_hold_is_a_host_error() -> None:
    with pytest.raises(HostError, match="parameter `x`"):
        hql.run("$x", params={"x": object()})
    with pytest.raises(HostError, match="64-bit"):
        hql.run("$x", params={"x": 2**64})


def test_session_run_takes_parameters() -> None:
    session = Session(VAULT)
    assert session.run("n = $k * 2", params={"k": 4}).text() == "()"
    assert session.run("n + $k", params={"k": 1}).text() == "9"


class Counting:
    """Counts the real parse and check calls the API makes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.parses = 0
        self.checks = 0
        real_parse, real_check = hql.api.parse, hql.api.Checker.check

        def parse(text: str) -> Any:
            self.parses += 1
            return real_parse(text)

        def check(checker: Any, *args: Any, **kwargs: Any) -> Any:
            self.checks += 1
            return real_check(checker, *args, **kwargs)

        monkeypatch.setattr(hql.api, "parse", parse)
        monkeypatch.setattr(hql.api.Checker, "check", check)
        monkeypatch.setattr(hql.api, "PLANS", PlanCache())


def test_a_thousand_parameterised_runs_parse_and_check_once(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = Counting(monkeypatch)
    program = "cards | filter(c => c.metadata.owner == $who) | count"
    owners = ["ada", "grace", "edsger", "nobody"]
    answers = {owner: hql.run(program, vault=VAULT, params={"who": owner}).text() for owner in owners}
    for index in range(1000):
        owner = owners[index % len(owners)]
        outcome = hql.run(program, vault=VAULT, params={"who": owner})
        assert outcome.text() == answers[owner]
    assert (counting.parses, counting.checks) == (1, 1)
    hql.run(program, vault=VAULT, params={"who": 1})  # another parameter type: checked anew
    assert (counting.parses, counting.checks) == (2, 2)


def test_the_plan_cache_knows_vaults_and_session_scopes(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = Counting(monkeypatch)
    hql.run("cards | count", vault=VAULT)
    hql.run("cards | count", vault=VAULT)
    assert counting.checks == 1
    other = hql.open_vault(FIXTURE)  # another Vault object: another revision
    hql.run("cards | count", vault=other)
    assert counting.checks == 2
    session = Session(VAULT)
    session.run("x = 1")
    assert session.run("x + 1").text() == "2"
    session.run("x = 1.5")  # the binding's type changed: the next program is checked anew
    assert session.run("x + 1.0").text() == "2.5"
    assert session.run("x + 1").failed


def test_a_cached_failure_reports_again(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = Counting(monkeypatch)
    first = hql.run("1 + $x", params={"x": "a"})
    second = hql.run("1 + $x", params={"x": "b"})
    assert first.reports == second.reports and second.failed
    assert counting.checks == 1


def test_cli_params(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--param", 'q=a "b" \\c', "$q + $q"]) == 0
    assert capsys.readouterr().out == 'a "b" \\ca "b" \\c\n'
    assert main(["eval", "--param-json", "n=20", "--param-json", "xs=[1, 2]", "$n + size($xs)"]) == 0
    assert capsys.readouterr().out == "22\n"
    assert main(["eval", "--param", "q", "$q"]) == 1
    assert "--param takes name=value" in capsys.readouterr().err
    assert main(["eval", "$q"]) == 1
    assert "unknown parameter `$q`" in capsys.readouterr().err


def test_explain_takes_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    program = "cards | filter(c => c.metadata.owner == $who) | count"
    assert main(["--vault", str(FIXTURE), "explain", "--param", "who=ada", program]) == 0
    shown = capsys.readouterr().out
    assert "filter(c => c.metadata.owner == $who)" in shown and shown.rstrip().endswith("2")


def test_a_step_registered_later_is_seen_by_a_program_refused_before() -> None:
    from hql.registry import REGISTRY, StepSpec
    from hql.types import INT

    cache = PlanCache()
    assert Session(cache=cache).run("[1] | twice_later").failed
    spec = StepSpec(
        "twice_later",
        "core",
        (),
        "twice_later: Collection<Int> -> Int",
        "twice the size",
        "[1] | twice_later",
        lambda call: INT,
        lambda call: 2 * len(call.input),
    )
    REGISTRY.add(spec)
    try:
        assert Session(cache=cache).run("[1] | twice_later").text() == "2"
    finally:
        del REGISTRY.extensions["core"].steps["twice_later"]
