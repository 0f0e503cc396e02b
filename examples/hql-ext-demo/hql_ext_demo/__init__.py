"""`demo`: an example HQL extension.

import demo
cards | wordcount | take(3)
shout("hello")
cards | similar("bearer token") | relevant
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from hql.extend import Card, Context, Extension, Ranking, ranking, retrieval

__version__ = "0.1.0"
MODEL = "demo.similar.v1"

extension = Extension(
    "demo",
    version=__version__,
    summary="word counts, shouting, and ranking by the cosine of word counts",
    card_metadata={"words_model": "demo.words.v1"},
)

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


@extension.step(
    "Collection<Card> | wordcount(min: Int = 0) -> List<Data>",
    summary="each card's name and how many words its body has, keeping cards with at least `min`",
    example="cards | wordcount(min = 50)",
)
def wordcount(cards: Sequence[Card], min: int) -> list[dict[str, object]]:
    counted = [{"card": card.name, "words": len(words(card.body))} for card in cards]
    return [row for row in counted if row["words"] >= min]


@extension.function(
    "shout(text: String) -> String",
    summary="the text in capitals, with an exclamation mark",
    example='shout("hello")',
)
def shout(text: str) -> str:
    return text.upper() + "!"


def _cosine(query: Counter[str], document: Counter[str]) -> float:
    shared = sum(count * document[word] for word, count in query.items())
    if not shared:
        return 0.0
    norm = math.sqrt(sum(c * c for c in query.values())) * math.sqrt(
        sum(c * c for c in document.values())
    )
    return shared / norm


@extension.step(
    "Collection<T> | similar(query: String) -> Ranking<T> where T: Card",
    summary="rank cards by the cosine of their word counts (title and body) with the query; "
    "cards sharing no word are left out",
    example='cards | similar("bearer token")',
    absorbs=("limit",),
)
def similar(cards: Sequence[Card], query: str, context: Context) -> Ranking:
    asked = Counter(words(query))
    if not asked:
        context.warn("the query has no words, so nothing is similar to it")
    scored = []
    for card in cards:
        score = _cosine(asked, Counter(words(f"{card.title} {card.body}")))
        if score > 0:
            shared = sorted(set(asked) & set(words(f"{card.title} {card.body}")))
            scored.append((card, score, "shares " + ", ".join(shared)))
    made = retrieval(query, MODEL, metric="cosine", revision=__version__)
    ranked = ranking(made, scored)
    if context.limit is not None:  # `take(k)` follows: the first k hits are all it keeps
        ranked = Ranking(ranked.hits[: context.limit], ranked.retrieval)
    return ranked
