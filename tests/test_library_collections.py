"""The collection steps of everyday.md section 3 and HQL-0004: values, types, refusals with
spans, absence and Data, and `sort`'s new `descending`."""

from __future__ import annotations

from pathlib import Path

import pytest

import hql
from hql.vault import Vault

VAULT = Path(__file__).parent / "fixtures" / "vault"
MAPREDUCE = Path(__file__).parent / "golden" / "vaults" / "mapreduce" / "wiki"


@pytest.fixture(scope="module")
def vault() -> Vault:
    return hql.open_vault(VAULT)


@pytest.fixture(scope="module")
def books() -> Vault:
    return hql.open_vault(MAPREDUCE)


def shown(text: str, vault: Vault | None = None) -> str:
    outcome = hql.run(text, vault=vault)
    assert not outcome.failed, outcome.reports
    return outcome.text()


def typed(text: str, vault: Vault | None = None) -> str:
    outcome = hql.run(text, vault=vault)
    assert not outcome.failed, outcome.reports
    return str(outcome.type)


def refusal(text: str) -> tuple[str, str, str]:
    outcome = hql.run(text)
    assert outcome.failed
    report = outcome.reports[0]
    return (
        report.stage.value,
        report.message,
        text.encode()[report.span.start : report.span.end].decode(),
    )


@pytest.mark.parametrize(
    ("program", "value", "type_"),
    [
        ("[2, 1, 2, 3, 1] | distinct", "[2, 1, 3]", "List<Int>"),
        ("{2, 1} | distinct", "[2, 1]", "Set<Int>"),
        ("distinct([1.5, 1.5])", "[1.5]", "List<Float>"),
        ("[3, 1, 2] | first", "3", "Option<Int>"),
        ("[3, 1, 2] | last", "2", "Option<Int>"),
        ("{3, 1, 2} | first", "1", "Option<Int>"),  # a set in its own order, as `take` has it
        ("List<Int>([]) | first", "none", "Option<Int>"),
        ("last([])", "none", "Option<Never>"),
        ("[1, 2, 3] | reverse", "[3, 2, 1]", "List<Int>"),
        ("[1, 2, 3] | sum", "6", "Int"),
        ("[0.5, 0.25] | sum", "0.75", "Float"),
        ("List<Int>([]) | sum", "0", "Int"),
        ("[1, 2] | avg", "1.5", "Option<Float>"),
        ("[0.5, 1.0] | avg", "0.75", "Option<Float>"),
        ("List<Float>([]) | avg", "none", "Option<Float>"),
        ("[3, 1, 2] | min", "1", "Option<Int>"),
        ("[3, 1, 2] | max", "3", "Option<Int>"),
        ('["pear", "Apple", "apple"] | min', "Apple", "Option<String>"),
        ('["b", "é", "z"] | max', "é", "Option<String>"),  # by code point
        (
            '["owl", "sparrowhawk", "ibis"] | max(by = w => size(split(w, "")))',
            "sparrowhawk",
            "Option<String>",
        ),
        ('["ab", "cd", "e"] | min(by = w => length(w))', "e", "Option<String>"),
        ('["ab", "cd"] | max(by = w => length(w))', "ab", "Option<String>"),  # the first of equals
        ("[1, 2] | any(n => n == 2)", "true", "Bool"),
        ("[1, 2] | all(n => n == 2)", "false", "Bool"),
        ("List<Int>([]) | any(n => n == 2)", "false", "Bool"),
        ("List<Int>([]) | all(n => n == 2)", "true", "Bool"),
        ("exists(1)", "true", "Bool"),
        ("[[nowhere]] | exists", "false", "Bool"),
        ("{a: 1}.b | exists", "false", "Bool"),
        ("{a: 1}.a | exists", "true", "Bool"),
        ('["a b", "c"] | flat_map(s => split(s, " "))', "[a, b, c]", "List<String>"),
        ("[ [1, 2], [], [3] ] | flatten", "[1, 2, 3]", "List<Int>"),
        ("[{1, 2}, {3}] | flatten", "[1, 2, 3]", "List<Int>"),
        ("[1, 2, 3] | sort(descending = true)", "[3, 2, 1]", "List<Int>"),
        ('["b", "a", "c"] | sort(by = s => s, descending = false)', "[a, b, c]", "List<String>"),
        ("[3, 1, 2] | sort((a, b) => compare(a, b), descending = true)", "[3, 2, 1]", "List<Int>"),
        ("[412, 280, 310, 172, 320, 95] | reduce(0, (total, n) => total + n)", "1589", "Int"),
        ('["a", "b"] | reduce("", (s, x) => x)', "b", "String"),
        ("List<Int>([]) | reduce(7, (t, n) => t + n)", "7", "Int"),
        ("[ [1] ] | reduce([], (acc, xs) => xs)", "[1]", "List<Int>"),  # `[]` widens once
    ],
)
def test_values_and_types(program: str, value: str, type_: str) -> None:
    assert shown(program) == value
    assert typed(program) == type_


def test_each_step_is_also_a_direct_call() -> None:
    assert shown("sum([1, 2])") == "3"
    assert shown("reverse([1, 2])") == "[2, 1]"
    assert shown("any([1, 2], n => n == 1)") == "true"
    assert shown("reduce([1, 2], 0, (t, n) => t + n)") == "3"
    assert shown('max(["a", "b"], by = s => s)') == "b"


def test_descending_keeps_ties_in_input_order() -> None:
    program = '["bb", "a", "cc", "d"] | sort(by = s => length(s), descending = true)'
    assert shown(program) == "[bb, cc, a, d]"


def test_sort_by_data_orders_numbers_then_strings_and_puts_the_rest_last() -> None:
    program = (
        '[{n: 2}, {n: "b"}, {}, {n: 10}, {n: "a"}, {n: [1]}] | sort(by = d => d.n) | map(d => d.n)'
    )
    assert shown(program) == '[2, 10, "a", "b", none, [1]]'
    descending = program.replace("d => d.n)", "d => d.n, descending = true)", 1)
    assert shown(descending) == '["b", "a", 10, 2, none, [1]]'


def test_sort_by_front_matter(vault: Vault) -> None:
    program = (
        "cards | sort(by = c => c.metadata.status, descending = true) | map(c => c.metadata.status)"
    )
    statuses = shown(program, vault)
    present = [s for s in statuses.strip("[]").split(", ") if s != "none"]
    assert present == sorted(present, reverse=True)
    assert statuses.endswith("none]") or "none" not in statuses


def test_numbers_in_data_add_up_and_others_are_left_out_with_one_warning() -> None:
    program = '[{p: 1}, {p: 2.5}, {p: "many"}, {p: true}, {}] | map(d => d.p)'
    outcome = hql.run(program + " | sum")
    assert (outcome.text(), str(outcome.type)) == ("3.5", "Data")
    (report,) = outcome.reports
    assert report.severity.word == "warning"
    assert report.message == "`sum` works on numbers: 2 elements holding something else left out"
    assert shown(program + " | avg") == "1.75"
    assert shown(program + " | max") == "2.5"
    assert shown('[{p: "b"}, {p: "a"}] | map(d => d.p) | min') == '"a"'


def test_absent_elements_are_left_out_of_aggregates() -> None:
    program = "[ [1], [], [5] ] | map(xs => xs | first)"
    assert typed(program) == "List<Option<Int>>"
    assert shown(program + " | sum") == "6"
    assert shown(program + " | avg") == "3.0"
    assert shown(program + " | min") == "1"


def test_overflow_is_a_failure_at_the_step() -> None:
    outcome = hql.run("[9223372036854775807, 1] | sum")
    (report,) = outcome.reports
    assert (report.stage.value, report.message) == ("evaluation", "numeric overflow")
    assert (report.span.start, report.span.end) == (27, 30)


def test_group_partitions_by_key_with_items_in_input_order() -> None:
    words = '["owl", "raven", "owl", "robin", "owl"]'
    program = f"{words} | group(by = w => w)"
    assert typed(program) == "Set<Group<String, String>>"
    assert shown(program) == (
        "[Group {key: owl, items: [owl, owl, owl]}, Group {key: raven, items: [raven]}, "
        "Group {key: robin, items: [robin]}]"
    )
    positions = "[1, 2, 3, 4, 5, 6, 1] | group(by = n => compare(n, 3)) | map(g => g.items)"
    assert shown(positions) == "[[1, 2, 1], [3], [4, 5, 6]]"
    outcome = hql.run(program + " | json")
    assert '"key": "owl"' in outcome.text() and '"items": [' in outcome.text()
    assert shown(program + " | map(g => size(g.items))") == "[3, 1, 1]"


def test_group_fields_types_and_equality() -> None:
    assert typed('["a"] | group(by = w => length(w)) | map(g => g.key)') == "List<Int>"
    assert typed('["a"] | group(by = w => length(w)) | map(g => g.items)') == "List<List<String>>"
    annotated = 'gs : Set<Group<Int, String>> = ["a"] | group(by = w => length(w))\ngs | size'
    assert shown(annotated) == "1"
    stage, message, pointed = refusal('["a"] | group(by = w => w) | map(g => g.size)')
    assert (stage, message, pointed) == (
        "name",
        "Group<String, String> has no field `size`",
        "size",
    )


def test_group_over_cards_by_front_matter(books: Vault) -> None:
    program = (
        'cards | filter(c => c.metadata.category == "book") | group(by = c => c.metadata.genre)'
        " | map(g => size(g.items)) | sort"
    )
    assert shown(program, books) == "[1, 2, 3]"
    table = shown("cards | group(by = c => c.kind) | table", books)
    assert table.splitlines()[0].split() == ["key", "items"]


@pytest.mark.parametrize(
    ("program", "message", "pointed"),
    [
        (
            "{1, 2} | reverse",
            "`reverse` works on a sequence, and Set<Int> has no order to reverse; sort it first",
            "{1, 2}",
        ),
        (
            "{412, 280} | reduce(0, (total, n) => total + n)",
            "`reduce` folds a sequence in order, and Set<Int> has none: sort it first, as in `… | sort | reduce(…)`",
            "{412, 280}",
        ),
        (
            '[1] | reduce(0, (t, n) => "x")',
            "the lambda of `reduce` must return the accumulator's type Int (the type of `initial`), not String",
            '(t, n) => "x"',
        ),
        (
            "[1] | reduce(0, n => n)",
            "this lambda takes 1 parameter where `reduce` passes 2",
            "n => n",
        ),
        ('["a"] | sum', "`sum` works on numbers, not String", '["a"]'),
        ("[true] | avg", "`avg` works on numbers, not Bool", "[true]"),
        (
            "[true] | max",
            "`max` needs elements with an order of their own, and Bool has none; give `by`",
            "[true]",
        ),
        (
            "[1] | min(by = n => n == 1)",
            "a sort key needs an order of its own, and Bool has none",
            "by = n => n == 1",
        ),
        ("[1] | any(n => n)", "the lambda of `any` must give Bool, not Int", "n => n"),
        ("[1] | all(n => 1)", "the lambda of `all` must give Bool, not Int", "n => 1"),
        (
            "[1] | flat_map(n => n)",
            "`flat_map` needs a collection from each element, not Int",
            "n => n",
        ),
        ("[1] | flatten", "`flatten` needs a collection from each element, not Int", "[1]"),
        (
            "{true} | first",
            "`first` on a set orders it first, and Bool has no order of its own; sort with an explicit key first",
            "{true}",
        ),
        ("1 | distinct", "`distinct` works on a collection, not Int", "1"),
        ("[1] | sort(descending = 1)", "`descending` of `sort` is Bool, not Int", "descending = 1"),
        ("[1] | sort(n => n, true)", "`sort` takes 1 positional argument", "true"),
        ("[1] | group(key = w => w)", "`group` has no argument named `key`; did you mean `by`?", "key = w => w"),
    ],
)
def test_refusals(program: str, message: str, pointed: str) -> None:
    stage, found, at = refusal(program)
    assert stage in ("type", "name")
    assert (found, at) == (message, pointed)


def test_min_max_and_sort_over_dates() -> None:
    days = '[date("2024-05-01"), date("2023-01-02"), date("2024-02-29")]'
    assert (shown(days + " | min"), typed(days + " | min")) == ("2023-01-02", "Option<Date>")
    assert shown(days + " | max") == "2024-05-01"
    assert shown(days + " | sort(descending = true) | first") == "2024-05-01"
    assert shown(days + " | max(by = d => d.month)") == "2024-05-01"
    assert shown(days + " | group(by = d => d.year) | map(g => size(g.items))") == "[2, 1]"
