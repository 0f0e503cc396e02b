"""Approximate search in process: an HNSW graph (hnswlib) kept beside the SQLite index.

`[semantics] ann = "hnsw"` (or `"auto"` once the index holds `ann_threshold`
vectors) makes `hql index build` keep `<index>.hnsw` (the graph, hnswlib's
own format) and `<index>.hnsw.json` (what the graph was built from: library
version, parameters, model, a checksum of the graph file, and for every card
its digest and the graph labels of its vectors). A build updates the graph in
place: labels of changed and removed cards are removed, new vectors added; it
is rebuilt whole when it cannot be trusted or when removals pile up, and the
build says so.

A search trusts the graph only when all of this still matches the index it
reads; otherwise it scans exactly, records why in the Retrieval, and warns.
Graph hits are candidates only: each candidate card is scored exactly (its
best section) from the index's own vectors, so a score never depends on the
graph, only which cards are found does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import stat
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hql import files, messages
from hql.index.config import HnswConfig, SemanticsConfig, default_ef_search
from hql.index.errors import SemanticIndexError
from hql.index.reader import SemanticIndex
from hql.index.stores import SearchFilter, SearchMethod, SearchResult
from hql.index.stores.sqlite import STORE, SqliteStore

if TYPE_CHECKING:
    import numpy as np

LIBRARY = "hnswlib"
FORMAT = 1
DIGEST_CHARS = 16  # of a card's sha256: enough to notice that it changed
REBUILD_WHEN_REMOVED = 0.25  # of the labels ever added: past this, a build starts the graph anew
_OVERFETCH = 2  # vectors asked per card wanted, doubled until k distinct cards are found
# An input of at most 1/_SUBSET_SHARE of the vectors is scanned (that costs little); a
# larger one is searched in the graph, which returns only the input's vectors.
_SUBSET_SHARE = 16
_MAX_META_BYTES = 1 << 30  # a sidecar of ~10^7 cards; a larger file is not one HQL wrote
_MAX_LABELS = 1 << 40
_CHECK_BATCH = 4096  # labels whose vectors a build compares with the index's at a time


class GraphUnusable(Exception):
    """Why a graph cannot answer for an index (a finished, user-facing reason)."""

    def __init__(self, reason: str, rebuild: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.rebuild = rebuild  # whether `hql index build` is the fix


def graph_paths(index_path: Path) -> tuple[Path, Path]:
    return index_path.with_name(index_path.name + ".hnsw"), index_path.with_name(
        index_path.name + ".hnsw.json"
    )


def library_version() -> str:
    """The installed hnswlib's version; `GraphUnusable` when the `ann` extra is missing."""
    try:
        import hnswlib  # noqa: F401
    except ImportError:
        raise GraphUnusable(messages.hnsw_library_missing(LIBRARY), rebuild=False) from None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(LIBRARY)
    except PackageNotFoundError:
        return "unknown"


def wants_graph(config: SemanticsConfig, vectors: int) -> bool:
    return config.ann == "hnsw" or (config.ann == "auto" and vectors >= config.ann_threshold)


# --- the graph and what it was built from ---------------------------------------------


@dataclass
class _Graph:
    """A loaded graph that matches one index revision."""

    index: Any  # hnswlib.Index
    meta: dict[str, Any]
    owners: np.ndarray  # label → card row of the index (-1: removed)
    vector_rows: np.ndarray  # label → row of the index's vectors (-1: removed)
    live: int
    lock: threading.Lock
    # The last input searched: (its rows, each label's admission, how many are admitted).
    admitted: list[tuple[np.ndarray, list[bool], int]] = dataclasses.field(default_factory=list)

    def admit(self, rows: np.ndarray) -> tuple[list[bool], int]:
        """Which labels belong to these card rows, as a list the graph's filter reads."""
        import numpy as np

        with self.lock:
            if self.admitted and self.admitted[0][0] is rows:
                return self.admitted[0][1], self.admitted[0][2]
        size = max(int(self.owners.max(initial=-1)), int(rows.max(initial=-1))) + 2
        wanted = np.zeros(size, dtype=bool)
        wanted[rows] = True
        flags = wanted[self.owners]  # a removed label's owner, -1, reads the last entry: False
        admitted = (flags.tolist(), int(flags.sum()))
        with self.lock:
            self.admitted[:] = [(rows, *admitted)]
        return admitted

    @property
    def parameters(self) -> dict[str, Any]:
        return {
            "ann": "hnsw",
            "library": f"{self.meta['library']} {self.meta['version']}",
            "m": self.meta["m"],
            "ef_construction": self.meta["ef_construction"],
        }


_GRAPHS: dict[tuple[Path, tuple[int, int, int, int]], tuple[tuple[Any, ...], _Graph]] = {}
_GRAPHS_LOCK = threading.Lock()


def _file_stamp(path: Path) -> tuple[int, int, int, int] | None:
    """Inode, mtime, size and change time (a file copied over in place with its mtime set
    back keeps the first three)."""
    try:
        status = path.stat()
    except OSError:
        return None
    return (status.st_ino, status.st_mtime_ns, status.st_size, status.st_ctime_ns)


@functools.lru_cache(maxsize=64)
def _paths_beside(index_path: Path) -> tuple[Path, Path, Path]:
    """The index's resolved path and its graph's two files (resolving costs a question time)."""
    return (index_path.resolve(), *graph_paths(index_path))


def open_graph(index: SemanticIndex, config: HnswConfig) -> _Graph:
    """The graph beside `index`, checked against it (cached per revision of both files)."""
    resolved, graph_path, meta_path = _paths_beside(index.path)
    stamps = (_file_stamp(graph_path), _file_stamp(meta_path), config.m, config.ef_construction)
    key = (resolved, index.stamp)
    with _GRAPHS_LOCK:
        cached = _GRAPHS.get(key)
        if cached is not None and cached[0] == stamps:
            return cached[1]
        graph = _load_graph(index, config, graph_path, meta_path)
        for older in [other for other in _GRAPHS if other[0] == key[0]]:
            del _GRAPHS[older]  # an earlier revision of this index: its graph is not asked again
        _GRAPHS[key] = (stamps, graph)
        return graph


def _load_graph(
    index: SemanticIndex, config: HnswConfig, graph_path: Path, meta_path: Path
) -> _Graph:
    version = library_version()
    meta = _read_meta(meta_path, graph_path)
    if meta.get("version") != version or meta.get("library") != LIBRARY:
        raise GraphUnusable(
            messages.hnsw_other_library(
                f"{meta.get('library')} {meta.get('version')}", f"{LIBRARY} {version}"
            )
        )
    if (meta.get("m"), meta.get("ef_construction")) != (config.m, config.ef_construction):
        raise GraphUnusable(
            messages.hnsw_other_parameters(
                meta.get("m"), meta.get("ef_construction"), config.m, config.ef_construction
            )
        )
    model = index.model_row
    if not _built_for(meta, model):
        raise GraphUnusable(messages.hnsw_stale())
    owners, vector_rows, live = _owners(index, meta)
    found = _restore(graph_path, meta, checksum=False)
    if found.get_current_count() != len(owners) or found.dim != model.dimensions:
        raise GraphUnusable(messages.hnsw_corrupt(str(graph_path), "its vector count is wrong"))
    return _Graph(found, meta, owners, vector_rows, live, threading.Lock())


def _read_meta(meta_path: Path, graph_path: Path) -> dict[str, Any]:
    if not meta_path.exists() and not graph_path.exists():
        raise GraphUnusable(messages.hnsw_missing())
    try:
        # Not blocking (a FIFO in its place is refused at once) and of a bounded size.
        meta = json.loads(files.read_regular(meta_path, _MAX_META_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise GraphUnusable(messages.hnsw_corrupt(str(meta_path), "it is missing")) from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise GraphUnusable(messages.hnsw_corrupt(str(meta_path), reason)) from None
    except RecursionError:
        raise GraphUnusable(messages.hnsw_corrupt(str(meta_path), "it nests too deeply")) from None
    except ValueError as error:  # not UTF-8, not JSON
        raise GraphUnusable(messages.hnsw_corrupt(str(meta_path), str(error)[:200])) from None
    required = ("format", "library", "version", "m", "ef_construction", "sha256", "bytes", "cards")
    if not isinstance(meta, dict) or any(key not in meta for key in required):
        raise GraphUnusable(messages.hnsw_corrupt(str(meta_path), "an entry is missing"))
    if meta["format"] != FORMAT:
        raise GraphUnusable(messages.hnsw_corrupt(str(meta_path), f"format {meta['format']!r}"))
    problem = _meta_problem(meta)
    if problem is not None:
        raise GraphUnusable(messages.hnsw_corrupt(str(meta_path), problem))
    return meta


def _meta_problem(meta: dict[str, Any]) -> str | None:
    """What in a sidecar is not as HQL writes it (counts, labels), or None.

    Every later use (the label map, a build's update) may then trust its types and
    ranges: labels are distinct counts below `next_label`, and the live ones number
    `next_label - removed`.
    """
    for key in ("m", "ef_construction", "bytes", "dimensions", "next_label", "removed", "mtime_ns"):
        value = meta.get(key, 0)
        if type(value) is not int or value < 0:
            return f"its `{key}` is not a count"
    if not all(isinstance(meta[key], str) for key in ("library", "version", "sha256")):
        return "its library, version or checksum is not a text"
    next_label, removed = meta.get("next_label", 0), meta.get("removed", 0)
    if next_label > _MAX_LABELS or removed > next_label:
        return "its label counts are out of range"
    cards = meta["cards"]
    if not isinstance(cards, dict):
        return "its cards are not a map"
    seen: set[int] = set()
    for name, entry in cards.items():
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and isinstance(entry[1], list)
        ):
            return f"the entry of `{name}` is not a digest and its labels"
        for label in entry[1]:
            if type(label) is not int or not 0 <= label < next_label or label in seen:
                return f"a label of `{name}` is out of range or repeated"
            seen.add(label)
    if len(seen) != next_label - removed:
        return "its labels do not add up to its counts"
    return None


def _checksum(path: Path) -> tuple[int, str]:
    with open(path, "rb") as handle:
        return os.fstat(handle.fileno()).st_size, hashlib.file_digest(handle, "sha256").hexdigest()


def _restore(graph_path: Path, meta: dict[str, Any], checksum: bool = True) -> Any:
    """The graph file, only when it is the one the metadata describes.

    A search checks its size and modification time (reading a big graph whole to
    hash it would cost more than the scan it saves); a build checks its sha256.
    """
    import hnswlib

    try:
        status = graph_path.stat()
        if not stat.S_ISREG(status.st_mode):
            raise GraphUnusable(messages.hnsw_corrupt(str(graph_path), "not a regular file"))
        if (status.st_size, status.st_mtime_ns) != (meta["bytes"], meta.get("mtime_ns")):
            raise GraphUnusable(
                messages.hnsw_corrupt(str(graph_path), "it changed after it was written")
            )
        if checksum and _checksum(graph_path)[1] != meta["sha256"]:
            raise GraphUnusable(messages.hnsw_corrupt(str(graph_path), "its checksum differs"))
    except OSError as error:
        reason = error.strerror or str(error)
        raise GraphUnusable(messages.hnsw_corrupt(str(graph_path), reason)) from None
    found = hnswlib.Index(space="ip", dim=int(meta.get("dimensions") or 0))
    try:
        found.load_index(str(graph_path))
    except (RuntimeError, ValueError, OSError, MemoryError) as error:
        raise GraphUnusable(messages.hnsw_corrupt(str(graph_path), str(error))) from None
    return found


def _owners(index: SemanticIndex, meta: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, int]:
    """Label → card row and label → vector row of the index, when the graph holds exactly
    the index's cards and vectors (the sidecar's types are checked by `_read_meta`)."""
    import numpy as np

    cards = meta["cards"]
    names = index.card_names
    digests = index.digests()
    starts, counts = index.vector_spans()
    if len(cards) != len(names):
        raise GraphUnusable(messages.hnsw_stale())
    labels: list[int] = []
    rows: list[int] = []
    positions: list[int] = []
    for row, name in enumerate(names):
        entry = cards.get(name)
        if (
            entry is None
            or entry[0] != digests[name][:DIGEST_CHARS]
            or len(entry[1]) != counts[row]
        ):
            raise GraphUnusable(messages.hnsw_stale())
        labels.extend(entry[1])
        rows.extend([row] * len(entry[1]))
        positions.extend(range(int(starts[row]), int(starts[row]) + len(entry[1])))
    owners = np.full(int(meta.get("next_label", 0)), -1, dtype=np.intp)
    owners[np.asarray(labels, dtype=np.intp)] = rows
    vector_rows = np.full(len(owners), -1, dtype=np.intp)
    vector_rows[np.asarray(labels, dtype=np.intp)] = positions
    return owners, vector_rows, len(labels)


def _labels_hold(
    graph: Any, labels: np.ndarray, vector_rows: np.ndarray, index: SemanticIndex
) -> bool:
    """Whether the graph's vectors under these live labels are the index's vectors they name.

    Labels swapped in the sidecar pass every count; the vectors show it.
    """
    import numpy as np

    if not len(labels):
        return True
    try:
        held = np.asarray(graph.get_items(labels.tolist(), return_type="numpy"), dtype=np.float32)
    except (RuntimeError, ValueError):
        return False
    expected = index.vectors[vector_rows[labels]]
    return held.shape == expected.shape and bool(np.array_equal(held, expected))


# --- searching ---------------------------------------------------------------------------


class HnswStore(SqliteStore):
    """The SQLite store, searched through an HNSW graph when there is a trustworthy one."""

    def __init__(self, path: Path, vault_root: Path, config: SemanticsConfig) -> None:
        super().__init__(path, vault_root)
        self.config = config

    @classmethod
    def for_vault(cls, vault: Any, config: SemanticsConfig) -> HnswStore:
        from hql.index.stores.sqlite import index_path

        return cls(index_path(vault, config), Path(vault.root), config)

    def scans(self) -> bool:
        return not wants_graph(self.config, len(self.index.vectors))

    def search(
        self,
        vector: np.ndarray,
        k: int | None,
        filter: SearchFilter | None = None,
        exact: bool = False,
    ) -> SearchResult:
        if not wants_graph(self.config, len(self.index.vectors)):
            return super().search(vector, k, filter, exact)
        cards = filter.cards if filter is not None else None
        configured = {"ann": "hnsw"}
        if exact:
            return self._exact(vector, k, filter, SearchMethod(STORE, False, configured, True))
        reason: str | None = None
        warnings: list[str] = []
        if k is None:
            reason = messages.hnsw_exact_every_card()
        elif cards is not None and self._scanned_subset(cards):
            reason = messages.hnsw_exact_subset()
        else:
            rows = self.index.input_rows(cards) if cards is not None else None
            try:
                graph = open_graph(self.index, self.config.hnsw)
                found = self._approximate(graph, vector, k, cards, rows)
                if found is not None:
                    return found
                reason = messages.hnsw_exact_unreached()
            except GraphUnusable as problem:
                reason = problem.reason
                warnings.append(messages.hnsw_searched_exactly(problem.reason, problem.rebuild))
        result = self._exact(
            vector, k, filter, SearchMethod(STORE, False, configured, False, reason)
        )
        return SearchResult(result.hits, result.sections, result.warnings + warnings, result.method)

    def _exact(
        self,
        vector: np.ndarray,
        k: int | None,
        filter: SearchFilter | None,
        method: SearchMethod,
    ) -> SearchResult:
        cards = filter.cards if filter is not None else None
        hits, warnings, sections = self.index.rank_sections(vector, cards, k)
        return SearchResult(hits, sections, warnings, method)

    def _scanned_subset(self, cards: Sequence[Any]) -> bool:
        """Is the input a subset of the cards small enough to scan rather than search?"""
        rows = self.index.input_rows(cards)
        if rows is None:
            return False
        _, counts = self.index.vector_spans()
        return int(counts[rows].sum()) * _SUBSET_SHARE <= len(self.index.vectors)

    def _approximate(
        self,
        graph: _Graph,
        vector: np.ndarray,
        k: int,
        cards: Sequence[Any] | None,
        rows: np.ndarray | None = None,
    ) -> SearchResult | None:
        """The graph's best `k` cards (of the input `rows`, when it is a subset).

        None: the graph could not reach enough of the input's vectors (they are scanned).
        """
        import numpy as np

        ef_search = self.config.hnsw.ef_search or default_ef_search(graph.live)
        parameters = dict(graph.parameters)
        admitted, available = None, graph.live
        if rows is not None:
            flags, available = graph.admit(rows)
            admitted = flags.__getitem__
            parameters["filter"] = "the input's cards"
        asked = min(max(k * _OVERFETCH, 1), available)
        if asked == 0:
            method = SearchMethod(STORE, True, {**parameters, "ef_search": ef_search})
            warnings = self.index.input_warnings(cards) if cards is not None else []
            return SearchResult([], [], warnings, method)
        while True:
            try:
                with graph.lock:
                    graph.index.set_ef(max(ef_search, asked))
                    keys, _ = graph.index.knn_query(vector, k=asked, num_threads=1, filter=admitted)
            except RuntimeError as error:
                if admitted is not None:  # the input's vectors lie beyond the search's reach
                    return None
                # Fewer candidates than asked without a filter: a damaged graph.
                reason = messages.hnsw_corrupt(str(self.path) + ".hnsw", str(error))
                raise GraphUnusable(reason) from None
            labels = np.asarray(keys[0], dtype=np.int64)
            labels = labels[(labels >= 0) & (labels < len(graph.owners))]
            if not _labels_hold(graph.index, labels, graph.vector_rows, self.index):
                reason = messages.hnsw_corrupt(
                    str(self.path) + ".hnsw", messages.hnsw_labels_wrong()
                )
                raise GraphUnusable(reason)
            found = np.unique(graph.owners[labels])
            found = found[found >= 0]
            if len(found) >= k or asked >= available:
                break
            asked = min(asked * 2, available)
        hits, sections = self.index.rank_rows(vector, found, k)
        warnings = self.index.input_warnings(cards) if cards is not None else []
        parameters["ef_search"] = max(ef_search, asked)
        return SearchResult(hits, sections, warnings, SearchMethod(STORE, True, parameters))


def describe_graph(index_path: Path, vault_root: Path, config: SemanticsConfig) -> str:
    """The graph's state for `hql index inspect`: in use (and its parameters), or why not."""
    import numpy as np

    index = SemanticIndex.open(index_path, vault_root)
    vectors = len(index.vectors)
    if not wants_graph(config, vectors):
        return messages.hnsw_status_off(config.ann, config.ann_threshold, vectors)
    try:
        graph = open_graph(index, config.hnsw)
        live = np.flatnonzero(graph.vector_rows >= 0)
        _check_labels(graph.index, live, graph.vector_rows, index, graph_paths(index_path)[0])
    except GraphUnusable as problem:
        return messages.hnsw_status_unusable(problem.reason)
    parameters = graph.parameters
    return messages.hnsw_status_ok(
        graph.live, parameters["library"], parameters["m"], parameters["ef_construction"]
    )


# --- building --------------------------------------------------------------------------------


def refresh_graph(index_path: Path, vault_root: Path, config: SemanticsConfig) -> list[str]:
    """Bring the graph beside a freshly built index up to date; the lines a build reports.

    Nothing happens when the vault's settings want no graph for an index this size.
    """
    index = SemanticIndex.open(index_path, vault_root)
    if not wants_graph(config, len(index.vectors)):
        return []
    version = library_version()  # GraphUnusable: the caller reports it
    graph_path, meta_path = graph_paths(index_path)
    with files.locked(index_path.parent):
        try:
            graph, meta = _previous(index, config.hnsw, graph_path, meta_path)
            live = int(meta.get("next_label", 0)) - int(meta.get("removed", 0))
            added, removed = _update(index, graph, meta)
            note = messages.hnsw_updated(added, removed, live + added - removed)
        except _Rebuild as why:
            graph, meta = _build(index, config.hnsw, version)
            note = messages.hnsw_rebuilt(len(index.vectors), why.reason)
        _write(graph, meta, graph_path, meta_path)
    return [note]


class _Rebuild(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _previous(
    index: SemanticIndex, config: HnswConfig, graph_path: Path, meta_path: Path
) -> tuple[Any, dict[str, Any]]:
    """The graph on disk, loaded to be changed; `_Rebuild` when it cannot be kept."""
    try:
        meta = _read_meta(meta_path, graph_path)
        if (meta["library"], meta["version"]) != (LIBRARY, library_version()):
            raise _Rebuild(
                messages.hnsw_other_library(f"{meta['library']} {meta['version']}", LIBRARY)
            )
        if (meta["m"], meta["ef_construction"]) != (config.m, config.ef_construction):
            raise _Rebuild(
                messages.hnsw_other_parameters(
                    meta["m"], meta["ef_construction"], config.m, config.ef_construction
                )
            )
        if not _built_for(meta, index.model_row):
            raise _Rebuild(messages.hnsw_other_model())
        graph = _restore(graph_path, meta)
        _check_kept_labels(index, graph, meta, graph_path)
    except GraphUnusable as problem:
        raise _Rebuild(problem.reason) from None
    return graph, meta


def _check_kept_labels(index: SemanticIndex, graph: Any, meta: dict[str, Any], path: Path) -> None:
    """Every unchanged card's labels hold its vectors in the graph (a batch at a time)."""
    import numpy as np

    digests = index.digests()
    starts, counts = index.vector_spans()
    row_of = {name: row for row, name in enumerate(index.card_names)}
    labels: list[int] = []
    positions: list[int] = []
    for name, (digest, own) in meta["cards"].items():
        row = row_of.get(name)
        if row is None or digest != digests[name][:DIGEST_CHARS] or len(own) != counts[row]:
            continue  # removed or changed: its labels go anyway
        labels.extend(own)
        positions.extend(range(int(starts[row]), int(starts[row]) + len(own)))
    vector_rows = np.full(int(meta.get("next_label", 0)), -1, dtype=np.intp)
    vector_rows[np.asarray(labels, dtype=np.intp)] = positions
    _check_labels(graph, np.asarray(labels, dtype=np.intp), vector_rows, index, path)


def _check_labels(
    graph: Any, labels: np.ndarray, vector_rows: np.ndarray, index: SemanticIndex, path: Path
) -> None:
    """`GraphUnusable` unless every one of `labels` holds its vector (a batch at a time)."""
    for begin in range(0, len(labels), _CHECK_BATCH):
        if not _labels_hold(graph, labels[begin : begin + _CHECK_BATCH], vector_rows, index):
            raise GraphUnusable(messages.hnsw_corrupt(str(path), messages.hnsw_labels_wrong()))


def _update(index: SemanticIndex, graph: Any, meta: dict[str, Any]) -> tuple[int, int]:
    """Remove the labels of changed and removed cards, add the new vectors; counts of both."""
    import numpy as np

    kept: dict[str, Any] = meta["cards"]
    digests = index.digests()
    starts, counts = index.vector_spans()
    row_of = {name: row for row, name in enumerate(index.card_names)}
    gone: list[int] = []
    for name, entry in list(kept.items()):
        row = row_of.get(name)
        same = (
            row is not None
            and entry[0] == digests[name][:DIGEST_CHARS]
            and len(entry[1]) == counts[row]
        )
        if not same:
            gone.extend(entry[1])
            del kept[name]
    removed_ever = int(meta.get("removed", 0)) + len(gone)
    if removed_ever > REBUILD_WHEN_REMOVED * max(int(meta.get("next_label", 0)), 1):
        raise _Rebuild(messages.hnsw_too_many_removed(removed_ever))
    fresh = [name for name in index.card_names if name not in kept]
    next_label = int(meta.get("next_label", 0))
    new_rows: list[int] = []
    new_labels: list[int] = []
    for name in fresh:
        row = row_of[name]
        labels = list(range(next_label, next_label + int(counts[row])))
        next_label += len(labels)
        kept[name] = [digests[name][:DIGEST_CHARS], labels]
        new_rows.extend(range(int(starts[row]), int(starts[row] + counts[row])))
        new_labels.extend(labels)
    for label in gone:
        graph.mark_deleted(label)
    if new_rows:
        if graph.get_max_elements() < next_label:
            graph.resize_index(next_label)
        vectors = index.vectors[np.asarray(new_rows, dtype=np.intp)]
        graph.add_items(vectors, np.asarray(new_labels, dtype=np.int64), num_threads=_threads())
    meta.update(next_label=next_label, removed=removed_ever)
    return len(new_labels), len(gone)


def _threads() -> int:
    return os.cpu_count() or 1


def _build(index: SemanticIndex, config: HnswConfig, version: str) -> tuple[Any, dict[str, Any]]:
    import hnswlib
    import numpy as np

    model = index.model_row
    vectors = index.vectors
    graph = hnswlib.Index(space="ip", dim=model.dimensions)
    graph.init_index(
        max_elements=max(len(vectors), 1),
        M=config.m,
        ef_construction=config.ef_construction,
        random_seed=100,
    )
    if len(vectors):
        graph.add_items(vectors, np.arange(len(vectors), dtype=np.int64), num_threads=_threads())
    starts, counts = index.vector_spans()
    digests = index.digests()
    cards = {
        name: [
            digests[name][:DIGEST_CHARS],
            list(range(int(starts[row]), int(starts[row] + counts[row]))),
        ]
        for row, name in enumerate(index.card_names)
    }
    meta = {
        "format": FORMAT,
        "library": LIBRARY,
        "version": version,
        "m": config.m,
        "ef_construction": config.ef_construction,
        "model": model.id,
        "revision": model.revision,
        "dimensions": model.dimensions,
        "next_label": len(vectors),
        "removed": 0,
        "cards": cards,
    }
    return graph, meta


def _write(graph: Any, meta: dict[str, Any], graph_path: Path, meta_path: Path) -> None:
    """The graph, then the metadata naming its checksum, each by an atomic rename."""
    try:
        temporary = files.temporary_beside(graph_path)
        try:
            graph.save_index(str(temporary))
            size, digest = _checksum(temporary)
            files.finish_replace(temporary, graph_path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        written = graph_path.stat().st_mtime_ns
        meta = {**meta, "bytes": size, "sha256": digest, "mtime_ns": written}
        temporary = files.temporary_beside(meta_path)
        try:
            temporary.write_text(json.dumps(meta, separators=(",", ":")), encoding="utf-8")
            files.finish_replace(temporary, meta_path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    except (OSError, RuntimeError) as error:
        raise SemanticIndexError(messages.index_unwritable(str(graph_path), str(error))) from None
    with _GRAPHS_LOCK:
        _GRAPHS.clear()


def _built_for(meta: Mapping[str, Any], model: Any) -> bool:
    """Whether a graph's sidecar names the index's model, revision and width."""
    return (meta.get("model"), meta.get("revision"), meta.get("dimensions")) == (
        model.id,
        model.revision,
        model.dimensions,
    )
