"""The `rerank` step: a ranking's first hits reordered by a rerank model behind HTTP.

`ranking | rerank` sends the ranking's query and its first `cap` cards (default 50) to
the endpoint in hql.toml's `[rerank]` table (hql.search.rerank) and answers those cards
in the model's order. The retrieval names the model, the endpoint, the cap and how many
hits were left out, and keeps the input's retrieval; each hit keeps its rerank score and
its rank and score in the input. A failing endpoint is a report, or with
`on_unavailable = "keep"` a warning and the input's order, recorded as a fallback.
"""

from __future__ import annotations

from typing import Any

from hql import messages
from hql import types as ty
from hql.checker import StepTyping
from hql.interpreter import StepCall
from hql.registry import REGISTRY, Param, StepSpec
from hql.types import Type
from hql.values import Hit, Ranking, Retrieval
from hql.version import __version__

METRIC = "rerank"

REGISTRY.extension(
    "rerank", version=__version__, summary="a ranking reordered by a rerank model over HTTP"
)


def check_rerank(call: StepTyping) -> Type:
    shape = ty.strip_option(call.input)
    if shape.name != "Ranking":
        raise call.error(messages.rerank_needs_ranking(call.input), call.input_span)
    if call.has("query") and call.value("query") != ty.STRING:
        raise call.error(
            messages.argument_type("rerank", "query", ty.STRING, call.value("query")),
            call.arg_span("query"),
        )
    if call.has("cap") and call.value("cap") != ty.INT:
        raise call.error(
            messages.argument_type("rerank", "cap", ty.INT, call.value("cap")),
            call.arg_span("cap"),
        )
    return shape


def run_rerank(call: StepCall) -> Ranking:
    from hql.search.rerank import (
        DEFAULT_CAP,
        RerankConfig,
        RerankError,
        RerankUnavailable,
        rerank_scores,
    )

    ranking = call.input if isinstance(call.input, Ranking) else None
    if ranking is None:
        return Ranking((), Retrieval("", "", "", "", METRIC, False))
    cap = call.args.get("cap", DEFAULT_CAP)
    if cap is None:
        cap = DEFAULT_CAP
    if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0:
        raise call.fail(messages.rerank_bad_cap(cap))
    section = call.vault.config.section("rerank") if call.vault is not None else {}
    try:
        config = RerankConfig.from_section(section)
    except RerankError as error:
        raise call.fail(str(error)) from None
    query = call.args.get("query") or ranking.retrieval.query
    candidates = list(ranking.hits[:cap])
    extra: dict[str, Any] = {
        "endpoint": config.url,
        "cap": cap,
        "candidates": len(candidates),
        "left_out": len(ranking.hits) - len(candidates),
        "input": ranking.retrieval.as_tree(),
    }
    try:
        scores = rerank_scores(config, query, [_document(hit) for hit in candidates])
    except RerankUnavailable as error:
        if config.on_unavailable != "keep":
            raise call.fail(str(error)) from None
        call.warn(messages.rerank_fell_back(str(error)))
        extra["fallback"] = {"from": "rerank", "reason": str(error)}
        scores = None
    retrieval = Retrieval(query, config.url, config.model, "", METRIC, False, extra)
    placed = [
        (hit, rank, hit.score if scores is None else scores[rank - 1])
        for rank, hit in enumerate(candidates, start=1)
    ]
    if scores is not None:  # best first; a tie keeps the input's order
        placed.sort(key=lambda item: (-item[2], item[1]))
    return Ranking(
        tuple(
            Hit(
                hit.card,
                score,
                retrieval,
                {
                    **(hit.detail or {}),
                    "rerank": {"input_rank": rank, "input_score": hit.score},
                },
            )
            for hit, rank, score in placed
        ),
        retrieval,
    )


def _document(hit: Hit) -> str:
    """What the model reads of a hit: the card's title and text."""
    card = hit.card
    title = getattr(card, "title", "") or ""
    text = getattr(card, "text", "") or ""
    return f"{title}\n\n{text}" if title else str(text)


REGISTRY.add(
    StepSpec(
        "rerank",
        "rerank",
        (
            Param("query", "String", default=None),
            Param("cap", "Int", default=50, positional=False),
        ),
        "Ranking<T> | rerank(query?: String, cap: Int = 50) -> Ranking<T>",
        "reorder a ranking's first `cap` hits by the rerank model in hql.toml [rerank] "
        "(POST /rerank, Cohere/Jina or TEI shape); the rest are left out, and said so",
        'cards | hybrid("how do clients prove who they are") | rerank | take(5)',
        check_rerank,
        run_rerank,
    )
)
