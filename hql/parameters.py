"""Parameters: values a caller passes with a program, read in it as `$name`.

A Python value becomes an HQL value with the type the language gives it: str is
String, int Int, float Float, bool Bool, a list (or tuple) a List of its elements'
common type, a dict Data and a `datetime.date` (or date-time) a Date. The checker
types `$name` from these types, so a plan checked once serves every new set of
values of the same types.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

from hql import messages
from hql import types as ty
from hql.operators import INT_MAX, INT_MIN
from hql.types import Type
from hql.values import Data, Date, ListValue

MAX_DEPTH = 64  # lists and maps inside each other, as front matter allows


class ParameterError(Exception):
    """A parameter value HQL cannot hold; the caller's mistake, not the program's."""


def convert(params: Mapping[str, Any] | None) -> tuple[dict[str, Type], dict[str, Any]]:
    """(types, values) of the parameters, by name."""
    types: dict[str, Type] = {}
    values: dict[str, Any] = {}
    for name, given in (params or {}).items():
        types[name], values[name] = _value(str(name), given)
    return types, values


def _value(name: str, given: Any, depth: int = 0) -> tuple[Type, Any]:
    if depth > MAX_DEPTH:
        raise ParameterError(messages.parameter_too_deep(name, MAX_DEPTH))
    if isinstance(given, bool):
        return ty.BOOL, given
    if isinstance(given, int):
        if not INT_MIN <= given <= INT_MAX:
            raise ParameterError(messages.parameter_out_of_range(name))
        return ty.INT, given
    if isinstance(given, float):
        if not math.isfinite(given):
            raise ParameterError(messages.parameter_value(name, "float (not finite)"))
        return ty.FLOAT, given
    if isinstance(given, str):
        return ty.STRING, given
    if _is_date(given):
        return ty.DATE, Date(given)
    if isinstance(given, list | tuple):
        return _list(name, given, depth)
    if isinstance(given, Mapping):
        return ty.DATA, Data(_tree(name, given, depth))
    raise ParameterError(messages.parameter_value(name, type(given).__name__))


def _is_date(given: Any) -> bool:
    datetime = sys.modules.get("datetime")  # a date value means `datetime` is loaded already
    return datetime is not None and isinstance(given, datetime.date)


def _list(name: str, given: list[Any] | tuple[Any, ...], depth: int) -> tuple[Type, Any]:
    element = ty.NEVER
    items = []
    for item in given:
        item_type, value = _value(name, item, depth + 1)
        element = ty.join(element, item_type) or ty.DATA
        items.append(value)
    return ty.list_of(element), ListValue(tuple(items))  # mixed elements meet at Data


def _tree(name: str, given: Any, depth: int) -> Any:
    """A dict's contents as a Data tree: str keys, JSON-like leaves, dates as ISO text."""
    if depth > MAX_DEPTH:
        raise ParameterError(messages.parameter_too_deep(name, MAX_DEPTH))
    if given is None or isinstance(given, bool | str):
        return given
    if isinstance(given, int | float):
        return _value(name, given)[1]
    if _is_date(given):
        return given.isoformat()
    if isinstance(given, list | tuple):
        return [_tree(name, item, depth + 1) for item in given]
    if isinstance(given, Mapping):
        return {str(key): _tree(name, value, depth + 1) for key, value in given.items()}
    raise ParameterError(messages.parameter_value(name, type(given).__name__))
