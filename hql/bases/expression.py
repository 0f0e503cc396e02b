"""Obsidian Bases expressions (`file.hasTag("a") && rating > 3`): tokens and a tree.

The grammar is the one Bases documents (Bases syntax, Functions): literals
(strings in single or double quotes, numbers, `true`, `false`, `null`),
names (`author`, `note.author`, `file.name`, `formula.Total`, `this`), member
access `a.b`, calls `f(x)` and `a.method(x)`, indexing `a[0]`, unary `!` and
`-`, `* / %`, `+ -`, comparisons `== != < <= > >=`, `&&`, `||`, and
parentheses. Every node keeps its character span in the expression text, so
reports can point into the `.base` file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hql import messages


class BaseSyntaxError(Exception):
    def __init__(self, message: str, start: int, end: int) -> None:
        super().__init__(message)
        self.start, self.end = start, end


@dataclass(frozen=True)
class Node:
    start: int
    end: int


@dataclass(frozen=True)
class Literal(Node):
    value: object


@dataclass(frozen=True)
class Name(Node):
    name: str


@dataclass(frozen=True)
class Member(Node):
    receiver: Node
    name: str


@dataclass(frozen=True)
class Index(Node):
    receiver: Node
    index: Node


@dataclass(frozen=True)
class Call(Node):
    callee: Node  # a Name (a function) or a Member (a method)
    args: tuple[Node, ...] = field(default=())


@dataclass(frozen=True)
class Unary(Node):
    op: str
    operand: Node


@dataclass(frozen=True)
class Binary(Node):
    op: str
    left: Node
    right: Node


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<number>\d+(?:\.\d+)?)
    | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%<>!().,\[\]])
    )""",
    re.X,
)
_BINARY = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
}


@dataclass
class _Token:
    kind: str
    text: str
    start: int
    end: int


def tokens(text: str) -> list[_Token]:
    found: list[_Token] = []
    at = 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        match = _TOKEN.match(text, at)
        if match is None or match.lastgroup is None:
            where = len(text) - len(text[at:].lstrip())
            raise BaseSyntaxError(messages.base_bad_character(text[where]), where, where + 1)
        kind = match.lastgroup
        found.append(_Token(kind, match.group(kind), match.start(kind), match.end(kind)))
        at = match.end()
    found.append(_Token("end", "", len(text), len(text)))
    return found


def parse(text: str) -> Node:
    parser = _Parser(tokens(text))
    node = parser.expression(0)
    last = parser.peek()
    if last.kind != "end":
        raise BaseSyntaxError(messages.base_unexpected(last.text), last.start, last.end)
    return node


class _Parser:
    def __init__(self, found: list[_Token]) -> None:
        self.found = found
        self.at = 0

    def peek(self) -> _Token:
        return self.found[self.at]

    def take(self) -> _Token:
        token = self.found[self.at]
        self.at += 1
        return token

    def expect(self, text: str) -> _Token:
        token = self.take()
        if token.text != text or token.kind not in ("op",):
            shown = token.text or messages.base_end_of_expression()
            raise BaseSyntaxError(messages.base_expected(text, shown), token.start, token.end)
        return token

    def expression(self, floor: int) -> Node:
        left = self.unary()
        while True:
            token = self.peek()
            power = _BINARY.get(token.text) if token.kind == "op" else None
            if power is None or power <= floor:
                return left
            self.take()
            right = self.expression(power)
            left = Binary(left.start, right.end, token.text, left, right)

    def unary(self) -> Node:
        token = self.peek()
        if token.kind == "op" and token.text in ("!", "-"):
            self.take()
            operand = self.unary()
            return Unary(token.start, operand.end, token.text, operand)
        return self.postfix(self.primary())

    def primary(self) -> Node:
        token = self.take()
        if token.kind == "number":
            value: object = float(token.text) if "." in token.text else int(token.text)
            return Literal(token.start, token.end, value)
        if token.kind == "string":
            return Literal(token.start, token.end, _unquote(token.text))
        if token.kind == "name":
            if token.text in ("true", "false"):
                return Literal(token.start, token.end, token.text == "true")
            if token.text == "null":
                return Literal(token.start, token.end, None)
            return Name(token.start, token.end, token.text)
        if token.text == "(":
            inner = self.expression(0)
            close = self.expect(")")
            return _spanned(inner, token.start, close.end)
        shown = token.text or messages.base_end_of_expression()
        raise BaseSyntaxError(
            messages.base_unexpected(shown), token.start, max(token.end, token.start + 1)
        )

    def postfix(self, node: Node) -> Node:
        while True:
            token = self.peek()
            if token.text == "." and token.kind == "op":
                self.take()
                name = self.take()
                if name.kind != "name":
                    raise BaseSyntaxError(
                        messages.base_expected("a name", name.text or "the end"),
                        name.start,
                        name.end,
                    )
                node = Member(node.start, name.end, node, name.text)
            elif token.text == "(" and token.kind == "op":
                self.take()
                args: list[Node] = []
                if self.peek().text != ")":
                    args.append(self.expression(0))
                    while self.peek().text == ",":
                        self.take()
                        args.append(self.expression(0))
                close = self.expect(")")
                node = Call(node.start, close.end, node, tuple(args))
            elif token.text == "[" and token.kind == "op":
                self.take()
                index = self.expression(0)
                close = self.expect("]")
                node = Index(node.start, close.end, node, index)
            else:
                return node


def _spanned(node: Node, start: int, end: int) -> Node:
    """The node of a parenthesised expression, its span widened to the parentheses."""
    import dataclasses

    return dataclasses.replace(node, start=start, end=end)


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)
