"""The operators of everyday.md section 1: their typing rules and their evaluation.

The checker asks `*_type` for the type of an operation (None when the operands do not
fit, and the checker reports it); the interpreter calls the evaluation functions, which
raise `OperatorFailure` for overflow and division by zero. An absent operand gives an
absent result (absence lifting), except where a rule below says otherwise.
"""

from __future__ import annotations

import operator
from typing import Any

from hql import types as ty
from hql.types import Type
from hql.values import ABSENT, Data, Date

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
ORDERED = (ty.INT, ty.FLOAT, ty.STRING, ty.DATE)
NUMBERS = (ty.INT, ty.FLOAT)


class OperatorFailure(Exception):
    """An evaluation failure of an operator; the interpreter adds the span."""


class WrongKind(Exception):
    """A Data operand holds a value of another kind than the comparison needs."""


def _optional(*types: Type) -> bool:
    return any(t.name == "Option" for t in types)


def _lift(result: Type | None, *operands: Type) -> Type | None:
    return ty.option(result) if result is not None and _optional(*operands) else result


# --- typing ----------------------------------------------------------------------------


def arithmetic_type(op: str, left: Type, right: Type) -> Type | None:
    """`+ - * / %` on two Int or two Float; `+` also on Strings; dates shift by Int days."""
    a, b = ty.strip_option(left), ty.strip_option(right)
    result: Type | None = None
    if a == b and a in NUMBERS:
        if op != "%" or a == ty.INT:
            result = ty.FLOAT if op == "/" else a
    elif op == "+" and a == b == ty.STRING:
        result = ty.STRING
    elif op in "+-" and a == ty.DATE and b == ty.INT:
        result = ty.DATE
    elif op == "-" and a == b == ty.DATE:
        result = ty.INT
    return _lift(result, left, right)


def order_type(left: Type, right: Type) -> Type | None:
    """`< <= > >=` on two values of one of Int, Float, String, Date; Data is typed when run."""
    a, b = ty.strip_option(left), ty.strip_option(right)
    if a == b and a in ORDERED:
        return _lift(ty.BOOL, left, right)
    if ty.DATA in (a, b) and {a, b} <= {*ORDERED, ty.DATA}:
        return ty.option(ty.BOOL)  # a Data value may be empty
    return None


def logic_type(left: Type, right: Type) -> Type | None:
    if ty.strip_option(left) == ty.strip_option(right) == ty.BOOL:
        return _lift(ty.BOOL, left, right)
    return None


def not_type(operand: Type) -> Type | None:
    if ty.strip_option(operand) == ty.DATA:  # `not t.done` on front matter or a task: run time
        return ty.option(ty.BOOL)
    return operand if ty.strip_option(operand) == ty.BOOL else None


def negative_type(operand: Type) -> Type | None:
    return operand if ty.strip_option(operand) in NUMBERS else None


def otherwise_type(left: Type, right: Type) -> Type | None:
    """`a ?? b`: the common type of `a` (present) and `b`; optional only when `b` is."""
    joined = ty.join(ty.strip_option(left), ty.strip_option(right))
    if joined is None:
        return None
    return ty.option(joined) if right.name == "Option" else joined


# --- evaluation --------------------------------------------------------------------------


def is_absent(value: Any) -> bool:
    """Absent, or a Data value holding nothing (an empty front-matter field)."""
    return value is ABSENT or (isinstance(value, Data) and value.tree is None)


def checked_int(value: int) -> int:
    if not INT_MIN <= value <= INT_MAX:
        raise OperatorFailure("overflow")
    return value


def checked_float(value: float) -> float:
    if value in (float("inf"), float("-inf")) or value != value:
        raise OperatorFailure("overflow")
    return value


def _number(value: int | float) -> int | float:
    return checked_float(value) if isinstance(value, float) else checked_int(value)


def add(left: Any, right: Any) -> Any:
    if type(left) is int and type(right) is int:  # the common case, as `_number` decides it
        return checked_int(left + right)
    if left is ABSENT or right is ABSENT:
        return ABSENT
    if isinstance(left, Date):
        return _shift(left, right)
    if isinstance(left, str):
        return left + right
    return _number(left + right)


def arithmetic(op: str, left: Any, right: Any) -> Any:
    """`- * / %` (both operands present and of the types the checker allowed)."""
    if left is ABSENT or right is ABSENT:
        return ABSENT
    if op == "-":
        if isinstance(left, Date):
            if isinstance(right, Date):
                from hql.dates import days_between

                return checked_int(days_between(left, right))
            return _shift(left, -right)
        return _number(left - right)
    if op == "*":
        return _number(left * right)
    if right == 0:
        raise OperatorFailure("division by zero" if op == "/" else "remainder by zero")
    if op == "/":
        return checked_float(left / right)
    remainder = abs(left) % abs(right)  # the sign of the dividend, as Rust, C and SQL do
    return -remainder if left < 0 else remainder


def _shift(date: Date, days: int) -> Date:
    from hql.dates import shift

    try:
        return shift(date, days)
    except OverflowError:
        raise OperatorFailure("date out of range") from None


def negative(value: Any) -> Any:
    if value is ABSENT:
        return ABSENT
    return _number(-value)


def logical_not(value: Any) -> Any:
    if isinstance(value, Data):  # a Data holding a Bool; anything else has no negation
        return not value.tree if isinstance(value.tree, bool) else ABSENT
    return ABSENT if value is ABSENT else not value


def _plain(value: Any) -> Any:
    """A comparison operand without its Data wrapper: a number, a string or a date."""
    if isinstance(value, Data):
        tree = value.tree
        if isinstance(tree, int | float | str) and not isinstance(tree, bool):
            return tree
        raise WrongKind
    return value


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "date" if isinstance(value, Date) else "other"


def order(op: str, left: Any, right: Any) -> Any:
    """`< <= > >=`; absent when either side is; WrongKind when a Data side does not fit."""
    if type(left) is int and type(right) is int:  # the common case, as below decides it
        return _INTEGER_TESTS[op](left, right)
    if is_absent(left) or is_absent(right):
        return ABSENT
    a, b = _plain(left), _plain(right)
    if isinstance(a, Date) and isinstance(b, str):
        b = _date_text(b)
    elif isinstance(b, Date) and isinstance(a, str):
        a = _date_text(a)
    kind = _kind(a)
    if kind != _kind(b) or kind in ("bool", "other"):
        raise WrongKind
    if kind == "date":
        from hql.dates import compare

        sign = compare(a, b)
    else:
        sign = (a > b) - (a < b)
    return {"<": sign < 0, "<=": sign <= 0, ">": sign > 0, ">=": sign >= 0}[op]


_INTEGER_TESTS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _date_text(text: str) -> Date:
    """Front matter's dates arrive as text: such text compares with a Date as the date it names."""
    from hql.dates import parse

    parsed = parse(text)
    if parsed is None:
        raise WrongKind
    return parsed
