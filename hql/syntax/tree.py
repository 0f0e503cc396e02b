"""The syntax tree: frozen dataclasses, a span on every node.

Nodes compare by identity so later phases can key tables by node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, dataclass_transform

from hql.source import Span

T = TypeVar("T")


@dataclass_transform(frozen_default=True, eq_default=False)
def node(cls: type[T]) -> type[T]:
    """A syntax-tree node: frozen, compared by identity, with slots.

    The one `__repr__` is `Node`'s: a generated one per class would double the
    time the module takes to import, and every `hql` command imports it.
    """
    return dataclass(frozen=True, eq=False, slots=True, repr=False)(cls)


@node
class Node:
    span: Span

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__dataclass_fields__)
        return f"{type(self).__name__}({fields})"


# --- types as written ------------------------------------------------------


@node
class TypeExpr(Node):
    name: str
    args: tuple[TypeExpr, ...] = ()

    def __str__(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}<{', '.join(str(arg) for arg in self.args)}>"


# --- expressions -----------------------------------------------------------


@node
class Expr(Node):
    pass


@node
class IntLit(Expr):
    value: int


@node
class FloatLit(Expr):
    value: float


@node
class BoolLit(Expr):
    value: bool


@node
class StringLit(Expr):
    value: str


@node
class DocRef(Expr):
    name: str


@node
class Name(Expr):
    name: str


@node
class Lambda(Expr):
    params: tuple[str, ...]
    body: Expr


@node
class DataEntry(Node):
    key: str
    value: Expr


@node
class DataLit(Expr):
    entries: tuple[DataEntry, ...]


@node
class ListLit(Expr):
    items: tuple[Expr, ...]


@node
class SetLit(Expr):
    items: tuple[Expr, ...]


@node
class Add(Expr):
    left: Expr
    right: Expr


@node
class Equality(Expr):
    negated: bool
    left: Expr
    right: Expr


@node
class EdgeLit(Expr):
    source: Expr
    target: Expr
    data: DataLit | None


@node
class Field(Expr):
    receiver: Expr
    name: str
    name_span: Span


@node
class Argument(Node):
    name: str | None
    value: Expr


@node
class Call(Expr):
    callee: Expr
    args: tuple[Argument, ...]


@node
class TypeCall(Expr):
    """`Set<Int>([])`: a constructor with explicit type arguments."""

    name: str
    types: tuple[TypeExpr, ...]
    args: tuple[Argument, ...]


@node
class Stage(Node):
    """One step after `|`: `name`, `name(args)`, `ext.name` or `ext.name(args)`."""

    extension: str | None
    name: str
    name_span: Span
    args: tuple[Argument, ...] | None


@node
class Pipe(Expr):
    input: Expr
    stage: Stage


# --- statements ------------------------------------------------------------


@node
class Statement(Node):
    pass


@node
class ExprStatement(Statement):
    expr: Expr


@node
class Import(Statement):
    name: str
    name_span: Span


@node
class Binding(Statement):
    name: str
    name_span: Span
    annotation: TypeExpr | None
    value: Expr


@node
class FieldDecl(Node):
    name: str
    optional: bool
    type: TypeExpr


@node
class Declaration(Statement):
    name: str
    name_span: Span
    params: tuple[str, ...]
    abstract: bool
    supertypes: tuple[TypeExpr, ...]
    fields: tuple[FieldDecl, ...]
    union: tuple[TypeExpr, ...]
    bounds: tuple[tuple[str, TypeExpr], ...]


@node
class Program(Node):
    statements: tuple[Statement, ...]
