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
* `relevant-cut`: `step | relevant` (no `min`, or a literal one), where the
  step absorbs `relevant`, tells the step which rule follows: it may hand on
  only the hits that rule can keep, stating how many it left out (a bm25
  ranking of 100k cards then builds a few hundred hits, not every card that
  shares a word with the question).
* `ranking-count`: `step | count` (or `size`, or `count(step)`), where the
  step absorbs `count`, reads only how many hits the ranking has: the step
  may stand for its hits by their number (`hql.values.UnmadeHits`), making
  them only if something else asks.
* `card-count`: `cards | count` (or `size`, or `count(cards)`), where the step
  absorbs `card-count`, is how many cards the vault holds: a vault opened from
  its catalogue answers without building a single card.
* `lazy-cards`: `cards | step | take(k)` (or `| relevant`, or `| count`, cut as
  above), where the step absorbs `lazy-cards`, gets the vault's own `cards` as
  a sequence that builds each card when first read: a ranker with a stored
  index builds only the hits it hands on.
* `folder-mask` (`tag-mask`): `cards | filter(c => …) | step | take(k)`,
  where the filter absorbs `card-mask`, the step `lazy-cards` and `limit`, and
  the lambda is a conjunction of `c.folder == "x"`, `in_folder(c, "x")` (and
  `has_tag(c, "x")`): the filter keeps the cards whose paths lie there (and
  whose tags, kept in the catalogue, say so) without building any, and the
  step builds only the cards it hands on.
* `store-filter`: `filter(c => …) | step` where the step absorbs a
  `store_filter` and the lambda is a conjunction of conditions a vector store
  can test on its own payload (`c.folder == "x"`, `in_folder(c, "x")`,
  `has_tag(c, "x")`, `c.metadata.key == "x"`): the step receives them as
  `(field, value)` pairs. The filter still runs; the store uses the conditions
  only when it finds them select exactly the filter's cards (hql.index.stores).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hql.checker import Plan
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


def relevant_cut(plan: Plan, hints: dict[t.Node, dict[str, Any]], rewrites: list[str]) -> None:
    for node, spec in plan.steps.items():
        if (spec.name, spec.extension) != ("relevant", "core") or not isinstance(node, t.Pipe):
            continue
        inner = node.input
        inner_spec = plan.steps.get(inner)
        if inner_spec is None or "relevant" not in inner_spec.absorbs:
            continue
        if "evidence" in plan.arguments.get(node, {}):
            continue  # an evidence threshold is not the ranker's rule: every hit is judged
        argument = plan.arguments.get(node, {}).get("min")
        minimum = argument.value if argument is not None else None
        if minimum is None:
            floor = None
        elif isinstance(minimum, t.IntLit | t.FloatLit):
            floor = float(minimum.value)
        else:
            continue
        hints.setdefault(inner, {})["relevant"] = {"min": floor}
        rewrites.append(
            f"relevant-cut: {inner_spec.name} hands relevant only the hits its rule can keep"
        )


def ranking_count(plan: Plan, hints: dict[t.Node, dict[str, Any]], rewrites: list[str]) -> None:
    for node, spec in plan.steps.items():
        if "card-count" not in spec.absorbs or plan.arguments.get(node, {}).get("value"):
            continue
        source = node.input if isinstance(node, t.Pipe) else plan.inputs.get(node)
        source_spec = plan.steps.get(source) if source is not None else None
        if source is None or source_spec is None or "count" not in source_spec.absorbs:
            continue
        if hints.get(source, {}).get("limit") is not None:
            continue
        hints.setdefault(source, {})["count_only"] = True
        rewrites.append(f"ranking-count: {spec.name} of {source_spec.name} makes no hit")


def card_count(plan: Plan, hints: dict[t.Node, dict[str, Any]], rewrites: list[str]) -> None:
    for node, spec in plan.steps.items():
        if "card-count" not in spec.absorbs or plan.arguments.get(node, {}).get("value"):
            continue
        source = node.input if isinstance(node, t.Pipe) else plan.inputs.get(node)
        if source not in plan.vault_cards:  # a lambda parameter may also be called `cards`
            continue
        hints.setdefault(node, {})["card_count"] = True
        rewrites.append(f"card-count: {spec.name} of cards is how many the vault holds")


def lazy_cards(plan: Plan, hints: dict[t.Node, dict[str, Any]], rewrites: list[str]) -> None:
    for node, spec in plan.steps.items():
        hint = hints.get(node, {})
        cut = hint.get("limit") is not None or hint.get("relevant") or hint.get("count_only")
        if "lazy-cards" not in spec.absorbs or not cut:
            continue
        source = node.input if isinstance(node, t.Pipe) else plan.inputs.get(node)
        if source not in plan.vault_cards:
            continue
        hints.setdefault(source, {})["lazy_cards"] = True
        rewrites.append(f"lazy-cards: {spec.name} builds only the cards it hands on")


def folder_mask(plan: Plan, hints: dict[t.Node, dict[str, Any]], rewrites: list[str]) -> None:
    for node, spec in plan.steps.items():
        if "lazy-cards" not in spec.absorbs or not isinstance(node, t.Pipe):
            continue
        inner = node.input
        inner_spec = plan.steps.get(inner)
        if hints.get(node, {}).get("limit") is None or inner_spec is None:
            continue
        if "card-mask" not in inner_spec.absorbs or not isinstance(inner, t.Pipe):
            continue
        if inner.input not in plan.vault_cards:
            continue
        conditions = _filter_conditions(plan, inner)
        fields = {field for field, _ in conditions or ()}
        if not conditions or not fields <= {"folder", "folder_tree", "tag_tree"}:
            continue
        hints.setdefault(inner.input, {})["lazy_cards"] = True
        hints.setdefault(inner, {})["card_mask"] = tuple(conditions)
        if "tag_tree" in fields:
            kept_by = "tag-mask: {} keeps cards by their paths and tags"
        else:
            kept_by = "folder-mask: {} keeps cards by their paths"
        rewrites.append(
            f"{kept_by.format(inner_spec.name)} and {spec.name} builds only the cards it hands on"
        )


def store_filter(plan: Plan, hints: dict[t.Node, dict[str, Any]], rewrites: list[str]) -> None:
    for node, spec in plan.steps.items():
        if "store_filter" not in spec.absorbs or not isinstance(node, t.Pipe):
            continue
        inner = node.input
        inner_spec = plan.steps.get(inner)
        if inner_spec is None or (inner_spec.name, inner_spec.extension) != ("filter", "core"):
            continue
        conditions = _filter_conditions(plan, inner)
        if not conditions:
            continue
        hints.setdefault(node, {})["store_filter"] = tuple(conditions)
        shown = " and ".join(f"{field} = {value!r}" for field, value in conditions)
        rewrites.append(f"store-filter: {inner_spec.name} offered to {spec.name} ({shown})")


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _filter_conditions(plan: Plan, filter_step: t.Node) -> list[tuple[str, str]] | None:
    """A filter step's `by` lambda as the conditions `_store_conditions` reads, or None."""
    argument = plan.arguments.get(filter_step, {}).get("by")
    lambda_ = argument.value if argument is not None else None
    if not isinstance(lambda_, t.Lambda) or len(lambda_.params) != 1:
        return None
    return _store_conditions(plan, lambda_.body, lambda_.params[0])


def _store_conditions(plan: Plan, body: t.Expr, card: str) -> list[tuple[str, str]] | None:
    """The lambda body as (field, value) equalities a store can test, or None.

    Fields: `folder` (the card's folder), `folder_tree` (it or a folder above it),
    `tag_tree` (a tag, casefolded, or a tag above one: `has_tag`'s rule) and
    `metadata.KEY` (a top-level metadata value that is that very string).
    """
    if isinstance(body, t.Logic) and body.op == "and":
        left = _store_conditions(plan, body.left, card)
        right = _store_conditions(plan, body.right, card)
        return left + right if left is not None and right is not None else None
    if isinstance(body, t.Equality) and not body.negated:
        for subject, literal in ((body.left, body.right), (body.right, body.left)):
            field = _card_field(subject, card)
            if field is not None and isinstance(literal, t.StringLit):
                return [(field, literal.value)]
        return None
    if isinstance(body, t.Call) and isinstance(body.callee, t.Name) and len(body.args) == 2:
        spec = plan.functions.get(body)
        first, second = body.args[0].value, body.args[1].value
        if spec is None or not (isinstance(first, t.Name) and first.name == card):
            return None
        if not isinstance(second, t.StringLit) or any(a.name for a in body.args):
            return None
        if spec.name == "has_tag" and second.value.lstrip("#"):
            return [("tag_tree", second.value.lstrip("#").casefold())]
        if spec.name == "in_folder" and second.value.strip("/"):
            return [("folder_tree", second.value.strip("/"))]
    return None


def _card_field(expr: t.Expr, card: str) -> str | None:
    """`c.folder` → "folder"; `c.metadata.key` → "metadata.key"; anything else None."""
    if not isinstance(expr, t.Field):
        return None
    receiver = expr.receiver
    if isinstance(receiver, t.Name) and receiver.name == card and expr.name == "folder":
        return "folder"
    if (
        isinstance(receiver, t.Field)
        and receiver.name == "metadata"
        and isinstance(receiver.receiver, t.Name)
        and receiver.receiver.name == card
        and _IDENTIFIER.fullmatch(expr.name)
    ):
        return f"metadata.{expr.name}"
    return None


RULES: tuple[Rule, ...] = (
    top_k,
    relevant_cut,
    ranking_count,
    card_count,
    lazy_cards,
    folder_mask,
    store_filter,
)
