"""The producer: `hql index build`, `verify` and `inspect` over schema v1 (reference §12.4).

A build is incremental (a card whose text digest is unchanged keeps its
vectors) and atomic: it writes a temporary file beside the index and renames it
over the old one, so a crash or Ctrl-C leaves the previous index intact.

Each card is cut into sections (`hql.index.sections`) that fit the model's
window; every section gets a vector, and the card's own row the normalised
mean of them. Sections are embedded on every core (`hql.index.workers`).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import sqlite3
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from hql import files, messages
from hql.index import pins, schema
from hql.index.config import (
    QUESTION_DIGEST,
    EmbedderConfig,
    SemanticsConfig,
    load_semantics_config,
    question_key,
    resolve_index_path,
)
from hql.index.embedders import Embedder, make_embedder, max_tokens_of, token_counter
from hql.index.errors import SemanticIndexError
from hql.index.reader import (
    VaultLike,
    check_vault,
    clear_cache,
    raw_config,
    read_meta,
    read_model,
)
from hql.index.sections import DEFAULT_MAX_TOKENS, Section, body_start_line, split_card
from hql.index.workers import Progress, embed_passages, machine_cores

if TYPE_CHECKING:
    import numpy as np

    from hql.index.stores import CardVectors


@dataclass(slots=True)
class BuildResult:
    path: Path
    embedded: int
    reused: int
    removed: int
    queries: int
    notes: list[str] = field(default_factory=list)
    sections: int = 0  # sections embedded by this build
    seconds: float = 0.0  # spent embedding them
    workers: int = 1


@dataclass(slots=True)
class VerifyResult:
    cards: int
    queries: int
    stale: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    wrong_length: list[str] = field(default_factory=list)
    sections: int | None = None  # None: an index without a section table (card vectors only)
    unsectioned: list[str] = field(default_factory=list)
    orphan_sections: list[str] = field(default_factory=list)
    bad_vectors: list[str] = field(default_factory=list)  # not unit vectors (NaN, inf, zero, …)
    damaged_sections: list[str] = field(default_factory=list)  # rows not as HQL writes them
    bad_queries: list[str] = field(default_factory=list)
    changed_vectors: list[str] = field(default_factory=list)  # not what their pins record
    manifest_mismatch: bool = False  # the rows are not what the build manifest records
    changed_queries: list[str] = field(default_factory=list)
    pinned: bool = True  # False: an index without pins (the reference's)

    @property
    def ok(self) -> bool:
        return not (
            self.changed_vectors
            or self.manifest_mismatch
            or self.changed_queries
            or self.stale
            or self.missing
            or self.extra
            or self.wrong_length
            or self.unsectioned
            or self.orphan_sections
            or self.bad_vectors
            or self.damaged_sections
            or self.bad_queries
        )


@dataclass(slots=True)
class InspectResult:
    path: Path
    model: schema.ModelRow
    meta: schema.MetaRow
    cards: int
    queries: list[str]
    sections: int | None = None  # None: no section table
    sectioned_cards: int = 0


@dataclass(slots=True)
class _Previous:
    """What an earlier build of the same model left that may be reused."""

    cards: dict[str, tuple[str, bytes]]
    queries: dict[str, bytes]
    dimensions: int | None
    sections: dict[str, list[schema.SectionRow]] = field(default_factory=dict)
    damaged_queries: list[str] = field(default_factory=list)  # embedded again


def index_path_of(vault: VaultLike) -> Path:
    config = load_semantics_config(raw_config(vault))
    return resolve_index_path(Path(vault.root), config.require_index(for_producer=True))


def build_index(
    vault: VaultLike,
    queries: Iterable[str] = (),
    embedder: Embedder | None = None,
    built_at: str | None = None,
    stream: TextIO | None = None,
    workers: int | None = None,
) -> BuildResult:
    """Bring the vault's index up to date with its cards (and `queries`), atomically.

    `stream` receives the progress (default stderr); `workers` overrides
    `[semantics.embedder] workers` (a local model's worker processes).
    """
    config = load_semantics_config(raw_config(vault))
    if config.store == "qdrant":
        return build_qdrant(vault, config, queries, embedder, built_at, stream, workers)
    path = resolve_index_path(Path(vault.root), config.require_index(for_producer=True))
    # Worker processes rebuild the embedder from the configuration, so only a configured one runs there.
    configured = config.require_embedder() if embedder is None else None
    embedder = embedder or make_embedder(config.require_embedder())
    wanted_workers = workers or (configured.workers if configured else None) or machine_cores()
    _refuse_foreign(path)
    _make_parent(path)
    # Builds of one index take turns: the second reads what the first wrote, so
    # its cards and queries are merged, never lost to the last rename.
    with files.locked(path.parent):
        return _build_locked(
            vault, path, queries, embedder, built_at, stream, configured, wanted_workers
        )


def _build_locked(
    vault: VaultLike,
    path: Path,
    queries: Iterable[str],
    embedder: Embedder,
    built_at: str | None,
    stream: TextIO | None,
    configured: EmbedderConfig | None,
    wanted_workers: int,
) -> BuildResult:
    _refuse_foreign(path)
    model_id, revision = embedder.model_id, embedder.revision
    notes: list[str] = []
    previous = _previous_build(path, model_id, revision, notes)
    cards = sorted(vault.cards, key=lambda card: card.name)
    to_embed = [card for card in cards if _reusable(previous, card) is None]
    sections, vectors, texts, seconds, used_workers = _embed_cards(
        vault, embedder, to_embed, stream, configured, wanted_workers
    )
    dimensions = _same_width(vectors, previous.dimensions) if texts else previous.dimensions
    card_blobs, section_rows = _card_vectors(to_embed, sections, vectors)
    for card in cards:
        if card.name not in card_blobs:
            card_blobs[card.name] = _reusable(previous, card) or b""
            section_rows.extend(previous.sections.get(card.name, []))
    query_blobs = _query_blobs(
        embedder, previous.queries, [*queries, *previous.damaged_queries], _question_key(vault)
    )
    dimensions = dimensions or _width(query_blobs) or _probe_width(embedder)
    rows = [
        schema.CardRow(card.name, _relative_path(vault, card), card.digest, card_blobs[card.name])
        for card in cards
    ]
    model = schema.ModelRow(model_id, revision, dimensions, "cosine", 1)
    meta = schema.MetaRow(
        schema.SCHEMA_VERSION, _vault_label(vault), built_at or _now(), schema.TOOL_VERSION
    )
    section_rows.sort(key=lambda row: (row.card, row.ordinal))
    _write_atomically(path, model, meta, rows, sorted(query_blobs.items()), section_rows)
    removed = len(set(previous.cards) - {card.name for card in cards})
    return BuildResult(
        path,
        len(to_embed),
        len(cards) - len(to_embed),
        removed,
        len(query_blobs),
        notes,
        sections=len(texts),
        seconds=seconds,
        workers=used_workers,
    )


def _reusable(previous: _Previous, card: Any) -> bytes | None:
    kept = previous.cards.get(card.name)
    return kept[1] if kept is not None and kept[0] == card.digest else None


def _sections(
    vault: VaultLike, embedder: Embedder, cards: Sequence[Any]
) -> dict[str, list[Section]]:
    """Each card cut to the model's window (its own token count; whole when it fits)."""
    window = max_tokens_of(embedder) or DEFAULT_MAX_TOKENS
    count = token_counter(embedder)
    found: dict[str, list[Section]] = {}
    for card in cards:
        body = getattr(card, "body", None)
        if not isinstance(body, str):
            found[card.name] = [Section(0, (), 1, 1, card.text)]
            continue
        title = getattr(card, "title", "") or card.name
        first = body_start_line(_file_text(vault, card), body)
        text = card.text
        blanked = getattr(card, "section_body", body)
        if blanked is not body:  # rendered answers are not ranked; their lines keep their places
            searched = getattr(card, "search_body", body)
            preamble = text[: len(text) - len(searched)] if text.endswith(searched) else ""
            text, body = preamble + blanked, blanked
        found[card.name] = split_card(title, text, body, first, window, count)
    return found


def _file_text(vault: VaultLike, card: Any) -> str | None:
    path = Path(card.path)
    if not path.is_absolute():
        path = Path(vault.root) / path
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _card_vectors(
    cards: Sequence[Any], sections: dict[str, list[Section]], vectors: np.ndarray
) -> tuple[dict[str, bytes], list[schema.SectionRow]]:
    """Each card's sections as rows, and its own vector: the normalised mean of its sections'."""
    import numpy as np

    blobs: dict[str, bytes] = {}
    rows: list[schema.SectionRow] = []
    position = 0
    for card in cards:
        parts = sections[card.name]
        block = vectors[position : position + len(parts)]
        position += len(parts)
        mean = block.astype(np.float64).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        whole = len(parts) == 1 or norm == 0.0  # one section: its very vector
        blobs[card.name] = schema.vector_to_blob(block[0] if whole else mean / norm)
        for section, vector in zip(parts, block, strict=True):
            rows.append(
                schema.SectionRow(
                    card.name,
                    section.ordinal,
                    json.dumps(list(section.heading), ensure_ascii=False),
                    section.line_start,
                    section.line_end,
                    schema.vector_to_blob(vector),
                )
            )
    return blobs, rows


def _same_width(vectors: np.ndarray, dimensions: int | None) -> int:
    width = int(vectors.shape[1])
    if dimensions is not None and width != dimensions:
        raise SemanticIndexError(messages.embedder_wrong_dimensions(width, dimensions))
    return width


def _query_blobs(
    embedder: Embedder,
    kept: dict[str, bytes],
    wanted: Iterable[str],
    key: Callable[[str], str] = str,
) -> dict[str, bytes]:
    """Earlier queries stay; new ones are embedded with the query prefix, deduplicated, and
    stored under `key(text)` (the text, or its digest). A damaged question stored by its
    digest cannot be embedded again (its text is not kept): it is left out."""
    blobs = dict(kept)
    new = sorted(
        {text for text in wanted if key(text) not in blobs and not text.startswith(QUESTION_DIGEST)}
    )
    if new:
        for text, vector in zip(new, embedder.embed_queries(new), strict=True):
            blobs[key(text)] = schema.vector_to_blob(vector)
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
            sections = _previous_sections(connection, width)
            # A card is reused only with its sections (an index without them is embedded anew).
            cards = {
                str(name): (str(content_hash), blob)
                for name, content_hash, blob in connection.execute(
                    "SELECT name, content_hash, embedding FROM card"
                )
                if schema.usable_blob(blob, width) and str(name) in sections
            }
            rows = connection.execute("SELECT text, embedding FROM query").fetchall()
            damaged = _damaged(rows, width)
            if pins.is_pinned(connection):
                # Vectors changed since their build are never reused: they are embedded again.
                for name in pins.unpinned_cards(connection):
                    cards.pop(name, None)
                damaged |= set(pins.unpinned_queries(connection))
            queries = {
                str(text): blob
                for text, blob in rows
                if isinstance(blob, bytes) and len(blob) == width and str(text) not in damaged
            }
            return _Previous(cards, queries, model.dimensions, sections, sorted(damaged))
        finally:
            connection.close()
    except SemanticIndexError:
        return empty  # another schema or model rows: replaced whole, as a build is for
    except (sqlite3.Error, UnicodeDecodeError):
        # An unreadable previous index is replaced whole; that is what a build is for.
        notes.append(messages.index_rebuilt_unreadable(str(path)))
        return empty


def _refuse_foreign(path: Path) -> None:
    """An existing file that is not an SQLite database is the user's: never replaced."""
    try:
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise SemanticIndexError(messages.index_would_replace(str(path)))
        foreign = path.exists() and schema.is_foreign(path)
    except OSError as error:
        raise SemanticIndexError(
            messages.index_unwritable(str(path), error.strerror or str(error))
        ) from None
    if foreign:
        raise SemanticIndexError(messages.index_would_replace(str(path)))


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SemanticIndexError(
            messages.index_unwritable(str(path), error.strerror or str(error))
        ) from None


def _previous_sections(
    connection: sqlite3.Connection, width: int
) -> dict[str, list[schema.SectionRow]]:
    """The earlier build's sections by card; a card with any unusable section has none."""
    if not schema.has_sections(connection):
        return {}
    found: dict[str, list[schema.SectionRow]] = {}
    broken: set[str] = set()
    query = (
        "SELECT card, ordinal, heading, line_start, line_end, embedding FROM section "
        "ORDER BY card, ordinal"
    )
    for card, ordinal, heading, start, end, blob in connection.execute(query):
        usable = schema.usable_section_row(ordinal, heading, start, end)
        if not (usable and schema.usable_blob(blob, width)):
            broken.add(str(card))  # embedded again: a build repairs what a read refuses
            continue
        row = schema.SectionRow(str(card), ordinal, str(heading or "[]"), start, end, blob)
        found.setdefault(str(card), []).append(row)
    return {card: rows for card, rows in found.items() if card not in broken}


def _write_atomically(
    path: Path,
    model: schema.ModelRow,
    meta: schema.MetaRow,
    cards: Sequence[schema.CardRow],
    queries: Sequence[tuple[str, bytes]],
    sections: Sequence[schema.SectionRow] = (),
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
            schema.write_index(connection, model, meta, cards, queries, sections)
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
    config = load_semantics_config(raw_config(vault))
    if config.store == "qdrant":
        from hql.index.stores.qdrant import QdrantStore

        return QdrantStore.for_vault(vault, config).verify(vault)
    path = index_path_of(vault)
    _check_index_file(path)
    try:
        connection = schema.connect_readonly(path)
        try:
            return _verify(connection, path, vault)
        finally:
            connection.close()
    except (sqlite3.Error, UnicodeDecodeError):
        raise SemanticIndexError(schema.not_a_database(path)) from None


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
    section_count: int | None = None
    unsectioned: list[str] = []
    orphans: list[str] = []
    bad_sections: set[str] = set()
    damaged_rows: set[str] = set()
    damaged = _damaged(((name, blob) for name, (_, blob) in stored.items()), width)
    if schema.has_sections(connection):
        owners: dict[str, int] = {}
        rows = "SELECT card, ordinal, heading, line_start, line_end, embedding FROM section"
        for card, ordinal, heading, start, end, blob in connection.execute(rows):
            owners[str(card)] = owners.get(str(card), 0) + 1
            if not isinstance(blob, bytes) or len(blob) != width:
                bad_sections.add(str(card))
            if not schema.usable_section_row(ordinal, heading, start, end):
                damaged_rows.add(str(card))
        damaged |= _damaged(connection.execute("SELECT card, embedding FROM section"), width)
        section_count = sum(owners.values())
        unsectioned = sorted(set(stored) - set(owners))
        orphans = sorted(set(owners) - set(stored))
    wrong_queries = {
        str(text)
        for text, blob in connection.execute("SELECT text, embedding FROM query")
        if not isinstance(blob, bytes) or len(blob) != width
    }
    damaged_queries = _damaged(connection.execute("SELECT text, embedding FROM query"), width)
    wrong_lengths = {
        n for n, (_, b) in stored.items() if not isinstance(b, bytes) or len(b) != width
    } | bad_sections
    pinned = pins.is_pinned(connection)
    every_changed = pins.unpinned_cards(connection) if pinned else []
    shown = wrong_lengths | damaged | damaged_rows  # already named, whatever their pins say
    changed = [name for name in every_changed if name not in shown]
    recorded = pins.manifest_digest(connection) if pinned else None
    mismatch = pinned and recorded != pins.index_digest(pins.read_rows(connection, model))
    return VerifyResult(
        cards=len(stored),
        queries=int(queries),
        stale=sorted(n for n, (h, _) in stored.items() if n in digests and digests[n] != h),
        missing=sorted(set(digests) - set(stored)),
        extra=sorted(set(stored) - set(digests)),
        wrong_length=sorted(wrong_lengths),
        sections=section_count,
        unsectioned=unsectioned,
        orphan_sections=orphans,
        bad_vectors=sorted(damaged),
        damaged_sections=sorted(damaged_rows),
        bad_queries=sorted(wrong_queries | damaged_queries),
        changed_vectors=changed,
        manifest_mismatch=mismatch and not every_changed,
        changed_queries=[
            text
            for text in (pins.unpinned_queries(connection) if pinned else [])
            if text not in wrong_queries | damaged_queries
        ],
        pinned=pinned,
    )


def _damaged(rows: Iterable[tuple[object, object]], width: int, batch: int = 4096) -> set[str]:
    """Owners of the full-width vectors that are not unit vectors, checked a batch at a time."""
    import numpy as np

    found: set[str] = set()
    owners: list[str] = []
    blobs: list[bytes] = []

    def check() -> None:
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), width // 4)
        found.update(owners[row] for row in schema.unusable_rows(matrix).tolist())
        owners.clear()
        blobs.clear()

    for owner, blob in rows:
        if isinstance(blob, bytes) and len(blob) == width:
            owners.append(str(owner))
            blobs.append(blob)
            if len(blobs) >= batch:
                check()
    if blobs:
        check()
    return found


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
            sections: int | None = None
            sectioned = 0
            if schema.has_sections(connection):
                sections, sectioned = connection.execute(
                    "SELECT count(*), count(DISTINCT card) FROM section"
                ).fetchone()
            return InspectResult(
                path, model, meta, int(cards), queries, sections, int(sectioned or 0)
            )
        finally:
            connection.close()
    except (sqlite3.Error, UnicodeDecodeError):
        raise SemanticIndexError(schema.not_a_database(path)) from None


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


# --- a build into a store that is written point by point (Qdrant) ------------------------


def _embed_cards(
    vault: VaultLike,
    embedder: Embedder,
    to_embed: Sequence[Any],
    stream: TextIO | None,
    configured: EmbedderConfig | None,
    wanted_workers: int,
) -> tuple[dict[str, list[Section]], np.ndarray, list[str], float, int]:
    """Split the cards into sections and embed them with progress: (sections, vectors,
    section texts, seconds, workers used). Both stores build from this."""
    progress = Progress("embedding sections", stream)
    if to_embed:
        progress.begin(len(to_embed), messages.index_loading_model())
    sections = _sections(vault, embedder, to_embed)
    texts = [section.text for card in to_embed for section in sections[card.name]]
    progress.begin(len(texts), progress.status)
    vectors, used_workers = embed_passages(
        embedder, texts, progress, configured, wanted_workers if configured else 1
    )
    seconds = progress.seconds()
    if texts:
        progress.finish(
            messages.index_build_progress_summary(len(texts), len(to_embed), seconds, used_workers)
        )
    return sections, vectors, texts, seconds, used_workers


def card_vectors_for(
    vault: VaultLike, embedder: Embedder, cards: Sequence[Any]
) -> list[CardVectors]:
    """These cards' sections embedded here and now, as a store takes them: what a note
    written through HQL needs (`[semantics] embed_on_write`), without worker processes
    or progress lines."""
    import io

    sections, vectors, *_ = _embed_cards(vault, embedder, cards, io.StringIO(), None, 1)
    return _store_cards(vault, cards, sections, vectors)


def build_qdrant(
    vault: VaultLike,
    config: SemanticsConfig,
    queries: Iterable[str] = (),
    embedder: Embedder | None = None,
    built_at: str | None = None,
    stream: TextIO | None = None,
    workers: int | None = None,
) -> BuildResult:
    """Bring the vault's Qdrant collection up to date: embed changed cards, upsert, delete the gone.

    Incremental by digest, card by card: a build that stops halfway leaves every card
    either as it was or as it is now, and the next build finishes the rest.
    """
    from hql.index.stores.qdrant import QdrantStore

    configured = config.require_embedder() if embedder is None else None
    embedder = embedder or make_embedder(config.require_embedder())
    wanted_workers = workers or (configured.workers if configured else None) or machine_cores()
    model_id, revision = embedder.model_id, embedder.revision
    notes: list[str] = []
    store = QdrantStore.for_build(vault, config, model_id, revision, notes)
    stored = store.digests() if store is not None else {}
    cards = sorted(vault.cards, key=lambda card: card.name)
    to_embed = [card for card in cards if stored.get(card.name) != card.digest]
    sections, vectors, texts, seconds, used_workers = _embed_cards(
        vault, embedder, to_embed, stream, configured, wanted_workers
    )
    stored_queries = set(store.queries()) if store is not None else set()
    new_queries = sorted({text for text in queries if text not in stored_queries})
    query_vectors = embedder.embed_queries(new_queries) if new_queries else None
    if texts:
        dimensions = int(vectors.shape[1])
    elif query_vectors is not None:
        dimensions = int(query_vectors.shape[1])
    elif store is not None:
        dimensions = store.model.dimensions
    else:
        dimensions = _probe_width(embedder)
    stamp = built_at or _now()
    if store is None:
        model = schema.ModelRow(model_id, revision, dimensions, "cosine", 1)
        store = QdrantStore.create(vault, config, model, stamp)
    store.check_dimensions(dimensions)
    store.upsert(_store_cards(vault, to_embed, sections, vectors))
    embedded = {card.name for card in to_embed}
    paths = store.stored_paths() if len(embedded) < len(cards) else {}
    for card in cards:
        path = _relative_path(vault, card)
        if card.name not in embedded and paths.get(card.name, path) != path:
            store.relocate(
                card.name, path, tuple(getattr(card, "tags", ())), getattr(card, "metadata", None)
            )
    gone = set(stored) - {card.name for card in cards}
    store.delete(gone)
    if query_vectors is not None:
        store.add_queries(dict(zip(new_queries, query_vectors, strict=True)))
    store.finish_build(vault, stamp)
    return BuildResult(
        Path(store.location),
        len(to_embed),
        len(cards) - len(to_embed),
        len(gone),
        len(stored_queries) + len(new_queries),
        notes,
        sections=len(texts),
        seconds=seconds,
        workers=used_workers,
    )


def _store_cards(
    vault: VaultLike, cards: Sequence[Any], sections: dict[str, list[Section]], vectors: np.ndarray
) -> list[CardVectors]:
    """The embedded cards as a store takes them, with the payload a filter may read."""
    from hql.index.stores import CardVectors, SectionVector

    blobs, rows = _card_vectors(cards, sections, vectors)
    by_card: dict[str, list[SectionVector]] = {}
    for row in rows:
        by_card.setdefault(row.card, []).append(
            SectionVector(
                row.ordinal,
                tuple(json.loads(row.heading)),
                row.line_start,
                row.line_end,
                schema.blob_to_vector(row.embedding),
            )
        )
    return [
        CardVectors(
            card.name,
            _relative_path(vault, card),
            card.digest,
            schema.blob_to_vector(blobs[card.name]),
            tuple(by_card.get(card.name, ())),
            tags=tuple(getattr(card, "tags", ()) or ()),
            metadata=getattr(card, "metadata", None),
        )
        for card in cards
    ]


def _question_key(vault: VaultLike) -> Callable[[str], str]:
    """How this vault's index keeps the questions it is given (`store_question_text`)."""
    import functools

    from hql.index.reader import raw_config

    return functools.partial(question_key, config=load_semantics_config(raw_config(vault)))
