"""How alike two texts are: word shingles, or cosine when both have vectors.

Used to hide repeats in a context block (`collapse`) and to propose, before a
note is written, the notes it may repeat (`near_duplicates`). A score here may
say two texts are the same; it never decides anything on its own.

Shingles are runs of `SHINGLE_WORDS` consecutive words, read by the analyser's
own segmentation (so CJK text is cut into words by ICU, as bm25 reads it).
Two measures come from them:

- resemblance (Jaccard): shared shingles over all shingles of both;
- containment: shared shingles over the shingles of the shorter text, which
  recognises a short note repeated inside a longer one.

`similarity` is the larger of the two, except that containment only counts
when the shorter text has at least `CONTAINMENT_FROM` shingles (a three-word
text is "contained" in almost anything).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from hql.record import record

SHINGLE_WORDS = 3
CONTAINMENT_FROM = 12
DEFAULT_THRESHOLD = 0.6
METHOD_SHINGLES = "shingles"
METHOD_COSINE = "cosine"


@record
class Similar:
    """A card that may repeat a text: its name, how alike (0..1) and why, in words."""

    name: str
    score: float
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "score": round(self.score, 4), "why": self.why}


@record
class Likeness:
    """The full measure behind a similarity score."""

    score: float
    method: str  # "shingles" or "cosine"
    resemblance: float = 0.0
    containment: float = 0.0

    def why(self) -> str:
        if self.method == METHOD_COSINE:
            return f"cosine {self.score:.2f}"
        return f"shingles: resemblance {self.resemblance:.2f}, containment {self.containment:.2f}"


def shingles(text: str) -> frozenset[int]:
    """The hashed runs of `SHINGLE_WORDS` words of a text (its words alone when shorter)."""
    from hql.text.analyzer import segment

    words = segment(text)
    if len(words) < SHINGLE_WORDS:
        return frozenset(hash((word,)) for word in words)
    # zip makes each run as the tuple a slice would, in C (a new card costs this much)
    runs = zip(*(words[start:] for start in range(SHINGLE_WORDS)), strict=False)
    return frozenset(map(hash, runs))


def likeness(
    a: frozenset[int],
    b: frozenset[int],
    vectors: tuple[Sequence[float], Sequence[float]] | None = None,
) -> Likeness:
    """How alike two shingle sets are; by cosine instead when both vectors are given."""
    if vectors is not None:
        return Likeness(max(0.0, cosine(*vectors)), METHOD_COSINE)
    return shingle_likeness(len(a), len(b), len(a & b) if a and b else 0)


def shingle_likeness(a: int, b: int, shared: int) -> Likeness:
    """How alike two shingle sets are from their sizes and how many shingles they share."""
    if not a or not b:
        return Likeness(0.0, METHOD_SHINGLES)
    resemblance = shared / (a + b - shared)
    smaller = min(a, b)
    containment = shared / smaller
    counted = containment if smaller >= CONTAINMENT_FROM else 0.0
    return Likeness(max(resemblance, counted), METHOD_SHINGLES, resemblance, containment)


def similarity(
    a_text: str,
    b_text: str,
    vectors: tuple[Sequence[float], Sequence[float]] | None = None,
) -> float:
    """How alike two texts are, 0..1: word shingles, or cosine when both vectors are given."""
    if vectors is not None:
        return likeness(frozenset(), frozenset(), vectors).score
    return likeness(shingles(a_text), shingles(b_text)).score


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


# A card's shingles by its digest: a vault's cards are compared again at every
# `remember` and every context block, and their text changes only with their digest.
_BY_DIGEST: dict[str, frozenset[int]] = {}
_BY_DIGEST_LIMIT = 50_000
_lock = threading.Lock()


def card_shingles(card: Any) -> frozenset[int]:
    """The shingles of a card's retrieval text (title, header strings, body), kept by digest."""
    digest = card.digest
    found = _BY_DIGEST.get(digest)
    if found is None:
        found = shingles(card.text)
        with _lock:
            if len(_BY_DIGEST) >= _BY_DIGEST_LIMIT:
                _BY_DIGEST.clear()  # a bound, not a policy: refilled by the next comparisons
            _BY_DIGEST[digest] = found
    return found


def near_duplicates(
    text: str, cards: Iterable[Any], threshold: float = DEFAULT_THRESHOLD
) -> list[Similar]:
    """The cards at least `threshold` alike to `text`, most alike first (then by name)."""
    own = shingles(text)
    found = []
    for card in cards:
        measured = likeness(own, card_shingles(card))
        if measured.score >= threshold:
            found.append(Similar(card.name, measured.score, measured.why()))
    found.sort(key=lambda similar: (-similar.score, similar.name))
    return found
