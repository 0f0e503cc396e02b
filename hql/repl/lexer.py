"""Syntax highlighting for the REPL, from the language's own tokens (hql.syntax.tokens).

Every character gets a style class: the tokens the HQL lexer reads, `//`
comments between them, and `class:hql.error` from the first character the
lexer refused to the end of the input.
"""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.lexers import Lexer
from prompt_toolkit.styles import Style

from hql.diagnostics import HqlError
from hql.syntax.tokens import Token, iter_highlight_tokens, layout, scan

KEYWORDS = {"IMPORT", "TYPE", "ABSTRACT", "UNION", "WHERE", "TRUE", "FALSE", "AND", "OR", "NOT"}
OPERATORS = {"PIPE", "FATARROW", "ARROW", "EQEQ", "NEQ", "PLUS", "EQ", "MINUS", "STAR", "SLASH"}
OPERATORS |= {"PERCENT", "QQ", "LESS", "LE", "GREATER", "GE"}
LITERALS = {"INT": "number", "FLOAT": "number", "STRING": "string", "DOCREF": "docref"}
LITERALS["PARAM"] = "name"

STYLE = Style.from_dict(
    {
        "hql.keyword": "bold #c678dd",
        "hql.step": "#61afef",
        "hql.name": "",
        "hql.type": "#e5c07b",
        "hql.number": "#d19a66",
        "hql.string": "#98c379",
        "hql.docref": "underline #56b6c2",
        "hql.operator": "bold #e06c75",
        "hql.punctuation": "#abb2bf",
        "hql.comment": "italic #7f848e",
        "hql.error": "bg:#5c1f1f #ffffff",
    }
)


def token_class(tokens: list[Token], index: int) -> str:
    """The style class of one token, judged with its neighbours (a step follows `|` or precedes `(`)."""
    token = tokens[index]
    kind = token.kind
    if kind in KEYWORDS:
        return "keyword"
    if kind in LITERALS:
        return LITERALS[kind]
    if kind in OPERATORS:
        return "operator"
    if kind != "IDENT":
        return "punctuation"
    before = tokens[index - 1].kind if index > 0 else None
    after = tokens[index + 1].kind if index + 1 < len(tokens) else None
    if before == "PIPE" or after == "LPAR":
        return "step"
    if token.text[:1].isupper():
        return "type"
    return "name"


def _char_offsets(text: str) -> Callable[[int], int]:
    """Byte offset (token spans are in UTF-8 bytes) to character offset."""
    if text.isascii():
        return lambda offset: offset
    starts: dict[int, int] = {}
    byte = 0
    for position, char in enumerate(text):
        starts[byte] = position
        byte += len(char.encode("utf-8"))
    starts[byte] = len(text)
    return lambda offset: starts.get(offset, len(text))


def read_tokens(text: str) -> tuple[list[Token], bool]:
    """The tokens the lexer reads, and whether it stopped early at a lexical error."""
    try:
        return scan(text), False
    except HqlError:
        return list(iter_highlight_tokens(text)), True


def classify(text: str) -> list[str]:
    """One style class (without the `class:hql.` prefix) per character of `text`."""
    raw, stopped = read_tokens(text)
    try:
        tokens = layout(raw)
    except HqlError:  # nesting too deep: colour without contextual keywords
        tokens = raw
    tokens = [token for token in tokens if token.kind != "NEWLINE"]
    to_char = _char_offsets(text)
    classes = [""] * len(text)
    position = 0
    for index, token in enumerate(tokens):
        start, end = to_char(token.span.start), to_char(token.span.end)
        _mark_comments(text, classes, position, start)
        classes[start:end] = [token_class(tokens, index)] * (end - start)
        position = end
    _mark_comments(text, classes, position, len(text))
    if stopped:
        error_from = _first_visible(text, to_char(raw[-1].span.end) if raw else 0)
        classes[error_from:] = ["error"] * (len(text) - error_from)
    return classes


def _mark_comments(text: str, classes: list[str], start: int, end: int) -> None:
    at = text.find("//", start, end)
    while at >= 0:
        line_end = text.find("\n", at, end)
        line_end = end if line_end < 0 else line_end
        classes[at:line_end] = ["comment"] * (line_end - at)
        at = text.find("//", line_end, end)


def _first_visible(text: str, start: int) -> int:
    while start < len(text) and text[start].isspace():
        start += 1
    return start


class HqlLexer(Lexer):
    """A prompt-toolkit lexer that colours HQL with the HQL lexer's tokens."""

    def lex_document(self, document: Document) -> Callable[[int], StyleAndTextTuples]:
        text = document.text
        classes = classify(text)
        lines: list[StyleAndTextTuples] = []
        current: StyleAndTextTuples = []
        for char, name in zip(text, classes, strict=True):
            if char == "\n":
                lines.append(current)
                current = []
                continue
            current.append((f"class:hql.{name}" if name else "", char))
        lines.append(current)

        def get_line(number: int) -> StyleAndTextTuples:
            return lines[number] if 0 <= number < len(lines) else []

        return get_line
