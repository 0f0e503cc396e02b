"""Conversions and small helpers of everyday.md section 2, as `core` steps (each also a direct
call) and one function: `number float string round floor ceil abs join slice keys values`
and `if(c, a, b)`.

They make messy front matter usable: `number(c.metadata.pages)` reads `"412"` and `412`
alike, `string(x)` is any value as text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import types as ty
from hql.checker import StepTyping
from hql.diagnostics import HqlError, type_error
from hql.interpreter import INT_MAX, INT_MIN, StepCall
from hql.printing import display, display_data
from hql.registry import REGISTRY, FunctionSpec, Param, core_step
from hql.steps import core  # noqa: F401  (creates the extension these steps join)
from hql.steps.scalars import NUMBER, Reach, input_reach, mismatch, reach, result, unwrap
from hql.syntax import tree as t
from hql.types import Type
from hql.values import ABSENT, Data, ListValue, MapValue, SetValue, elements

if TYPE_CHECKING:
    from hql.checker import Checker
    from hql.interpreter import Interpreter

NUMBERS = (ty.INT, ty.FLOAT)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?")


# --- number, float, string ------------------------------------------------------------------


def check_number(call: StepTyping) -> Type:
    how = input_reach(call, (*NUMBERS, ty.STRING), "a number or text")
    base = ty.strip_option(call.input)
    if how is Reach.RUNTIME or base == ty.STRING:
        return ty.DATA  # Int or Float, known when the program runs; absent when not numeric
    return result(base, how)


def parse_number(text: str) -> int | float | None:
    """An Int or a Float from numeric text (surrounding white space allowed), else None."""
    text = text.strip()
    if _INTEGER.fullmatch(text):
        if len(text.lstrip("+-").lstrip("0")) > 19:  # outside Int whatever the digits; and
            return _finite(float(text))  # Python's int() refuses a few thousand digits
        whole = int(text)
        return whole if INT_MIN <= whole <= INT_MAX else float(whole)
    if _DECIMAL.fullmatch(text):
        return _finite(float(text))
    return None


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def run_number(call: StepCall) -> Any:
    value = call.input
    if isinstance(value, Data):
        value = value.tree
    if value is ABSENT or value is None or isinstance(value, bool):
        return ABSENT
    if isinstance(value, str):
        parsed = parse_number(value)
        return ABSENT if parsed is None else Data(parsed)
    if isinstance(value, int | float):
        return Data(value) if call.output_type == ty.DATA else value
    return ABSENT  # Data holding a list or a map


def check_float(call: StepTyping) -> Type:
    if reach(call.input, NUMBERS) is None and ty.strip_option(call.input) == ty.STRING:
        raise call.error(messages.float_needs_number(call.input), call.input_span)
    return result(ty.FLOAT, input_reach(call, NUMBERS, "a number"))


def run_float(call: StepCall) -> Any:
    value = unwrap(call, call.input, NUMBER, "numbers")
    return ABSENT if value is ABSENT else float(value)


def check_string(call: StepTyping) -> Type:
    optional = call.input.name == "Option" or call.input == ty.DATA
    return ty.option(ty.STRING) if optional else ty.STRING


def text_of(value: Any) -> str | None:
    """A value as text, as plain printing shows it (a Data string without its quotes);
    None for absence and for an empty front-matter value."""
    if value is ABSENT:
        return None
    if isinstance(value, Data):
        tree = value.tree
        if tree is None:
            return None
        return tree if isinstance(tree, str) else display_data(tree)
    return display(value)


def run_string(call: StepCall) -> Any:
    text = text_of(call.input)
    return ABSENT if text is None else text


# --- if --------------------------------------------------------------------------------------


def check_if(
    checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
) -> Type:
    for argument in args:
        if argument.name is not None:
            raise HqlError(
                type_error(messages.no_such_argument("if", argument.name, None), argument.span)
            )
    if len(args) != 3:
        raise HqlError(type_error(messages.function_arity("if", 3, len(args)), expr.span))
    condition = checker.expression(args[0].value)
    if ty.strip_option(condition) != ty.BOOL and condition != ty.DATA:
        raise HqlError(type_error(messages.if_condition(condition), args[0].span))
    first = checker.expression(args[1].value)
    second = checker.expression(args[2].value)
    joined = ty.join(first, second)
    if joined is None:
        raise HqlError(type_error(messages.if_branches(first, second), args[2].span))
    return joined


def run_if(interpreter: Interpreter, expr: t.Node, args: list[t.Expr]) -> Any:
    condition = interpreter.evaluate(args[0])
    if isinstance(condition, Data):
        condition = condition.tree
    return interpreter.evaluate(args[1] if condition is True else args[2])


# --- round, floor, ceil, abs -------------------------------------------------------------------


def check_rounding(call: StepTyping) -> Type:
    how = input_reach(call, NUMBERS, "a number")
    if call.has("digits"):
        found = call.value("digits")
        if found != ty.INT:
            raise call.error(
                messages.argument_type("round", "digits", ty.INT, found), call.arg_span("digits")
            )
        return result(ty.FLOAT, how)
    return result(ty.INT, how)


def _whole(call: StepCall, value: float) -> int:
    if not math.isfinite(value):
        raise call.fail(messages.not_finite())
    whole = int(value)
    if not INT_MIN <= whole <= INT_MAX:
        raise call.fail(messages.numeric_overflow())
    return whole


def _half_away(value: float, digits: int) -> float:
    """`value` rounded to `digits` decimals, halves away from zero, on the shortest decimal
    that reads back as the value (so 2.675 rounds to 2.68, as it is written)."""
    from decimal import ROUND_HALF_UP, Decimal, localcontext

    digits = max(-400, min(400, digits))
    with localcontext() as context:
        context.prec = 1000
        rounded = Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP)
    return float(rounded)


def _rounding(apply: Callable[[float], float]) -> Callable[[StepCall], Any]:
    def run(call: StepCall) -> Any:
        value = unwrap(call, call.input, NUMBER, "numbers")
        if value is ABSENT:
            return ABSENT
        digits = call.args.get("digits")
        if digits is not None:
            rounded = _half_away(float(value), digits)
            if not math.isfinite(rounded):
                raise call.fail(messages.numeric_overflow())
            return rounded
        if isinstance(value, int):
            return value
        if not math.isfinite(value):
            raise call.fail(messages.not_finite())
        return _whole(call, apply(value))

    return run


def check_abs(call: StepTyping) -> Type:
    how = input_reach(call, NUMBERS, "a number")
    return ty.DATA if how is Reach.RUNTIME else result(ty.strip_option(call.input), how)


def run_abs(call: StepCall) -> Any:
    value = unwrap(call, call.input, NUMBER, "numbers")
    if value is ABSENT:
        return ABSENT
    magnitude = abs(value)
    if isinstance(magnitude, int) and magnitude > INT_MAX:
        raise call.fail(messages.numeric_overflow())
    return Data(magnitude) if call.output_type == ty.DATA else magnitude


# --- join, slice -------------------------------------------------------------------------------


def check_join(call: StepTyping) -> Type:
    call.element()
    if call.has("sep") and call.value("sep") != ty.STRING:
        found = call.value("sep")
        raise call.error(
            messages.argument_type("join", "sep", ty.STRING, found), call.arg_span("sep")
        )
    return ty.STRING


def run_join(call: StepCall) -> str:
    texts = [text for text in map(text_of, elements(call.input)) if text is not None]
    separator = str(call.args.get("sep", ", "))
    # a long separator between many texts: counted before joining
    length = sum(map(len, texts)) + len(separator) * max(0, len(texts) - 1)
    call.interpreter.budget.ahead(1, length)
    return separator.join(texts)


def check_slice(call: StepTyping) -> Type:
    for name in ("from", "to"):
        if call.has(name) and call.value(name) != ty.INT:
            found = call.value(name)
            raise call.error(
                messages.argument_type("slice", name, ty.INT, found), call.arg_span(name)
            )
    how = reach(call.input, (ty.STRING,))
    if how is Reach.RUNTIME:
        return ty.DATA
    if how is not None:
        return result(ty.STRING, how)
    shape = ty.strip_option(call.input)
    element = ty.element_type(call.input)
    if shape.name in ty.SEQUENCES or shape.name == "Ranking":
        assert element is not None
        return ty.list_of(element)
    if element is not None:
        raise call.error(messages.slice_needs_positions(shape), call.input_span)
    raise call.error(messages.works_on("slice", "a String or a sequence", shape), call.input_span)


def run_slice(call: StepCall) -> Any:
    start, end = call.args["from"], call.args.get("to")
    value = call.input
    if isinstance(value, Data):
        tree = value.tree
        if tree is None:
            return ABSENT
        if isinstance(tree, str | list):
            return Data(tree[start:end])
        mismatch(call, "a String or a sequence")
        return ABSENT
    if value is ABSENT and call.output_type.name == "Option":
        return ABSENT
    if isinstance(value, str):
        return value[start:end]
    return ListValue(elements(value)[start:end])


# --- keys, values --------------------------------------------------------------------------------


def _check_entries(call: StepTyping, keys: bool) -> Type:
    shape = ty.strip_option(call.input)
    if shape == ty.DATA:
        return ty.list_of(ty.STRING if keys else ty.DATA)
    if shape.name in ty.MAPS:
        key, value = shape.args
        if not keys:
            return ty.list_of(value)
        return ty.set_of(key) if shape.name == "Map" else ty.list_of(key)
    raise call.error(
        messages.works_on(call.spec.name, "Data or a map", call.input), call.input_span
    )


def _entries(call: StepCall) -> list[tuple[Any, Any]]:
    value = call.input
    if isinstance(value, MapValue):
        return list(value.items())
    tree = value.tree if isinstance(value, Data) else None
    if isinstance(tree, dict):
        return [(key, Data(tree[key])) for key in sorted(tree)]  # in the order Data prints
    if tree is not None:
        mismatch(call, "Data that is a map")
    return []


def run_keys(call: StepCall) -> Any:
    keys = tuple(key for key, _ in _entries(call))
    return SetValue(keys) if call.output_type.name == "Set" else ListValue(keys)


def run_values(call: StepCall) -> ListValue:
    return ListValue(tuple(value for _, value in _entries(call)))


# --- the registry -------------------------------------------------------------------------------


DIGITS = Param("digits", "Int", default=None)

for spec in (
    core_step(
        "number",
        (),
        "Int | Float | String | Data | number -> the number (Data for text and Data)",
        "a number from a number or numeric text; none for anything else",
        'number("412")',
        check_number,
        run_number,
    ),
    core_step(
        "float",
        (),
        "Int | Float | float -> Float",
        "a number as a Float",
        "float(3) + 0.5",
        check_float,
        run_float,
    ),
    core_step(
        "string",
        (),
        "T | string -> String",
        "any value as text, as plain printing shows it (a front-matter string without quotes)",
        "string(3)",
        check_string,
        run_string,
    ),
    core_step(
        "round",
        (DIGITS,),
        "Int | Float | round(digits?: Int) -> Int (Float with digits)",
        "the nearest whole number, halves away from zero; with digits, a Float to that many decimals",
        "round(2.5)",
        check_rounding,
        _rounding(lambda value: _half_away(value, 0)),
    ),
    core_step(
        "floor",
        (),
        "Int | Float | floor -> Int",
        "the largest whole number not above the number",
        "floor(2.7)",
        check_rounding,
        _rounding(math.floor),
    ),
    core_step(
        "ceil",
        (),
        "Int | Float | ceil -> Int",
        "the smallest whole number not below the number",
        "ceil(2.1)",
        check_rounding,
        _rounding(math.ceil),
    ),
    core_step(
        "abs",
        (),
        "Int | Float | abs -> the same type",
        "the number without its sign",
        "abs(-3)",
        check_abs,
        run_abs,
    ),
    core_step(
        "join",
        (Param("sep", "String", default=", "),),
        "Collection<T> | join(sep?: String) -> String",
        "the elements as text, separated by `sep` (absent elements left out)",
        'c.metadata.tags | join(", ")',
        check_join,
        run_join,
    ),
    core_step(
        "slice",
        (Param("from", "Int"), Param("to", "Int", default=None)),
        "String | Seq<T> | slice(from: Int, to?: Int) -> String | List<T>",
        "the part from position `from` up to (not including) `to`; negative positions count from the end",
        '"bearer" | slice(0, 4)',
        check_slice,
        run_slice,
    ),
    core_step(
        "keys",
        (),
        "Data | Map<K, V> | keys -> List<String> | Set<K> | List<K>",
        "the keys of a front-matter map (in the order Data prints) or of a map",
        "c.metadata | keys",
        lambda call: _check_entries(call, keys=True),
        run_keys,
    ),
    core_step(
        "values",
        (),
        "Data | Map<K, V> | values -> List<Data> | List<V>",
        "the values of a front-matter map (in the order of its keys) or of a map",
        "c.metadata | values",
        lambda call: _check_entries(call, keys=False),
        run_values,
    ),
):
    REGISTRY.add(spec)

REGISTRY.add_function(
    FunctionSpec(
        "if",
        "if(condition: Bool, then: T, else: T) -> T",
        "the second argument when the condition is true, else the third (only that one is evaluated)",
        'if(size(cards) == 0, "empty", "full")',
        check_if,
        run_if,
        lazy=True,
    )
)
