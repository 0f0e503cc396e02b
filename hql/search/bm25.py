"""`hql.bm25.v1`: field-aware BM25 (BM25F) over analysed card text (product §4.1).

Two fields per card: the title (weight 3) and the retrieval text of the reference's
text contract (`card.text`). A card that declares recall fields (memory.md §2: summary,
triggers, use_when, aliases, topics) has those as fields of their own, its body being
the retrieval text without them (`hql.search.fields`; weights from `[search.fields]`).
Per term and card, the field frequencies are normalised by field length (b = 0.75; each
field's average over the cards that have it), weighted, summed, then saturated once
(k1 = 1.2) and multiplied by a Lucene-style idf, `ln(1 + (N - df + 0.5) / (df + 0.5))`. Because that
impact does not depend on the query, it is computed once per index revision and a
query only adds up postings: numpy does the arithmetic over flat, term-sorted arrays.

The postings persist under the vault's state directory (`.hql/bm25.v1.bin`), keyed
per card by content digest and title: a card whose text changed is analysed again, the
others are reused; a store written by another analyser configuration, or one that
cannot be read, is ignored and rebuilt (with a warning for the unreadable case).

A note written through `hql.notes` does not rewrite the store: its card's analysis is
added to the store's delta (`.hql/bm25.v1.delta`, `record_analyses`), keyed as the store
keys cards (an earlier version of the same card leaves it), and the next build takes it
from there instead of analysing the card again, then saves the store whole and drops the
delta. A delta grown past DELTA_CARDS cards is folded into the store by the write that
would grow it further.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import errno
import functools
import hashlib
import itertools
import json
import marshal
import os
import stat
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

import numpy as np

from hql import files, messages
from hql.search.fields import DEFAULT_WEIGHTS, RECALL_FIELDS
from hql.search.terms import METRIC, MODEL, store_fingerprint
from hql.search.terms import query_weight as _query_weight

if TYPE_CHECKING:
    import numpy.typing as npt

    from hql.search.fields import SearchFields
    from hql.text.analyzer import Analysis, Analyzer, TermNumbers

K1 = 1.2
B = 0.75
TITLE_WEIGHT = DEFAULT_WEIGHTS["title"]
STORE_NAME = "bm25.v1.bin"
_STORE_FORMAT = 1
_MAGIC = b"HQL-BM25"
# An earlier store: this mark, then the sha256 of the rest, then the layout of
# `_Postings.load_sealed` (which starts with _MAGIC). Read whole, then written anew.
_SEALED = b"HQL-BM2S"
# The store: this mark, the header's length and sha256, the header, the sections (see
# `_Postings.save`). Read in parts, each checked as it is read.
_BLOCKED = b"HQL-BM2B"
_BLOCKED_FORMAT = 3  # 3: the recall fields' sections
# Entries per block of the postings: a query reads (and checks) only its terms' blocks.
BLOCK_ENTRIES = 65536
_SUM_BYTES = 32
# A store larger than this is not read (and is rebuilt).
MAX_STORE_BYTES = 2 * 1024 * 1024 * 1024
# Beside the store: analyses of cards written since it was saved (see `record_analyses`).
DELTA_NAME = "bm25.v1.delta"
_DELTA_MAGIC = b"HQL-BM25-DELTA-1"
# A delta holding more cards than this, or more terms, is folded into the store instead.
DELTA_CARDS = 64
DELTA_TERMS = 1 << 18
# Beside the store: which cards its slots were last matched to (see `_Match`).
MATCH_NAME = "bm25.v1.match"
_MATCH_MAGIC = b"HQL-BM25-MATCH-1"


class SearchCard(Protocol):
    """What BM25 needs of a card.

    The index takes its cards as a sequence; one that builds its cards on first read
    may also offer `names` (a list), `search_keys()` ((digest, title) per card) and
    `prefetch(positions)`: the index then builds no card but the ones it hands out
    or must analyse afresh. Such a sequence may also name its keys by `search_digest`
    (bytes; equal digests, equal names and keys in the same order): the store's slots,
    once matched to the cards of a digest, are matched again by reading the record.
    One whose names strictly increase may say so (`in_name_order = True`): ties are then
    broken by position, without reading the names. One that offers `passing(positions)`
    builds the cards a build analyses for that once, not kept (None: read them as usual);
    one that offers `text_rows(positions)` hands over what to read those cards' texts from
    with no card built, in the build or a worker process (its `cards()`: objects with a
    card's name, title, search_title, authored, body, text and digest, or None: read the
    cards instead).
    """

    @property
    def name(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def digest(self) -> str: ...


CardT = TypeVar("CardT", bound=SearchCard)


def _card_key(card: SearchCard) -> str:
    """What must be unchanged for a stored analysis to be reused: the text digest and title."""
    return _key(card.digest, _title_field(card))


def _key(digest: str, title: str) -> str:
    return f"{digest}:{title.replace(chr(10), ' ') if chr(10) in title else title}"


def _keys_of(cards: Sequence[SearchCard]) -> list[str]:
    """Each card's key; a sequence that knows them (`search_keys`) builds no card for it."""
    known = getattr(cards, "search_keys", None)
    if known is not None:
        return [_key(digest, title) for digest, title in known()]
    return [_card_key(card) for card in cards]


def _names_of(cards: Sequence[SearchCard]) -> list[str]:
    known: list[str] | None = getattr(cards, "names", None)
    return known if known is not None else [card.name for card in cards]


def _name_ranks(
    cards: Sequence[SearchCard], card_of_slot: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Each slot's card's rank by name (ties are broken by it); a sequence `in_name_order`
    (names strictly increasing) ranks its cards by position, reading no name."""
    if getattr(cards, "in_name_order", False):
        return np.asarray(card_of_slot, dtype=np.int64).copy()
    all_names = _names_of(cards)
    if np.array_equal(card_of_slot, np.arange(len(card_of_slot))):
        names = all_names
    else:
        names = [all_names[index] for index in card_of_slot.tolist()]
    ranks = np.empty(len(names), dtype=np.int64)
    ranks[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
    return ranks


def _held(cards: Sequence[CardT]) -> Sequence[CardT]:
    """The cards as an index keeps them: a sequence that builds cards on first read as it
    is, anything else as a list of its own."""
    return cards if hasattr(cards, "search_keys") else list(cards)


def _prefetch(cards: Sequence[SearchCard], positions: Sequence[int]) -> None:
    """Let a sequence that builds its cards on first read build these together."""
    prefetch = getattr(cards, "prefetch", None)
    if prefetch is not None:
        prefetch(positions)


def _passing(cards: Sequence[SearchCard], positions: list[int]) -> Sequence[SearchCard] | None:
    """The cards at these positions built for reading their texts once, by a sequence that
    builds its cards on first read (`passing`), None when it does not."""
    passing = getattr(cards, "passing", None)
    made: Sequence[SearchCard] | None = passing(positions) if passing is not None else None
    return made if made is not None and len(made) == len(positions) else None


def _title_field(card: SearchCard) -> str:
    """The title field: a card of an Obsidian vault adds its file name (`Card.search_title`)."""
    title: str = getattr(card, "search_title", card.title)
    return title


# --- postings: the persisted, query-independent part ---------------------------------


@dataclass
class _Fielded:
    """The recall fields' part of the postings, held only for cards that declare recall
    fields (in most vaults none does, and every array is empty).

    `owner` lists those cards' slots in increasing order and `length` their terms per
    field (a row per owner, a column per RECALL_FIELDS entry). An entry counts a term's
    occurrences in one field of one card; entries are sorted by term, slot and field.
    """

    owner: npt.NDArray[np.int32]
    length: npt.NDArray[np.float32]
    term: npt.NDArray[np.int32]
    slot: npt.NDArray[np.int32]
    kind: npt.NDArray[np.uint8]
    tf: npt.NDArray[np.uint16]

    @classmethod
    def empty(cls) -> _Fielded:
        ints = np.zeros(0, np.int32)
        lengths = np.zeros((0, len(RECALL_FIELDS)), np.float32)
        return cls(ints, lengths, ints, ints, np.zeros(0, np.uint8), np.zeros(0, np.uint16))

    def without_slots(
        self, drop: npt.NDArray[np.bool_], renumber: npt.NDArray[np.int64]
    ) -> _Fielded:
        if not len(self.owner):
            return self
        owners, entries = ~drop[self.owner], ~drop[self.slot]
        return _Fielded(
            renumber[self.owner[owners]].astype(np.int32),
            self.length[owners],
            self.term[entries],
            renumber[self.slot[entries]].astype(np.int32),
            self.kind[entries],
            self.tf[entries],
        )

    @classmethod
    def joined(cls, parts: Sequence[_Fielded]) -> _Fielded:
        """The entries of these parts (their owners numbered in order), sorted as
        `with_entries` sorts them."""
        parts = [part for part in parts if len(part.owner)]
        if len(parts) <= 1:
            return parts[0] if parts else cls.empty()
        return parts[0].with_entries(
            cls(
                np.concatenate([part.owner for part in parts[1:]]),
                np.concatenate([part.length for part in parts[1:]]),
                *(
                    np.concatenate([getattr(part, name) for part in parts[1:]])
                    for name in ("term", "slot", "kind", "tf")
                ),
            )
        )

    def with_entries(self, added: _Fielded) -> _Fielded:
        """These entries and the added ones (whose owners are numbered after these)."""
        if not len(added.owner):
            return self
        term = np.concatenate([self.term, added.term])
        slot = np.concatenate([self.slot, added.slot])
        kind = np.concatenate([self.kind, added.kind])
        order = np.lexsort((kind, slot, term))
        return _Fielded(
            np.concatenate([self.owner, added.owner]),
            np.concatenate([self.length, added.length]),
            term[order],
            slot[order],
            kind[order],
            np.concatenate([self.tf, added.tf])[order],
        )

    def check(self, slots: int, terms: int) -> None:
        owners, entries = len(self.owner), len(self.term)
        if self.length.shape != (owners, len(RECALL_FIELDS)):
            raise ValueError("its recall fields' lengths disagree with their cards")
        if {len(self.slot), len(self.kind), len(self.tf)} != {entries}:
            raise ValueError("its recall fields' arrays disagree")
        if owners and (
            self.owner.min() < 0 or self.owner.max() >= slots or np.any(np.diff(self.owner) <= 0)
        ):
            raise ValueError("its recall fields name cards out of range")
        if entries and (
            self.term.min() < 0
            or self.term.max() >= terms
            or self.kind.max() >= len(RECALL_FIELDS)
            or not np.isin(self.slot, self.owner).all()
        ):
            raise ValueError("its recall fields' postings are out of range")


@dataclass
class _Postings:
    """Term frequencies per (term, card slot), sorted by term then slot.

    The term of an entry is implicit: `term_count[t]` entries in a row belong to term t
    (so removing or adding entries touches three arrays, not four).
    """

    keys: list[str]
    vocabulary: list[str]
    title_length: npt.NDArray[np.float32]
    text_length: npt.NDArray[np.float32]
    term_count: npt.NDArray[np.int64]
    slot: npt.NDArray[np.int32]
    title_tf: npt.NDArray[np.uint16]
    text_tf: npt.NDArray[np.uint16]
    _term_ids: dict[str, int] | None = field(default=None, repr=False)
    seal: bytes = field(default=b"", repr=False)  # of the store these were read from, as read
    outdated: bool = field(default=False, repr=False)  # read from a store of an earlier layout
    fielded: _Fielded = field(default_factory=_Fielded.empty, repr=False)

    @classmethod
    def empty(cls) -> _Postings:
        floats, ints, tfs = np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(0, np.uint16)
        return cls([], [], floats, floats, np.zeros(0, np.int64), ints, tfs, tfs)

    @property
    def term_start(self) -> npt.NDArray[np.int64]:
        """Where each term's entries start, plus the total at the end."""
        return np.concatenate([[0], np.cumsum(self.term_count)]).astype(np.int64)

    @property
    def term_ids(self) -> dict[str, int]:
        if self._term_ids is None:
            self._term_ids = {term: index for index, term in enumerate(self.vocabulary)}
        return self._term_ids

    def term_id(self, term: str) -> int | None:
        return self.term_ids.get(term)

    def without_slots(self, drop: npt.NDArray[np.bool_]) -> tuple[_Postings, npt.NDArray[np.int64]]:
        """These postings minus the dropped slots, and each old slot's new number."""
        renumber = np.cumsum(~drop) - 1
        keep = ~drop[self.slot]
        removed = np.flatnonzero(~keep)
        removed_terms = np.searchsorted(self.term_start, removed, side="right") - 1
        kept = _Postings(
            [key for key, dropped in zip(self.keys, drop.tolist(), strict=True) if not dropped],
            self.vocabulary,
            self.title_length[~drop],
            self.text_length[~drop],
            self.term_count - np.bincount(removed_terms, minlength=len(self.term_count)),
            renumber[self.slot[keep]].astype(np.int32),
            self.title_tf[keep],
            self.text_tf[keep],
            self._term_ids,
            fielded=self.fielded.without_slots(drop, renumber),
        )
        return kept, renumber

    def with_cards(self, parts: Sequence[_Added], new_terms: Sequence[str]) -> _Postings:
        """These postings plus new slots, numbered last (the parts' in order, each part's
        numbered on from the last); `new_terms` join the vocabulary, in number order."""
        term_ids, vocabulary = self.term_ids, self.vocabulary
        if new_terms:
            start = len(vocabulary)
            term_ids.update({term: start + at for at, term in enumerate(new_terms)})
            vocabulary.extend(new_terms)
        size = len(vocabulary)
        new_count = np.zeros(size, dtype=np.int64)
        for part in parts:
            new_count[part.terms] += part.runs  # each term once per part
        new_slot, new_title_tf, new_text_tf = _gathered(parts, new_count)
        old_count = np.zeros(size, dtype=np.int64)
        old_count[: len(self.term_count)] = self.term_count
        slot, title_tf, text_tf = new_slot, new_title_tf, new_text_tf
        if len(self.slot):
            # Old entries are sorted and new slots are numbered last, so inserting each new
            # entry after the old entries of its term keeps the (term, slot) order.
            at_old = np.repeat(np.cumsum(old_count), new_count)
            slot = np.insert(self.slot, at_old, new_slot)
            title_tf = np.insert(self.title_tf, at_old, new_title_tf)
            text_tf = np.insert(self.text_tf, at_old, new_text_tf)
        return _Postings(
            [*self.keys, *itertools.chain.from_iterable(part.keys for part in parts)],
            vocabulary,
            np.concatenate([self.title_length, *(part.title_length for part in parts)]),
            np.concatenate([self.text_length, *(part.text_length for part in parts)]),
            old_count + new_count,
            slot,
            title_tf,
            text_tf,
            term_ids,
            fielded=self.fielded.with_entries(_Fielded.joined([part.fielded for part in parts])),
        )

    @property
    def slots(self) -> int:
        return len(self.title_length)

    def entries(self, start: int, end: int) -> tuple[Any, Any, Any]:
        """The (slot, title_tf, text_tf) of entries start..end (a term's: see `term_start`)."""
        return self.slot[start:end], self.title_tf[start:end], self.text_tf[start:end]

    # Persistence: a JSON header naming each section (dtype, length, sha256), then the
    # sections as raw little-endian arrays. The postings' three arrays are checked per
    # block of BLOCK_ENTRIES entries (their sha256s form a section of their own), so
    # opening the store reads its small sections and a query only its terms' blocks;
    # the store's seal is the sha256 of the header, which names every other checksum.

    def save(self, path: Path, fingerprint: str) -> bytes:
        """Write the store; returns its seal."""
        small: dict[str, npt.NDArray[Any]] = {
            "keys": _blob(self.keys),
            "vocabulary": _blob(self.vocabulary),
            "title_length": self.title_length.astype("<f4"),
            "text_length": self.text_length.astype("<f4"),
            "term_start": self.term_start.astype("<i8"),
            **_fielded_sections(self.fielded),
        }
        blocked = [
            np.ascontiguousarray(self.slot.astype("<i4", copy=False)),
            np.ascontiguousarray(self.title_tf.astype("<u2", copy=False)),
            np.ascontiguousarray(self.text_tf.astype("<u2", copy=False)),
        ]
        entries = len(self.slot)
        sums = b"".join(
            _block_sum(*(array[at : at + BLOCK_ENTRIES] for array in blocked))
            for at in range(0, entries, BLOCK_ENTRIES)
        )
        small["block_sums"] = np.frombuffer(sums, dtype=np.uint8)
        parts = [np.ascontiguousarray(array).tobytes() for array in small.values()]
        sections = [
            [name, array.dtype.str, len(array), hashlib.sha256(part).hexdigest()]
            for (name, array), part in zip(small.items(), parts, strict=True)
        ]
        sections += [
            [name, array.dtype.str, len(array), None]
            for name, array in zip(_BLOCKED_SECTIONS, blocked, strict=True)
        ]
        header = json.dumps(
            {
                "format": _BLOCKED_FORMAT,
                "analyzer": fingerprint,
                "slots": self.slots,
                "entries": entries,
                "block": BLOCK_ENTRIES,
                "sections": sections,
            }
        ).encode("utf-8")
        seal = hashlib.sha256(header).digest()
        head = _BLOCKED + len(header).to_bytes(8, "little") + seal + header
        path.parent.mkdir(parents=True, exist_ok=True)
        files.clean_stale_temporaries(path.parent, path.name, also=(".bm25-",))
        # The postings are written from their arrays, never copied whole into one buffer.
        files.write_atomically(
            path, [head, *parts, *(memoryview(cast("Any", a)).cast("B") for a in blocked)]
        )
        return seal

    @classmethod
    def load(cls, path: Path, fingerprint: str) -> _Postings | None:
        """The stored postings, None when written for another analyser; raises when corrupt
        (and `StoreDamaged` later, from the postings, when a block read then is)."""
        descriptor = _open_regular(path)
        try:
            mark = os.pread(descriptor, len(_BLOCKED), 0)
        finally:
            os.close(descriptor)
        if mark == _BLOCKED:
            return _StoredPostings.open(path, fingerprint)
        if mark == _SEALED:
            return cls.load_sealed(path, fingerprint)
        if mark == _MAGIC:
            return None  # an unsealed store of an earlier version: rebuilt
        raise ValueError("not an HQL search index")

    @classmethod
    def load_sealed(cls, path: Path, fingerprint: str) -> _Postings | None:
        """A store of the earlier, sealed layout, read whole (it is written anew)."""
        sealed = files.read_regular(path, MAX_STORE_BYTES)
        if not sealed.startswith(_SEALED):
            raise ValueError("not an HQL search index")
        data = files.unseal(sealed, len(_SEALED))
        if data is None:
            raise ValueError("its checksum does not match its contents")
        if data[: len(_MAGIC)] != _MAGIC:
            raise ValueError("not an HQL search index")
        start = len(_MAGIC) + 8
        header_length = int.from_bytes(data[len(_MAGIC) : start], "little")
        header = json.loads(bytes(data[start : start + header_length]).decode("utf-8"))
        if header.get("format") != _STORE_FORMAT or header.get("analyzer") != fingerprint:
            return None
        arrays: dict[str, npt.NDArray[Any]] = {}
        offset = start + header_length
        for name, (dtype, count) in header["arrays"].items():
            array = np.frombuffer(data, dtype=np.dtype(dtype), count=count, offset=offset)
            arrays[name] = array
            offset += array.nbytes
        if offset != len(data):
            raise ValueError("the file has the wrong length")
        term_start = arrays["term_start"]
        vocabulary = _unblob(arrays["vocabulary"])
        _check_term_start(term_start, len(vocabulary), len(arrays["slot"]))
        postings = cls(
            _unblob(arrays["keys"]),
            vocabulary,
            arrays["title_length"].astype(np.float32),
            arrays["text_length"].astype(np.float32),
            np.diff(term_start).astype(np.int64),
            arrays["slot"].astype(np.int32, copy=False),  # read-only views: never
            arrays["title_tf"].astype(np.uint16, copy=False),  # changed in place
            arrays["text_tf"].astype(np.uint16, copy=False),
        )
        postings._check()
        postings.outdated = True
        return postings

    def _check(self) -> None:
        slots, entries = len(self.keys), len(self.slot)
        sizes = {len(self.title_tf), len(self.text_tf)}
        if sizes != {entries} or {len(self.title_length), len(self.text_length)} != {slots}:
            raise ValueError("array sizes disagree")
        if len(self.term_count) != len(self.vocabulary) or int(self.term_count.sum()) != entries:
            raise ValueError("term counts disagree with the entries")
        if entries and (self.slot.min() < 0 or self.slot.max() >= slots):
            raise ValueError("postings out of range")


class StoreDamaged(ValueError):
    """A part of a store read after it was opened (a postings block, the keys) is damaged.

    Raised by `Bm25Index.search`; the index must then be built again without the store
    (`Bm25Index.build(..., trust_store=False)`).
    """


_BLOCKED_SECTIONS = ("slot", "title_tf", "text_tf")
_SMALL_SECTIONS = {
    "keys": "|u1",
    "vocabulary": "|u1",
    "title_length": "<f4",
    "text_length": "<f4",
    "term_start": "<i8",
    "block_sums": "|u1",
    "field_owner": "<i4",
    "field_length": "<f4",
    "field_term": "<i4",
    "field_slot": "<i4",
    "field_kind": "|u1",
    "field_tf": "<u2",
}
_SECTION_DTYPES = {**_SMALL_SECTIONS, "slot": "<i4", "title_tf": "<u2", "text_tf": "<u2"}


def _fielded_sections(fielded: _Fielded) -> dict[str, npt.NDArray[Any]]:
    return {
        "field_owner": fielded.owner.astype("<i4"),
        "field_length": fielded.length.reshape(-1).astype("<f4"),
        "field_term": fielded.term.astype("<i4"),
        "field_slot": fielded.slot.astype("<i4"),
        "field_kind": fielded.kind.astype("|u1"),
        "field_tf": fielded.tf.astype("<u2"),
    }


def _fielded_of(reader: _StoreReader, slots: int, terms: int) -> _Fielded:
    """The recall fields' part of a store, checked (raises when it is damaged)."""
    owner = reader.section("field_owner").astype(np.int32)
    lengths = reader.section("field_length").astype(np.float32)
    if len(lengths) != len(owner) * len(RECALL_FIELDS):
        raise StoreDamaged("its recall fields' lengths disagree with their cards")
    fielded = _Fielded(
        owner,
        lengths.reshape(len(owner), len(RECALL_FIELDS)),
        reader.section("field_term").astype(np.int32),
        reader.section("field_slot").astype(np.int32),
        reader.section("field_kind").astype(np.uint8),
        reader.section("field_tf").astype(np.uint16),
    )
    fielded.check(slots, terms)
    return fielded


def _block_sum(*parts: npt.NDArray[Any]) -> bytes:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.tobytes())
    return hasher.digest()


def _check_term_start(term_start: npt.NDArray[np.int64], terms: int, entries: int) -> None:
    if (
        len(term_start) != terms + 1
        or term_start[0] != 0
        or term_start[-1] != entries
        or np.any(np.diff(term_start) < 0)
    ):
        raise ValueError("term offsets out of order")


def _open_regular(path: Path) -> int:
    """A descriptor of the regular file at `path` (opened without blocking: a FIFO is refused)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags)
    try:
        mode = os.fstat(descriptor).st_mode
    except OSError:
        os.close(descriptor)
        raise
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise (
            IsADirectoryError(errno.EISDIR, "Is a directory")
            if stat.S_ISDIR(mode)
            else files.RefusedFile("not a regular file")
        )
    return descriptor


class _StoreReader:
    """An open store: its header's sections, read at their offsets (`os.pread`) and checked.

    The file stays open while its postings are in use: a store replaced meanwhile (written
    anew under the same name) is not what this reads.
    """

    def __init__(self, path: Path, fingerprint: str) -> None:
        self._descriptor = _open_regular(path)
        self._closer = weakref.finalize(self, os.close, self._descriptor)
        self.header: dict[str, Any] | None = None
        status = os.fstat(self._descriptor)
        if status.st_size > MAX_STORE_BYTES:
            raise files.TooLarge(status.st_size, MAX_STORE_BYTES)
        start = len(_BLOCKED) + 8 + _SUM_BYTES
        head = self.read(0, start)
        header_length = int.from_bytes(head[len(_BLOCKED) : len(_BLOCKED) + 8], "little")
        if header_length > min(status.st_size, 1 << 20):
            raise ValueError("its header is damaged")
        header_bytes = self.read(start, header_length)
        self.seal = head[len(_BLOCKED) + 8 :]
        if hashlib.sha256(header_bytes).digest() != self.seal:
            raise ValueError("its header's checksum does not match")
        header = json.loads(header_bytes.decode("utf-8"))
        if header.get("format") != _BLOCKED_FORMAT or header.get("analyzer") != fingerprint:
            return
        self.sections: dict[str, tuple[str, int, int, str | None]] = {}
        offset = start + header_length
        for name, dtype, count, checksum in header["sections"]:
            if _SECTION_DTYPES.get(name) != dtype or type(count) is not int or count < 0:
                raise ValueError("its layout is damaged")
            self.sections[name] = (dtype, count, offset, checksum)
            offset += count * np.dtype(dtype).itemsize
        if set(self.sections) != set(_SECTION_DTYPES):
            raise ValueError("its layout is damaged")
        if offset != status.st_size:
            raise ValueError("the file has the wrong length")
        self.slots, self.entries, self.block = header["slots"], header["entries"], header["block"]
        if not all(type(value) is int and value >= 0 for value in (self.slots, self.entries)):
            raise ValueError("its layout is damaged")
        if type(self.block) is not int or self.block <= 0:
            raise ValueError("its layout is damaged")
        blocks = -(-self.entries // self.block)
        counts = {name: self.sections[name][1] for name in self.sections}
        if (
            counts["block_sums"] != blocks * _SUM_BYTES
            or {counts[name] for name in _BLOCKED_SECTIONS} != {self.entries}
            or {counts["title_length"], counts["text_length"]} != {self.slots}
        ):
            raise ValueError("array sizes disagree")
        self.header = header

    def read(self, offset: int, length: int) -> bytes:
        data = os.pread(self._descriptor, length, offset)
        if len(data) != length:
            raise StoreDamaged("the file is shorter than its header says")
        return data

    def section(self, name: str) -> npt.NDArray[Any]:
        """A small section, whole, checked against the header's sha256."""
        dtype, count, offset, checksum = self.sections[name]
        data = self.read(offset, count * np.dtype(dtype).itemsize)
        if hashlib.sha256(data).hexdigest() != checksum:
            raise StoreDamaged(f"its {name.replace('_', ' ')} do not match their checksum")
        return np.frombuffer(data, dtype=np.dtype(dtype))

    def blocks(self, first: int, last: int, sums: bytes) -> list[tuple[Any, ...]]:
        """The postings' blocks first..last (inclusive), each checked against its sha256."""
        start, end = first * self.block, min((last + 1) * self.block, self.entries)
        arrays = []
        for name in _BLOCKED_SECTIONS:
            dtype, _, offset, _ = self.sections[name]
            size = np.dtype(dtype).itemsize
            arrays.append(
                np.frombuffer(self.read(offset + start * size, (end - start) * size), dtype)
            )
        found = []
        for block in range(first, last + 1):
            at, until = (
                block * self.block - start,
                min((block + 1) * self.block, self.entries) - start,
            )
            parts = tuple(array[at:until] for array in arrays)
            expected = sums[block * _SUM_BYTES : (block + 1) * _SUM_BYTES]
            if _block_sum(*parts) != expected:
                raise StoreDamaged("a block of its postings does not match its checksum")
            if len(parts[0]) and (parts[0].min() < 0 or parts[0].max() >= self.slots):
                raise StoreDamaged("postings out of range")
            found.append(parts)
        return found

    def close(self) -> None:
        self._closer()


# Terms looked up in a stored vocabulary's text before it is split into a map: at 100k
# cards a lookup costs ~0.16 ms and the map ~25 ms, so a one-off query (tens of terms, each
# looked up twice) is cheaper without the map and a process answering many is not.
_TEXT_LOOKUPS = 128


class _StoredPostings(_Postings):
    """Postings of a store read in parts: the small sections at once, the keys when first
    asked for, the entries block by block (or whole, when an update needs them all)."""

    def __init__(
        self, reader: _StoreReader, vocabulary: str, term_start: Any, fielded: _Fielded
    ) -> None:
        self._reader = reader
        self.fielded = fielded
        # Split when first needed: a query finds its few terms in the text itself.
        self._vocabulary_lines = f"\n{vocabulary}\n"
        self._vocabulary: list[str] | None = None if vocabulary else []
        self._lookups = 0
        self._sums = reader.section("block_sums").tobytes()
        self._blocks: dict[int, tuple[Any, ...]] = {}
        self._whole: list[Any] | None = None
        self._stored_keys: list[str] | None = None
        self._lock = threading.Lock()
        self.title_length = reader.section("title_length").astype(np.float32)
        self.text_length = reader.section("text_length").astype(np.float32)
        self.term_count = np.diff(term_start).astype(np.int64)
        self._term_ids = None
        self.seal = reader.seal
        self.outdated = False

    @classmethod
    def open(cls, path: Path, fingerprint: str) -> _StoredPostings | None:
        reader = _StoreReader(path, fingerprint)
        if reader.header is None:
            reader.close()
            return None  # another analyser's
        vocabulary = reader.section("vocabulary").tobytes().decode("utf-8")
        term_start = reader.section("term_start")
        terms = vocabulary.count("\n") + 1 if vocabulary else 0
        _check_term_start(term_start, terms, reader.entries)
        return cls(reader, vocabulary, term_start, _fielded_of(reader, reader.slots, terms))

    @property
    def vocabulary(self) -> list[str]:
        if self._vocabulary is None:
            self._vocabulary = self._vocabulary_lines[1:-1].split("\n")
        return self._vocabulary

    @vocabulary.setter
    def vocabulary(self, terms: list[str]) -> None:
        self._vocabulary = terms

    def term_id(self, term: str) -> int | None:
        """The term's id, found in the stored text for the first few lookups (a one-off
        query), then through a map of every term (a process that asks many)."""
        if self._vocabulary is not None or "\n" in term or self._lookups >= _TEXT_LOOKUPS:
            return self.term_ids.get(term)
        self._lookups += 1
        at = self._vocabulary_lines.find(f"\n{term}\n")
        return None if at < 0 else self._vocabulary_lines.count("\n", 0, at)

    @property
    def keys(self) -> list[str]:
        if self._stored_keys is None:
            keys = _unblob(self._reader.section("keys"))
            if len(keys) != self.slots:
                raise StoreDamaged("its keys disagree with its cards")
            self._stored_keys = keys
        return self._stored_keys

    @keys.setter
    def keys(self, keys: list[str]) -> None:
        self._stored_keys = keys

    def _all(self) -> list[Any]:
        if self._whole is None:
            blocks = -(-self._reader.entries // self._reader.block)
            found = self._reader.blocks(0, blocks - 1, self._sums) if blocks else []
            self._whole = [
                np.concatenate([part[i] for part in found]).astype(kind, copy=False)
                if found
                else np.zeros(0, kind)
                for i, kind in enumerate(_ENTRY_TYPES)
            ]
        return self._whole

    @property
    def slot(self) -> npt.NDArray[np.int32]:
        return cast("npt.NDArray[np.int32]", self._all()[0])

    @slot.setter
    def slot(self, value: npt.NDArray[np.int32]) -> None:
        self._all()[0] = value

    @property
    def title_tf(self) -> npt.NDArray[np.uint16]:
        return cast("npt.NDArray[np.uint16]", self._all()[1])

    @title_tf.setter
    def title_tf(self, value: npt.NDArray[np.uint16]) -> None:
        self._all()[1] = value

    @property
    def text_tf(self) -> npt.NDArray[np.uint16]:
        return cast("npt.NDArray[np.uint16]", self._all()[2])

    @text_tf.setter
    def text_tf(self, value: npt.NDArray[np.uint16]) -> None:
        self._all()[2] = value

    def entries(self, start: int, end: int) -> tuple[Any, Any, Any]:
        if self._whole is not None or start >= end:
            return super().entries(start, end)
        block = self._reader.block
        first, last = start // block, (end - 1) // block
        with self._lock:
            missing = [b for b in range(first, last + 1) if b not in self._blocks]
            if missing:
                read = self._reader.blocks(missing[0], missing[-1], self._sums)
                for at, parts in enumerate(read, start=missing[0]):
                    self._blocks.setdefault(at, parts)
            pieces = [self._blocks[b] for b in range(first, last + 1)]
        offset = first * block
        slot, title_tf, text_tf = (
            (pieces[0][i] if len(pieces) == 1 else np.concatenate([p[i] for p in pieces]))[
                start - offset : end - offset
            ].astype(kind, copy=False)
            for i, kind in enumerate(_ENTRY_TYPES)
        )
        return slot, title_tf, text_tf


_ENTRY_TYPES = (np.int32, np.uint16, np.uint16)

# The terms of several texts as numbers: every text's in a row, and how many each has.
_Numbered = tuple["list[int] | npt.NDArray[np.int32]", list[int]]


@dataclass
class _NewCards:
    """The terms of cards joining the postings, as numbers (see `_numbered_cards`): their
    texts', their titles', and per recall field (None: no card declares one) with the
    cards that declare any."""

    text: _Numbered
    title: _Numbered
    recall: list[_Numbered] | None
    owners: list[int]


def _counted(
    numbers: list[int] | npt.NDArray[np.int32], lengths: list[int], first_slot: int
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.uint16]]:
    """(term, slot, frequency) per distinct term of each text (its terms `lengths[i]`
    numbers in a row, slots from `first_slot`), sorted by term, slot.

    Counting is done by sorting every occurrence by term (a stable radix sort keeps slots
    in order) and measuring the runs of equal (term, slot), which is much cheaper than a
    Counter per text.
    """
    total = len(numbers)
    ids = np.asarray(numbers, dtype=np.int32) if total else np.zeros(0, dtype=np.int32)
    slots = np.repeat(np.arange(first_slot, first_slot + len(lengths), dtype=np.int32), lengths)
    order = _stable_order(ids)
    ids, slots = ids[order], slots[order]
    starts = (
        np.flatnonzero(np.concatenate([[True], (ids[1:] != ids[:-1]) | (slots[1:] != slots[:-1])]))
        if total
        else np.zeros(0, dtype=np.intp)
    )
    frequencies = np.diff(np.append(starts, total))
    return ids[starts], slots[starts], np.minimum(frequencies, 65535).astype(np.uint16)


def _recall_entries(added: _NewCards, first_slot: int) -> _Fielded:
    """The recall fields' entries of new slots numbered from `first_slot`."""
    recall = added.recall
    if recall is None or not added.owners:
        return _Fielded.empty()
    owners = np.asarray(added.owners, dtype=np.int64)
    lengths = np.array([lengths for _, lengths in recall], dtype=np.float32).T[owners]
    terms, slots, kinds, tfs = [], [], [], []
    for kind, (numbers, counts) in enumerate(recall):
        term, slot, tf = _counted(numbers, counts, first_slot)
        terms.append(term)
        slots.append(slot)
        kinds.append(np.full(len(term), kind, dtype=np.uint8))
        tfs.append(tf)
    term, slot, kind_of = np.concatenate(terms), np.concatenate(slots), np.concatenate(kinds)
    order = np.lexsort((kind_of, slot, term))
    return _Fielded(
        owners.astype(np.int32) + np.int32(first_slot),
        lengths,
        term[order],
        slot[order],
        kind_of[order],
        np.concatenate(tfs)[order],
    )


@dataclass
class _Added:
    """New slots' entries, sorted by term then slot, with their keys and field lengths."""

    keys: list[str]
    title_length: npt.NDArray[np.float32]
    text_length: npt.NDArray[np.float32]
    terms: npt.NDArray[np.int32]  # the terms of the entries, each once, increasing
    runs: npt.NDArray[np.int64]  # how many entries each of them has
    slot: npt.NDArray[np.int32]
    title_tf: npt.NDArray[np.uint16]
    text_tf: npt.NDArray[np.uint16]
    fielded: _Fielded

    def release(self) -> None:
        """Drop the entries (once the postings hold them); keys, lengths and fields stay."""
        self.terms, self.slot = np.zeros(0, np.int32), np.zeros(0, np.int32)
        self.runs = np.zeros(0, np.int64)
        self.title_tf = self.text_tf = np.zeros(0, np.uint16)


def _added(keys: list[str], added: _NewCards, first_slot: int) -> _Added:
    """The entries of new slots numbered from `first_slot`, one per key."""
    text_term, text_slot, text_tf = _counted(*added.text, first_slot)
    title_term, title_slot, title_tf = _counted(*added.title, first_slot)
    recall = _recall_entries(added, first_slot)
    new_term, new_slot, new_text_tf = text_term, text_slot, text_tf
    new_title_tf = np.zeros(len(new_term), dtype=np.uint16)
    # Give each title entry to the text entry of the same (term, slot); a title term
    # missing from the card text becomes an entry of its own.
    new_term, new_slot, (new_text_tf, new_title_tf) = _joined(
        new_term,
        new_slot,
        (new_text_tf, new_title_tf),
        title_term,
        title_slot,
        (None, title_tf),
    )
    if len(recall.term):
        # A term found only in a recall field has an entry too (its field counts are
        # the recall entries'), so every (term, card) that scores has one.
        present = np.unique((recall.term.astype(np.int64) << 32) | recall.slot)
        new_term, new_slot, (new_text_tf, new_title_tf) = _joined(
            new_term,
            new_slot,
            (new_text_tf, new_title_tf),
            (present >> 32).astype(np.int32),
            (present & 0xFFFFFFFF).astype(np.int32),
            (None, None),
        )
    # The entries' terms are kept as runs (a batch holds each term's entries in a row).
    starts = np.flatnonzero(np.concatenate([[True], new_term[1:] != new_term[:-1]]))
    return _Added(
        keys,
        np.asarray(added.title[1], dtype=np.float32),
        np.asarray(added.text[1], dtype=np.float32),
        new_term[starts],
        np.diff(np.append(starts, len(new_term))),
        new_slot,
        new_title_tf,
        new_text_tf,
        recall,
    )


def _gathered(
    parts: Sequence[_Added], counts: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint16], npt.NDArray[np.uint16]]:
    """The (slot, title_tf, text_tf) of the parts' entries in (term, slot) order, `counts`
    per term: each entry is put in its place (after the earlier parts' entries of its
    term), no sort of them all."""
    total = int(counts.sum())
    slot = np.empty(total, dtype=np.int32)
    title_tf = np.empty(total, dtype=np.uint16)
    text_tf = np.empty(total, dtype=np.uint16)
    free = np.cumsum(counts) - counts  # where each term's next entry goes
    for part in parts:
        entries = len(part.slot)
        if not entries:
            continue
        starts = np.cumsum(part.runs) - part.runs
        place = np.repeat(free[part.terms] - starts, part.runs) + np.arange(entries)
        slot[place] = part.slot
        title_tf[place] = part.title_tf
        text_tf[place] = part.text_tf
        free[part.terms] += part.runs
        part.release()  # placed: the postings hold them now
    return slot, title_tf, text_tf


def _stable_order(values: npt.NDArray[np.int32]) -> npt.NDArray[np.intp]:
    """A stable sort order of non-negative int32 values: two 16-bit radix passes.

    numpy sorts 16-bit keys with a radix sort, much faster than its timsort on int32; values
    all below 2**16 (a batch of a vault of fewer terms) take one pass.
    """
    if not len(values) or int(values.max()) <= 0xFFFF:
        return np.argsort(values.astype(np.uint16), kind="stable")
    low = (values & 0xFFFF).astype(np.uint16)
    high = (values >> 16).astype(np.uint16)
    order = np.argsort(low, kind="stable")
    return order[np.argsort(high[order], kind="stable")]


def _joined(
    term: npt.NDArray[np.int32],
    slot: npt.NDArray[np.int32],
    columns: tuple[npt.NDArray[np.uint16], ...],
    extra_term: npt.NDArray[np.int32],
    extra_slot: npt.NDArray[np.int32],
    extra_columns: tuple[npt.NDArray[np.uint16] | None, ...],
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], tuple[npt.NDArray[np.uint16], ...]]:
    """Entries sorted by (term, slot) joined with extra ones, also sorted and distinct: an
    extra entry of a (term, slot) present sets its values there (a column given as None is
    left as it is), one not present becomes an entry of its own (0 in the columns not given)."""
    keys = (term.astype(np.int64) << 32) | slot
    extra_keys = (extra_term.astype(np.int64) << 32) | extra_slot
    at = np.searchsorted(keys, extra_keys)
    found = (
        (at < len(keys)) & (keys[np.minimum(at, len(keys) - 1)] == extra_keys)
        if len(keys)
        else np.zeros(len(extra_keys), dtype=np.bool_)
    )
    columns = tuple(column.copy() for column in columns)
    for column, extra in zip(columns, extra_columns, strict=True):
        if extra is not None:
            column[at[found]] = extra[found]
    if found.all():
        return term, slot, columns
    missing = ~found
    where = at[missing]
    joined = tuple(
        np.insert(column, where, extra[missing] if extra is not None else 0)
        for column, extra in zip(columns, extra_columns, strict=True)
    )
    return (
        np.insert(term, where, extra_term[missing]),
        np.insert(slot, where, extra_slot[missing]),
        joined,
    )


def _lengths(analyses: Iterable[Sequence[str]]) -> npt.NDArray[np.float32]:
    return np.asarray([len(terms) for terms in analyses], dtype=np.float32)


def _blob(strings: Sequence[str]) -> npt.NDArray[np.uint8]:
    return np.frombuffer("\n".join(strings).encode("utf-8"), dtype=np.uint8)


def _unblob(array: npt.NDArray[Any]) -> list[str]:
    text = array.tobytes().decode("utf-8")
    return text.split("\n") if text else []


# --- the index: postings plus query-independent impacts ------------------------------


class Bm25Hit(Generic[CardT]):
    """One ranked card; `matched` maps each shared term to its share of the score.

    The matched terms are worked out on first access (explain), for all the hits of
    the query at once, not while ranking.
    """

    __slots__ = ("card", "score", "_slot", "_explanation")

    def __init__(self, card: CardT, score: float, slot: int, explanation: _Explanation) -> None:
        self.card = card
        self.score = score
        self._slot, self._explanation = slot, explanation

    @property
    def matched(self) -> Mapping[str, float]:
        return self._explanation.matched(self._slot)

    def __repr__(self) -> str:
        return f"Bm25Hit({self.card.name!r}, {self.score:.4f})"


class _Explanation:
    """The matched terms of every hit of one query, found in one pass when first asked."""

    def __init__(
        self, index: Bm25Index[Any], term_ids: Sequence[tuple[int, float]], slots: Any
    ) -> None:
        self._index, self._term_ids, self._slots = index, term_ids, slots
        self._by_slot: dict[int, dict[str, float]] | None = None

    def matched(self, slot: int) -> dict[str, float]:
        if self._by_slot is None:
            self._by_slot = self._index._impacts_of_all(self._slots, self._term_ids)
        return self._by_slot.get(slot, {})


class Bm25Index(Generic[CardT]):
    """BM25F over a fixed list of cards; build with `Bm25Index.build`."""

    model = MODEL
    metric = METRIC

    def __init__(
        self,
        cards: Sequence[CardT],
        card_of_slot: npt.NDArray[np.int64],
        postings: _Postings,
        analyzer: Analyzer,
        warnings: list[str],
        analysed: int,
        fields: SearchFields | None = None,
    ) -> None:
        self.cards = _held(cards)
        self.analyzer = analyzer
        self.fields = fields
        self.warnings = warnings
        # cards analysed by this build (the rest came from the store or its delta)
        self.analysed = analysed
        self.damage: str | None = None  # why its store was found damaged while searching
        self._card_of_slot = card_of_slot
        self._postings = postings
        self._keys_known: list[str] | None = None
        self._position: dict[int, int] | None = None  # id(card) -> its index in `cards`
        self._slots_by_card: npt.NDArray[np.int64] | None = None
        self._last_query: tuple[str, Analysis, list[tuple[str, int, int | None]]] | None = None
        self._name_rank = _name_ranks(cards, card_of_slot)
        self._scores_kept: dict[Any, Any] = {}  # by query, or ("many", *queries)
        self._scores_lock = threading.Lock()
        self._compute_impacts()

    @property
    def revision(self) -> str:
        return self.analyzer.fingerprint

    @property
    def store_fingerprint(self) -> str:
        return _store_fingerprint(self.analyzer, self.fields)

    @property
    def _keys(self) -> list[str]:
        """Each card's key, in card order (worked out when first needed)."""
        if self._keys_known is None:
            self._keys_known = _keys_of(self.cards)
        return self._keys_known

    @_keys.setter
    def _keys(self, keys: list[str]) -> None:
        self._keys_known = keys

    @classmethod
    def build(
        cls,
        cards: Sequence[CardT],
        analyzer: Analyzer,
        state_dir: Path | None = None,
        background_save: bool = False,
        previous: Bm25Index[Any] | None = None,
        trust_store: str | None = None,
        fields: SearchFields | None = None,
    ) -> Bm25Index[CardT]:
        """Index the cards, reusing a stored analysis for every card whose content is unchanged.

        The stored analyses come from `previous` (an index of an earlier version of the same
        vault, built with the same analyser) or else from the store under `state_dir`.
        With `background_save`, the updated store is written by a (non-daemon) thread, so
        the index answers queries at once; a crash before the write only costs re-analysis.
        `trust_store` set (to why not) ignores the store and writes it anew. `fields` splits
        the cards that declare recall fields into fields of their own (`hql.search.fields`);
        without it every card is ranked over its title and whole text.
        """
        warnings: list[str] = list(analyzer.config_warnings)
        store_path = state_dir / STORE_NAME if state_dir is not None else None
        fingerprint = _store_fingerprint(analyzer, fields)
        if previous is not None and previous.store_fingerprint == fingerprint:
            postings = previous._postings
        elif trust_store is not None:
            warnings.append(messages.search_index_unreadable(str(store_path), trust_store))
            postings = _Postings.empty()
        else:
            postings = _load_or_empty(store_path, fingerprint, warnings)
            match = _Match.of(cards, postings, fingerprint)
            recorded = match.recalled(store_path) if match is not None else None
            if recorded is not None and len(recorded) == postings.slots and not postings.outdated:
                # the store's slots were matched to these very cards before
                return cls(cards, recorded, postings, analyzer, warnings, 0, fields)
        loaded = postings
        keys = _keys_of(cards)
        known = _read_delta(store_path, fingerprint) if previous is None else None
        try:
            unchanged = len(postings.keys)
            slot_of_card, postings, fresh = _merged(cards, keys, postings, analyzer, fields, known)
        except StoreDamaged as error:  # found reading its keys or entries
            warnings.append(messages.search_index_unreadable(str(store_path), _reason(error)))
            loaded, unchanged = _Postings.empty(), 0
            slot_of_card, postings, fresh = _merged(cards, keys, loaded, analyzer, fields, known)
        card_of_slot = np.empty(len(cards), dtype=np.int64)
        card_of_slot[np.asarray(slot_of_card, dtype=np.int64)] = np.arange(len(cards))
        match = _Match.of(cards, postings, fingerprint)
        changed = fresh or len(postings.keys) != unchanged or loaded.outdated
        if store_path is not None and (changed or (trust_store is not None and not cards)):
            snapshot = replace(
                postings, keys=list(postings.keys), vocabulary=list(postings.vocabulary)
            )
            delta = known is not None
            save = (snapshot, store_path, fingerprint, warnings, match, card_of_slot, delta)
            if background_save:
                threading.Thread(target=_save_quietly, args=save, name="hql-bm25-save").start()
            else:
                _save_quietly(*save)
        elif store_path is not None and match is not None and postings is loaded and loaded.seal:
            match.record(store_path, loaded.seal, card_of_slot)
        analysed = sum(1 for index in fresh if keys[index] not in (known or {}))
        built = cls(cards, card_of_slot, postings, analyzer, warnings, analysed, fields)
        built._keys = keys
        return built

    @classmethod
    def cached(
        cls,
        cards: Sequence[CardT],
        analyzer: Analyzer,
        state_dir: Path | None = None,
        fields: SearchFields | None = None,
    ) -> Bm25Index[CardT]:
        """The index of these cards, kept in memory between queries of one process.

        The last index per (state directory, analyser) is reused as is when the cards are
        the same objects, re-pointed at new card objects when only they changed (a vault
        reload), and updated incrementally (in memory, store saved behind) otherwise.
        """
        key = (
            str(state_dir) if state_dir is not None else None,
            _store_fingerprint(analyzer, fields),
        )
        previous = _RECENT.pop(key, None)
        if previous is not None and len(previous.cards) == len(cards):
            if previous.cards is cards or all(
                old is new for old, new in zip(previous.cards, cards, strict=True)
            ):
                index: Bm25Index[Any] = previous
            elif previous._keys == _keys_of(cards):
                index = previous._for_cards(cards)
            else:
                index = cls.build(cards, analyzer, state_dir, True, previous, fields=fields)
        else:
            index = cls.build(cards, analyzer, state_dir, True, previous, fields=fields)
        _RECENT[key] = index
        while len(_RECENT) > _RECENT_LIMIT:
            _RECENT.pop(next(iter(_RECENT)))
        return index

    def _for_cards(self, cards: Sequence[CardT]) -> Bm25Index[CardT]:
        """This index answering with other card objects of the same content, same order."""
        twin = copy.copy(self)
        twin.cards = _held(cards)
        twin.warnings, twin.analysed = [], 0
        twin._position = None
        return twin

    def analysis(self, query: str) -> Analysis:
        return self._looked_up(query)[0]

    def _looked_up(self, query: str) -> tuple[Analysis, list[tuple[str, int, int | None]]]:
        """The query's analysis, and each of its terms with its count and id (None: no card
        holds it); kept for the last query, which one ranking asks for up to three times."""
        last = self._last_query
        if last is not None and last[0] == query:
            return last[1], last[2]
        analysis = self.analyzer.analyze(query)
        postings = self._postings
        terms = [
            (term, count, postings.term_id(term)) for term, count in Counter(analysis.terms).items()
        ]
        self._last_query = (query, analysis, terms)
        return analysis, terms

    def search(
        self, query: str, limit: int | None = None, among: Sequence[CardT] | None = None
    ) -> list[Bm25Hit[CardT]]:
        """Cards sharing a term with the query, best first, ties by card name.

        `limit` keeps the best `limit` (selected, not sorted in full); `among` ranks only
        those of the index's cards (the whole index when None). Raises `StoreDamaged`
        (and says why in `damage`) when a part of the store read now is damaged.
        """
        with self._noting_damage():
            scored = self._scored(query, among)
            if scored is None or (limit is not None and limit <= 0):
                return []
            scores, term_ids = scored
            found = np.flatnonzero(scores)
            if limit is not None and len(found) > limit:
                found = _best_with_ties(found, scores, limit)
            return self._hits(found, scores, term_ids, limit)

    def scores(
        self, query: str, among: Sequence[CardT] | None = None
    ) -> npt.NDArray[np.float32] | None:
        """Every slot's score for the query as `search` scores it (None: no card shares a
        term), to add up or rank with `best`; raises as `search` does.

        The scores of the whole index for the last few queries are kept (read-only): a
        prompt's variants are scored by its ranking and read again by the context block."""
        if among is None:
            with self._scores_lock:
                if query in self._scores_kept:
                    return self._scores_kept[query]
        with self._noting_damage():
            scored = self._scored(query, among)
        found = None if scored is None else scored[0]
        if among is None:
            if found is not None:
                found.setflags(write=False)
            self._keep_scores(query, found)
        return found

    def _keep_scores(self, key: Any, scores: Any) -> None:
        with self._scores_lock:
            self._scores_kept[key] = scores
            while len(self._scores_kept) > _SCORES_KEPT:
                self._scores_kept.pop(next(iter(self._scores_kept)))

    def hits_of(
        self, scores: npt.NDArray[np.float32] | None, query: str, limit: int
    ) -> list[Bm25Hit[CardT]]:
        """The best `limit` hits of slot `scores` (from `scores`, perhaps added up), in the
        order `search` gives, their matched terms those of `query`."""
        if scores is None or limit <= 0:
            return []
        with self._noting_damage():
            term_ids = self._query_terms(query)
            found = np.flatnonzero(scores)
            if len(found) > limit:
                found = _best_with_ties(found, scores, limit)
            return self._hits(found, scores, term_ids, limit)

    def scores_of_many(
        self, queries: Sequence[str], among: Sequence[CardT] | None = None
    ) -> list[npt.NDArray[np.float32] | None]:
        """`scores` of each query (None: no card shares a term with it), worked out in one
        pass over all their terms' entries: a prompt ranked as many queries pays one numpy
        call, not one per query and term. A score may differ from `scores`' in its last
        bits (the terms are summed in another order). As `scores`, the whole index's
        scores for the last few lists of queries are kept (read-only)."""
        key = ("many", *queries)
        if among is None:
            with self._scores_lock:
                if key in self._scores_kept:
                    return list(self._scores_kept[key])
        with self._noting_damage():
            found = self._scored_many(queries, among)
        if among is None:
            for scores in found:
                if scores is not None:
                    scores.setflags(write=False)
            self._keep_scores(key, found)
        return list(found)

    def _scored_many(
        self, queries: Sequence[str], among: Sequence[CardT] | None
    ) -> list[npt.NDArray[np.float32] | None]:
        size = len(self.cards)
        slots: list[npt.NDArray[np.int32]] = []
        impacts: list[npt.NDArray[np.float32]] = []
        rows: list[int] = []
        weights: list[float] = []
        held = []
        for row, query in enumerate(queries):
            term_ids = self._query_terms(query) if size else []
            held.append(bool(term_ids))
            for term_id, weight in term_ids:
                slot, impact = self._impact_of(term_id)
                slots.append(slot)
                impacts.append(impact)
                rows.append(row)
                weights.append(weight)
        if not slots:
            return [None] * len(queries)
        # One array of every (query, term) entry: its cell in a table of a row per query.
        lengths = np.fromiter(map(len, slots), dtype=np.int64, count=len(slots))
        cells = np.concatenate(slots).astype(np.int64)
        cells += np.repeat(np.asarray(rows, dtype=np.int64) * size, lengths)
        shares = np.concatenate(impacts)
        if any(weight != 1.0 for weight in weights):
            shares = shares * np.repeat(np.asarray(weights, dtype=np.float32), lengths)
        summed = np.bincount(cells, weights=shares, minlength=size * len(queries))
        table = summed.astype(np.float32).reshape(len(queries), size)
        if among is not None:
            table[:, ~self._slot_mask(among)] = 0.0
        return [table[row] if present else None for row, present in enumerate(held)]

    def best(
        self, scores: npt.NDArray[np.float32] | None, limit: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The best `limit` of these slot scores as `search` orders them (ties by card name),
        as each card's position in `cards` and its score, without making hits."""
        if scores is None or limit <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        found = np.flatnonzero(scores)
        if len(found) > limit:
            found = _best_with_ties(found, scores, limit)
        order = np.lexsort((self._name_rank[found], -scores[found]))
        ranked = found[order][:limit]
        return self._card_of_slot[ranked], scores[ranked]

    def count(self, query: str, among: Sequence[CardT] | None = None) -> int:
        """How many hits `search` gives, without making any (raises as `search` does)."""
        with self._noting_damage():
            scored = self._scored(query, among)
        return 0 if scored is None else int(np.count_nonzero(scored[0]))

    def search_passing(
        self,
        query: str,
        at_least: Callable[[float | None], float],
        among: Sequence[CardT] | None = None,
        evidence: Collection[str] = (),
    ) -> tuple[list[Bm25Hit[CardT]], int, int]:
        """The hits `search` gives that score at least `at_least(best)` (in its order), how
        many cards `search` gives in all, and how many of those share a term in `evidence`;
        `best` is the best score among those (None: there are none).

        Only the passing hits are made: a rule that cannot keep the others need not see them.
        Raises `StoreDamaged` as `search` does.
        """
        with self._noting_damage():
            scored = self._scored(query, among)
            if scored is None:
                return [], 0, 0
            scores, term_ids = scored
            found = np.flatnonzero(scores)
            holding = np.zeros(len(scores), dtype=np.bool_)
            held_terms = {
                term_id for term, _, term_id in self._looked_up(query)[1] if term in evidence
            }
            for term_id, _ in term_ids:
                if term_id in held_terms:
                    holding[self._impact_of(term_id)[0]] = True
            held = found[holding[found]]
            best = float(scores[held].max()) if len(held) else None
            # Compared as the rule compares them: each float32 score as a Python float.
            passing = found[scores[found].astype(np.float64) >= np.float64(at_least(best))]
            with_evidence = len(held)
            return self._hits(passing, scores, term_ids, None), len(found), with_evidence

    @contextlib.contextmanager
    def _noting_damage(self) -> Iterator[None]:
        """Say in `damage` why a part of the store read within was found damaged."""
        try:
            yield
        except StoreDamaged as error:
            self.damage = _reason(error)
            raise

    def _scored(
        self, query: str, among: Sequence[CardT] | None
    ) -> tuple[npt.NDArray[np.float32], list[tuple[int, float]]] | None:
        """Every slot's score for the query (0 where no term is shared), and its terms."""
        term_ids = self._query_terms(query)
        if not term_ids or not self.cards:
            return None
        scores = np.zeros(len(self.cards), dtype=np.float32)
        # The terms' entries are added a batch of terms at a time, by one unbuffered `add.at`
        # over their entries in term order: each slot's sum is made in the same order, so
        # the same float32 as adding one term after another.
        slot_parts: list[npt.NDArray[np.int32]] = []
        impact_parts: list[npt.NDArray[np.float32]] = []
        held = 0
        for term_id, weight in term_ids:
            slots, impact = self._impact_of(term_id)
            slot_parts.append(slots)
            impact_parts.append(impact if weight == 1.0 else np.float32(weight) * impact)
            held += len(slots)
            if held >= _ADDED_AT_ONCE:
                _add_entries(scores, slot_parts, impact_parts)
                held = 0
        _add_entries(scores, slot_parts, impact_parts)
        if among is not None:
            scores[~self._slot_mask(among)] = 0.0
        return scores, term_ids

    def _hits(
        self,
        found: npt.NDArray[np.intp],
        scores: npt.NDArray[np.float32],
        term_ids: list[tuple[int, float]],
        limit: int | None,
    ) -> list[Bm25Hit[CardT]]:
        """The hits at these slots, best first, ties by card name (the first `limit`)."""
        order = np.lexsort((self._name_rank[found], -scores[found]))
        ranked = found[order][:limit] if limit is not None else found[order]
        cards, card_of_slot = self.cards, self._card_of_slot[ranked].tolist()
        _prefetch(cards, card_of_slot)
        explanation = _Explanation(self, term_ids, ranked)
        return [
            Bm25Hit(cards[card], score, slot, explanation)
            for card, score, slot in zip(
                card_of_slot, scores[ranked].tolist(), ranked.tolist(), strict=True
            )
        ]

    def _slot_mask(self, among: Sequence[CardT]) -> npt.NDArray[np.bool_]:
        """True at the slot of each given card (by identity, else by equality); a subset of
        the index's own cards given by position (`positions`, `base`) builds none."""
        positions = getattr(among, "positions", None)
        if positions is not None and getattr(among, "base", None) is self.cards:
            mask = np.zeros(len(self.cards), dtype=bool)
            mask[self._slot_of_card()[np.asarray(positions, dtype=np.int64)]] = True
            return mask
        if self._position is None:
            self._position = {id(card): index for index, card in enumerate(self.cards)}
        positions, by_value = self._position, None
        chosen: list[int] = []
        for card in among:
            index = positions.get(id(card))
            if index is None:
                if by_value is None:
                    by_value = {card: index for index, card in enumerate(self.cards)}
                index = by_value.get(card)
            if index is not None:
                chosen.append(index)
        mask = np.zeros(len(self.cards), dtype=bool)
        mask[self._slot_of_card()[np.asarray(chosen, dtype=np.int64)]] = True
        return mask

    def _slot_of_card(self) -> npt.NDArray[np.int64]:
        if self._slots_by_card is None:
            inverse = np.empty(len(self._card_of_slot), dtype=np.int64)
            inverse[self._card_of_slot] = np.arange(len(self._card_of_slot))
            self._slots_by_card = inverse
        return self._slots_by_card

    def score_bound(self, query: str) -> float:
        """The score no card can reach: the sum of the idf of the query's terms.

        A term the vault does not hold counts with the idf of a term held by no card,
        so a question about something absent cannot look fully answered.
        """
        unknown_idf = self.unknown_idf()
        total = 0.0
        for term, count, term_id in self._looked_up(query)[1]:
            idf = float(self._idf[term_id]) if term_id is not None else unknown_idf
            total += _query_weight(term, count) * idf
        return float(total)

    def idf(self, term: str) -> float:
        """How rare an analysed term is among the cards (0.0 for a term no card holds)."""
        term_id = self._postings.term_id(term)
        if term_id is None or term_id >= len(self._idf):
            return 0.0
        return float(self._idf[term_id])

    def _query_terms(self, query: str) -> list[tuple[int, float]]:
        """(term id, weight) of each known query term: its count, halved for prefixes."""
        weighted = []
        for term, count, term_id in self._looked_up(query)[1]:
            if term_id is not None and term_id < len(self._idf):
                weighted.append((term_id, _query_weight(term, count)))
        return weighted

    def _impacts_of_all(
        self, slots: npt.NDArray[np.int64], term_ids: Sequence[tuple[int, float]]
    ) -> dict[int, dict[str, float]]:
        """Each slot's matched terms and their weighted impacts, in query term order.

        Every term's entries are read at once (a long prompt has hundreds of terms): the
        entries at the asked slots are picked by one look-up table, not term by term."""
        by_slot: dict[int, dict[str, float]] = {slot: {} for slot in slots.tolist()}
        held = [(term_id, weight, *self._impact_of(term_id)) for term_id, weight in term_ids]
        held = [entry for entry in held if len(entry[2])]
        if not held or not len(slots):
            return by_slot
        postings = np.concatenate([entry[2] for entry in held])
        asked = np.zeros(int(max(int(slots.max()), int(postings.max()))) + 1, dtype=np.bool_)
        asked[slots] = True
        at = np.flatnonzero(asked.take(postings))  # in term order, by slot within a term
        # Only the few entries found are traced to their term (and impact): the term of
        # every entry is never spelled out.
        ends = np.cumsum([len(entry[2]) for entry in held])
        which = np.searchsorted(ends, at, side="right")
        starts = ends[which] - np.asarray([len(held[w][2]) for w in which.tolist()], dtype=np.int64)
        impacts = np.fromiter(
            (held[w][3][i] for w, i in zip(which.tolist(), (at - starts).tolist(), strict=True)),
            dtype=np.float32,
            count=len(at),
        )
        weights = np.array([entry[1] for entry in held], dtype=np.float32)
        shares = weights[which] * impacts
        vocabulary = self._postings.vocabulary
        terms = [vocabulary[entry[0]] for entry in held]
        for term, slot, share in zip(
            which.tolist(), postings[at].tolist(), shares.tolist(), strict=True
        ):
            by_slot[slot][terms[term]] = share
        return by_slot

    def _compute_impacts(self) -> None:
        """What every term's impacts are made of: its idf and each card's length norms.

        The impacts themselves (idf times the saturated, length-normalised field
        frequencies) are worked out per term when a query first uses it: a process that
        answers one question touches a few terms' entries, not the tens of millions an
        index of 100k cards holds.
        """
        postings = self._postings
        documents = postings.slots
        counts = postings.term_count
        self._ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._idf = _idf(documents, counts).astype(np.float32)
        weights = self.fields.weights if self.fields is not None else DEFAULT_WEIGHTS
        self._text_scale = weights["body"] / _length_norm(postings.text_length)
        self._title_scale = weights["title"] / _length_norm(postings.title_length)
        fielded = postings.fielded
        self._field_scale = _field_scales(fielded.length, [weights[name] for name in RECALL_FIELDS])
        self._impacts: dict[int, tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]] = {}
        self._impacts_held = 0
        self._worked_out = 0  # terms whose impacts were worked out one by one
        # Every entry's slot and impact, in term order (`_ptr`), once a process asked many.
        self._every: tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]] | None = None

    def _impact_of(self, term_id: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        """The slot and impact of each entry of a term (kept for the next queries, within a
        budget)."""
        known = self._impacts.get(term_id)
        if known is not None:
            return known
        start, end = int(self._ptr[term_id]), int(self._ptr[term_id + 1])
        every = self._every
        if every is None and self._worked_out == _TERMS_ONE_BY_ONE:  # tried once
            every = self._every_impact()
        if every is not None:
            return every[0][start:end], every[1][start:end]
        self._worked_out += 1
        slot, title_tf, text_tf = self._postings.entries(start, end)
        weighted = self._impacts_at(term_id, None, slot, title_tf, text_tf, self._idf[term_id])
        if self._impacts_held + len(weighted) > _IMPACTS_KEPT:
            self._impacts.clear()
            self._impacts_held = 0
        self._impacts[term_id] = (slot, weighted)
        self._impacts_held += len(weighted)
        return slot, weighted

    def _every_impact(
        self,
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]] | None:
        """Every term's entries and impacts, worked out a run of terms at a time
        (`_impact_runs`, as `term_rows` reads them; the same floats as term by term), when they fit in
        `_IMPACTS_KEPT`: a process that asks many questions then finds the impacts of a
        new question's terms made, as a repeated question does. None: too many."""
        ptr = self._ptr
        total = int(ptr[-1])
        if total > _IMPACTS_KEPT:
            return None
        slots = np.empty(total, dtype=np.int32)
        impacts = np.empty(total, dtype=np.float32)
        for first, last, slot, weighted in self._impact_runs():
            start, end = int(ptr[first]), int(ptr[last])
            slots[start:end], impacts[start:end] = slot, weighted
        self._every = (slots, impacts)
        self._impacts.clear()  # each term's are in `_every` now
        self._impacts_held = 0
        return self._every

    def _add_recall_fields(
        self, term_id: int, slot: npt.NDArray[np.int32], weighted: npt.NDArray[np.float32]
    ) -> None:
        """Add a term's weighted, length-normalised frequencies in the recall fields to its
        entries' (`slot`, sorted) field sums; a vault without recall fields has none."""
        fielded = self._postings.fielded
        if not len(fielded.term):
            return
        start, end = np.searchsorted(fielded.term, (term_id, term_id + 1))
        if start == end:
            return
        card_slot = fielded.slot[start:end]
        row = np.searchsorted(fielded.owner, card_slot)
        scale = self._field_scale[row, fielded.kind[start:end]]
        np.add.at(weighted, np.searchsorted(slot, card_slot), fielded.tf[start:end] * scale)

    def _impacts_at(
        self,
        first_term: int,
        counts: npt.NDArray[np.int64] | None,
        slot: Any,
        title_tf: Any,
        text_tf: Any,
        idf: Any,
    ) -> npt.NDArray[np.float32]:
        """The impacts of these entries: idf times the saturated, length-normalised, weighted
        field frequencies. The entries are one term's (`counts` None), or the entries of
        the terms from `first_term` on, `counts[i]` each, with `idf` given per entry."""
        weighted = self._text_scale[slot]
        weighted *= text_tf
        # Most entries are body-only; the title part is added where the title has the term.
        in_title = np.flatnonzero(title_tf)
        weighted[in_title] += title_tf[in_title] * self._title_scale[slot[in_title]]
        if counts is None:
            self._add_recall_fields(first_term, slot, weighted)
        else:
            self._add_recall_fields_of_run(first_term, counts, slot, weighted)
        weighted /= weighted + np.float32(K1)  # the saturation
        weighted *= idf
        return cast("npt.NDArray[np.float32]", weighted)

    def _add_recall_fields_of_run(
        self,
        first_term: int,
        counts: npt.NDArray[np.int64],
        slot: npt.NDArray[np.int32],
        weighted: npt.NDArray[np.float32],
    ) -> None:
        """`_add_recall_fields` for each term of a run (its entries `counts[i]` each)."""
        held = self._postings.fielded.term
        if not len(held):
            return
        low, high = np.searchsorted(held, (first_term, first_term + len(counts)))
        starts = np.concatenate([[0], np.cumsum(counts)]).tolist()
        for term_id in np.unique(held[low:high]).tolist():
            at, until = starts[term_id - first_term], starts[term_id - first_term + 1]
            self._add_recall_fields(term_id, slot[at:until], weighted[at:until])

    def _impact_runs(
        self,
    ) -> Iterator[tuple[int, int, npt.NDArray[np.int32], npt.NDArray[np.float32]]]:
        """Every term's entries (slots) and impacts, a run of terms at a time (about
        _ROWS_AT_ONCE entries): (first term, term after the last, slots, impacts)."""
        postings, ptr = self._postings, self._ptr
        terms, first = len(ptr) - 1, 0
        while first < terms:
            last = int(np.searchsorted(ptr, ptr[first] + _ROWS_AT_ONCE, side="right")) - 1
            last = min(max(last, first + 1), terms)
            counts = postings.term_count[first:last]
            slot, title_tf, text_tf = postings.entries(int(ptr[first]), int(ptr[last]))
            impacts = self._impacts_at(
                first, counts, slot, title_tf, text_tf, np.repeat(self._idf[first:last], counts)
            )
            yield first, last, slot, impacts
            first = last

    def term_rows(self) -> Iterator[tuple[str, float, bytes, bytes]]:
        """Every term's (idf, card positions, impacts) as the word index stores them
        (`hql.search.terms`): positions increasing, little-endian int32 and float32.

        Worked out a run of terms at a time (about _ROWS_AT_ONCE entries), so writing the
        word index holds a few megabytes beyond the postings."""
        postings, ptr = self._postings, self._ptr
        vocabulary = postings.vocabulary
        position_of_slot = self._card_of_slot.astype(np.int32)
        # Slots in the order of their cards (as a first build numbers them): a term's
        # entries, in slot order, are in position order already.
        in_order = bool(np.all(position_of_slot[1:] > position_of_slot[:-1]))
        for first, last, slot, impacts in self._impact_runs():
            start = int(ptr[first])
            counts = postings.term_count[first:last]
            positions = position_of_slot[slot]
            if not in_order:
                order = np.lexsort((positions, np.repeat(np.arange(last - first), counts)))
                positions, impacts = positions[order], impacts[order]
            at = positions.astype("<i4").tobytes()
            shares = impacts.astype("<f4").tobytes()
            bounds = (4 * (ptr[first : last + 1] - start)).tolist()
            idfs = self._idf[first:last].tolist()
            for offset in range(last - first):
                low, high = bounds[offset], bounds[offset + 1]
                yield vocabulary[first + offset], idfs[offset], at[low:high], shares[low:high]

    def unknown_idf(self) -> float:
        """The idf a query term no card holds counts with (see `score_bound`)."""
        return float(_idf(len(self.cards), 0))


# Entries of a query's terms added to the scores together (`Bm25Index._scored`).
_ADDED_AT_ONCE = 1 << 20


def _add_entries(
    scores: npt.NDArray[np.float32],
    slot_parts: list[npt.NDArray[np.int32]],
    impact_parts: list[npt.NDArray[np.float32]],
) -> None:
    """Add each part's impacts at its slots, part after part (then forget the parts)."""
    if len(slot_parts) == 1:
        scores[slot_parts[0]] += impact_parts[0]  # one term: its slots are distinct
    elif slot_parts:
        np.add.at(scores, np.concatenate(slot_parts), np.concatenate(impact_parts))
    slot_parts.clear()
    impact_parts.clear()


# Entries of the postings whose word-index rows are worked out together.
_ROWS_AT_ONCE = 1 << 20

# Entries whose impacts an index keeps between queries (4 bytes each).
_IMPACTS_KEPT = 8_000_000
# Terms whose impacts are worked out one by one (a few questions' worth); the next term
# has every term's worked out at once, within `_IMPACTS_KEPT` (`Bm25Index._every_impact`).
_TERMS_ONE_BY_ONE = 64

# How many queries' scores of the whole index an index keeps (`scores`): a long prompt's
# variants (at most 8 segments, the prompt, its technical tokens) and a little more.
_SCORES_KEPT = 12

_RECENT: dict[tuple[str | None, str], Bm25Index[Any]] = {}
_RECENT_LIMIT = 4


def _idf(documents: int, frequency: Any) -> Any:
    return np.log1p((documents - frequency + 0.5) / (frequency + 0.5))


def _length_norm(lengths: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    average = float(lengths.mean()) if len(lengths) else 0.0
    if average <= 0.0:
        return np.ones_like(lengths)
    return (1.0 - B + B * lengths / average).astype(np.float32)


def _field_scales(
    lengths: npt.NDArray[np.float32], weights: Sequence[float]
) -> npt.NDArray[np.float32]:
    """Each recall field's weight over its length norm, per card that has recall fields; a
    field's average length is taken over the cards that have it (most cards have none)."""
    scales = np.zeros(lengths.shape, dtype=np.float32)
    for column, weight in enumerate(weights):
        present = lengths[:, column] > 0
        if present.any():
            average = float(lengths[present, column].mean())
            norm = 1.0 - B + B * lengths[present, column] / average
            scales[present, column] = (weight / norm).astype(np.float32)
    return scales


def _best_with_ties(
    found: npt.NDArray[np.int64], scores: npt.NDArray[np.float32], limit: int
) -> Any:
    """The `limit` best slots plus any slot tied with the last of them."""
    candidate_scores = scores[found]
    threshold = np.partition(candidate_scores, len(found) - limit)[len(found) - limit]
    return found[candidate_scores >= threshold]


def _merged(
    cards: Sequence[SearchCard],
    keys: Sequence[str],
    postings: _Postings,
    analyzer: Analyzer,
    fields: SearchFields | None = None,
    known: Mapping[str, Analysed] | None = None,
) -> tuple[list[int], _Postings, list[int]]:
    """The postings of these cards made from stored ones: each card's slot, the postings,
    the cards not in the store (analysed afresh, or taken from `known`: analyses by key)."""
    from hql.text.analyzer import TermNumbers

    slot_of_card, postings = _reuse_stored_slots(keys, postings)
    fresh = [index for index, slot in enumerate(slot_of_card) if slot < 0]
    known = known or {}
    if not fresh:
        return slot_of_card, postings, fresh  # the stored vocabulary is not even read
    numbers = TermNumbers(analyzer, postings.term_ids)
    # The fresh cards join in batches, so the texts held at once are a few batches', not
    # the vault's: peak memory grows with the vocabulary and the postings, not the text.
    # Worker processes share them out as they finish: as many batches for each, of a size.
    count = -(-len(fresh) // _BATCH)
    workers = min(_processors(), count) if count >= _PARALLEL_BATCHES else 1
    count = -(-count // workers) * workers
    size = -(-len(fresh) // count)
    batches = [fresh[start : start + size] for start in range(0, len(fresh), size)]
    first = first_fresh = len(postings.keys)  # the first fresh card's slot
    text_rows = getattr(cards, "text_rows", None)

    def job_of(at: int) -> _Job:
        """The batch as its analysis reads it: the catalogue rows of the cards not in
        `known` when the cards offer them (`text_rows`), else their texts read here."""
        batch = batches[at]
        wanted = [i for i in batch if keys[i] not in known]
        rows = text_rows(wanted) if text_rows is not None else None
        if rows is None or len(rows) != len(wanted):
            return _Job(first_fresh + at * size, texts_of(batch), None, {})
        held = {offset: known[keys[i]] for offset, i in enumerate(batch) if keys[i] in known}
        return _Job(first_fresh + at * size, None, rows, held)

    def texts_of(batch: list[int]) -> list[_Texts | Analysed]:
        wanted = [i for i in batch if keys[i] not in known]
        read: Mapping[int, SearchCard] | Sequence[SearchCard] = cards
        passing = _passing(cards, wanted)
        if passing is not None:
            read = dict(zip(wanted, passing, strict=True))
        else:
            _prefetch(cards, wanted)
        return [known.get(keys[i]) or _texts(read[i], fields) for i in batch]

    def read(at: int, job: _Job) -> list[_Texts | Analysed]:
        """The texts of a batch, read here (from its rows, or else from its cards)."""
        texts = _job_texts(job, fields)
        return texts if texts is not None else texts_of(batches[at])

    vocabulary = len(postings.vocabulary)
    parts = []
    jobs = map(job_of, range(len(batches)))
    analysed = _analysed_batches(jobs, workers, read, analyzer, fields, numbers)
    for batch, added in zip(batches, analysed, strict=True):
        added.keys = [keys[i] for i in batch]
        parts.append(added)
        for index in batch:
            slot_of_card[index] = first
            first += 1
    return slot_of_card, postings.with_cards(parts, numbers.new_terms(vocabulary)), fresh


@dataclass
class _Job:
    """A batch of fresh cards to analyse, its slots numbered from `first_slot`: their texts
    (or analyses made earlier) read already, or the catalogue rows to read them from
    (`rows`: a `text_rows` answer, which a worker process reads) and the analyses of the
    batch's other cards, by their place in it (`known`)."""

    first_slot: int
    texts: list[_Texts | Analysed] | None
    rows: Any
    known: dict[int, Analysed]


def _job_texts(job: _Job, fields: SearchFields | None) -> list[_Texts | Analysed] | None:
    """The texts of a job's cards (None: a row could not be read as its card: read the
    batch from the cards instead)."""
    if job.texts is not None:
        return job.texts
    made = job.rows.cards()
    if made is None:
        return None
    read = iter(made)
    size = len(made) + len(job.known)
    return [job.known.get(at) or _texts(next(read), fields) for at in range(size)]


def _analysed_batches(
    jobs: Iterator[_Job],
    workers: int,
    read: Callable[[int, _Job], list[_Texts | Analysed]],
    analyzer: Analyzer,
    fields: SearchFields | None,
    numbers: TermNumbers,
) -> Iterator[_Added]:
    """Each batch's entries (`_added`, their terms `numbers`' numbers), in order. With two
    `workers` or more, worker processes read, analyse and count the batches (each
    numbering terms its own way) and their numbers are made these `numbers` here, batch
    after batch: the same entries as analysing them here one after the other.
    `read(at, job)` reads the texts of the batch at `at` here."""
    pool = _worker_pool(workers, analyzer, fields) if workers > 1 else None
    if pool is None:
        for at, job in enumerate(jobs):
            yield _added([], _numbered_cards(read(at, job), numbers), job.first_slot)
        return
    with pool:
        renumber = _Renumbering(numbers, read)
        pending: collections.deque[tuple[int, _Job, Any]] = collections.deque()
        for at, job in enumerate(jobs):
            pending.append(
                (at, job, None if renumber.broken else pool.submit(_analysed_alone, job))
            )
            if len(pending) > workers:
                yield renumber(*pending.popleft())
        while pending:
            yield renumber(*pending.popleft())


class _Renumbering:
    """Makes the numbers of batches analysed by workers, taken in batch order, the vault's.

    A worker numbers the terms of its batches from 0, each new to it taking the next
    number, and says which terms its batch numbered first. Each such term new to the
    vault takes the vault's next number, in that order: the terms a batch holds new to
    the vault are among those new to its worker (a term its worker met before was in an
    earlier batch), in the order of their first occurrence, so numbering them so gives
    each term the number analysing every batch here, in order, would have. A batch's
    entries are the same under either numbering: only the order of its terms' runs
    differs, and a term's entries stay in slot order.
    """

    def __init__(
        self, numbers: TermNumbers, read: Callable[[int, _Job], list[_Texts | Analysed]]
    ) -> None:
        self._numbers = numbers
        self._read = read
        self._own: dict[int, npt.NDArray[np.int32]] = {}  # per worker: its number -> ours
        self.broken = False  # a worker failed: every batch from then on is analysed here

    def __call__(self, at: int, job: _Job, done: Any) -> _Added:
        if done is not None and not self.broken:
            try:
                worker, terms, added = done.result()
            except Exception:  # noqa: BLE001 - a worker that died or failed: analyse here
                self.broken = True
            else:
                if added is not None:
                    return self._renumbered(worker, terms, added)
                # a row its worker could not read as its card (it numbered nothing)
        return _added([], _numbered_cards(self._read(at, job), self._numbers), job.first_slot)

    def _renumbered(self, worker: int, terms: list[str], added: _Added) -> _Added:
        numbered = np.fromiter(
            map(self._numbers.numbers.__getitem__, terms), dtype=np.int32, count=len(terms)
        )
        own = self._own[worker] = np.concatenate(
            [self._own.get(worker, np.zeros(0, dtype=np.int32)), numbered]
        )
        added.terms = own[added.terms]
        fielded = added.fielded
        if len(fielded.term):
            term = own[fielded.term]
            order = np.lexsort((fielded.kind, fielded.slot, term))
            added.fielded = replace(
                fielded,
                term=term[order],
                slot=fielded.slot[order],
                kind=fielded.kind[order],
                tf=fielded.tf[order],
            )
        return added


def _processors() -> int:
    available = getattr(os, "sched_getaffinity", None)
    return len(available(0)) if available is not None else os.cpu_count() or 1


def _worker_pool(workers: int, analyzer: Analyzer, fields: SearchFields | None) -> Any:
    """Processes forked from this one (they start with its analyser and fields as they
    are); None where a process cannot be forked."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if "fork" not in multiprocessing.get_all_start_methods() or _threads_at_work():
        return None
    try:
        pool = ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_start_worker,
            initargs=(analyzer, fields),
        )
        # The first task forks every worker: now, before the cards are read, so that the
        # workers share none of their memory.
        pool.submit(int)
    except (OSError, ValueError, RuntimeError):
        return None
    return pool


def _threads_at_work() -> bool:
    """Whether a thread besides this one and the deadline's watchdog runs: a process forked
    now could start with a lock another thread holds (a server answering other requests:
    ICU's, an import's), so such a process builds in one process."""
    from hql.deadline import WATCHDOG_NAME

    here = threading.current_thread()
    return any(
        thread is not here and thread.name != WATCHDOG_NAME and thread.is_alive()
        for thread in threading.enumerate()
    )


_WORKER_NUMBERS: list[TermNumbers] = []  # in a worker: its numbering of terms
_WORKER_FIELDS: list[SearchFields | None] = []  # in a worker: the build's fields


def _start_worker(analyzer: Analyzer, fields: SearchFields | None) -> None:
    from hql.text.analyzer import TermNumbers

    _WORKER_NUMBERS[:] = [TermNumbers(analyzer, {})]
    _WORKER_FIELDS[:] = [fields]


def _analysed_alone(job: _Job) -> tuple[int, list[str], _Added | None]:
    """In a worker: which worker it is, the terms the batch numbered first (in number
    order), and the batch's entries, their terms this worker's numbers (None, and nothing
    numbered: a row could not be read as its card, the build reads the batch itself)."""
    texts = _job_texts(job, _WORKER_FIELDS[0])
    if texts is None:
        return os.getpid(), [], None
    numbers = _WORKER_NUMBERS[0]
    known = len(numbers.numbers)
    added = _added([], _numbered_cards(texts, numbers), job.first_slot)
    return os.getpid(), numbers.new_terms(known), added


# A card's analysis as the store takes it: its title's terms, its body's, and its terms
# per recall field (by number in RECALL_FIELDS; None for a card that declares none).
Analysed = tuple[list[str], list[str], dict[int, list[str]] | None]
# A card's texts as a build analyses them: its title, its body, its recall fields' texts
# (by number in RECALL_FIELDS, None for a card that declares none).
_Texts = tuple[str, str, dict[int, str] | None]


def _texts(card: SearchCard, fields: SearchFields | None) -> _Texts:
    """The texts of a card a build analyses (see `analysed`)."""
    split = fields.split(card) if fields is not None else None
    body = card.text if split is None else split[0]
    recall = None
    if split is not None:
        recall = {
            number: split[1][name]
            for number, name in enumerate(RECALL_FIELDS)
            if split[1].get(name)
        }
    return _title_field(card), body, recall


def _numbered_cards(cards: Sequence[_Texts | Analysed], numbers: TermNumbers) -> _NewCards:
    """The terms of these cards (their texts, or their analyses made earlier) as numbers:
    all their texts' first, then their titles', then each recall field's, so that a term
    new to the vocabulary is numbered where it first occurs in that order."""

    def numbered(part: Callable[[_Texts | Analysed], str | list[str] | None]) -> _Numbered:
        packed = bytearray()
        lengths = []
        for card in cards:
            text = part(card)
            if text is None:
                lengths.append(0)
            elif isinstance(text, str):
                lengths.append(numbers.add(text, packed))
            else:
                lengths.append(numbers.add_terms(text, packed))
        return np.frombuffer(packed, dtype=np.intc), lengths

    text = numbered(lambda card: card[1])
    title = numbered(lambda card: card[0])
    owners = [at for at, card in enumerate(cards) if card[2]]
    recall = None
    if owners:
        recall = [
            numbered(functools.partial(_recall_part, number))
            for number in range(len(RECALL_FIELDS))
        ]
    return _NewCards(text, title, recall, owners)


def _recall_part(number: int, card: _Texts | Analysed) -> str | list[str] | None:
    """A card's text (or terms) of the recall field of this number, None if it has none."""
    recall = card[2]
    return recall.get(number) if recall else None


def analysed(card: SearchCard, analyzer: Analyzer, fields: SearchFields | None) -> Analysed:
    """The card's analysis, as a build makes it: its texts (`_texts`), each analysed."""
    title, body, recall = _texts(card, fields)
    terms = analyzer.terms
    fielded = None if recall is None else {number: terms(text) for number, text in recall.items()}
    return terms(title), terms(body), fielded


def record_analyses(
    cards: Sequence[SearchCard],
    analyzer: Analyzer,
    state_dir: Path,
    fields: SearchFields | None = None,
) -> bool:
    """Add these cards' analyses to the delta of the store under `state_dir`, for the next
    build to take instead of analysing them (see the module). False, and nothing written,
    when there is no store for this analyser to add to, or the delta would grow past
    DELTA_CARDS cards or DELTA_TERMS terms: then build the index (which folds it in)."""
    store_path = state_dir / STORE_NAME
    fingerprint = _store_fingerprint(analyzer, fields)
    if not files.state_dir_contained(state_dir) or not _store_for(store_path, fingerprint):
        return False
    # An earlier version of a card written again is of no more use to a build.
    written = {card.name for card in cards}
    known = {
        key: entry
        for key, entry in (_delta_entries(store_path, fingerprint) or {}).items()
        if entry[0] not in written
    }
    for card in cards:
        known[_card_key(card)] = (card.name, analysed(card, analyzer, fields))
    terms = sum(
        len(title) + len(body) + sum(map(len, (recall or {}).values()))
        for _, (title, body, recall) in known.values()
    )
    if len(known) > DELTA_CARDS or terms > DELTA_TERMS:
        return False
    entries = [(key, name, *analysis) for key, (name, analysis) in known.items()]
    data = marshal.dumps((fingerprint, entries))
    files.write_atomically(store_path.with_name(DELTA_NAME), _DELTA_MAGIC + files.seal(data))
    return True


def _store_for(store_path: Path, fingerprint: str) -> bool:
    """Whether a store of the blocked layout for this analyser is there (its header read)."""
    try:
        reader = _StoreReader(store_path, fingerprint)
    except Exception:  # noqa: BLE001 - none, or unreadable: a build writes it
        return False
    try:
        return reader.header is not None
    finally:
        reader.close()


def _read_delta(store_path: Path | None, fingerprint: str) -> dict[str, Analysed] | None:
    """The analyses by key the store's delta holds for this analyser (None: none, another
    analyser's, or damaged: then the cards are analysed)."""
    entries = _delta_entries(store_path, fingerprint)
    return None if entries is None else {key: entry[1] for key, entry in entries.items()}


def _delta_entries(
    store_path: Path | None, fingerprint: str
) -> dict[str, tuple[str, Analysed]] | None:
    """The delta's entries: by key, the card's name and its analysis (see `_read_delta`)."""
    if store_path is None:
        return None
    try:
        sealed = files.read_regular(store_path.with_name(DELTA_NAME), MAX_STORE_BYTES)
    except OSError:
        return None
    if not sealed.startswith(_DELTA_MAGIC):
        return None
    data = files.unseal(sealed, len(_DELTA_MAGIC))
    if data is None:
        return None
    try:
        written_for, entries = marshal.loads(data)
    except Exception:  # noqa: BLE001 - not a delta: analyse the cards
        return None
    if written_for != fingerprint or type(entries) is not list:
        return None
    known: dict[str, tuple[str, Analysed]] = {}
    for entry in entries:
        if type(entry) is not tuple or len(entry) != 5:
            return None
        key, name, title, body, recall = entry
        if type(key) is not str or type(name) is not str:
            return None
        if not _strings(title) or not _strings(body):
            return None
        if recall is not None and not (
            type(recall) is dict
            and all(
                type(number) is int and 0 <= number < len(RECALL_FIELDS) and _strings(terms)
                for number, terms in recall.items()
            )
        ):
            return None
        known[key] = (name, (title, body, recall))
    return known


def _strings(value: object) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _drop_delta(store_path: Path) -> None:
    with contextlib.suppress(OSError):
        path = store_path.with_name(DELTA_NAME)
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.unlink(path)


# Cards analysed before their postings are merged in, at most (a build with workers makes
# as many batches for each, all of one size): large enough that merging (a copy of the
# postings so far) stays a small share of the build, small enough that their term lists
# stay a few MB.
_BATCH = 4096
# A build of this many batches or more analyses them in worker processes (see
# `_analysed_batches`): a vault of fewer cards is analysed sooner than workers start.
_PARALLEL_BATCHES = 3


def _store_fingerprint(analyzer: Analyzer, fields: SearchFields | None) -> str:
    return store_fingerprint(analyzer.fingerprint, fields)


def _reuse_stored_slots(keys: Sequence[str], postings: _Postings) -> tuple[list[int], _Postings]:
    """Each card's stored slot (-1 when it must be analysed); unused slots are dropped."""
    if list(keys) == postings.keys:
        return list(range(len(keys))), postings  # nothing changed: the common case
    stored = {key: slot for slot, key in enumerate(postings.keys)}
    slot_of_card = [stored.get(key, -1) for key in keys]
    reused = [slot for slot in slot_of_card if slot >= 0]
    if len(set(reused)) != len(reused) or len(stored) != len(postings.keys):
        slot_of_card = _match_duplicates(keys, postings.keys)
        reused = [slot for slot in slot_of_card if slot >= 0]
    used = np.zeros(len(postings.keys), dtype=bool)
    used[reused] = True
    if used.all():
        return slot_of_card, postings
    postings, renumber = postings.without_slots(~used)
    return [int(renumber[slot]) if slot >= 0 else -1 for slot in slot_of_card], postings


def _match_duplicates(keys: Sequence[str], stored_keys: Sequence[str]) -> list[int]:
    """Slot matching when several cards share a key: each takes a slot of its own."""
    free: dict[str, list[int]] = {}
    for slot, key in enumerate(stored_keys):
        free.setdefault(key, []).append(slot)
    return [free[key].pop() if free.get(key) else -1 for key in keys]


def _load_or_empty(path: Path | None, fingerprint: str, warnings: list[str]) -> _Postings:
    try:
        if path is None or not path.exists() or not files.state_dir_contained(path.parent):
            return _Postings.empty()
        return _Postings.load(path, fingerprint) or _Postings.empty()
    except Exception as error:  # noqa: BLE001 - any failure of the store means "rebuild"
        warnings.append(messages.search_index_unreadable(str(path), _reason(error)))
        return _Postings.empty()


def _save_quietly(
    postings: _Postings,
    path: Path,
    fingerprint: str,
    warnings: list[str],
    match: _Match | None = None,
    card_of_slot: npt.NDArray[np.int64] | None = None,
    delta: bool = False,
) -> None:
    """`delta`: the build read the store's delta, which the saved store now holds."""
    if not files.state_dir_contained(path.parent):
        return  # a `.hql` that leads outside the vault is not written
    try:
        seal = postings.save(path, fingerprint)
    except OSError as error:
        warnings.append(messages.search_index_unwritable(str(path), _reason(error)))
        return
    if delta:
        _drop_delta(path)
    if match is not None and card_of_slot is not None:
        match.record(path, seal, card_of_slot)


class _Match:
    """Which card each slot of a store holds, for cards named by a `search_digest`.

    Matching a store's slots to the cards by key costs a string per card; the outcome
    is recorded beside the store (`MATCH_NAME`) with the store's seal, the analyser
    and the cards' digest, and recalled while all three are the same. The record is
    sealed and checked (a permutation of the cards) before use; anything else about
    it means "match by key".
    """

    def __init__(self, fingerprint: str, cards_digest: bytes, count: int, store_seal: bytes):
        self._fingerprint = fingerprint.encode("utf-8", "surrogatepass")
        self._cards_digest = cards_digest
        self._count = count
        self._store_seal = store_seal

    @classmethod
    def of(cls, cards: Sequence[Any], postings: _Postings, fingerprint: str) -> _Match | None:
        digest = getattr(cards, "search_digest", b"")
        if type(digest) is not bytes or not digest:
            return None
        return cls(fingerprint, digest, len(cards), postings.seal)

    def _identity(self, store_seal: bytes) -> bytes:
        parts = (self._fingerprint, self._cards_digest, store_seal)
        return b"".join(len(part).to_bytes(8, "little") + part for part in parts) + (
            self._count.to_bytes(8, "little")
        )

    def record(self, store_path: Path, store_seal: bytes, card_of_slot: Any) -> None:
        """Record that the store of this seal holds card `card_of_slot[slot]` at each slot."""
        if len(card_of_slot) != self._count:
            return
        identity = np.array_equal(card_of_slot, np.arange(self._count))
        order = b"" if identity else np.asarray(card_of_slot, dtype="<i8").tobytes()
        path = store_path.with_name(MATCH_NAME)
        with contextlib.suppress(OSError):
            if files.state_dir_contained(path.parent):
                files.write_atomically(
                    path, _MATCH_MAGIC + files.seal(self._identity(store_seal) + order)
                )

    def recalled(self, store_path: Path | None) -> npt.NDArray[np.int64] | None:
        """The recorded card of each slot, if recorded for this store, analyser and cards."""
        if store_path is None or not self._store_seal:
            return None
        try:
            sealed = files.read_regular(store_path.with_name(MATCH_NAME), 16 * self._count + 4096)
        except OSError:
            return None
        if not sealed.startswith(_MATCH_MAGIC):
            return None
        data = files.unseal(sealed, len(_MATCH_MAGIC))
        identity = self._identity(self._store_seal)
        if data is None or data[: len(identity)] != identity:
            return None
        order = data[len(identity) :]
        if not order:
            return np.arange(self._count, dtype=np.int64)
        if len(order) != 8 * self._count:
            return None
        card_of_slot = np.frombuffer(order, dtype="<i8").astype(np.int64)
        if card_of_slot.min() < 0 or card_of_slot.max() >= self._count:
            return None
        if not (np.bincount(card_of_slot, minlength=self._count) == 1).all():
            return None  # not a permutation of the cards
        return card_of_slot


def _reason(error: BaseException) -> str:
    return str(error) or type(error).__name__


__all__ = ["B", "K1", "METRIC", "MODEL", "TITLE_WEIGHT", "Bm25Hit", "Bm25Index", "SearchCard"]
