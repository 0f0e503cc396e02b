"""The `semantic` step's entry point: a question against the vault's store.

It reads `[semantics]`, opens the store it names (`hql.index.stores`), finds
or makes the question's vector, and searches. Every refusal is a
`SemanticIndexError`; the retrieval records how the store searched.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from hql import messages
from hql.index.config import SemanticsConfig, load_semantics_config, question_key
from hql.index.embedders import Embedder, make_embedder
from hql.index.errors import EmbedderUnavailable, SemanticIndexError, StoreUnavailable
from hql.index.reader import CardLike, SectionHit, VaultLike, raw_config
from hql.index.stores import SearchFilter, SearchMethod, Store, open_store
from hql.record import field, record

if TYPE_CHECKING:
    import numpy as np

    from hql.index import schema


@record
class SemanticRetrieval:
    """How a ranking was made; shared by all of its hits."""

    query: str
    index: str
    model: str
    revision: str
    metric: str
    approximate: bool = False
    query_embedded_now: bool = False
    search: dict[str, Any] = field(default_factory=dict)  # SearchMethod.to_tree()


@record
class SemanticRanking:
    """Cards best first (score, then name), the warnings of the scan, and the retrieval.

    `sections[i]` is the section `hits[i]` scored by (None for an index without sections).
    """

    hits: list[tuple[str, float]]
    warnings: list[str]
    retrieval: SemanticRetrieval
    sections: list[SectionHit | None] = field(default_factory=list)


# A loaded vault is a snapshot of its configuration: its settings are read on its first query.
_SETTINGS: weakref.WeakKeyDictionary[Any, SemanticsConfig] = weakref.WeakKeyDictionary()


def settings_of(vault: VaultLike) -> SemanticsConfig:
    """The vault's `[semantics]` settings, read once per loaded vault (SemanticIndexError
    when they are wrong; not kept then)."""
    try:
        found = _SETTINGS.get(vault)
    except TypeError:  # a vault-like object that cannot be weakly referenced
        found = None
    if found is None:
        found = load_semantics_config(raw_config(vault))
        with contextlib.suppress(TypeError):
            _SETTINGS[vault] = found
    return found


def semantic_ranking(
    vault: VaultLike,
    query: str,
    cards: Sequence[CardLike] | None = None,
    k: int | None = None,
    embedder: Embedder | None = None,
    exact: bool = False,
    store_filter: tuple[tuple[str, str], ...] = (),
    remember: bool = True,
) -> SemanticRanking:
    """Rank `cards` (default: the whole vault) against `query` with the vault's store.

    `remember = False`: a question embedded now is not kept in the store (the read path's
    prompts are never stored); a question already stored is still read from it.

    `exact` forces an exact scan where the store would approximate. Raises
    `SemanticIndexError` for every refusal. When the question must be embedded
    now and the embedder cannot be reached, raises `EmbedderUnavailable` whose
    `on_unavailable` attribute says what the vault asked for (`"fail"` or
    `"lexical"`), so the language step can fall back; likewise `StoreUnavailable`
    when the store (a Qdrant server) cannot be reached. `store_filter`: the
    conditions the planner found the input's filter to be, for a store to push.
    """
    config = settings_of(vault)
    try:
        return _ranking(vault, config, query, cards, k, embedder, exact, store_filter, remember)
    except StoreUnavailable as error:  # a server down: the vault may ask for bm25 instead
        error.on_unavailable = config.on_unavailable  # type: ignore[attr-defined]
        raise


def scanned_best(
    vault: VaultLike, query: str, cards: Sequence[CardLike], k: int, exact: bool = False
) -> ScannedBest | None:
    """`semantic_ranking(vault, query, cards, k, exact=exact)` for the usual question, in
    one call and no records between the layers: a question already stored, the few best
    of `cards` that hold every card of a SQLite index without sections, found by a scan.

    The hit cards (None: a hit no card of `cards` holds), their scores and warnings, as
    `semantic_ranking` gives them, and what its retrieval records. None: any other
    question, which `semantic_ranking` answers (or refuses).
    """
    config = settings_of(vault)
    if config.store != "sqlite":
        return None
    try:
        store = open_store(vault, config)
    except SemanticIndexError:
        return None  # `semantic_ranking` says why
    scans = getattr(store, "scans", None)
    if scans is None or not scans():
        return None
    key = question_key(query, config)
    try:
        vector = store.query_vector(key)
        if vector is None and key != query:  # a question stored as text before the setting
            vector = store.query_vector(query)
    except SemanticIndexError:
        return None
    if vector is None:
        return None
    index = store.index  # type: ignore[attr-defined]
    best = index.best_cards(vector, cards, k)
    if best is None:
        return None
    found, scores, warnings = best
    model = index.model_row
    method = store.scan_method(exact)  # type: ignore[attr-defined]
    return ScannedBest(found, scores, warnings, store.location, model, method)


class ScannedBest(NamedTuple):
    """`scanned_best`'s answer."""

    cards: list[Any]
    scores: list[float]
    warnings: list[str]
    location: str  # the store's location (the retrieval's index)
    model: schema.ModelRow
    method: SearchMethod


def _ranking(
    vault: VaultLike,
    config: SemanticsConfig,
    query: str,
    cards: Sequence[CardLike] | None,
    k: int | None,
    embedder: Embedder | None,
    exact: bool,
    store_filter: tuple[tuple[str, str], ...],
    remember: bool = True,
) -> SemanticRanking:
    store = open_store(vault, config)
    warnings: list[str] = []
    key = question_key(query, config)
    vector = store.query_vector(key)
    if vector is None and key != query:  # a question stored as text before the setting
        vector = store.query_vector(query)
    embedded_now = vector is None
    if vector is None:
        if not (config.embed_queries and config.embedder is not None):
            raise SemanticIndexError(messages.index_query_missing(query))
        try:
            vector = _embed_query(store, query, embedder or make_embedder(config.embedder))
        except EmbedderUnavailable as error:
            error.on_unavailable = config.on_unavailable  # type: ignore[attr-defined]
            raise
        stored = store.add_query(key, vector) if remember else None
        warnings.extend([stored] if stored else [])
    among = vault.cards if cards is None else cards
    result = store.search(vector, k, SearchFilter(among, store_filter), exact)
    model = store.model
    retrieval = SemanticRetrieval(
        query,
        store.location,
        model.id,
        model.revision,
        model.metric,
        result.method.approximate,
        embedded_now,
        result.method.to_tree(),
    )
    return SemanticRanking(result.hits, result.warnings + warnings, retrieval, result.sections)


def _embed_query(store: Store, query: str, embedder: Embedder) -> np.ndarray:
    """A run-time query vector, only from the very model and revision that built the index."""
    return _embed_queries(store, [query], embedder)[0]


def _embed_queries(store: Store, queries: Sequence[str], embedder: Embedder) -> np.ndarray:
    """Run-time query vectors (one batch), only from the model and revision that built the index."""
    model = store.model
    if (embedder.model_id, embedder.revision) != (model.id, model.revision):
        raise SemanticIndexError(
            messages.index_embedder_mismatch(
                f"{embedder.model_id}@{embedder.revision}", f"{model.id}@{model.revision}"
            )
        )
    vectors = embedder.embed_queries(list(queries))
    if len(vectors[0]) != model.dimensions:
        raise SemanticIndexError(
            messages.embedder_wrong_dimensions(len(vectors[0]), model.dimensions)
        )
    return vectors
