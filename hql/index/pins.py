"""Pinned vectors: a digest per card's vectors and one for the whole index (its build manifest).

An index is a plain SQLite file: rows can be swapped, a float edited, a card's
vector copied onto another, and every vector would still be a unit vector of
the right width. The build therefore records

* `pin(kind, name, digest)`: for every card (`kind = 'card'`) the sha256 of its
  name, text digest, own vector and every section (ordinal, heading, lines,
  vector); for every stored question (`kind = 'query'`) the sha256 of its text
  and vector;
* `manifest(key, value)`: `vectors`, the sha256 of the model row and of every
  card's and section's row in key order, with the counts and the algorithm.

A reader recomputes `vectors` from the rows it has just read (a few bulk hash
calls, no per-row work) and refuses the index when it differs; only then are
the cards' own pins checked, to name the ones that changed. The reference's
tables are untouched, and an index without the two tables (one the reference
built) is read as before, unpinned.
"""

from __future__ import annotations

import hashlib
import sqlite3
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from hql.index import schema

ALGORITHM = "sha256"
PIN_TABLE = "pin"
MANIFEST_TABLE = "manifest"
PIN_DDL = (
    "CREATE TABLE pin (kind TEXT NOT NULL, name TEXT NOT NULL, digest TEXT NOT NULL, "
    "PRIMARY KEY (kind, name))"
)
MANIFEST_DDL = "CREATE TABLE manifest (key TEXT PRIMARY KEY, value TEXT)"
CARD = "card"
QUERY = "query"

SectionKey = tuple[str, int, str, int, int]  # card, ordinal, heading (as stored), first, last line


def section_key(
    card: object, ordinal: object, heading: object, start: object, end: object
) -> SectionKey:
    """A section row's identifying fields, normalised the same way by the writer and the reader."""
    return (str(card), _int(ordinal), str(heading or ""), _int(start), _int(end))


@dataclass(frozen=True, slots=True)
class VectorRows:
    """What the manifest's `vectors` digest covers, in the order the reader reads it."""

    model: schema.ModelRow
    names: Sequence[str]
    hashes: Sequence[str]
    card_bytes: bytes  # every card's vector, in name order
    sections: Sequence[SectionKey]  # in (card, ordinal) order
    section_bytes: bytes  # their vectors, in the same order


def index_digest(rows: VectorRows) -> str:
    digest = hashlib.sha256()
    model = rows.model
    digest.update(f"{model.id}\0{model.revision}\0{model.dimensions}\0{model.metric}\0".encode())
    digest.update(struct.pack("<QQ", len(rows.names), len(rows.sections)))
    digest.update("\0".join(rows.names).encode())
    digest.update(b"\1")
    digest.update("\0".join(rows.hashes).encode())
    digest.update(b"\1")
    digest.update(rows.card_bytes)
    digest.update("\0".join(map(_section_text, rows.sections)).encode())
    digest.update(b"\1")
    digest.update(rows.section_bytes)
    return f"{ALGORITHM}:{digest.hexdigest()}"


def card_digest(
    name: str, content_hash: str, blob: bytes, sections: Iterable[tuple[SectionKey, bytes]]
) -> str:
    digest = hashlib.sha256(f"{name}\0{content_hash}\0".encode())
    digest.update(blob)
    for key, vector in sections:
        digest.update(f"\1{_section_text(key)}\0".encode())
        digest.update(vector)
    return f"{ALGORITHM}:{digest.hexdigest()}"


def query_digest(text: str, blob: bytes) -> str:
    digest = hashlib.sha256(f"{text}\0".encode())
    digest.update(blob)
    return f"{ALGORITHM}:{digest.hexdigest()}"


def is_pinned(connection: sqlite3.Connection) -> bool:
    """Whether the index carries pins or a manifest (either one: removing the other is tampering)."""
    rows = connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
        (PIN_TABLE, MANIFEST_TABLE),
    ).fetchall()
    return bool(rows)


def manifest_digest(connection: sqlite3.Connection) -> str | None:
    """The manifest's `vectors` digest; None when either table or the row is missing."""
    if len(_present(connection)) < 2:
        return None
    row = connection.execute("SELECT value FROM manifest WHERE key = 'vectors'").fetchone()
    return str(row[0]) if row is not None and row[0] else None


def read_rows(connection: sqlite3.Connection, model: schema.ModelRow) -> VectorRows:
    """Every card and section row as the digest covers them (for a writer or `verify`)."""
    names: list[str] = []
    hashes: list[str] = []
    blobs: list[bytes] = []
    for name, content_hash, blob in connection.execute(
        "SELECT name, content_hash, embedding FROM card ORDER BY name"
    ):
        names.append(str(name))
        hashes.append(str(content_hash or ""))
        blobs.append(_bytes(blob))
    keys: list[SectionKey] = []
    vectors: list[bytes] = []
    if schema.has_sections(connection):
        for card, ordinal, heading, start, end, blob in connection.execute(
            "SELECT card, ordinal, heading, line_start, line_end, embedding FROM section "
            "ORDER BY card, ordinal"
        ):
            keys.append(section_key(card, ordinal, heading, start, end))
            vectors.append(_bytes(blob))
    return VectorRows(model, names, hashes, b"".join(blobs), keys, b"".join(vectors))


def card_pins(connection: sqlite3.Connection, names: Sequence[str] | None = None) -> dict[str, str]:
    """Each card's digest (or only these cards'), computed from its rows now."""
    where, chosen = "", cast(tuple[str, ...], ())
    if names is not None:
        where, chosen = f" WHERE {{column}} IN ({','.join('?' * len(names))})", tuple(names)
    by_card: dict[str, list[tuple[SectionKey, bytes]]] = {}
    if schema.has_sections(connection):
        for card, ordinal, heading, start, end, blob in connection.execute(
            "SELECT card, ordinal, heading, line_start, line_end, embedding FROM section"
            + where.format(column="card")
            + " ORDER BY card, ordinal",
            chosen,
        ):
            key = section_key(card, ordinal, heading, start, end)
            by_card.setdefault(key[0], []).append((key, _bytes(blob)))
    return {
        str(name): card_digest(
            str(name), str(content_hash or ""), _bytes(blob), by_card.get(str(name), ())
        )
        for name, content_hash, blob in connection.execute(
            "SELECT name, content_hash, embedding FROM card" + where.format(column="name"),
            chosen,
        )
    }


def stored_pins(connection: sqlite3.Connection, kind: str) -> dict[str, str]:
    if PIN_TABLE not in _present(connection):
        return {}
    rows = connection.execute("SELECT name, digest FROM pin WHERE kind = ?", (kind,))
    return {str(name): str(digest) for name, digest in rows}


def unpinned_cards(connection: sqlite3.Connection) -> list[str]:
    """Cards whose vectors are not the ones their pin records (or that have no pin), sorted;
    pins of cards no longer in the index count too."""
    now = card_pins(connection)
    pinned = stored_pins(connection, CARD)
    changed = {name for name, digest in now.items() if pinned.get(name) != digest}
    return sorted(changed | (set(pinned) - set(now)))


def unpinned_queries(connection: sqlite3.Connection) -> list[str]:
    pinned = stored_pins(connection, QUERY)
    return sorted(
        str(text)
        for text, blob in connection.execute("SELECT text, embedding FROM query")
        if pinned.get(str(text)) != query_digest(str(text), _bytes(blob))
    )


def seal(
    connection: sqlite3.Connection,
    model: schema.ModelRow,
    changed: Sequence[str] | None = None,
) -> None:
    """Pin every card and question and write the manifest, inside the caller's transaction.

    `changed` names the only cards whose rows changed since the index was last sealed (and
    read back whole, so every other pin was checked): only theirs are pinned again.
    """
    present = _present(connection)
    if changed is not None and PIN_TABLE in present and MANIFEST_TABLE in present:
        _repin(connection, changed)
    else:
        _pin_all(connection, present)
    rows = read_rows(connection, model)
    connection.execute("DELETE FROM manifest")
    connection.executemany(
        "INSERT INTO manifest (key, value) VALUES (?, ?)",
        [
            ("algorithm", ALGORITHM),
            ("vectors", index_digest(rows)),
            ("cards", str(len(rows.names))),
            ("sections", str(len(rows.sections))),
        ],
    )


def _pin_all(connection: sqlite3.Connection, present: set[str]) -> None:
    if PIN_TABLE not in present:
        connection.execute(PIN_DDL)
    if MANIFEST_TABLE not in present:
        connection.execute(MANIFEST_DDL)
    connection.execute("DELETE FROM pin")
    connection.executemany(
        "INSERT INTO pin (kind, name, digest) VALUES (?, ?, ?)",
        ((CARD, name, digest) for name, digest in card_pins(connection).items()),
    )
    connection.executemany(
        "INSERT INTO pin (kind, name, digest) VALUES (?, ?, ?)",
        (
            (QUERY, str(text), query_digest(str(text), _bytes(blob)))
            for text, blob in connection.execute("SELECT text, embedding FROM query").fetchall()
        ),
    )


def _repin(connection: sqlite3.Connection, changed: Sequence[str]) -> None:
    names = list(dict.fromkeys(changed))
    connection.executemany(
        "DELETE FROM pin WHERE kind = ? AND name = ?", ((CARD, name) for name in names)
    )
    connection.executemany(
        "INSERT INTO pin (kind, name, digest) VALUES (?, ?, ?)",
        ((CARD, name, digest) for name, digest in card_pins(connection, names).items()),
    )


def pin_query(connection: sqlite3.Connection, text: str, blob: bytes) -> None:
    """Pin a question stored after the build (when the index is pinned)."""
    if PIN_TABLE in _present(connection):
        connection.execute(
            "INSERT OR REPLACE INTO pin (kind, name, digest) VALUES (?, ?, ?)",
            (QUERY, text, query_digest(text, blob)),
        )


def _present(connection: sqlite3.Connection) -> set[str]:
    rows = connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
        (PIN_TABLE, MANIFEST_TABLE),
    ).fetchall()
    return {str(row[0]) for row in rows}


def _section_text(key: SectionKey) -> str:
    card, ordinal, heading, start, end = key
    return f"{card}\0{ordinal}\0{heading}\0{start}\0{end}"


def _bytes(blob: object) -> bytes:
    if isinstance(blob, bytes):
        return blob
    return str(blob).encode() if blob is not None else b""


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0
