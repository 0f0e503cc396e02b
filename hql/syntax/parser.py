"""Parsing: tokens to a syntax tree, by LALR(1) over tables Lark computed from grammar/hql.lark.

Lark analyses the grammar once, ahead of time (`python -m hql.syntax.build_tables`
writes hql/syntax/tables.py); at run time a small driver walks those tables over
the tokens of `tokens.tokenize`, so starting `hql` costs no grammar analysis and
no Lark import. The tree is built as Lark's LALR front end builds it with
`_Builder` as its transformer: `?rule`s with a single child collapse, and the
helper rules of `*`/`+` repetitions hand their children to the parent.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from hql import messages
from hql.diagnostics import HqlError, syntax
from hql.source import Span
from hql.syntax import tree as t
from hql.syntax.tokens import CLOSERS, COMPARISONS, DESCRIPTIONS, OPENERS, Token, tokenize

MAX_ADDITIONS = 255
EXPRESSION_STARTS = {"INT", "FLOAT", "STRING", "DOCREF", "IDENT", "TRUE", "FALSE", "LSQB", "LBRACE"}


def grammar_text() -> str:
    """The grammar file: installed as `hql/grammar/`, or at the top of a checkout."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "grammar" / "hql.lark", package.parent / "grammar" / "hql.lark"):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    from importlib import resources  # a zipped install; importing this costs ~5 ms, so only here

    return resources.files("hql.grammar").joinpath("hql.lark").read_text(encoding="utf-8")


class _Inline(list[Any]):
    """The children of a repetition's helper rule, which the parent rule takes as its own."""


class _Unexpected(Exception):
    def __init__(self, token: Token | None, expected: set[str]) -> None:
        super().__init__()
        self.token = token  # None at the end of the input
        self.expected = expected


@cache
def _tables() -> tuple[Any, ...]:
    """(start, end, rules with their callbacks, actions, collapse memo); recomputed by Lark if
    the grammar changed."""
    import zlib  # a checksum is enough to notice an edit, and costs far less to import than hashlib

    from hql.syntax import tables

    grammar = grammar_text()
    data: dict[str, Any] = vars(tables)
    if zlib.crc32(grammar.encode("utf-8")) != tables.GRAMMAR_CRC32:
        from hql.syntax.build_tables import compute  # edited without regenerating: analyse it now

        data = compute(grammar)
    builder = _Builder()
    rules = tuple(
        (origin, length, expand, callback.startswith("_"), getattr(builder, callback, None))
        for origin, callback, length, expand in data["RULES"]
    )
    collapsed: dict[tuple[int, int, str], int] = {}  # see _collapse; valid for these tables only
    return data["START"], data["END"], rules, data["ACTIONS"], collapsed


def _collapse(rules: Any, actions: Any, below: int, top: int, kind: str) -> int:
    """The top state once the one-child `?rule` reductions ahead of `kind` are done.

    The driver remembers it per (state below, state on top, lookahead): an operand climbs
    the whole precedence ladder (about ten collapses) once per distinct context, not once
    per occurrence.
    """
    while True:
        code = actions[top].get(kind)
        if code is None or code >= 0:
            return top
        origin, length, expand, inline, _ = rules[-code - 1]
        if not (length == 1 and expand and not inline):
            return top
        top = actions[below][origin]


def _drive(tokens: list[Token]) -> Any:
    start, end_state, rules, actions, collapsed = _tables()
    states = [start]
    values: list[Any] = []
    for token in [*tokens, None]:
        kind = "$END" if token is None else token.kind
        while True:
            row = actions[states[-1]]
            code = row.get(kind)
            if code is None:
                raise _Unexpected(token, {symbol for symbol in row if symbol.isupper()})
            if code >= 0:
                states.append(code)
                values.append(token)
                break
            origin, length, expand, inline, callback = rules[-code - 1]
            if length == 1 and expand and not inline and not isinstance(values[-1], _Inline):
                # a `?rule` with one child (most of the precedence ladder): the child stays
                key = (states[-2], states[-1], kind)
                found = collapsed.get(key)
                if found is None:
                    found = collapsed[key] = _collapse(rules, actions, *key)
                states[-1] = found
                continue
            children: list[Any] = []
            if length:
                taken = values[-length:]
                if isinstance(taken[0], _Inline):
                    # A repetition grows its helper's list in place: an _Inline is
                    # consumed exactly once, so `a, b, c, …` parses in linear time.
                    children = taken[0]
                    taken = taken[1:]
                for child in taken:
                    if isinstance(child, _Inline):
                        children.extend(child)
                    else:
                        children.append(child)
                del values[-length:]
                del states[-length:]
            if inline:
                value: Any = children if isinstance(children, _Inline) else _Inline(children)
            else:
                if isinstance(children, _Inline):
                    children = list(children)
                # every rule that builds a node has a method
                value = children[0] if expand and len(children) == 1 else callback(children)
            states.append(actions[states[-1]][origin])
            values.append(value)
            if token is None and states[-1] == end_state:
                return values[-1]
    raise AssertionError("the tables accept only at the end of the input")  # pragma: no cover


def parse(text: str) -> t.Program:
    """Parse a whole program; raises HqlError carrying a syntax report."""
    tokens = tokenize(text)
    end = len(text.encode("utf-8"))
    if not tokens:
        raise HqlError(syntax(messages.expected_expression(), Span(end, end)))
    try:
        program = _drive(tokens)
    except _Unexpected as error:
        raise HqlError(_syntax_report(error, end, tokens)) from None
    assert isinstance(program, t.Program)
    return program


def _syntax_report(error: _Unexpected, end: int, tokens: list[Token]) -> Any:
    ours = error.token
    expected = error.expected
    if ours is None:
        span, found = Span(end, end), DESCRIPTIONS["$END"]
    else:
        span, found = ours.span, _describe_found(ours)
        if ours.kind in COMPARISONS and _chained(tokens, ours):
            return syntax(messages.comparisons_do_not_chain(ours.text), span)
        # LALR merges lookaheads, so inside brackets "end of statement" would mislead: name the closer.
        closing = _inside_brackets(tokens, span.start)
        if closing and not expected & EXPRESSION_STARTS - {"LBRACE"}:
            return syntax(messages.expected_one_of(closing, found), span)
    if expected == {"IDENT"}:
        return syntax(messages.expected_one_of([DESCRIPTIONS["IDENT"]], found), span)
    ends_statement = "NEWLINE" in expected or "$END" in expected
    if ends_statement and ours is not None:
        return syntax(messages.expected_end_of_statement(found), span)
    if expected & EXPRESSION_STARTS:
        return syntax(messages.expected_expression(found if ours is not None else None), span)
    wanted = sorted(DESCRIPTIONS.get(name, name) for name in expected)
    return syntax(messages.expected_one_of(wanted, found), span)


# What ends a comparison's left side: an operator that binds more loosely, or a bracket.
_LOOSER = {"PIPE", "ARROW", "QQ", "OR", "AND", "NOT", "COMMA", "EQ", "FATARROW", "NEWLINE", "COLON"}


def _chained(tokens: list[Token], operator: Token) -> bool:
    """Whether the unexpected comparison `operator` follows another one in the same operand."""
    depth = 0
    for token in reversed(tokens[: tokens.index(operator)]):
        if token.kind in CLOSERS:
            depth += 1
        elif token.kind in OPENERS:
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and token.kind in COMPARISONS:
            return True
        elif depth == 0 and token.kind in _LOOSER:
            return False
    return False


_CLOSER = {"LPAR": "`)`", "LAMBDA_LPAR": "`)`", "LSQB": "`]`", "LBRACE": "`}`", "LT": "`>`"}
_ENDS_CALLEE = {"IDENT", "RPAR", "RSQB", "GT", "STRING", "DOCREF"}


def _inside_brackets(tokens: list[Token], offset: int) -> list[str]:
    """What may come next inside the innermost bracket open at `offset`: `,` (where lists go) and its closer."""
    openers: list[tuple[str, bool]] = []
    previous = ""
    for token in tokens:
        if token.span.start >= offset:
            break
        if token.kind in _CLOSER:
            # `(` lists things only as a call's arguments, not around an expression
            listing = token.kind != "LPAR" or previous in _ENDS_CALLEE
            openers.append((token.kind, listing))
        elif token.kind in CLOSERS and openers:
            openers.pop()
        previous = token.kind
    if not openers:
        return []
    kind, listing = openers[-1]
    return ["`,`", _CLOSER[kind]] if listing else [_CLOSER[kind]]


def _describe_found(token: Token) -> str:
    if token.kind == "NEWLINE":
        return DESCRIPTIONS["NEWLINE"]
    return f"`{token.text}`"


def _span(item: Any) -> Span:
    return item.span


def _value(token: Token) -> Any:
    return token.value


def _text(token: Token) -> str:
    return token.text


def _joined(items: list[Any]) -> Span:
    spans = [_span(item) for item in items]
    return Span(spans[0].start, spans[-1].end)


def _no_punctuation(items: list[Any]) -> list[Any]:
    return [item for item in items if not isinstance(item, Token) or item.kind not in _PUNCT]


_PUNCT = {
    "COMMA",
    "LPAR",
    "RPAR",
    "LBRACE",
    "RBRACE",
    "LSQB",
    "RSQB",
    "LT",
    "GT",
    "COLON",
    "EQ",
    "FATARROW",
    "LAMBDA_LPAR",
    "PIPE",
    "PLUS",
    "QMARK",
}


class _Builder:
    """Builds our syntax tree as the parser reduces: one method per rule (or alias)."""

    # statements

    def start(self, items: list[Any]) -> t.Program:
        statements = [item for item in items if not isinstance(item, Token)]
        program = [
            s if isinstance(s, t.Statement) else t.ExprStatement(s.span, s) for s in statements
        ]
        return t.Program(_joined(program), tuple(program))

    def import_stmt(self, items: list[Any]) -> t.Import:
        keyword, name = items
        return t.Import(_joined(items), _text(name), _span(name))

    def annotation(self, items: list[Any]) -> t.TypeExpr:
        return items[1]

    def binding(self, items: list[Any]) -> t.Binding:
        name = items[0]
        annotation = items[1] if isinstance(items[1], t.TypeExpr) else None
        value = items[-1]
        return t.Binding(_joined(items), _text(name), _span(name), annotation, value)

    # expressions

    def pipeline(self, items: list[Any]) -> t.Expr:
        links = [item for item in items if not (isinstance(item, Token) and item.kind == "PIPE")]
        result: t.Expr = links[0]
        for link in links[1:]:
            result = t.Pipe(Span(result.span.start, link.span.end), result, _as_stage(link))
        return result

    def edge(self, items: list[Any]) -> t.EdgeLit:
        source, _, target, *rest = items
        return t.EdgeLit(_joined(items), source, target, rest[0] if rest else None)

    def equal(self, items: list[Any]) -> t.Equality:
        return t.Equality(_joined(items), False, items[0], items[2])

    def not_equal(self, items: list[Any]) -> t.Equality:
        return t.Equality(_joined(items), True, items[0], items[2])

    def add(self, items: list[Any]) -> t.Expr:
        operands = items[::2]
        if len(operands) - 1 > MAX_ADDITIONS:
            raise HqlError(syntax(messages.too_many_additions(), operands[MAX_ADDITIONS + 1].span))
        return self.multiply(items)

    def multiply(self, items: list[Any]) -> t.Expr:
        """A left-associative chain `a op b op c …` (`+` builds the reference's `Add`)."""
        result: t.Expr = items[0]
        for operator, operand in zip(items[1::2], items[2::2], strict=True):
            span = Span(result.span.start, operand.span.end)
            if operator.kind == "PLUS":
                result = t.Add(span, result, operand)
            else:
                result = t.Arithmetic(span, operator.text, operator.span, result, operand)
        return result

    def order(self, items: list[Any]) -> t.Compare:
        left, operator, right = items
        return t.Compare(_joined(items), operator.text, operator.span, left, right)

    def either(self, items: list[Any]) -> t.Logic:
        left, operator, right = items
        return t.Logic(_joined(items), "or", operator.span, left, right)

    def both(self, items: list[Any]) -> t.Logic:
        left, operator, right = items
        return t.Logic(_joined(items), "and", operator.span, left, right)

    def logical_not(self, items: list[Any]) -> t.Not:
        return t.Not(_joined(items), items[1])

    def negative(self, items: list[Any]) -> t.Negative:
        return t.Negative(_joined(items), items[1])

    def otherwise(self, items: list[Any]) -> t.Otherwise:
        left, operator, right = items
        return t.Otherwise(_joined(items), operator.span, left, right)

    def parameter(self, items: list[Any]) -> t.Param:
        return t.Param(_span(items[0]), _value(items[0]))

    def field(self, items: list[Any]) -> t.Field:
        receiver, _, name = items
        return t.Field(_joined(items), receiver, _text(name), _span(name))

    def call(self, items: list[Any]) -> t.Call:
        callee, (args, span) = items
        return t.Call(Span(callee.span.start, span.end), callee, args)

    def arguments(self, items: list[Any]) -> tuple[tuple[t.Argument, ...], Span]:
        args = tuple(
            arg if isinstance(arg, t.Argument) else t.Argument(arg.span, None, arg)
            for arg in _no_punctuation(items)
        )
        return args, _joined(items)

    def named_argument(self, items: list[Any]) -> t.Argument:
        name, _, value = items
        return t.Argument(_joined(items), _text(name), value)

    def integer(self, items: list[Any]) -> t.IntLit:
        return t.IntLit(_span(items[0]), _value(items[0]))

    def float_literal(self, items: list[Any]) -> t.FloatLit:
        return t.FloatLit(_span(items[0]), _value(items[0]))

    def true(self, items: list[Any]) -> t.BoolLit:
        return t.BoolLit(_span(items[0]), True)

    def false(self, items: list[Any]) -> t.BoolLit:
        return t.BoolLit(_span(items[0]), False)

    def string(self, items: list[Any]) -> t.StringLit:
        return t.StringLit(_span(items[0]), _value(items[0]))

    def docref(self, items: list[Any]) -> t.DocRef:
        return t.DocRef(_span(items[0]), _value(items[0]))

    def name(self, items: list[Any]) -> t.Name:
        return t.Name(_span(items[0]), _text(items[0]))

    def paren(self, items: list[Any]) -> t.Expr:
        """The inner expression, spanning its brackets: an operation on it ends where it was written."""
        opener, inner, closer = items
        parts = [getattr(inner, name) for name in inner._fields[1:]]
        return type(inner)(Span(opener.span.start, closer.span.end), *parts)

    def type_call(self, items: list[Any]) -> t.TypeCall:
        name = items[0]
        args, span = items[-1]
        types = tuple(item for item in items if isinstance(item, t.TypeExpr))
        return t.TypeCall(Span(_span(name).start, span.end), _text(name), types, args)

    def lambda_(self, items: list[Any]) -> t.Lambda:
        params = [item for item in items if isinstance(item, Token) and item.kind == "IDENT"]
        names = [_text(param) for param in params]
        for index, name in enumerate(names):
            if name in names[:index]:  # point at the repeated parameter
                raise HqlError(syntax(messages.lambda_params_distinct(), _span(params[index])))
        return t.Lambda(_joined(items), tuple(names), items[-1])

    def data(self, items: list[Any]) -> t.DataLit:
        return t.DataLit(_joined(items), tuple(_no_punctuation(items)))

    def data_entry(self, items: list[Any]) -> t.DataEntry:
        key, _, value = items
        return t.DataEntry(_joined(items), str(_value(key)), value)

    def list_literal(self, items: list[Any]) -> t.ListLit:
        return t.ListLit(_joined(items), tuple(_no_punctuation(items)))

    def set_literal(self, items: list[Any]) -> t.SetLit:
        return t.SetLit(_joined(items), tuple(_no_punctuation(items)))

    # types and declarations

    def type_expr(self, items: list[Any]) -> t.TypeExpr:
        args = tuple(item for item in items if isinstance(item, t.TypeExpr))
        return t.TypeExpr(_joined(items), _text(items[0]), args)

    def type_params(self, items: list[Any]) -> tuple[str, ...]:
        return _Spanned(
            tuple(_text(item) for item in items if item.kind == "IDENT"), _joined(items)
        )

    def supertypes(self, items: list[Any]) -> tuple[t.TypeExpr, ...]:
        return _Spanned(
            tuple(item for item in items if isinstance(item, t.TypeExpr)), _joined(items)
        )

    def record(self, items: list[Any]) -> tuple[t.FieldDecl, ...]:
        return _Spanned(
            tuple(item for item in items if isinstance(item, t.FieldDecl)), _joined(items)
        )

    def field_decl(self, items: list[Any]) -> t.FieldDecl:
        optional = any(isinstance(item, Token) and item.kind == "QMARK" for item in items)
        return t.FieldDecl(_joined(items), _text(items[0]), optional, items[-1])

    def bound(self, items: list[Any]) -> tuple[str, t.TypeExpr]:
        return _text(items[0]), items[-1]

    def bounds(self, items: list[Any]) -> tuple[tuple[str, t.TypeExpr], ...]:
        return tuple(
            item for item in items if isinstance(item, tuple) and not isinstance(item, Token)
        )

    def record_declaration(self, items: list[Any]) -> t.Declaration:
        return self._declaration(items, union=())

    def union_declaration(self, items: list[Any]) -> t.Declaration:
        members = tuple(item for item in items if isinstance(item, t.TypeExpr))
        return self._declaration(items, union=members)

    def _declaration(self, items: list[Any], union: tuple[t.TypeExpr, ...]) -> t.Declaration:
        tokens = [item for item in items if isinstance(item, Token)]
        name = next(token for token in tokens if token.kind == "IDENT")
        params: tuple[str, ...] = ()
        supertypes: tuple[t.TypeExpr, ...] = ()
        fields: tuple[t.FieldDecl, ...] = ()
        bounds: tuple[tuple[str, t.TypeExpr], ...] = ()
        for item in items:
            if isinstance(item, Token):
                continue
            if isinstance(item, tuple) and item and isinstance(item[0], str):
                params = item
            elif isinstance(item, tuple) and item and isinstance(item[0], t.TypeExpr) and not union:
                supertypes = item
            elif isinstance(item, tuple) and item and isinstance(item[0], t.FieldDecl):
                fields = item
            elif isinstance(item, tuple) and item and isinstance(item[0], tuple):
                bounds = item
        abstract = any(token.kind == "ABSTRACT" for token in tokens)
        ends = [_end_of(item) for item in items]
        span = Span(_span(items[0]).start, max(ends))
        return t.Declaration(
            span, _text(name), _span(name), params, abstract, supertypes, fields, union, bounds
        )


def _end_of(item: Any) -> int:
    """Where a declaration part ends; parts such as `<K>` or `where K: T` arrive as tuples."""
    if isinstance(item, _Spanned | Token):
        return item.span.end
    if isinstance(item, tuple):
        return max((_end_of(part) for part in item), default=-1)
    if isinstance(item, str):  # the name in a `where` bound
        return -1
    return _span(item).end


class _Spanned(tuple[Any, ...]):
    """A declaration part (`<K>`, `{ … }`) that remembers where it was written, brackets included."""

    span: Span

    def __new__(cls, parts: tuple[Any, ...], span: Span) -> _Spanned:
        spanned = super().__new__(cls, parts)
        spanned.span = span
        return spanned


# Rules are called by name; `lambda` is a Python keyword.
setattr(_Builder, "lambda", _Builder.lambda_)


def _as_stage(expr: t.Expr) -> t.Stage:
    """The expression after `|` must name a step: `name`, `ext.name`, optionally called."""
    args: tuple[t.Argument, ...] | None = None
    target = expr
    if isinstance(expr, t.Call):
        args, target = expr.args, expr.callee
    if isinstance(target, t.Name):
        return t.Stage(expr.span, None, target.name, target.span, args)
    if isinstance(target, t.Field) and isinstance(target.receiver, t.Name):
        return t.Stage(expr.span, target.receiver.name, target.name, target.name_span, args)
    raise HqlError(syntax(messages.expected_step(), expr.span))
