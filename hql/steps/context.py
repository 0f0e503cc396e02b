"""Context steps over a ranking: `collapse` (near-duplicates hidden) and `context` (a
budgeted, rendered context block).

The work is in hql.context (a library beside hql.search); these are the thin
typed layers the language calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hql import messages
from hql import types as ty
from hql.checker import StepTyping
from hql.interpreter import StepCall
from hql.record import replace
from hql.registry import REGISTRY, FunctionSpec, Param, StepSpec
from hql.syntax import tree as t
from hql.types import Type
from hql.values import Ranking, Retrieval, SetValue

if TYPE_CHECKING:
    from hql.checker import Checker
    from hql.context.collapse import VectorOf
    from hql.interpreter import Interpreter
    from hql.vault import Vault


def check_collapse(call: StepTyping) -> Type:
    shape = ty.strip_option(call.input)
    if shape.name != "Ranking":
        raise call.error(messages.collapse_needs_ranking(call.input), call.input_span)
    if call.has("threshold") and call.value("threshold") not in (ty.INT, ty.FLOAT):
        raise call.error(
            messages.argument_type("collapse", "threshold", ty.FLOAT, call.value("threshold")),
            call.arg_span("threshold"),
        )
    return shape


def run_collapse(call: StepCall) -> Ranking:
    ranking = call.input if isinstance(call.input, Ranking) else None
    if ranking is None:
        return Ranking((), Retrieval("", "", "", "", "", False))
    threshold = call.args.get("threshold")
    if threshold is not None and not 0.0 <= float(threshold) <= 1.0:
        raise call.fail(messages.collapse_threshold_range(float(threshold)))
    return collapse_ranking(
        ranking, None if threshold is None else float(threshold), vector_source(call.vault)
    )


def collapse_ranking(
    ranking: Ranking, threshold: float | None, vector_of: VectorOf | None = None
) -> Ranking:
    from hql.context.collapse import collapsed_hits
    from hql.steps.retrieval import restated

    hits, record = collapsed_hits(ranking.hits, threshold, vector_of)
    retrieval = replace(ranking.retrieval, extra={**ranking.retrieval.extra, "collapse": record})
    return restated(hits, retrieval)


def vector_source(vault: Vault | None) -> VectorOf | None:
    """Each card's vector from the vault's semantic index, when it has one built for the card's
    current text; None when the vault has no readable index (collapse then uses shingles)."""
    from hql.index.errors import SemanticIndexError

    if vault is None or not vault.config.section("semantics").get("index"):
        return None
    try:
        from hql.index.reader import open_vault_index

        index = open_vault_index(vault)  # type: ignore[arg-type]
    except (SemanticIndexError, OSError, ValueError):
        return None

    def vector_of(card: Any) -> Any:
        return index.card_vector(card.name, card.digest)

    return vector_of


def check_context(call: StepTyping) -> Type:
    shape = ty.strip_option(call.input)
    if shape.name != "Ranking":
        raise call.error(messages.context_needs_ranking(call.input), call.input_span)
    for name in ("budget", "max_items"):
        if call.has(name) and call.value(name) != ty.INT:
            raise call.error(
                messages.argument_type("context", name, ty.INT, call.value(name)),
                call.arg_span(name),
            )
    if call.has("format") and call.value("format") != ty.STRING:
        raise call.error(
            messages.argument_type("context", "format", ty.STRING, call.value("format")),
            call.arg_span("format"),
        )
    return ty.CONTEXT


def run_context(call: StepCall) -> Any:
    from hql.context.block import (
        DEFAULT_BUDGET,
        DEFAULT_MAX_ITEMS,
        FORMATS,
        ContextError,
        build_context,
    )

    budget = int(call.args.get("budget", DEFAULT_BUDGET))
    max_items = int(call.args.get("max_items", DEFAULT_MAX_ITEMS))
    form = str(call.args.get("format", "markdown"))
    if form not in FORMATS:
        raise call.fail(messages.context_bad_format(form))
    for name, number in (("budget", budget), ("max_items", max_items)):
        if number < 1:
            raise call.fail(messages.context_bad_number(name, number))
    ranking = call.input if isinstance(call.input, Ranking) else None
    hits = ranking.hits if ranking is not None else ()
    try:
        return build_context(
            context_items(hits, call.vault),
            budget=budget,
            max_items=max_items,
            form=form,
            abstention=None if hits else abstention_of(ranking),
            diagnostics={"input": len(hits)},
        )
    except ContextError as error:
        raise call.fail(str(error)) from None


def context_items(hits: Any, vault: Vault | None) -> list[Any]:
    from hql.context.block import item_for

    return [item_for(hit) for hit in hits]


def abstention_of(ranking: Ranking | None) -> str:
    """Why a ranking handed the block nothing, as its retrieval records it."""
    cutoff = ranking.retrieval.extra.get("cutoff") if ranking is not None else None
    if isinstance(cutoff, dict) and cutoff.get("candidates"):
        return messages.context_cutoff_kept_none(
            str(cutoff.get("rule")), int(cutoff.get("candidates") or 0)
        )
    if ranking is not None and not ranking.retrieval.model:
        return messages.context_nothing_passed_ranking()
    return messages.context_no_candidates()


REGISTRY.add(
    StepSpec(
        "context",
        "core",
        (
            Param("budget", "Int", default=2000, positional=False),
            Param("max_items", "Int", default=8, positional=False),
            Param("format", "String", default="markdown", positional=False),
        ),
        'Ranking<T> | context(budget: Int = 2000, max_items: Int = 8, format: String = "markdown") '
        "-> Context",
        "the ranking's cards as a context block within a token budget (estimated as "
        "ceil(chars / 4)); a `must` card that does not fit is a failure naming it",
        'cards | bm25("token") | relevant | context(budget = 800)',
        check_context,
        run_context,
    )
)

REGISTRY.add(
    StepSpec(
        "collapse",
        "core",
        (Param("threshold", "Float", default=None),),
        "Ranking<T> | collapse(threshold?: Float) -> Ranking<T>",
        "merge near-duplicate hits (word shingles, or cosine when both cards have vectors) "
        "into one representative that names the cards it stands for",
        'cards | bm25("token") | collapse',
        check_collapse,
        run_collapse,
    )
)


# --- cards(libraries = true) -------------------------------------------------------------


def check_cards(checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Any) -> Type:
    from hql.diagnostics import HqlError, name_error, type_error

    if not checker.has_vault:
        raise HqlError(name_error(messages.cards_needs_vault(), expr.span))
    for argument in args:
        if argument.name != "libraries":
            raise HqlError(type_error(messages.cards_call_arguments(), argument.span))
        found = checker.expression(argument.value)
        if found != ty.BOOL:
            raise HqlError(
                type_error(
                    messages.argument_type("cards", "libraries", ty.BOOL, found), argument.span
                )
            )
    return ty.set_of(ty.CARD)


def run_cards(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> SetValue:
    from hql.vault.libraries import all_cards

    vault = interpreter.vault
    assert vault is not None, "the checker lets `cards(…)` through only with a vault"
    if not (values and values[0] is True):
        return SetValue(vault.cards)
    for warning in vault.library_warnings():
        interpreter.warn(warning, expr.span)
    return SetValue(all_cards(vault, vault.libraries))


REGISTRY.add_function(
    FunctionSpec(
        "cards",
        "cards(libraries: Bool = false) -> Set<Card>",
        "the vault's cards; with `libraries = true` also every card of the libraries "
        "`[vault] libraries` names (tagged `c.library`, `c.scope`; a clashing name qualified "
        "`library:name`)",
        'cards(libraries = true) | filter(c => c.scope == "global")',
        check_cards,
        run_cards,
    )
)
