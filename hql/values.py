"""Runtime values.

Python scalars stand for themselves: `int` is Int, `float` is Float, `bool` is
Bool and `str` is a String value (printed raw). Everything the language can
hold besides those is a class here. A `Data` wraps an open tree of plain
Python values; its string leaves print quoted, which is what tells
`[[x]].metadata.status` (`"todo"`) from `[[x]].title` (`Bearer tokens`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from hql.record import field, record
from hql.vault.model import Card, Edge

__all__ = [
    "ABSENT",
    "UNIT",
    "Absent",
    "Card",
    "Concept",
    "Data",
    "Date",
    "Edge",
    "Group",
    "Hit",
    "ListValue",
    "MapValue",
    "Ordering",
    "Presentation",
    "Ranking",
    "Retrieval",
    "SetValue",
    "Unit",
]


class Unit:
    """The value of a program that ends in a binding, import or declaration: `()`."""

    _instance: Unit | None = None

    def __new__(cls) -> Unit:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "()"


class Absent:
    """What an `Option<T>` holds when it holds nothing: prints `none`."""

    _instance: Absent | None = None

    def __new__(cls) -> Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "none"

    def __bool__(self) -> bool:
        return False


UNIT = Unit()
ABSENT = Absent()


@record
class Data:
    """An open tree: dict (str keys), list, str, int, float, bool or None (`empty`)."""

    tree: Any


@record
class Date:
    """A calendar date or a date-time, with or without an offset.

    `value` is a `datetime.date` or `datetime.datetime`; this module never imports
    `datetime` itself, so a program without dates does not load it (hql/dates.py does
    the parsing, comparing and arithmetic).
    """

    value: Any

    @property
    def has_time(self) -> bool:
        return hasattr(self.value, "hour")

    def iso(self) -> str:
        return str(self.value.isoformat())


@record
class Task:
    """A `- [ ]` / `- [x]` item of a note (`c.tasks`): its text as written, whether it is
    done, its line in the file, and the dates the Tasks plugin's emoji or Dataview's
    `[due:: …]` fields give it (`Date`, or ABSENT)."""

    text: str
    done: bool
    line: int
    due: Any
    scheduled: Any
    completed: Any

    def tree(self) -> dict[str, Any]:
        """As Data: `{done, line, text}`, and each date the task has (ISO text)."""
        tree: dict[str, Any] = {"done": self.done, "line": self.line, "text": self.text}
        for name in ("due", "scheduled", "completed"):
            value = getattr(self, name)
            if value is not ABSENT:
                tree[name] = value.iso()
        return dict(sorted(tree.items()))


@record
class Concept:
    """What `recall` ranks (memory.md §7): a concept card, a relation's endpoint that has no
    card, or a concept imported from `[memory] concepts`. `source` says which (`card`,
    `relation`, `imported`); `card` is the concept's card, or ABSENT; `labels` the other
    names it is known by; `links` the names it is related to."""

    name: str
    labels: tuple[str, ...]
    source: str
    card: Any  # a Card, or ABSENT
    links: tuple[str, ...] = ()

    kind = "Concept"

    @property
    def title(self) -> str:
        if self.card is not ABSENT:
            return str(self.card.title)
        return self.labels[0] if self.labels else self.name

    @property
    def path(self) -> str:
        return str(self.card.path) if self.card is not ABSENT else ""

    def tree(self) -> dict[str, Any]:
        """As Data: name, labels, source, card (its name, or empty) and links."""
        return {
            "card": self.card.name if self.card is not ABSENT else None,
            "labels": list(self.labels),
            "links": list(self.links),
            "name": self.name,
            "source": self.source,
        }


class Ordering(enum.Enum):
    LESS = "Less"
    EQUAL = "Equal"
    GREATER = "Greater"


@record
class _Elements:
    items: tuple[Any, ...]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@record
class ListValue(_Elements):
    """A List (or Seq): positional."""


@record
class SetValue(_Elements):
    """A Set: distinct elements; its order is never promised."""


@record
class MapValue:
    kind: str  # Map, OrderedMap or SortedMap
    keys: tuple[Any, ...]
    values: tuple[Any, ...]
    type_text: str  # e.g. "Map<String, Int>", for the JSON projection

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(zip(self.keys, self.values, strict=True))


@record
class Retrieval:
    """How a ranking was made; one object shared by every hit of the ranking."""

    query: str
    index: str
    model: str
    revision: str
    metric: str
    approximate: bool
    extra: dict[str, Any] = field(default_factory=dict)  # cutoff, fused inputs, fallback, ...

    def as_tree(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "index": self.index,
            "model": self.model,
            "revision": self.revision,
            "metric": self.metric,
            "approximate": self.approximate,
            **self.extra,
        }


@record
class Hit:
    card: Any  # a Card (Hit<Card>) in every shipped step
    score: float
    retrieval: Retrieval
    detail: Mapping[str, Any] | None = None  # why it scored: matched terms, per-input ranks

    @property
    def query(self) -> str:
        return self.retrieval.query


class LazyDetail(Mapping[str, Any]):
    """A hit's detail worked out when first read: most hits are never explained, so a ranker
    need not find every hit's matched terms while ranking."""

    __slots__ = ("_make", "_value")

    def __init__(self, make: Callable[[], dict[str, Any]]) -> None:
        self._make: Callable[[], dict[str, Any]] | None = make
        self._value: dict[str, Any] | None = None

    def _resolved(self) -> dict[str, Any]:
        if self._value is None:
            assert self._make is not None
            self._value, self._make = self._make(), None
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._resolved()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._resolved())

    def __len__(self) -> int:
        return len(self._resolved())

    def __repr__(self) -> str:
        return repr(self._resolved())


class UnmadeHits(tuple[Hit, ...]):
    """A ranking's hits while only their number is wanted: `count` of a ranking reads its
    length; anything else reading them makes them, once, exactly as the ranker would have.

    A tuple (empty underneath) so that it goes wherever a ranking's hits go; every way of
    reading the elements is routed to the made ones.
    """

    def __new__(cls, count: int, make: Callable[[], tuple[Hit, ...]]) -> UnmadeHits:
        unmade = super().__new__(cls)
        unmade._count, unmade._make, unmade._made = count, make, None
        return unmade

    _count: int
    _make: Callable[[], tuple[Hit, ...]]
    _made: tuple[Hit, ...] | None

    def made(self) -> tuple[Hit, ...]:
        if self._made is None:
            self._made = self._make()
        return self._made

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.made())

    def __getitem__(self, at: Any) -> Any:
        return self.made()[at]

    def __contains__(self, item: object) -> bool:
        return item in self.made()

    def __eq__(self, other: object) -> bool:
        return self.made() == (other.made() if isinstance(other, UnmadeHits) else other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.made())

    def __add__(self, other: Any) -> Any:
        return self.made() + tuple(other)

    def __reduce__(self) -> Any:
        return (tuple, (self.made(),))

    def index(self, *args: Any) -> int:
        return self.made().index(*args)

    def count(self, item: Any) -> int:
        return self.made().count(item)

    def __repr__(self) -> str:
        return repr(self.made())


@record
class Ranking:
    hits: tuple[Hit, ...]
    retrieval: Retrieval

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    @property
    def query(self) -> str:
        return self.retrieval.query


@record
class Group:
    """One group of `group(by = …)`: its key and its elements in input order (HQL-0004)."""

    key: Any
    items: ListValue


@record
class Presentation:
    presenter: str
    text: str
    # A table with columns: their names and, per row, the JSON of each cell (None: blank).
    columns: tuple[str, ...] | None = None
    rows: tuple[tuple[Any, ...], ...] | None = None


def is_collection(value: Any) -> bool:
    return isinstance(value, ListValue | SetValue | Ranking)


def elements(value: Any) -> tuple[Any, ...]:
    """The elements a step iterates; absence is the empty collection, a Data list its items."""
    if isinstance(value, ListValue | SetValue):
        return value.items
    if isinstance(value, Ranking):
        return value.hits
    if value is ABSENT:
        return ()
    if isinstance(value, Data):
        tree = value.tree
        if tree is None:
            return ()
        if isinstance(tree, list):
            return tuple(Data(item) for item in tree)
        return (value,)
    return (value,)
