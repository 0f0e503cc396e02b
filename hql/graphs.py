"""The HQL Graph value and the two ways to grow one: projection and expansion (§6.2).

A graph is a networkx MultiDiGraph whose nodes carry `presence` (why the
node is there) and whose edges carry `data`, plus the order edges were
collected in, which printing shows. networkx is imported inside functions:
the language must start without it.

Decided by product.md §2: a graph never holds the same edge (source, target,
data) twice, where the reference could collect one twice.
"""

from __future__ import annotations

import json
import numbers
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hql import messages
from hql.vault.model import RELATION_CARD, Card, Edge

if TYPE_CHECKING:
    import networkx

    from hql.vault import Vault

DIRECTIONS = ("uplinks", "downlinks", "both")


@dataclass(frozen=True)
class Member:
    """The node was in the collection the graph was projected from."""

    def label(self) -> str:
        return "member"


@dataclass(frozen=True)
class Retrieved:
    """The node was retrieved, with the score that retrieved it."""

    score: float

    def label(self) -> str:
        return f"retrieved {self.score:.4f}"


@dataclass(frozen=True)
class Expanded:
    """The node was reached from `seed` at `depth` steps (a relation card seeds at 1)."""

    seed: str
    depth: int

    def label(self) -> str:
        return f"expanded from {self.seed} at depth {self.depth}"


@dataclass(frozen=True)
class Missing:
    """The node is a link target that names no card of the vault (never a phantom card)."""

    def label(self) -> str:
        return "missing"


Presence = Member | Retrieved | Expanded | Missing


class Graph:
    """Nodes with their presence, and the edges collected for them, each once."""

    def __init__(
        self, presence: dict[str, Presence], edges: Iterable[Edge], *, unique: bool = False
    ) -> None:
        """`unique=True` promises the edges hold no duplicate, which skips the check."""
        import networkx

        self.presence: dict[str, Presence] = dict(sorted(presence.items()))
        self._edges: list[Edge] = list(edges) if unique else list(_unique(edges))
        present = self.presence
        self._induced = [
            edge for edge in self._edges if edge.source in present and edge.target in present
        ]
        self.nx: networkx.MultiDiGraph = networkx.MultiDiGraph()
        for name, how in present.items():
            self.nx.add_node(name, presence=how)
        for edge in self._induced:
            self.nx.add_edge(edge.source, edge.target, data=edge.data)

    @property
    def nodes(self) -> list[str]:
        """Node names, sorted."""
        return list(self.presence)

    @property
    def edges(self) -> list[Edge]:
        """Every collected edge, in collection order (endpoints need not be nodes)."""
        return list(self._edges)

    @property
    def induced_edges(self) -> list[Edge]:
        """The edges whose endpoints are both nodes: what printing, JSON and `g.edges` show."""
        return list(self._induced)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Graph)
            and self.presence == other.presence
            and self._edges == other._edges
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Graph({len(self.presence)} nodes, {len(self.induced_edges)} edges)"


def project(elements: Iterable[object], vault: Vault | None) -> Graph:
    """Project cards and hits into a graph (reference §6.2).

    A lone Graph is returned unchanged. A hit is `Retrieved`, a card a
    `Member` (a later element's presence replaces an earlier one). A relation
    card is never a node: its endpoints arrive `Expanded` from it at depth 1
    unless already present, and the vault edges between them come first.
    Then every vault edge is collected.
    """
    items = list(elements)
    if len(items) == 1 and isinstance(items[0], Graph):
        return items[0]
    presence: dict[str, Presence] = {}
    edges: list[Edge] = []
    for element in items:
        card, how = _card_and_presence(element)
        if card.kind == RELATION_CARD:
            _project_relation(card, vault, presence, edges)
        else:
            presence[card.name] = how
    if vault is None:
        return Graph(presence, edges)
    if vault.edges_unique:
        # Relation edges are vault edges, so dropping them by identity from the
        # full list is the whole duplicate check; no need to compare data.
        taken = {id(edge) for edge in edges}
        edges = _unique_by_identity(edges)
        edges.extend(edge for edge in vault.edges if id(edge) not in taken)
        return Graph(presence, edges, unique=True)
    edges.extend(vault.edges)
    return Graph(presence, edges)


def _unique_by_identity(edges: list[Edge]) -> list[Edge]:
    seen: set[int] = set()
    kept = []
    for edge in edges:
        if id(edge) not in seen:
            seen.add(id(edge))
            kept.append(edge)
    return kept


def _card_and_presence(element: object) -> tuple[Card, Presence]:
    if isinstance(element, Card):
        return element, Member()
    card = getattr(element, "card", None)
    score = getattr(element, "score", None)
    if isinstance(card, Card) and isinstance(score, numbers.Real):  # numpy scores too
        return card, Retrieved(float(score))
    raise TypeError(messages.graph_bad_element(type(element).__name__))


def _project_relation(
    card: Card, vault: Vault | None, presence: dict[str, Presence], edges: list[Edge]
) -> None:
    endpoints = card.endpoints
    if endpoints is None:
        return
    source, target = endpoints
    for end in (source, target):
        presence.setdefault(end, Expanded(card.name, 1))
    if vault is not None:
        edges.extend(edge for edge in vault.uplinks(source) if edge.target == target)


def expand(graph: Graph, vault: Vault, depth: int, direction: str, missing: bool = True) -> Graph:
    """Breadth-first from every node in name order; already-present nodes keep their presence.

    Each node is entered at most once, so cycles of any length terminate. In
    an Obsidian vault a link target that names no card is a `Missing` node
    and a dead end (two notes linking to the same absent note are not joined
    through it); `missing=False` leaves such nodes out. The reference dialect
    traverses them as names, as the reference does.
    """
    if direction not in DIRECTIONS:
        raise ValueError(messages.graph_bad_direction(direction))
    if depth < 0:
        raise ValueError(messages.graph_negative_depth())
    presence = dict(graph.presence)
    obsidian = getattr(vault, "dialect", "reference") == "obsidian"
    if not missing:
        presence = {name: how for name, how in presence.items() if not isinstance(how, Missing)}
    queue = deque((name, name, 0) for name in sorted(presence))
    while queue:
        node, seed, distance = queue.popleft()
        if distance >= depth:
            continue
        for neighbour in _neighbours(vault, node, direction):
            if neighbour not in presence:
                if obsidian and vault.card(neighbour) is None:
                    if missing:
                        presence[neighbour] = Missing()
                    continue
                presence[neighbour] = Expanded(seed, distance + 1)
                queue.append((neighbour, seed, distance + 1))
    return Graph(presence, graph._edges, unique=True)


def _neighbours(vault: Vault, node: str, direction: str) -> Iterator[str]:
    if direction != "downlinks":
        for edge in vault.uplinks(node):
            yield edge.target
    if direction != "uplinks":
        for edge in vault.downlinks(node):
            yield edge.source


def _unique(edges: Iterable[Edge]) -> Iterator[Edge]:
    seen: set[tuple[str, str, str]] = set()
    for edge in edges:
        key = (edge.source, edge.target, _canonical(edge.data))
        if key not in seen:
            seen.add(key)
            yield edge


def _canonical(data: Any) -> str:
    """A hashable form of a Data tree; `1` and `1.0` and `true` stay distinct."""
    if not data:
        return "{}" if isinstance(data, dict) else repr(data)
    return json.dumps(_tagged(data), sort_keys=True, separators=(",", ":"))


def _tagged(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _tagged(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_tagged(item) for item in value]
    if isinstance(value, bool | float):
        return [type(value).__name__, value]
    return value
