"""Evaluation (reference sections 4-6, 9.4): values, steps, failures and warnings at run time.

Graph steps run on tests/fixtures/vault, the original's fixture vault.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hql
from hql.vault import Vault

VAULT = Path(__file__).parent / "fixtures" / "vault"


@pytest.fixture(scope="module")
def vault() -> Vault:
    return hql.open_vault(VAULT)


def shown(text: str, vault: Vault | None = None) -> str:
    outcome = hql.run(text, vault=vault)
    assert not outcome.failed, outcome.reports
    assert not [r for r in outcome.reports if r.severity.word != "warning"]
    return outcome.text()


def failure(text: str) -> tuple[str, str, tuple[int, int]]:
    outcome = hql.run(text)
    assert outcome.failed and outcome.value is None
    (report,) = outcome.reports
    assert (report.stage.value, report.severity.word) == ("evaluation", "failure")
    return report.message, report.span.start, report.span.end  # type: ignore[return-value]


# --- programs ------------------------------------------------------------------------------


def test_program_value_is_the_last_statement() -> None:
    assert shown("1\n2") == "2"
    assert shown("x = 1") == "()"
    assert shown("import graph") == "()"
    assert shown("type Colour : String") == "()"


def test_bindings_and_closures() -> None:
    assert shown("x = 1\ny = [1, 2] | map(n => n + x)\ny") == "[2, 3]"
    assert shown("[1, 2] | map(x => [3, 4] | map(y => x + y))") == "[[4, 5], [5, 6]]"
    assert shown("[ [1, 2], [3] ] | map(xs => xs | count)") == "[2, 1]"


# --- arithmetic and equality ------------------------------------------------------------------


def test_addition() -> None:
    assert shown("1 + 2 + 3") == "6"
    assert shown("1.5 + 1.5") == "3.0"
    assert shown("0.1 + 0.2") == "0.30000000000000004"
    assert shown("-9223372036854775807 + -1") == "-9223372036854775808"


def test_integer_overflow_is_a_failure() -> None:
    assert failure("9223372036854775807 + 1") == ("numeric overflow", 0, 23)
    assert failure("-9223372036854775808 + -1") == ("numeric overflow", 0, 25)
    assert failure("x = [9223372036854775807]\nx | map(n => n + 1)") == ("numeric overflow", 39, 44)


def test_float_overflow_is_a_failure() -> None:
    big = "1" + "0" * 308 + ".0"
    message, start, end = failure(f"{big} + {big}")
    assert (message, start, end) == ("numeric overflow", 0, 2 * len(big) + 3)


def test_equality_compares_data_trees() -> None:
    assert shown("{a: 1} == {a: 1}") == "true"
    assert shown("{a: 1} == {a: 1.0}") == "false"  # Int(1) is not Float(1.0)
    assert shown("[1, 2] == [1, 2]") == "true"
    assert shown("{1, 2} == {2, 1}") == "true"
    assert shown("[1] != [2]") == "true"
    assert shown('"a" != "a"') == "false"
    assert shown("{a: 1}.missing == {b: 1}.missing") == "true"  # absence compares as empty


# --- literals -----------------------------------------------------------------------------------


def test_data_keys_nest_by_dotted_path() -> None:
    assert shown('{"a.b": 1, "a.c": 2}') == "{a: {b: 1, c: 2}}"
    assert shown('{a: {b: 1}, "a.c": 2}') == "{a: {b: 1, c: 2}}"
    assert shown("{z: 1, a: 2}") == "{a: 2, z: 1}"


def test_sets_deduplicate_by_data_equality() -> None:
    assert shown("{1, 2, 1}") == "[1, 2]"
    assert shown('{"a", "a", "b"} | count') == "2"
    assert shown("{1, 1.0} | count") == "2"


def test_data_fields_and_absence() -> None:
    assert shown("{a: [1, 2]}.a") == "[1, 2]"
    assert shown("{a: 1}.b.c") == "none"
    assert shown("{a: [1, 2]}.a | count") == "2"
    assert shown("{e: {a: 1}.nope}") == "{e: empty}"


def test_edges_are_equal_by_source_and_target() -> None:
    assert shown('("a" -> "b" {k: 1}) == ("a" -> "b")') == "true"
    assert shown('("a" -> "b") == ("b" -> "a")') == "false"


def test_absent_references_compare_as_empty(vault: Vault) -> None:
    assert shown("[[nowhere]] == [[elsewhere]]", vault) == "true"
    assert shown("[[oauth]] == [[nowhere]]", vault) == "false"


def test_edges_use_names_as_written() -> None:
    assert shown('[[a]] -> [[b]] {k: "v"}') == "a -> b"
    assert shown('("x" -> "y").data') == "{}"
    assert shown('([[a]] -> [[b]] {k: "v"}).data.k') == '"v"'


# --- core steps -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[1, 2, 1] | count", "3"),
        ("[1, 2, 1] | count(1)", "2"),
        ("count([1, 1, 2], 1)", "2"),
        ("[1, 2] | size", "2"),
        ("size({1, 1})", "1"),
        ('Map(["a"], [1]) | size', "1"),
        ("[1] | contains(1)", "true"),
        ("contains([1], 2)", "false"),
        ('Map(["a"], [1]) | get("a")', "1"),
        ('Map(["a"], [1]) | get("b")', "none"),
        ('get(Map([1], ["x"]), 1)', "x"),
        ("[3, 1, 2] | sort", "[1, 2, 3]"),
        ('["b", "B", "a", "é"] | sort', "[B, a, b, é]"),  # byte order
        ("sort([3, 1, 2], by = x => x)", "[1, 2, 3]"),
        ("[3, 1, 2] | sort((a, b) => compare(b, a))", "[3, 2, 1]"),
        ("[3, 1, 2] | take(2)", "[3, 1]"),  # a list keeps its order
        ("{3, 1, 2} | take(2)", "[1, 2]"),  # a set is ordered first
        ("[1] | take(5)", "[1]"),
        ("[1] | take(0)", "[]"),
        ("[true, false] | take(1)", "[true]"),
        ("[1, 2, 3] | filter(x => x == 2)", "[2]"),
        ("{1, 2} | filter(x => x != 1)", "[2]"),
        ("[1, 2] | map(x => x + 1)", "[2, 3]"),
        ("{1, 2} | map(x => 1)", "[1, 1]"),
        ('[1, "a", 2.5] | typed(Int)', "[1]"),
        ('[1, "a"] | typed(String)', "[a]"),
        ("[{a: 1}, 2] | typed(Int)", "[2]"),
        ("[1] | typed(Data)", "[1]"),
    ],
)
def test_core_steps(text: str, expected: str) -> None:
    assert shown(text) == expected


def test_sort_is_stable() -> None:
    text = '[ ["b", "x"], ["a", "y"], ["b", "z"] ] | sort(by = p => 1)'
    assert shown(text) == "[[b, x], [a, y], [b, z]]"
    assert shown('["bz", "ay", "bx"] | sort(by = s => 1)') == "[bz, ay, bx]"


def test_sort_by_key_keeps_ties_in_order(vault: Vault) -> None:
    text = "cards | sort(by = c => c.kind) | map(c => c.name)"
    assert shown(text, vault) == (
        "[bearer-tokens, broken-relation, http-headers, oauth, sessions, oauth-defines-bearer]"
    )


def test_comparator_sort_is_a_stable_insertion_sort() -> None:
    text = "[2, 1, 2, 1] | sort((a, b) => compare(a, b))"
    assert shown(text) == "[1, 1, 2, 2]"


def test_negative_take_fails_at_run_time() -> None:
    assert failure("[1] | take(-1)") == ("a count cannot be negative", 6, 14)


def test_map_constructors() -> None:
    assert shown('Map(["a"], [1])') == "Map {a: 1}"
    assert shown('OrderedMap(["b", "a"], [1, 2])') == "OrderedMap {b: 1, a: 2}"
    assert shown('SortedMap(["b", "a"], [1, 2])') == "SortedMap {a: 2, b: 1}"
    assert shown('OrderedMap(["b", "a"], [1, 2]).keys') == "[b, a]"
    assert shown("SortedMap<String, Int>([], [])") == "SortedMap {}"
    assert shown("List({2, 1, 2})") == "[2, 1]"
    assert shown("Set([1, 1, 2])") == "[1, 2]"
    assert shown("Set<Int>([])") == "[]"


def test_map_construction_failures() -> None:
    assert failure('Map(["a", "a"], [1, 2])') == ("the key `a` occurs twice", 0, 23)
    assert failure('Map(["a"], [1, 2])') == (
        "a map pairs keys and values of equal length, and these have 1 and 2",
        0,
        18,
    )


def test_compare() -> None:
    assert shown("[compare(1, 2), compare(2, 2), compare(3, 2)]") == "[Less, Equal, Greater]"
    assert shown('compare("a", "b")') == "Less"
    assert shown("compare(1.5, 1.5)") == "Equal"


# --- presenters ----------------------------------------------------------------------------------------


def test_presenters_return_their_text() -> None:
    assert shown("[1, 2] | table") == "value\n-----\n1\n2"
    assert shown("[1] | text") == "[1]"
    assert shown("{a: 1} | json") == '{\n  "a": 1\n}'
    assert shown("[1] | table | json") == (
        '{\n  "presenter": "table",\n  "text": "value\\n-----\\n1"\n}'
    )


# --- the vault ------------------------------------------------------------------------------------------


def test_cards_without_a_vault_is_a_name_error() -> None:
    outcome = hql.run("cards | count")
    assert [(r.stage.value, r.message) for r in outcome.reports] == [
        ("name", "`cards` needs a vault: pass --vault <directory>")
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cards | count", "6"),
        ("cards | size", "6"),
        ("cards | take(2)", "[bearer-tokens, broken-relation]"),
        ("cards | typed(RelationCard)", "[oauth-defines-bearer]"),
        ("cards | typed(ConceptCard) | count", "5"),
        ("[[bearer-tokens]].title", "Bearer tokens"),
        ("[[bearer-tokens]].metadata.status", '"todo"'),
        ("[[bearer-tokens]].kind", "ConceptCard"),
        ("[[oauth-defines-bearer]].kind", "RelationCard"),
        ("[[bearer-tokens]].header.title", '"Bearer tokens"'),
        (
            "[[broken-relation]].metadata.knowledge.unverified",
            '"relation endpoints do not resolve"',
        ),
        (
            'cards | filter(c => c.metadata.status == "todo") | map(c => c.title)',
            "[Bearer tokens, Session cookies]",
        ),
        (
            "cards | sort(by = c => c.title) | map(c => c.name) | take(2)",
            "[broken-relation, bearer-tokens]",
        ),
        ("cards | count([[oauth]])", "1"),
        ("cards | contains([[oauth]])", "true"),
        ("[[oauth]] == [[oauth]]", "true"),
        ("[[oauth]] == [[sessions]]", "false"),
        ("[[oauth]] -> [[sessions]] {why: 1}", "oauth -> sessions"),
    ],
)
def test_cards(vault: Vault, text: str, expected: str) -> None:
    assert shown(text, vault) == expected


def test_unresolved_reference_is_absence_and_a_warning(vault: Vault) -> None:
    for text, value in [
        ("[[nowhere]]", "none"),
        ("[[nowhere]].title", "none"),
        ("[[nowhere]] | uplinks | count", "0"),
        ("[[nowhere]] | count", "0"),
    ]:
        outcome = hql.run(text, vault=vault)
        assert outcome.text() == value and not outcome.failed
        assert [
            (r.severity.word, r.stage.value, r.message, r.span.start, r.span.end)
            for r in outcome.reports
        ] == [("warning", "evaluation", "`[[nowhere]]` does not resolve in this vault", 0, 11)]


def test_a_reference_warns_once_however_often_it_runs(vault: Vault) -> None:
    outcome = hql.run("cards | map(c => [[nowhere]])", vault=vault)
    assert len(outcome.reports) == 1


# --- graph steps (reference 6.2 and 9.4) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[bearer-tokens]] | uplinks | count", "2"),
        ("[[bearer-tokens]] | downlinks | count", "2"),
        ("[[bearer-tokens]] | uplinks | map(e => e.target)", "[http-headers, oauth]"),
        ("[[bearer-tokens]] | downlinks | map(e => e.source)", "[oauth, oauth]"),
        (
            "[[oauth]] | uplinks | map(e => e.data)",
            '[{relation: "defines"}, {card: "oauth-defines-bearer"}]',
        ),
        ("cards | typed(RelationCard) | graph", "graph of 2 nodes and 3 edges"),
        ("cards | graph", "graph of 5 nodes and 4 edges"),
        (
            "(cards | graph).nodes",
            "[bearer-tokens, broken-relation, http-headers, oauth, sessions]",
        ),
        ("[[oauth]] | graph", "graph of 1 nodes and 0 edges"),
        ("[[oauth]] | expand", "graph of 2 nodes and 3 edges"),
        ("[[oauth]] | expand(depth = 0)", "graph of 1 nodes and 0 edges"),
        ("[[oauth]] | expand(2)", "graph of 3 nodes and 4 edges"),
        ('[[bearer-tokens]] | expand(direction = "uplinks")', "graph of 3 nodes and 4 edges"),
        ('[[bearer-tokens]] | expand(direction = "downlinks")', "graph of 2 nodes and 3 edges"),
        ('[[sessions]] | expand(direction = "both")', "graph of 1 nodes and 0 edges"),
        ("cards | graph | graph", "graph of 5 nodes and 4 edges"),
    ],
)
def test_graph_steps(vault: Vault, text: str, expected: str) -> None:
    assert shown(text, vault) == expected


def test_expansion_table(vault: Vault) -> None:
    assert shown("[[oauth]] | expand(depth = 2) | table", vault) == "\n".join(
        [
            "node           presence",
            "-------------  ------------------------------",
            "bearer-tokens  expanded from oauth at depth 1",
            "http-headers   expanded from oauth at depth 2",
            "oauth          member",
            "source         target         data",
            "-------------  -------------  ------------------------------",
            "bearer-tokens  http-headers   {}",
            "bearer-tokens  oauth          {}",
            'oauth          bearer-tokens  {relation: "defines"}',
            'oauth          bearer-tokens  {card: "oauth-defines-bearer"}',
        ]
    )


def test_relation_cards_project_to_their_endpoints(vault: Vault) -> None:
    table = shown("cards | typed(RelationCard) | graph | table", vault)
    assert table.splitlines()[2:4] == [
        "bearer-tokens  expanded from oauth-defines-bearer at depth 1",
        "oauth          expanded from oauth-defines-bearer at depth 1",
    ]


def test_expand_failures(vault: Vault) -> None:
    cases = {
        '[[sessions]] | expand(direction = "sideways")': (
            "`direction` is `uplinks`, `downlinks` or `both`, not `sideways`"
        ),
        "[[sessions]] | expand(-1)": "a depth cannot be negative",
    }
    for text, message in cases.items():
        outcome = hql.run(text, vault=vault)
        assert [(r.stage.value, r.severity.word, r.message) for r in outcome.reports] == [
            ("evaluation", "failure", message)
        ]
        assert outcome.reports[0].span.start == 15


def test_expand_checks_its_arguments(vault: Vault) -> None:
    outcome = hql.run('[[sessions]] | expand("both")', vault=vault)
    assert [(r.stage.value, r.message) for r in outcome.reports] == [
        ("type", "`depth` of `expand` is Int, not String")
    ]


@pytest.mark.parametrize(
    ("text", "message", "span"),
    [
        (
            "[[x]] | downlinks",
            "`downlinks` needs a vault: a document cannot know what points at it",
            (8, 17),
        ),
        ("[[x]] | expand", "`expand` needs a vault to traverse", (8, 14)),
        ("1 | graph", "`graph` works on cards, hits or collections of them, not Int", (0, 1)),
        (
            "[1] | uplinks",
            "`uplinks` works on cards, hits or collections of them, not List<Int>",
            (0, 3),
        ),
        ('[[x]] | expand(1, "both")', "`expand` takes 1 positional argument", (18, 24)),
        ("[[x]] | expand(direction = 1)", "`direction` of `expand` is String, not Int", (15, 28)),
    ],
)
def test_graph_step_contracts(text: str, message: str, span: tuple[int, int]) -> None:
    outcome = hql.run(text)
    assert [(r.stage.value, r.message, (r.span.start, r.span.end)) for r in outcome.reports] == [
        ("type", message, span)
    ]


def test_graph_steps_lift_over_absence_without_a_vault() -> None:
    assert hql.run("[[x]] | uplinks | count").text() == "0"
    assert hql.run("[[x]] | graph").text() == "graph of 0 nodes and 0 edges"


def test_take_of_a_set_keeps_the_first_in_sorted_order(tmp_path: Path) -> None:
    # Names and titles whose byte order differs from case-folded or accent-folded order.
    for name, title in [
        ("zeta", "Zèbre"),
        ("Alpha", "alpha"),
        ("émile", "Émile"),
        ("beta", "Beta"),
        ("10-notes", "10 notes"),
        ("9-notes", "9 notes"),
        ("日本", "日本語"),
        ("Zed", "zed"),
    ]:
        (tmp_path / f"{name}.md").write_text(f"---\ntitle: {title}\n---\nbody\n", encoding="utf-8")
    vault = Vault.open(tmp_path)
    shapes = (
        "cards",
        "Set(cards | map(c => c.title))",
        "Set([1, 10, 9, -3, 2])",  # numbers: no fast key, compared pair by pair
    )
    for shape in shapes:
        for n in (0, 1, 3, 8, 20):
            taken = hql.run(f"{shape} | take({n})", vault=vault)
            sorted_first = hql.run(f"{shape} | sort | take({n})", vault=vault)
            assert not taken.failed, taken.render_reports()
            assert taken.to_json() == sorted_first.to_json(), (shape, n)
    names = sorted((card.name for card in vault.cards), key=lambda name: name.encode("utf-8"))
    for descending, expected in (("false", names), ("true", names[::-1])):
        for n in (1, 3, 20):
            program = f"cards | sort(descending = {descending}) | take({n}) | map(c => c.name)"
            assert hql.run(program, vault=vault).value.items == tuple(expected[:n]), program
        program = f"cards | sort(descending = {descending}) | map(c => c.name)"
        assert hql.run(program, vault=vault).value.items == tuple(expected), program
