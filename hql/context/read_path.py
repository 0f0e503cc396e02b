"""The read path of an agent's memory: a prompt in, a context block out.

    envelope -> candidates from every library -> gates -> evidence -> collapse
             -> budget -> render

Candidates come from `rank_prompt` (query variants fused by reciprocal rank,
the gates, an evidence score per card) in the project and in every library.
A candidate passes when

- its evidence reaches the threshold (40 by default), or
- it declares no recall field (a plain note: its body is its only evidence)
  and the words rule keeps it: among the best max(3 x max_items, 24) BM25 hits
  of the whole prompt, it shares a whole word with what the prompt affirms
  (`relevant`'s evidence rule) and scores at least 40% of the best.

A library whose vault ranks by meaning (`[semantics]` names an index, and a new prompt can be
embedded) ranks as `hybrid` does: the prompt's words (the words rule's BM25 scores) and its
meaning (the semantic index, the prompt embedded and never stored) fused by standing, and a
plain note passes when the words rule keeps it (as without an index) or its meaning stands out
(`hybrid | relevant`'s meaning side), in `hybrid`'s order. The diagnostics say which
ranker each library used (`versions`), and why meaning could not be used when it could not
(a warning too): the read path then ranks that library by words. A vault without a semantic
index ranks by words alone, as it always did.

Passing cards are ordered by evidence, then those the words rule kept in its
order (with an index, those kept by words or meaning in hybrid's order; libraries
interleaved by rank, the project first); near-duplicates are
collapsed (a project's card over a library's). A prompt about one speaker of the
candidate transcripts whose words someone else said (hql.context.speakers) leaves the
transcripts out. The block is filled within the budget. Every candidate that did not make it is in the diagnostics with its
reason, and nothing here stores the prompt.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hql import messages
from hql.context.block import (
    DEFAULT_BUDGET,
    DEFAULT_MAX_ITEMS,
    MARKDOWN,
    Context,
    TokenCounter,
    build_context,
    item_for,
)
from hql.context.collapse import collapsed_hits, priority_of
from hql.context.speakers import SOMEONE_ELSE_MARGIN
from hql.record import record, replace
from hql.values import Hit
from hql.version import __version__

CANDIDATES_PER_LIBRARY = 50
# How many passing candidates are compared for repeats and offered to the budget, per item
# the block may hold (the rest could enter it only if nearly all of these were trimmed).
CONSIDERED_PER_ITEM = 3
CONSIDERED_AT_LEAST = 24
# A plain note passes the words rule at this share of the best words score or above.
WORDS_SHARE = 0.4
WORDS_RULE = "words"
EVIDENCE_RULE = "evidence"
MEANING_RULE = "meaning"  # a plain note kept by its meaning alone (a vault with a semantic index)


@record
class Source:
    """One place candidates come from: the project, or a library (its cards tagged)."""

    vault: Any
    library: str
    scope: str
    # The card each of this vault's cards stands for in the candidate set (qualified, tagged).
    tag: Callable[[Any], Any]


@record(frozen=False)
class Candidate:
    hit: Hit
    library: str
    rank: int  # its place in its own library's ranking
    rule: str | None = None  # the rule that let it pass: "evidence", "words" or "meaning"
    reason: str | None = None  # why it did not pass


def assemble(
    vault: Any,
    prompt: str,
    *,
    budget: int = DEFAULT_BUDGET,
    max_items: int = DEFAULT_MAX_ITEMS,
    format: str = MARKDOWN,  # noqa: A002 (the option's name everywhere else)
    libraries: bool = True,
    threshold: int | None = None,
    collapse_threshold: float | None = None,
    count_tokens: TokenCounter | None = None,
    statuses: Iterable[str] = ("active",),
    warn: Callable[[str], None] | None = None,
    speaker_margin: float = SOMEONE_ELSE_MARGIN,
) -> Context:
    """The context block for `prompt` from `vault` (and its libraries); see the module.

    `speaker_margin` is the someone-else rule's margin (hql.context.speakers; `math.inf`
    turns the rule off)."""
    from hql.context.evidence import DEFAULT_EVIDENCE

    floor = DEFAULT_EVIDENCE if threshold is None else threshold
    sources = sources_of(vault, libraries, warn)
    allowed = tuple(statuses)
    candidates: list[Candidate] = []
    rejected: list[dict[str, Any]] = []
    counts = {"input": 0, "eligible": 0, "evaluated": 0}
    versions: dict[str, Any] = {"hql": __version__, "libraries": {}}
    labels: dict[str, Any] = {}
    by_meaning = False
    # Only so many can reach the block: the words rule looks no deeper, and the rest of the
    # passing candidates are not compared for repeats.
    considered = max(max_items * CONSIDERED_PER_ITEM, CONSIDERED_AT_LEAST)
    for source in sources:
        found, gated, said = _candidates(source, prompt, floor, allowed, warn, considered)
        labels = labels or said.pop("labels")
        said.pop("labels", None)
        by_meaning = by_meaning or said.get("ranker") == "hybrid"
        candidates += found
        rejected += gated
        counts["input"] += len(source.vault.lazy_cards())
        counts["evaluated"] += len(found) + len(gated)
        versions["libraries"][source.library] = said
    passing = _ordered([c for c in candidates if c.rule is not None])
    rejected += [_rejection(c) for c in candidates if c.rule is None]
    counts["eligible"] = len(passing)
    rejected += [
        {
            "card": c.hit.card.name,
            "library": c.library,
            "reason": messages.context_not_considered(considered),
        }
        for c in passing[considered:]
    ]
    passing = passing[:considered]
    hits, collapse = collapsed_hits([c.hit for c in passing], collapse_threshold)
    hidden = {name: group["kept"] for group in collapse["groups"] for name in group["hidden"]}
    rejected += [
        {
            "card": name,
            "library": library_of(name, passing),
            "reason": messages.context_rejected_repeat(kept),
        }
        for name, kept in hidden.items()
    ]
    hits, elsewhere = _about_someone_else(prompt, hits, sources, speaker_margin)
    if elsewhere is not None:
        reason = messages.context_rejected_someone_else(elsewhere.person, elsewhere.speaker)
        rejected += [
            {"card": name, "library": library_of(name, passing), "reason": reason}
            for name in elsewhere.cards
        ]
    items = [item_for(hit, _fields(hit, sources)) for hit in hits]
    abstention = (
        None if items else _abstention(candidates, floor, elsewhere, speaker_margin, by_meaning)
    )
    diagnostics: dict[str, Any] = {
        "versions": versions,
        "counts": counts,
        "threshold": {
            "evidence": floor,
            "words": {"share_of_best": WORDS_SHARE, "depth": considered},
            "someone_else": {"margin": speaker_margin},
        },
        "collapse": {"threshold": collapse["threshold"], "hidden": collapse["hidden"]},
        "abstention": abstention,
        "selected": [],
        "rejected": rejected,
    }
    block = build_context(
        items,
        budget=budget,
        max_items=max_items,
        form=format,
        count_tokens=count_tokens,
        abstention=abstention,
        diagnostics=diagnostics,
    )
    rules = {c.hit.card.name: c for c in passing}
    diagnostics = block.diagnostics
    diagnostics["selected"] = [
        {
            "card": item.name,
            "library": rules[item.name].library,
            "rule": rules[item.name].rule,
            "score": item.score,
            "tokens": item.tokens,
        }
        for item in block.items
    ]
    rejected += [
        {"card": cut.name, "library": library_of(cut.name, passing), "reason": cut.reason}
        for cut in block.trimmed
    ]
    diagnostics["abstention"] = block.abstention
    _log(vault, prompt, block, labels, warn)
    return block


def _log(vault: Any, prompt: str, block: Context, labels: dict[str, Any], warn: Any) -> None:
    """The block in the vault's retrieval log, when `[log] retrieval = true` (never the prompt)."""
    from hql.context import log

    if not log.enabled(vault):
        return
    try:
        log.record_block(vault, prompt, block, labels)
    except log.LogError as error:
        if warn is not None:
            warn(str(error))


# --- where candidates come from ----------------------------------------------------------


def sources_of(vault: Any, libraries: bool, warn: Callable[[str], None] | None) -> list[Source]:
    """The project, then each library that loaded (a library that did not is a warning)."""
    sources = [Source(vault, "project", "project", _same)]
    if not libraries:
        return sources
    for library in getattr(vault, "libraries", ()):
        if library.vault is None:
            if warn is not None and library.warning:
                warn(library.warning)
            continue
        sources.append(Source(library.vault, library.name, library.scope, library.tagged))
    return sources


def _same(card: Any) -> Any:
    return card


def _candidates(
    source: Source,
    prompt: str,
    floor: int,
    statuses: tuple[str, ...],
    warn: Callable[[str], None] | None,
    depth: int,
) -> tuple[list[Candidate], list[dict[str, Any]], dict[str, Any]]:
    """This library's candidates, each marked with the rule that passes it (or why not), the
    cards its gates rejected, and the versions that ranked them."""
    from hql.context.fields import recall_fields
    from hql.context.prompt import evidence_for_query, mapping_for, rank_prompt, status_hook
    from hql.search.shared import analyzer_for, bm25_index

    vault = source.vault
    cards = vault.lazy_cards()
    index, warnings = bm25_index(vault, cards)
    for message in warnings:
        if warn is not None:
            warn(message)
    ranking = rank_prompt(
        cards,
        prompt,
        vault=vault,
        limit=CANDIDATES_PER_LIBRARY,
        statuses=statuses,
        index=index,
        warn=warn,
    )
    variants = ranking.retrieval.extra.get("variants", ())
    scores = _prompt_scores(index, prompt, variants)  # the words rule's and hybrid's
    kept_by_words = _words_rule(index, analyzer_for(vault), prompt, depth, scores)
    meaning, ranker = _meaning(vault, cards, prompt, source.library, warn)
    if meaning is not None:
        kept_by_words, cutoff = _words_or_meaning(
            index, prompt, scores, depth, kept_by_words, meaning
        )
        ranker["cutoff"] = cutoff
    not_kept = (
        messages.context_rejected_words if meaning is None else messages.context_rejected_meaning
    )
    mapping = mapping_for(vault)
    found = []
    for rank, hit in enumerate(ranking.hits):
        card = source.tag(hit.card)
        tagged = Hit(card, hit.score, hit.retrieval, hit.detail)
        candidate = Candidate(tagged, source.library, rank)
        if hit.score >= floor:
            candidate.rule = EVIDENCE_RULE
        elif not recall_fields(hit.card, mapping).declared and hit.card.name in kept_by_words:
            kept = kept_by_words[hit.card.name]
            candidate.rule = kept.rule
            candidate.rank = kept.rank
            candidate.hit = Hit(card, hit.score, hit.retrieval, {**(hit.detail or {}), **kept.said})
        elif hit.card.name in kept_by_words:
            candidate.reason = messages.context_rejected_declared(int(hit.score), floor)
        elif recall_fields(hit.card, mapping).declared:
            candidate.reason = messages.context_rejected_evidence(int(hit.score), floor)
        else:
            candidate.reason = not_kept(int(hit.score), floor)
        found.append(candidate)
    gated = [
        {"card": item["card"], "library": source.library, "reason": item["gate"]}
        for item in ranking.retrieval.extra.get("rejected", [])
    ]
    # A plain note the words rule keeps but the prompt ranking did not reach; one its gates
    # rejected stays rejected, and the status gate applies to the others as well (a
    # superseded or archived note is not let back in by its words).
    ranked = {hit.card.name for hit in ranking.hits} | {item["card"] for item in gated}
    status_of = status_hook()
    measured = evidence_for_query(prompt, vault)
    for name, kept in kept_by_words.items():
        card = None if name in ranked else vault.card_alone(name)
        if card is None or recall_fields(card, mapping).declared:
            continue
        status = _status(card, vault, mapping, status_of)
        if status not in statuses:
            reason = messages.evidence_gate_status(status)
            gated.append({"card": name, "library": source.library, "reason": reason})
            continue
        # Its evidence, as the ranking would have given it (its words or meaning let it pass).
        own = measured(card)
        detail = {"evidence": own.as_tree(), **kept.said}
        hit = Hit(source.tag(card), float(own.score), ranking.retrieval, detail)
        found.append(Candidate(hit, source.library, kept.rank, kept.rule))
    from hql.context.log import labels_of

    said = {
        "prompt": ranking.retrieval.model,
        "bm25": index.revision,
        "labels": labels_of(ranking.retrieval.extra.get("envelope")),
        **ranker,
    }
    return found, gated, said


def _status(card: Any, vault: Any, mapping: Any, status_of: Any) -> str:
    """A card's status as the prompt ranking's gate reads it (hql.notes derives `superseded`,
    and `draft` for a note not valid yet)."""
    from hql.context.fields import recall_fields

    status: str = recall_fields(card, mapping).status
    if status_of is not None:
        derived = status_of(card, vault)
        if derived != status and derived in ("superseded", "archived", "draft"):
            status = derived
    return status


@record
class Kept:
    """A plain note the words rule (or, with meaning, `words-or-meaning`) keeps: its rank,
    the rule, and what its hit's detail says of why (matched terms, its meaning)."""

    rank: int
    said: dict[str, Any]
    rule: str = WORDS_RULE


def _words_rule(index: Any, analyzer: Any, prompt: str, depth: int, scores: Any) -> dict[str, Kept]:
    """The plain notes the prompt's words call for, by name, with their rank and matched terms:
    the best `depth` of `bm25(prompt)` that share a whole word with what the
    prompt affirms (`relevant`'s evidence rule: a negated or prefix-only match is no evidence)
    and score at least `WORDS_SHARE` of the best.

    `scores` are the prompt's (`_prompt_scores`)."""
    from hql.search.relevance import affirmed_text, evidence_filter

    hits = index.hits_of(scores, prompt, depth)
    if not hits:
        return {}
    affirmed = set(analyzer.term_list(affirmed_text(prompt)))
    floor = WORDS_SHARE * hits[0].score
    kept = [hit for hit in evidence_filter(hits, _matched, affirmed) if hit.score >= floor]
    return {
        hit.card.name: Kept(rank, {"matched": dict(hit.matched)}) for rank, hit in enumerate(kept)
    }


def _prompt_scores(index: Any, prompt: str, variants: Sequence[Any]) -> Any:
    """The whole prompt's BM25 scores: a prompt of several segments scores as the sum of its
    segments, as the prompt ranking scores it (the index kept their scores)."""
    import numpy as np

    # The ranking scored every variant but the prompt itself in one call (the index kept
    # those scores): asking for the same list finds them.
    named = [(str(v.get("name", "")), v["query"]) for v in variants if v.get("name") != "prompt"]
    many = index.scores_of_many([query for _, query in named]) if named else []
    segments = [
        found for (name, _), found in zip(named, many, strict=True) if name.startswith("segment")
    ]
    if len(segments) > 1:
        present = [found for found in segments if found is not None]
        return np.sum(present, axis=0) if present else None
    return index.scores(prompt)


# --- meaning: the read path of a vault with a semantic index -----------------------------


def _meaning(
    vault: Any, cards: Any, prompt: str, library: str, warn: Callable[[str], None] | None
) -> tuple[Any, dict[str, Any]]:
    """The vault's semantic ranking of the prompt (its best HYBRID_DEPTH cards, the prompt
    embedded and not stored) when the vault ranks by meaning, and what the diagnostics say of
    the ranker: nothing for a vault without a semantic index; `bm25` and why, with a warning
    when meaning failed, when it cannot be used."""
    from hql.index.config import meaning_configured
    from hql.index.errors import SemanticIndexError
    from hql.index.semantic import semantic_ranking, settings_of
    from hql.search.fusion import HYBRID_DEPTH

    try:
        config = settings_of(vault)
    except SemanticIndexError as error:
        config, unreadable = None, error.message
    if config is not None and not meaning_configured(config):
        return None, {}
    if config is None:
        reason = unreadable
    elif not (config.embed_queries and config.embedder is not None):
        # Every prompt is new: without embedding one, meaning has nothing to rank by.
        return None, {"ranker": "bm25", "why": messages.context_meaning_not_embedded()}
    else:
        try:
            found = semantic_ranking(vault, prompt, cards, HYBRID_DEPTH, remember=False)
        except SemanticIndexError as error:
            reason = error.message
        else:
            for message in found.warnings:
                if warn is not None:
                    warn(message)
            model = found.retrieval
            return found, {"ranker": "hybrid", "semantic": f"{model.model}@{model.revision}"}
    if warn is not None:
        warn(messages.context_meaning_failed(library, reason))
    return None, {"ranker": "bm25", "why": reason}


def _words_or_meaning(
    index: Any,
    prompt: str,
    scores: Any,
    depth: int,
    by_words: dict[str, Kept],
    meaning: Any,
) -> tuple[dict[str, Kept], dict[str, Any]]:
    """The plain notes the words rule keeps, and those whose meaning stands out (the meaning
    side of `hybrid | relevant`'s rule, hql.search.relevance: the semantic arm's own rule
    keeps it, within MEANING_WINDOW robust spreads of the best it kept) while there is room
    (`depth` in all), in `hybrid`'s order (the words rule's BM25 arm and the meaning arm
    fused by standing); and the rule's record.

    The words rule is not narrowed by meaning here, as `hybrid | relevant` narrows bm25's:
    the read path's words rule already reaches further than `relevant`'s, and a note
    recording a long conversation reads as little like a short question as an unrelated
    note does (on LoCoMo, with MiniLM, narrowing it put the evidence session in the block
    for 0.79 of the questions instead of 0.93; as it is, 0.930 as without an index:
    bench/meaning.py --only locomo-context)."""
    from hql.search.fusion import HYBRID_DEPTH, fuse_standing
    from hql.search.relevance import MEANING_WINDOW, Meaning, cosine_rule, meaning_reach

    words = index.hits_of(scores, prompt, HYBRID_DEPTH)
    cosines = dict(meaning.hits)
    sections = {
        name: section
        for (name, _), section in zip(meaning.hits, meaning.sections, strict=False)
        if section is not None
    }
    model = meaning.retrieval.model
    judged = {name for name, _ in cosine_rule(meaning.hits, operator.itemgetter(1), model)[0]}
    arm = fuse_standing([[(hit.card.name, hit.score) for hit in words], meaning.hits])
    standing = arm[1][1]
    spread = standing.spread if standing is not None else 0.0
    reach = meaning_reach(
        [Meaning(cosine, name in judged) for name, cosine in meaning.hits], spread
    )
    kept = dict(sorted(by_words.items(), key=lambda item: item[1].rank)[:depth])
    for item in arm[0]:
        name = item.key
        if len(kept) >= depth:
            break
        if name in kept or name not in judged or cosines[name] < reach:
            continue
        detail: dict[str, Any] = {"meaning": round(cosines[name], 4)}
        if name in sections:
            detail["section"] = sections[name].to_json()
        kept[name] = Kept(len(kept), detail, MEANING_RULE)
    place = {item.key: at for at, item in enumerate(arm[0])}
    order = sorted(kept, key=lambda name: (place.get(name, len(place)), kept[name].rank))
    kept = {name: replace(kept[name], rank=rank) for rank, name in enumerate(order)}
    record: dict[str, Any] = {
        "rule": "words-or-meaning",
        "window": MEANING_WINDOW,
        "spread": spread,
        "by_words": sum(1 for found in kept.values() if found.rule == WORDS_RULE),
        "by_meaning": sum(1 for found in kept.values() if found.rule == MEANING_RULE),
    }
    if reach < float("inf"):
        record["reach"] = reach
    return kept, record


def _matched(hit: Any) -> Any:
    return hit.matched


def _ordered(passing: Sequence[Candidate]) -> list[Candidate]:
    """Evidence first (by score, then `must` cards, then the project before a library), then
    the words rule's cards by rank, libraries interleaved (the project first at each rank)."""
    order = {"project": 0}

    def key(candidate: Candidate) -> tuple[Any, ...]:
        library = order.setdefault(candidate.library, len(order))
        if candidate.rule == EVIDENCE_RULE:
            return (0, -candidate.hit.score, not _must(candidate.hit), library, candidate.rank)
        return (1, candidate.rank, not _must(candidate.hit), library, 0.0)

    return sorted(passing, key=key)


def _must(hit: Hit) -> bool:
    return priority_of(hit) == "must"


def _fields(hit: Hit, sources: Sequence[Source]) -> Any:
    from hql.context.fields import recall_fields
    from hql.context.prompt import mapping_for

    return recall_fields(hit.card, mapping_for(_source_of(hit, sources).vault))


def _source_of(hit: Hit, sources: Sequence[Source]) -> Source:
    library = getattr(hit.card, "library", "")
    return next((s for s in sources if s.library == library), sources[0])


@record
class Elsewhere:
    """The transcripts left out because the prompt's person did not say what matched."""

    person: str
    speaker: str
    theirs: float
    own: float
    cards: tuple[str, ...]


def _about_someone_else(
    prompt: str, hits: list[Hit], sources: Sequence[Source], margin: float
) -> tuple[list[Hit], Elsewhere | None]:
    """The hits without the transcripts, when the prompt asks about one of their speakers
    and someone else said what matches it (hql.context.speakers); a `must` card stays."""
    from hql.context.speakers import Read, about_someone_else, transcript_of
    from hql.search.shared import analyzer_for, bm25_index

    read = []
    transcripts = set()
    for hit in hits:
        vault = _source_of(hit, sources).vault
        analyzer = analyzer_for(vault)
        transcript = transcript_of(hit.card, analyzer)
        if transcript is None:
            continue
        transcripts.add(hit.card.name)
        index = bm25_index(vault, vault.lazy_cards())[0]
        read.append(Read(transcript, index.idf, frozenset(analyzer.terms(prompt)), analyzer.terms))
    verdict = about_someone_else(prompt, read, margin)
    if verdict is None:
        return hits, None
    left_out = [h.card.name for h in hits if h.card.name in transcripts and not _must(h)]
    kept = [hit for hit in hits if hit.card.name not in left_out]
    found = Elsewhere(verdict.person, verdict.speaker, verdict.theirs, verdict.own, tuple(left_out))
    return kept, found


def _rejection(candidate: Candidate) -> dict[str, Any]:
    return {
        "card": candidate.hit.card.name,
        "library": candidate.library,
        "reason": candidate.reason or "",
    }


def library_of(name: str, candidates: Sequence[Candidate]) -> str:
    return next((c.library for c in candidates if c.hit.card.name == name), "project")


def _abstention(
    candidates: Sequence[Candidate],
    floor: int,
    elsewhere: Elsewhere | None = None,
    margin: float = SOMEONE_ELSE_MARGIN,
    by_meaning: bool = False,
) -> str:
    if elsewhere is not None:
        return messages.context_about_someone_else(
            elsewhere.person, elsewhere.speaker, elsewhere.theirs, elsewhere.own, margin
        )
    if not candidates:
        return messages.context_no_candidates()
    best = max(int(c.hit.score) for c in candidates)
    return messages.context_none_passed(len(candidates), best, floor, by_meaning)


__all__ = ["assemble", "sources_of"]


def find_card(vault: Any, name: str) -> Any:
    """The card a block names: the project's by its name, a library's by its qualified name
    (or its own name when no other card has it)."""
    card = vault.card_alone(name)
    if card is not None:
        return card
    for library in getattr(vault, "libraries", ()):
        for tagged in library.cards:
            if tagged.name == name:
                return tagged
    return None
