"""Context steps: `collapse` (near-duplicates hidden) over a ranking.

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
from hql.registry import REGISTRY, Param, StepSpec
from hql.types import Type
from hql.values import Ranking, Retrieval

if TYPE_CHECKING:
    from hql.context.collapse import VectorOf
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
