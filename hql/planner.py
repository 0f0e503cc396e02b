"""The planner: rewrites a checked plan into one that computes the same answer for less.

It runs between the checker and the interpreter. Each rule is a small function
that reads what steps declare they can absorb (`StepSpec.absorbs`), never step
names, and records a line in `Plan.rewrites` when it fires, so `explain` can
say what changed. A rule only ever adds hints: the stages of the program stay
as written, and a step that ignores a hint still gives the same value.

Rules:
* `top-k`: `step | take(k)` with a literal `k`, where the step absorbs a
  `limit`, lets the step produce only its first `k` elements (a ranker selects
  the best k without sorting or explaining every card it scored; `sort` keeps the
  first k by a heap selection).
* `card-count`: `cards | count` (or `size`, or `count(cards)`), where the step
  absorbs `card-count`, is how many cards the vault holds: a vault opened from
  its catalogue answers without building a single card.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hql.checker import RESERVED, Plan
from hql.record import replace
from hql.syntax import tree as t

Rule = Callable[[Plan, dict[t.Node, dict[str, Any]], list[str]], None]


def optimize(plan: Plan) -> Plan:
    """A plan with the same answers whose steps may do less work."""
    hints: dict[t.Node, dict[str, Any]] = {}
    rewrites: list[str] = []
    for rule in RULES:
        rule(plan, hints, rewrites)
    if not rewrites:
        return plan
    return replace(plan, hints=hints, rewrites=rewrites)


def top_k(plan: Plan, hints: dict[t.Node, dict[str, Any]], rewrites: list[str]) -> None:
    for node, spec in plan.steps.items():
        if spec.name != "take" or spec.extension != "core" or not isinstance(node, t.Pipe):
            continue
        count = _literal_count(plan, node)
        inner = node.input
        inner_spec = plan.steps.get(inner)
        if count is None or inner_spec is None or "limit" not in inner_spec.absorbs:
            continue
        hint = hints.setdefault(inner, {})
        hint["limit"] = min(count, hint.get("limit", count))
        rewrites.append(f"top-k: take({count}) pushed into {inner_spec.name}")


def _literal_count(plan: Plan, node: t.Node) -> int | None:
    argument = plan.arguments.get(node, {}).get("n")
    value = argument.value if argument is not None else None
    if isinstance(value, t.IntLit) and value.value >= 0:
        return int(value.value)
    return None


def card_count(plan: Plan, hints: dict[t.Node, dict[str, Any]], rewrites: list[str]) -> None:
    shadowed: bool | None = None
    for node, spec in plan.steps.items():
        if "card-count" not in spec.absorbs or plan.arguments.get(node, {}).get("value"):
            continue
        source = node.input if isinstance(node, t.Pipe) else plan.inputs.get(node)
        if not isinstance(source, t.Name) or source.name != RESERVED:
            continue
        if shadowed is None:  # a lambda parameter may be called `cards`
            shadowed = RESERVED in _lambda_parameters(plan.program)
        if shadowed:
            return
        hints.setdefault(node, {})["card_count"] = True
        rewrites.append(f"card-count: {spec.name} of cards is how many the vault holds")


def _lambda_parameters(node: object) -> set[str]:
    found: set[str] = set()
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, t.Lambda):
            found.update(item.params)
        if isinstance(item, t.Node):
            pending.extend(getattr(item, name) for name in item._fields)
        elif isinstance(item, tuple):
            pending.extend(item)
    return found


RULES: tuple[Rule, ...] = (top_k, card_count)
