"""The checker (reference sections 4, 5, 7, 10, 11): types, names, step contracts, modes.

Every failure is a report with the right stage, message and byte span; nothing runs
when checking found an error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hql
from hql.checker import Checker, Scope
from hql.registry import Registry, StepSpec, registry
from hql.syntax.parser import parse


def type_of(text: str) -> str:
    outcome = hql.check(text)
    assert not outcome.reports, outcome.reports
    return str(outcome.type)


def only_report(text: str, mode: str = "strict") -> tuple[str, str, tuple[int, int]]:
    outcome = hql.run(text, mode=mode)
    assert outcome.failed and len(outcome.reports) == 1, outcome.reports
    (report,) = outcome.reports
    assert outcome.value is None and outcome.type is None
    return report.stage.value, report.message, (report.span.start, report.span.end)


# --- types of expressions ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", "Int"),
        ("1.5", "Float"),
        ("true", "Bool"),
        ('"s"', "String"),
        ("{a: 1}", "Data"),
        ("{}", "Data"),
        ("[[x]]", "Option<Card>"),
        ("[[x]].title", "Option<String>"),
        ("[[x]].metadata", "Option<Data>"),
        ("{a: 1}.b.c", "Data"),
        ("1 + 2", "Int"),
        ("1.5 + 2.5", "Float"),
        ("1 == 2", "Bool"),
        ('{a: 1}.a == "x"', "Bool"),
        ("[[a]] -> [[b]] {k: 1}", "Edge"),
        ('"a" -> "b"', "Edge"),
        ("[1, 2]", "List<Int>"),
        ("[]", "List<Never>"),
        ('[1, "owl"]', "List<Data>"),
        ('[ [1], ["owl"] ]', "List<List<Data>>"),
        ('[{ species: "owl" }, "owl", 3]', "List<Data>"),
        ("{1, 2, 1}", "Set<Int>"),
        ("Set<Int>([])", "Set<Int>"),
        ("SortedMap<String, Int>([], [])", "SortedMap<String, Int>"),
        ('Map(["a"], [1])', "Map<String, Int>"),
        ('OrderedMap(["a"], [1]).keys', "Seq<String>"),
        ('Map(["a"], [1]).keys', "Set<String>"),
        ('Map(["a"], [1]) | get("a")', "Option<Int>"),
        ("compare(1, 2)", "Ordering"),
        ("x = 1", "Unit"),
        ("import graph", "Unit"),
        ("type Colour : String", "Unit"),
        ("[1] | table", "Presentation"),
        ("x: Data = 1\nx", "Data"),
        ("x: Option<Int> = 1\nx", "Option<Int>"),
        ("x: List<Data> = [1]\nx", "List<Data>"),
        ("[1, 2] | map(x => x == 1)", "List<Bool>"),
        ("{1} | filter(x => x == 1)", "Set<Int>"),
        ("{3, 1} | take(1)", "List<Int>"),
        ('[1, "a"] | typed(String)', "List<String>"),
        ("size([1])", "Int"),
        ("count([1], 1)", "Int"),
        ("contains([1], 1)", "Bool"),
        ("sort({2, 1})", "List<Int>"),
    ],
)
def test_expression_types(text: str, expected: str) -> None:
    assert type_of(text) == expected


def test_the_program_type_is_the_last_statement() -> None:
    assert type_of('1\n"s"') == "String"
    assert type_of("x = 1\nx + 1") == "Int"


# --- names, bindings, lambdas ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "stage", "message", "span"),
    [
        ("nosuch", "name", "`nosuch` is not bound", (0, 6)),
        ("tabel", "name", "`tabel` is not bound; did you mean `table`?", (0, 5)),
        ("x = 1\ny", "name", "`y` is not bound; did you mean `x`?", (6, 7)),
        ("cards", "name", "`cards` needs a vault: pass --vault <directory>", (0, 5)),
        (
            "cards = 1",
            "name",
            "`cards` is reserved: it always means every card of the vault",
            (0, 5),
        ),
        ("x: Bool = 1", "type", "`x` is declared Bool but its value is Int", (10, 11)),
        ("x: Nope = 1", "name", "unknown type `Nope`", (3, 7)),
        ("x: List<Int, Int> = [1]", "type", "`List` takes 1 type argument, not 2", (3, 17)),
        (
            "f = c => c",
            "type",
            "a lambda may only be written as an argument, such as `filter(c => …)`",
            (4, 10),
        ),
        (
            "take",
            "name",
            "`take` is a pipeline step and needs an input: write `… | take(…)`",
            (0, 4),
        ),
        (
            "take([1], 1)",
            "name",
            "`take` is a pipeline step and needs an input: write `… | take(…)`",
            (0, 4),
        ),
        ("frob(1)", "name", "`frob` is not a function", (0, 4)),
        ("x = 1\nx(2)", "type", "only functions and steps can be called", (6, 7)),
        ("[1] | map(x => y)", "name", "`y` is not bound; did you mean `x`?", (15, 16)),
    ],
)
def test_name_and_binding_errors(
    text: str, stage: str, message: str, span: tuple[int, int]
) -> None:
    assert only_report(text) == (stage, message, span)


def test_an_annotation_is_a_view_not_a_conversion() -> None:
    outcome = hql.run("x: Data = 1\nx")
    assert (str(outcome.type), outcome.text()) == ("Data", "1")


def test_rebinding_is_allowed() -> None:
    assert hql.run('x = 1\nx = "s"\nx').text() == "s"


def test_lambda_parameters_shadow_bindings() -> None:
    assert hql.run('x = "s"\n[1, 2] | map(x => x + 1)').text() == "[2, 3]"


# --- operators ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("1 + 2.0", (4, 7)),
        ("true + 1.0", (0, 4)),
        ('1 + "a"', (4, 7)),
        ("1 + 2 + 3.0", (8, 11)),
        ("x = [1]\nx + 1", (8, 9)),
    ],
)
def test_addition_errors_point_at_the_operand(text: str, span: tuple[int, int]) -> None:
    assert only_report(text) == ("type", "addition requires two Int or two Float operands", span)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('1 == "a"', "Int and String are never equal"),
        ("1 == 1.0", "Int and Float are never equal"),
        ('[1] != ["a"]', "List<Int> and List<String> are never equal"),
    ],
)
def test_equality_needs_related_types_or_data(text: str, message: str) -> None:
    assert only_report(text) == ("type", message, (0, len(text)))


def test_equality_with_data_is_always_allowed() -> None:
    assert type_of('{a: 1}.a == "x"') == "Bool"
    assert type_of("[[x]].metadata.status == 1") == "Bool"


@pytest.mark.parametrize(
    ("text", "message", "span"),
    [
        ("[1, {2}]", "collection elements Int and Set<Int> have no common type", (4, 7)),
        ("{a: [[x]]}", "a Data value cannot hold Option<Card>", (4, 9)),
        ("{a: {1}}", "a Data value cannot hold Set<Int>", (4, 7)),
    ],
)
def test_literal_element_errors(text: str, message: str, span: tuple[int, int]) -> None:
    assert only_report(text) == ("type", message, span)


# --- fields --------------------------------------------------------------------------------------


def test_unknown_fields() -> None:
    stage, message, span = only_report("[[x]].colour")
    assert (stage, span) == ("name", (6, 12))
    assert message.startswith("Card has no field `colour`")
    stage, message, span = only_report('("a" -> "b").weight')
    assert (stage, message, span) == ("name", "Edge has no field `weight`", (13, 19))


def test_field_types() -> None:
    assert type_of('("a" -> "b").data') == "Data"
    assert type_of('("a" -> "b").source') == "String"
    assert type_of("[[x]].kind") == "Option<String>"
    assert type_of("[[x]].header") == "Option<Data>"


# --- steps and extensions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "stage", "message", "span"),
    [
        ("1 | tabel", "name", "`tabel` is not a pipeline step; did you mean `table`?", (4, 9)),
        ("1 | nosuchstep", "name", "`nosuchstep` is not a pipeline step", (4, 14)),
        (
            '1 | lexical("q")',
            "name",
            "`lexical` is provided by the `lexical` extension: write `import lexical`",
            (4, 11),
        ),
        ("import nosuch", "name", "no extension named `nosuch` is registered", (7, 13)),
        ("1 | graph.table", "name", "the `graph` extension has no step `table`", (10, 15)),
        (
            "present = 1\n1 | present.text",
            "name",
            "`present` is bound to a value here, which hides the `present` extension",
            (16, 28),
        ),
        (
            "[1] | table | count",
            "type",
            "a presentation is final: only another presenter may follow it",
            (0, 11),
        ),
    ],
)
def test_step_resolution_errors(text: str, stage: str, message: str, span: tuple[int, int]) -> None:
    assert only_report(text) == (stage, message, span)


def test_qualified_steps_and_repeat_imports() -> None:
    assert type_of("[1] | present.table") == "Presentation"
    assert type_of("[1] | core.count") == "Int"
    assert type_of("import lexical\nimport lexical\n1") == "Int"
    assert type_of("present = 1\n1 | text") == "Presentation"  # the bare step still works


def test_a_value_downstream_of_a_presenter_may_only_be_presented() -> None:
    assert type_of("[1] | table | json") == "Presentation"


# --- step contracts (reference section 6) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "span"),
    [
        ("[1] | take(1, 2)", "`take` takes 1 positional argument", (14, 15)),
        ("[1] | take(n = 1, n = 2)", "`n` of `take` is given twice", (18, 23)),
        ("[1] | take(2, n = 1)", "`n` of `take` is given twice", (14, 19)),
        ("[1] | take", "`take` needs `n`", (6, 10)),
        ('[1] | take("a")', "`n` of `take` is Int, not String", (11, 14)),
        ("[1] | take(x => x)", "`n` of `take` is a value, not a lambda", (11, 17)),
        ("[1] | take(m = 1)", "`take` has no argument named `m`; did you mean `n`?", (11, 16)),
        ("1 | take(1)", "`take` works on a collection, not Int", (0, 1)),
        (
            "{true, false} | take(1)",
            "`take` on a set orders it first, and Bool has no order of its own; "
            "sort with an explicit key first",
            (0, 13),
        ),
        (
            "[1] | count(value = 1)",
            "the `value` of `count` is positional only: write `count(…)` without `value =`",
            (12, 21),
        ),
        ('[1] | count("a")', "Int and String are never equal", (12, 15)),
        ("[1] | count(1, 2)", "`count` takes 1 positional argument", (15, 16)),
        ("1 | count", "`count` works on a collection, not Int", (0, 1)),
        ("[1] | size(1)", "`size` takes 0 positional arguments", (11, 12)),
        ("[1] | contains", "`contains` needs `value`", (6, 14)),
        (
            "[1] | contains(value = 1)",
            "the `value` of `contains` is positional only: write `contains(…)` without `value =`",
            (15, 24),
        ),
        ('Map(["a"], [1]) | get', "`get` needs `key`", (18, 21)),
        ("[1] | get(1)", "`get` looks a key up in a map, not in List<Int>", (0, 3)),
        ('Map(["a"], [1]) | get(1)', "this map's keys are String, not Int", (22, 23)),
        (
            "[1] | filter(n => n)",
            "a filter keeps elements for which the lambda is true, and this lambda gives Int, not Bool",
            (13, 19),
        ),
        ("[1] | filter", "`filter` needs `by`", (6, 12)),
        ("[1] | filter(1)", "`by` of `filter` is a lambda, such as `filter(x => …)`", (13, 14)),
        (
            "[1] | filter((a, b) => true)",
            "this lambda takes 2 parameters where `filter` passes 1",
            (13, 27),
        ),
        (
            "[1] | sort((a, b) => true)",
            "a comparator returns an Ordering (use `compare(a, b)`), not Bool",
            (11, 25),
        ),
        (
            "[true] | sort",
            "`sort` needs elements with an order of their own, and Bool has none; "
            "sort with an explicit key first",
            (0, 6),
        ),
        (
            '["b"] | sort(by = s => true)',
            "a sort key needs an order of its own, and Bool has none",
            (13, 27),
        ),
        ("[1] | sort(by = 1)", "`by` of `sort` is a lambda, such as `sort(x => …)`", (16, 17)),
        ("[1] | map", "`map` needs `by`", (6, 9)),
        ("[1] | map(1)", "`by` of `map` is a lambda, such as `map(x => …)`", (10, 11)),
        ("[1] | typed(Card)", "no Int can be a Card, so this selects nothing", (12, 16)),
        ("[1] | typed(1)", "`typed` takes a type name, such as `typed(RelationCard)`", (12, 13)),
        (
            "size(xs = [1])",
            "`size(…)` takes its input as the first argument, such as `size(xs)`",
            (0, 14),
        ),
    ],
)
def test_step_contract_misuse(text: str, message: str, span: tuple[int, int]) -> None:
    assert only_report(text) == ("type", message, span)


@pytest.mark.parametrize(
    ("text", "stage", "message", "span"),
    [
        ("[1] | typed(Nope)", "name", "unknown type `Nope`", (12, 16)),
        (
            'compare(1, "a")',
            "type",
            "compare requires two values of the same Orderable type",
            (0, 15),
        ),
        (
            "compare(true, false)",
            "type",
            "compare requires two values of the same Orderable type",
            (0, 20),
        ),
        ("compare(1, 2, 3)", "type", "`compare` takes 2 arguments, not 3", (0, 16)),
        ("compare(a = 1, b = 2)", "type", "`compare` has no argument named `a`", (8, 13)),
        ("Set(1)", "type", "a constructor takes a collection, not Int", (4, 5)),
        ("List([1], [2])", "type", "`List` takes 1 argument, not 2", (0, 14)),
        ("Set<String>([1])", "type", "the elements are Int, which is not String", (12, 15)),
        ("Set<Int, Int>([])", "type", "`Set` takes 1 type argument, not 2", (0, 17)),
        (
            "SortedMap([true], [1])",
            "type",
            "a SortedMap needs keys with an order of their own, and Bool has none",
            (10, 16),
        ),
        (
            "Nope<Int>([])",
            "name",
            "`Nope` is not a constructor: write `List`, `Set`, `Map`, `OrderedMap` or `SortedMap`",
            (0, 13),
        ),
    ],
)
def test_function_and_constructor_misuse(
    text: str, stage: str, message: str, span: tuple[int, int]
) -> None:
    assert only_report(text) == (stage, message, span)


# --- type declarations (era C) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "type Card : Doc",
        "type Id = union { Int, String }",
        "abstract type Shape { sides: Int }\ntype Square : Shape { sides: Int }",
        "type Pair<K, V> { key: K, value: V }",
    ],
)
def test_declarations_check_and_yield_unit(text: str) -> None:
    outcome = hql.run(text)
    assert not outcome.reports and outcome.text() == "()"


@pytest.mark.parametrize(
    ("text", "stage", "message", "span"),
    [
        ("type Card : Edge", "type", "`Card` is built in and does not narrow Edge", (0, 16)),
        (
            "type X : {Int, String}",
            "type",
            "no value can be both Int and String, so `X` is uninhabitable",
            (0, 22),
        ),
        ("type X : Nope", "name", "unknown type `Nope`", (9, 13)),
        ("type X\ntype X", "type", "`X` is declared twice", (12, 13)),
        ("type X { a: Int, a: String }", "type", "the field `a` is declared twice", (17, 26)),
        (
            "type P<Int>",
            "type",
            "the type parameter `Int` shadows a type of that name",
            (0, 11),
        ),
    ],
)
def test_declaration_errors(text: str, stage: str, message: str, span: tuple[int, int]) -> None:
    assert only_report(text) == (stage, message, span)


def test_a_subtype_may_not_make_a_required_field_optional() -> None:
    text = "abstract type Shape { sides: Int }\ntype Square : Shape\ntype Tile : Square { sides?: Int }"
    assert only_report(text) == (
        "type",
        "`Tile` may not make the field `sides` optional: `Shape` requires it",
        (76, 87),
    )
    assert not hql.run("type A { x?: Int }\ntype B : A { x?: Int, y: Int }").reports


def test_a_declared_type_can_annotate() -> None:
    assert only_report("type A : Int\nx: A = 1") == (
        "type",
        "`x` is declared A but its value is Int",
        (20, 21),
    )


# --- modes ----------------------------------------------------------------------------------------------


def test_strict_stops_at_the_first_error() -> None:
    outcome = hql.run("a = nosuchthing\nb = a + 1")
    assert [r.message for r in outcome.reports] == ["`nosuchthing` is not bound"]


def test_collect_binds_a_failed_binding_as_data() -> None:
    outcome = hql.run("a = nosuchthing\nb = a + 1", mode="collect")
    assert [(r.message, r.span.start) for r in outcome.reports] == [
        ("`nosuchthing` is not bound", 4),
        ("addition requires two Int or two Float operands", 20),
    ]
    assert outcome.value is None and outcome.failed


def test_collect_judges_every_statement() -> None:
    outcome = hql.run('1 + "a"\n2 + "b"\n3', mode="all")
    assert [r.span.start for r in outcome.reports] == [4, 12]


def test_a_syntax_failure_stops_both_modes() -> None:
    for mode in ("strict", "collect"):
        outcome = hql.run("1 2\n3 +", mode=mode)
        assert [r.stage.value for r in outcome.reports] == ["syntax"]


def test_nothing_runs_when_checking_failed() -> None:
    outcome = hql.run('[1] | take(-1)\n1 + "a"', mode="collect")
    assert [r.stage.value for r in outcome.reports] == ["type"]


# --- the checker as a library -------------------------------------------------------------------------------


def test_scope_persists_between_programs() -> None:
    scope = Scope()
    first = Checker(has_vault=False, scope=scope)
    first.check(parse("x = [1, 2]"), collect=False)
    plan, reports = Checker(has_vault=False, scope=scope).check(parse("x | count"), collect=False)
    assert not reports and str(plan.result) == "Int"


def test_plan_records_types_and_steps() -> None:
    program = parse("[1] | take(1)")
    plan, reports = Checker(has_vault=False).check(program, collect=False)
    assert not reports
    assert [spec.name for spec in plan.steps.values()] == ["take"]
    assert "List<Int>" in {str(found) for found in plan.types.values()}


# --- extensions and the prelude (reference section 11) ---------------------------------------------------


def test_a_vault_may_decline_the_prelude_and_import_extensions() -> None:
    vault = hql.open_vault(Path(__file__).parent / "fixtures" / "configured")
    declined = hql.run("[1] | table", vault=vault)
    assert [r.message for r in declined.reports] == [
        "`table` is provided by the `present` extension: write `import present`"
    ]
    assert hql.run("import present\n[1] | table", vault=vault).text() == "value\n-----\n1"
    assert not hql.run('cards | lexical("x") | count', vault=vault).failed  # imported by hql.toml


def fake_registry() -> Registry:
    """Two extensions that both provide `frob`, beside the real `core`."""
    fake = Registry()
    fake.extensions["core"] = registry().extensions["core"]
    for name in ("alpha", "beta"):
        fake.extension(name, version="1", summary=name)
        fake.add(
            StepSpec(
                "frob",
                name,
                (),
                "T | frob -> T",
                "frob",
                "1 | frob",
                check=lambda call: call.input,
                run=lambda call: call.input,
            )
        )
    return fake


def test_importing_two_providers_of_a_step_is_ambiguous() -> None:
    checker = Checker(has_vault=False, registry_=fake_registry())
    _, reports = checker.check(parse("import alpha\nimport beta"), collect=False)
    assert [(r.message, r.span.start, r.span.end) for r in reports] == [
        ("`alpha` and `beta` both provide `frob`, so importing both leaves it ambiguous", 13, 24)
    ]


def test_a_qualified_step_needs_its_extension_imported() -> None:
    checker = Checker(has_vault=False, registry_=fake_registry())
    _, reports = checker.check(parse("1 | beta.frob"), collect=False)
    assert [r.message for r in reports] == [
        "`frob` is provided by the `beta` extension: write `import beta`"
    ]
    plan, reports = Checker(has_vault=False, registry_=fake_registry()).check(
        parse("import alpha\n1 | alpha.frob"), collect=False
    )
    assert not reports and str(plan.result) == "Int"


# --- Data in arithmetic, `[[` that opens a nested list ----------------------------------


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ('number("42") + 1', (0, 12)),
        ('1 + number("42")', (4, 16)),
        ('x = number("4")\nx * 2', (16, 21)),
    ],
)
def test_arithmetic_on_data_names_data_and_the_fix(text: str, span: tuple[int, int]) -> None:
    stage, message, where = only_report(text)
    assert stage == "type" and where == span
    assert "Data" in message and "`| round`" in message and "`float(…)`" in message
    fixed = hql.run('(number("42") | round) + 1')
    assert fixed.text() == "43" and hql.run('float(number("4.5")) + 1.0').text() == "5.5"


def test_the_placeholder_of_a_failed_binding_keeps_the_references_report() -> None:
    outcome = hql.run("a = nosuchthing\nb = a + 1", mode="collect")
    assert outcome.reports[1].message == "addition requires two Int or two Float operands"


def test_a_nested_list_written_with_double_brackets_says_how_to_write_it() -> None:
    # the reference reads `[[` as a card reference whatever follows, and so does HQL
    stage, message, _ = only_report("[[1, 2], [3]] | flatten")
    assert stage == "type" and message.startswith("`flatten` needs a collection")
    assert message.endswith(
        "a list of lists needs a space after its first bracket: `[ [1, 2], [3] ]`"
    )
    assert hql.run("[ [1, 2], [3] ] | flatten").text() == "[1, 2, 3]"
    warned = hql.run(
        "[[1], [2]]", vault=hql.open_vault(Path(__file__).parent / "fixtures" / "vault")
    )
    (report,) = warned.reports
    assert report.message.startswith("`[[1], [2]]` does not resolve in this vault; `[[` always")
    assert report.message.endswith("`[ [1], [2] ]`")
    for name in ("2024", "bearer-tokens", "Meeting, notes"):  # names a card may have: no hint
        assert "always starts" not in hql.run(f"[[{name}]] | flatten").reports[0].message
