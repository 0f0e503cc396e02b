"""Where a semantic index keeps its vectors, behind one protocol.

The `semantic` step never reads a store directly: it asks `open_store` for the
store `[semantics] store` names (default `"sqlite"`, the schema v1 file) and
calls `search`. Every search says how it was done (`SearchMethod`: exact or
approximate, and the parameters in force), which the step records in its
`Retrieval`, so an approximate answer is always declared.

A store holds per card: its text digest, its own vector, and its sections'
vectors (the unit a card scores by: its best section). Writing is by card:
`upsert` replaces a card's vectors and digest, `delete` removes cards that
left the vault, so a build sends only what changed.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hql import messages
from hql.index.config import load_semantics_config
from hql.index.errors import SemanticIndexError
from hql.index.reader import CardLike, SectionHit, VaultLike, raw_config
from hql.record import field, record

if TYPE_CHECKING:
    import numpy as np

    from hql.index import schema
    from hql.index.config import SemanticsConfig
    from hql.index.producer import VerifyResult
    from hql.index.stores.sqlite import SqliteStore


@record
class SearchFilter:
    """What a search may return.

    `cards`: only these cards (the step's input; their digests also tell which
    scores are stale). None: every card in the store.
    """

    cards: Sequence[CardLike] | None = None
    # `(field, value)` equalities the planner found the input's filter to be (its
    # `store-filter` rule): a store may test them on its payload instead of the names.
    store_filter: tuple[tuple[str, str], ...] = ()


@record
class SearchMethod:
    """How one search was done, as the Retrieval records it (its `search` entry)."""

    store: str  # "sqlite", "qdrant", ...
    approximate: bool
    parameters: Mapping[str, Any] = field(default_factory=dict)  # e.g. {"m": 16, "ef_search": 64}
    exact_requested: bool = False  # `semantic(q, exact = true)`
    reason: str | None = None  # why an exact scan ran where an approximate one was configured

    def to_tree(self) -> dict[str, Any]:
        tree: dict[str, Any] = {"store": self.store, "exact": not self.approximate}
        tree.update(self.parameters)
        if self.exact_requested:
            tree["exact_requested"] = True
        if self.reason:
            tree["reason"] = self.reason
        return tree


@record
class SearchResult:
    """Cards best first (score, then name), the section each scored by, warnings, and the method."""

    hits: list[tuple[str, float]]
    sections: list[SectionHit | None]
    warnings: list[str]
    method: SearchMethod


@dataclass(frozen=True, slots=True)
class SectionVector:
    ordinal: int
    heading: tuple[str, ...]
    line_start: int
    line_end: int
    vector: np.ndarray


@dataclass(frozen=True, slots=True)
class CardVectors:
    """One card as a store keeps it: digest, own vector (normalised mean of its sections) and sections."""

    name: str
    path: str  # vault-relative, posix
    digest: str
    vector: np.ndarray
    sections: tuple[SectionVector, ...] = ()
    tags: tuple[str, ...] = ()  # what a store's payload filter may read (Qdrant)
    metadata: Mapping[str, Any] | None = None


class Store(Protocol):
    """A place that keeps one vault's vectors for one model and revision."""

    kind: str  # the `[semantics] store` value that opens it
    location: str  # what a Retrieval names as its index (a file, a collection)

    @property
    def model(self) -> schema.ModelRow: ...

    def verify(self, vault: VaultLike) -> VerifyResult:
        """Stale, missing, extra and malformed cards, compared with the vault."""
        ...

    def digests(self) -> dict[str, str]:
        """Each stored card's text digest: what an incremental build compares."""
        ...

    def upsert(self, cards: Sequence[CardVectors]) -> None:
        """Add or replace these cards (their sections replaced whole)."""
        ...

    def delete(self, names: Collection[str]) -> None:
        """Remove these cards and their sections (unknown names are ignored)."""
        ...

    def query_vector(self, text: str) -> np.ndarray | None:
        """A question's vector stored with the index, if any."""
        ...

    def add_query(self, text: str, vector: np.ndarray) -> str | None:
        """Keep a question embedded at run time; a warning when it cannot be kept."""
        ...

    def search(
        self,
        vector: np.ndarray,
        k: int | None,
        filter: SearchFilter | None = None,
        exact: bool = False,
    ) -> SearchResult:
        """The best `k` cards (every card when None) for a unit vector; `exact` forces a scan."""
        ...


StoreOpener = Callable[[VaultLike, "SemanticsConfig"], Store]


# A loaded vault's SQLite store and the settings it was opened with: the next query with the
# same settings reuses it while its index file is the revision it read (one stat).
_OPENED: weakref.WeakKeyDictionary[Any, tuple[SemanticsConfig, SqliteStore]] = (
    weakref.WeakKeyDictionary()
)


def _open_sqlite(vault: VaultLike, config: SemanticsConfig) -> Store:
    try:
        known = _OPENED.get(vault)
    except TypeError:  # a vault-like object that cannot be weakly referenced
        known = None
    if known is not None and known[0] is config and known[1].index.unchanged():
        return known[1]
    store = _open_sqlite_anew(vault, config)
    with contextlib.suppress(TypeError):
        _OPENED[vault] = (config, store)
    return store


def _open_sqlite_anew(vault: VaultLike, config: SemanticsConfig) -> SqliteStore:
    if config.ann != "off":
        from hql.index.stores.hnsw import HnswStore

        return HnswStore.for_vault(vault, config)
    from hql.index.stores.sqlite import SqliteStore

    return SqliteStore.for_vault(vault, config)


def after_build(vault: VaultLike, index_path: Path) -> list[str]:
    """What the vault's store keeps beside a freshly written index (an HNSW graph); lines to report.

    Raises `SemanticIndexError` when the settings ask for a graph that cannot be built.
    """
    config = load_semantics_config(raw_config(vault))
    if config.store != "sqlite" or config.ann == "off":
        return []
    from hql.index.stores.hnsw import GraphUnusable, refresh_graph

    try:
        return refresh_graph(index_path, Path(vault.root), config)
    except GraphUnusable as problem:
        if config.ann == "hnsw":
            raise SemanticIndexError(messages.hnsw_not_built(problem.reason)) from None
        return [messages.hnsw_not_built(problem.reason)]


def _open_qdrant(vault: VaultLike, config: SemanticsConfig) -> Store:
    from hql.index.stores.qdrant import QdrantStore

    return QdrantStore.for_vault(vault, config)


# `[semantics] store` value → how to open it. Each opener imports its library lazily.
STORES: dict[str, StoreOpener] = {"sqlite": _open_sqlite, "qdrant": _open_qdrant}


def open_store(vault: VaultLike, config: SemanticsConfig | None = None) -> Store:
    """The store the vault's `[semantics]` settings name, opened and checked against the vault."""
    config = config or load_semantics_config(raw_config(vault))
    opener = STORES.get(config.store)
    if opener is None:
        raise SemanticIndexError(messages.index_unknown_store(config.store, sorted(STORES)))
    return opener(vault, config)


def graph_status(vault: VaultLike, index_path: Path) -> str:
    """What `hql index inspect` says about the HNSW graph beside the index."""
    config = load_semantics_config(raw_config(vault))
    if config.store != "sqlite":
        return messages.hnsw_status_not_used(config.store)
    from hql.index.stores.hnsw import describe_graph

    return describe_graph(index_path, Path(vault.root), config)
