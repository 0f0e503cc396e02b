"""After a write: the catalogue, the bm25 store and (when asked for) the vectors, up to date at once.

`refresh(root, names)` loads the vault (the catalogue keeps a row per file by
size, modification time, inode and change time, so the load reads only what
changed and writes its rows), builds the bm25 index over it (its store is keyed per card by
content digest: only the changed cards are analysed, and the store is saved
before this returns; after edits its writer recorded without walking the vault, the
edited cards' analyses are only added to the store's delta, which the next build
takes them from), and, with `[semantics] embed_on_write = true`, an embedder
configured and an index already built, embeds the named cards' sections and
writes them into the store (`upsert`: SQLite, the HNSW graph beside it, Qdrant).

Refreshes of one vault take turns under the lock of its `.hql/` folder, so the
last one to run has seen every write that finished before it began: the stores
end as the files are, whatever order concurrent writers finish in.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hql import files, messages
from hql.deadline import shielded

if TYPE_CHECKING:
    from hql.index.embedders import Embedder
    from hql.vault import Vault


@dataclass
class Freshness:
    """What a refresh brought up to date."""

    catalogue: bool = False
    bm25: bool = False
    embedded: list[str] = field(default_factory=list)  # cards whose vectors were written
    removed: list[str] = field(default_factory=list)  # cards whose vectors were removed
    vectors: str | None = None  # why no vectors were written, when none were
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "catalogue": self.catalogue,
            "bm25": self.bm25,
            "embedded": list(self.embedded),
            "seconds": round(self.seconds, 4),
        }
        if self.removed:
            answer["vectors_removed"] = list(self.removed)
        if self.vectors is not None:
            answer["vectors"] = self.vectors
        if self.problems:
            answer["problems"] = list(self.problems)
        return answer


def refresh(
    root: str | os.PathLike[str],
    names: Sequence[str] = (),
    gone: Sequence[str] = (),
    edited: Mapping[str, bytes | None] | Sequence[str] = (),
    listed: bool = False,
) -> Freshness:
    """Bring the vault's catalogue, bm25 store and (when configured) vectors up to date.

    `edited` names the vault-relative files whose content alone changed (nothing added,
    moved or removed), each perhaps with its bytes before: the catalogue then takes just
    those files (`hql.vault.edits`). `listed`: the caller made these edits and nothing
    else, so the vault is not walked (`record_edits(listed=True)`); what others changed
    meanwhile is seen by the next load, which walks."""
    started = time.perf_counter()
    fresh = Freshness()
    state_dir = Path(root) / ".hql"
    with _turn(state_dir):
        from hql.api import HostError, extension_metadata, open_listed_vault, open_vault
        from hql.vault.edits import record_edits

        try:
            vault = None
            if edited:
                metadata = extension_metadata()
                recorded = listed and record_edits(root, edited, metadata, listed=True)
                if recorded:
                    vault = open_listed_vault(root)
                else:
                    record_edits(root, edited, metadata)
            edits_only = vault is not None and not gone
            if vault is None:
                vault = open_vault(root)
        except HostError as error:
            fresh.problems.append(str(error))
            return fresh
        fresh.catalogue = files.state_dir_contained(state_dir)
        try:
            if not (edits_only and bm25_delta(vault, names)):
                bm25_store(vault)
            fresh.bm25 = fresh.catalogue
        except Exception as error:  # noqa: BLE001 - the write stands; say what did not follow
            fresh.problems.append(messages.note_refresh_failed("bm25", str(error)))
        _vectors(vault, names, gone, fresh)
    fresh.seconds = time.perf_counter() - started
    return fresh


def refresh_seen(root: str | os.PathLike[str], relpaths: Sequence[str]) -> Freshness:
    """After a watcher saw these vault-relative notes written, moved or removed (by anyone):
    the same refresh as after a write through `hql.notes`."""
    from pathlib import PurePosixPath

    present = [relpath for relpath in relpaths if (Path(root) / relpath).is_file()]
    gone = [PurePosixPath(relpath).stem for relpath in relpaths if relpath not in present]
    names = [PurePosixPath(relpath).stem for relpath in present]
    return refresh(root, names, gone, present)


LOCK_NAME = "notes.lock"


@contextlib.contextmanager
def _turn(state_dir: Path) -> Any:
    """Hold the refresh lock: a lock file of its own, because the stores lock the folder
    `.hql/` itself while they write (a second lock on it here would wait for itself)."""
    if not files.state_dir_contained(state_dir):
        yield
        return
    try:
        import fcntl

        state_dir.mkdir(exist_ok=True)
        descriptor = os.open(state_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except (ImportError, OSError):  # no locks here: refreshes still end as the files are
        yield
        return
    with shielded():  # a stop must not leave the lock held (hql.deadline)
        try:
            with contextlib.suppress(OSError):
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)


def bm25_store(vault: Vault) -> Any:
    """The vault's bm25 index, its store under `.hql/` saved before returning."""
    from hql.search.bm25 import Bm25Index
    from hql.search.fields import search_fields_for
    from hql.text.analyzer import Analyzer

    analyzer = Analyzer.from_config(vault.config.section("search"))
    fields = search_fields_for(vault)[0]
    return Bm25Index.build(
        vault.lazy_cards(), analyzer, vault.state_dir, background_save=False, fields=fields
    )


def bm25_delta(vault: Vault, names: Sequence[str]) -> bool:
    """The named cards' analyses added to the bm25 store's delta, the store itself left as
    it is (`hql.search.bm25.record_analyses`); False: build the store instead."""
    from hql.search.bm25 import record_analyses
    from hql.search.fields import search_fields_for
    from hql.text.analyzer import Analyzer

    found = [vault.card_alone(name) for name in dict.fromkeys(names)]
    cards = [card for card in found if card is not None]
    if not cards or len(cards) != len(found):
        return False
    section = vault.config.section("search")
    key = json.dumps(section, sort_keys=True, default=repr)
    analyzer = _ANALYZERS.get(key)
    if analyzer is None:
        _ANALYZERS.clear()  # one vault's at a time: a writer writes to one vault
        analyzer = _ANALYZERS[key] = Analyzer.from_config(section)
    fields = search_fields_for(vault)[0]
    return record_analyses(cards, analyzer, vault.state_dir, fields=fields)


# The analyser of a `[search]` table, built once per process (building one folds every stop
# word and synonym: a tenth of a write's time); it depends on the table's data alone.
_ANALYZERS: dict[str, Any] = {}


# --- vectors --------------------------------------------------------------------------

# One embedder per configuration for the life of the process (a server writes many notes).
_EMBEDDERS: dict[Any, Embedder] = {}


def _vectors(vault: Any, names: Sequence[str], gone: Sequence[str], fresh: Freshness) -> None:
    from hql.index.config import load_semantics_config
    from hql.index.errors import SemanticIndexError
    from hql.index.reader import raw_config

    try:
        config = load_semantics_config(raw_config(vault))
    except SemanticIndexError as error:
        fresh.vectors = error.message
        return
    if not config.embed_on_write:
        fresh.vectors = messages.note_vectors_off()
        return
    if config.embedder is None or config.index is None and config.store == "sqlite":
        fresh.vectors = messages.note_vectors_unconfigured()
        return
    try:
        embed_now(vault, names, gone, fresh, config)
    except SemanticIndexError as error:
        fresh.vectors = error.message
    except Exception as error:  # noqa: BLE001 - the write stands; say what did not follow
        fresh.problems.append(messages.note_refresh_failed("vectors", str(error)))


def embed_now(
    vault: Any,
    names: Sequence[str],
    gone: Sequence[str],
    fresh: Freshness,
    config: Any,
    embedder: Embedder | None = None,
) -> None:
    """Embed the named cards whose stored digest differs and write them into the store."""
    from hql.index.embedders import make_embedder
    from hql.index.producer import card_vectors_for
    from hql.index.stores import after_build, open_store

    if config.store == "sqlite" and not _index_exists(vault, config):
        fresh.vectors = messages.note_vectors_no_index()
        return
    store = open_store(vault, config)
    if embedder is None:
        key = repr(config.embedder)
        embedder = _EMBEDDERS.get(key)
        if embedder is None:
            embedder = _EMBEDDERS[key] = make_embedder(config.require_embedder())
    model = store.model
    if (model.id, model.revision) != (embedder.model_id, embedder.revision):
        fresh.vectors = messages.note_vectors_other_model(model.id, embedder.model_id)
        return
    stored = store.digests()
    cards = [
        card
        for card in (vault.card_alone(name) for name in dict.fromkeys(names))
        if card is not None and stored.get(card.name) != card.digest
    ]
    if cards:
        store.upsert(card_vectors_for(vault, embedder, cards))
        fresh.embedded = [card.name for card in cards]
    leaving = [name for name in gone if name in stored and vault.card(name) is None]
    if leaving:
        store.delete(leaving)
        fresh.removed = leaving
    if (cards or leaving) and config.store == "sqlite" and config.ann != "off":
        after_build(vault, Path(store.location))  # the HNSW graph follows its index


def _index_exists(vault: Any, config: Any) -> bool:
    from hql.index.config import resolve_index_path

    return resolve_index_path(Path(vault.root), config.require_index()).exists()
