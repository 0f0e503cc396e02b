"""Reading a schema v1 index and ranking cards against a question (reference §12.3).

The vectors of one index revision (file identity, mtime, size, change time) are
read once into a float32 matrix and kept in a process-wide cache, so a question
costs one matrix-vector product and a top-k, not a database read.

A score is `exact_scores`' dot product (summed in float64, rounded once to
float32), whichever rows it was computed with: the float32 scan only picks the
candidates. So every store and search path (the scan, an HNSW graph's
candidates, a Qdrant collection) reports the same score, to the last bit, for
the same card and question, and orders near-ties alike.

When the index has sections, a card scores as its best section, and each hit
says which section that was (heading path and line span). An index without
them (the reference's layout) scores each card's own vector.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

from hql import messages
from hql.index import pins, schema
from hql.index.config import load_semantics_config, resolve_index_path
from hql.index.errors import SemanticIndexError

if TYPE_CHECKING:
    import numpy as np


class CardLike(Protocol):
    """What ranking needs from a card: its name and the digest of its text."""

    @property
    def name(self) -> str: ...

    @property
    def digest(self) -> str: ...


@dataclass(frozen=True, slots=True)
class SectionHit:
    """The section a card scored by: its heading path and line span in the card's file."""

    heading: tuple[str, ...]
    line_start: int
    line_end: int
    ordinal: int
    sections: int  # how many sections the card has

    def to_json(self) -> dict[str, Any]:
        return {
            "heading": list(self.heading),
            "lines": [self.line_start, self.line_end],
            "ordinal": self.ordinal,
            "of": self.sections,
        }


@dataclass(frozen=True)
class _Sections:
    """Every section's vector, grouped by card row (rows in card-name order)."""

    matrix: np.ndarray
    starts: np.ndarray  # first section of each card row
    counts: np.ndarray
    info: tuple[
        tuple[tuple[str, ...], int, int, int], ...
    ]  # heading, first line, last line, ordinal
    # Every card has exactly one vector: a card's score is its one section's, no maximum taken.
    one_each: bool = False


@dataclass(frozen=True)
class _Loaded:
    """One revision of an index file, in memory. Rows are in card-name order."""

    stamp: Stamp
    model: schema.ModelRow
    meta: schema.MetaRow
    names: tuple[str, ...]
    row_of: dict[str, int]
    hashes: tuple[str, ...]
    matrix: np.ndarray
    sections: _Sections | None = None
    # Stored questions looked up so far (None: not stored); the table may hold millions.
    queries: dict[str, np.ndarray | None] = field(default_factory=dict, compare=False)
    # The last card collection ranked against this revision, shared by every opener.
    last_alignment: list[_Alignment] = field(default_factory=list, compare=False)
    # Vault roots `check_vault` accepted this revision for (its recorded vault cannot change).
    vaults_checked: set[Path] = field(default_factory=set, compare=False)
    # The file carries pins (`hql.index.pins`): every stored question is checked against its own.
    pinned: bool = False


@dataclass(slots=True)
class _Alignment:
    """Which index rows the ranked cards use.

    Cards are immutable once loaded, so the same card objects in the same
    order always align the same way: `cards` (kept alive so that their ids
    cannot be reused) and `ids` identify the collection.
    """

    source: object  # the very collection last passed: the fast check
    cards: tuple[object, ...]
    ids: tuple[int, ...]
    rows: np.ndarray | None  # None: every row, in order
    stale: list[str] = field(default_factory=list)
    absent: int = 0
    # Each row's card among `cards` (None: no card holds it), made when first asked for.
    by_row: list[Any] | None = None


_CACHE: dict[Path, _Loaded] = {}
# An index path as given -> (its file's device and stamp when last resolved, the resolved
# path): while that file is unchanged, opening it is one stat, not a resolve of every part.
_RESOLVED: dict[Path, tuple[tuple[int, int, int, int, int], Path]] = {}
_QUERY_MEMO = 4096  # stored questions remembered per index revision
_CACHE_LOCK = threading.Lock()


# An index file's revision: inode, mtime, size and change time (a file written over in
# place with its mtime set back, as `cp -p` does, keeps the first three).
Stamp = tuple[int, int, int, int]


def _stamp_of(status: os.stat_result) -> Stamp:
    return (status.st_ino, status.st_mtime_ns, status.st_size, status.st_ctime_ns)


def _stamp(path: Path) -> Stamp:
    return _stamp_of(path.stat())


def _stamp_or_none(path: Path) -> Stamp | None:
    try:
        return _stamp(path)
    except OSError:
        return None


class SemanticIndex:
    """A checked, in-memory view of one index file for one vault."""

    def __init__(self, path: Path, loaded: _Loaded) -> None:
        self.path = path
        self._loaded = loaded

    @classmethod
    def open(cls, path: Path | str, vault_root: Path | str) -> SemanticIndex:
        """Open (or reuse from the cache) the index at `path` and check it belongs to the vault."""
        path = Path(path)
        loaded = _load_cached(path)
        root = Path(vault_root)
        if root not in loaded.vaults_checked:
            check_vault(loaded.meta.vault, root)
            loaded.vaults_checked.add(root)
        return cls(path, loaded)

    def unchanged(self) -> bool:
        """Whether the index file is still the revision these vectors were read from."""
        return _unchanged(self.path) is self._loaded

    @property
    def model(self) -> str:
        return self._loaded.model.id

    @property
    def revision(self) -> str:
        return self._loaded.model.revision

    @property
    def metric(self) -> str:
        return self._loaded.model.metric

    @property
    def dimensions(self) -> int:
        return self._loaded.model.dimensions

    @property
    def card_names(self) -> tuple[str, ...]:
        return self._loaded.names

    def query_vector(self, text: str) -> np.ndarray | None:
        known = self._loaded.queries
        if text not in known:
            vector = _read_query(self.path, text, self.dimensions, self._loaded.pinned)
            if _stamp_or_none(self.path) != self._loaded.stamp:
                return vector  # the file changed meanwhile: not kept for this revision
            if len(known) >= _QUERY_MEMO:
                known.clear()
            known[text] = vector
        return known[text]

    def card_vector(self, name: str, digest: str) -> np.ndarray | None:
        """The card's whole-note vector while the index holds it for this very text, else None."""
        row = self._loaded.row_of.get(name)
        if row is None or self._loaded.hashes[row] != digest:
            return None
        return self._loaded.matrix[row]

    @property
    def model_row(self) -> schema.ModelRow:
        return self._loaded.model

    def digests(self) -> dict[str, str]:
        """Each indexed card's text digest."""
        return dict(zip(self._loaded.names, self._loaded.hashes, strict=True))

    @property
    def has_sections(self) -> bool:
        return self._loaded.sections is not None

    def search(self, vector: np.ndarray, k: int | None = None) -> list[tuple[str, float]]:
        """Every indexed card (or the best `k`) against a unit vector, best first."""
        rows, ordered = self._candidates(vector, None, k)
        return self.rank_rows(vector, rows, k, ordered)[0]

    def rank(
        self, vector: np.ndarray, cards: Sequence[CardLike], k: int | None = None
    ) -> tuple[list[tuple[str, float]], list[str]]:
        """Rank `cards` (the step's input) by the dot product; warnings for stale and absent cards."""
        hits, warnings, _ = self.rank_sections(vector, cards, k)
        return hits, warnings

    def rank_sections(
        self, vector: np.ndarray, cards: Sequence[CardLike] | None, k: int | None = None
    ) -> tuple[list[tuple[str, float]], list[str], list[SectionHit | None]]:
        """`rank`, and for each hit the section it scored by (None without sections).

        `cards` None ranks every indexed card, with no staleness check.
        """
        alignment = self._align(cards) if cards is not None else None
        rows = alignment.rows if alignment is not None else None
        warnings = _warnings(alignment) if alignment is not None else []
        if rows is None and k is not None and self._loaded.sections is None:
            best = self._best_of_all(vector, k)
            if best is not None:
                names = self._loaded.names
                hits = [(names[row], score) for row, score in zip(*best, strict=True)]
                return hits, warnings, [None] * len(hits)
        picked, ordered = self._candidates(vector, rows, k)
        hits, sections = self.rank_rows(vector, picked, k, ordered)
        return hits, warnings, sections

    def best_cards(
        self, vector: np.ndarray, cards: Sequence[CardLike], k: int
    ) -> tuple[list[Any], list[float], list[str]] | None:
        """`rank_sections(vector, cards, k)` for the usual question, as the cards themselves:
        the best few of `cards` when they hold every indexed card and the index has no
        sections. The hit cards (each the last of `cards` with its name), their scores and
        the warnings. None: another shape, which
        `rank_sections` ranks.
        """
        if self._loaded.sections is not None:
            return None
        alignment = self._align(cards)
        if alignment.rows is not None:
            return None
        best = self._best_of_all(vector, k)
        if best is None:
            return None
        rows, scores = best
        by_row = alignment.by_row
        if by_row is None:
            by_row = alignment.by_row = _cards_by_row(self._loaded, alignment.cards)
        return list(map(by_row.__getitem__, rows)), scores, _warnings(alignment)

    def _best_of_all(self, vector: np.ndarray, k: int) -> tuple[list[int], list[float]] | None:
        """`rank_rows(vector, *_candidates(vector, None, k), k)` in one pass for the usual
        question (the best few of every card of an index without sections): the same
        candidates, scores and order, through fewer array calls and no arrays between
        stages; the hits' rows and scores. None (before any work): `k` not between 0 and
        the card count, which the general path ranks.
        """
        loaded = self._loaded
        count = len(loaded.names)
        if not 0 < k < count:
            return None
        # `_candidates`: every card within the float32 slack of the k-th best scan score.
        positions = _within_slack(loaded.matrix @ vector, k, loaded.model.dimensions)
        # `rank_rows` and `_hits`: the candidates' exact scores, best first, ties in row
        # (= name) order, since the positions ascend.
        exact = exact_scores(loaded.matrix[positions], vector)
        few = _top_few(exact, k)
        if few is None:  # many candidates (near ties), or a NaN: numpy orders them
            top = _top_positions(exact, k)
            return positions[top].tolist(), exact[top].tolist()
        order, values = few
        rows = positions.tolist()
        return list(map(rows.__getitem__, order)), list(map(values.__getitem__, order))

    def _candidates(
        self, vector: np.ndarray, rows: np.ndarray | None, k: int | None
    ) -> tuple[np.ndarray | None, bool]:
        """The card rows (of `rows`; None: all) that can be among the best `k` (None: all),
        and whether they are known sorted and distinct (picked from a scan of every row).

        The float32 scan's scores can differ from `exact_scores` in their last bits,
        by less than `float32_slack`: every card within that of the k-th is kept.
        A few rows (a filtered input) are all candidates: scoring them alone costs
        less than scanning every vector.
        """
        count = len(self._loaded.names) if rows is None else len(rows)
        if k is None or k >= count or count <= len(self._loaded.names) // _SUBSET_SHARE:
            return rows, False
        if k <= 0:
            import numpy as np

            return np.zeros(0, dtype=np.intp), True
        scores, _ = self._card_scores(vector)
        if rows is not None:
            scores = scores[rows]
        positions = _within_slack(scores, k, self.dimensions)
        # The positions ascend; `rows` may repeat a row (a card given twice).
        return (positions, True) if rows is None else (rows[positions], False)

    @property
    def vectors(self) -> np.ndarray:
        """Every vector a card scores by (its sections', or its own), grouped by card row."""
        sections = self._loaded.sections
        return self._loaded.matrix if sections is None else sections.matrix

    def vector_spans(self) -> tuple[np.ndarray, np.ndarray]:
        """Each card row's first vector in `vectors` and how many it has."""
        import numpy as np

        sections = self._loaded.sections
        if sections is None:
            rows = np.arange(len(self._loaded.names), dtype=np.intp)
            return rows, np.ones(len(rows), dtype=np.intp)
        return sections.starts, sections.counts

    def input_warnings(self, cards: Sequence[CardLike]) -> list[str]:
        """Which of `cards` score stale (changed since the build) and how many are absent."""
        return _warnings(self._align(cards))

    @property
    def stamp(self) -> Stamp:
        """The file revision these vectors were read from."""
        return self._loaded.stamp

    def input_rows(self, cards: Sequence[CardLike]) -> np.ndarray | None:
        """The card rows `cards` use, sorted (None: every row)."""
        return self._align(cards).rows

    def covers_every_card(self, cards: Sequence[CardLike]) -> bool:
        """Whether `cards` include every indexed card (then no row needs filtering out)."""
        return self._align(cards).rows is None

    def rank_rows(
        self, vector: np.ndarray, rows: np.ndarray | None, k: int | None, ordered: bool = False
    ) -> tuple[list[tuple[str, float]], list[SectionHit | None]]:
        """The best `k` of these card rows (None: every row), scored by `exact_scores`
        (best section), with their sections; `ordered`: the rows are sorted and distinct."""
        if rows is not None and not ordered:
            import numpy as np

            rows = np.unique(np.asarray(rows, dtype=np.intp))  # sorted: ties fall to name order
        if self._one_vector_each:  # a card's score is its one vector's: no maximum to take
            part = exact_scores(self.vectors if rows is None else self.vectors[rows], vector)
            scores, offsets = part, None
        else:
            import numpy as np

            starts, counts = self.vector_spans()
            if rows is None:
                part = exact_scores(self.vectors, vector)
                offsets = starts
            else:
                picked_counts = counts[rows]
                offsets = np.cumsum(picked_counts) - picked_counts
                picked = np.repeat(starts[rows] - offsets, picked_counts) + np.arange(
                    int(picked_counts.sum())
                )
                part = exact_scores(self.vectors[picked], vector)
            scores = np.maximum.reduceat(part, offsets) if len(offsets) else part[:0]
        hits = self._hits(scores, rows, k)
        if self._loaded.sections is None:
            return hits, [None] * len(hits)
        if rows is None:
            return hits, self._best_sections(hits, part)
        import numpy as np

        # Where each hit's sections start in `part`: its place among the sorted rows.
        places = np.searchsorted(rows, [self._loaded.row_of[name] for name, _ in hits])
        firsts = places if offsets is None else offsets[places]
        return hits, self._best_sections(hits, part, firsts.tolist())

    @property
    def _one_vector_each(self) -> bool:
        sections = self._loaded.sections
        return sections is None or sections.one_each

    def _card_scores(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Each card's score (its best section's, when there are sections) and the section scores."""
        sections = self._loaded.sections
        if sections is None:
            return self._loaded.matrix @ vector, None
        section_scores = sections.matrix @ vector
        if sections.one_each:
            return section_scores, section_scores
        import numpy as np

        return np.maximum.reduceat(section_scores, sections.starts), section_scores

    def _best_sections(
        self,
        hits: list[tuple[str, float]],
        section_scores: np.ndarray | None,
        firsts: list[int] | None = None,
    ) -> list[SectionHit | None]:
        """Each hit's best section; `firsts`: where each hit's sections start in
        `section_scores` (default: scores of every section, in index order)."""
        sections = self._loaded.sections
        if sections is None or section_scores is None:
            return [None] * len(hits)
        found: list[SectionHit | None] = []
        for position, (name, _) in enumerate(hits):
            row = self._loaded.row_of[name]
            start, count = int(sections.starts[row]), int(sections.counts[row])
            begin = start if firsts is None else firsts[position]
            best = start + int(section_scores[begin : begin + count].argmax())
            heading, first, last, ordinal = sections.info[best]
            found.append(SectionHit(heading, first, last, ordinal, count) if ordinal >= 0 else None)
        return found

    def add_query(self, text: str, vector: np.ndarray) -> str | None:
        """Keep a query vector embedded at run time; returns a warning when it cannot be kept."""
        blob = schema.vector_to_blob(vector)
        with _CACHE_LOCK:
            # Only a file nobody else touched since it was read may keep its matrix.
            untouched = _stamp_or_none(self.path) == self._loaded.stamp
            try:
                connection = sqlite3.connect(self.path)
                try:
                    with connection:
                        connection.execute(
                            "INSERT OR REPLACE INTO query (text, embedding) VALUES (?, ?)",
                            (text, blob),
                        )
                        pins.pin_query(connection, text, blob)
                finally:
                    connection.close()
            except sqlite3.Error as error:
                return messages.index_query_not_stored(text, str(error))
            self._loaded = self._after_query_write(untouched, text, vector)
        return None

    def _after_query_write(self, untouched: bool, text: str, vector: np.ndarray) -> _Loaded:
        """Our own write need not invalidate the matrix, unless someone else changed the file too."""
        key = self.path.resolve()
        if not untouched:
            _CACHE.pop(key, None)
            return self._loaded
        queries = {**self._loaded.queries, text: vector}
        status = key.stat()
        stamp = _stamp_of(status)
        updated = dataclasses.replace(self._loaded, stamp=stamp, queries=queries)
        _CACHE[key] = updated
        # The path now reaches this revision: a later `unchanged` (and the store holding this
        # index, with what it worked out, such as hub priors) outlives our own write.
        _RESOLVED[self.path] = ((status.st_dev, *stamp), key)
        return updated

    def _align(self, cards: Sequence[CardLike]) -> _Alignment:
        memo = self._loaded.last_alignment
        if memo and memo[0].source is cards:
            return memo[0]
        ids = tuple(map(id, cards))
        if memo and memo[0].ids == ids:
            memo[0].source = cards
            return memo[0]
        alignment = _align(self._loaded, cards, ids)
        memo[:] = [alignment]
        return alignment

    def _hits(
        self, scores: np.ndarray, rows: np.ndarray | None, k: int | None
    ) -> list[tuple[str, float]]:
        names = self._loaded.names
        few = _top_few(scores, k)
        if few is not None:  # a scan's few candidates
            order, values = few
            picked_rows = order if rows is None else list(map(rows.tolist().__getitem__, order))
            return list(
                zip(
                    map(names.__getitem__, picked_rows), map(values.__getitem__, order), strict=True
                )
            )
        positions = _top_positions(scores, k)
        picked = positions if rows is None else rows[positions]
        values = scores[positions].tolist()
        return [(names[row], value) for row, value in zip(picked.tolist(), values, strict=True)]


# Values converted to float64 at a time (2 MB): a block that stays in cache while it is
# multiplied costs a fifth of one that does not (bench: 100,000 x 384 in 79 ms, not 372).
_EXACT_BLOCK_VALUES = 262_144
# An input of at most 1/_SUBSET_SHARE of the cards is scored alone, not picked from a scan.
_SUBSET_SHARE = 16
# At most this many scores are ordered in Python (numpy's calls cost more for a few).
_FEW_HITS = 64


def exact_scores(rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Each row's dot product with `vector`, summed in float64 and rounded once to float32.

    A float32 matrix-vector product sums a row in an order that depends on where the
    row falls in the matrix (BLAS treats the rows left over at a block's end apart),
    so the same two vectors could score differently in the last bit in a full scan,
    among a graph's candidates or among a Qdrant fetch. Summed in float64, the
    orders agree far below float32's last bit, and the rounded score is the same.
    """
    import numpy as np

    query = np.asarray(vector, dtype=np.float64)
    step = max(1, _EXACT_BLOCK_VALUES // max(len(query), 1))
    if len(rows) <= step:  # one block (a scan's candidates): the same sums, rounded the same
        return (rows.astype(np.float64) @ query).astype(np.float32)
    out = np.empty(len(rows), dtype=np.float32)
    for first in range(0, len(rows), step):
        block = rows[first : first + step]
        out[first : first + len(block)] = block.astype(np.float64) @ query
    return out


def float32_slack(dimensions: int) -> float:
    """A bound on how far a float32 dot product of two unit vectors is from the exact one."""
    return dimensions * 2.0**-22 + 1e-6


def _top_positions(scores: np.ndarray, k: int | None) -> np.ndarray:
    """Positions by score descending, ties by position (= card name order); exact at the k boundary."""
    import numpy as np

    count = len(scores)
    if k is not None and k <= 0:
        return np.zeros(0, dtype=np.intp)
    if k is None or k >= count:
        candidates = np.arange(count)
    else:
        partition = np.argpartition(-scores, k - 1)[:k]
        candidates = np.flatnonzero(scores >= scores[partition].min())
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order][:k] if k is not None else candidates[order]


def _top_few(scores: np.ndarray, k: int | None) -> tuple[list[int], list[float]] | None:
    """`_top_positions` of a few scores, sorted in Python (numpy's calls cost more for a
    few), with every score as a float; None: too many, or a NaN (no place in a Python sort)."""
    if len(scores) > _FEW_HITS or (k is not None and k <= 0):
        return None
    values = scores.tolist()
    if any(map(math.isnan, values)):
        return None
    # Best first; a stable sort keeps equal scores in position (= name) order.
    order = sorted(range(len(values)), key=values.__getitem__, reverse=True)
    return order[:k], values


def _warnings(alignment: _Alignment) -> list[str]:
    """The aligned cards' stale and absent warnings."""
    warnings = [messages.index_card_stale(name) for name in alignment.stale]
    if alignment.absent:
        warnings.append(messages.index_cards_absent(alignment.absent))
    return warnings


def _cards_by_row(loaded: _Loaded, cards: Sequence[Any]) -> list[Any]:
    """Each card row's card among `cards`: the last with its name, as a name-to-card map of
    `cards` finds it; None for a row none of them holds."""
    by_row: list[Any] = [None] * len(loaded.names)
    row_of = loaded.row_of
    for card in cards:
        row = row_of.get(card.name)
        if row is not None:
            by_row[row] = card
    return by_row


def _within_slack(scores: np.ndarray, k: int, dimensions: int) -> np.ndarray:
    """The positions (ascending) of the scores within the float32 slack of the k-th largest
    (0 < k < len(scores)). Through the array's own methods: the module's wrappers cost more
    than partitioning a few thousand scores."""
    count = len(scores)
    ordered = scores.copy()
    ordered.partition(count - k)
    return (scores >= ordered[count - k] - float32_slack(dimensions)).nonzero()[0]


def _align(loaded: _Loaded, cards: Sequence[CardLike], ids: tuple[int, ...]) -> _Alignment:
    import numpy as np

    row_of, hashes = loaded.row_of, loaded.hashes
    rows: list[int] = []
    stale: list[str] = []
    absent = 0
    for card in cards:
        row = row_of.get(card.name)
        if row is None:
            absent += 1
            continue
        rows.append(row)
        if hashes[row] != card.digest:
            stale.append(card.name)
    rows.sort()
    stale.sort()
    if rows == list(range(len(loaded.names))):  # every row once (a card twice is not all)
        return _Alignment(cards, tuple(cards), ids, None, stale, absent)
    return _Alignment(cards, tuple(cards), ids, np.asarray(rows, dtype=np.intp), stale, absent)


def check_vault(built_for: str, vault_root: Path) -> None:
    """Same path, or the same final component (indexes travel with their vault)."""
    root = vault_root.resolve()
    recorded = built_for.replace("\\", "/")
    if recorded in (str(vault_root), str(root), root.as_posix()):
        return
    if PurePosixPath(recorded.rstrip("/") or "/").name == root.name:
        return
    raise SemanticIndexError(messages.index_other_vault(built_for, str(vault_root)))


def _load_cached(path: Path) -> _Loaded:
    unchanged = _unchanged(path)
    if unchanged is not None:
        return unchanged
    try:
        key = path.resolve()
        status = key.stat()
    except FileNotFoundError:
        raise SemanticIndexError(messages.index_missing(str(path))) from None
    except (OSError, RuntimeError, ValueError) as error:  # RuntimeError: a symlink loop
        reason = getattr(error, "strerror", None) or str(error)
        raise SemanticIndexError(messages.index_unreadable(str(path), reason)) from None
    stamp = _stamp_of(status)
    with _CACHE_LOCK:
        loaded = _CACHE.get(key)
        if loaded is None or loaded.stamp != stamp:
            loaded = _CACHE[key] = _load(path, stamp)
        _RESOLVED[path] = ((status.st_dev, *stamp), key)
        return loaded


def _unchanged(path: Path) -> _Loaded | None:
    """The cached revision of `path`'s file when the path was resolved before and the file it
    reaches now is the very file (device, inode, mtime, size, change time) that was cached."""
    known = _RESOLVED.get(path)
    if known is None:
        return None
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None  # the full open says why
    stamp = _stamp_of(status)
    if known[0] != (status.st_dev, *stamp):
        return None
    loaded = _CACHE.get(known[1])
    return loaded if loaded is not None and loaded.stamp == stamp else None


def clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()
        _RESOLVED.clear()


def _load(path: Path, stamp: Stamp) -> _Loaded:
    if not path.is_file():
        raise SemanticIndexError(messages.index_unreadable(str(path), "not a file"))
    if not os.access(path, os.R_OK):
        raise SemanticIndexError(messages.index_unreadable(str(path), "permission denied"))
    try:
        connection = schema.connect_readonly(path)
    except sqlite3.Error as error:
        raise SemanticIndexError(messages.index_unreadable(str(path), str(error))) from None
    try:
        return _read(connection, path, stamp)
    except sqlite3.OperationalError as error:  # locked, unable to open: the file may be fine
        raise SemanticIndexError(messages.index_unreadable(str(path), str(error))) from None
    except (sqlite3.Error, UnicodeDecodeError):  # not a database, malformed, truncated
        raise SemanticIndexError(schema.not_a_database(path)) from None
    finally:
        connection.close()


def _read(connection: sqlite3.Connection, path: Path, stamp: Stamp) -> _Loaded:
    missing = schema.missing_tables(connection)
    if missing:
        raise SemanticIndexError(messages.index_missing_table(str(path), missing[0]))
    meta = read_meta(connection)
    model = read_model(connection)
    names, hashes, card_bytes = _read_cards(connection, model.dimensions)
    matrix = _card_matrix(names, card_bytes, model.dimensions)
    keys: list[pins.SectionKey] = []
    section_bytes: list[bytes] = []
    sections = (
        _read_sections(connection, names, matrix, model.dimensions, keys, section_bytes)
        if schema.has_sections(connection)
        else None
    )
    pinned = pins.is_pinned(connection)
    if pinned:
        rows = pins.VectorRows(model, names, hashes, card_bytes, keys, b"".join(section_bytes))
        check_pins(connection, path, rows)
    return _Loaded(
        stamp=stamp,
        model=model,
        meta=meta,
        names=names,
        row_of={name: row for row, name in enumerate(names)},
        hashes=hashes,
        matrix=matrix,
        sections=sections,
        pinned=pinned,
    )


def check_pins(connection: sqlite3.Connection, path: Path, rows: pins.VectorRows) -> None:
    """Refuse an index whose vectors are not the ones its build pinned (fail closed)."""
    recorded = pins.manifest_digest(connection)
    if recorded is not None and recorded == pins.index_digest(rows):
        return
    changed = pins.unpinned_cards(connection)
    raise SemanticIndexError(messages.index_vectors_not_pinned(str(path), changed))


def _read_sections(
    connection: sqlite3.Connection,
    names: tuple[str, ...],
    cards: np.ndarray,
    dimensions: int,
    keys: list[pins.SectionKey],
    raw: list[bytes],
) -> _Sections | None:
    """The section vectors in card-row order; a card without sections scores by its own vector.

    None when the table holds no section at all: every card scores by its own vector, as
    in an index without the table (not a second copy of the card matrix). `keys` and
    `raw` receive every row as stored, for the pins.
    """
    import numpy as np

    width = dimensions * 4
    by_card: dict[str, list[tuple[tuple[str, ...], int, int, int, bytes]]] = {}
    query = (
        "SELECT card, ordinal, heading, line_start, line_end, embedding FROM section "
        "ORDER BY card, ordinal"
    )
    for card, ordinal, heading, start, end, blob in connection.execute(query):
        if not isinstance(blob, bytes) or len(blob) != width:
            size = len(blob) if isinstance(blob, bytes | str) else 0
            raise SemanticIndexError(messages.index_section_wrong_length(str(card), size, width))
        path = schema.heading_path(heading)
        if path is None or not schema.usable_section_row(ordinal, heading, start, end):
            raise SemanticIndexError(messages.index_section_row_damaged(str(card)))
        keys.append(pins.section_key(card, ordinal, heading, start, end))
        raw.append(blob)
        by_card.setdefault(str(card), []).append((path, start, end, ordinal, blob))
    if not by_card:
        return None
    blobs: list[bytes] = []
    info: list[tuple[tuple[str, ...], int, int, int]] = []
    starts = np.zeros(len(names), dtype=np.intp)
    counts = np.zeros(len(names), dtype=np.intp)
    for row, name in enumerate(names):
        starts[row] = len(blobs)
        parts = by_card.get(name)
        if not parts:
            blobs.append(cards[row].astype("<f4").tobytes())
            info.append(((), 0, 0, -1))  # no section: the card's own vector
        else:
            for path, start, end, ordinal, blob in parts:
                blobs.append(blob)
                info.append((path, start, end, ordinal))
        counts[row] = len(blobs) - starts[row]
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dimensions)
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    bad = schema.unusable_rows(matrix)
    if len(bad):
        owner = names[int(np.searchsorted(starts, bad[0], side="right")) - 1]
        norm = schema.vector_norm(matrix[bad[0]])
        raise SemanticIndexError(
            messages.index_section_not_finite(owner)
            if not np.isfinite(norm)
            else messages.index_section_not_unit(owner, norm)
        )
    return _Sections(matrix, starts, counts, tuple(info), bool((counts == 1).all()))


def read_meta(connection: sqlite3.Connection) -> schema.MetaRow:
    rows = connection.execute(
        "SELECT schema_version, vault, built_at, tool_version FROM index_meta"
    ).fetchall()
    version = rows[0][0] if rows else None
    if len(rows) != 1 or version != schema.SCHEMA_VERSION:
        raise SemanticIndexError(messages.index_unknown_schema(version))
    _, vault, built_at, tool_version = rows[0]
    return schema.MetaRow(version, str(vault or ""), str(built_at or ""), str(tool_version or ""))


def read_model(connection: sqlite3.Connection) -> schema.ModelRow:
    rows = connection.execute(
        "SELECT id, revision, dimensions, metric, normalized FROM model"
    ).fetchall()
    if len(rows) != 1:
        raise SemanticIndexError(messages.index_bad_model_rows(len(rows)))
    model_id, revision, dimensions, metric, normalized = rows[0]
    valid_width = isinstance(dimensions, int) and 0 < dimensions <= schema.MAX_DIMENSIONS
    if not valid_width:
        raise SemanticIndexError(messages.index_bad_dimensions(dimensions))
    if metric not in schema.KNOWN_METRICS:
        raise SemanticIndexError(messages.index_unknown_metric(metric))
    if normalized != 1:
        raise SemanticIndexError(messages.index_not_normalized())
    return schema.ModelRow(str(model_id), str(revision or ""), dimensions, metric, 1)


def _read_cards(
    connection: sqlite3.Connection, dimensions: int
) -> tuple[tuple[str, ...], tuple[str, ...], bytes]:
    """Names, text digests and every vector's bytes, in name order."""
    width = dimensions * 4
    names: list[str] = []
    hashes: list[str] = []
    blobs: list[bytes] = []
    query = "SELECT name, content_hash, embedding FROM card ORDER BY name"
    for name, content_hash, blob in connection.execute(query):
        if not isinstance(blob, bytes) or len(blob) != width:
            size = len(blob) if isinstance(blob, bytes | str) else 0
            raise SemanticIndexError(messages.index_wrong_vector_length(str(name), size, width))
        names.append(str(name))
        hashes.append(str(content_hash or ""))
        blobs.append(blob)
    return tuple(names), tuple(hashes), b"".join(blobs)


def _card_matrix(names: tuple[str, ...], data: bytes, dimensions: int) -> np.ndarray:
    import numpy as np

    matrix = np.frombuffer(data, dtype="<f4").reshape(len(names), dimensions)
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    bad = schema.unusable_rows(matrix)
    if len(bad):
        norm = schema.vector_norm(matrix[bad[0]])
        raise SemanticIndexError(
            messages.index_vector_not_finite(names[bad[0]])
            if not np.isfinite(norm)
            else messages.index_vector_not_unit(names[bad[0]], norm)
        )
    return matrix


def _read_query(path: Path, text: str, dimensions: int, pinned: bool) -> np.ndarray | None:
    """One stored question's vector, found through the table's key: never the whole table.

    In a pinned index the vector must be the one its pin records."""
    try:
        connection = schema.connect_readonly(path)
        try:
            row = connection.execute(
                "SELECT embedding FROM query WHERE text = ?", (text,)
            ).fetchone()
            pin = (
                connection.execute(
                    "SELECT digest FROM pin WHERE kind = ? AND name = ?", (pins.QUERY, text)
                ).fetchone()
                if pinned and row is not None
                else None
            )
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise SemanticIndexError(messages.index_unreadable(str(path), str(error))) from None
    if row is None:
        return None
    blob = row[0]
    if not isinstance(blob, bytes) or len(blob) != dimensions * 4:
        size = len(blob) if isinstance(blob, bytes | str) else 0
        raise SemanticIndexError(messages.index_query_wrong_length(text, size, dimensions * 4))
    vector = schema.blob_to_vector(blob)
    if len(schema.unusable_rows(vector.reshape(1, -1))):
        norm = schema.vector_norm(vector)
        raise SemanticIndexError(
            messages.index_query_vector_not_unit(text, norm)
            if math.isfinite(norm)
            else messages.index_query_vector_not_finite(text)
        )
    if pinned and (pin is None or pin[0] != pins.query_digest(text, blob)):
        raise SemanticIndexError(messages.index_query_not_pinned(str(path), text))
    return vector


# --- opening the vault's index ------------------------------------------------------


class VaultLike(Protocol):
    root: Path
    cards: Sequence[Any]
    config: Any


def open_vault_index(vault: VaultLike) -> SemanticIndex:
    """The index `[semantics] index` names, opened and checked against the vault."""
    config = load_semantics_config(raw_config(vault))
    path = resolve_index_path(Path(vault.root), config.require_index())
    return SemanticIndex.open(path, vault.root)


def raw_config(vault: VaultLike) -> dict[str, Any]:
    config = getattr(vault, "config", None)
    raw = getattr(config, "raw", None)
    return raw if isinstance(raw, dict) else {}
