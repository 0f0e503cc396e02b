"""Steps of `core` on collections (everyday.md section 3 and the upstream proposal HQL-0004):
`distinct first last reverse sum min max avg any all exists flat_map flatten group reduce`.

Absent elements (of a `List<Option<T>>`) are left out of `sum min max avg`; Data
elements are typed when the program runs, and those of the wrong kind are left out
with one warning per step that counts them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hql import messages
from hql import types as ty
from hql.checker import StepTyping
from hql.interpreter import INT_MAX, INT_MIN, StepCall, distinct
from hql.printing import as_data, compare_values
from hql.registry import REGISTRY, Param, core_step
from hql.steps.core import _same_shape  # the shape `filter` keeps
from hql.steps.scalars import data_compare, data_key
from hql.types import Type
from hql.values import ABSENT, Data, Group, ListValue, Ranking, SetValue, elements

NUMBERS = (ty.INT, ty.FLOAT)


def _shape(call: StepTyping) -> Type:
    return ty.strip_option(call.input)


def _ordered(items: tuple[Any, ...], value: Any) -> tuple[Any, ...]:
    """A set's elements in their own order (as `take` sees them); a sequence as it is."""
    if isinstance(value, SetValue):
        return tuple(sorted(items, key=functools.cmp_to_key(compare_values)))
    return items


# --- distinct, first, last, reverse ------------------------------------------------------


def check_distinct(call: StepTyping) -> Type:
    return _same_shape(call.input, call.element())


def run_distinct(call: StepCall) -> Any:
    value = call.input
    if isinstance(value, SetValue):
        return value
    kept = distinct(elements(value))
    return Ranking(kept, value.retrieval) if isinstance(value, Ranking) else ListValue(kept)


def check_end(call: StepTyping) -> Type:
    element = call.element()
    shape = _shape(call)
    positional = shape.name in ty.SEQUENCES or shape.name == "Ranking" or shape == ty.DATA
    if not positional and not ty.is_orderable(element):
        taken_from = "a set" if shape.name == "Set" else str(shape)
        raise call.error(
            messages.needs_positions(call.spec.name, element, taken_from), call.input_span
        )
    return ty.option(element)


def run_first(call: StepCall) -> Any:
    items = _ordered(elements(call.input), call.input)
    return items[0] if items else ABSENT


def run_last(call: StepCall) -> Any:
    items = _ordered(elements(call.input), call.input)
    return items[-1] if items else ABSENT


def check_reverse(call: StepTyping) -> Type:
    element = call.element()
    shape = _shape(call)
    if shape.name not in ty.SEQUENCES and shape.name != "Ranking" and shape != ty.DATA:
        raise call.error(messages.reverse_needs_sequence(shape), call.input_span)
    return ty.list_of(element)


def run_reverse(call: StepCall) -> ListValue:
    return ListValue(tuple(reversed(elements(call.input))))


# --- sum, avg, min, max ----------------------------------------------------------------


def _numeric_element(call: StepTyping) -> Type:
    element = ty.strip_option(call.element())
    if element == ty.NEVER:
        return ty.INT
    if element not in (*NUMBERS, ty.DATA):
        raise call.error(messages.needs_numbers(call.spec.name, element), call.input_span)
    return element


def _numbers(call: StepCall) -> list[Any]:
    """The numbers among the input's elements: absence skipped, other Data left out with a warning."""
    found: list[Any] = []
    for item in elements(call.input):
        if item is ABSENT:
            continue
        if isinstance(item, Data):
            tree = item.tree
            if tree is None:
                continue
            if isinstance(tree, bool) or not isinstance(tree, int | float):
                _left_out(call, "numbers")
                continue
            item = tree
        found.append(item)
    return found


def _left_out(call: StepCall, wanted: str) -> None:
    name = call.spec.name
    call.interpreter.warn_counted(
        f"left-out:{name}", call.span, lambda count: messages.data_left_out(name, wanted, count)
    )


def check_sum(call: StepTyping) -> Type:
    return _numeric_element(call)


def run_sum(call: StepCall) -> Any:
    numbers = _numbers(call)
    total: Any = 0.0 if call.output_type == ty.FLOAT else 0
    for number in numbers:
        total = total + number
    _check_finite(call, total)
    return Data(total) if call.output_type == ty.DATA else total


def _check_finite(call: StepCall, total: Any) -> None:
    if isinstance(total, int) and not INT_MIN <= total <= INT_MAX:
        raise call.fail(messages.numeric_overflow())
    if isinstance(total, float) and total in (float("inf"), float("-inf")):
        raise call.fail(messages.numeric_overflow())


def check_avg(call: StepTyping) -> Type:
    _numeric_element(call)
    return ty.option(ty.FLOAT)


def run_avg(call: StepCall) -> Any:
    numbers = _numbers(call)
    if not numbers:
        return ABSENT
    if all(isinstance(n, int) for n in numbers):
        return sum(numbers) / len(numbers)  # exact integer sum, one rounding
    total = 0.0
    for number in numbers:
        total += number
    _check_finite(call, total)
    return total / len(numbers)


def check_extreme(call: StepTyping) -> Type:
    element = call.element()
    if call.has("by"):
        key = call.lambda_result("by", [element])
        stripped = ty.strip_option(key)
        if not (ty.is_orderable(stripped) or stripped == ty.DATA):
            raise call.error(messages.sort_key_unorderable(key), call.arg_span("by"))
        return ty.option(element)
    element = ty.strip_option(element)
    if not (ty.is_orderable(element) or element == ty.DATA):
        raise call.error(messages.needs_ordered(call.spec.name, element), call.input_span)
    return ty.option(element)


def _extreme(call: StepCall, largest: bool) -> Any:
    by = call.args.get("by")
    items = [item for item in elements(call.input) if item is not ABSENT]
    keyed = [(by(item) if by is not None else item, item) for item in items]
    keyed = [(key, item) for key, item in keyed if key is not ABSENT]
    if any(isinstance(key, Data) for key, _ in keyed):
        keyed = _data_keys(call, keyed)
        compare: Callable[[Any, Any], int] = data_compare
    else:
        compare = compare_values
    best: tuple[Any, Any] | None = None
    for key, item in keyed:  # the first of equals wins
        if best is None:
            best = (key, item)
            continue
        order = compare(key, best[0])
        if (order > 0) if largest else (order < 0):
            best = (key, item)
    return ABSENT if best is None else best[1]


def _data_keys(call: StepCall, keyed: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Data keys: numbers when there are any, else strings; other kinds left out with a warning."""
    kinds = [data_key(key) for key, _ in keyed]
    wanted = 0 if any(k is not None and k[0] == 0 for k in kinds) else 1
    kept = []
    for (key, item), kind in zip(keyed, kinds, strict=True):
        if isinstance(key, Data) and key.tree is None:
            continue
        if kind is None or kind[0] != wanted:
            _left_out(call, "numbers or strings (numbers when there are any)")
            continue
        kept.append((key, item))
    return kept


def run_min(call: StepCall) -> Any:
    return _extreme(call, largest=False)


def run_max(call: StepCall) -> Any:
    return _extreme(call, largest=True)


# --- any, all, exists ---------------------------------------------------------------------


def check_predicate(call: StepTyping) -> Type:
    result = call.lambda_result("by", [call.element()])
    if ty.strip_option(result) != ty.BOOL:
        raise call.error(messages.predicate_result(call.spec.name, result), call.arg_span("by"))
    return ty.BOOL


def run_any(call: StepCall) -> bool:
    test = call.args["by"]
    return any(test(item) is True for item in elements(call.input))


def run_all(call: StepCall) -> bool:
    test = call.args["by"]
    return all(test(item) is True for item in elements(call.input))


def check_exists(call: StepTyping) -> Type:
    return ty.BOOL


def run_exists(call: StepCall) -> bool:
    value = call.input
    return not (value is ABSENT or (isinstance(value, Data) and value.tree is None))


# --- flat_map, flatten ---------------------------------------------------------------------


def _inner(call: StepTyping, found: Type, span: Any) -> Type:
    inner = ty.element_type(found)
    if inner is None:
        raise call.error(messages.needs_collections(call.spec.name, found), span)
    return inner


def check_flat_map(call: StepTyping) -> Type:
    produced = call.lambda_result("by", [call.element()])
    return ty.list_of(_inner(call, produced, call.arg_span("by")))


def run_flat_map(call: StepCall) -> ListValue:
    function = call.args["by"]
    parts = (function(item) for item in elements(call.input))
    return call.interpreter.budget.gather_contents(parts)


def check_flatten(call: StepTyping) -> Type:
    return ty.list_of(_inner(call, call.element(), call.input_span))


def run_flatten(call: StepCall) -> ListValue:
    return call.interpreter.budget.gather_contents(elements(call.input))


# --- group, reduce ---------------------------------------------------------------------------


def check_group(call: StepTyping) -> Type:
    element = call.element()
    key = call.lambda_result("by", [element])
    return ty.set_of(Type("Group", (key, element)))


def run_group(call: StepCall) -> SetValue:
    by = call.args["by"]
    keys: dict[Any, Any] = {}
    members: dict[Any, list[Any]] = {}
    for item in elements(call.input):
        key = by(item)
        tag = as_data(key)
        if tag not in keys:
            keys[tag] = key
            members[tag] = []
        members[tag].append(item)
    return SetValue(tuple(Group(keys[tag], ListValue(tuple(members[tag]))) for tag in keys))


def check_reduce(call: StepTyping) -> Type:
    element = call.element()
    shape = _shape(call)
    if shape.name not in ty.SEQUENCES and shape.name != "Ranking" and shape != ty.DATA:
        raise call.error(messages.reduce_needs_sequence(shape), call.input_span)
    accumulator = call.value("initial")
    result = call.lambda_result("by", [accumulator, element])
    if not ty.is_subtype(result, accumulator):  # `[]` as initial: widen once, never to Data
        widened = ty.join(accumulator, result)
        if widened is not None and widened not in (accumulator, ty.DATA):
            accumulator = widened
            result = call.lambda_result("by", [accumulator, element])
    if not ty.is_subtype(result, accumulator):
        raise call.error(messages.reduce_result(accumulator, result), call.arg_span("by"))
    return accumulator


def run_reduce(call: StepCall) -> Any:
    by = call.args["by"]
    total = call.args["initial"]
    for item in elements(call.input):
        total = by(total, item)
    return total


# --- the registry ------------------------------------------------------------------------------

BY = Param("by", "T => Bool", kind="lambda")
KEY = Param("by", "T => Orderable", default=None, kind="lambda")


for spec in (
    core_step(
        "distinct",
        (),
        "Collection<T> | distinct -> same collection",
        "the elements without repeats, each where it first occurs",
        "[2, 1, 2] | distinct",
        check_distinct,
        run_distinct,
    ),
    core_step(
        "first",
        (),
        "Collection<T> | first -> Option<T>",
        "the first element, or none (a set is ordered by its elements' own key first)",
        "cards | sort(by = c => c.name) | first",
        check_end,
        run_first,
    ),
    core_step(
        "last",
        (),
        "Collection<T> | last -> Option<T>",
        "the last element, or none (a set is ordered by its elements' own key first)",
        "[1, 2, 3] | last",
        check_end,
        run_last,
    ),
    core_step(
        "reverse",
        (),
        "Seq<T> | reverse -> List<T>",
        "the elements of a sequence in the opposite order",
        "[1, 2, 3] | reverse",
        check_reverse,
        run_reverse,
    ),
    core_step(
        "sum",
        (),
        "Collection<N> | sum -> N where N is Int, Float or Data",
        "the total of numbers (0 over nothing); absent elements are left out",
        "[412, 280] | sum",
        check_sum,
        run_sum,
    ),
    core_step(
        "avg",
        (),
        "Collection<N> | avg -> Option<Float> where N is Int, Float or Data",
        "the mean of numbers, or none over nothing",
        "[1, 2] | avg",
        check_avg,
        run_avg,
    ),
    core_step(
        "min",
        (KEY,),
        "Collection<T> | min(by?: T => Orderable) -> Option<T>",
        "the smallest element (by its own order or by a key), or none over nothing",
        "cards | min(by = c => c.title)",
        check_extreme,
        run_min,
    ),
    core_step(
        "max",
        (KEY,),
        "Collection<T> | max(by?: T => Orderable) -> Option<T>",
        "the largest element (by its own order or by a key), or none over nothing",
        '["b", "a"] | max',
        check_extreme,
        run_max,
    ),
    core_step(
        "any",
        (BY,),
        "Collection<T> | any(by: T => Bool) -> Bool",
        "whether the lambda is true for some element (false over nothing)",
        "[1, 2] | any(n => n == 2)",
        check_predicate,
        run_any,
    ),
    core_step(
        "all",
        (BY,),
        "Collection<T> | all(by: T => Bool) -> Bool",
        "whether the lambda is true for every element (true over nothing)",
        'cards | all(c => c.kind != "")',
        check_predicate,
        run_all,
    ),
    core_step(
        "exists",
        (),
        "T | exists -> Bool",
        "whether an optional value is present (an empty front-matter value is not)",
        "exists(c.metadata.owner)",
        check_exists,
        run_exists,
    ),
    core_step(
        "flat_map",
        (Param("by", "T => Collection<R>", kind="lambda"),),
        "Collection<T> | flat_map<T, R>(by: T => Collection<R>) -> List<R>",
        "apply a lambda to every element and join the collections it gives",
        "cards | flat_map(c => c.metadata.tags)",
        check_flat_map,
        run_flat_map,
    ),
    core_step(
        "flatten",
        (),
        "Collection<Collection<T>> | flatten -> List<T>",
        "join a collection of collections into one list",
        "[ [1, 2], [3] ] | flatten",
        check_flatten,
        run_flatten,
    ),
    core_step(
        "group",
        (Param("by", "T => K", kind="lambda"),),
        "Collection<T> | group<T, K>(by: T => K) -> Set<Group<K, T>>",
        "partition by a key: each group has `key` and its `items` in input order",
        "cards | group(by = c => c.kind)",
        check_group,
        run_group,
    ),
    core_step(
        "reduce",
        (Param("initial", "R"), Param("by", "(R, T) => R", kind="lambda")),
        "Seq<T> | reduce<T, R>(initial: R, by: (R, T) => R) -> R",
        "fold a sequence from the left; a set must be sorted first",
        "[412, 280] | reduce(0, (total, n) => total + n)",
        check_reduce,
        run_reduce,
    ),
):
    REGISTRY.add(spec)
