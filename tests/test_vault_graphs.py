"""Projection and expansion (§6.2) on the fixture vault, built on networkx."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from hql.graphs import Expanded, Graph, Member, Retrieved, expand, project
from hql.vault import RELATION_CARD, Card, Edge, Vault


@dataclass(frozen=True)
class Hit:
    card: Card
    score: float


@pytest.fixture(scope="module")
def vault() -> Vault:
    return Vault.open(Path(__file__).parent / "fixtures" / "vault", use_cache=False)


def card(vault: Vault, name: str) -> Card:
    found = vault.card(name)
    assert found is not None
    return found


def labels(graph: Graph) -> dict[str, str]:
    return {name: how.label() for name, how in graph.presence.items()}


def test_presence_labels() -> None:
    assert Member().label() == "member"
    assert Retrieved(0.48613).label() == "retrieved 0.4861"
    assert Expanded("oauth", 2).label() == "expanded from oauth at depth 2"


def test_relation_cards_project_to_their_endpoints(vault: Vault) -> None:
    relations = [c for c in vault.cards if c.kind == RELATION_CARD]
    graph = project(relations, vault)
    assert graph.nodes == ["bearer-tokens", "oauth"]
    assert labels(graph) == {
        "bearer-tokens": "expanded from oauth-defines-bearer at depth 1",
        "oauth": "expanded from oauth-defines-bearer at depth 1",
    }
    # The reference would collect the relation's edges twice (5 induced); never here.
    assert graph.induced_edges == [
        Edge("oauth", "bearer-tokens", {"relation": "defines"}),
        Edge("oauth", "bearer-tokens", {"card": "oauth-defines-bearer"}),
        Edge("bearer-tokens", "oauth", {}),
    ]
    assert graph.nx.number_of_nodes() == 2 and graph.nx.number_of_edges() == 3
    assert graph.nx.nodes["oauth"]["presence"] == Expanded("oauth-defines-bearer", 1)


def test_hits_are_retrieved_and_cards_members(vault: Vault) -> None:
    graph = project([Hit(card(vault, "oauth"), 0.4861), card(vault, "sessions")], vault)
    assert labels(graph) == {"oauth": "retrieved 0.4861", "sessions": "member"}
    assert graph.edges == list(vault.edges)  # every vault edge is collected
    assert graph.induced_edges == []


def test_a_lone_graph_is_returned_unchanged(vault: Vault) -> None:
    graph = project([card(vault, "oauth")], vault)
    assert project([graph], vault) is graph


def test_expand_both_directions(vault: Vault) -> None:
    graph = expand(
        project([card(vault, "sessions"), card(vault, "http-headers")], vault), vault, 2, "both"
    )
    assert labels(graph) == {
        "bearer-tokens": "expanded from http-headers at depth 1",
        "http-headers": "member",
        "oauth": "expanded from http-headers at depth 2",
        "sessions": "member",
    }


def test_expand_uplinks_only(vault: Vault) -> None:
    seeded = project([card(vault, "bearer-tokens")], vault)
    graph = expand(seeded, vault, 5, "uplinks")
    assert labels(graph) == {
        "bearer-tokens": "member",
        "http-headers": "expanded from bearer-tokens at depth 1",
        "oauth": "expanded from bearer-tokens at depth 1",
    }


def test_expand_downlinks_only(vault: Vault) -> None:
    graph = expand(project([card(vault, "http-headers")], vault), vault, 1, "downlinks")
    assert labels(graph) == {
        "bearer-tokens": "expanded from http-headers at depth 1",
        "http-headers": "member",
    }
    assert expand(graph, vault, 0, "both") == graph


def test_expand_refuses_bad_arguments(vault: Vault) -> None:
    graph = project([card(vault, "oauth")], vault)
    with pytest.raises(
        ValueError, match="`direction` is `uplinks`, `downlinks` or `both`, not `up`"
    ):
        expand(graph, vault, 1, "up")
    with pytest.raises(ValueError, match="a depth cannot be negative"):
        expand(graph, vault, -1, "both")


def test_projection_rejects_non_cards(vault: Vault) -> None:
    with pytest.raises(TypeError, match="a graph is projected from cards"):
        project([1], vault)


def test_expansion_terminates_on_cycles(tmp_path: Path) -> None:
    for index in range(50):
        (tmp_path / f"n{index}.md").write_text(f"[[n{(index + 1) % 50}]] [[n{(index + 7) % 50}]]\n")
    vault = Vault.open(tmp_path)
    graph = expand(project([vault.cards[0]], vault), vault, 1000, "both")
    assert len(graph.nodes) == 50
    assert len(graph.induced_edges) == 100


def test_no_duplicate_edges_and_missing_targets_are_names(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("[[b]] {w: 1} [[b]] {v: 2} [[ghost]]\n")
    vault = Vault.open(tmp_path)
    assert vault.edges == (Edge("a", "b", {"v": 2, "w": 1}), Edge("a", "ghost", {}))
    graph = expand(project(vault.cards, vault), vault, 1, "both")
    assert graph.nodes == ["a", "b", "ghost"]
    assert graph.induced_edges == list(vault.edges)


def test_project_without_a_vault(vault: Vault) -> None:
    graph = project([card(vault, "oauth")], None)
    assert graph.nodes == ["oauth"] and graph.edges == []


def test_a_link_that_repeats_a_relation_edge_is_kept_once(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("[[b]] {card: rel}\n")
    (tmp_path / "b.md").write_text("# B\n")
    (tmp_path / "rel.md").write_text(
        "---\nmetadata:\n  knowledge:\n    type: Relation\n"
        "    relation: {source: a, target: b}\n---\n"
    )
    vault = Vault.open(tmp_path)
    assert vault.edges == (Edge("a", "b", {"card": "rel"}), Edge("a", "b", {"card": "rel"}))
    assert not vault.edges_unique
    graph = project(vault.cards, vault)
    assert graph.nodes == ["a", "b"]
    assert graph.edges == [Edge("a", "b", {"card": "rel"})]


def test_projection_edge_order_puts_relation_edges_first(vault: Vault) -> None:
    assert vault.edges_unique
    graph = project([card(vault, "sessions"), card(vault, "oauth-defines-bearer")], vault)
    assert graph.edges == [
        Edge("oauth", "bearer-tokens", {"relation": "defines"}),
        Edge("oauth", "bearer-tokens", {"card": "oauth-defines-bearer"}),
        Edge("bearer-tokens", "http-headers", {}),
        Edge("bearer-tokens", "oauth", {}),
    ]


def test_the_seed_chain_and_edge_layout_docs_graphs_describes() -> None:
    """docs/graphs.md: a relation card seeds its ends, expand seeds from every node, and the
    edges come relation-seeded first, then links by (source, target), then relation edges."""
    import hql

    sample = hql.open_vault(Path(__file__).parent.parent / "vaults" / "web-auth")
    graph = hql.run(
        'cards | lexical("bearer") | take(2) | expand(depth = 1) | graph', vault=sample
    ).value
    relation = "oauth-issues-bearer-tokens"
    assert graph.presence["oauth"] == Expanded(relation, 1)
    assert isinstance(graph.presence["bearer-tokens"], Retrieved)
    assert graph.presence["pkce"] == Expanded("oauth", 1)  # one step from a seeded end
    edges = graph.induced_edges
    seeded = [e for e in sample.uplinks("oauth") if e.target == "bearer-tokens"]
    assert edges[: len(seeded)] == seeded
    rest = edges[len(seeded) :]
    links = [e for e in rest if "card" not in e.data]
    relations = [e for e in rest if "card" in e.data]
    assert rest == links + relations
    assert [(e.source, e.target) for e in links] == sorted((e.source, e.target) for e in links)
    assert [e.data["card"] for e in relations] == sorted(e.data["card"] for e in relations)
