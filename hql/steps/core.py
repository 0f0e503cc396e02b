"""Extension `core` (always available): collection steps."""

from __future__ import annotations

import functools
import heapq
import operator
from collections.abc import Callable, Sequence
from typing import Any

from hql import messages
from hql import types as ty
from hql.checker import StepTyping
from hql.interpreter import StepCall, distinct
from hql.printing import compare_values, values_equal
from hql.registry import REGISTRY, Param, StepSpec
from hql.steps.scalars import check_substring, data_compare, run_substring
from hql.syntax import tree as t
from hql.types import Type
from hql.values import ABSENT, Card, Data, ListValue, Ordering, Ranking, SetValue, elements
from hql.version import __version__

REGISTRY.extension("core", version=__version__, summary="collection steps", always=True)


def comparable(a: Type, b: Type) -> bool:
    a, b = ty.strip_option(a), ty.strip_option(b)
    return (
        a == b
        or ty.DATA in (a, b)
        or ty.NEVER in (a, b)
        or ty.is_subtype(a, b)
        or ty.is_subtype(b, a)
    )


def _check_value_against_elements(call: StepTyping, name: str) -> None:
    element = call.element()
    value = call.value(name)
    if not comparable(element, value):
        raise call.error(messages.never_equal(element, value), call.arg_span(name))


def sized(call: StepTyping) -> None:
    if call.input.name in ty.MAPS:
        return
    call.element()


# --- count, size, contains --------------------------------------------------


def check_count(call: StepTyping) -> Type:
    if call.has("value"):
        _check_value_against_elements(call, "value")
    else:
        sized(call)
    return ty.INT


def run_count(call: StepCall) -> int:
    items = _items(call.input)
    if "value" in call.args:
        return sum(1 for item in items if values_equal(item, call.args["value"]))
    return len(items)


def _items(value: Any) -> tuple[Any, ...]:
    from hql.values import MapValue

    if isinstance(value, MapValue):
        return value.keys
    return elements(value)


def check_size(call: StepTyping) -> Type:
    sized(call)
    return ty.INT


def run_size(call: StepCall) -> int:
    return len(_items(call.input))


def check_contains(call: StepTyping) -> Type:
    if call.input == ty.STRING:  # a substring; an Option<String> stays a collection of 0 or 1
        return check_substring(call)
    _check_value_against_elements(call, "value")
    return ty.BOOL


def run_contains(call: StepCall) -> bool:
    if call.input_type == ty.STRING:
        return run_substring(call)
    return any(values_equal(item, call.args["value"]) for item in _items(call.input))


# --- get ----------------------------------------------------------------------


def check_get(call: StepTyping) -> Type:
    map_type = ty.strip_option(call.input)
    if map_type.name not in ty.MAPS:
        raise call.error(messages.get_needs_map(call.input), call.input_span)
    key = call.value("key")
    if not ty.is_subtype(key, map_type.args[0]):
        raise call.error(messages.wrong_key_type(map_type.args[0], key), call.arg_span("key"))
    return ty.option(map_type.args[1])


def run_get(call: StepCall) -> Any:
    if call.input is ABSENT:
        return ABSENT
    for key, value in call.input.items():
        if values_equal(key, call.args["key"]):
            return value
    return ABSENT


# --- sort -----------------------------------------------------------------------


def check_sort(call: StepTyping) -> Type:
    element = call.element()
    several = False  # a key lambda giving a list of keys: `c => [a, b]`
    if call.has("by"):
        arity = call.lambda_arity("by")
        if arity == 2:
            result = call.lambda_result("by", [element, element])
            if result != ty.ORDERING:
                raise call.error(messages.comparator_result(result), call.arg_span("by"))
        else:
            result = call.lambda_result("by", [element])
            several = _key_list(result)
            if not (several or _sort_key(result)):
                raise call.error(messages.sort_key_unorderable(result), call.arg_span("by"))
    elif not (ty.is_orderable(element) or element == ty.DATA):
        raise call.error(messages.sort_needs_order(element), call.input_span)
    if call.has("descending"):
        found = call.value("descending")
        if not (found == ty.BOOL or several and found == ty.list_of(ty.BOOL)):
            expected = messages.sort_directions() if several else ty.BOOL
            raise call.error(
                messages.argument_type("sort", "descending", expected, found),
                call.arg_span("descending"),
            )
    return ty.list_of(element)


def _sort_key(key: Type) -> bool:
    """Whether values of this type can order a sort: Orderable ones, and Data (when it runs)."""
    key = ty.strip_option(key)
    return ty.is_orderable(key) or key == ty.DATA


def _key_list(key: Type) -> bool:
    """A list of sort keys (`[c.metadata.rating, c.title]`): ordered by its first key, ties by
    the next, and so on."""
    key = ty.strip_option(key)
    return key.name == "List" and _sort_key(key.arg)


def run_sort(call: StepCall) -> ListValue:
    items = list(elements(call.input))
    by = call.args.get("by")
    descending = call.args.get("descending") is True
    if by is not None and _arity(call) == 2:
        reverse = _compares_itself(call)
        if reverse is None:
            comparator = _flipped(by) if descending else by
            return ListValue(tuple(_comparator_sort(items, comparator, call.limit)))
        # `(a, b) => compare(a, b)` is the natural order (`compare(b, a)` its reverse):
        # the very comparisons, without a lambda call for each.
        by, descending = None, descending != reverse
        key_type: Type = ty.UNIT  # compare's operands are Orderable: never Data
    else:
        key_type = call.output_type.arg if by is None else _key_type(call)
        if by is not None and _key_list(key_type):
            return _sort_by_keys(items, by, key_type, call.args.get("descending"), call.limit)
    compare: Callable[[Any, Any], int]
    if ty.strip_option(key_type) == ty.DATA:  # keys typed when the program runs: see data_compare
        compare = functools.partial(data_compare, descending=descending)
    elif descending:
        compare = lambda a, b: compare_values(b, a)  # noqa: E731
    else:
        compare = compare_values
    plain = ty.strip_option(key_type) != ty.DATA
    if by is None:
        if plain and _plainly_ordered(items):
            return ListValue(tuple(_leading_plainly(items, descending, call.limit)))
        if plain and _cards_alone(items):
            return ListValue(tuple(_leading_plainly(items, descending, call.limit, _CARD_NAME)))
        return ListValue(tuple(_leading(items, functools.cmp_to_key(compare), call.limit)))
    keys: list[tuple[Any, Any]] = [(by(item), item) for item in items]
    if plain and _plainly_ordered([key for key, _ in keys]):
        first = operator.itemgetter(0)
        if call.limit is not None and call.limit < len(keys):
            chosen = heapq.nlargest if descending else heapq.nsmallest
            ordered = chosen(call.limit, keys, key=first)
        else:
            ordered = sorted(keys, key=first, reverse=descending)
        return ListValue(tuple(item for _, item in ordered))

    def by_key(a: tuple[Any, Any], b: tuple[Any, Any]) -> int:
        return compare(a[0], b[0])

    ordered = _leading(keys, functools.cmp_to_key(by_key), call.limit)
    return ListValue(tuple(item for _, item in ordered))


def _sort_by_keys(
    items: list[Any], by: Callable[[Any], Any], key_type: Type, descending: Any, limit: int | None
) -> ListValue:
    """Sort by a list of keys: the first decides, ties go to the next; `descending` is one
    Boolean for every key or one per key (keys beyond the list ascend). A key that is Data
    orders as Data does (absence last either way); a shorter list of keys comes first."""
    each = ty.strip_option(ty.strip_option(key_type).arg) == ty.DATA
    if isinstance(descending, ListValue):
        directions = tuple(item is True for item in descending.items)
        rest = False
    else:
        directions, rest = (), descending is True

    def compare(a: tuple[Any, Any], b: tuple[Any, Any]) -> int:
        first, second = elements(a[0]), elements(b[0])
        for at, (x, y) in enumerate(zip(first, second, strict=False)):
            down = directions[at] if at < len(directions) else rest
            if each or isinstance(x, Data) or isinstance(y, Data):
                order = data_compare(x, y, descending=down)
            else:
                order = compare_values(y, x) if down else compare_values(x, y)
            if order:
                return order
        return (len(first) > len(second)) - (len(first) < len(second))

    keys = [(by(item), item) for item in items]
    ordered = _leading(keys, functools.cmp_to_key(compare), limit)
    return ListValue(tuple(item for _, item in ordered))


def _flipped(comparator: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda a, b: comparator(b, a)


# Integers up to 2^53 are exact as floats, which is how `compare_values` orders numbers.
_EXACT_INTEGERS = 2**53


def _plainly_ordered(values: list[Any]) -> bool:
    """Whether Python's own order of these values is `compare_values`' order: all integers
    that floats hold exactly, or all strings (code point order is UTF-8 byte order)."""
    if not values:
        return False
    kind = type(values[0])
    if kind is int:
        return (
            all(type(value) is int for value in values)
            and min(values) >= -_EXACT_INTEGERS
            and max(values) <= _EXACT_INTEGERS
        )
    return kind is str and all(type(value) is str for value in values)


def _leading_plainly(
    items: list[Any], descending: bool, limit: int | None, key: Callable[[Any], Any] | None = None
) -> list[Any]:
    """`_leading` for values plainly ordered by themselves or by `key` (ties keep their
    order, as the stable sort does)."""
    if limit is not None and limit < len(items):
        return (heapq.nlargest if descending else heapq.nsmallest)(limit, items, key=key)
    return sorted(items, key=key, reverse=descending)


def _cards_alone(items: Sequence[Any]) -> bool:
    """Cards only: `compare_values` orders them by name, and code point order is UTF-8 byte
    order, so their names order them plainly."""
    return bool(items) and all(type(item) is Card for item in items)


_CARD_NAME = operator.attrgetter("name")


def _compares_itself(call: StepCall) -> bool | None:
    """For a comparator `(a, b) => compare(a, b)`: False; for `(a, b) => compare(b, a)`:
    True; for any other comparator None."""
    plan = call.interpreter.plan
    function = plan.arguments[call.node]["by"].value
    if not isinstance(function, t.Lambda) or len(set(function.params)) != 2:
        return None
    body = function.body
    spec = plan.functions.get(body)
    if (
        not isinstance(body, t.Call)
        or spec is None
        or (spec.name, spec.extension) != ("compare", "")
    ):
        return None
    names = tuple(
        argument.value.name
        if argument.name is None and isinstance(argument.value, t.Name)
        else None
        for argument in body.args
    )
    if names == function.params:
        return False
    if names == function.params[::-1]:
        return True
    return None


def _leading(items: list[Any], key: Callable[[Any], Any], limit: int | None) -> list[Any]:
    """The items in order, or only the first `limit` of them (the planner's top-k: a heap
    selection, which keeps ties in input order exactly as the stable sort does)."""
    if limit is not None and limit < len(items):
        return heapq.nsmallest(limit, items, key=key)
    return sorted(items, key=key)


def _key_type(call: StepCall) -> Type:
    argument = call.interpreter.plan.arguments[call.node]["by"]
    return call.interpreter.plan.types[argument.value.body]  # type: ignore[attr-defined]


def _arity(call: StepCall) -> int:
    argument = call.interpreter.plan.arguments[call.node]["by"]
    return len(getattr(argument.value, "params", ()))


def _comparator_sort(items: list[Any], comparator: Any, limit: int | None) -> list[Any]:
    """A stable O(n log n) sort by a comparator lambda.

    For a consistent comparator it orders exactly as the reference's insertion
    sort does (both are stable: ties keep their input order), in O(n log n)
    comparisons instead of O(n²).
    """
    less, greater = Ordering.LESS, Ordering.GREATER

    def compare(a: Any, b: Any) -> int:
        order = comparator(a, b)  # an Ordering (absent only from a comparator gone wrong: 0)
        return -1 if order is less else 1 if order is greater else 0

    return _leading(items, functools.cmp_to_key(compare), limit)


# --- take, filter, map, typed -----------------------------------------------------


def check_take(call: StepTyping) -> Type:
    element = call.element()
    count = call.value("n")
    if count != ty.INT:
        raise call.error(messages.argument_type("take", "n", ty.INT, count), call.arg_span("n"))
    shape = ty.strip_option(call.input)
    if shape.name == "Ranking":
        return shape
    if shape.name not in ty.SEQUENCES and not ty.is_orderable(element):
        taken_from = "a set" if shape.name == "Set" else str(shape)  # Data has no positions either
        raise call.error(messages.take_needs_order(element, taken_from), call.input_span)
    return ty.list_of(element)


def run_take(call: StepCall) -> Any:
    count = call.args["n"]
    if count < 0:
        raise call.fail(messages.negative_count())
    value = call.input
    if isinstance(value, Ranking):
        # A ranking is immutable: one no longer than `count` is its own first `count` hits.
        return value if len(value.hits) <= count else Ranking(value.hits[:count], value.retrieval)
    items = elements(value)
    if isinstance(value, SetValue):
        # The first `count` in order: nsmallest is sorted(...)[:count] (ties stay in their
        # order), without ordering the whole set (`cards | take(10)` of a large vault).
        listed = list(items)
        if _plainly_ordered(listed):
            return ListValue(tuple(_leading_plainly(listed, False, count)))
        if _cards_alone(listed):
            return ListValue(tuple(_leading_plainly(listed, False, count, _CARD_NAME)))
        return ListValue(tuple(_leading(listed, functools.cmp_to_key(compare_values), count)))
    return ListValue(items[:count])


def check_filter(call: StepTyping) -> Type:
    element = call.element()
    result = call.lambda_result("by", [element])
    if ty.strip_option(result) != ty.BOOL:
        raise call.error(messages.filter_result(result), call.arg_span("by"))
    return _same_shape(call.input, element)


def _same_shape(input_type: Type, element: Type) -> Type:
    shape = ty.strip_option(input_type)
    if shape.name == "Ranking":
        return Type("Ranking", (ty.strip_option(element).arg,)) if element.name == "Hit" else shape
    if shape.name == "Set":
        return ty.set_of(element)
    return ty.list_of(element)


def run_filter(call: StepCall) -> Any:
    keep = call.args["by"]
    value = call.input
    conditions = call.hint("card_mask")
    if conditions and isinstance(value, SetValue):
        # The planner's `folder-mask` / `tag-mask`: the lambda tests only folders and tags,
        # the input is the vault's cards built when first read; their paths and the
        # catalogue's tag column say which it keeps.
        matching = getattr(value.items, "matching", None)
        kept_by_mask = matching(conditions) if matching is not None else None
        if kept_by_mask is not None:
            return SetValue(kept_by_mask)
    kept = tuple(item for item in elements(value) if keep(item) is True)
    if isinstance(value, Ranking):
        return Ranking(kept, value.retrieval)
    if isinstance(value, SetValue):
        return SetValue(kept)
    return ListValue(kept)


def check_map(call: StepTyping) -> Type:
    element = call.element()
    return ty.list_of(call.lambda_result("by", [element]))


def run_map(call: StepCall) -> ListValue:
    function = call.args["by"]
    parts = (function(item) for item in elements(call.input))
    return call.interpreter.budget.gather(parts)


def check_typed(call: StepTyping) -> Type:
    element = call.element()
    target = call.type_argument("as")
    if (
        element.name == "Hit" and target.name != "Hit"
    ):  # on a ranking, hits are selected by their card
        if not (ty.is_subtype(target, element.arg) or ty.is_subtype(element.arg, target)):
            raise call.error(
                messages.typed_selects_nothing(element.arg, target), call.arg_span("as")
            )
        shape = ty.strip_option(call.input)
        narrowed = target if ty.is_subtype(target, element.arg) else element.arg
        return (
            ty.ranking_of(narrowed) if shape.name == "Ranking" else ty.list_of(ty.hit_of(narrowed))
        )
    if ty.is_subtype(element, target):
        narrowed = element
    elif ty.is_subtype(target, element) or element == ty.DATA:
        narrowed = target
    else:
        raise call.error(messages.typed_selects_nothing(element, target), call.arg_span("as"))
    return _same_shape(call.input, narrowed) if call.input.name != "Ranking" else call.input


def run_typed(call: StepCall) -> Any:
    target = call.type_argument()
    value = call.input
    kept = tuple(item for item in elements(value) if runtime_is(item, target))
    if isinstance(value, Ranking):
        return Ranking(kept, value.retrieval)
    if isinstance(value, SetValue):
        return SetValue(kept)
    return ListValue(kept)


def runtime_is(value: Any, target: Type) -> bool:
    """Whether a value's runtime type is a subtype of `target` (cards by their verified kind)."""
    from hql.values import Data, Hit

    if isinstance(value, Card):
        return ty.is_subtype(Type(value.kind), target)
    if isinstance(value, Hit):
        if target.name == "Hit":
            return runtime_is(value.card, target.arg)
        return runtime_is(value.card, target)
    if isinstance(value, bool):
        return ty.is_subtype(ty.BOOL, target)
    if isinstance(value, int):
        return ty.is_subtype(ty.INT, target)
    if isinstance(value, float):
        return ty.is_subtype(ty.FLOAT, target)
    if isinstance(value, str):
        return ty.is_subtype(ty.STRING, target)
    if isinstance(value, Data):
        return target == ty.DATA
    return False


TAKE_N = Param("n", "Int")
BY_LAMBDA = Param("by", "T => Bool", kind="lambda")

for spec in (
    StepSpec(
        "size",
        "core",
        (),
        "Collection<T> | size -> Int",
        "how many elements",
        "cards | size",
        check_size,
        run_size,
        direct=True,
        absorbs=("card-count",),
    ),
    StepSpec(
        "contains",
        "core",
        (Param("value", "T", named=False),),
        "Collection<T> | contains(value: T) -> Bool; String | contains(value: String) -> Bool",
        "whether a value occurs; on a String, whether the text occurs in it",
        "[1, 2] | contains(2)",
        check_contains,
        run_contains,
        direct=True,
    ),
    StepSpec(
        "get",
        "core",
        (Param("key", "K", named=False),),
        "Map<K, V> | get(key: K) -> Option<V>",
        "look a key up in a map",
        'Map(["a"], [1]) | get("a")',
        check_get,
        run_get,
        direct=True,
    ),
    StepSpec(
        "count",
        "core",
        (Param("value", "T", default=None, named=False),),
        "Collection<T> | count(value?: T) -> Int",
        "how many elements; with a value, how many equal it",
        "cards | count",
        check_count,
        run_count,
        direct=True,
        absorbs=("card-count",),
    ),
    StepSpec(
        "sort",
        "core",
        (
            Param("by", "T => Orderable | (T, T) => Ordering", default=None, kind="lambda"),
            Param("descending", "Bool | List<Bool>", default=False, positional=False),
        ),
        "Collection<T> | sort<T>(by?: T => Orderable | List<Orderable> | (T, T) => Ordering,"
        " descending?: Bool | List<Bool>) -> List<T>",
        "order elements by their own key, a key lambda (a list of keys: ties go to the next,"
        " `descending` per key) or a comparator; ties keep their order",
        "cards | sort(by = c => c.title)",
        check_sort,
        run_sort,
        direct=True,
        absorbs=("limit",),
    ),
    StepSpec(
        "take",
        "core",
        (TAKE_N,),
        "Collection<T> | take<T>(n: Int) -> List<T> (Ranking input stays Ranking)",
        "the first n elements (a set is ordered by its elements' own key first)",
        "cards | take(5)",
        check_take,
        run_take,
    ),
    StepSpec(
        "filter",
        "core",
        (BY_LAMBDA,),
        "Collection<T> | filter<T>(by: T => Bool) -> same collection",
        "keep the elements for which the lambda is true",
        'cards | filter(c => c.metadata.status == "todo")',
        check_filter,
        run_filter,
        absorbs=("card-mask",),
    ),
    StepSpec(
        "map",
        "core",
        (Param("by", "T => R", kind="lambda"),),
        "Collection<T> | map<T, R>(by: T => R) -> List<R>",
        "apply a lambda to every element",
        "cards | map(c => c.title)",
        check_map,
        run_map,
    ),
    StepSpec(
        "typed",
        "core",
        (Param("as", "Type", kind="type"),),
        "Collection<T> | typed<T, U : T>(as: Type U) -> same collection of U",
        "keep the elements whose runtime type is the named type",
        "cards | typed(RelationCard)",
        check_typed,
        run_typed,
    ),
):
    REGISTRY.add(spec)

__all__ = ["comparable", "distinct", "runtime_is"]
