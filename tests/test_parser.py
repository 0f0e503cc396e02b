"""The parser (reference section 3): every grammar rule, precedence, layout, limits, syntax errors."""

from __future__ import annotations

import pytest

import hql
from hql.diagnostics import HqlError, Severity, Stage
from hql.source import Span
from hql.syntax import tree as t
from hql.syntax.parser import parse


def expr(text: str) -> t.Expr:
    (statement,) = parse(text).statements
    assert isinstance(statement, t.ExprStatement)
    return statement.expr


def syntax_error(text: str) -> tuple[str, Span]:
    with pytest.raises(HqlError) as caught:
        parse(text)
    report = caught.value.report
    assert (report.stage, report.severity) == (Stage.SYNTAX, Severity.FAILURE)
    return report.message, report.span


def source_of(text: str, node: t.Node) -> str:
    return text.encode("utf-8")[node.span.start : node.span.end].decode("utf-8")


# --- primaries -----------------------------------------------------------------


def test_literals() -> None:
    assert isinstance(expr("42"), t.IntLit) and expr("-42").value == -42  # type: ignore[attr-defined]
    assert expr("2.5").value == 2.5  # type: ignore[attr-defined]
    assert expr("true").value is True and expr("false").value is False  # type: ignore[attr-defined]
    assert expr('"owl"').value == "owl"  # type: ignore[attr-defined]
    assert expr("[[ bearer-tokens ]]").name == "bearer-tokens"  # type: ignore[attr-defined]
    assert expr("cards").name == "cards"  # type: ignore[attr-defined]


def test_data_literal_keys_may_be_names_or_strings_with_trailing_comma() -> None:
    data = expr('{a: 1, "b.c": [2],}')
    assert isinstance(data, t.DataLit)
    assert [entry.key for entry in data.entries] == ["a", "b.c"]
    assert isinstance(expr("{}"), t.DataLit) and expr("{}").entries == ()  # type: ignore[attr-defined]


def test_set_and_list_literals() -> None:
    assert isinstance(expr("{1, 2,}"), t.SetLit)
    assert isinstance(expr("{x}"), t.SetLit)  # a `{` whose second token is not `:` opens a set
    listed = expr("[ [1], [2] ]")
    assert isinstance(listed, t.ListLit) and all(isinstance(i, t.ListLit) for i in listed.items)
    assert expr("[]").items == ()  # type: ignore[attr-defined]
    assert len(expr("[1, 2,]").items) == 2  # type: ignore[attr-defined]


def test_type_application_call() -> None:
    call = expr("SortedMap<String, List<Int>>([], [])")
    assert isinstance(call, t.TypeCall)
    assert call.name == "SortedMap" and [str(x) for x in call.types] == ["String", "List<Int>"]
    assert len(call.args) == 2
    assert syntax_error("Set<Int>") == ("expected `(`, found end of input", Span(8, 8))


def test_lambdas_single_and_multi_parameter() -> None:
    text = "sort(xs, by = (a, b) => compare(a, b))"
    call = expr(text)
    assert isinstance(call, t.Call)
    function = call.args[1].value
    assert isinstance(function, t.Lambda) and function.params == ("a", "b")
    assert source_of(text, function) == "(a, b) => compare(a, b)"
    single = expr("x => x | count")
    assert isinstance(single, t.Lambda) and isinstance(single.body, t.Pipe)  # the body holds pipes


def test_lambda_parameters_must_be_distinct() -> None:
    assert syntax_error("xs | sort((a, b, a) => a)") == (
        "lambda parameters must be distinct",
        Span(17, 18),
    )


def test_parentheses_group_without_a_node() -> None:
    assert isinstance(expr("(1 + 2)"), t.Add)


# --- operators and precedence -----------------------------------------------------


def test_precedence_pipe_arrow_equality_addition_postfix() -> None:
    equal = expr("a + 1 == b")
    assert isinstance(equal, t.Equality) and isinstance(equal.left, t.Add)
    pipe = expr("x | f(y) | g")
    assert isinstance(pipe, t.Pipe) and pipe.stage.name == "g"
    assert isinstance(pipe.input, t.Pipe) and pipe.input.stage.name == "f"
    edge = expr('[[a]] -> [[b]] {k: "v"}')
    assert isinstance(edge, t.EdgeLit) and edge.data is not None
    assert isinstance(expr("[[a]] -> [[b]]"), t.EdgeLit)
    assert isinstance(expr("x.a.b + 1").left, t.Field)  # type: ignore[attr-defined]


def test_addition_is_left_associative() -> None:
    added = expr("1 + 2 + 3")
    assert isinstance(added, t.Add) and isinstance(added.left, t.Add)
    assert added.right.value == 3  # type: ignore[attr-defined]


def test_not_equal_and_no_chaining() -> None:
    assert expr("1 != 2").negated is True  # type: ignore[attr-defined]
    chained = (
        "comparisons do not chain: this `==` follows another comparison; write `a < b and b < c`"
    )
    assert syntax_error("1 == 2 == 3") == (chained, Span(7, 9))
    assert syntax_error("1 -> 2 -> 3")[1] == Span(7, 9)


def test_subtraction_and_unary_minus() -> None:
    subtraction = expr("1 - 2")
    assert isinstance(subtraction, t.Arithmetic) and subtraction.op == "-"
    assert subtraction.op_span == Span(2, 3)
    minus = expr("-x.y")
    assert isinstance(minus, t.Negative) and isinstance(minus.operand, t.Field)


# --- stages -------------------------------------------------------------------------


def test_stage_forms() -> None:
    text = 'x | count | take(5) | lexical.lexical(query = "q") | present.table'
    stages = []
    node = expr(text)
    while isinstance(node, t.Pipe):
        stages.append(node.stage)
        node = node.input
    stages.reverse()
    assert [(s.extension, s.name) for s in stages] == [
        (None, "count"),
        (None, "take"),
        ("lexical", "lexical"),
        ("present", "table"),
    ]
    assert stages[0].args is None and stages[1].args is not None
    assert stages[2].args is not None and stages[2].args[0].name == "query"
    assert source_of(text, stages[2]) == 'lexical.lexical(query = "q")'


def test_named_and_positional_arguments() -> None:
    call = expr("f(1, n = 2)")
    assert isinstance(call, t.Call)
    assert [a.name for a in call.args] == [None, "n"]


def test_a_stage_must_name_a_step() -> None:
    message = "expected a pipeline step after `|`, such as `count` or `take(5)`"
    assert syntax_error("1 | 2") == (message, Span(4, 5))
    assert syntax_error("x | a.b.c") == (message, Span(4, 9))
    assert syntax_error("x | f(1)(2)") == (message, Span(4, 11))


# --- statements -----------------------------------------------------------------------


def test_statements() -> None:
    program = parse("import lexical\nx: Option<Int> = 1\ntype Colour : String\nx")
    kinds = [type(s) for s in program.statements]
    assert kinds == [t.Import, t.Binding, t.Declaration, t.ExprStatement]
    binding = program.statements[1]
    assert isinstance(binding, t.Binding) and str(binding.annotation) == "Option<Int>"
    assert binding.name_span == Span(15, 16)


def test_contextual_keywords_can_be_names() -> None:
    program = parse("type = 1\nimport = 2\ntype + import")
    assert [type(s) for s in program.statements] == [t.Binding, t.Binding, t.ExprStatement]


def test_record_declaration() -> None:
    text = "abstract type Shape<K> : {Doc, Orderable} { sides: Int, label?: String } where K: Orderable"
    (declaration,) = parse(text).statements
    assert isinstance(declaration, t.Declaration)
    assert declaration.abstract and declaration.params == ("K",)
    assert [str(p) for p in declaration.supertypes] == ["Doc", "Orderable"]
    assert [(f.name, f.optional, str(f.type)) for f in declaration.fields] == [
        ("sides", False, "Int"),
        ("label", True, "String"),
    ]
    assert [(name, str(bound)) for name, bound in declaration.bounds] == [("K", "Orderable")]
    assert declaration.span == Span(0, len(text))


def test_record_fields_may_be_separated_by_newlines() -> None:
    (declaration,) = parse("type P {\n  a: Int\n  b: String\n}").statements
    assert isinstance(declaration, t.Declaration) and len(declaration.fields) == 2


def test_union_declaration() -> None:
    text = "type Id = union { Int, String, }"
    (declaration,) = parse(text).statements
    assert isinstance(declaration, t.Declaration)
    assert [str(m) for m in declaration.union] == ["Int", "String"]
    assert declaration.span == Span(0, len(text))


def test_a_declaration_is_not_an_expression() -> None:
    assert syntax_error("1 | type Colour") == ("expected an expression, found `type`", Span(4, 8))


def test_square_bracket_type_arguments_are_a_syntax_error() -> None:
    assert syntax_error("x : Set[Card] = 1")[1] == Span(7, 8)


# --- layout --------------------------------------------------------------------------------


def test_multi_line_pipeline_and_continuations() -> None:
    program = parse("// leading\n\ncards\n  | take(2)\n\n  | count\n\nx = 1 +\n  2\n")
    assert len(program.statements) == 2
    assert isinstance(program.statements[0], t.ExprStatement)


def test_newlines_inside_brackets() -> None:
    assert len(expr("[\n1,\n2\n]").items) == 2  # type: ignore[attr-defined]
    assert isinstance(expr("f(\n  1,\n  n = 2\n)"), t.Call)


def test_two_expressions_on_a_line() -> None:
    assert syntax_error("1 2") == ("expected end of statement, found `2`", Span(2, 3))
    assert syntax_error("1\n\n\n2 3") == ("expected end of statement, found `3`", Span(6, 7))


def test_empty_and_blank_programs() -> None:
    assert syntax_error("") == ("expected an expression", Span(0, 0))
    assert syntax_error("\n// nothing\n") == ("expected an expression", Span(12, 12))


# --- errors name what was expected --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "span"),
    [
        ("1 +", "expected an expression", Span(3, 3)),
        ("x = ", "expected an expression", Span(4, 4)),
        ("(1", "expected `)`, found end of input", Span(2, 2)),
        ("[1,", "expected an expression", Span(3, 3)),
        ("a.", "expected a name, found end of input", Span(2, 2)),
        ("x: = 1", "expected a name, found `=`", Span(3, 4)),
        ("[1 2]", "expected `,` or `]`, found `2`", Span(3, 4)),
        ("(1 2)", "expected `)`, found `2`", Span(3, 4)),
        ("f(1 2)", "expected `,` or `)`, found `2`", Span(4, 5)),
        ("{a: 1 b: 2}", "expected `,` or `}`, found `b`", Span(6, 7)),
        ("[1,\n2\n3]", "expected `,` or `]`, found `3`", Span(6, 7)),
        (")", "expected an expression, found `)`", Span(0, 1)),
        ("{a: 1, 2}", "expected an expression, found `2`", Span(7, 8)),
    ],
)
def test_syntax_errors_in_plain_words(text: str, message: str, span: Span) -> None:
    assert syntax_error(text) == (message, span)


# --- limits ----------------------------------------------------------------------------------


def test_at_most_255_additions() -> None:
    assert isinstance(expr("+".join(["1"] * 256)), t.Add)
    message, span = syntax_error("+".join(["1"] * 257))
    assert message.startswith("bootstrap limit: at most 256 literals")
    assert span == Span(512, 513)


def test_nesting_depth_limit() -> None:
    assert isinstance(expr("[" + "(" * 127 + "1" + ")" * 127 + "]"), t.ListLit)
    message, _ = syntax_error("[" * 0 + "(" * 200 + "1" + ")" * 200)
    assert message == "expression nests deeper than the 128 the parser accepts"


# --- spans ------------------------------------------------------------------------------------


def test_every_node_has_a_byte_span() -> None:
    text = 'é = [1, 2] | map(x => x + 1)\n{"ü": é} | count'
    program = parse(text)
    seen = 0

    def walk(node: object) -> None:
        nonlocal seen
        if isinstance(node, t.Node):
            seen += 1
            assert 0 <= node.span.start <= node.span.end <= len(text.encode("utf-8"))
            for name in node.__slots__:  # type: ignore[attr-defined]
                walk(getattr(node, name))
        elif isinstance(node, tuple):
            for item in node:
                walk(item)

    walk(program)
    assert seen > 10
    binding = program.statements[0]
    assert isinstance(binding, t.Binding)
    assert source_of(text, binding.value) == "[1, 2] | map(x => x + 1)"
    assert binding.value.span == Span(5, 29)


@pytest.mark.parametrize(
    "text",
    [
        "1 % (1 - 1)",
        "(1 - 1) % 2",
        "(a) == ((b))",
        "(x) | count",
        "not (a and b)",
        "-(1)",
        "(c).name",
    ],
)
def test_an_expression_spans_its_brackets(text: str) -> None:
    statement = parse(text).statements[0]
    assert isinstance(statement, t.ExprStatement)
    assert source_of(text, statement.expr) == text


def test_a_report_on_a_bracketed_operand_underlines_the_brackets() -> None:
    (report,) = hql.run("1 % (1 - 1)").reports
    assert "remainder by zero" in report.message
    assert report.span == Span(0, len("1 % (1 - 1)"))
