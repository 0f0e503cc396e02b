"""`recall(q)`: concepts ranked for a question (memory.md §7), not cards.

The concepts are

- the concept cards: every card that is not a relation card (its name, title,
  aliases and whole text, as `bm25` reads them);
- the endpoints of relations that have no card: a card that claims
  `knowledge.type: Relation` names a `source` and a `target`; a name that
  resolves to no card is still a concept, known by its name alone;
- the concepts listed in `[memory] concepts = "concepts.jsonl"` (inside the
  vault): one JSON object a line, `{"name": …, "labels": [...], "links": [...]}`.
  A listed name that is also a card's or an endpoint's adds its labels to that
  concept; any other is a concept of its own.

All are ranked by one BM25F over the same analyser and field weights as `bm25`:
a card keeps the analysis the vault's bm25 store holds for it (nothing is read
again), a concept without a card is a document whose title is its name and whose
text is its labels. A concept none of whose words survive analysis (a name of
punctuation or stop words alone, and no card) can never be recalled: the
Retrieval counts those, and the ones matched by their name and labels alone,
so that a memory says what it cannot recall.
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hql import messages

MAX_CONCEPTS_BYTES = 64 * 1024 * 1024
UNREACHABLE_SHOWN = 10
SOURCES = ("card", "relation", "imported")


@dataclass
class ConceptDoc:
    """A concept as BM25 reads it (`hql.search.bm25.SearchCard`): a card it stands for
    (keeping the card's own analysis when nothing is added) or a name and labels."""

    name: str
    title: str
    text: str
    digest: str
    card: Any = None
    search_title: str = ""

    def __post_init__(self) -> None:
        if not self.search_title:
            self.search_title = self.title

    def __getattr__(self, name: str) -> Any:
        # what the field-aware split reads of a card (`authored`, `body`): the card's own
        card = self.__dict__.get("card")
        if card is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(card, name)


@dataclass
class Gathered:
    """The concepts of a vault (in a fixed order) and what reading them found wrong."""

    concepts: list[Any]  # hql.values.Concept
    docs: list[Any]  # a Card, or a ConceptDoc, per concept
    counts: dict[str, int]
    reach: dict[str, Any] = field(default_factory=dict)


def relation_ends(card: Any) -> tuple[str, ...]:
    """The `source` and `target` a card claims as a relation (as written), else ()."""
    metadata = card.metadata if isinstance(card.metadata, dict) else {}
    knowledge = metadata.get("knowledge")
    if not isinstance(knowledge, dict) or knowledge.get("type") != "Relation":
        return ()
    relation = knowledge.get("relation")
    if not isinstance(relation, dict):
        return ()
    ends = (relation.get("source"), relation.get("target"))
    return tuple(end.strip() for end in ends if isinstance(end, str) and end.strip())


def read_concepts_file(root: Path, name: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The concepts listed in the vault's `[memory] concepts` file, and a warning per line
    (or for the whole file) that could not be read."""
    from hql import files

    shown = name
    path = Path(root, name)
    if Path(name).is_absolute() or not files.Containment(root).inside_vault(path):
        return [], [messages.concepts_outside(shown)]
    try:
        data = files.read_regular(path, MAX_CONCEPTS_BYTES)
    except FileNotFoundError:
        return [], [messages.concepts_missing(shown)]
    except files.TooLarge as error:
        return [], [messages.concepts_unreadable(shown, str(error))]
    except OSError as error:
        return [], [messages.concepts_unreadable(shown, error.strerror or str(error))]
    found: list[dict[str, Any]] = []
    warnings: list[str] = []
    for number, raw in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            warnings.append(messages.concepts_bad_line(shown, number, error.msg))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            warnings.append(messages.concepts_bad_line(shown, number, messages.CONCEPT_NEEDS_NAME))
            continue
        concept_name = " ".join(item["name"].split())
        if not concept_name:
            warnings.append(messages.concepts_bad_line(shown, number, messages.CONCEPT_NEEDS_NAME))
            continue
        labels = _strings(item.get("labels"))
        links = _strings(item.get("links"))
        if labels is None or links is None:
            warnings.append(
                messages.concepts_bad_line(shown, number, messages.CONCEPT_LISTS_OF_TEXT)
            )
            continue
        found.append({"name": concept_name, "labels": labels, "links": links})
    return found, warnings


def _strings(value: Any) -> list[str] | None:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [item for item in value if item.strip()]
    return None


def gather(cards: Sequence[Any], vault: Any, imported: Iterable[dict[str, Any]] = ()) -> Gathered:
    """The concepts of `cards` (concept cards, relation endpoints without a card) and of the
    imported list, each once (names compared ignoring case), in that order."""
    from hql.values import ABSENT, Concept

    concepts: list[Any] = []
    docs: list[Any] = []
    where: dict[str, int] = {}  # casefolded name -> position
    extra_labels: dict[int, list[str]] = {}
    extra_links: dict[int, list[str]] = {}
    counts = dict.fromkeys(SOURCES, 0)

    def add(concept: Any, doc: Any) -> None:
        where[concept.name.casefold()] = len(concepts)
        concepts.append(concept)
        docs.append(doc)
        counts[concept.source] += 1

    relations = []
    for card in cards:
        ends = relation_ends(card)
        if card.kind == "RelationCard":
            relations.append((card, ends))
            continue
        if ends:
            relations.append((card, ends))  # a claim whose ends did not resolve
        labels = tuple(
            dict.fromkeys(item for item in (card.title, *card.aliases) if item != card.name)
        )
        add(Concept(card.name, labels, "card", card), card)
    for card, ends in relations:
        for end in ends:
            key = end.casefold()
            if key in where:
                extra_links.setdefault(where[key], []).append(card.name)
                continue
            resolved = vault.resolve(end) if vault is not None else None
            if resolved is not None and resolved.name.casefold() in where:
                continue
            if resolved is not None:
                continue  # a card left out of the input: not a concept of this recall
            add(Concept(end, (), "relation", ABSENT, (card.name,)), None)
    for item in imported:
        key = item["name"].casefold()
        if key in where:
            position = where[key]
            extra_labels.setdefault(position, []).extend(item["labels"])
            extra_links.setdefault(position, []).extend(item["links"])
            continue
        add(
            Concept(item["name"], tuple(item["labels"]), "imported", ABSENT, tuple(item["links"])),
            None,
        )
    for position, concept in enumerate(concepts):
        more_labels = tuple(
            label
            for label in dict.fromkeys(extra_labels.get(position, ()))
            if label not in concept.labels and label != concept.name
        )
        more_links = tuple(
            link
            for link in dict.fromkeys(extra_links.get(position, ()))
            if link not in concept.links
        )
        if more_labels or more_links:
            concept = Concept(
                concept.name,
                concept.labels + more_labels,
                concept.source,
                concept.card,
                concept.links + more_links,
            )
            concepts[position] = concept
        if docs[position] is None or more_labels:
            docs[position] = _doc_of(concept, more_labels)
    return Gathered(concepts, docs, counts)


def _doc_of(concept: Any, added_labels: tuple[str, ...]) -> ConceptDoc:
    from hql.values import ABSENT

    card = concept.card
    if card is not ABSENT:
        # the card's own text, its title field widened by the labels imported for it
        title = " ".join([getattr(card, "search_title", card.title), *added_labels])
        return ConceptDoc(card.name, card.title, card.text, card.digest, card, title)
    text = "\n".join(concept.labels)
    digest = "concept:" + hashlib.sha256(f"{concept.name}\n{text}".encode()).hexdigest()
    return ConceptDoc(concept.name, concept.name, text, digest)


def reach(gathered: Gathered, analyzer: Any, index: Any = None) -> dict[str, Any]:
    """How many concepts have a card's text, how many only a name and labels, and which
    cannot be reached at all (no word of theirs survives analysis).

    With the concepts' `index`, only the concepts it holds no word of are analysed again
    (to be sure); the others are reachable by what the index holds."""
    from hql.values import ABSENT

    name_only = sum(1 for concept in gathered.concepts if concept.card is ABSENT)
    unreachable: list[str] = []
    for position in _wordless(gathered, index):
        concept, doc = gathered.concepts[position], gathered.docs[position]
        title = getattr(doc, "search_title", doc.title)
        if analyzer.terms(title) or analyzer.terms(" ".join(concept.labels)):
            continue
        if concept.card is not ABSENT and analyzer.terms(doc.text):
            continue
        unreachable.append(concept.name)
    return {
        "total": len(gathered.concepts),
        **{f"from_{source}": gathered.counts[source] for source in SOURCES},
        "name_only": name_only,
        "unreachable": len(unreachable),
        "unreachable_names": unreachable[:UNREACHABLE_SHOWN],
    }


def _wordless(gathered: Gathered, index: Any) -> list[int]:
    """The positions of the concepts whose title and text the index holds no word of (every
    position, when the index cannot say)."""
    import numpy as np

    everyone = list(range(len(gathered.docs)))
    postings = getattr(index, "_postings", None)
    card_of_slot = getattr(index, "_card_of_slot", None)
    if postings is None or card_of_slot is None or len(card_of_slot) != len(everyone):
        return everyone
    words = np.asarray(postings.title_length) + np.asarray(postings.text_length)
    if len(words) != len(everyone):
        return everyone
    return sorted(int(card_of_slot[slot]) for slot in np.flatnonzero(words == 0))


# --- the index over a vault's concepts, built once per loaded vault and concepts file ---

_indexes: weakref.WeakKeyDictionary[Any, tuple[Any, Any, Any]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def concept_index(
    vault: Any, cards: Sequence[Any], concepts_file: str | None
) -> tuple[Any, Any, list[str]]:
    """(index over the concepts' docs, Gathered, warnings). Cards keep the analysis the
    vault's bm25 index already holds; only the concepts without a card are analysed."""
    from hql.search.bm25 import Bm25Index
    from hql.search.shared import bm25_index

    base, warnings = bm25_index(vault, cards)
    imported: list[dict[str, Any]] = []
    if concepts_file and vault is not None:
        imported, problems = read_concepts_file(Path(vault.root), concepts_file)
        warnings = [*warnings, *problems]
    key = (id(base), _imported_key(imported), tuple(id(card) for card in cards))
    with _lock:
        kept = _indexes.get(vault) if vault is not None else None
        if kept is not None and kept[0] == key:
            return kept[1], kept[2], warnings
    gathered = gather(cards, vault, imported)
    index = Bm25Index.build(gathered.docs, base.analyzer, None, previous=base, fields=base.fields)
    gathered.reach = reach(gathered, base.analyzer, index)
    if vault is not None:
        with _lock:
            _indexes[vault] = (key, index, gathered)
    return index, gathered, warnings


def _imported_key(imported: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(imported, sort_keys=True).encode()).hexdigest()


def recall(
    cards: Sequence[Any], query: str, vault: Any, limit: int | None = None
) -> tuple[list[tuple[Any, float, dict[str, Any]]], dict[str, Any], list[str]]:
    """The concepts for `query`, best first, as (concept, score, detail); the Retrieval's
    extra (analysis, score bound, the concepts' reach); warnings to give."""
    from hql.notes.config import memory_config

    concepts_file: str | None = None
    config_warnings: tuple[str, ...] = ()
    if vault is not None:
        config = memory_config(Path(vault.root), vault.config.raw)
        concepts_file, config_warnings = config.concepts, config.warnings
    index, gathered, warnings = concept_index(vault, cards, concepts_file)
    warnings = [*config_warnings, *warnings]
    position = {id(doc): number for number, doc in enumerate(gathered.docs)}
    found = []
    for hit in index.search(query, limit):
        concept = gathered.concepts[position[id(hit.card)]]
        found.append((concept, hit.score, {"matched": dict(hit.matched), "source": concept.source}))
    extra = {
        "analysis": index.analysis(query).to_json(),
        "score_bound": index.score_bound(query),
        "concepts": dict(gathered.reach),
    }
    if concepts_file:
        extra["concepts"]["file"] = concepts_file
    return found, extra, warnings
