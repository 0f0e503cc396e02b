"""What the string, number and conversion steps share: scalar inputs that may be absent or Data.

A step such as `lower` takes a `String`. It also takes an `Option<String>`
(absence gives absence) and `Data` (a front-matter value, typed when the
program runs: a string leaf is used, an empty one gives absence, any other kind
gives absence and one warning per step that counts how often it happened).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import types as ty
from hql.types import Type
from hql.values import ABSENT, Data

if TYPE_CHECKING:
    from hql.checker import StepTyping
    from hql.interpreter import StepCall


class Reach(enum.Enum):
    """How a value of some type reaches a step that takes a scalar."""

    PLAIN = "plain"  # the type itself
    OPTIONAL = "optional"  # Option of it: absence gives absence
    RUNTIME = "runtime"  # Data: its kind is known only when the program runs


def reach(found: Type, accepted: tuple[Type, ...]) -> Reach | None:
    if found in accepted or found == ty.NEVER:
        return Reach.PLAIN
    if found == ty.DATA:
        return Reach.RUNTIME
    if found.name == "Option":
        if found.arg in accepted or found.arg == ty.NEVER:
            return Reach.OPTIONAL
        if found.arg == ty.DATA:
            return Reach.RUNTIME
    return None


def may_be_absent(*reaches: Reach) -> bool:
    return any(r is not Reach.PLAIN for r in reaches)


def result(base: Type, *reaches: Reach) -> Type:
    """A step's result type: optional when any input may turn out absent."""
    return ty.option(base) if may_be_absent(*reaches) else base


def input_reach(call: StepTyping, accepted: tuple[Type, ...], wanted: str) -> Reach:
    """How the step's input reaches it; a type error at the input when it cannot."""
    found = reach(call.input, accepted)
    if found is None:
        collection = ty.element_type(call.input) is not None and call.input != ty.DATA
        raise call.error(
            messages.works_on(call.spec.name, wanted, call.input, collection), call.input_span
        )
    return found


def argument_reach(call: StepTyping, name: str, accepted: tuple[Type, ...], shown: str) -> Reach:
    found_type = call.value(name)
    found = reach(found_type, accepted)
    if found is None:
        raise call.error(
            messages.argument_type(call.spec.name, name, shown, found_type), call.arg_span(name)
        )
    return found


# --- run time ------------------------------------------------------------------

TEXT = (str,)
NUMBER = (int, float)


def kind_matches(tree: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(tree, bool):
        return bool in kinds
    return isinstance(tree, kinds)


def unwrap(call: StepCall, value: Any, kinds: tuple[type, ...], wanted: str) -> Any:
    """The plain Python value a step works on, or ABSENT (warned about when Data held a wrong kind)."""
    if value is ABSENT:
        return ABSENT
    if isinstance(value, Data):
        tree = value.tree
        if tree is None:
            return ABSENT
        if kind_matches(tree, kinds):
            return tree
        mismatch(call, wanted)
        return ABSENT
    return value


def mismatch(call: StepCall, wanted: str) -> None:
    name = call.spec.name
    call.interpreter.warn_counted(
        f"kind:{name}", call.span, lambda count: messages.data_wrong_kind(name, wanted, count)
    )


def lifted(
    kinds: tuple[type, ...],
    wanted: str,
    apply: Callable[..., Any],
    params: tuple[str, ...] = (),
    param_kinds: tuple[type, ...] = TEXT,
) -> Callable[[StepCall], Any]:
    """A run function: unwrap the input and the named arguments, absence in gives absence out."""

    def run(call: StepCall) -> Any:
        value = unwrap(call, call.input, kinds, wanted)
        if value is ABSENT:
            return ABSENT
        args = [unwrap(call, call.args[name], param_kinds, wanted) for name in params]
        if any(arg is ABSENT for arg in args):
            return ABSENT
        return apply(call, value, *args)

    return run


def argument_span(call: StepCall, name: str) -> Any:
    """Where an argument was written (for failures that belong to the argument)."""
    return call.interpreter.plan.arguments[call.node][name].span


# --- `contains` on a String ------------------------------------------------------


def check_substring(call: StepTyping) -> Type:
    argument_reach(call, "value", (ty.STRING,), "String")
    return ty.BOOL


def run_substring(call: StepCall) -> bool:
    part = call.args["value"]
    if isinstance(part, Data):
        part = part.tree
    return isinstance(part, str) and part in call.input


# --- ordering Data (sort keys, min and max) -------------------------------------------


def data_key(value: Any) -> tuple[int, Any] | None:
    """How a Data leaf orders: numbers, then strings (by code point), then Booleans; None
    for absence, emptiness and lists or maps, which have no order."""
    if isinstance(value, Data):
        value = value.tree
    if value is ABSENT or value is None:
        return None
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    return None


def data_compare(a: Any, b: Any, descending: bool = False) -> int:
    """Order two Data values; those without an order come last in either direction."""
    ka, kb = data_key(a), data_key(b)
    if ka is None or kb is None:
        return (ka is None) - (kb is None)
    order = (ka > kb) - (ka < kb)
    return -order if descending else order
