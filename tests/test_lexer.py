"""The lexer (reference section 2) and the layout rules (section 3.3).

Spans are zero-based half-open UTF-8 byte ranges.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hql.diagnostics import HqlError, Severity, Stage
from hql.source import Span
from hql.syntax.tokens import iter_highlight_tokens, scan, tokenize


def kinds(text: str) -> list[str]:
    return [token.kind for token in tokenize(text)]


def lex_error(text: str) -> tuple[str, Span]:
    with pytest.raises(HqlError) as caught:
        tokenize(text)
    report = caught.value.report
    assert report.stage is Stage.SYNTAX and report.severity is Severity.FAILURE
    return report.message, report.span


# --- tokens --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("==", "EQEQ"),
        ("!=", "NEQ"),
        ("=>", "FATARROW"),
        ("->", "ARROW"),
        ("|", "PIPE"),
        ("+", "PLUS"),
        (".", "DOT"),
        (",", "COMMA"),
        (":", "COLON"),
        ("(", "LPAR"),
        (")", "RPAR"),
        ("{", "LBRACE"),
        ("}", "RBRACE"),
        ("[", "LSQB"),
        ("]", "RSQB"),
        ("<", "LT"),
        (">", "GT"),
        ("?", "QMARK"),
        ("=", "EQ"),
    ],
)
def test_every_punctuation_token(text: str, kind: str) -> None:
    (token,) = scan(text)
    assert (token.kind, token.span) == (kind, Span(0, len(text)))


def test_two_character_operators_win_over_one() -> None:
    assert [t.kind for t in scan("a==b!=c=>d->e")] == [
        "IDENT",
        "EQEQ",
        "IDENT",
        "NEQ",
        "IDENT",
        "FATARROW",
        "IDENT",
        "ARROW",
        "IDENT",
    ]
    assert [t.kind for t in scan("= =")] == ["EQ", "EQ"]


def test_literals_carry_decoded_values_and_byte_spans() -> None:
    tokens = scan('-7 42 1.5 007.50 true false "a\\n\\t\\\\\\"b" [[ bearer-tokens ]] name')
    assert [(t.kind, t.value) for t in tokens] == [
        ("INT", -7),
        ("INT", 42),
        ("FLOAT", 1.5),
        ("FLOAT", 7.5),
        ("TRUE", "true"),
        ("FALSE", "false"),
        ("STRING", 'a\n\t\\"b'),
        ("DOCREF", "bearer-tokens"),
        ("IDENT", "name"),
    ]
    assert tokens[2].span == Span(6, 9)
    assert tokens[7].text == "[[ bearer-tokens ]]"


def test_minus_glues_to_a_digit_only_where_no_operand_ends() -> None:
    assert [(t.kind, t.value) for t in scan("-1")] == [("INT", -1)]
    assert [(t.kind, t.value) for t in scan("[1, -2]")][3] == ("INT", -2)
    assert kinds("x\n-1") == ["IDENT", "NEWLINE", "INT"]  # a new statement: the literal -1
    assert kinds("- 1") == ["MINUS", "INT"]  # unary minus
    assert kinds("1 - 2") == ["INT", "MINUS", "INT"]
    assert kinds("1 -2") == ["INT", "MINUS", "INT"]  # after an operand, `-` subtracts
    assert kinds("f(x)-2") == ["IDENT", "LPAR", "IDENT", "RPAR", "MINUS", "INT"]
    assert kinds("x and -2") == ["IDENT", "AND", "INT"]


def test_integer_range_is_signed_64_bit() -> None:
    assert scan("-9223372036854775808")[0].value == -(2**63)
    assert scan("9223372036854775807")[0].value == 2**63 - 1
    assert lex_error("9223372036854775808") == (
        "integer literal is outside the signed 64-bit range",
        Span(0, 19),
    )
    assert lex_error("x = -9223372036854775809")[1] == Span(4, 24)


def test_float_outside_double_range() -> None:
    text = "1" * 400 + ".0"
    assert lex_error(text) == (
        "float literal is outside the finite double-precision range",
        Span(0, 402),
    )


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("1.", Span(0, 2)),
        ("1e3", Span(0, 3)),
        ("1.5e3", Span(0, 5)),
        ("1.2.3", Span(0, 5)),
        ("12abc", Span(0, 5)),
        ("x + 3x", Span(4, 6)),
        ("1²", Span(0, 3)),
    ],
)
def test_malformed_numbers(text: str, span: Span) -> None:
    assert lex_error(text) == ("malformed numeric literal", span)


def test_a_leading_point_is_not_a_float() -> None:
    assert [t.kind for t in scan(".5")] == ["DOT", "INT"]


def test_only_ascii_digits_are_numbers() -> None:
    assert lex_error("²") == ("unexpected character `²`", Span(0, 2))
    assert lex_error("٣") == ("unexpected character `٣`", Span(0, 2))


def test_string_errors_and_spans() -> None:
    assert lex_error('"abc') == ("unterminated string literal", Span(0, 4))
    assert lex_error('x = "ab\ncd"') == ("a string literal may not span lines", Span(4, 7))
    message, span = lex_error('"é\\q"')
    assert message.startswith("unknown escape `\\q`") and span == Span(3, 5)
    assert lex_error('"\\') == ("unterminated string literal", Span(0, 2))
    assert lex_error('"a\\\nb"') == ("a string literal may not span lines", Span(0, 3))


def test_no_single_quoted_strings() -> None:
    assert lex_error("'a'") == ("unexpected character `'`", Span(0, 1))


def test_document_reference_is_one_token() -> None:
    (token,) = scan("[[ a b ]]")
    assert (token.kind, token.value, token.span) == ("DOCREF", "a b", Span(0, 9))
    # `[[` always starts a reference, so nested lists need a space.
    assert [t.kind for t in scan("[[1], [2]]")] == ["DOCREF"]
    assert [t.kind for t in scan("[ [1], [2] ]")][:2] == ["LSQB", "LSQB"]


def test_document_reference_errors() -> None:
    assert lex_error("[[ ]]") == ("a document reference needs a name", Span(0, 5))
    assert lex_error("x | [[abc") == ("unterminated document reference: expected `]]`", Span(4, 9))


def test_unexpected_characters_with_byte_spans() -> None:
    assert lex_error(";") == ("unexpected character `;`", Span(0, 1))
    assert lex_error("1;") == ("unexpected character `;`", Span(1, 2))
    assert lex_error('"é" 😀') == ("unexpected character `😀`", Span(5, 9))
    assert lex_error("#x") == ("unexpected character `#`", Span(0, 1))
    assert lex_error("a ! b")[1] == Span(2, 3)


def test_unicode_identifiers_and_whitespace() -> None:
    tokens = scan("é_1 = naïve\u2003+\r\t東京")
    assert [(t.kind, t.text) for t in tokens] == [
        ("IDENT", "é_1"),
        ("EQ", "="),
        ("IDENT", "naïve"),
        ("PLUS", "+"),
        ("IDENT", "東京"),
    ]
    assert tokens[0].span == Span(0, 4)
    assert tokens[3].span == Span(16, 17)  # the em-space is three bytes


def test_comments_run_to_end_of_line() -> None:
    assert [t.kind for t in scan("x // c + 1\ny // tail")] == ["IDENT", "NEWLINE", "IDENT"]
    assert scan("// only a comment") == []


def test_true_and_false_are_the_only_reserved_words() -> None:
    assert [t.kind for t in scan("true false cards map")] == ["TRUE", "FALSE", "IDENT", "IDENT"]


# --- layout: which newlines end a statement ----------------------------------------


def test_newline_ends_a_statement() -> None:
    assert kinds("x = 1\nx") == ["IDENT", "EQ", "INT", "NEWLINE", "IDENT"]


def test_blank_comment_leading_and_trailing_lines_collapse() -> None:
    assert kinds("\n\n1\n\n// note\n\n2\n\n") == ["INT", "NEWLINE", "INT"]


def test_newlines_inside_brackets_are_skipped() -> None:
    for text in ("[1,\n2\n]", "(1\n+ 2)", "{a:\n1\n}", "Set<\nInt\n>([])", "f(\n1\n)"):
        assert "NEWLINE" not in kinds(text), text


def test_next_line_starting_with_an_operator_continues() -> None:
    for op in ("|", "+", "==", "!=", "->"):
        assert "NEWLINE" not in kinds(f"a\n\n  {op} b"), op


def test_line_ending_with_an_operator_continues() -> None:
    for op in ("|", "+", "==", "!=", "->", "=", "=>", ":", ","):
        assert "NEWLINE" not in kinds(f"a {op}\n b"), op


def test_contextual_keywords() -> None:
    assert kinds("import lexical")[0] == "IMPORT"
    assert kinds("import = 1")[0] == "IDENT"
    assert kinds("type Colour")[0] == "TYPE"
    assert kinds("type = 1")[0] == "IDENT"
    assert kinds("abstract type Shape")[:2] == ["ABSTRACT", "TYPE"]
    assert kinds("type U = union { Int }")[3] == "UNION"
    assert "WHERE" in kinds("type S<K> where K: Orderable")
    assert kinds("where = 1")[0] == "IDENT"


def test_lambda_parameter_list_is_told_apart_from_a_parenthesis() -> None:
    assert kinds("f((a, b) => a)")[2] == "LAMBDA_LPAR"
    assert kinds("f((a) => a)")[2] == "LAMBDA_LPAR"
    assert kinds("(a)")[0] == "LPAR"
    assert kinds("(a, b)")[0] == "LPAR"


def test_nesting_limit() -> None:
    assert "LPAR" in kinds("(" * 128 + "1" + ")" * 128)
    message, span = lex_error("(" * 129 + "1" + ")" * 129)
    assert message == "expression nests deeper than the 128 the parser accepts"
    assert span == Span(128, 129)


def test_highlighting_stops_quietly_at_an_error() -> None:
    tokens = list(iter_highlight_tokens('x | take(2) "open'))
    assert [t.kind for t in tokens] == ["IDENT", "PIPE", "IDENT", "LPAR", "INT", "RPAR"]


# --- spans are byte ranges of the source, whatever the text ---------------------------------------

ALPHABET = list('abX_09 \t\n\r\u2003".-+|=!<>[]{}(),:?/é東²😀\\') + [
    "//",
    "[[",
    "]]",
    "true",
    "\\n",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=16).map("".join))
def test_token_spans_are_the_bytes_of_their_text(text: str) -> None:
    data = text.encode("utf-8")
    try:
        tokens = scan(text)
    except HqlError as error:
        span = error.report.span
        assert 0 <= span.start <= span.end <= len(data)
        return
    previous_end = 0
    for token in tokens:
        assert previous_end <= token.span.start < token.span.end <= len(data)
        assert data[token.span.start : token.span.end].decode("utf-8") == token.text
        previous_end = token.span.end
