"""A loaded vault's BM25 index and analyser, built once and shared by every step and library.

The retrieval steps, the prompt ranker (hql.context) and the commands all read a vault's
words through the same index and analyser, so a process that ranks a question and then a
prompt builds them once.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hql import files

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
            # The vault's own analyser: a prompt the read path analysed (its envelope, its
            # evidence) is then analysed once, for the index as well.
            analyzer = analyzer_for(vault)
            fields, problems = search_fields_for(vault)
            why = damaged.damage if damaged is not None and index is damaged else None
            # A vault opened from its catalogue builds only the cards the index hands out.
            index = Bm25Index.build(
                vault.lazy_cards(), analyzer, vault.state_dir, trust_store=why, fields=fields
            )
            _bm25_indexes[vault] = index
            _keep_word_index(index, vault.state_dir)
            warnings = [*problems, *index.warnings]
            state = _word_states.get(vault)
            if state is not None and state.warned:  # said already by a word-index answer
                warnings = warnings[len(problems) + len(analyzer.config_warnings) :]
            return index, warnings
    return index, []


# --- the word index (hql.search.terms): what a loaded vault's first questions read -------

# The questions a loaded vault answers from its word index before it builds the full
# index: a process that asks one or a few reads only their terms' rows (and no numpy);
# one that asks more pays for the full index once and then answers each at numpy's speed.
WORD_INDEX_QUESTIONS = 4


def many_questions_ahead() -> None:
    """This process will answer many questions (a vault's watcher answering commands): a
    loaded vault's first question loads, or builds, its full index, and none reads the
    word index (which would cost each of the first few questions more than the full
    index answers in)."""
    global WORD_INDEX_QUESTIONS
    WORD_INDEX_QUESTIONS = 0


class _WordState:
    def __init__(self) -> None:
        self.index: Any = None  # the open TermIndex, once opened
        self.asked = 0
        self.warned = False  # the analyser's configuration warnings were given


_word_states: weakref.WeakKeyDictionary[Any, _WordState] = weakref.WeakKeyDictionary()


def word_index(vault: Any, cards: Sequence[Any]) -> tuple[Any, Any, list[str]] | None:
    """(word index, analyser, warnings to give) to answer a question about all of `cards`
    from, or None: the vault has its full index (or should build it now), or no word
    index is written for these very cards. Raises `TermIndexDamaged` when it is damaged
    (see `forget_word_index`)."""
    from hql.search import terms
    from hql.search.fields import search_fields_for

    if vault is None or vault.state_dir is None or not vault.holds_all(cards):
        return None
    with _bm25_lock:
        built = _bm25_indexes.get(vault)
        if built is not None and not getattr(built.cards, "stale", False):
            return None
        state = _word_states.get(vault)
        if state is None:
            state = _word_states[vault] = _WordState()
        digest = terms.identity_of(cards)
        if state.asked >= WORD_INDEX_QUESTIONS or digest is None:
            return None
        if getattr(cards, "stale", False) or cards is not vault.lazy_cards():
            return None
        analyzer = analyzer_for(vault)
        fields, problems = search_fields_for(vault)
        if state.index is None:
            fingerprint = terms.store_fingerprint(analyzer.fingerprint, fields)
            state.index = terms.TermIndex.open(vault.state_dir, fingerprint, digest, len(cards))
            if state.index is None:
                state.asked = WORD_INDEX_QUESTIONS  # none for these cards: the full index writes it
                return None
        state.asked += 1
        warnings = [] if state.warned else [*problems, *analyzer.config_warnings]
        state.warned = True
        return state.index, analyzer, warnings


def forget_word_index(vault: Any) -> None:
    """A damaged word index: removed (the full index, built next, writes it anew)."""
    from hql.search import terms

    with _bm25_lock:
        state = _word_states.get(vault)
        if state is not None:
            if state.index is not None:
                state.index.close()
            state.index, state.asked = None, WORD_INDEX_QUESTIONS
    if vault.state_dir is not None and files.state_dir_contained(vault.state_dir):
        with contextlib.suppress(OSError):
            terms.path_in(vault.state_dir).unlink()


def _keep_word_index(index: Bm25Index[Any], state_dir: Any) -> None:
    """Write the word index of a full index's cards, unless written for them already (as
    the store is written, before the first answer: the next process reads it)."""
    from hql.search import terms

    digest = terms.identity_of(index.cards)
    if digest is None or state_dir is None or not files.state_dir_contained(state_dir):
        return
    fingerprint, count = index.store_fingerprint, len(index.cards)
    if terms.written_for(state_dir, fingerprint, digest, count):
        return
    # The word index only saves work: any failure leaves the full index to answer.
    with contextlib.suppress(Exception):
        state_dir.mkdir(parents=True, exist_ok=True)
        terms.write(state_dir, fingerprint, digest, count, index.unknown_idf(), index.term_rows())


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
