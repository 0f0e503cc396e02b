"""Retrieval steps: `lexical`, `bm25`, `semantic`, `hybrid`, `relevant`, and the `fuse` and `analyze` functions.

Every ranking carries the `Retrieval` that made it, one object shared by its
hits: a score is evidence, never relevance. Deciding relevance is the
`relevant` step's job, and it records its rule in the retrieval (`cutoff`).
The libraries behind these steps (hql.search, hql.index, hql.text) load only
when a step runs.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import types as ty
from hql.checker import StepTyping
from hql.diagnostics import HqlError, evaluation, type_error
from hql.extend import Context, Extension, register
from hql.interpreter import StepCall
from hql.record import replace
from hql.registry import REGISTRY, FunctionSpec, Param, StepSpec
from hql.search.shared import _analyzers as _analyzers  # the per-vault analysers (tests clear them)
from hql.search.shared import analyzer_for, bm25_index
from hql.syntax import tree as t
from hql.types import Type
from hql.values import (
    ABSENT,
    Card,
    Data,
    Hit,
    LazyDetail,
    ListValue,
    Ranking,
    Retrieval,
    SetValue,
    UnmadeHits,
    elements,
)
from hql.version import __version__

if TYPE_CHECKING:
    from hql.checker import Checker
    from hql.interpreter import Interpreter
    from hql.search.bm25 import Bm25Hit, Bm25Index
    from hql.search.terms import Ranked
    from hql.vault import Vault

LEXICAL_MODEL = "hql.hashbag.v1"

REGISTRY.extension(
    "lexical",
    version=__version__,
    summary="the hashed bag-of-words ranker hql.hashbag.v1",
    card_metadata={"model": LEXICAL_MODEL, "indexed": True},
)
REGISTRY.extension(
    "semantic", version=__version__, summary="ranking by meaning over a precomputed SQLite index"
)

# `bm25` is declared through the public extension API (hql.extend), as a package would.
BM25 = Extension(
    "bm25",
    version=__version__,
    summary="multilingual BM25 over analysed text",
    card_metadata={"model": "hql.bm25.v1", "indexed": True},
)


@BM25.step(
    "Collection<T> | bm25(query: String) -> Ranking<T> where T: Doc",
    summary="rank cards by BM25 over analysed words in any language; cards sharing no term are left out",
    example='cards | bm25("token de acesso")',
    absorbs=("limit", "lazy-cards", "relevant", "count"),
)
def _bm25(cards: Sequence[Card], query: str, context: Context) -> Ranking:
    return bm25_ranking(context, query, cards, context.limit, context.relevant, context.count_only)


@BM25.step(
    "Collection<T> | prompt(text: String, statuses?: List<String>) -> Ranking<T> where T: Doc",
    summary="rank cards for an agent's prompt: the whole prompt, each segment and its technical "
    "tokens fused by reciprocal rank; gates (ignore_when, status: active alone unless `statuses` "
    "names others) and a 0-100 evidence score",
    example='cards | prompt("Fix the login bug in src/auth.py, then run `npm test`") | relevant',
    absorbs=("limit",),
)
def _prompt(
    cards: Sequence[Card], text: str, context: Context, statuses: list[str] | None = None
) -> Ranking:
    from hql.context.prompt import rank_prompt
    from hql.vault.recall import asked_statuses

    try:
        allowed = asked_statuses(statuses)
    except ValueError as error:
        raise context.fail(str(error)) from None
    return rank_prompt(
        cards,
        text,
        vault=context.vault,
        limit=context.limit,
        statuses=allowed,
        warn=context.warn,
    )


register(BM25, REGISTRY)
REGISTRY.extension("hybrid", version=__version__, summary="bm25 and semantic fused by standing")

QUERY = Param("query", "String")
# Force the exact scan where the vault's store would approximate (HNSW, Qdrant).
EXACT = Param("exact", "Bool", default=False, positional=False)


# --- typing shared by the rankers ---------------------------------------------------


def check_ranker(call: StepTyping) -> Type:
    element = call.element()
    if element.name == "Hit":
        element = element.arg
    if not (ty.is_document(element) or element == ty.NEVER):
        raise call.error(messages.ranks_documents(call.spec.name, element), call.input_span)
    query = call.value("query")
    if query != ty.STRING:
        raise call.error(messages.query_is_text(query), call.arg_span("query"))
    return ty.ranking_of(ty.strip_option(element) if element != ty.NEVER else ty.CARD)


def check_semantic(call: StepTyping) -> Type:
    result = check_ranker(call)
    if call.has("exact") and call.value("exact") != ty.BOOL:
        raise call.error(
            messages.argument_type(call.spec.name, "exact", ty.BOOL, call.value("exact")),
            call.arg_span("exact"),
        )
    vault = call.vault
    semantics = vault.config.section("semantics") if vault is not None else {}
    # A store other than the SQLite file names its own place ([semantics.qdrant]).
    if not semantics.get("index") and semantics.get("store", "sqlite") == "sqlite":
        raise HqlError(_name_error(messages.semantic_needs_index(), call.span))
    return result


def _name_error(message: str, span: Any) -> Any:
    from hql.diagnostics import name_error

    return name_error(message, span)


def _cards(value: Any) -> Sequence[Card]:
    if value is ABSENT:
        return []
    items = elements(value)
    # Collections are typed, so the first element says whether these are hits or cards.
    if isinstance(value, SetValue | ListValue) and not (items and isinstance(items[0], Hit)):
        return items  # as given: the vault's own tuple for `cards`, recognised by identity
    return [item.card if isinstance(item, Hit) else item for item in items]


def _ranking(
    pairs: Sequence[tuple[Card, float]],
    retrieval: Retrieval,
    details: Sequence[Mapping[str, Any] | None] | None = None,
) -> Ranking:
    hits = tuple(
        Hit(card, score, retrieval, details[i] if details is not None else None)
        for i, (card, score) in enumerate(pairs)
    )
    return Ranking(hits, retrieval)


def _vault_root(call: StepCall) -> str:
    return str(call.vault.root) if call.vault is not None else ""


# --- lexical ----------------------------------------------------------------------------


def run_lexical(call: StepCall) -> Ranking:
    from hql.search import hashbag

    query = call.args["query"]
    retrieval = Retrieval(query, _vault_root(call), LEXICAL_MODEL, __version__, "cosine", False)
    return _ranking(hashbag.rank(_cards(call.input), query, call.limit), retrieval)


# --- bm25 --------------------------------------------------------------------------------


def _matched(hit: Bm25Hit[Card]) -> dict[str, Any]:
    return {"matched": dict(hit.matched)}


def bm25_ranking(
    call: StepCall | Context,
    query: str,
    cards: Sequence[Card],
    limit: int | None = None,
    relevant: Mapping[str, Any] | None = None,
    count_only: bool = False,
) -> Ranking:
    """`cards | bm25(query)`; `relevant` (the planner's `relevant-cut`) says which rule
    follows, and only the hits that rule can keep are made; `count_only`
    (`ranking-count`): only their number is read, so none is made unless asked for."""
    if relevant is None and not count_only:
        answered_now = _from_word_index(call, query, cards, limit)
        if answered_now is not None:
            return answered_now
    from hql.search.bm25 import METRIC, MODEL, StoreDamaged

    index, warnings = bm25_index(call.vault, cards)
    whole = call.vault is None or call.vault.holds_all(cards)
    among = None if whole else cards
    count_only = count_only and limit is None and relevant is None

    def answered(index: Bm25Index[Card]) -> tuple[list[Bm25Hit[Card]], dict[str, Any], int]:
        bound = index.score_bound(query)
        extra: dict[str, Any] = {"analysis": index.analysis(query).to_json(), "score_bound": bound}
        if count_only:
            return [], extra, index.count(query, among)
        if relevant is not None and limit is None:
            hits, extra["precut"] = _passing(
                index, query, among, bound, relevant.get("min"), call.vault
            )
            return hits, extra, 0
        return index.search(query, limit, among=among), extra, 0

    try:
        hits, extra, counted = answered(index)
    except StoreDamaged:  # a part of the store read only now: built again without it
        index, more = bm25_index(call.vault, cards, damaged=index)
        warnings += more
        hits, extra, counted = answered(index)
    for message in warnings:
        call.warn(message)
    where = str(call.vault.state_dir) if call.vault is not None else ""
    retrieval = Retrieval(query, where, MODEL, index.revision, METRIC, False, extra)

    def ranked(hits: list[Bm25Hit[Card]]) -> tuple[Hit, ...]:
        details = [LazyDetail(functools.partial(_matched, hit)) for hit in hits]
        return _ranking([(hit.card, hit.score) for hit in hits], retrieval, details).hits

    if count_only:
        searched = index

        def made() -> tuple[Hit, ...]:
            return ranked(searched.search(query, None, among=among))

        return Ranking(UnmadeHits(counted, made), retrieval)
    return Ranking(ranked(hits), retrieval)


def _from_word_index(
    call: StepCall | Context, query: str, cards: Sequence[Card], limit: int | None
) -> Ranking | None:
    """`cards | bm25(query)` over all the vault's cards answered from its word index
    (hql.search.terms: the query's terms' rows, no numpy), as the full index answers it;
    None when the full index is to answer (`word_index` says when)."""
    from hql.search import terms
    from hql.search.shared import forget_word_index, word_index

    try:
        found = word_index(call.vault, cards)
        if found is None:
            return None
        index, analyzer, warnings = found
        analysis = analyzer.analyze(query)
        weighted = terms.weighted_terms(analysis.terms)
        ranked = index.rank(weighted, limit)
    except terms.TermIndexDamaged as error:
        assert call.vault is not None
        where = terms.path_in(call.vault.state_dir)
        call.warn(messages.search_index_unreadable(str(where), str(error)))
        forget_word_index(call.vault)
        return None
    for message in warnings:
        call.warn(message)
    bound = terms.score_bound(weighted, ranked.idfs, index.unknown_idf)
    extra: dict[str, Any] = {"analysis": analysis.to_json(), "score_bound": bound}
    assert call.vault is not None
    retrieval = Retrieval(
        query,
        str(call.vault.state_dir),
        terms.MODEL,
        analyzer.fingerprint,
        terms.METRIC,
        False,
        extra,
    )
    positions = [position for position, _ in ranked.hits]
    prefetch = getattr(cards, "prefetch", None)
    if prefetch is not None:
        prefetch(positions)
    details = [
        LazyDetail(functools.partial(_matched_at, ranked, position)) for position in positions
    ]
    return _ranking([(cards[p], score) for p, score in ranked.hits], retrieval, details)


def _matched_at(ranked: Ranked, position: int) -> dict[str, Any]:
    return {"matched": ranked.matched(position)}


def _passing(
    index: Bm25Index[Card],
    query: str,
    among: Sequence[Card] | None,
    bound: float,
    minimum: float | None,
    vault: Vault | None,
) -> tuple[list[Bm25Hit[Card]], dict[str, int]]:
    """The hits `relevant` can keep (at least `min`, or the share of the score bound its
    default rule asks for), and the counts it records of all of them."""
    from hql.search.relevance import PREFIX_MARK, affirmed_text, coverage_threshold

    if minimum is not None:
        floor = minimum
        hits, candidates, _ = index.search_passing(query, lambda best: floor, among)
        return hits, {"candidates": candidates}
    affirmed = analyzer_for(vault).analyze(affirmed_text(query)).terms
    evidence = {term for term in affirmed if not term.startswith(PREFIX_MARK)}
    hits, candidates, with_evidence = index.search_passing(
        query, functools.partial(coverage_threshold, bound), among, evidence
    )
    return hits, {"candidates": candidates, "evidence": with_evidence}


# --- semantic ------------------------------------------------------------------------------


@functools.cache
def _semantic_library() -> tuple[Any, Callable[..., Any], Callable[..., Any]]:
    """hql.index's errors, its ranking and its ranking of the usual question, imported when
    a program first asks `semantic`."""
    from hql.index import errors
    from hql.index.semantic import scanned_best, semantic_ranking

    return errors, semantic_ranking, scanned_best


def semantic_ranking(
    call: StepCall,
    query: str,
    cards: Sequence[Card],
    limit: int | None = None,
    exact: bool = False,
) -> Ranking:
    errors, rank, scanned_best = _semantic_library()
    vault = call.vault
    assert vault is not None
    if limit is not None:
        best = scanned_best(vault, query, cards, limit, exact)
        if best is not None:
            return _scanned_ranking(call, query, best)
    try:
        result = rank(
            vault,
            query,
            cards,
            limit,
            exact=exact,
            store_filter=call.hint("store_filter") or (),
        )
    except (errors.EmbedderUnavailable, errors.StoreUnavailable) as error:
        if getattr(error, "on_unavailable", "fail") == "lexical":
            fell_back = (
                messages.semantic_store_fell_back
                if isinstance(error, errors.StoreUnavailable)
                else messages.semantic_fell_back
            )
            call.warn(fell_back(error.message))
            fallback = bm25_ranking(call, query, cards, limit)
            extra = {
                **fallback.retrieval.extra,
                "fallback": {"from": "semantic", "reason": error.message},
            }
            return restated(fallback.hits, replace(fallback.retrieval, extra=extra))
        raise call.fail(error.message) from None
    except errors.SemanticIndexError as error:
        raise call.fail(error.message) from None
    for message in result.warnings:
        call.warn(message)
    source = result.retrieval
    said: dict[str, Any] = {"query_embedded_now": True} if source.query_embedded_now else {}
    said["search"] = source.search
    retrieval = Retrieval(
        query, source.index, source.model, source.revision, source.metric, source.approximate, said
    )
    card_named: Callable[[str], Card | None] = vault.card_lookup()
    if cards is not vault.cards:
        card_named = {card.name: card for card in cards}.get
    hits: list[Hit] = []
    if any(result.sections):
        for (name, score), section in zip(result.hits, result.sections, strict=True):
            card = card_named(name)
            if card is not None:
                detail = {"section": section.to_json()} if section else None
                hits.append(Hit(card, score, retrieval, detail))
    elif result.hits:  # no hit scored by a section (or an index without sections): no detail
        names, scores = zip(*result.hits, strict=True)
        found = list(map(card_named, names))
        if any(map(operator.is_, found, itertools.repeat(None))):  # a card the input lacks
            kept = [
                (card, score) for card, score in zip(found, scores, strict=True) if card is not None
            ]
            found, scores = [card for card, _ in kept], tuple(score for _, score in kept)
        return Ranking(tuple(map(Hit, found, scores, itertools.repeat(retrieval))), retrieval)
    return Ranking(tuple(hits), retrieval)


def _scanned_ranking(call: StepCall, query: str, best: Any) -> Ranking:
    """The ranking `semantic_ranking` makes, from `scanned_best`'s hit cards and scores."""
    for message in best.warnings:
        call.warn(message)
    model = best.model
    said = {"search": best.method.to_tree()}
    retrieval = Retrieval(query, best.location, model.id, model.revision, model.metric, False, said)
    hits = map(Hit, best.cards, best.scores, itertools.repeat(retrieval))
    return Ranking(tuple(hits), retrieval)


def restated(hits: Sequence[Hit], retrieval: Retrieval) -> Ranking:
    """The hits again, now sharing a retrieval that says more (a cutoff, a fallback, a fusion rule)."""
    return Ranking(
        tuple(Hit(hit.card, hit.score, retrieval, hit.detail) for hit in hits), retrieval
    )


def run_semantic(call: StepCall) -> Ranking:
    exact = bool(call.args.get("exact", False))
    return semantic_ranking(call, call.args["query"], _cards(call.input), call.limit, exact)


# --- relevant ------------------------------------------------------------------------------


def check_relevant(call: StepTyping) -> Type:
    shape = ty.strip_option(call.input)
    if shape.name != "Ranking":
        raise call.error(messages.relevant_needs_ranking(call.input), call.input_span)
    if call.has("min") and call.value("min") not in (ty.INT, ty.FLOAT):
        raise call.error(
            messages.argument_type("relevant", "min", ty.FLOAT, call.value("min")),
            call.arg_span("min"),
        )
    if call.has("evidence") and call.value("evidence") not in (ty.INT, ty.FLOAT):
        raise call.error(
            messages.argument_type("relevant", "evidence", ty.INT, call.value("evidence")),
            call.arg_span("evidence"),
        )
    if call.has("evidence") and call.has("min"):
        raise call.error(messages.relevant_min_or_evidence(), call.arg_span("evidence"))
    return shape


def apply_evidence(ranking: Ranking, threshold: float, vault: Vault | None = None) -> Ranking:
    """The hits whose evidence score is at least `threshold`, the rule recorded. A hit
    without recorded evidence (a `bm25` hit) has it worked out from the ranking's query."""
    from hql.context.evidence import evidence_of
    from hql.context.prompt import evidence_for_query

    measured = evidence_for_query(ranking.retrieval.query, vault)
    kept = []
    for hit in ranking.hits:
        recorded = (hit.detail or {}).get("evidence")
        if isinstance(recorded, dict):  # the prompt ranker's own: read, not rebuilt
            if recorded.get("gate") is None and recorded["score"] >= threshold:
                kept.append(hit)
            continue
        found = evidence_of(hit)
        if found is None:
            found = measured(hit.card)
            if found.gate is None and found.score >= threshold:
                detail = {**(hit.detail or {}), "evidence": found.as_tree()}
                kept.append(Hit(hit.card, hit.score, hit.retrieval, detail))
            continue
        if found.gate is None and found.score >= threshold:
            kept.append(hit)
    record = {
        "rule": "evidence",
        "evidence": threshold,
        "kept": len(kept),
        "candidates": len(ranking.hits),
    }
    retrieval = ranking.retrieval
    extra = {key: value for key, value in retrieval.extra.items() if key != "precut"}
    return restated(kept, replace(retrieval, extra={**extra, "cutoff": record}))


def apply_relevance(ranking: Ranking, minimum: float | None, vault: Vault | None = None) -> Ranking:
    """The hits that pass `relevant` (a floor, or the metric's default rule), the rule recorded."""
    from hql.search.relevance import (
        Cutoff,
        Precut,
        affirmed_text,
        corroboration,
        evidence_filter,
        relevant,
    )

    retrieval = ranking.retrieval
    cutoff: Cutoff
    if retrieval.metric == "standing" and minimum is None:
        kept, cutoff = _words_or_meaning(ranking, vault)
    elif retrieval.metric == "rrf" and minimum is None:
        kept, cutoff = _any_input_passes(ranking)
    else:
        evidence = corroborated = None
        if retrieval.metric == "bm25":
            analyzer = analyzer_for(vault)
            analysis = analyzer.analyze(affirmed_text(retrieval.query))
            affirmed = set(analysis.terms)

            def matched(hit: Hit) -> Collection[str]:
                return (hit.detail or {}).get("matched", {})

            def evidence(hits: Sequence[Hit]) -> list[Hit]:
                return evidence_filter(hits, matched, affirmed)

            corroborated = corroboration(matched, affirmed, analyzer.own_synonyms(analysis))

        kept, cutoff = relevant(
            list(ranking.hits),
            lambda hit: hit.score,
            retrieval.metric,
            minimum,
            retrieval.extra.get("score_bound"),
            evidence,
            corroborated,
            retrieval.model,
            Precut.of(retrieval.extra.get("precut")),
        )
    record = {
        "rule": cutoff.rule,
        **cutoff.parameters,
        "kept": cutoff.kept,
        "candidates": cutoff.candidates,
    }
    extra = {key: value for key, value in retrieval.extra.items() if key != "precut"}
    return restated(kept, replace(retrieval, extra={**extra, "cutoff": record}))


def _words_or_meaning(ranking: Ranking, vault: Vault | None = None) -> tuple[list[Hit], Any]:
    """The hybrid default (`hql.search.relevance.words_or_meaning`), read from what each
    hit recorded of its two arms (bm25 first, semantic second); for a model with a hub
    floor, each card's hub prior (`hql.index.hubs`) when the vault's bank can be embedded."""
    from hql.search.relevance import HUB_FLOORS, Meaning, words_or_meaning

    extra = ranking.retrieval.extra
    standings = extra.get("standings") or [None, None]
    inputs = extra.get("inputs") or [{}, {}]
    meaning_arm = standings[1] or {"median": 0.0, "spread": 0.0}
    model = inputs[1].get("model")

    def arm(hit: Hit, which: int) -> dict[str, Any] | None:
        places = (hit.detail or {}).get("inputs") or [None, None]
        return places[which]

    def by_words(hit: Hit) -> bool:
        place = arm(hit, 0)
        return bool(place and place.get("relevant"))

    def meaning(hit: Hit) -> Meaning | None:
        place = arm(hit, 1)
        return None if place is None else Meaning(place["score"], bool(place.get("relevant")))

    hub: Callable[[Hit], float] | None = None
    if vault is not None and model in HUB_FLOORS:
        from hql.index.hubs import hub_priors

        opened: Any = vault  # a Vault is what hql.index reads as VaultLike
        priors = hub_priors(opened)
        if priors is not None:

            def hub(hit: Hit) -> float:
                return priors.get(hit.card.name, 0.0)

    return words_or_meaning(
        list(ranking.hits),
        by_words,
        meaning,
        meaning_arm["median"],
        meaning_arm["spread"],
        model,
        hub=hub,
    )


def _any_input_passes(ranking: Ranking) -> tuple[list[Hit], Any]:
    """The rrf default: a fused hit is kept when any input's own default rule kept it."""
    from hql.search.relevance import Cutoff

    rules = [
        tree.get("cutoff", {}).get("rule") for tree in ranking.retrieval.extra.get("inputs", [])
    ]
    kept = [
        hit
        for hit in ranking.hits
        if any(place and place.get("relevant") for place in (hit.detail or {}).get("inputs", []))
    ]
    return kept, Cutoff("any-input", {"inputs": rules}, len(kept), len(ranking.hits))


def run_relevant(call: StepCall) -> Ranking:
    from hql.search.relevance import RelevanceError

    ranking = call.input if isinstance(call.input, Ranking) else None
    if ranking is None:
        return Ranking((), Retrieval("", "", "", "", "", False))
    minimum = call.args.get("min")
    threshold = call.args.get("evidence")
    if threshold is None and minimum is None and ranking.retrieval.metric == "evidence":
        from hql.context.evidence import DEFAULT_EVIDENCE

        threshold = DEFAULT_EVIDENCE
    if threshold is not None:
        return apply_evidence(ranking, threshold, call.vault)
    try:
        return apply_relevance(ranking, float(minimum) if minimum is not None else None, call.vault)
    except RelevanceError as error:
        raise call.fail(str(error)) from None


# --- fusion: fuse() and hybrid ----------------------------------------------------------


def fused_ranking(
    rankings: Sequence[Ranking],
    k: float,
    weights: Sequence[float] | None,
    vault: Vault | None = None,
    judged: Sequence[Ranking] | None = None,
) -> Ranking:
    """Reciprocal-rank fusion; each input place also says whether that input's own rule keeps it.

    `judged[i]` is input i after its default `relevant` rule (worked out here when not given),
    which is what `relevant` on the fused ranking goes by.
    """
    from hql.search.fusion import METRIC, fuse

    inputs = [[(hit.card, hit.score) for hit in ranking.hits] for ranking in rankings]
    fused = fuse(inputs, k, weights, name=lambda card: card.name)
    queries = list(dict.fromkeys(ranking.retrieval.query for ranking in rankings))
    verdicts = list(judged) if judged is not None else [_judged(r, vault) for r in rankings]
    passing = [
        None if verdict is None else {hit.card for hit in verdict.hits} for verdict in verdicts
    ]
    extra: dict[str, Any] = {
        "k": k,
        "inputs": [
            (ranking if verdict is None else verdict).retrieval.as_tree()
            for ranking, verdict in zip(rankings, verdicts, strict=True)
        ],
    }
    if weights is not None:
        extra["weights"] = list(weights)
    retrieval = Retrieval(
        " | ".join(queries),
        "",
        "hql.rrf.v1",
        __version__,
        METRIC,
        any(r.retrieval.approximate for r in rankings),
        extra,
    )
    sections = _sections(rankings)
    details = [
        {
            **({"section": sections[item.key]} if item.key in sections else {}),
            "inputs": [
                None
                if place is None
                else {
                    "rank": place.rank,
                    "score": place.score,
                    **({} if kept is None else {"relevant": item.key in kept}),
                }
                for place, kept in zip(item.inputs, passing, strict=True)
            ],
        }
        for item in fused
    ]
    return _ranking([(item.key, item.score) for item in fused], retrieval, details)


def _judged(ranking: Ranking, vault: Vault | None) -> Ranking | None:
    """The ranking after its metric's default `relevant` rule; None when it has none."""
    from hql.search.relevance import RelevanceError

    try:
        return apply_relevance(ranking, None, vault)
    except RelevanceError:
        return None


def check_fuse(
    checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
) -> Type:
    element: Type | None = None
    positional = 0
    for argument in args:
        found = checker.expression(argument.value)
        if argument.name is None:
            positional += 1
            if ty.strip_option(found).name != "Ranking":
                raise HqlError(type_error(messages.fuse_needs_rankings(found), argument.span))
            joined = (
                ty.strip_option(found).arg
                if element is None
                else ty.join(element, ty.strip_option(found).arg)
            )
            if joined is None:
                raise HqlError(type_error(messages.no_common_type(element, found), argument.span))
            element = joined
        elif argument.name == "k":
            if found not in (ty.INT, ty.FLOAT):
                raise HqlError(
                    type_error(messages.argument_type("fuse", "k", ty.INT, found), argument.span)
                )
        elif argument.name == "weights":
            if found not in (ty.list_of(ty.INT), ty.list_of(ty.FLOAT), ty.list_of(ty.DATA)):
                raise HqlError(
                    type_error(
                        messages.argument_type("fuse", "weights", "List<Float>", found),
                        argument.span,
                    )
                )
        else:
            raise HqlError(
                type_error(messages.no_such_argument("fuse", argument.name, None), argument.span)
            )
    if positional < 1 or element is None:
        raise HqlError(type_error(messages.fuse_needs_rankings(None), expr.span))
    return ty.ranking_of(element)


def run_fuse(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Ranking:
    from hql.search.fusion import FusionError

    args = expr.args  # type: ignore[attr-defined]
    rankings = [value for arg, value in zip(args, values, strict=True) if arg.name is None]
    named = {
        arg.name: value for arg, value in zip(args, values, strict=True) if arg.name is not None
    }
    rankings = [
        r if isinstance(r, Ranking) else Ranking((), Retrieval("", "", "", "", "", False))
        for r in rankings
    ]
    weights = named.get("weights")
    weight_list = [float(w) for w in elements(weights)] if weights is not None else None
    try:
        return fused_ranking(rankings, named.get("k", 60), weight_list, interpreter.vault)
    except FusionError as error:
        raise HqlError(evaluation(str(error), expr.span)) from None


def run_hybrid(call: StepCall) -> Ranking:
    from hql.search.fusion import HYBRID_DEPTH

    query = call.args["query"]
    cards = _cards(call.input)
    by_words = bm25_ranking(call, query, cards)
    exact = bool(call.args.get("exact", False))
    by_meaning = semantic_ranking(call, query, cards, HYBRID_DEPTH, exact)
    return hybrid_ranking(query, by_words, by_meaning, call.vault)


def hybrid_ranking(
    query: str, by_words: Ranking, by_meaning: Ranking, vault: Vault | None
) -> Ranking:
    """bm25 and semantic fused by standing (`hql.search.fusion.fuse_standing`): each hit
    records, per arm, its rank, score, standing and whether that arm's own rule keeps it."""
    from hql.search.fusion import HYBRID_METRIC, fuse_standing

    arms = (by_words, by_meaning)
    fused, standings, per_arm = fuse_standing(
        [[(hit.card, hit.score) for hit in arm.hits] for arm in arms], name=lambda c: c.name
    )
    judged = [apply_relevance(by_words, None, vault), _judged(by_meaning, vault)]
    passing = [
        None if verdict is None else {hit.card for hit in verdict.hits} for verdict in judged
    ]
    sections = _sections((by_meaning,))
    details = [
        {
            **({"section": sections[item.key]} if item.key in sections else {}),
            "inputs": [
                None
                if place is None
                else {
                    "rank": place.rank,
                    "score": place.score,
                    "standing": round(arm[item.key], 4),
                    **({} if kept is None else {"relevant": item.key in kept}),
                }
                for place, arm, kept in zip(item.inputs, per_arm, passing, strict=True)
            ],
        }
        for item in fused
    ]
    extra: dict[str, Any] = {
        "rule": messages.hybrid_rule(),
        "inputs": [
            (arm if verdict is None else verdict).retrieval.as_tree()
            for arm, verdict in zip(arms, judged, strict=True)
        ],
        "standings": [None if where is None else where.to_json() for where in standings],
    }
    retrieval = Retrieval(
        query,
        "",
        "hql.hybrid.v3",
        __version__,
        HYBRID_METRIC,
        any(arm.retrieval.approximate for arm in arms),
        extra,
    )
    return _ranking([(item.key, item.score) for item in fused], retrieval, details)


# --- analyze() -------------------------------------------------------------------------------


def check_analyze(
    checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
) -> Type:
    if len(args) != 1 or args[0].name is not None:
        raise HqlError(type_error(messages.function_arity("analyze", 1, len(args)), expr.span))
    found = checker.expression(args[0].value)
    if found != ty.STRING:
        raise HqlError(type_error(messages.query_is_text(found), args[0].span))
    return ty.DATA


def run_analyze(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Data:
    return Data(analyzer_for(interpreter.vault).analyze(values[0]).to_json())


def check_envelope(
    checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
) -> Type:
    if len(args) != 1 or args[0].name is not None:
        raise HqlError(type_error(messages.function_arity("envelope", 1, len(args)), expr.span))
    found = checker.expression(args[0].value)
    if found != ty.STRING:
        raise HqlError(type_error(messages.query_is_text(found), args[0].span))
    return ty.DATA


def run_envelope(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Data:
    from hql.context.envelope import read_envelope

    return Data(read_envelope(values[0], analyzer_for(interpreter.vault)).to_json())


for spec in (
    StepSpec(
        "lexical",
        "lexical",
        (QUERY,),
        "Collection<Card> | lexical(query: String) -> Ranking<Card>",
        "rank cards by hql.hashbag.v1 cosine; cards sharing no word are left out",
        'cards | lexical("bearer token")',
        check_ranker,
        run_lexical,
        absorbs=("limit",),
    ),
    StepSpec(
        "semantic",
        "semantic",
        (QUERY, EXACT),
        "Collection<Card> | semantic(query: String, exact: Bool = false) -> Ranking<Card>",
        "rank every card by meaning, from the index named in hql.toml [semantics]; "
        "`exact = true` scans every vector where the store would approximate",
        'cards | semantic("night hunting birds")',
        check_semantic,
        run_semantic,
        absorbs=("limit", "store_filter"),
    ),
    StepSpec(
        "hybrid",
        "hybrid",
        (QUERY, Param("k", "Int", default=60, positional=False), EXACT),
        "Collection<Card> | hybrid(query: String, k: Int = 60, exact: Bool = false) -> Ranking<Card>",
        "bm25's and semantic's best 100, each score measured in its arm's spread, ordered by the sum",
        'cards | hybrid("how do clients prove who they are")',
        check_semantic,
        run_hybrid,
    ),
    StepSpec(
        "relevant",
        "core",
        (
            Param("min", "Float", default=None),
            Param("evidence", "Int", default=None, positional=False),
        ),
        "Ranking<T> | relevant(min?: Float, evidence?: Int) -> Ranking<T>",
        "keep the hits that pass a stated rule (a floor, an evidence score 0-100, or the "
        "metric's default) and record it",
        'cards | bm25("token") | relevant',
        check_relevant,
        run_relevant,
    ),
):
    REGISTRY.add(spec)

REGISTRY.add_function(
    FunctionSpec(
        "fuse",
        "fuse(r1: Ranking<T>, r2: Ranking<T>, …, k: Int = 60, weights: List<Float>) -> Ranking<T>",
        "reciprocal rank fusion; each hit keeps its rank and score in every input",
        'fuse(cards | bm25("q"), cards | lexical("q"))',
        check_fuse,
        run_fuse,
    )
)
REGISTRY.add_function(
    FunctionSpec(
        "analyze",
        "analyze(text: String) -> Data",
        "the words, terms, ignored words and synonyms of a text",
        'analyze("Quanto custa o cartão?")',
        check_analyze,
        run_analyze,
    )
)
REGISTRY.add_function(
    FunctionSpec(
        "envelope",
        "envelope(prompt: String) -> Data",
        "a prompt read as a task: language, segments, commands, paths, symbols, constraints, keywords",
        'envelope("Fix src/auth.py and run `npm test`; do not push")',
        check_envelope,
        run_envelope,
    )
)


def _sections(rankings: Iterable[Ranking]) -> dict[Any, Any]:
    """The section each card's best passage came from, for the rankings whose hits name one."""
    return {
        hit.card: hit.detail["section"]
        for ranking in rankings
        for hit in ranking.hits
        if hit.detail and "section" in hit.detail
    }
