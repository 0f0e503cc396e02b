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
    "??": "QQ",
    "<=": "LE",
    ">=": "GE",
    "|": "PIPE",
    "+": "PLUS",
    "-": "MINUS",
    "*": "STAR",
    "/": "SLASH",
    "%": "PERCENT",
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
# Binary operators (besides `|`, `+`, `==`, `!=`, `->`): `<` and `>` are LESS and GREATER
# here; as LT and GT they bracket type arguments (`Set<Int>([])`, `x: List<Int> = …`).
OPERATORS = {"QQ", "OR", "AND", "LESS", "LE", "GREATER", "GE", "STAR", "SLASH", "PERCENT"}
COMPARISONS = {"EQEQ", "NEQ", "LESS", "LE", "GREATER", "GE"}
# A line that ends with one of these continues on the next line.
CONTINUES_AFTER = {
    "PIPE",
    "PLUS",
    "EQEQ",
    "NEQ",
    "ARROW",
    "EQ",
    "FATARROW",
    "COLON",
    "COMMA",
    "MINUS",
    "NOT",
    *OPERATORS,
}
# A line that starts with one of these continues the previous line (not `-` or `not`,
# which may start an expression of their own).
CONTINUES_BEFORE = {"PIPE", "PLUS", "EQEQ", "NEQ", "ARROW", *OPERATORS}
# Tokens an operand can end with, and tokens it can start with.
ENDS_OPERAND = {"INT", "FLOAT", "STRING", "DOCREF", "IDENT", "TRUE", "FALSE", "PARAM"}
ENDS_OPERAND |= {"RPAR", "RSQB", "RBRACE"}
STARTS_OPERAND = {"INT", "FLOAT", "STRING", "DOCREF", "IDENT", "TRUE", "FALSE", "PARAM"}
STARTS_OPERAND |= {"LPAR", "LAMBDA_LPAR", "LSQB", "LBRACE", "MINUS"}
# Words that are operators only where an operator can stand (a name elsewhere).
WORD_OPERATORS = {"and": "AND", "or": "OR", "not": "NOT"}
# Words whose kind depends on their neighbours (every other word is a name).
_SPECIAL_WORDS = {"import", "type", "abstract", "union", "where", *WORD_OPERATORS}

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
    "PARAM": "a parameter",
    "AND": "`and`",
    "OR": "`or`",
    "NOT": "`not`",
    "LESS": "`<`",
    "GREATER": "`>`",
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
    r'|(?P<STRING>"[^"\\\n]*+(?:\\[nt\\"][^"\\\n]*+)*+")'
    r"|(?P<IDENT>[^\W\d]\w*)|(?P<PARAM>\$[^\W\d]\w*)"
    r"|(?P<PUNCT>==|!=|=>|->|\?\?|<=|>=|\[(?!\[)|[|+.,:(){}\]<>?=*/%-])"
)
_KEYWORDS = {"true": "TRUE", "false": "FALSE"}
# Punctuation that is one character whatever follows it (no `==`, `//`, `[[` or `-1` to tell apart).
_SINGLE_PUNCTUATION = {char: PUNCTUATION[char] for char in ",(){}]:+*%|."}
# An unsigned integer not glued to a `.` or a letter (as `_WELL_FORMED` reads INT).
_DIGITS = re.compile(r"[0-9]+(?![.\w])")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}
# Where a string literal's plain run ends: its closing quote, an escape or a line break.
_STRING_STOP = re.compile(r'["\\\n]')


def unescape(body: str) -> str:
    """A string literal's value from its body, whose escapes are known to be `\\n`, `\\t`,
    `\\\\` and `\\"`: in linear time and without a Python step per escape (a literal of
    ten million characters is lexed in well under a second and in a few times its size)."""
    if "\\" not in body:
        return body
    # Backslash pairs first, left to right as a reader pairs them; each part then holds
    # only one-letter escapes.
    parts = body.split("\\\\")
    return "\\".join(
        part.replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"') if "\\" in part else part
        for part in parts
    )


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
            if self.ascii:
                self.run_ascii()
                if self.pos >= len(text):
                    break
            match = _WELL_FORMED.match(text, self.pos)
            if match is None or not self.well_formed(match):
                self.careful_step()
        return self.tokens

    def run_ascii(self) -> None:
        """`well_formed` inlined for ASCII text (a byte per character), stopping at anything
        it would have to think about: a signed number, a long integer, a malformed token.
        A program of a hundred thousand literals spends most of its lexing here."""
        text, pos, end_of_text = self.text, self.pos, len(self.text)
        append, match_at, punctuation = self.tokens.append, _WELL_FORMED.match, PUNCTUATION
        single, digits, new = _SINGLE_PUNCTUATION, _DIGITS.match, tuple.__new__
        while pos < end_of_text:
            char = text[pos]
            if char == " ":
                pos += 1
                continue
            kind = single.get(char)
            if kind is not None:
                append(new(Token, (kind, char, Span(pos, pos + 1), None)))
                pos += 1
                continue
            if "0" <= char <= "9":
                number = digits(text, pos)
                if number is not None and number.end() - pos <= 18:
                    end = number.end()
                    word = number[0]
                    append(new(Token, ("INT", word, Span(pos, end), int(word))))
                    pos = end
                    continue
            match = match_at(text, pos)
            if match is None:
                break
            found, end = match.lastgroup, match.end()
            if found == "PUNCT":
                word = match[0]
                append(new(Token, (punctuation[word], word, Span(pos, end), None)))
            elif found == "INT":
                if char == "-" or end - pos > 18:
                    break
                append(new(Token, ("INT", match[0], Span(pos, end), int(match[0]))))
            elif found == "IDENT":
                word = match[0]
                append(new(Token, (_KEYWORDS.get(word, "IDENT"), word, Span(pos, end), word)))
            elif found == "NEWLINE":
                append(new(Token, ("NEWLINE", "\n", Span(pos, end), None)))
            elif found == "STRING":
                word = match[0]
                append(new(Token, ("STRING", word, Span(pos, end), unescape(word[1:-1]))))
            elif found not in ("BLANK", "COMMENT"):
                break
            pos = end
        self.pos = self.byte = pos

    def after_operand(self) -> bool:
        """Whether the last token ends an operand: then `-` is subtraction, not a literal's sign."""
        last = self.tokens[-1] if self.tokens else None
        return last is not None and last.kind in ENDS_OPERAND and last.text not in WORD_OPERATORS

    def well_formed(self, match: re.Match[str]) -> bool:
        """Emit a token the fast regex read; False leaves it to `careful_step` (which explains errors)."""
        kind, word = match.lastgroup, match[0]
        if word[0] == "-" and kind in ("INT", "FLOAT") and self.after_operand():
            self.emit("MINUS", 1)
        elif kind == "BLANK":
            self.advance(len(word))
        elif kind == "IDENT":
            if not is_identifier_start(word[0]):
                return False
            self.emit(_KEYWORDS.get(word, "IDENT"), len(word), word)
        elif kind == "INT":
            number = _integer(word)
            if number is None:
                return False
            self.emit("INT", len(word), number)
        elif kind == "FLOAT":
            value = float(word)
            if not math.isfinite(value):
                return False
            self.emit("FLOAT", len(word), value)
        elif kind == "STRING":
            body = word[1:-1]
            self.emit("STRING", len(word), unescape(body))
        elif kind == "PUNCT":
            self.emit(PUNCTUATION[word], len(word))
        elif kind == "PARAM":
            if not is_identifier_start(word[1]):
                return False
            self.emit("PARAM", len(word), word[1:])
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
        elif char == "-" and (self.after_operand() or not self.peek_digit(1)):
            self.emit("MINUS", 1)
        elif is_digit(char) or char == "-":
            self.number()
        elif char == '"':
            self.string()
        elif is_identifier_start(char):
            self.identifier()
        elif char == "$" and self.pos + 1 < len(text) and is_identifier_start(text[self.pos + 1]):
            self.pos += 1
            self.byte += 1
            start = len(self.tokens)
            self.identifier()
            name = self.tokens.pop(start)
            self.tokens.append(
                Token("PARAM", "$" + name.text, Span(name.span.start - 1, name.span.end), name.text)
            )
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
            number = _integer(literal)
            if number is None:
                raise self.fail(messages.integer_out_of_range(), length)
            self.emit("INT", length, number)

    def string(self) -> None:
        """A string literal the fast regex refused: find the error (or the escape at the end of a
        line it skipped), jumping from one quote, backslash or line break to the next."""
        text = self.text
        index = self.pos + 1
        while True:
            stop = _STRING_STOP.search(text, index)
            if stop is None:
                raise self.fail(messages.unterminated_string(), len(text) - self.pos)
            index = stop.start()
            char = text[index]
            if char == '"':
                break
            if char == "\n":
                raise self.fail(messages.string_spans_lines(), index - self.pos)
            follower = text[index + 1] if index + 1 < len(text) else ""
            if follower in ("", "\n"):  # the string ends (or breaks) before its escape does
                index += 1
                continue
            if follower not in _ESCAPES:
                start = self.offset_after(index - self.pos)
                end = start + len(("\\" + follower).encode("utf-8"))
                raise HqlError(syntax(messages.unknown_escape(follower), Span(start, end)))
            index += 2
        self.emit("STRING", index + 1 - self.pos, unescape(text[self.pos + 1 : index]))

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
    for position in range(index + 1, len(tokens)):  # no slice: a copy per `(` is quadratic
        token = tokens[position]
        if token.kind == "NEWLINE":
            continue
        if expect_name:
            if token.kind != "IDENT":
                return False
        elif token.kind == "RPAR":
            following = _significant(tokens, position + 1, 1)
            return following is not None and following.kind == "FATARROW"
        elif token.kind != "COMMA":
            return False
        expect_name = not expect_name
    return False


def _previous(tokens: list[Token]) -> Token | None:
    """The last token that is not a newline."""
    return next((token for token in reversed(tokens) if token.kind != "NEWLINE"), None)


def _word_operator(raw: list[Token], index: int, done: list[Token]) -> str | None:
    """`and`, `or`, `not` are operators only where an operator can stand; elsewhere names.

    `and`/`or` stand between the end of an operand and the start of another, `not` where
    an operand may start and before one. A word alone on its line stays a name, and so
    does `not` at the end of a line, so old programs with such names read as before.
    """
    kind = WORD_OPERATORS.get(raw[index].text)
    if kind is None:
        return None
    following = raw[index + 1] if index + 1 < len(raw) else None
    if following is not None and following.kind == "NEWLINE":
        if kind == "NOT" or not done or done[-1].kind == "NEWLINE":
            return None
        following = _significant(raw, index + 1, 1)
    if following is None or following.kind not in STARTS_OPERAND:
        return None
    before = _previous(done)
    ends = before is not None and before.kind in ENDS_OPERAND
    if kind == "NOT":
        return None if ends or (before is not None and before.kind in ("DOT", "PIPE")) else kind
    return kind if ends else None


def _type_call_closer(raw: list[Token], index: int, closers: dict[int, int]) -> int | None:
    """For `<` at `index`: the index of its `>` when `<…>` reads as type arguments
    (`Set<Int>(…)`, `SortedMap<String, List<Int>>(…)`), else None: names and commas
    between balanced brackets, and after them `(` or no operand (`a < b > c` compares)."""
    position = closers.get(index)
    if position is None:
        return None
    following = _significant(raw, position + 1, 1)
    if following is None or following.kind not in STARTS_OPERAND - {"LPAR"}:
        return position
    return None


def _bracket_closers(raw: list[Token]) -> dict[int, int]:
    """Each `<` and its matching `>` in runs of names, commas, newlines, `<` and `>`, all in
    one pass (scanning ahead from every `<` is quadratic in a run like `a < b < c < …`)."""
    closers: dict[int, int] = {}
    opened: list[int] = []
    for position, token in enumerate(raw):
        kind = token.kind
        if kind == "LT":
            opened.append(position)
        elif kind == "GT":
            if opened:
                closers[opened.pop()] = position
        elif kind not in ("IDENT", "COMMA", "NEWLINE"):
            opened.clear()
    return closers


def _starts_statement(done: list[Token], depth: int) -> bool:
    before = _previous(done)
    return depth == 0 and (
        before is None or (done[-1].kind == "NEWLINE" and before.kind not in CONTINUES_AFTER)
    )


def _classify(raw: list[Token]) -> list[Token]:
    """Every token with its kind in context (newlines kept): contextual keywords, word
    operators, `(` opening a lambda's parameters, and `<`/`>` as type brackets (LT/GT) or
    comparisons (LESS/GREATER). Type brackets are those of a declaration, of an
    annotation up to its `=`, and of a type call; there a `>=` is a closing `>` and `=`."""
    done: list[Token] = []
    depth = 0
    context: str | None = None  # "declaration" or "annotation": where `<` opens type arguments
    types_until = -1  # inside a type call's brackets, every `<` and `>` is a bracket
    closers: dict[int, int] | None = None  # `<` -> its `>`, found when the first `<` is met
    for index, token in enumerate(raw):
        kind = token.kind
        bracket = context is not None or index <= types_until
        if kind == "NEWLINE":
            before = _previous(done)
            if depth == 0 and (before is None or before.kind not in CONTINUES_AFTER):
                context = None
        elif kind == "IDENT":
            if token.text in _SPECIAL_WORDS:
                kind = _word_operator(raw, index, done) or _contextual_kind(raw, index)
                abstract = bool(done) and done[-1].kind == "ABSTRACT"
                if kind == "TYPE" and (abstract or _starts_statement(done, depth)):
                    context = "declaration"
            if kind == "IDENT" and context is None and depth == 0:
                following = _significant(raw, index + 1, 1)
                if following is not None and following.kind == "COLON":
                    context = "annotation" if _starts_statement(done, depth) else None
        elif kind == "LPAR" and _opens_lambda(raw, index):
            kind = "LAMBDA_LPAR"
        elif kind == "LT" and not bracket:
            if closers is None:
                closers = _bracket_closers(raw)
            closer = (
                _type_call_closer(raw, index, closers)
                if done and done[-1].kind == "IDENT"
                else None
            )
            if closer is None:
                kind = "LESS"
            else:
                types_until = closer
        elif kind == "GT" and not bracket:
            kind = "GREATER"
        elif kind == "GE" and bracket:
            start, end = token.span.start, token.span.end
            done.append(Token("GT", ">", Span(start, start + 1)))
            depth = max(0, depth - 1)
            token, kind = Token("EQ", "=", Span(start + 1, end)), "EQ"
        if kind == "EQ" and depth == 0 and context == "annotation":
            context = None
        if kind in OPENERS:
            depth += 1
        elif kind in CLOSERS:
            depth = max(0, depth - 1)
        done.append(
            token if kind == token.kind else Token(kind, token.text, token.span, token.value)
        )
    return done


def layout(raw: list[Token]) -> list[Token]:
    """Keep the newlines that end statements, mark contextual keywords, bound nesting."""
    tokens = _classify(raw)
    result: list[Token] = []
    depth = 0
    for index, token in enumerate(tokens):
        if token.kind == "NEWLINE":
            previous = result[-1] if result else None
            following = _significant(tokens, index + 1, 1)
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
        kind = token.kind
        if kind in OPENERS:
            depth += 1
            if depth > MAX_NESTING:
                raise HqlError(syntax(messages.nesting_too_deep(MAX_NESTING), token.span))
        elif kind in CLOSERS:
            depth = max(0, depth - 1)
        result.append(token)
    return result


def tokenize(text: str) -> list[Token]:
    return layout(scan(text))


def iter_highlight_tokens(text: str) -> Iterator[Token]:
    """Tokens for highlighting: as many as can be read, stopping quietly at a lexical error."""
    scanner = _Scanner(text)
    with contextlib.suppress(HqlError):
        scanner.run()
    yield from scanner.tokens


def _integer(literal: str) -> int | None:
    """The value of an integer literal, None outside the signed 64-bit range.

    Long digit strings are refused by their length before `int()` sees them
    (Python refuses to convert more than a few thousand digits).
    """
    digits = literal.lstrip("+-").replace("_", "").lstrip("0")
    if len(digits) > 19:
        return None
    number = int(literal)
    return number if -(2**63) <= number < 2**63 else None
