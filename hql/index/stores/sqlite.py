"""The schema v1 SQLite file as a store: every vector in memory, scanned exactly.

Reading goes through `hql.index.reader` (one cached matrix per file revision);
`upsert` and `delete` change the file in one transaction under the build lock.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import weakref
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hql import files, messages
from hql.index import pins, schema
from hql.index.config import SemanticsConfig, resolve_index_path
from hql.index.errors import SemanticIndexError
from hql.index.reader import SemanticIndex, VaultLike, clear_cache
from hql.index.stores import CardVectors, SearchFilter, SearchMethod, SearchResult

if TYPE_CHECKING:
    import numpy as np

    from hql.index.producer import VerifyResult

STORE = "sqlite"
# How a scan searched, without and with `exact` asked (records: made once, shared).
_SCANNED = (SearchMethod(STORE, False, {}, False), SearchMethod(STORE, False, {}, True))

# A loaded vault's resolved index path: resolving stats every part of it, a query need not.
_PATHS: weakref.WeakKeyDictionary[Any, Path] = weakref.WeakKeyDictionary()


def index_path(vault: VaultLike, config: SemanticsConfig) -> Path:
    try:
        found = _PATHS.get(vault)
    except TypeError:  # a vault-like object that cannot be weakly referenced
        found = None
    if found is None:
        found = resolve_index_path(Path(vault.root), config.require_index())
        with contextlib.suppress(TypeError):
            _PATHS[vault] = found
    return found


class SqliteStore:
    """One vault's schema v1 index file."""

    kind = STORE

    def __init__(self, path: Path, vault_root: Path) -> None:
        self.path = path
        self.location = str(path)
        self._vault_root = vault_root
        self._index: SemanticIndex | None = SemanticIndex.open(path, vault_root)

    @property
    def index(self) -> SemanticIndex:
        """The checked index as the file is now (read again only when asked after a write)."""
        if self._index is None:
            self._index = SemanticIndex.open(self.path, self._vault_root)
        return self._index

    @classmethod
    def for_vault(cls, vault: VaultLike, config: SemanticsConfig) -> SqliteStore:
        return cls(index_path(vault, config), Path(vault.root))

    @property
    def model(self) -> schema.ModelRow:
        return self.index.model_row

    def verify(self, vault: VaultLike) -> VerifyResult:
        from hql.index.producer import verify_index

        return verify_index(vault)

    def digests(self) -> dict[str, str]:
        return self.index.digests()

    def query_vector(self, text: str) -> np.ndarray | None:
        return self.index.query_vector(text)

    def add_query(self, text: str, vector: np.ndarray) -> str | None:
        return self.index.add_query(text, vector)

    def search(
        self,
        vector: np.ndarray,
        k: int | None,
        filter: SearchFilter | None = None,
        exact: bool = False,
    ) -> SearchResult:
        cards = filter.cards if filter is not None else None
        hits, warnings, sections = self.index.rank_sections(vector, cards, k)
        return SearchResult(hits, sections, warnings, _SCANNED[exact])

    def upsert(self, cards: Sequence[CardVectors]) -> None:
        width = self.model.dimensions
        for card in cards:
            for vector in (card.vector, *(section.vector for section in card.sections)):
                if len(vector) != width:
                    raise SemanticIndexError(messages.embedder_wrong_dimensions(len(vector), width))
        with self._writing() as connection:
            if not schema.has_sections(connection):
                connection.execute(schema.SECTION_DDL)
            for card in cards:
                connection.execute(
                    "INSERT OR REPLACE INTO card (name, path, content_hash, embedding) "
                    "VALUES (?, ?, ?, ?)",
                    (card.name, card.path, card.digest, schema.vector_to_blob(card.vector)),
                )
                connection.execute("DELETE FROM section WHERE card = ?", (card.name,))
                connection.executemany(
                    "INSERT INTO section (card, ordinal, heading, line_start, line_end, embedding) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (
                            card.name,
                            section.ordinal,
                            json.dumps(list(section.heading), ensure_ascii=False),
                            section.line_start,
                            section.line_end,
                            schema.vector_to_blob(section.vector),
                        )
                        for section in card.sections
                    ],
                )
            pins.seal(connection, self.model, [card.name for card in cards])

    def delete(self, names: Collection[str]) -> None:
        with self._writing() as connection:
            sections = schema.has_sections(connection)
            for name in names:
                connection.execute("DELETE FROM card WHERE name = ?", (name,))
                if sections:
                    connection.execute("DELETE FROM section WHERE card = ?", (name,))
            pins.seal(connection, self.model, list(names))

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One transaction under the build lock; the reader's cache forgets the old revision."""
        try:
            with files.locked(self.path.parent):
                connection = sqlite3.connect(self.path)
                try:
                    with connection:
                        yield connection
                finally:
                    connection.close()
        except sqlite3.Error as error:
            raise SemanticIndexError(
                messages.index_unwritable(str(self.path), str(error))
            ) from None
        finally:
            clear_cache()
        self._index = None  # a writer that writes again need not read the file in between
