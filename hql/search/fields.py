"""Which fields of a card `bm25` weighs, and how much: `[search.fields]` (memory.md §2).

A card that declares recall fields (summary, triggers, use_when, aliases, topics) is ranked
over them as fields of their own beside its title and the rest of its text (BM25F); its
`ignore_when` phrases are no field at all. A card that declares none is ranked over its
title and whole retrieval text, so a vault without recall fields ranks as it always did.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hql import messages
from hql.vault.recall import DEFAULT_KEYS, SEARCH_FIELDS, field_mapping, field_texts

# The recall fields' order is their number in the bm25 store.
RECALL_FIELDS = SEARCH_FIELDS
DEFAULT_WEIGHTS: dict[str, float] = {
    "title": 3.0,
    "body": 1.0,
    "summary": 2.0,
    "triggers": 5.0,
    "use_when": 1.0,
    "aliases": 3.0,
    "topics": 2.0,
}
WEIGHTED_FIELDS = tuple(DEFAULT_WEIGHTS)

Split = Callable[[Any], "tuple[str, dict[str, str]] | None"]


@dataclass(frozen=True)
class SearchFields:
    """The weights of the fields, and how a card's text is split into them.

    `split(card)` gives the card's body text and its recall fields' texts, or None for a
    card ranked over its title and whole text; `key` names what `split` reads (a store of
    postings split another way is not reused).
    """

    weights: Mapping[str, float]
    split: Split
    key: str

    def weight(self, name: str) -> float:
        return float(self.weights.get(name, DEFAULT_WEIGHTS[name]))


def field_weights(section: Any) -> tuple[dict[str, float], list[str]]:
    """The weights of a `[search.fields]` table over the defaults, and what was wrong with it
    (each problem a message; the entry keeps its default)."""
    weights = dict(DEFAULT_WEIGHTS)
    if section is None:
        return weights, []
    if not isinstance(section, Mapping):
        return weights, [messages.search_fields_not_table()]
    problems = []
    for name, value in section.items():
        if name not in DEFAULT_WEIGHTS:
            problems.append(messages.search_field_unknown(str(name), WEIGHTED_FIELDS))
        elif isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            problems.append(messages.search_field_weight(str(name)))
        else:
            weights[name] = float(value)
    return weights, problems


def search_fields_for(vault: Any) -> tuple[SearchFields, list[str]]:
    """A vault's fields: weights from `[search.fields]`, recall keys from `[context.fields]`;
    and the problems of `[search.fields]`, as warnings."""
    config = vault.config
    weights, problems = field_weights(config.section("search").get("fields"))
    mapping = field_mapping(config.section("context").get("fields"))[0]
    return fields_of(weights, mapping), [messages.search_config_entry_ignored(p) for p in problems]


def fields_of(
    weights: Mapping[str, float] | None = None, mapping: dict[str, tuple[str, ...]] | None = None
) -> SearchFields:
    """Fields with these weights (the defaults when None), recall keys read through `mapping`."""
    keys = mapping or DEFAULT_KEYS
    named = json.dumps(sorted((name, list(read)) for name, read in keys.items()))
    key = "recall-" + hashlib.sha256(named.encode()).hexdigest()[:16]

    def split(card: Any) -> tuple[str, dict[str, str]] | None:
        return field_texts(card, keys)

    return SearchFields(dict(weights or DEFAULT_WEIGHTS), split, key)


__all__ = [
    "DEFAULT_WEIGHTS",
    "RECALL_FIELDS",
    "SearchFields",
    "field_weights",
    "fields_of",
    "search_fields_for",
]
