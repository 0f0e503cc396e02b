"""Date functions: `date(s)`, `today()`, `now()` and `format(d, pattern)` (everyday.md section 2).

Parsing and formatting live in hql/dates.py, imported when a program calls one of these,
so a program without dates never loads `datetime`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import types as ty
from hql.diagnostics import HqlError, evaluation, type_error
from hql.registry import REGISTRY, FunctionSpec
from hql.steps.functions import _positional
from hql.syntax import tree as t
from hql.types import Type
from hql.values import ABSENT, Data, Date

if TYPE_CHECKING:
    from hql.checker import Checker
    from hql.interpreter import Interpreter


def _optional(found: Type) -> bool:
    return found.name == "Option" or found == ty.DATA


def _date_typed(checker: Checker, expr: t.Node, args: Sequence[t.Argument], name: str) -> Type:
    """The first argument must be a Date; the result is optional when it is."""
    found = checker.plan.types[args[0].value]
    if ty.strip_option(found) != ty.DATE:
        raise HqlError(type_error(messages.date_argument(name, found), args[0].span))
    return found


# --- date(s) -----------------------------------------------------------------------------


def check_date(
    checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
) -> Type:
    (found,) = _positional(checker, "date", expr, args, 1)
    if ty.strip_option(found) not in (ty.STRING, ty.DATE, ty.DATA):
        raise HqlError(type_error(messages.date_text_argument(found), args[0].span))
    written = args[0].value
    if isinstance(written, t.StringLit):  # a literal that is no date is known before running
        from hql.dates import parse

        if parse(written.value) is None:
            raise HqlError(type_error(messages.not_a_date(written.value), written.span))
    return ty.option(ty.DATE) if _optional(found) else ty.DATE


def run_date(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Any:
    from hql.dates import parse

    value = values[0]
    if value is ABSENT or isinstance(value, Date):
        return value
    if isinstance(value, Data):  # front matter: text that is no date is skipped, and counted
        if value.tree is None:
            return ABSENT
        parsed = parse(value.tree) if isinstance(value.tree, str) else None
        if parsed is None:
            interpreter.note_messy(expr)
            return ABSENT
        return parsed
    parsed = parse(value)
    if parsed is None:
        assert isinstance(expr, t.Call)
        raise HqlError(evaluation(messages.not_a_date(value), expr.args[0].span))
    return parsed


# --- today(), now() ------------------------------------------------------------------------


def check_clock(name: str) -> Any:
    def check(
        checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
    ) -> Type:
        _positional(checker, name, expr, args, 0)
        return ty.DATE

    return check


def run_today(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Date:
    from hql.dates import today_of

    return today_of(interpreter.now())


def run_now(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Date:
    return interpreter.now()


# --- format(d, pattern) ----------------------------------------------------------------------


def check_format(
    checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
) -> Type:
    _, pattern = _positional(checker, "format", expr, args, 2)
    found = _date_typed(checker, expr, args, "format")
    if pattern != ty.STRING:
        raise HqlError(type_error(messages.format_pattern_argument(pattern), args[1].span))
    return ty.option(ty.STRING) if found.name == "Option" else ty.STRING


def run_format(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Any:
    from hql.dates import format_date

    date, pattern = values
    return ABSENT if date is ABSENT else format_date(date, pattern)


REGISTRY.add_function(
    FunctionSpec(
        "date",
        "date(s: String) -> Date",
        "the date or date-time an ISO 8601 text names",
        'date("2024-05-01")',
        check_date,
        run_date,
    )
)
REGISTRY.add_function(
    FunctionSpec(
        "today", "today() -> Date", "today's date", "today()", check_clock("today"), run_today
    )
)
REGISTRY.add_function(
    FunctionSpec(
        "now",
        "now() -> Date",
        "the current date-time (read once per run)",
        "now()",
        check_clock("now"),
        run_now,
    )
)
REGISTRY.add_function(
    FunctionSpec(
        "format",
        "format(d: Date, pattern: String) -> String",
        "a date written with YYYY, MM, DD, HH, mm, ss",
        'format(date("2024-05-01"), "DD.MM.YYYY")',
        check_format,
        run_format,
    )
)
