"""HQL's lexer: program text to tokens, with the reference's layout rules.

Lexing happens in two passes. `scan` turns characters into raw tokens (every
newline included) and reports lexical errors; `layout` then decides which
newlines end a statement, marks the contextual keywords, and enforces the
nesting limit. The parser and the REPL's highlighter both read these tokens.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator
from typing import NamedTuple

from hql import messages
from hql.diagnostics import HqlError, syntax
from hql.source import Span

MAX_NESTING = 128

PUNCTUATION = {
    "==": "EQEQ",
    "!=": "NEQ",
    "=>": "FATARROW",
    "->": "ARROW",
    "|": "PIPE",
    "+": "PLUS",
    ".": "DOT",
    ",": "COMMA",
    ":": "COLON",
    "(": "LPAR",
    ")": "RPAR",
    "{": "LBRACE",
    "}": "RBRACE",
    "[": "LSQB",
    "]": "RSQB",
    "<": "LT",
    ">": "GT",
    "?": "QMARK",
    "=": "EQ",
}

OPENERS = {"LPAR", "LAMBDA_LPAR", "LBRACE", "LSQB", "LT"}
CLOSERS = {"RPAR", "RBRACE", "RSQB", "GT"}
# A line that ends with one of these continues on the next line.
CONTINUES_AFTER = {"PIPE", "PLUS", "EQEQ", "NEQ", "ARROW", "EQ", "FATARROW", "COLON", "COMMA"}
# A line that starts with one of these continues the previous line.
CONTINUES_BEFORE = {"PIPE", "PLUS", "EQEQ", "NEQ", "ARROW"}

# How each token kind is named in "expected …" messages.
DESCRIPTIONS = {
    "INT": "an integer",
    "FLOAT": "a float",
    "STRING": "a string",
    "DOCREF": "a document reference",
    "IDENT": "a name",
    "TRUE": "`true`",
    "FALSE": "`false`",
    "NEWLINE": "end of line",
    "$END": "end of input",
    "IMPORT": "`import`",
    "TYPE": "`type`",
    "ABSTRACT": "`abstract`",
    "UNION": "`union`",
    "WHERE": "`where`",
    "LAMBDA_LPAR": "`(`",
    **{kind: f"`{text}`" for text, kind in PUNCTUATION.items()},
}


class Token(NamedTuple):
    """One token; a named tuple because a lexer makes many and a frozen dataclass costs 3x to build."""

    kind: str
    text: str  # the source text of the token
    span: Span
    value: object = None  # decoded literal value (int, float, str) where there is one

    def __str__(self) -> str:
        # Lark builds its own token as a `str` of ours: the text, not the (slow) dataclass repr.
        return self.text


# Identifier tails: `\w` is exactly `isalnum() or "_"`.
_WORD = re.compile(r"\w+")
# Well-formed tokens in one regex step (numbers not glued to a `.` or a letter, strings with
# known escapes only); anything else, `[[` included, goes to the careful scanner.
_WELL_FORMED = re.compile(
    r"(?P<BLANK>[^\S\n]+)|(?P<NEWLINE>\n)|(?P<COMMENT>//[^\n]*)"
    r"|(?P<FLOAT>-?[0-9]+\.[0-9]+)(?![.\w])|(?P<INT>-?[0-9]+)(?![.\w])"
    r'|(?P<STRING>"(?:[^"\\\n]|\\[nt\\"])*")'
    r"|(?P<IDENT>[^\W\d]\w*)"
    r"|(?P<PUNCT>==|!=|=>|->|\[(?!\[)|[|+.,:(){}\]<>?=])"
)
_KEYWORDS = {"true": "TRUE", "false": "FALSE"}
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}
_ESCAPE = re.compile(r"\\(.)")


def _unescape(match: re.Match[str]) -> str:
    return _ESCAPES[match[1]]


def is_digit(char: str) -> bool:
    """ASCII digits only: `²` or `٣` are not numbers to HQL (Python's isdigit says they are)."""
    return "0" <= char <= "9"


def is_identifier_start(char: str) -> bool:
    return char.isalpha() or char == "_"


def is_identifier_part(char: str) -> bool:
    return char.isalnum() or char == "_"


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.byte = 0
        self.ascii = text.isascii()
        self.tokens: list[Token] = []

    def offset_after(self, count: int) -> int:
        if self.ascii:  # one byte per character: no need to encode
            return self.byte + min(count, len(self.text) - self.pos)
        return self.byte + len(self.text[self.pos : self.pos + count].encode("utf-8"))

    def emit(self, kind: str, length: int, value: object = None) -> None:
        pos, byte = self.pos, self.byte
        text = self.text[pos : pos + length]
        end = byte + (length if self.ascii else len(text.encode("utf-8")))
        self.tokens.append(Token(kind, text, Span(byte, end), value))
        self.pos, self.byte = pos + length, end

    def advance(self, length: int, end: int | None = None) -> None:
        self.byte = self.offset_after(length) if end is None else end
        self.pos += length

    def fail(self, message: str, length: int = 1) -> HqlError:
        return HqlError(syntax(message, Span(self.byte, self.offset_after(length))))

    def run(self) -> list[Token]:
        text = self.text
        while self.pos < len(text):
            match = _WELL_FORMED.match(text, self.pos)
            if match is None or not self.well_formed(match):
                self.careful_step()
        return self.tokens

    def well_formed(self, match: re.Match[str]) -> bool:
        """Emit a token the fast regex read; False leaves it to `careful_step` (which explains errors)."""
        kind, word = match.lastgroup, match[0]
        if kind == "BLANK":
            self.advance(len(word))
        elif kind == "IDENT":
            if not is_identifier_start(word[0]):
                return False
            self.emit(_KEYWORDS.get(word, "IDENT"), len(word), word)
        elif kind == "INT":
            number = int(word)
            if not -(2**63) <= number < 2**63:
                return False
            self.emit("INT", len(word), number)
        elif kind == "FLOAT":
            value = float(word)
            if not math.isfinite(value):
                return False
            self.emit("FLOAT", len(word), value)
        elif kind == "STRING":
            body = word[1:-1]
            self.emit("STRING", len(word), _ESCAPE.sub(_unescape, body) if "\\" in body else body)
        elif kind == "PUNCT":
            self.emit(PUNCTUATION[word], len(word))
        elif kind == "NEWLINE":
            self.emit("NEWLINE", 1)
        else:  # a comment
            self.advance(len(word))
        return True

    def careful_step(self) -> None:
        """One token the slow way, character by character: the lexical errors are found here."""
        text = self.text
        char = text[self.pos]
        if text.startswith("[[", self.pos):
            self.docref()
        elif is_digit(char) or (char == "-" and self.peek_digit(1)):
            self.number()
        elif char == '"':
            self.string()
        elif is_identifier_start(char):
            self.identifier()
        else:
            raise self.fail(messages.unexpected_character(char))

    def peek_digit(self, ahead: int) -> bool:
        index = self.pos + ahead
        return index < len(self.text) and is_digit(self.text[index])

    def number(self) -> None:
        text = self.text
        end = self.pos + 1
        while end < len(text) and is_digit(text[end]):
            end += 1
        is_float = end + 1 < len(text) and text[end] == "." and is_digit(text[end + 1])
        if is_float:
            end += 1
            while end < len(text) and is_digit(text[end]):
                end += 1
        if end < len(text) and (text[end] == "." or is_identifier_part(text[end])):
            bad_end = end
            while bad_end < len(text) and (
                text[bad_end] == "." or is_identifier_part(text[bad_end])
            ):
                bad_end += 1
            raise self.fail(messages.malformed_number(), bad_end - self.pos)
        literal = text[self.pos : end]
        length = end - self.pos
        if is_float:
            value = float(literal)
            if not math.isfinite(value):
                raise self.fail(messages.float_out_of_range(), length)
            self.emit("FLOAT", length, value)
        else:
            number = int(literal)
            if not -(2**63) <= number < 2**63:
                raise self.fail(messages.integer_out_of_range(), length)
            self.emit("INT", length, number)

    def string(self) -> None:
        text = self.text
        index = self.pos + 1
        chars: list[str] = []
        escapes = _ESCAPES
        while True:
            if index >= len(text):
                raise self.fail(messages.unterminated_string(), index - self.pos)
            char = text[index]
            if char == '"':
                break
            if char == "\n":
                raise self.fail(messages.string_spans_lines(), index - self.pos)
            if char == "\\":
                follower = text[index + 1] if index + 1 < len(text) else ""
                if follower in ("", "\n"):  # the string ends (or breaks) before its escape does
                    index += 1
                    continue
                if follower not in escapes:
                    start = self.offset_after(index - self.pos)
                    end = start + len(("\\" + follower).encode("utf-8"))
                    raise HqlError(syntax(messages.unknown_escape(follower), Span(start, end)))
                chars.append(escapes[follower])
                index += 2
                continue
            chars.append(char)
            index += 1
        self.emit("STRING", index + 1 - self.pos, "".join(chars))

    def docref(self) -> None:
        close = self.text.find("]]", self.pos + 2)
        if close < 0:
            raise self.fail(messages.unterminated_docref(), len(self.text) - self.pos)
        name = self.text[self.pos + 2 : close].strip()
        if not name:
            raise self.fail(messages.empty_docref(), close + 2 - self.pos)
        self.emit("DOCREF", close + 2 - self.pos, name)

    def identifier(self) -> None:
        end = _WORD.match(self.text, self.pos).end()  # type: ignore[union-attr]
        word = self.text[self.pos : end]
        kind = {"true": "TRUE", "false": "FALSE"}.get(word, "IDENT")
        self.emit(kind, end - self.pos, word)


def scan(text: str) -> list[Token]:
    """Raw tokens, newlines included; raises HqlError on a lexical error."""
    return _Scanner(text).run()


def _significant(tokens: list[Token], start: int, step: int) -> Token | None:
    index = start
    while 0 <= index < len(tokens):
        if tokens[index].kind != "NEWLINE":
            return tokens[index]
        index += step
    return None


def _contextual_kind(tokens: list[Token], index: int) -> str:
    """Recognise `import`, `type`, `abstract`, `union`, `where` only where they act as keywords."""
    token = tokens[index]
    following = _significant(tokens, index + 1, 1)
    after = following.kind if following else None
    if token.kind != "IDENT":
        return token.kind
    word = token.text
    if word == "import" and after == "IDENT":
        return "IMPORT"
    if word == "type" and after == "IDENT":
        return "TYPE"
    if word == "abstract" and following is not None and following.text == "type":
        return "ABSTRACT"
    if word == "union" and after == "LBRACE":
        return "UNION"
    if word == "where" and after == "IDENT":
        second = _significant(tokens, tokens.index(following, index) + 1, 1) if following else None
        if second is not None and second.kind == "COLON":
            return "WHERE"
    return "IDENT"


def _opens_lambda(tokens: list[Token], index: int) -> bool:
    """`(a, b) => …`: a parenthesised parameter list, told apart from `(a)` by the `=>` after it."""
    expect_name = True
    for token in tokens[index + 1 :]:
        if token.kind == "NEWLINE":
            continue
        if expect_name:
            if token.kind != "IDENT":
                return False
        elif token.kind == "RPAR":
            following = _significant(tokens, tokens.index(token, index) + 1, 1)
            return following is not None and following.kind == "FATARROW"
        elif token.kind != "COMMA":
            return False
        expect_name = not expect_name
    return False


def layout(raw: list[Token]) -> list[Token]:
    """Keep the newlines that end statements, mark contextual keywords, bound nesting."""
    result: list[Token] = []
    depth = 0
    for index, token in enumerate(raw):
        if token.kind == "NEWLINE":
            previous = result[-1] if result else None
            following = _significant(raw, index + 1, 1)
            if (
                depth > 0
                or previous is None
                or following is None
                or previous.kind == "NEWLINE"
                or previous.kind in CONTINUES_AFTER
                or following.kind in CONTINUES_BEFORE
            ):
                continue
            result.append(token)
            continue
        kind = _contextual_kind(raw, index)
        if kind == "LPAR" and _opens_lambda(raw, index):
            kind = "LAMBDA_LPAR"
        if kind in OPENERS:
            depth += 1
            if depth > MAX_NESTING:
                raise HqlError(syntax(messages.nesting_too_deep(MAX_NESTING), token.span))
        elif kind in CLOSERS:
            depth = max(0, depth - 1)
        result.append(
            token if kind == token.kind else Token(kind, token.text, token.span, token.value)
        )
    return result


def tokenize(text: str) -> list[Token]:
    return layout(scan(text))


def iter_highlight_tokens(text: str) -> Iterator[Token]:
    """Tokens for highlighting: as many as can be read, stopping quietly at a lexical error."""
    scanner = _Scanner(text)
    with contextlib.suppress(HqlError):
        scanner.run()
    yield from scanner.tokens
