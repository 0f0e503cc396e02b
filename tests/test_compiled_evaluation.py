"""Expressions are compiled once per plan and vault (hql/compiler.py): lambdas still see the scopes the
language promises, reports keep their spans, and the value budget trips where it did."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import hql
from hql import compiler
from hql.syntax import tree as t


def value(text: str, vault: hql.Vault | None = None) -> str:
    outcome = hql.run(text, vault=vault)
    assert not outcome.failed, outcome.render_reports()
    return outcome.text()


def failure_at(text: str, quoted: str, words: str, vault: hql.Vault | None = None) -> None:
    """The run fails with one report whose span is exactly `quoted` in `text`."""
    outcome = hql.run(text, vault=vault)
    assert outcome.failed
    (report,) = outcome.reports
    start = text.encode().index(quoted.encode())
    assert (report.span.start, report.span.end) == (start, start + len(quoted.encode()))
    assert words in report.message, report.message


# --- scopes ------------------------------------------------------------------------


def test_a_parameter_shadows_a_binding_and_an_outer_parameter() -> None:
    assert value("n = 10\n[1, 2] | map(n => n + 1)") == "[2, 3]"
    assert value("n = 10\n[1, 2] | map(x => x + n)") == "[11, 12]"
    assert value("[1, 2] | map(x => [10, 20] | map(x => x + 1))") == "[[11, 21], [11, 21]]"


def test_an_inner_lambda_sees_the_outer_parameter_of_its_own_call() -> None:
    text = "[1, 2] | map(x => [10, 20] | filter(y => y > x * 10) | map(y => y + x))"
    assert value(text) == "[[21], []]"
    # A comparator closing over the element being mapped, called for every comparison.
    text = "[1, -1] | map(k => [3, 1, 2] | sort(by = (a, b) => compare(a * k, b * k)))"
    assert value(text) == "[[1, 2, 3], [3, 2, 1]]"


def test_a_comparator_that_must_be_called_orders_as_compare_does() -> None:
    items = "[5, 3, 9, 3, 1, 12, 0, 7]"
    plain = value(f"{items} | sort")
    assert value(f"{items} | sort(by = (a, b) => compare(a + 0, b))") == plain
    assert value(f"{items} | sort(by = (a, b) => compare(b * 1, a))") == value(
        f"{items} | sort(descending = true)"
    )
    descending = value(f"{items} | sort(by = (a, b) => compare(a + 0, b), descending = true)")
    assert descending == value(f"{items} | sort(descending = true)")
    # Ties keep their input order: by the last digit, 12 stays before 2, 31 before 1.
    tied = value("[12, 31, 2, 1, 40] | sort(by = (a, b) => compare(a % 10, b % 10))")
    assert tied == "[40, 31, 1, 12, 2]"


def test_lazy_if_inside_a_lambda_evaluates_in_that_call() -> None:
    assert value("[1, 0, 4] | map(x => if(x > 0, 8 / x, 0.0))") == "[8.0, 0.0, 2.0]"


def test_cards_of_a_lambda_and_of_the_vault() -> None:
    vault = hql.open_vault(Path(__file__).parent / "fixtures" / "vault")
    everyone = value("cards | count", vault)
    text = "[1, 2] | map(n => cards | count)"
    assert value(text, vault) == f"[{everyone}, {everyone}]"
    # A comparator over cards by a field, called for every comparison.
    sorted_by_name = "cards | sort(by = (a, b) => compare(b.name, a.name)) | map(c => c.name)"
    assert value(sorted_by_name, vault) == value(
        "cards | map(c => c.name) | sort(descending = true)", vault
    )


# --- reports ------------------------------------------------------------------------


def test_a_failure_inside_a_lambda_points_at_its_expression() -> None:
    text = "[1, 2] | map(x => x + 9223372036854775807)"
    failure_at(text, "x + 9223372036854775807", "overflow")
    text = "[3, 0] | filter(x => 10 / x > 1.0)"
    failure_at(text, "10 / x", "division by zero")
    text = "[ [1], [2] ] | map(xs => xs | map(x => x % 0))"
    failure_at(text, "x % 0", "remainder by zero")


def test_a_comparator_that_fails_points_at_its_expression() -> None:
    text = "[1, 2, 3] | sort(by = (a, b) => compare(a + 9223372036854775807, b))"
    failure_at(text, "a + 9223372036854775807", "overflow")
    text = "[2, 0] | map(k => [3, 1] | sort(by = (a, b) => compare(a % k, b + 0)))"
    failure_at(text, "a % k", "remainder by zero")


def test_a_messy_comparison_in_a_lambda_still_counts_its_cards(tmp_path: Path) -> None:
    for name, rating in (("a", "3"), ("b", "high"), ("c", "low"), ("d", "5")):
        (tmp_path / f"{name}.md").write_text(f"---\nrating: {rating}\n---\n# {name}\n")
    vault = hql.open_vault(tmp_path, use_cache=False)
    outcome = hql.run("cards | filter(c => c.metadata.rating > 2) | count", vault)
    assert outcome.value == 2
    (warning,) = outcome.reports
    assert warning.severity.word == "warning" and "2 cards" in warning.message, warning.message


# --- the value budget ------------------------------------------------------------------


def _budget_vault(tmp_path: Path, line: str) -> hql.Vault:
    (tmp_path / "hql.toml").write_text(f"[limits]\n{line}\n")
    return hql.open_vault(tmp_path, use_cache=False)


def test_the_element_budget_trips_in_a_lambda_exactly_where_it_did(tmp_path: Path) -> None:
    vault = _budget_vault(tmp_path, "elements = 1000")

    def mapped(width: int) -> str:
        return "[7] | map(x => [" + ", ".join(["x"] * width) + "])"

    # A list of k elements counts 1 + k; the map's list of one such list, 2 + k.
    assert hql.run(mapped(998) + " | count", vault).value == 1
    over_map = hql.run(mapped(999), vault)
    assert over_map.failed and "more than 1,000 elements" in over_map.render_reports()
    (report,) = over_map.reports
    assert report.span.start == 0  # the map's value: the pipe from its input on
    over_body = hql.run(mapped(1000), vault)
    assert over_body.failed
    (report,) = over_body.reports
    text = mapped(1000)
    assert (report.span.start, report.span.end) == (text.index("[x"), len(text) - 1)
    assert "`[x, x, x" in over_body.render_reports()


def test_the_byte_budget_trips_on_text_made_in_a_lambda(tmp_path: Path) -> None:
    vault = _budget_vault(tmp_path, "bytes = 1000")
    small = '["a"] | map(s => s + "' + "y" * 998 + '") | count'
    assert hql.run(small, vault).value == 1
    text = '["ab"] | map(s => s + "' + "y" * 999 + '")'
    outcome = hql.run(text, vault)
    assert outcome.failed and "more than 1,000 bytes" in outcome.render_reports()
    (report,) = outcome.reports
    assert text[report.span.start : report.span.end].startswith('s + "yyy')


# --- compiled once -------------------------------------------------------------------------


_RULES = dict(compiler._RULES)


def _compilations(text: str, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    counted: Counter[str] = Counter()

    def counting(kind: type, rule: Any) -> Any:
        def compile_counted(self: compiler.Compiler, expr: t.Expr) -> Any:
            counted[kind.__name__] += 1
            return rule(self, expr)

        return compile_counted

    rules = {kind: counting(kind, rule) for kind, rule in _RULES.items()}
    monkeypatch.setattr(compiler, "_RULES", rules)
    outcome = hql.run(text)
    assert not outcome.failed, outcome.render_reports()
    return counted


@pytest.mark.parametrize(
    "tail",
    [
        "map(x => x + 1) | filter(y => y > 5) | count",
        "sort(by = (a, b) => compare(a + 0, b)) | count",
        "map(x => [x, x * 2] | map(y => y - x)) | count",
    ],
)
def test_every_expression_is_compiled_once_whatever_the_number_of_elements(
    tail: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    few = _compilations("[3, 1, 2] | " + tail, monkeypatch)
    many = _compilations(
        "[" + ", ".join(str(i % 97) for i in range(3000)) + "] | " + tail, monkeypatch
    )
    assert few == many
    assert few["Name"] >= 1 and few["ListLit"] >= 1


def test_measuring_counts_every_part_once_and_stops_when_over() -> None:
    from hql.budget import Budget, OverBudget
    from hql.values import Data, ListValue

    nested = ListValue((1, "abc", ListValue((2, "de")), Data({"k": "v"})))
    # The list 1, its int 1, "abc" 1 (3 bytes), the inner list 3 (2 bytes), the Data 1 +
    # its dict 3 (key and value, 1 byte each).
    assert Budget().measure(nested) == (10, 7)
    Budget(max_elements=10, max_bytes=7).check(nested)
    for over in (Budget(max_elements=9), Budget(max_bytes=6)):
        with pytest.raises(OverBudget):
            over.check(nested)
    with pytest.raises(OverBudget) as raised:
        Budget(max_elements=5).check(ListValue(tuple(range(1000))))
    assert raised.value.elements == 6  # counting stopped at the first element over


# --- compiled once per plan and vault -----------------------------------------------


def test_a_program_run_again_is_not_compiled_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of one checked plan (new parameter values included) share its closures; each
    run still reads its own values and reports its own warnings."""
    session = hql.Session(cache=hql.api.PlanCache())
    text = "[1, 2, 3] | map(x => x * $k) | filter(y => y > $floor)"
    assert session.run(text, params={"k": 2, "floor": 2}).text() == "[4, 6]"
    made: Counter[str] = Counter()
    rules = compiler._RULES

    def counting(kind: type, rule: Any) -> Any:
        def compile_counted(self: compiler.Compiler, expr: t.Expr) -> Any:
            made[kind.__name__] += 1
            return rule(self, expr)

        return compile_counted

    monkeypatch.setattr(compiler, "_RULES", {k: counting(k, r) for k, r in rules.items()})
    assert session.run(text, params={"k": 10, "floor": 15}).text() == "[20, 30]"
    assert session.run(text, params={"k": -1, "floor": -3}).text() == "[-1, -2]"
    assert not made


def test_one_plan_runs_against_two_vaults_with_each_vaults_cards(tmp_path: Path) -> None:
    firsts = []
    for name, cards in (("one", ["a", "b"]), ("two", ["c", "d", "e"])):
        root = tmp_path / name
        root.mkdir()
        for card in cards:
            (root / f"{card}.md").write_text(f"# {card}\n", encoding="utf-8")
        firsts.append(hql.Vault.open(root))
    text = "cards | map(c => c.name) | sort"
    checked = hql.Session(firsts[0]).check(text)[1]
    assert checked is not None
    from hql.interpreter import Interpreter

    answers = [Interpreter(checked, vault).run() for vault in firsts]
    assert [list(answer) for answer in answers] == [["a", "b"], ["c", "d", "e"]]


def test_runs_of_one_plan_in_several_threads_keep_their_own_scopes() -> None:
    import threading

    session = hql.Session(cache=hql.api.PlanCache())
    text = "[1, 2, 3, 4] | map(x => [x, $k] | map(y => y * x + $k)) | count"
    answers: dict[int, str] = {}

    def ask(k: int) -> None:
        for _ in range(30):
            outcome = session.run(text, params={"k": k})
            expected = value(text.replace("$k", str(k)))
            if outcome.text() != expected:
                answers[k] = outcome.text()
                return
        answers[k] = "same"

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == dict.fromkeys(range(4), "same")


def test_a_cached_plan_keeps_its_closures_but_not_the_vault(tmp_path: Path) -> None:
    import gc
    import weakref

    root = tmp_path / "v"
    root.mkdir()
    (root / "a.md").write_text("---\npriority: 2\n---\n# a\n", encoding="utf-8")
    vault = hql.Vault.open(root)
    text = "cards | map(c => [c.name, c.priority, c.status]) | count"
    assert value(text, vault) == "1"
    assert value(text, vault) == "1"  # the plan and its closures, from the cache
    gone = weakref.ref(vault)
    del vault
    gc.collect()
    assert gone() is None
