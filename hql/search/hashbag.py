"""`hql.hashbag.v1`: the reference's 256-bucket hashed bag of words (reference §12.2).

The algorithm is fixed for conformance (scores match the original to 4 decimals):
words are runs of Unicode alphanumerics longer than one UTF-8 byte, lowercased,
hashed with 64-bit FNV-1a modulo 256, weighted 1 + ln(count), L2-normalised and
compared by cosine. Card vectors are cached by content digest, so a query costs
one matrix-vector product.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MODEL = "hql.hashbag.v1"
METRIC = "cosine"
BUCKETS = 256

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK64 = 0xFFFFFFFFFFFFFFFF
# `\w` minus the underscore is exactly "Unicode alphanumeric" in Python's re.
_WORD = re.compile(r"[^\W_]+")
_ASCII_WORD = re.compile(r"[a-z0-9]{2,}")  # the same rule for lowercased ASCII text


class TextCard(Protocol):
    """What the hashbag needs of a card."""

    @property
    def name(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def digest(self) -> str: ...


CardT = TypeVar("CardT", bound=TextCard)


@lru_cache(maxsize=1 << 16)
def bucket(word: str) -> int:
    """64-bit FNV-1a of the word's UTF-8 bytes, modulo 256."""
    value = _FNV_OFFSET
    for byte in word.encode("utf-8"):
        value = ((value ^ byte) * _FNV_PRIME) & _MASK64
    return value % BUCKETS


def words(text: str) -> list[str]:
    """Lowercased alphanumeric runs longer than one UTF-8 byte."""
    if text.isascii():
        # Lowercasing ASCII first cannot move a word boundary, and is one call.
        return _ASCII_WORD.findall(text.lower())
    found = []
    for match in _WORD.findall(text):
        word = match.lower()  # per word, as the original does (`İ` lowercases to two chars)
        if len(word) > 1 or not word.isascii():
            found.append(word)
    return found


def embed(text: str) -> list[float]:
    """The unit-length 256-bucket vector of a text (all zeros for a text without words)."""
    counts = Counter(bucket(word) for word in words(text))
    vector = [0.0] * BUCKETS
    for index, count in counts.items():
        vector[index] = 1.0 + math.log(count)
    norm = math.sqrt(sum(weight * weight for weight in vector))
    if norm > 0.0:
        vector = [weight / norm for weight in vector]
    return vector


class _Buckets(dict[str, int]):
    """word → bucket, hashed once per distinct word."""

    def __missing__(self, word: str) -> int:
        value = self[word] = bucket(word)
        return value


_BUCKETS = _Buckets()
_VECTOR_CACHE_LIMIT = 1 << 18


def _embed_many(texts: Sequence[str]) -> npt.NDArray[np.float64]:
    """`embed` for many texts at once: one bincount instead of a Python loop per word."""
    import numpy as np

    found = [words(text) for text in texts]
    lengths = [len(text_words) for text_words in found]
    ids = np.fromiter(
        map(_BUCKETS.__getitem__, itertools.chain.from_iterable(found)), np.int64, sum(lengths)
    )
    flat = np.repeat(np.arange(len(texts), dtype=np.int64) * BUCKETS, lengths) + ids
    counts = np.bincount(flat, minlength=len(texts) * BUCKETS).reshape(len(texts), BUCKETS)
    weights = np.zeros(counts.shape, dtype=np.float64)
    present = counts > 0
    weights[present] = 1.0 + np.log(counts[present])
    norms = np.sqrt((weights * weights).sum(axis=1, keepdims=True))
    return np.divide(weights, norms, out=weights, where=norms > 0.0)


class HashbagIndex:
    """Card vectors cached by content digest; one instance may serve many queries."""

    def __init__(self) -> None:
        self._vectors: dict[str, npt.NDArray[np.float64]] = {}
        self._matrix_key: tuple[str, ...] = ()
        self._matrix: npt.NDArray[np.float64] | None = None
        self._name_rank: npt.NDArray[np.int64] | None = None

    def rank(
        self, cards: Sequence[CardT], query: str, limit: int | None = None
    ) -> list[tuple[CardT, float]]:
        """Cards scoring above 0 for the query, best first, ties by card name."""
        import numpy as np

        query_vector = np.asarray(embed(query), dtype=np.float64)
        if not cards or not query_vector.any() or (limit is not None and limit <= 0):
            return []
        matrix, name_rank = self._card_matrix(cards)
        scores = matrix @ query_vector
        kept = np.flatnonzero(scores > 0.0)
        if limit is not None and len(kept) > limit:
            threshold = np.partition(scores[kept], len(kept) - limit)[len(kept) - limit]
            kept = kept[scores[kept] >= threshold]
        order = kept[np.lexsort((name_rank[kept], -scores[kept]))][:limit]
        return [
            (cards[i], score)
            for i, score in zip(order.tolist(), scores[order].tolist(), strict=True)
        ]

    def _card_matrix(
        self, cards: Sequence[TextCard]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        import numpy as np

        key = tuple(card.digest for card in cards)
        if self._matrix is None or self._name_rank is None or key != self._matrix_key:
            missing = [card for card in cards if card.digest not in self._vectors]
            if len(self._vectors) + len(missing) > _VECTOR_CACHE_LIMIT:
                self._vectors.clear()  # edits leave old digests behind; start afresh
                missing = list(cards)
            if missing:
                for card, vector in zip(
                    missing, _embed_many([c.text for c in missing]), strict=True
                ):
                    self._vectors[card.digest] = vector
            self._matrix = np.stack([self._vectors[card.digest] for card in cards])
            names = [card.name for card in cards]
            self._name_rank = np.empty(len(names), dtype=np.int64)
            self._name_rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(
                len(names)
            )
            self._matrix_key = key
        return self._matrix, self._name_rank


_shared_index = HashbagIndex()


def rank(cards: Sequence[CardT], query: str, limit: int | None = None) -> list[tuple[CardT, float]]:
    """Rank cards with the process-wide vector cache (see `HashbagIndex.rank`)."""
    return _shared_index.rank(cards, query, limit)
