"""Schema v1 of the semantic index, as the original writes and reads it (reference §12.3).

Tables: `model` (one row), `index_meta` (one row), `card` (one row per card,
its text digest and vector), `query` (question text and vector). Vectors are
little-endian float32 blobs of exactly `dimensions * 4` bytes.

HQL adds one table the reference ignores: `section` (one row per embedded
section of a card: its heading path as a JSON list, its line span in the
card's file, its vector). A card's own row then holds the normalised mean of
its sections' vectors (the very vector, for a card of one section), so the
reference reads an HQL index card by card as it always did. An index without
the table (built by the reference) is read card by card here too.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hql import files, messages
from hql.version import __version__

if TYPE_CHECKING:
    import numpy as np

SCHEMA_VERSION = 1
MAX_DIMENSIONS = 8192
# Vectors are stored unit length (`normalized = 1`); one further from 1 than this is damaged.
NORM_TOLERANCE = 1e-3
KNOWN_METRICS = ("cosine",)
TOOL_VERSION = f"hql {__version__}"
TABLES = ("model", "index_meta", "card", "query")
SECTION_TABLE = "section"

DDL = (
    "CREATE TABLE model (id TEXT PRIMARY KEY, revision TEXT, dimensions INTEGER, "
    "metric TEXT, normalized INTEGER)",
    "CREATE TABLE index_meta (schema_version INTEGER, vault TEXT, built_at TEXT, "
    "tool_version TEXT)",
    "CREATE TABLE card (name TEXT PRIMARY KEY, path TEXT, content_hash TEXT, embedding BLOB)",
    "CREATE TABLE query (text TEXT PRIMARY KEY, embedding BLOB)",
)
SECTION_DDL = (
    "CREATE TABLE section (card TEXT NOT NULL, ordinal INTEGER NOT NULL, heading TEXT, "
    "line_start INTEGER, line_end INTEGER, embedding BLOB, PRIMARY KEY (card, ordinal))"
)


@dataclass(frozen=True, slots=True)
class ModelRow:
    id: str
    revision: str
    dimensions: int
    metric: str
    normalized: int


@dataclass(frozen=True, slots=True)
class MetaRow:
    schema_version: int
    vault: str
    built_at: str
    tool_version: str


@dataclass(frozen=True, slots=True)
class CardRow:
    name: str
    path: str
    content_hash: str
    embedding: bytes


@dataclass(frozen=True, slots=True)
class SectionRow:
    card: str
    ordinal: int
    heading: str  # JSON list of the heading path
    line_start: int
    line_end: int
    embedding: bytes


# A heading path HQL writes is a JSON list of a few strings; a longer text is not one of its rows.
MAX_HEADING_CHARS = 1 << 16


def heading_path(stored: object) -> tuple[str, ...] | None:
    """A section row's heading path as HQL writes it (a JSON list of strings); None otherwise.

    The text is the file's, not HQL's: it may be nested deeper than Python's parser
    recurses, or hold anything but a list of strings.
    """
    if stored is None:  # a row written without one: the whole card
        return ()
    if not isinstance(stored, str) or len(stored) > MAX_HEADING_CHARS or not stored.startswith("["):
        return None
    try:
        value = json.loads(stored)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list) or not all(isinstance(part, str) for part in value):
        return None
    return tuple(value)


def usable_section_row(ordinal: object, heading: object, start: object, end: object) -> bool:
    """A section row's ordinal, heading path and line span are of the types HQL writes."""
    return (
        all(type(value) is int for value in (ordinal, start, end))
        and heading_path(heading) is not None
    )


def vector_to_blob(vector: np.ndarray) -> bytes:
    """One vector as the little-endian float32 blob the schema stores."""
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def blob_to_vector(blob: bytes) -> np.ndarray:
    import numpy as np

    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def unusable_rows(matrix: np.ndarray) -> np.ndarray:
    """Positions of the rows that are not unit vectors: NaN, infinity, zero or a wrong length.

    Scores are dot products that mean cosine only on unit vectors: a huge vector
    would outrank every card, a zero one would score 0.0 against every question.
    """
    import numpy as np

    if matrix.size == 0:
        return np.zeros(0, dtype=np.intp)
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
        bad = ~np.isfinite(norms) | (np.abs(norms - 1.0) > NORM_TOLERANCE)
    return np.flatnonzero(bad)


def usable_blob(blob: object, width: int) -> bool:
    """A stored vector of the declared width that is a unit vector."""
    import numpy as np

    if not isinstance(blob, bytes) or len(blob) != width:
        return False
    row = np.frombuffer(blob, dtype="<f4").reshape(1, -1)
    return len(unusable_rows(row)) == 0


def vector_norm(vector: np.ndarray) -> float:
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.linalg.norm(np.asarray(vector, dtype=np.float64)))


SQLITE_HEADER = b"SQLite format 3\0"


def is_foreign(path: Path) -> bool:
    """A file that does not start as an SQLite database does: not HQL's to replace."""
    if not files.is_regular(path):  # a FIFO is never opened here
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except OSError:
        return False
    return bool(head) and head != SQLITE_HEADER


def not_a_database(path: Path) -> str:
    """What to say of an index SQLite cannot read: rebuild it, or remove a file not HQL's."""
    if is_foreign(path):
        return messages.index_not_sqlite(str(path))
    return messages.index_not_a_database(str(path))


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open an existing index without ever creating or changing it."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def missing_tables(connection: sqlite3.Connection) -> list[str]:
    rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    present = {str(row[0]) for row in rows}
    return [table for table in TABLES if table not in present]


def create_tables(connection: sqlite3.Connection) -> None:
    for statement in DDL:
        connection.execute(statement)
    connection.execute(SECTION_DDL)


def has_sections(connection: sqlite3.Connection) -> bool:
    row = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (SECTION_TABLE,)
    ).fetchone()
    return row is not None


def write_index(
    connection: sqlite3.Connection,
    model: ModelRow,
    meta: MetaRow,
    cards: Iterable[CardRow],
    queries: Sequence[tuple[str, bytes]],
    sections: Iterable[SectionRow] = (),
) -> None:
    """Fill an empty database with a complete index, pinned (`hql.index.pins`), in one transaction."""
    from hql.index import pins  # pins reads rows through this module

    with connection:
        create_tables(connection)
        connection.execute(
            "INSERT INTO model (id, revision, dimensions, metric, normalized) VALUES (?, ?, ?, ?, ?)",
            (model.id, model.revision, model.dimensions, model.metric, model.normalized),
        )
        connection.execute(
            "INSERT INTO index_meta (schema_version, vault, built_at, tool_version) "
            "VALUES (?, ?, ?, ?)",
            (meta.schema_version, meta.vault, meta.built_at, meta.tool_version),
        )
        connection.executemany(
            "INSERT INTO card (name, path, content_hash, embedding) VALUES (?, ?, ?, ?)",
            ((c.name, c.path, c.content_hash, c.embedding) for c in cards),
        )
        connection.executemany("INSERT INTO query (text, embedding) VALUES (?, ?)", queries)
        connection.executemany(
            "INSERT INTO section (card, ordinal, heading, line_start, line_end, embedding) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                (s.card, s.ordinal, s.heading, s.line_start, s.line_end, s.embedding)
                for s in sections
            ),
        )
        pins.seal(connection, model)
