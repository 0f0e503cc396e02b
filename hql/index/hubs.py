"""Hub priors: how near each card comes to questions in general.

Some cards sit near every question: a note listing many kinds of things (Obsidian Help's
Callouts lists "bug", "danger", "warning", "example"), a credits page, a contents page.
With a model whose cosines crowd (multilingual-e5-small puts every pair of texts between
about 0.74 and 0.96), such a hub is the first hit for questions the vault cannot answer
("symptoms of the flu": Callouts at 0.863, above the model's floor), while a question
asked in another language than the notes reaches its right note at a lower cosine than
the same question in the notes' language would.

A card's hub prior is its mean cosine over a fixed bank of questions (the paired
questions of `hql index doctor`'s cross-language check: eight questions in six
languages, half of them about no vault in particular), less the mean of that over every
card in the store. `hybrid | relevant` reads a hit's cosine less its card's prior
(hql.search.relevance.words_or_meaning, for models with a HUB_FLOORS entry): the bank
is the reference crowd a card must stand out from, as in query-bank normalisation for
cross-modal retrieval.

The bank's vectors are the model's own: embedded once (stored questions are reused) and
kept beside a SQLite index (`<index>.hubs-<digest>.npy`, the digest naming the model, its
revision and the bank); the priors are worked out once per opened SQLite store (it is
reopened when its index file changes), or per loaded vault for a server's store.
"""

from __future__ import annotations

import contextlib
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hql.index.doctor import PAIRED_QUESTIONS

if TYPE_CHECKING:
    import numpy as np

    from hql.index.reader import VaultLike

BANK: tuple[str, ...] = tuple(
    question for questions in PAIRED_QUESTIONS.values() for question in questions
)

# The bank's vectors per (model, revision), and the priors per opened store.
_BANK_VECTORS: dict[tuple[str, str], np.ndarray] = {}
_PRIORS: weakref.WeakKeyDictionary[Any, dict[str, float]] = weakref.WeakKeyDictionary()


def hub_priors(vault: VaultLike, bank: tuple[str, ...] = BANK) -> dict[str, float] | None:
    """Each stored card's hub prior (its mean cosine over `bank`, less the mean over all
    cards), by card name; None when the bank's questions cannot be embedded (no embedder
    configured, or one that cannot be reached): the caller then reads raw cosines."""
    from hql.index.errors import SemanticIndexError
    from hql.index.semantic import settings_of
    from hql.index.stores import SearchFilter, open_store

    config = settings_of(vault)
    try:
        store = open_store(vault, config)
        # A SQLite store object lasts while its index file is unchanged; a server's store is
        # opened at every query, so its priors last as long as the loaded vault does.
        holder = store if getattr(store, "kind", None) == "sqlite" else vault
        if bank == BANK:
            try:
                known = _PRIORS.get(holder)
            except TypeError:  # an object that cannot be weakly referenced
                known = None
            if known is not None:
                return known
        vectors = _bank_vectors(store, config, bank)
        if vectors is None:
            return None
        totals: dict[str, float] = {}
        for vector in vectors:
            for name, score in store.search(vector, None, SearchFilter(), exact=True).hits:
                totals[name] = totals.get(name, 0.0) + score
    except SemanticIndexError:
        return None
    if not totals:
        return {}
    means = {name: total / len(vectors) for name, total in totals.items()}
    centre = sum(means.values()) / len(means)
    priors = {name: value - centre for name, value in means.items()}
    if bank == BANK:
        with contextlib.suppress(TypeError):  # an object that cannot be weakly referenced
            _PRIORS[holder] = priors
    return priors


def _bank_vectors(store: Any, config: Any, bank: tuple[str, ...]) -> np.ndarray | None:
    """The bank's vectors by the store's model: kept in memory per process and model, and
    beside a SQLite index; else stored questions where the index has them and the rest
    embedded now. None when they cannot be."""
    import numpy as np

    from hql.index.config import question_key
    from hql.index.embedders import make_embedder
    from hql.index.semantic import _embed_queries

    model = store.model
    cached = (model.id, model.revision)
    if bank == BANK and cached in _BANK_VECTORS:
        return _BANK_VECTORS[cached]
    beside = _beside(store, bank) if bank == BANK else None
    if beside is not None:
        with contextlib.suppress(OSError, ValueError):
            kept = np.load(beside, allow_pickle=False)
            if kept.shape == (len(bank), model.dimensions):
                _BANK_VECTORS[cached] = kept
                return kept
    found: dict[int, np.ndarray] = {}
    for at, question in enumerate(bank):
        vector = store.query_vector(question_key(question, config))
        if vector is not None:
            found[at] = np.asarray(vector, dtype=np.float32)
    missing = [at for at in range(len(bank)) if at not in found]
    if missing:
        if not (config.embed_queries and config.embedder is not None):
            return None
        embedder = make_embedder(config.embedder)
        made = _embed_queries(store, [bank[at] for at in missing], embedder)
        found.update(zip(missing, made, strict=True))
    vectors = np.stack([np.asarray(found[at], dtype=np.float32) for at in range(len(bank))])
    if bank == BANK:
        _BANK_VECTORS[cached] = vectors
        if beside is not None:
            _keep(beside, vectors)
    return vectors


def _beside(store: Any, bank: tuple[str, ...]) -> Path | None:
    """Where the bank's vectors are kept beside a SQLite index: named by the model, its
    revision and the bank, so another model or bank never reads them."""
    import hashlib

    if getattr(store, "kind", None) != "sqlite":
        return None
    model = store.model
    key = "\n".join((model.id, model.revision, *bank)).encode("utf-8")
    index = Path(store.location)
    return index.with_name(f"{index.name}.hubs-{hashlib.sha256(key).hexdigest()[:16]}.npy")


def _keep(path: Path, vectors: np.ndarray) -> None:
    """Write the bank's vectors (whole or not at all); a folder that cannot be written to
    only means they are embedded again next time."""
    import os

    import numpy as np

    partial = path.with_name(f"{path.name}.{os.getpid()}.part")
    try:
        with open(partial, "wb") as handle:
            np.save(handle, vectors, allow_pickle=False)
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()
