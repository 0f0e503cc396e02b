"""A loaded vault's BM25 index and analyser, built once and shared by every step and library.

The retrieval steps, the prompt ranker (hql.context) and the commands all read a vault's
words through the same index and analyser, so a process that ranks a question and then a
prompt builds them once.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hql.search.bm25 import Bm25Index

_bm25_indexes: weakref.WeakKeyDictionary[Any, Bm25Index[Any]] = weakref.WeakKeyDictionary()
_bm25_lock = threading.Lock()


def bm25_index(
    vault: Any, cards: Sequence[Any], damaged: Bm25Index[Any] | None = None
) -> tuple[Bm25Index[Any], list[str]]:
    """The vault's BM25 index, built once per loaded vault (and kept per card digest under .hql/).

    `damaged` is an index whose store was found damaged while searching (`StoreDamaged`
    says why): it is replaced by one built without the store.
    """
    from hql.search.bm25 import Bm25Index
    from hql.search.fields import fields_of, search_fields_for
    from hql.text.analyzer import Analyzer

    if vault is None:
        return Bm25Index.build(
            list(cards), Analyzer.from_config(None), None, fields=fields_of()
        ), []
    with _bm25_lock:
        index = _bm25_indexes.get(vault)
        if index is None or index is damaged or getattr(index.cards, "stale", False):
            analyzer = Analyzer.from_config(vault.config.section("search"))
            fields, problems = search_fields_for(vault)
            why = damaged.damage if damaged is not None and index is damaged else None
            # A vault opened from its catalogue builds only the cards the index hands out.
            index = Bm25Index.build(
                vault.lazy_cards(), analyzer, vault.state_dir, trust_store=why, fields=fields
            )
            _bm25_indexes[vault] = index
            return index, [*problems, *index.warnings]
    return index, []


# A loaded vault's configuration is a snapshot: its analyser is built once (it folds every
# stop word and synonym when built), for as long as the vault is alive.
_analyzers: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_default_analyzer: list[Any] = []


def analyzer_for(vault: Any) -> Any:
    from hql.text.analyzer import Analyzer

    if vault is None:
        if not _default_analyzer:
            _default_analyzer.append(Analyzer.from_config(None))
        return _default_analyzer[0]
    analyzer = _analyzers.get(vault)
    if analyzer is None:
        analyzer = _analyzers[vault] = Analyzer.from_config(vault.config.section("search"))
    return analyzer
