"""Extension `graph` (prelude): links, relation cards and graphs that say why each node is present."""

from __future__ import annotations

from typing import Any

from hql import messages
from hql import types as ty
from hql.checker import StepTyping
from hql.interpreter import StepCall
from hql.registry import REGISTRY, Param, StepSpec
from hql.types import Type
from hql.values import ABSENT, Card, Hit, ListValue, elements
from hql.version import __version__

REGISTRY.extension(
    "graph", version=__version__, summary="links, relations and knowledge graphs", prelude=True
)

DIRECTIONS = ("uplinks", "downlinks", "both")


def _is_card_like(t: Type) -> bool:
    """A card, a hit on one, or nothing yet (an empty literal's element type)."""
    t = ty.strip_option(t)
    return ty.is_document(t) or (t.name == "Hit" and _is_card_like(t.arg)) or t == ty.NEVER


def _check_cards(call: StepTyping, allow_graph: bool) -> None:
    if _is_card_like(call.input) or (allow_graph and ty.strip_option(call.input) == ty.GRAPH):
        return
    element = ty.element_type(call.input)
    if element is None or not _is_card_like(element):
        raise call.error(messages.needs_cards(call.spec.name, call.input), call.input_span)


def _cards_of(value: Any) -> list[Card]:
    if value is ABSENT:
        return []
    if isinstance(value, Card):
        return [value]
    if isinstance(value, Hit):
        return [value.card]
    return [item.card if isinstance(item, Hit) else item for item in elements(value)]


def check_links(call: StepTyping) -> Type:
    _check_cards(call, allow_graph=False)
    if call.spec.name == "downlinks" and not call.has_vault:
        raise call.error(messages.downlinks_needs_vault())
    return ty.list_of(ty.EDGE)


def run_uplinks(call: StepCall) -> ListValue:
    vault = call.vault
    if vault is None:
        return ListValue(())
    return ListValue(
        tuple(edge for card in _cards_of(call.input) for edge in vault.uplinks(card.name))
    )


def run_downlinks(call: StepCall) -> ListValue:
    vault = call.vault
    assert vault is not None
    return ListValue(
        tuple(edge for card in _cards_of(call.input) for edge in vault.downlinks(card.name))
    )


def check_graph(call: StepTyping) -> Type:
    _check_cards(call, allow_graph=True)
    return ty.GRAPH


def _project(call: StepCall) -> Any:
    from hql.graphs import Graph, project

    value = call.input
    if isinstance(value, Graph):
        return value
    if value is ABSENT:
        items: list[Any] = []
    elif isinstance(value, Card | Hit):
        items = [value]
    else:
        items = list(elements(value))
    return project(items, call.vault)


def run_graph(call: StepCall) -> Any:
    return _project(call)


def check_expand(call: StepTyping) -> Type:
    _check_cards(call, allow_graph=True)
    if call.has("depth") and call.value("depth") != ty.INT:
        raise call.error(
            messages.argument_type("expand", "depth", ty.INT, call.value("depth")),
            call.arg_span("depth"),
        )
    if call.has("direction") and call.value("direction") != ty.STRING:
        raise call.error(
            messages.argument_type("expand", "direction", ty.STRING, call.value("direction")),
            call.arg_span("direction"),
        )
    if call.has("missing") and call.value("missing") != ty.BOOL:
        raise call.error(
            messages.argument_type("expand", "missing", ty.BOOL, call.value("missing")),
            call.arg_span("missing"),
        )
    if not call.has_vault:
        raise call.error(messages.expand_needs_vault())
    return ty.GRAPH


def run_expand(call: StepCall) -> Any:
    from hql.graphs import expand

    depth = call.args.get("depth", 1)
    direction = call.args.get("direction", "both")
    if depth < 0:
        raise call.fail(messages.negative_depth())
    if direction not in DIRECTIONS:
        raise call.fail(messages.bad_direction(direction))
    missing = call.args.get("missing", True)
    assert call.vault is not None
    return expand(_project(call), call.vault, depth, direction, missing)


for spec in (
    StepSpec(
        "uplinks",
        "graph",
        (),
        "Card | Collection<Card> | uplinks -> List<Edge>",
        "edges leaving the cards (their links and relations)",
        "[[oauth]] | uplinks",
        check_links,
        run_uplinks,
    ),
    StepSpec(
        "downlinks",
        "graph",
        (),
        "Card | Collection<Card> | downlinks -> List<Edge>",
        "edges arriving at the cards; needs a vault",
        "[[oauth]] | downlinks",
        check_links,
        run_downlinks,
    ),
    StepSpec(
        "graph",
        "graph",
        (),
        "Card | Collection<Card | Hit<Card>> | Graph | graph -> Graph",
        "project cards and hits into a graph; relation cards seed their endpoints",
        "cards | typed(RelationCard) | graph",
        check_graph,
        run_graph,
    ),
    StepSpec(
        "expand",
        "graph",
        (
            Param("depth", "Int", default=1),
            Param("direction", "String", default="both", positional=False),
            Param("missing", "Bool", default=True, positional=False),
        ),
        'Card | Collection<Card | Hit<Card>> | Graph | expand(depth: Int = 1, direction: String = "both", missing: Bool = true) -> Graph',
        "grow a graph breadth-first along uplinks, downlinks or both; needs a vault;"
        " `missing = false` leaves out link targets that name no card",
        "[[oauth]] | expand(depth = 2)",
        check_expand,
        run_expand,
    ),
):
    REGISTRY.add(spec)
