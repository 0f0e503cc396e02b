"""The size budget of a program's values (docs/vault.md, "The caps").

A program can describe values far larger than it is long: nine bindings of
`[a, a, a, …]` name a list of 10⁹ elements in 400 bytes, because the inner
lists are shared. Every list, set, map, data value and string a program makes
is measured as it is made, counting what printing, comparing or serialising
it would visit (a shared part counts each time it appears); one over the
budget ends the program with a report naming the expression that made it.

Measuring is linear in the new value's own elements: the sizes of values
already measured are remembered for the run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

from hql.values import Data, ListValue, MapValue, SetValue, elements

MAX_ELEMENTS = 10_000_000
MAX_BYTES = 256 * 1024 * 1024
_MEMO_LIMIT = 1_000_000
_PRUNE_FIRST = 4096  # entries, before the memo first looks for values nobody else holds
_MEMO_ONLY = 2  # references to a value held only by the memo: its entry and the call
_COLLECTIONS = frozenset({ListValue, SetValue, MapValue, Data, dict, list})  # measured by parts


class OverBudget(Exception):
    def __init__(self, elements: int, size: int) -> None:
        super().__init__(elements, size)
        self.elements, self.size = elements, size


class Budget:
    def __init__(self, max_elements: int = MAX_ELEMENTS, max_bytes: int = MAX_BYTES) -> None:
        self.max_elements = max_elements
        self.max_bytes = max_bytes
        self._memo: dict[int, tuple[Any, int, int]] = {}
        self._prune_at = _PRUNE_FIRST

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> Budget:
        """`[limits] elements = N` and `bytes = N` of hql.toml (positive integers) override."""
        elements, size = section.get("elements"), section.get("bytes")
        return cls(
            elements if isinstance(elements, int) and _positive(elements) else MAX_ELEMENTS,
            size if isinstance(size, int) and _positive(size) else MAX_BYTES,
        )

    def check(self, value: Any) -> None:
        """Raise OverBudget when `value` is larger than the budget allows."""
        if type(value) is str:
            if len(value) > self.max_bytes:
                raise OverBudget(1, len(value))
            return
        if not isinstance(value, ListValue | SetValue | MapValue | Data):
            return
        elements, size = self.measure(value)
        if elements > self.max_elements or size > self.max_bytes:
            raise OverBudget(elements, size)

    def ahead(self, elements: int, size: int) -> None:
        """Raise OverBudget for a value of this size before it is made (a split or a
        replace knows its result's size from counting, without allocating it)."""
        if elements > self.max_elements or size > self.max_bytes:
            raise OverBudget(elements, size)

    def gather(self, parts: Iterable[Any]) -> ListValue:
        """The parts as a list, stopped with OverBudget as soon as they outgrow the budget:
        a step whose parts are large (`map` to lists of lists) is refused while it builds its
        value, not after (each part was measured when it was made, so this is a lookup)."""
        gathered: list[Any] = []
        append = gathered.append
        total, size = 1, 0
        most_elements, most_bytes = self.max_elements, self.max_bytes
        for part in parts:
            kind = type(part)  # `measure` inline for the parts that are not collections
            if kind in _COLLECTIONS:
                count, length = self.measure(part)
                total += count
                size += length
                if total > most_elements or size > most_bytes:
                    raise OverBudget(total, size)
            else:
                total += 1
                if kind is str:
                    size += len(part)
                if total > most_elements or size > most_bytes:
                    raise OverBudget(total, size)
            append(part)
        return self._remembered(ListValue(tuple(gathered)), total, size)

    def gather_contents(self, collections: Iterable[Any]) -> ListValue:
        """The elements of every collection, in order, as `flat_map` and `flatten` join them:
        counted as each collection arrives, so a cross product (`cards | flat_map(a => cards
        | flat_map(…))`) stops at the budget instead of being built whole first."""
        gathered: list[Any] = []
        total, size = 1, 0
        most_elements, most_bytes = self.max_elements, self.max_bytes
        for collection in collections:
            parts = elements(collection)
            if type(collection) in (ListValue, SetValue):
                count, length = self.measure(collection)  # remembered since it was made
                total += count - 1  # its parts, without the collection itself
                size += length
            else:
                count, length = self._measure_collection(parts)
                total += count - 1
                size += length
            if total > most_elements or size > most_bytes:
                raise OverBudget(total, size)
            gathered.extend(parts)
        return self._remembered(ListValue(tuple(gathered)), total, size)

    def _remembered(self, value: Any, elements: int, size: int) -> Any:
        memo = self._memo
        if len(memo) >= self._prune_at:
            self._forget_unused()
        memo[id(value)] = (value, elements, size)
        return value

    def _forget_unused(self) -> None:
        """Drop the sizes of values nothing but this memo holds any more: the memo keeps its
        values alive (so that an id stays theirs), and a cross product's inner lists, dropped
        by the program long ago, would otherwise stay in memory until the run ends."""
        memo = self._memo
        unused = [key for key, entry in memo.items() if sys.getrefcount(entry[0]) <= _MEMO_ONLY]
        for key in unused:
            del memo[key]
        if len(memo) >= _MEMO_LIMIT:
            memo.clear()
        self._prune_at = max(_PRUNE_FIRST, 2 * len(memo))  # amortised: linear in all entries

    def measure(self, value: Any) -> tuple[int, int]:
        kind = type(value)
        if kind is str:
            return 1, len(value)
        if kind in _COLLECTIONS:
            key = id(value)
            known = self._memo.get(key)
            if known is not None and known[0] is value:
                return known[1], known[2]
            elements, size = self._measure_collection(value)
            self._remembered(value, elements, size)  # kept alive: its id stays its own
            return elements, size
        return 1, 0

    def _measure_collection(self, value: Any) -> tuple[int, int]:
        if isinstance(value, MapValue):
            parts: Any = (*value.keys, *value.values)
        elif isinstance(value, Data):
            parts = (value.tree,)
        elif isinstance(value, dict):
            parts = (*value.keys(), *value.values())
        else:
            parts = value.items if isinstance(value, ListValue | SetValue) else value
            if getattr(parts, "only_cards", False):  # cards built when first read: count them
                return 1 + len(parts), 0  # as a card measures (1, 0)
        elements, size = 1, 0
        most_elements, most_bytes = self.max_elements, self.max_bytes
        for part in parts:
            kind = type(part)  # `measure` inline for the parts that are not collections
            if kind in _COLLECTIONS:
                count, length = self.measure(part)
                elements += count
                size += length
            else:
                elements += 1
                if kind is str:
                    size += len(part)
            if elements > most_elements or size > most_bytes:
                break  # already over: the exact size does not matter
        return elements, size


def _positive(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
