"""`as_of(date)`: the cards as the vault stood on a day (memory.md §5; rules in hql.vault.currency);
`recall(query)`: concepts ranked for a question (memory.md §7; hql.notes.recall).

    cards | as_of("2024-05-01") | bm25("token lifetime")

keeps, in order, the cards current on that day: none that began later (`valid_from`,
else `created`), none superseded by a note that held by then, none past its
`valid_to`, none archived.
"""

from __future__ import annotations

from typing import Any

from hql import messages
from hql import types as ty
from hql.checker import StepTyping
from hql.interpreter import StepCall
from hql.registry import REGISTRY, Param, StepSpec
from hql.types import Type
from hql.values import Date, Hit, ListValue, Ranking, Retrieval, elements
from hql.version import __version__


def check_as_of(call: StepTyping) -> Type:
    element = call.element()
    if not (ty.is_document(element) or element == ty.NEVER):
        raise call.error(messages.ranks_documents("as_of", element), call.input_span)
    day = call.value("date")
    if day not in (ty.STRING, ty.DATE):
        raise call.error(
            messages.argument_type("as_of", "date", "a String or a Date", day),
            call.arg_span("date"),
        )
    return ty.list_of(ty.strip_option(element) if element != ty.NEVER else ty.CARD)


def run_as_of(call: StepCall) -> ListValue:
    from hql.notes.time import as_of, day_of

    given: Any = call.args["date"]
    day = day_of(given.value if isinstance(given, Date) else given)
    if day is None:
        raise call.fail(messages.as_of_bad_date(str(given)))
    return ListValue(tuple(as_of(elements(call.input), day)))


REGISTRY.add(
    StepSpec(
        "as_of",
        "core",
        (Param("date", "String | Date", named=False),),
        "Collection<Card> | as_of(date: String | Date) -> List<Card>",
        "the cards current on that day: not yet begun, superseded, expired and archived ones left out",
        'cards | as_of("2024-05-01")',
        check_as_of,
        run_as_of,
    )
)


# --- recall(query): concepts, not cards (memory.md §7; hql.notes.recall) ---------------


def check_recall(call: StepTyping) -> Type:
    element = call.element()
    if element.name == "Hit":
        element = element.arg
    if not (ty.is_document(element) or element == ty.NEVER):
        raise call.error(messages.ranks_documents("recall", element), call.input_span)
    query = call.value("query")
    if query != ty.STRING:
        raise call.error(messages.query_is_text(query), call.arg_span("query"))
    return ty.ranking_of(ty.CONCEPT)


def run_recall(call: StepCall) -> Ranking:
    from hql.notes.recall import recall
    from hql.search.bm25 import METRIC, MODEL

    query = call.args["query"]
    cards = [item.card if isinstance(item, Hit) else item for item in elements(call.input)]
    found, extra, warnings = recall(cards, query, call.vault, call.limit)
    for message in warnings:
        call.warn(message)
    where = str(call.vault.state_dir) if call.vault is not None else ""
    retrieval = Retrieval(query, where, f"{MODEL}+concepts", __version__, METRIC, False, extra)
    hits = tuple(Hit(concept, score, retrieval, detail) for concept, score, detail in found)
    return Ranking(hits, retrieval)


REGISTRY.add(
    StepSpec(
        "recall",
        "core",
        (Param("query", "String"),),
        "Collection<Card> | recall(query: String) -> Ranking<Concept>",
        "rank concepts, not cards: concept cards, relation endpoints that have no card and the "
        "concepts of [memory] concepts; the retrieval counts those it cannot reach",
        'cards | recall("token rotation")',
        check_recall,
        run_recall,
        absorbs=("limit",),
    )
)
