"""The producer: `hql index build`, `verify` and `inspect` over schema v1 (reference §12.4).

A build is incremental (a card whose text digest is unchanged keeps its
vector) and atomic: it writes a temporary file beside the index and renames it
over the old one, so a crash or Ctrl-C leaves the previous index intact.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sqlite3
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from hql import files, messages
from hql.index import schema
from hql.index.config import load_semantics_config, resolve_index_path
from hql.index.embedders import Embedder, make_embedder
from hql.index.errors import SemanticIndexError
from hql.index.reader import (
    VaultLike,
    check_vault,
    clear_cache,
    raw_config,
    read_meta,
    read_model,
)

if TYPE_CHECKING:
    import numpy as np

BUILD_BATCH = 32


@dataclass(slots=True)
class BuildResult:
    path: Path
    embedded: int
    reused: int
    removed: int
    queries: int
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class VerifyResult:
    cards: int
    queries: int
    stale: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    wrong_length: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.stale or self.missing or self.extra or self.wrong_length)


@dataclass(slots=True)
class InspectResult:
    path: Path
    model: schema.ModelRow
    meta: schema.MetaRow
    cards: int
    queries: list[str]


@dataclass(slots=True)
class _Previous:
    """What an earlier build of the same model left that may be reused."""

    cards: dict[str, tuple[str, bytes]]
    queries: dict[str, bytes]
    dimensions: int | None


class Progress:
    """A one-line bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._enabled = total > 0 and self._stream.isatty()
        self._total, self._label, self._done = total, label, 0

    def advance(self, count: int) -> None:
        self._done += count
        if self._enabled:
            filled = int(30 * self._done / self._total)
            bar = "#" * filled + "-" * (30 - filled)
            self._stream.write(f"\r{self._label} [{bar}] {self._done}/{self._total}")
            self._stream.flush()

    def finish(self) -> None:
        if self._enabled:
            self._stream.write("\n")
            self._stream.flush()


def index_path_of(vault: VaultLike) -> Path:
    config = load_semantics_config(raw_config(vault))
    return resolve_index_path(Path(vault.root), config.require_index(for_producer=True))


def build_index(
    vault: VaultLike,
    queries: Iterable[str] = (),
    embedder: Embedder | None = None,
    built_at: str | None = None,
    progress: Callable[[int, str], Progress] | None = None,
) -> BuildResult:
    """Bring the vault's index up to date with its cards (and `queries`), atomically."""
    config = load_semantics_config(raw_config(vault))
    path = resolve_index_path(Path(vault.root), config.require_index(for_producer=True))
    embedder = embedder or make_embedder(config.require_embedder())
    _refuse_foreign(path)
    _make_parent(path)
    # Builds of one index take turns: the second reads what the first wrote, so
    # its cards and queries are merged, never lost to the last rename.
    with files.locked(path.parent):
        return _build_locked(vault, path, queries, embedder, built_at, progress)


def _build_locked(
    vault: VaultLike,
    path: Path,
    queries: Iterable[str],
    embedder: Embedder,
    built_at: str | None,
    progress: Callable[[int, str], Progress] | None,
) -> BuildResult:
    _refuse_foreign(path)
    model_id, revision = embedder.model_id, embedder.revision
    notes: list[str] = []
    previous = _previous_build(path, model_id, revision, notes)
    cards = sorted(vault.cards, key=lambda card: card.name)
    to_embed = [card for card in cards if _reusable(previous, card) is None]
    make_progress = progress or Progress
    card_blobs, dimensions = _embed_cards(embedder, to_embed, previous.dimensions, make_progress)
    for card in cards:
        card_blobs.setdefault(card.name, _reusable(previous, card) or b"")
    query_blobs = _query_blobs(embedder, previous.queries, queries)
    dimensions = dimensions or _width(query_blobs) or _probe_width(embedder)
    rows = [
        schema.CardRow(card.name, _relative_path(vault, card), card.digest, card_blobs[card.name])
        for card in cards
    ]
    model = schema.ModelRow(model_id, revision, dimensions, "cosine", 1)
    meta = schema.MetaRow(
        schema.SCHEMA_VERSION, _vault_label(vault), built_at or _now(), schema.TOOL_VERSION
    )
    _write_atomically(path, model, meta, rows, sorted(query_blobs.items()))
    removed = len(set(previous.cards) - {card.name for card in cards})
    return BuildResult(
        path, len(to_embed), len(cards) - len(to_embed), removed, len(query_blobs), notes
    )


def _reusable(previous: _Previous, card: Any) -> bytes | None:
    kept = previous.cards.get(card.name)
    return kept[1] if kept is not None and kept[0] == card.digest else None


def _embed_cards(
    embedder: Embedder,
    cards: Sequence[Any],
    dimensions: int | None,
    make_progress: Callable[[int, str], Progress],
) -> tuple[dict[str, bytes], int | None]:
    bar = make_progress(len(cards), "embedding cards")
    blobs: dict[str, bytes] = {}
    try:
        for start in range(0, len(cards), BUILD_BATCH):
            batch = cards[start : start + BUILD_BATCH]
            vectors = embedder.embed_passages([card.text for card in batch])
            dimensions = _same_width(vectors, dimensions)
            for card, vector in zip(batch, vectors, strict=True):
                blobs[card.name] = schema.vector_to_blob(vector)
            bar.advance(len(batch))
    finally:
        bar.finish()
    return blobs, dimensions


def _same_width(vectors: np.ndarray, dimensions: int | None) -> int:
    width = int(vectors.shape[1])
    if dimensions is not None and width != dimensions:
        raise SemanticIndexError(messages.embedder_wrong_dimensions(width, dimensions))
    return width


def _query_blobs(
    embedder: Embedder, kept: dict[str, bytes], wanted: Iterable[str]
) -> dict[str, bytes]:
    """Earlier queries stay; new ones are embedded with the query prefix, deduplicated."""
    blobs = dict(kept)
    new = sorted({text for text in wanted if text not in blobs})
    if new:
        for text, vector in zip(new, embedder.embed_queries(new), strict=True):
            blobs[text] = schema.vector_to_blob(vector)
    widths = {len(blob) for blob in blobs.values()}
    if len(widths) > 1:
        raise SemanticIndexError(
            messages.embedder_wrong_dimensions(min(widths) // 4, max(widths) // 4)
        )
    return blobs


def _width(blobs: dict[str, bytes]) -> int | None:
    return len(next(iter(blobs.values()))) // 4 if blobs else None


def _probe_width(embedder: Embedder) -> int:
    """An empty vault still needs a declared width for its model row."""
    return int(embedder.embed_queries(["dimensions"]).shape[1])


def _previous_build(path: Path, model_id: str, revision: str, notes: list[str]) -> _Previous:
    empty = _Previous({}, {}, None)
    if not files.is_regular(path):
        return empty
    try:
        connection = schema.connect_readonly(path)
        try:
            if schema.missing_tables(connection):
                return empty
            model = read_model(connection)
            if (model.id, model.revision) != (model_id, revision):
                notes.append(
                    messages.index_model_changed(
                        f"{model.id}@{model.revision}", f"{model_id}@{revision}"
                    )
                )
                return empty
            width = model.dimensions * 4
            cards = {
                str(name): (str(content_hash), blob)
                for name, content_hash, blob in connection.execute(
                    "SELECT name, content_hash, embedding FROM card"
                )
                if isinstance(blob, bytes) and len(blob) == width
            }
            queries = {
                str(text): blob
                for text, blob in connection.execute("SELECT text, embedding FROM query")
                if isinstance(blob, bytes) and len(blob) == width
            }
            return _Previous(cards, queries, model.dimensions)
        finally:
            connection.close()
    except (sqlite3.Error, SemanticIndexError):
        # An unreadable previous index is replaced whole; that is what a build is for.
        return empty


_SQLITE_HEADER = b"SQLite format 3\0"


def _refuse_foreign(path: Path) -> None:
    """An existing file that is not an SQLite database is the user's: never replaced."""
    try:
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise SemanticIndexError(messages.index_would_replace(str(path)))
        if not path.exists():
            return
        with open(path, "rb") as handle:
            head = handle.read(len(_SQLITE_HEADER))
    except OSError as error:
        raise SemanticIndexError(
            messages.index_unwritable(str(path), error.strerror or str(error))
        ) from None
    if head and head != _SQLITE_HEADER:
        raise SemanticIndexError(messages.index_would_replace(str(path)))


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SemanticIndexError(
            messages.index_unwritable(str(path), error.strerror or str(error))
        ) from None


def _write_atomically(
    path: Path,
    model: schema.ModelRow,
    meta: schema.MetaRow,
    cards: Sequence[schema.CardRow],
    queries: Sequence[tuple[str, bytes]],
) -> None:
    try:
        temporary = files.temporary_beside(path)
    except OSError as error:
        raise SemanticIndexError(
            messages.index_unwritable(str(path), error.strerror or str(error))
        ) from None
    try:
        connection = sqlite3.connect(temporary)
        try:
            schema.write_index(connection, model, meta, cards, queries)
        finally:
            connection.close()
        files.finish_replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, sqlite3.Error | OSError):
            raise SemanticIndexError(messages.index_unwritable(str(path), str(error))) from None
        raise
    clear_cache()


def verify_index(vault: VaultLike) -> VerifyResult:
    """Compare the index with the vault: stale, missing, extra and wrong-length cards."""
    path = index_path_of(vault)
    _check_index_file(path)
    try:
        connection = schema.connect_readonly(path)
        try:
            return _verify(connection, path, vault)
        finally:
            connection.close()
    except sqlite3.Error:
        raise SemanticIndexError(messages.index_not_a_database(str(path))) from None


def _verify(connection: sqlite3.Connection, path: Path, vault: VaultLike) -> VerifyResult:
    missing_tables = schema.missing_tables(connection)
    if missing_tables:
        raise SemanticIndexError(messages.index_missing_table(str(path), missing_tables[0]))
    meta = read_meta(connection)
    check_vault(meta.vault, Path(vault.root))
    model = read_model(connection)
    stored = {
        str(name): (str(content_hash), blob)
        for name, content_hash, blob in connection.execute(
            "SELECT name, content_hash, embedding FROM card"
        )
    }
    digests = {card.name: card.digest for card in vault.cards}
    (queries,) = connection.execute("SELECT count(*) FROM query").fetchone()
    width = model.dimensions * 4
    return VerifyResult(
        cards=len(stored),
        queries=int(queries),
        stale=sorted(n for n, (h, _) in stored.items() if n in digests and digests[n] != h),
        missing=sorted(set(digests) - set(stored)),
        extra=sorted(set(stored) - set(digests)),
        wrong_length=sorted(
            n for n, (_, b) in stored.items() if not isinstance(b, bytes) or len(b) != width
        ),
    )


def _check_index_file(path: Path) -> None:
    """An existing regular file (a FIFO would block SQLite's open forever)."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        raise SemanticIndexError(messages.index_missing(str(path))) from None
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise SemanticIndexError(messages.index_unreadable(str(path), reason)) from None
    if not stat.S_ISREG(status.st_mode):
        raise SemanticIndexError(messages.index_unreadable(str(path), "not a regular file"))


def inspect_index(path: Path) -> InspectResult:
    _check_index_file(path)
    try:
        connection = schema.connect_readonly(path)
        try:
            missing_tables = schema.missing_tables(connection)
            if missing_tables:
                raise SemanticIndexError(messages.index_missing_table(str(path), missing_tables[0]))
            meta, model = read_meta(connection), read_model(connection)
            (cards,) = connection.execute("SELECT count(*) FROM card").fetchone()
            queries = [
                str(row[0]) for row in connection.execute("SELECT text FROM query ORDER BY text")
            ]
            return InspectResult(path, model, meta, int(cards), queries)
        finally:
            connection.close()
    except sqlite3.Error:
        raise SemanticIndexError(messages.index_not_a_database(str(path))) from None


def _relative_path(vault: VaultLike, card: Any) -> str:
    """Vault-relative posix path, whatever form the loader gives."""
    path = Path(card.path)
    root = Path(vault.root)
    for base in (root, root.resolve()):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return path.as_posix()


def _vault_label(vault: VaultLike) -> str:
    """The vault's folder name: portable, and what the reader's same-final-component rule accepts."""
    return Path(vault.root).resolve().name


def _now() -> str:
    return (
        datetime.datetime.now(datetime.UTC)
        .replace(microsecond=0)
        .isoformat()
        .replace("+00:00", "Z")
    )
