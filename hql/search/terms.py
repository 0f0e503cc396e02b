"""The word index a question reads: one SQLite row per term (`.hql/bm25.v1.terms.sqlite`).

A row holds a term's idf and, for each card holding the term, the card's position among
the vault's cards (name order) and its impact: the term's share of the card's BM25F score
before the query's weights, worked out when the index is written (`Bm25Index.term_rows`).
A question reads the rows of its terms and the file's identity, nothing else: it adds the
impacts up in float32 exactly as `Bm25Index` does (the same scores, the same order), in
plain Python, so a fresh process answers without importing numpy.

The file is for one list of cards: the analyser's fingerprint, the cards' `search_digest`
and their count name it, in a sealed identity row. Another identity means "not for these
cards" (the caller builds the full index, which writes the file anew). Every row carries
the sha256 of the identity's seal and its own contents, checked when read: a row that
does not match, or a file SQLite cannot read, is damage (`TermIndexDamaged`). SQLite reads
the file with `read()` (memory mapping is switched off), so a file shrunk underneath a
reader is an error, never a crash.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import heapq
import os
import sqlite3
import struct
import sys
import threading
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hql import files
from hql.text.analyzer import PREFIX_MARK

MODEL = "hql.bm25.v1"
METRIC = "bm25"
PREFIX_WEIGHT = 0.5  # a shared 5-letter prefix is weaker evidence than a shared word
TERMS_NAME = "bm25.v1.terms.sqlite"
_FORMAT = 1

# Postings are numbered in the order they are written (appended to their table); the
# terms, small rows, are written in sorted order (appended to their index).
_SCHEMA = (
    "PRAGMA page_size = 16384",
    "CREATE TABLE identity (format INTEGER, analyzer TEXT, cards_digest BLOB, cards INTEGER, "
    "unknown_idf REAL, seal BLOB)",
    "CREATE TABLE posting (id INTEGER PRIMARY KEY, idf REAL, positions BLOB, impacts BLOB, "
    "checksum BLOB)",
    "CREATE TABLE term (term TEXT PRIMARY KEY, id INTEGER) WITHOUT ROWID",
)
_LOOKUP = (
    "SELECT posting.idf, posting.positions, posting.impacts, posting.checksum "
    "FROM term JOIN posting ON posting.id = term.id WHERE term.term = ?"
)


class TermIndexDamaged(ValueError):
    """The word index cannot be read as written (a row or its identity fails its check)."""


def store_fingerprint(analyzer: str, fields: Any) -> str:
    """What a store's postings depend on: the analyser (its fingerprint), and how cards are
    split into fields (`hql.search.fields.SearchFields`, None: title and text only)."""
    return analyzer if fields is None else f"{analyzer}+{fields.key}"


def query_weight(term: str, count: int) -> float:
    """A query term counts once per occurrence; a prefix (a stem guess) counts half."""
    return count * (PREFIX_WEIGHT if term.startswith(PREFIX_MARK) else 1.0)


def weighted_terms(terms: Iterable[str]) -> list[tuple[str, float]]:
    """Each distinct query term (first occurrence first) with its weight."""
    return [(term, query_weight(term, count)) for term, count in Counter(terms).items()]


def _seal(analyzer: str, cards_digest: bytes, cards: int, unknown_idf: float) -> bytes:
    parts = (
        struct.pack("<q", _FORMAT),
        analyzer.encode("utf-8", "surrogatepass"),
        cards_digest,
        struct.pack("<qd", cards, unknown_idf),
    )
    return hashlib.sha256(b"".join(len(p).to_bytes(8, "little") + p for p in parts)).digest()


_LENGTHS = struct.Struct("<qdq")


def _row_checksum(seal: bytes, term: str, idf: float, positions: bytes, impacts: bytes) -> bytes:
    encoded = term.encode("utf-8", "surrogatepass")
    lengths = _LENGTHS.pack(len(encoded), idf, len(positions))
    return hashlib.sha256(b"".join((seal, lengths, encoded, positions, impacts))).digest()


def identity_of(cards: Sequence[Any]) -> bytes | None:
    """The digest naming these cards (their names and search keys), if they have one and
    are in name order (ties are then broken by position)."""
    digest = getattr(cards, "search_digest", b"")
    if type(digest) is not bytes or not digest or not getattr(cards, "in_name_order", False):
        return None
    return digest


def path_in(state_dir: Path) -> Path:
    return state_dir / TERMS_NAME


def write(
    state_dir: Path,
    analyzer: str,
    cards_digest: bytes,
    cards: int,
    unknown_idf: float,
    rows: Iterable[tuple[str, float, bytes, bytes]],
) -> None:
    """Write the word index (all or nothing: a temporary renamed over the file).

    `rows` are (term, idf, positions as little-endian int32, impacts as little-endian
    float32), positions increasing within a term."""
    if not files.state_dir_contained(state_dir):
        return
    target = files.write_target(path_in(state_dir))
    temporary = files.temporary_beside(target)
    seal = _seal(analyzer, cards_digest, cards, unknown_idf)
    try:
        connection = sqlite3.connect(temporary)
        try:
            connection.execute("PRAGMA journal_mode = OFF")
            connection.execute("PRAGMA synchronous = OFF")
            for statement in _SCHEMA:
                connection.execute(statement)
            connection.execute(
                "INSERT INTO identity VALUES (?, ?, ?, ?, ?, ?)",
                (_FORMAT, analyzer, cards_digest, cards, unknown_idf, seal),
            )
            written: list[str] = []  # each posting's term, by posting id
            connection.executemany(
                "INSERT INTO posting VALUES (?, ?, ?, ?, ?)", _numbered(rows, seal, written)
            )
            connection.executemany(
                "INSERT INTO term VALUES (?, ?)",
                ((written[at], at) for at in sorted(range(len(written)), key=written.__getitem__)),
            )
            connection.commit()
        finally:
            connection.close()
        files.finish_replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _numbered(
    rows: Iterable[tuple[str, float, bytes, bytes]], seal: bytes, terms: list[str]
) -> Iterator[tuple[int, float, bytes, bytes, bytes]]:
    """The posting rows, numbered from 0 with their checksums; each one's term noted in `terms`.

    Each checksum is `_row_checksum`'s, worked out inline (a call per row is a fair share
    of writing the index)."""
    pack, sha256, note = _LENGTHS.pack, hashlib.sha256, terms.append
    for at, (term, idf, positions, impacts) in enumerate(rows):
        note(term)
        encoded = term.encode("utf-8", "surrogatepass")
        lengths = pack(len(encoded), idf, len(positions))
        checksum = sha256(b"".join((seal, lengths, encoded, positions, impacts))).digest()
        yield at, idf, positions, impacts, checksum


def written_for(state_dir: Path, analyzer: str, cards_digest: bytes, cards: int) -> bool:
    """Whether the word index under `state_dir` is readable and for these cards."""
    try:
        index = TermIndex.open(state_dir, analyzer, cards_digest, cards)
    except TermIndexDamaged:
        return False
    if index is None:
        return False
    index.close()
    return True


class TermIndex:
    """An open word index for one list of cards (see the module)."""

    def __init__(self, connection: sqlite3.Connection, seal: bytes, cards: int, unknown: float):
        self._connection = connection
        self._lock = threading.Lock()
        self._seal = seal
        self.cards = cards
        self.unknown_idf = unknown

    @classmethod
    def open(
        cls, state_dir: Path, analyzer: str, cards_digest: bytes, cards: int
    ) -> TermIndex | None:
        """The word index for these cards; None when there is none or it is for other cards
        (raises `TermIndexDamaged` when it cannot be read)."""
        path = path_in(state_dir)
        if not files.state_dir_contained(state_dir) or not files.is_regular(path):
            return None
        try:
            # One connection for the vault's threads, its lookups taken in turn (`_lock`).
            connection = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise TermIndexDamaged(str(error)) from None
        try:
            connection.execute("PRAGMA mmap_size = 0")
            row = connection.execute(
                "SELECT format, analyzer, cards_digest, cards, unknown_idf, seal FROM identity"
            ).fetchall()
        except sqlite3.Error as error:
            connection.close()
            raise TermIndexDamaged(str(error)) from None
        if len(row) != 1:
            connection.close()
            raise TermIndexDamaged("its identity is missing")
        kind, written_by, digest, count, unknown, seal = row[0]
        if kind != _FORMAT or written_by != analyzer:
            connection.close()
            return None  # another layout's or analyser's: written anew by the full index
        if (
            type(digest) is not bytes
            or type(count) is not int
            or type(unknown) is not float
            or seal != _seal(written_by, digest, count, unknown)
        ):
            connection.close()
            raise TermIndexDamaged("its identity does not match its checksum")
        if digest != cards_digest or count != cards:
            connection.close()
            return None
        return cls(connection, seal, count, unknown)

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    def postings(self, term: str) -> tuple[float, array[int], array[float]] | None:
        """A term's idf, the positions of the cards holding it and their impacts (None: no
        card holds it); raises `TermIndexDamaged` when its row fails its check."""
        try:
            with self._lock:
                row = self._connection.execute(_LOOKUP, (term,)).fetchone()
        except sqlite3.Error as error:
            raise TermIndexDamaged(str(error)) from None
        if row is None:
            return None
        idf, positions, impacts, checksum = row
        if (
            type(idf) is not float
            or type(positions) is not bytes
            or type(impacts) is not bytes
            or len(positions) != len(impacts)
            or len(positions) % 4
            or checksum != _row_checksum(self._seal, term, idf, positions, impacts)
        ):
            raise TermIndexDamaged("the postings of a term do not match their checksum")
        at, shares = array("i"), array("f")
        at.frombytes(positions)
        shares.frombytes(impacts)
        if sys.byteorder != "little":
            at.byteswap()
            shares.byteswap()
        if at and (min(at) < 0 or max(at) >= self.cards):
            raise TermIndexDamaged("postings out of range")
        return idf, at, shares

    def rank(self, terms: Sequence[tuple[str, float]], limit: int | None) -> Ranked:
        """The cards sharing a weighted term, best first, ties by position (the first
        `limit`), scored in float32 as `Bm25Index.search` scores them."""
        scores = array("f", bytes(4 * self.cards))
        matched: list[tuple[str, array[int], array[float]]] = []
        idfs: dict[str, float] = {}
        touched: set[int] = set()
        for term, weight in terms:
            found = self.postings(term)
            if found is None:
                continue
            idf, positions, impacts = found
            idfs[term] = idf
            if weight != 1.0:
                impacts = array("f", [weight * impact for impact in impacts])  # rounded as float32
            for position, impact in zip(positions, impacts, strict=True):
                scores[position] += impact  # each sum rounded to float32 as it is stored
            touched.update(positions)
            matched.append((term, positions, impacts))
        hits = [position for position in touched if scores[position] != 0.0]
        if limit is not None and limit <= 0:
            hits = []
        elif limit is not None and len(hits) > limit:
            hits = heapq.nsmallest(limit, hits, key=lambda p: (-scores[p], p))
        else:
            hits.sort(key=lambda p: (-scores[p], p))
        return Ranked([(position, scores[position]) for position in hits], matched, idfs)


class Ranked:
    """One question's hits (card position, score) and what explains them."""

    def __init__(
        self,
        hits: list[tuple[int, float]],
        matched: list[tuple[str, array[int], array[float]]],
        idfs: Mapping[str, float],
    ) -> None:
        self.hits = hits
        self._matched = matched
        self.idfs = idfs

    def matched(self, position: int) -> dict[str, float]:
        """Each query term the card at `position` holds, with its weighted impact."""
        shares: dict[str, float] = {}
        for term, positions, impacts in self._matched:
            at = bisect.bisect_left(positions, position)
            if at < len(positions) and positions[at] == position:
                shares[term] = impacts[at]
        return shares


def score_bound(
    terms: Sequence[tuple[str, float]], idfs: Mapping[str, float], unknown: float
) -> float:
    """As `Bm25Index.score_bound`: the weighted idf of every query term (a term no card
    holds counts with the idf of a term held by none)."""
    total = 0.0
    for term, weight in terms:
        total += weight * idfs.get(term, unknown)
    return float(total)


__all__ = [
    "METRIC",
    "MODEL",
    "TERMS_NAME",
    "Ranked",
    "TermIndex",
    "TermIndexDamaged",
    "identity_of",
    "query_weight",
    "score_bound",
    "weighted_terms",
    "write",
    "written_for",
]
