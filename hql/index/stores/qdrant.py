"""The Qdrant store: a semantic index kept in a Qdrant collection (`[semantics] store = "qdrant"`).

One point per section of a card (a card without sections is one point of its
own vector), with payload `name, digest, model, revision, vault, folder, tags,
path, metadata, section`. A card scores as its best section: a search groups
points by `name`, one hit per card, exactly as the SQLite store takes the best
section. Vectors are unit length and compared by dot product (= cosine).

The collection carries its description in Qdrant's collection metadata under
`hql` (model, revision, dimensions, vault, build time, a generation counter
bumped by every build); questions' vectors live in a second collection,
`<collection>-queries`, one point per question.

`path` is Qdrant's embedded local mode: one process at a time, and every search
is an exact scan (the client says so; HNSW parameters do not apply there), so
a local-mode Retrieval says `approximate: false`. A server (`url`) searches its
HNSW graph unless `exact = true`; its Retrieval then declares `approximate:
true` with `hnsw_ef` and the graph's `m` and `ef_construct`.

qdrant-client is imported only when this store is opened (it takes seconds).
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import functools
import hashlib
import json
import os
import re
import threading
import uuid
import warnings
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hql import messages
from hql.deadline import shielded
from hql.index import schema
from hql.index.config import EmbedderConfig, QdrantConfig, SemanticsConfig, resolve_index_path
from hql.index.errors import SemanticIndexError, StoreUnavailable
from hql.index.reader import (
    CardLike,
    SectionHit,
    VaultLike,
    check_vault,
    exact_scores,
    float32_slack,
)
from hql.index.stores import CardVectors, SearchFilter, SearchMethod, SearchResult
from hql.record import replace as replace_record

if TYPE_CHECKING:
    import numpy as np

    from hql.index.producer import VerifyResult

KIND = "qdrant"
# The payload a pushed-down filter reads (hql.planner's `store-filter` rule names these fields).
FILTER_FIELDS = ("folder", "folder_tree", "tag_tree", "metadata")
QUERIES_SUFFIX = "-queries"
_POINTS = uuid.UUID("6f0c5a7e-4b8e-4a51-9a8e-2d1c0b7f3e11")  # namespace of point ids
_SCROLL_PAGE = 2048
# How far Qdrant's score of a unit-vector dot product may be from HQL's (at least).
_SCORE_SLACK = 1e-4
_UPSERT_BATCH = 256


# --- clients: one per location and process ----------------------------------------

_CLIENTS: dict[tuple[str, str], Any] = {}
# (location, collection) -> (build generation, each card's digest): read once per build.
_DIGESTS: dict[tuple[str, str], tuple[int, dict[str, str]]] = {}
_CATALOGUES: dict[tuple[str, str], tuple[int, dict[str, dict[str, Any]]]] = {}
_CLIENTS_LOCK = threading.Lock()


def _import_client() -> Any:
    try:
        import qdrant_client
    except ImportError:
        raise SemanticIndexError(messages.qdrant_package_missing()) from None
    return qdrant_client


def _remember(cache_key: tuple[str, str], client: Any) -> None:
    """Keep a client for the process; all are closed at exit, before the interpreter tears
    down the modules their own finalizers need (a local folder's lock is released cleanly)."""
    if not _CLIENTS:
        atexit.register(close_clients)
    _CLIENTS[cache_key] = client


def _client_for(
    config: QdrantConfig, folder: Path | None, create: bool, notes: list[str] | None = None
) -> Any:
    """The client for a server or a local folder; a local folder is opened once per process.

    A local folder is opened only when it carries HQL's seal (`hql.index.stores.seal`);
    a build (`create`) sets an unsealed one aside, saying so in `notes`, and starts anew.
    """
    qdrant_client = _import_client()
    if config.url is not None:
        key = _api_key(config)
        cache_key = (config.url, config.api_key_env or "")
        with _CLIENTS_LOCK:
            client = _CLIENTS.get(cache_key)
            if client is None:
                client = qdrant_client.QdrantClient(
                    url=config.url,
                    api_key=key,
                    timeout=max(1, round(config.timeout)),
                    check_compatibility=False,  # no request before the first real one
                )
                _remember(cache_key, client)
            return client
    assert folder is not None
    cache_key = ("path", str(folder))
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(cache_key)
        if client is not None:
            return client
        if not folder.is_dir():
            if not create or folder.exists():
                raise SemanticIndexError(messages.qdrant_folder_missing(str(folder)))
            try:
                folder.mkdir(parents=True)
            except OSError as error:
                raise SemanticIndexError(
                    messages.index_unwritable(str(folder), error.strerror or str(error))
                ) from None
        _check_local_folder(folder, create, notes)
        try:
            # Local mode warns about large collections and ignored search parameters;
            # the Retrieval already says how a local search is done.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                client = qdrant_client.QdrantClient(path=str(folder))
        except RuntimeError as error:
            if "already accessed" in str(error):
                raise SemanticIndexError(messages.qdrant_folder_in_use(str(folder))) from None
            raise SemanticIndexError(
                messages.qdrant_folder_unreadable(str(folder), str(error))
            ) from None
        except (OSError, ValueError, KeyError) as error:
            raise SemanticIndexError(
                messages.qdrant_folder_unreadable(str(folder), str(error))
            ) from None
        _remember(cache_key, client)
        return client


def _check_local_folder(folder: Path, create: bool, notes: list[str] | None) -> None:
    """Refuse (or, for a build, set aside) a local folder HQL did not seal, before it is opened."""
    from hql.index.stores import seal

    if not folder.is_dir():
        return
    with _lock_held_by_other(folder) as busy:
        if busy:
            raise SemanticIndexError(messages.qdrant_folder_in_use(str(folder)))
        try:
            seal.check_seal(folder)
            return
        except seal.Unsealed as problem:
            reason, ours = problem.reason, problem.ours
        except OSError as error:
            reason, ours = error.strerror or str(error), False
    if not create:
        raise SemanticIndexError(messages.qdrant_folder_unsealed(str(folder), reason))
    if not ours:  # a stranger's folder (or one planted): never opened, never moved
        raise SemanticIndexError(messages.qdrant_folder_foreign(str(folder), reason))
    aside = folder.with_name(f"{folder.name}.refused-{_stamp_now()}")
    try:
        folder.rename(aside)
        folder.mkdir()
    except OSError as error:
        raise SemanticIndexError(
            messages.qdrant_folder_not_set_aside(str(folder), reason, error.strerror or str(error))
        ) from None
    if notes is not None:
        notes.append(messages.qdrant_folder_set_aside(str(folder), reason, str(aside)))


@contextlib.contextmanager
def _lock_held_by_other(folder: Path) -> Iterator[bool]:
    """Hold qdrant-client's lock on the folder while it is checked; True when another holds it."""
    import fcntl

    path = folder / ".lock"
    flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:  # no lock file yet (or not one to open: the seal check refuses it)
        yield False
        return
    with shielded():  # a query's time guard must not leave qdrant's lock held (hql.deadline)
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield True
                return
            except OSError:
                pass
            yield False
        finally:
            os.close(descriptor)


def _stamp_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S")


# Local folders this process wrote and has not sealed since (a build seals once, at its end).
_UNSEALED: set[Path] = set()


def _seal_folder(folder: Path) -> None:
    from hql.index.stores import seal

    try:
        seal.write_seal(folder)
    except (seal.Unsealed, OSError) as error:
        reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or str(error)
        raise SemanticIndexError(messages.qdrant_folder_not_sealed(str(folder), reason)) from None
    _UNSEALED.discard(folder)


def close_clients() -> None:
    """Close every client this process opened (a local folder is then free for others);
    a folder written since its last seal is sealed first."""
    with _CLIENTS_LOCK:
        for folder in list(_UNSEALED):
            with contextlib.suppress(SemanticIndexError):
                _seal_folder(folder)
        _UNSEALED.clear()
        for client in _CLIENTS.values():
            with contextlib.suppress(Exception):
                client.close()
        _CLIENTS.clear()


def _api_key(config: QdrantConfig) -> str | None:
    if config.api_key_env is None:
        return None
    key = os.environ.get(config.api_key_env)
    if not key:
        raise SemanticIndexError(messages.qdrant_api_key_env_unset(config.api_key_env))
    return key


# --- names ----------------------------------------------------------------------------


def default_collection(vault_name: str, model: str, revision: str) -> str:
    """`hql-<vault>-<model>-<8 hex of model@revision>`: one collection per vault and vectors."""

    def slug(text: str, width: int) -> str:
        return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:width].lower() or "x"

    digest = hashlib.sha256(f"{model}@{revision}".encode()).hexdigest()[:8]
    return f"hql-{slug(vault_name, 60)}-{slug(model.rsplit('/', 1)[-1], 60)}-{digest}"


def point_id(name: str, ordinal: int) -> str:
    return str(uuid.uuid5(_POINTS, f"{name}\0{ordinal}"))


def query_id(text: str) -> str:
    return str(uuid.uuid5(_POINTS, f"query\0{text}"))


def filter_payload(
    path: str, tags: Sequence[str], metadata: Mapping[str, Any] | None
) -> dict[str, Any]:
    """`folder`, `tags` and `metadata` as written, and the trees `in_folder` and `has_tag` read.

    `folder_tree`: the card's folder and every folder above it; `tag_tree`: each tag
    casefolded and every tag above it (`paper/soil` → `paper`, `paper/soil`).
    """
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    parts = folder.split("/") if folder else []
    tag_tree: set[str] = set()
    for tag in tags:
        pieces = tag.casefold().split("/")
        tag_tree.update("/".join(pieces[: end + 1]) for end in range(len(pieces)))
    return {
        "folder": folder,
        "folder_tree": ["/".join(parts[: end + 1]) for end in range(len(parts))],
        "tags": list(tags),
        "tag_tree": sorted(tag_tree),
        "metadata": json_safe(dict(metadata or {})),
    }


def _payload_has(payload: Mapping[str, Any], field: str, value: str) -> bool:
    """Qdrant's match of one value: the field is that value, or a list holding it."""
    found: Any = payload
    for part in field.split("."):
        found = found.get(part) if isinstance(found, Mapping) else None
    return found == value or (isinstance(found, list) and value in found)


def json_safe(value: Any) -> Any:
    """Front-matter values as JSON payload (dates become ISO text, other objects their text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(item) for item in value]
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    return str(value)


# --- the store --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Description:
    """What `hql index build` recorded in the collection's metadata."""

    model: schema.ModelRow
    vault: str
    built_at: str
    tool_version: str
    generation: int


class QdrantStore:
    """One vault's vectors in one Qdrant collection."""

    kind = KIND

    def __init__(
        self,
        config: QdrantConfig,
        client: Any,
        collection: str,
        where: str,
        vault_root: Path,
        description: _Description,
    ) -> None:
        self.config = config
        self.client = client
        self.collection = collection
        self.where = where  # the url, or the local folder
        self.location = f"qdrant:{where}#{collection}"
        self.vault_root = vault_root
        self._description = description
        self.building = False  # a build seals a local folder once, when it finishes

    def _written(self) -> None:
        """After a write: a local folder is sealed again (a build's, when it finishes)."""
        if not self.local:
            return
        folder = Path(self.where)
        _UNSEALED.add(folder)
        if not self.building:
            _seal_folder(folder)

    # -- opening -------------------------------------------------------------------

    @classmethod
    def for_vault(cls, vault: VaultLike, config: SemanticsConfig) -> QdrantStore:
        """The vault's collection, checked: it exists, is HQL's, and holds this vault's vectors."""
        qdrant, folder, where = _settings(vault, config)
        client = _client_for(qdrant, folder, create=False)
        collection = collection_name(vault, config)
        description = _describe(client, collection, where)
        check_collection_vault(collection, description.vault, Path(vault.root))
        vectors = _vectors_of(config.embedder)
        if vectors is not None:
            _check_model(collection, description.model, *vectors)
        return cls(qdrant, client, collection, where, Path(vault.root), description)

    @classmethod
    def for_build(
        cls,
        vault: VaultLike,
        config: SemanticsConfig,
        model_id: str,
        revision: str,
        notes: list[str] | None = None,
    ) -> QdrantStore | None:
        """The collection a build of these vectors writes, when it exists (None: not yet).

        A collection of another model, another vault or not made by HQL is refused, never
        replaced: a collection may be shared, and its points are not this build's to drop.
        """
        qdrant, folder, where = _settings(vault, config)
        client = _client_for(qdrant, folder, create=True, notes=notes)
        collection = qdrant.collection or default_collection(
            Path(vault.root).resolve().name, model_id, revision
        )
        with _calls(where, collection):
            exists = client.collection_exists(collection)
        if not exists:
            return None
        description = _describe(client, collection, where)
        _check_model(collection, description.model, model_id, revision)
        check_collection_vault(collection, description.vault, Path(vault.root))
        store = cls(qdrant, client, collection, where, Path(vault.root), description)
        store.building = True
        return store

    @classmethod
    def create(
        cls, vault: VaultLike, config: SemanticsConfig, model: schema.ModelRow, built_at: str
    ) -> QdrantStore:
        """A new, empty collection for these vectors."""
        qdrant, folder, where = _settings(vault, config)
        client = _client_for(qdrant, folder, create=True)
        collection = qdrant.collection or default_collection(
            Path(vault.root).resolve().name, model.id, model.revision
        )
        label = Path(vault.root).resolve().name
        description = _Description(model, label, built_at, schema.TOOL_VERSION, 0)
        _create(client, collection, where, description, local=qdrant.url is None)
        store = cls(qdrant, client, collection, where, Path(vault.root), description)
        store.building = True
        store._written()
        return store

    def check_dimensions(self, dimensions: int) -> None:
        if dimensions != self.model.dimensions:
            raise SemanticIndexError(
                messages.qdrant_collection_dimensions(
                    self.collection, self.model.dimensions, dimensions
                )
            )

    # -- what the protocol reads -----------------------------------------------------

    @property
    def model(self) -> schema.ModelRow:
        return self._description.model

    @property
    def vault_label(self) -> str:
        return self._description.vault

    @property
    def built_at(self) -> str:
        return self._description.built_at

    @property
    def tool_version(self) -> str:
        return self._description.tool_version

    @property
    def local(self) -> bool:
        return self.config.url is None

    def digests(self) -> dict[str, str]:
        """Each stored card's digest (read once per build generation of the collection)."""
        key = (self.where, self.collection)
        generation = self._description.generation
        cached = _DIGESTS.get(key)
        if cached is not None and cached[0] == generation:
            return cached[1]
        found: dict[str, str] = {}
        for payload in self._scroll(["name", "digest"]):
            found[str(payload.get("name"))] = str(payload.get("digest") or "")
        _DIGESTS[key] = (generation, found)
        return found

    def _forget_digests(self) -> None:
        _DIGESTS.pop((self.where, self.collection), None)
        _CATALOGUES.pop((self.where, self.collection), None)

    def section_counts(self) -> dict[str, int]:
        """How many points each stored card has."""
        counts: dict[str, int] = {}
        for payload in self._scroll(["name"]):
            name = str(payload.get("name"))
            counts[name] = counts.get(name, 0) + 1
        return counts

    def points(self) -> int:
        with _calls(self.where, self.collection):
            return int(self.client.count(self.collection, exact=True).count)

    def queries(self) -> list[str]:
        texts: list[str] = []
        with _calls(self.where, self.collection):
            if not self.client.collection_exists(self._queries):
                return []
        for payload in self._scroll(["text"], collection=self._queries):
            texts.append(str(payload.get("text")))
        return sorted(texts)

    def verify(self, vault: VaultLike) -> VerifyResult:
        """Stale, missing and extra cards; points of another width cannot exist in a collection."""
        from hql.index.producer import VerifyResult

        stored = self.digests()
        digests = {card.name: card.digest for card in vault.cards}
        counts = self.section_counts()
        return VerifyResult(
            cards=len(stored),
            queries=len(self.queries()),
            stale=sorted(n for n, d in stored.items() if n in digests and digests[n] != d),
            missing=sorted(set(digests) - set(stored)),
            extra=sorted(set(stored) - set(digests)),
            sections=sum(counts.values()),
        )

    # -- writing ---------------------------------------------------------------------------

    def upsert(self, cards: Sequence[CardVectors]) -> None:
        """Replace these cards' points (a card's old sections go first: their count may change)."""
        if not cards:
            return
        models = _models()
        known = self.digests()
        self.delete([card.name for card in cards if card.name in known])
        batch: list[Any] = []
        for card in cards:
            for point in self._points_of(card, models):
                batch.append(point)
                if len(batch) >= _UPSERT_BATCH:
                    self._upsert(batch)
                    batch = []
        if batch:
            self._upsert(batch)
        self._forget_digests()
        self._written()

    def delete(self, names: Collection[str]) -> None:
        if not names:
            return
        models = _models()
        wanted = sorted(names)
        for start in range(0, len(wanted), _UPSERT_BATCH):
            chunk = wanted[start : start + _UPSERT_BATCH]
            condition = models.FieldCondition(key="name", match=models.MatchAny(any=chunk))
            selector = models.FilterSelector(filter=models.Filter(must=[condition]))
            with _calls(self.where, self.collection):
                self.client.delete(self.collection, points_selector=selector, wait=True)
        self._forget_digests()
        self._written()

    def stored_paths(self) -> dict[str, str]:
        """Each stored card's vault-relative path (a card moved without a change keeps its vectors)."""
        return {
            str(payload.get("name")): str(payload.get("path") or "")
            for payload in self._scroll(["name", "path"])
        }

    def relocate(
        self, name: str, path: str, tags: Sequence[str], metadata: Mapping[str, Any] | None
    ) -> None:
        """A moved card's payload brought up to date; its vectors stay."""
        models = _models()
        condition = models.FieldCondition(key="name", match=models.MatchValue(value=name))
        selector = models.FilterSelector(filter=models.Filter(must=[condition]))
        payload = {"path": path, **filter_payload(path, tags, metadata)}
        with _calls(self.where, self.collection):
            self.client.set_payload(self.collection, payload=payload, points=selector, wait=True)
        self._forget_digests()
        self._written()

    def finish_build(self, vault: VaultLike, built_at: str) -> None:
        """Record the build in the collection's metadata (readers' caches key on the generation)."""
        description = _Description(
            self.model,
            Path(vault.root).resolve().name,
            built_at,
            schema.TOOL_VERSION,
            self._description.generation + 1,
        )
        with _calls(self.where, self.collection):
            self.client.update_collection(self.collection, metadata={"hql": _to_meta(description)})
        self._description = description
        self._forget_digests()
        self.building = False
        self._written()

    def _points_of(self, card: CardVectors, models: Any) -> Iterator[Any]:
        payload = {
            "name": card.name,
            "digest": card.digest,
            "model": self.model.id,
            "revision": self.model.revision,
            "vault": self._description.vault,
            "path": card.path,
            **filter_payload(card.path, card.tags, card.metadata),
        }
        if not card.sections:
            section = {"ordinal": -1, "of": 0, "heading": [], "lines": [0, 0]}
            yield models.PointStruct(
                id=point_id(card.name, -1),
                vector=_as_list(card.vector),
                payload={**payload, "section": section},
            )
            return
        for part in card.sections:
            section = {
                "ordinal": part.ordinal,
                "of": len(card.sections),
                "heading": list(part.heading),
                "lines": [part.line_start, part.line_end],
            }
            yield models.PointStruct(
                id=point_id(card.name, part.ordinal),
                vector=_as_list(part.vector),
                payload={**payload, "section": section},
            )

    def _upsert(self, points: list[Any], collection: str | None = None) -> None:
        with _calls(self.where, self.collection):
            self.client.upsert(collection or self.collection, points=points, wait=True)

    # -- questions ---------------------------------------------------------------------

    @property
    def _queries(self) -> str:
        return self.collection + QUERIES_SUFFIX

    def query_vector(self, text: str) -> np.ndarray | None:
        import numpy as np

        with _calls(self.where, self._queries):
            if not self.client.collection_exists(self._queries):
                return None
            found = self.client.retrieve(self._queries, ids=[query_id(text)], with_vectors=True)
        if not found or found[0].vector is None:
            return None
        vector = np.asarray(found[0].vector, dtype=np.float32)
        if len(vector) != self.model.dimensions:
            raise SemanticIndexError(
                messages.index_query_wrong_length(text, len(vector) * 4, self.model.dimensions * 4)
            )
        if not np.isfinite(vector).all():
            raise SemanticIndexError(messages.index_query_vector_not_finite(text))
        return vector

    def add_queries(self, vectors: Mapping[str, np.ndarray]) -> None:
        if not vectors:
            return
        models = _models()
        with _calls(self.where, self._queries):
            if not self.client.collection_exists(self._queries):
                params = models.VectorParams(
                    size=self.model.dimensions, distance=models.Distance.DOT
                )
                self.client.create_collection(self._queries, vectors_config=params)
        points = [
            models.PointStruct(id=query_id(text), vector=_as_list(vector), payload={"text": text})
            for text, vector in vectors.items()
        ]
        for start in range(0, len(points), _UPSERT_BATCH):
            self._upsert(points[start : start + _UPSERT_BATCH], collection=self._queries)
        self._written()

    def add_query(self, text: str, vector: np.ndarray) -> str | None:
        try:
            self.add_queries({text: vector})
        except SemanticIndexError as error:
            return messages.index_query_not_stored(text, error.message)
        return None

    # -- searching ------------------------------------------------------------------------

    def method(self, exact: bool) -> SearchMethod:
        """How a search is done here: local mode always scans; a server searches its graph."""
        if self.local:
            return SearchMethod(
                KIND,
                approximate=False,
                parameters={"mode": "local", "collection": self.collection},
                exact_requested=exact,
            )
        parameters: dict[str, Any] = {"mode": "server", "collection": self.collection}
        if not exact:
            parameters.update(self._hnsw_parameters())
        return SearchMethod(
            KIND, approximate=not exact, parameters=parameters, exact_requested=exact
        )

    def _hnsw_parameters(self) -> dict[str, Any]:
        with _calls(self.where, self.collection):
            info = self.client.get_collection(self.collection)
        hnsw = info.config.hnsw_config
        ef = self.config.hnsw_ef
        return {
            "hnsw_ef": ef if ef is not None else "default (ef_construct)",
            "m": hnsw.m,
            "ef_construct": hnsw.ef_construct,
        }

    def search(
        self,
        vector: np.ndarray,
        k: int | None,
        filter: SearchFilter | None = None,
        exact: bool = False,
    ) -> SearchResult:
        """The best `k` cards by their best section: score descending, then name."""
        models = _models()
        stored = self.digests()
        names, warnings_ = self._candidates(filter, stored)
        method = self.method(exact)
        cards = len(stored) if names is None else len(names)
        wanted = cards if k is None else min(k, cards)
        if wanted <= 0:
            return SearchResult([], [], warnings_, method)
        offered: tuple[tuple[str, str], ...] = tuple(getattr(filter, "store_filter", ()) or ())
        conditions: list[Any] = []
        if offered:
            pushed = self._pushable(offered, set(stored) if names is None else names)
            shown = " and ".join(f"{field} = {value!r}" for field, value in offered)
            extra = {"filter": shown} if pushed else {"filter_not_pushed": shown}
            method = replace_record(method, parameters={**method.parameters, **extra})
            if pushed:
                names = None  # the payload condition selects exactly the input's cards
                conditions.extend(
                    models.FieldCondition(key=field, match=models.MatchValue(value=value))
                    for field, value in offered
                )
        if names is not None:
            conditions.append(
                models.FieldCondition(key="name", match=models.MatchAny(any=sorted(names)))
            )
        query_filter = models.Filter(must=conditions) if conditions else None
        params = None
        if not self.local:
            params = models.SearchParams(hnsw_ef=self.config.hnsw_ef, exact=exact)
        hits = self._grouped(vector, wanted, self.points(), query_filter, params)
        return SearchResult(
            [(name, score) for name, score, _ in hits],
            [section for _, _, section in hits],
            warnings_,
            method,
        )

    def _pushable(self, offered: tuple[tuple[str, str], ...], among: set[str]) -> bool:
        """Do the payload conditions select exactly these stored cards?

        Decided on the payload as stored (Qdrant's own matching: a value, or a list
        holding it), so a card changed or moved since the build, or a metadata value
        HQL compares differently, keeps the filter from being pushed.
        """
        selected = {
            name
            for name, payload in self._catalogue().items()
            if all(_payload_has(payload, field, value) for field, value in offered)
        }
        return selected == among

    def _catalogue(self) -> dict[str, dict[str, Any]]:
        """Each stored card's filter payload (one point per card), read once per build."""
        key = (self.where, self.collection)
        generation = self._description.generation
        cached = _CATALOGUES.get(key)
        if cached is not None and cached[0] == generation:
            return cached[1]
        found: dict[str, dict[str, Any]] = {}
        for payload in self._scroll(["name", *FILTER_FIELDS]):
            found.setdefault(str(payload.get("name")), payload)
        _CATALOGUES[key] = (generation, found)
        return found

    def _candidates(
        self, filter: SearchFilter | None, stored: dict[str, str]
    ) -> tuple[set[str] | None, list[str]]:
        """The stored cards among the input (None: all of them), and the stale/absent warnings."""
        cards: Sequence[CardLike] | None = filter.cards if filter is not None else None
        if cards is None:
            return None, []
        present: set[str] = set()
        stale: list[str] = []
        absent = 0
        for card in cards:
            digest = stored.get(card.name)
            if digest is None:
                absent += 1
                continue
            present.add(card.name)
            if digest != card.digest:
                stale.append(card.name)
        found = [messages.index_card_stale(name) for name in sorted(stale)]
        if absent:
            found.append(messages.index_cards_absent(absent))
        return (None if len(present) == len(stored) else present), found

    def _grouped(
        self, vector: np.ndarray, wanted: int, total: int, query_filter: Any, params: Any
    ) -> list[tuple[str, float, SectionHit | None]]:
        """The best `wanted` cards, each by its best section.

        Qdrant picks the candidate points; HQL scores them again as the SQLite store
        does (`exact_scores`: Qdrant's local mode computes in float64 without the
        final rounding, a server in float32 in its own SIMD order), so both stores
        give the same scores and rank near-ties alike. A card's score is
        its best point's. Once the k-th card beats the last point fetched by more than
        the two computations can differ, no card not yet seen can reach it, ties
        included; until then the fetch doubles. Grouping happens here rather than in
        Qdrant's group search: local mode groups in Python, ten times slower.
        """
        import numpy as np

        query = np.ascontiguousarray(vector, dtype=np.float32)
        slack = max(_SCORE_SLACK, float32_slack(len(query)))
        limit = max(1, min(total, wanted * 2 + 16))
        while True:
            with _calls(self.where, self.collection):
                points = self.client.query_points(
                    self.collection,
                    query=_as_list(query),
                    limit=limit,
                    query_filter=query_filter,
                    search_params=params,
                    with_payload=["name", "section"],
                    with_vectors=True,
                ).points
            if not points:
                return []
            block = self._checked_vectors(points, len(query))
            scores = exact_scores(block, query).tolist()
            best: dict[str, tuple[float, SectionHit | None]] = {}
            for point, score in zip(points, scores, strict=True):
                name, _, section = _hit(point)
                if name not in best or _better(score, section, *best[name]):
                    best[name] = (score, section)
            hits = sorted(
                ((name, score, section) for name, (score, section) in best.items()),
                key=lambda hit: (-hit[1], hit[0]),
            )
            exhausted = len(points) < limit or limit >= total
            floor = float(points[-1].score) + slack
            if exhausted or (len(hits) >= wanted and hits[wanted - 1][1] > floor):
                return hits[:wanted]
            limit = min(total, limit * 2)

    @staticmethod
    def _checked_vectors(points: Sequence[Any], dimensions: int) -> np.ndarray:
        """The points' vectors as rows, each checked as the SQLite store checks its own: of
        the declared width and a unit vector (a vector scaled up would outrank every card,
        a zero one would never rank), else one report naming its card and the rebuild."""
        import numpy as np

        for point in points:
            vector = point.vector
            if not isinstance(vector, Sequence) or len(vector) != dimensions:
                size = len(vector) * 4 if isinstance(vector, Sequence) else 0
                name = _hit(point)[0]
                raise SemanticIndexError(
                    messages.index_wrong_vector_length(name, size, dimensions * 4)
                )
        block = np.asarray([point.vector for point in points], dtype=np.float32)
        bad = schema.unusable_rows(block)
        if len(bad):
            name = _hit(points[int(bad[0])])[0]
            norm = schema.vector_norm(block[bad[0]])
            raise SemanticIndexError(
                messages.index_vector_not_finite(name)
                if not np.isfinite(norm)
                else messages.index_vector_not_unit(name, norm)
            )
        return block

    def _scroll(self, fields: list[str], collection: str | None = None) -> Iterator[dict[str, Any]]:
        name = collection or self.collection
        offset = None
        while True:
            with _calls(self.where, name):
                records, offset = self.client.scroll(
                    name,
                    limit=_SCROLL_PAGE,
                    offset=offset,
                    with_payload=fields,
                    with_vectors=False,
                )
            for record in records:
                yield dict(record.payload or {})
            if offset is None:
                return


def _better(
    score: float, section: SectionHit | None, best: float, best_section: SectionHit | None
) -> bool:
    """A higher score, or the same score in an earlier section (as the SQLite store's argmax)."""
    if score != best:
        return score > best
    ordinal = section.ordinal if section is not None else -1
    return ordinal < (best_section.ordinal if best_section is not None else -1)


def _hit(point: Any) -> tuple[str, float, SectionHit | None]:
    payload = point.payload or {}
    section = payload.get("section") or {}
    ordinal = int(section.get("ordinal", -1))
    hit = None
    if ordinal >= 0:
        lines = section.get("lines") or [0, 0]
        hit = SectionHit(
            tuple(str(part) for part in section.get("heading") or ()),
            int(lines[0]),
            int(lines[1]),
            ordinal,
            int(section.get("of", 1)),
        )
    return str(payload.get("name", point.id)), float(point.score), hit


def _as_list(vector: Any) -> list[float]:
    return [float(value) for value in vector]


def _models() -> Any:
    return _import_client().models


# --- settings, description, checks ------------------------------------------------------


def _settings(vault: VaultLike, config: SemanticsConfig) -> tuple[QdrantConfig, Path | None, str]:
    qdrant = config.qdrant
    if qdrant is None:
        raise SemanticIndexError(messages.qdrant_not_configured())
    if qdrant.url is not None:
        return qdrant, None, qdrant.url
    assert qdrant.path is not None
    folder = resolve_index_path(Path(vault.root), qdrant.path)
    return qdrant, folder, str(folder)


def collection_name(vault: VaultLike, config: SemanticsConfig) -> str:
    qdrant = config.qdrant
    if qdrant is not None and qdrant.collection is not None:
        return qdrant.collection
    vectors = _vectors_of(config.embedder)
    if vectors is None:
        raise SemanticIndexError(messages.qdrant_collection_needs_name())
    return default_collection(Path(vault.root).resolve().name, *vectors)


@functools.lru_cache(maxsize=16)
def _vectors_of(embedder: EmbedderConfig | None) -> tuple[str, str] | None:
    """The model and revision the vault's embedder makes, as `hql index build` records them.

    A local model's revision comes from its package; no model is loaded for it.
    """
    if embedder is None:
        return None
    if embedder.revision is not None:  # named in hql.toml (always, for an http embedder)
        return embedder.model, embedder.revision
    from hql.index.embedders import make_embedder

    made = make_embedder(embedder)
    return made.model_id, made.revision


def _describe(client: Any, collection: str, where: str) -> _Description:
    with _calls(where, collection):
        info = client.get_collection(collection)
    meta = (info.config.metadata or {}).get("hql")
    if not isinstance(meta, Mapping):
        raise SemanticIndexError(messages.qdrant_collection_foreign(collection))
    params = info.config.params.vectors
    size = getattr(params, "size", None)
    distance = str(getattr(getattr(params, "distance", None), "value", params))
    if distance != "Dot":
        raise SemanticIndexError(messages.qdrant_collection_not_cosine(collection, distance))
    dimensions = meta.get("dimensions")
    if not isinstance(dimensions, int) or not 0 < dimensions <= schema.MAX_DIMENSIONS:
        raise SemanticIndexError(messages.index_bad_dimensions(dimensions))
    if size != dimensions:
        raise SemanticIndexError(
            messages.qdrant_collection_dimensions(collection, int(size or 0), dimensions)
        )
    model = schema.ModelRow(
        str(meta.get("model", "")), str(meta.get("revision", "")), dimensions, "cosine", 1
    )
    return _Description(
        model,
        str(meta.get("vault", "")),
        str(meta.get("built_at", "")),
        str(meta.get("tool_version", "")),
        int(meta.get("generation", 0) or 0),
    )


def _to_meta(description: _Description) -> dict[str, Any]:
    return {
        "schema": 1,
        "model": description.model.id,
        "revision": description.model.revision,
        "dimensions": description.model.dimensions,
        "metric": "cosine",
        "vault": description.vault,
        "built_at": description.built_at,
        "tool_version": description.tool_version,
        "generation": description.generation,
    }


def _create(
    client: Any, collection: str, where: str, description: _Description, local: bool
) -> None:
    models = _models()
    params = models.VectorParams(size=description.model.dimensions, distance=models.Distance.DOT)
    with _calls(where, collection):
        client.create_collection(
            collection, vectors_config=params, metadata={"hql": _to_meta(description)}
        )
        if not local:  # a server filters and groups faster with these (local mode has no indexes)
            for field_name in ("name", "folder", "folder_tree", "tags", "tag_tree"):
                client.create_payload_index(
                    collection, field_name=field_name, field_schema=models.PayloadSchemaType.KEYWORD
                )


def _check_model(collection: str, built: schema.ModelRow, model: str, revision: str) -> None:
    if (built.id, built.revision) != (model, revision):
        raise SemanticIndexError(
            messages.qdrant_collection_other_model(
                collection, f"{built.id}@{built.revision}", f"{model}@{revision}"
            )
        )


def check_collection_vault(collection: str, built_for: str, vault_root: Path) -> None:
    try:
        check_vault(built_for, vault_root)
    except SemanticIndexError:
        raise SemanticIndexError(
            messages.qdrant_collection_other_vault(collection, built_for, str(vault_root))
        ) from None


@contextlib.contextmanager
def _calls(where: str, collection: str) -> Iterator[None]:
    """Qdrant's exceptions as HQL's refusals: unreachable (may fall back), missing, refused."""
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    try:
        yield
    except ResponseHandlingException as error:
        reason = str(getattr(error, "source", None) or error) or type(error).__name__
        raise StoreUnavailable(messages.qdrant_unreachable(where, reason)) from None
    except UnexpectedResponse as error:
        status = int(error.status_code or 0)
        if status in (401, 403):
            raise SemanticIndexError(messages.qdrant_refused_key(where, status)) from None
        if status == 404:
            raise SemanticIndexError(
                messages.qdrant_collection_missing(collection, where)
            ) from None
        reason = f"HTTP {status}: {_short(error.content)}"
        if status >= 500 or status == 429:
            raise StoreUnavailable(messages.qdrant_unreachable(where, reason)) from None
        raise SemanticIndexError(messages.qdrant_failed(where, reason)) from None
    except ValueError as error:  # local mode: "Collection x not found", bad arguments
        if "not found" in str(error):
            raise SemanticIndexError(
                messages.qdrant_collection_missing(collection, where)
            ) from None
        raise SemanticIndexError(messages.qdrant_failed(where, str(error))) from None
    except OSError as error:
        raise StoreUnavailable(messages.qdrant_unreachable(where, str(error))) from None


def _short(content: object) -> str:
    text = content.decode("utf-8", "replace") if isinstance(content, bytes) else str(content)
    try:
        status = json.loads(text).get("status", {})
        text = str(status.get("error", text)) if isinstance(status, dict) else text
    except (json.JSONDecodeError, AttributeError):
        pass
    return text[:200]
