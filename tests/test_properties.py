"""Property tests: whatever a user types, HQL answers with reports or a value, never a traceback.

Programs are random token soups and mutations of a corpus of valid programs; each runs
with and without the fixture vault, in both modes. `hql.run` must return an `Outcome`
whose reports have spans inside the program.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hql
from hql.api import Outcome
from hql.diagnostics import Report

VAULT = hql.open_vault(Path(__file__).parent / "fixtures" / "vault")

CORPUS = [
    "[1, 2] | map(x => x + 1)",
    "1 + 2",
    "1.5 + 2.5",
    '"a" == "b"',
    "{a: 1, b: [1, 2]}",
    "{1, 2, 1}",
    "Set<Int>([])",
    'SortedMap<String, Int>(["b", "a"], [2, 1])',
    'Map(["a"], [1]) | get("a")',
    "compare(1, 2)",
    "x = [3, 1, 2]\nx | sort",
    "x: Data = 1\nx",
    "[1, 2] | take(1)",
    "[1, 2] | count(2)",
    "size([1])",
    "[3, 1] | sort((a, b) => compare(b, a))",
    '[1, "a"] | typed(String)',
    "[1] | table | json",
    "type Colour : String",
    "abstract type Shape { sides: Int, name?: String }",
    "type U = union { Int, String }",
    'import graph\n[[a]] -> [[b]] {k: "v"}',
    'OrderedMap([1, 2], ["a", "b"]).keys',
    "{a: {b: 1}}.a.b",
    "[1, 2]\n  | map(x => x + 1)\n  | take(1)",
    "9223372036854775807 + 1",
    "[1] | take(-1)",
    "Map([1, 1], [2, 3])",
    'cards | filter(c => c.metadata.status == "todo") | map(c => c.title)',
    'cards | take(2) | expand(depth = 2, direction = "uplinks") | table',
    "[[oauth]] | downlinks | map(e => e.source)",
    "cards | typed(RelationCard) | graph | json",
    "g = cards | graph\ng.nodes",
    "[[bearer-tokens]].metadata.status",
    "cards | sort(by = c => c.title) | text",
    # everyday.md section 1 operators, dates and parameters
    "(1 - 2 * 3 % 4) / 5",
    "-(1 + 2) < 3 and not (2 >= 1) or 1.5 <= 2.5",
    '"a" + "b" > "a"',
    "{a: 1}.b ?? 2",
    "x = [3, -1]\nx | filter(n => n > 0 and n != 2) | map(n => -n * 2)",
    'date("2024-05-01") + 3 - date("2024-01-01T10:00+02:00")',
    'format(today(), "YYYY-MM-DD") == format(now(), "YYYY-MM-DD")',
    'date("2024-05-01").weekday % 7',
    "cards | filter(c => c.metadata.status > 3 or c.metadata.owner <= \"b\") | count",
    'cards | filter(c => date(c.metadata.due) < today()) | count',
    "9223372036854775807 * 2 / 0",
    "and = 1\nor = 2\nand < or",
]

FRAGMENTS = [
    "|",
    "+",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "=",
    "==",
    "!=",
    "=>",
    "->",
    ".",
    "<",
    ">",
    "?",
    "\n",
    " ",
    "x",
    "cards",
    "import",
    "type",
    "where",
    "union",
    "abstract",
    "1",
    "-1",
    "1.5",
    '"s"',
    '"',
    "\\",
    "[[a]]",
    "[[",
    "]]",
    "map",
    "filter",
    "sort",
    "take",
    "count",
    "Set",
    "Map",
    "List",
    "SortedMap",
    "Int",
    "Data",
    "compare",
    "true",
    "table",
    "typed",
    "get",
    "size",
    "contains",
    "graph",
    "expand",
    "uplinks",
    "downlinks",
    "json",
    "text",
    "Option",
    "Card",
    "x => x",
    "(a, b) => a",
    "//",
    "é",
    "😀",
    "²",
    ";",
    "-",
    "9223372036854775807",
    "depth",
    "direction",
    "*",
    "/",
    "%",
    "<",
    "<=",
    ">",
    ">=",
    "??",
    "and",
    "or",
    "not",
    "$q",
    "$",
    "date",
    "today()",
    "now()",
    "format",
    '"2024-05-01"',
    ".weekday",
]

# The everyday library (everyday.md sections 2 and 3): every step and function appears here.
LIBRARY = [
    'cards | map(c => c.title | lower) | filter(t => t | contains("token"))',
    'upper("owl") | trim | length',
    '"a,b" | split(",") | map(s => s | starts_with("a"))',
    'ends_with("x.md", ".md")',
    'replace("a-b", "-", " ")',
    '"OAuth" | matches("(?i)^oa(u)+th$")',
    '[[oauth]].metadata.status | lower',
    "[2, 1, 2] | distinct | first",
    "[1, 2] | last",
    "[1, 2] | reverse | sum",
    "[1.5, 2.5] | avg",
    'cards | min(by = c => c.title) | exists',
    '["a", "b"] | max',
    "[1, 2] | any(n => n == 1)",
    "all([1, 2], n => n == 1)",
    "cards | flat_map(c => c.metadata.tags) | distinct",
    "[ [1], [2, 3] ] | flatten",
    'cards | group(by = c => c.metadata.status) | map(g => {k: g.key, n: size(g.items)})',
    "[412, 280, 310] | reduce(0, (total, n) => total + n)",
    "cards | sort(by = c => c.metadata.status, descending = true) | take(2)",
    'number("412") | float',
    "float(2) | round(1) | floor",
    "ceil(2.5) | abs | string",
    'if(true, "a", "b") | slice(0, 1)',
    '[[oauth]].metadata | keys | join(", ")',
    "{a: 1} | values",
]
CORPUS += LIBRARY
FRAGMENTS += [
    "lower",
    "upper",
    "trim",
    "length",
    "starts_with",
    "ends_with",
    "split",
    "replace",
    "matches",
    '"(a+)+$"',
    '"("',
    "distinct",
    "first",
    "last",
    "reverse",
    "sum",
    "min",
    "max",
    "avg",
    "any",
    "all",
    "exists",
    "flat_map",
    "flatten",
    "group",
    "reduce",
    "descending = true",
    "g => g.key",
    "(acc, x) => acc",
    "number",
    "float",
    "string",
    "if",
    "round",
    "floor",
    "ceil",
    "abs",
    "join",
    "slice",
    "keys",
    "values",
]

programs_from_fragments = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=14).map(
    " ".join
)


@st.composite
def mutated_programs(draw: st.DrawFn) -> str:
    text = list(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["delete", "insert", "cut"]))
        if action == "delete" and text:
            del text[min(at, len(text) - 1)]
        elif action == "insert":
            text[at:at] = list(draw(st.sampled_from(FRAGMENTS)))
        else:
            end = draw(st.integers(at, len(text)))
            del text[at:end]
    return "".join(text)


def assert_answered(text: str, outcome: Outcome) -> None:
    assert isinstance(outcome, Outcome)
    size = len(outcome.source.text.encode("utf-8"))  # lone surrogates arrive as U+FFFD
    for report in outcome.reports:
        assert isinstance(report, Report)
        assert report.message and 0 <= report.span.start <= report.span.end <= size, report
    if outcome.failed:
        assert outcome.value is None
    outcome.text()
    outcome.to_json()
    outcome.render_reports()


def run_everywhere(text: str) -> None:
    assert_answered(text, hql.check(text))
    for vault in (None, VAULT):
        for mode in ("strict", "collect"):
            assert_answered(text, hql.run(text, vault=vault, mode=mode))


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(mutated_programs())
def test_mutated_programs_get_reports_or_values(text: str) -> None:
    run_everywhere(text)


@SETTINGS
@given(programs_from_fragments)
def test_token_soup_gets_reports_or_values(text: str) -> None:
    run_everywhere(text)


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(exclude_categories=()), max_size=40))  # lone surrogates included
def test_arbitrary_text_gets_reports_or_values(text: str) -> None:
    assert_answered(text, hql.run(text))


def test_the_corpus_is_valid() -> None:
    for text in CORPUS:
        outcome = hql.run(text, vault=VAULT)
        assert not [r for r in outcome.reports if r.stage.value in ("syntax", "type", "name")], (
            text,
            outcome.reports,
        )


LIBRARY_MODULES = ("hql.steps.strings", "hql.steps.collections", "hql.steps.conversions")


def test_the_corpus_uses_every_step_and_function_of_the_library() -> None:
    from hql.registry import registry

    reg = registry()
    specs = [*reg.steps(), *reg.functions.values()]
    names = {spec.name for spec in specs if spec.check.__module__ in LIBRARY_MODULES}
    assert {"lower", "matches"} <= names
    text = "\n".join(CORPUS)
    missing = sorted(name for name in names if name not in text)
    assert missing == []


# --- the fast paths read and order exactly as the general ones ---------------------------


def _tokens(text: str) -> object:
    from hql.diagnostics import HqlError
    from hql.syntax.tokens import tokenize

    try:
        return [tuple(token) for token in tokenize(text)]
    except HqlError as error:
        return error.report


@settings(max_examples=200, deadline=None)
@given(
    st.text(st.sampled_from(list('0123456789-_.,;:()[]{}<>=!?|+*/%$"\\ \n\tabtrue#é')), max_size=60)
)
def test_the_ascii_lexer_agrees_with_the_general_one(text: str) -> None:
    from hql.syntax import tokens

    fast = _tokens(text)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(tokens._Scanner, "run_ascii", lambda self: None)
        assert _tokens(text) == fast


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(-(2**60), 2**60), st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1])),
        max_size=40,
    ),
    st.sampled_from(
        [
            "sort",
            "sort(descending = true)",
            "sort | take(3)",
            "sort(by = (a, b) => compare(a, b))",
            "sort(by = (a, b) => compare(b, a)) | take(4)",
            "sort(by = x => x % 7)",
            "sort(by = x => x % 5, descending = true)",
        ]
    ),
)
def test_sorting_without_a_call_per_comparison_keeps_the_order(
    numbers: list[int], tail: str
) -> None:
    from hql.steps import core

    program = f"{numbers} | {tail}"
    fast = hql.run(program)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(core, "_compares_itself", lambda call: None)
        patched.setattr(core, "_plainly_ordered", lambda values: False)
        general = hql.run(program + " ")  # another text: checked and run afresh
    assert (fast.value, fast.failed) == (general.value, general.failed)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True),
        st.one_of(
            st.integers(-1000, 1000), st.from_regex(r"[A-Za-z][A-Za-z ]{0,8}", fullmatch=True)
        ),
        max_size=5,
    ),
    st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_a_header_means_the_same_whatever_its_line_breaks(
    header: dict[str, object], newline: str
) -> None:
    from hql.vault.document import parse

    lines = ["---", *(f"{key}: {value!s}".rstrip() for key, value in header.items()), "---"]
    body = newline.join(["# Title", "text", ""])
    document = parse(newline.join(lines) + newline + body)
    reference = parse("\n".join(lines) + "\n" + "# Title\ntext\n")
    assert document.authored == reference.authored
    assert document.body == body and document.heading == "Title"
