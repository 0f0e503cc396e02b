"""Plain functions: `compare` and the collection constructors (era C)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import types as ty
from hql.diagnostics import HqlError, evaluation, type_error
from hql.printing import as_data, compare_first, compare_values
from hql.registry import REGISTRY, FunctionSpec
from hql.syntax import tree as t
from hql.types import Type
from hql.values import ListValue, MapValue, Ordering, SetValue, elements

if TYPE_CHECKING:
    from hql.checker import Checker
    from hql.interpreter import Interpreter


def _positional(
    checker: Checker, name: str, expr: t.Node, args: Sequence[t.Argument], count: int
) -> list[Type]:
    for argument in args:
        if argument.name is not None:
            raise HqlError(
                type_error(messages.no_such_argument(name, argument.name, None), argument.span)
            )
    if len(args) != count:
        raise HqlError(type_error(messages.function_arity(name, count, len(args)), expr.span))
    return [checker.expression(argument.value) for argument in args]


def check_compare(
    checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
) -> Type:
    left, right = _positional(checker, "compare", expr, args, 2)
    if left != right or not ty.is_orderable(left):
        raise HqlError(type_error(messages.compare_operands(), expr.span))
    return ty.ORDERING


def run_compare(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Ordering:
    order = compare_values(values[0], values[1])
    return Ordering.LESS if order < 0 else Ordering.GREATER if order > 0 else Ordering.EQUAL


def _collection_element(checker: Checker, argument: t.Argument, declared: Type | None) -> Type:
    found = checker.plan.types[argument.value]
    element = ty.element_type(found)
    if element is None or found == ty.DATA:
        raise HqlError(type_error(messages.constructor_needs_collection(found), argument.span))
    if declared is not None:
        if not ty.is_subtype(element, declared):
            raise HqlError(
                type_error(messages.constructor_element(declared, element), argument.span)
            )
        return declared
    return element


def _constructor(kind: str) -> FunctionSpec:
    def check(
        checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
    ) -> Type:
        _positional(checker, kind, expr, args, 1)
        if types and len(types) != 1:
            raise HqlError(type_error(messages.type_arity(kind, 1, len(types)), expr.span))
        element = _collection_element(checker, args[0], types[0] if types else None)
        return Type(kind, (element,))

    def run(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Any:
        from hql.interpreter import distinct

        items = elements(values[0])
        return ListValue(items) if kind == "List" else SetValue(distinct(items))

    return FunctionSpec(
        kind,
        f"{kind}(xs: Collection<T>) -> {kind}<T>",
        f"a {kind} of the elements",
        f"{kind}([1, 2, 2])",
        check,
        run,
    )


def _map_constructor(kind: str) -> FunctionSpec:
    def check(
        checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
    ) -> Type:
        _positional(checker, kind, expr, args, 2)
        if types and len(types) != 2:
            raise HqlError(type_error(messages.type_arity(kind, 2, len(types)), expr.span))
        key = _collection_element(checker, args[0], types[0] if types else None)
        value = _collection_element(checker, args[1], types[1] if types else None)
        if kind == "SortedMap" and not ty.is_orderable(key):
            raise HqlError(type_error(messages.sorted_map_key(key), args[0].span))
        return Type(kind, (key, value))

    def run(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> MapValue:
        keys, entries = elements(values[0]), elements(values[1])
        if len(keys) != len(entries):
            raise HqlError(evaluation(messages.map_lengths(len(keys), len(entries)), expr.span))
        seen: set[Any] = set()
        for key in keys:
            tagged = as_data(key)
            if tagged in seen:
                from hql.printing import display

                raise HqlError(evaluation(messages.duplicate_key(display(key)), expr.span))
            seen.add(tagged)
        pairs: list[tuple[Any, Any]] = list(zip(keys, entries, strict=True))
        if kind == "SortedMap":
            pairs.sort(key=functools.cmp_to_key(compare_first))
        type_text = str(interpreter.plan.types[expr])
        return MapValue(kind, tuple(k for k, _ in pairs), tuple(v for _, v in pairs), type_text)

    return FunctionSpec(
        kind,
        f"{kind}(keys: Seq<K>, values: Seq<V>) -> {kind}<K, V>",
        {
            "Map": "a map that promises no order",
            "OrderedMap": "a map in construction order",
            "SortedMap": "a map ordered by key",
        }[kind],
        f'{kind}(["a", "b"], [1, 2])',
        check,
        run,
    )


REGISTRY.add_function(
    FunctionSpec(
        "compare",
        "compare(a: T, b: T) -> Ordering where T : Orderable",
        "Less, Equal or Greater",
        "compare(1, 2)",
        check_compare,
        run_compare,
    )
)
for _kind in ("List", "Set"):
    REGISTRY.add_function(_constructor(_kind))
for _kind in ty.MAPS:
    REGISTRY.add_function(_map_constructor(_kind))
