"""The syntax tree: frozen nodes with slots, a span on every node.

Nodes compare by identity so later phases can key tables by node. `node`
turns an annotated class into such a node (like a frozen dataclass with
slots): every `hql` command imports this module, and dataclasses' general
machinery would triple the time that takes.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar, cast, dataclass_transform

from hql.record import slot_setter
from hql.source import Span

T = TypeVar("T")
_MISSING = object()


class FrozenNodeError(AttributeError):
    pass


@dataclass_transform(frozen_default=True, eq_default=False)
def node(cls: type[T]) -> type[T]:
    """Give a node class its slots and an `__init__` taking its fields, the base's first, in order."""
    inherited: tuple[str, ...] = getattr(cls, "_fields", ())
    annotations = cls.__dict__.get("__annotations__", {})
    own = tuple(name for name in annotations if name not in inherited and not name.startswith("_"))
    fields = inherited + own
    defaults = {**getattr(cls, "_defaults", {})}
    namespace = {
        key: value for key, value in cls.__dict__.items() if key not in ("__dict__", "__weakref__")
    }
    for name in own:
        if name in namespace:
            defaults[name] = namespace.pop(name)
    params = ", ".join(
        f"{name}=_defaults[{name!r}]" if name in defaults else name for name in fields
    )
    # `_set{at}`: the field's slot setter, bound once the class exists.
    body = (
        "".join(f"    _set{at}(self, {name})\n" for at, name in enumerate(fields)) or "    pass\n"
    )
    scope: dict[str, Any] = {"_defaults": defaults}
    exec(f"def __init__(self, {params}):\n{body}", scope)  # noqa: S102 - code built from field names only
    namespace.update(__slots__=own, _fields=fields, _defaults=defaults, __init__=scope["__init__"])
    namespace["__init__"].__qualname__ = f"{cls.__qualname__}.__init__"
    metaclass: Any = type(cls)
    built = metaclass(cls.__name__, cls.__bases__, namespace)
    for at, name in enumerate(fields):
        scope[f"_set{at}"] = slot_setter(built, name)
    return cast(type[T], built)


@node
class Node:
    span: Span

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenNodeError(f"a syntax-tree node is immutable; cannot set `{name}`")

    def __delattr__(self, name: str) -> None:
        raise FrozenNodeError(f"a syntax-tree node is immutable; cannot delete `{name}`")

    _fields: ClassVar[tuple[str, ...]]


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
class Arithmetic(Expr):
    """`a - b`, `a * b`, `a / b`, `a % b` (`+` is `Add`, as in the reference)."""

    op: str
    op_span: Span
    left: Expr
    right: Expr


@node
class Compare(Expr):
    """`a < b`, `a <= b`, `a > b`, `a >= b`: ordering (equality is `Equality`)."""

    op: str
    op_span: Span
    left: Expr
    right: Expr


@node
class Logic(Expr):
    """`a and b`, `a or b`: short-circuit, the other side deciding when one is absent."""

    op: str
    op_span: Span
    left: Expr
    right: Expr


@node
class Not(Expr):
    operand: Expr


@node
class Negative(Expr):
    """Unary minus on any expression: `-x`, `-(a + b)`."""

    operand: Expr


@node
class Otherwise(Expr):
    """`a ?? b`: `a` when it is present, else `b`."""

    op_span: Span
    left: Expr
    right: Expr


@node
class Param(Expr):
    """`$name`: a value the caller supplies with the program."""

    name: str


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
