"""Graph pictures: DOT, Mermaid and GraphML show presence and relation labels, and parse."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import networkx
import pytest

from hql.api import Session, open_vault
from hql.graph_export import (
    ExportError,
    edge_label,
    to_dot,
    to_graphml,
    to_mermaid,
    write_svg,
)
from hql.graphs import Expanded, Graph, Member, Retrieved
from hql.vault.model import Edge

BIRDS = Path(__file__).parent / "fixtures" / "birds"
OWL_GRAPH = "[[barn-owl]] | expand(depth = 1)"


@pytest.fixture(scope="module")
def graph() -> Graph:
    """Three kinds of presence: retrieved, expanded, member; plain and relation edges."""
    presence = {
        "barn-owl": Retrieved(0.8125),
        "tytonidae": Expanded("barn-owl", 1),
        "strigiformes": Expanded("barn-owl", 2),
        'odd "name"': Member(),
    }
    edges = [
        Edge("barn-owl", "tytonidae", {}),
        Edge("barn-owl", "tytonidae", {"card": "barn-owl-in-tytonidae"}),
        Edge("tytonidae", "strigiformes", {"card": "tytonidae-in-strigiformes", "since": 1850}),
        Edge('odd "name"', "barn-owl", {}),
        Edge("barn-owl", "elsewhere", {}),  # not induced: never drawn
    ]
    return Graph(presence, edges)


def test_edge_labels_name_the_relation_card() -> None:
    assert edge_label(Edge("a", "b", {})) == ""
    assert edge_label(Edge("a", "b", {"card": "a-in-b"})) == "a-in-b"
    assert edge_label(Edge("a", "b", {"card": "a-in-b", "since": 1850})) == "a-in-b, since: 1850"
    annotated = Edge("a", "b", {"relation": "uses", "claim": "id_token"})  # an annotated link
    assert edge_label(annotated) == "uses, claim: id_token"


def test_graphml_parses_with_networkx_and_keeps_presence(graph: Graph, tmp_path: Path) -> None:
    path = tmp_path / "g.graphml"
    path.write_text(to_graphml(graph), encoding="utf-8")
    parsed = networkx.read_graphml(path, force_multigraph=True)
    assert sorted(parsed.nodes) == sorted(graph.nodes)
    assert parsed.nodes["barn-owl"]["presence"] == "retrieved"
    assert parsed.nodes["barn-owl"]["score"] == pytest.approx(0.8125)
    assert parsed.nodes["strigiformes"] == {
        "presence": "expanded",
        "label": "expanded from barn-owl, depth 2",
        "seed": "barn-owl",
        "depth": 2,
    }
    assert parsed.nodes['odd "name"']["presence"] == "member"
    assert parsed.number_of_edges() == 4
    labels = sorted(data["label"] for _, _, data in parsed.edges(data=True))
    assert labels == ["", "", "barn-owl-in-tytonidae", "tytonidae-in-strigiformes, since: 1850"]


def _dot_structure(text: str) -> tuple[set[str], list[tuple[str, str, str]]]:
    """Nodes and (source, target, label) edges of our DOT, read with a small structural parser."""
    quoted = r'"((?:[^"\\]|\\.)*)"'
    nodes = {
        m.group(1).replace('\\"', '"') for m in re.finditer(rf"^  {quoted} \[label=", text, re.M)
    }
    edges = [
        (m.group(1).replace('\\"', '"'), m.group(2).replace('\\"', '"'), m.group(4) or "")
        for m in re.finditer(rf"^  {quoted} -> {quoted}( \[label={quoted}\])?;$", text, re.M)
    ]
    return nodes, edges


def test_dot_is_well_formed_and_shows_presence(graph: Graph) -> None:
    text = to_dot(graph)
    assert text.startswith('digraph "hql" {') and text.endswith("}")
    assert text.count("{") == text.count("}")
    nodes, edges = _dot_structure(text)
    assert nodes == set(graph.nodes)
    assert len(edges) == 4
    assert ("barn-owl", "tytonidae", "barn-owl-in-tytonidae") in edges
    assert '"barn-owl" [label="barn-owl\\nretrieved, score 0.8125", style="filled,bold"' in text
    assert (
        '"strigiformes" [label="strigiformes\\nexpanded from barn-owl, depth 2", style=dashed]'
        in text
    )


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_dot_parses_with_networkx_when_pydot_is_present(graph: Graph, tmp_path: Path) -> None:
    pytest.importorskip("pydot")
    path = tmp_path / "g.dot"
    path.write_text(to_dot(graph), encoding="utf-8")
    parsed = networkx.nx_pydot.read_dot(path)
    assert {"barn-owl", "tytonidae", "strigiformes"} <= set(parsed.nodes)
    assert (
        len(parsed.nodes) == 4
    )  # pydot mangles the escaped quote in the fourth name; Graphviz does not
    assert parsed.nodes["barn-owl"]["label"] == '"barn-owl\\nretrieved, score 0.8125"'
    assert parsed.nodes["tytonidae"]["style"] == "dashed"
    assert parsed.number_of_edges() == 4
    labels = {data.get("label") for _, _, data in parsed.edges("barn-owl", data=True)}
    assert labels == {None, '"barn-owl-in-tytonidae"'}


def test_mermaid_lists_nodes_edges_and_classes(graph: Graph) -> None:
    text = to_mermaid(graph)
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    ids = {name: f"n{i}" for i, name in enumerate(graph.nodes)}
    assert f'  {ids["barn-owl"]}["barn-owl<br/>retrieved, score 0.8125"]' in lines
    assert f'  {ids["barn-owl"]} -->|"barn-owl-in-tytonidae"| {ids["tytonidae"]}' in lines
    assert f"  {ids['barn-owl']} --> {ids['tytonidae']}" in lines
    assert f"  class {ids['strigiformes']},{ids['tytonidae']} expanded" in lines
    assert f"  class {ids['barn-owl']} retrieved" in lines
    assert (
        "#quot;name#quot;" in text
        and "<br/>" in text
        and sum(line.count("-->") for line in lines) == 4
    )


def test_presenters_in_a_program_and_on_the_command_line() -> None:
    session = Session(open_vault(BIRDS))
    outcome = session.run(OWL_GRAPH + " | dot")
    assert not outcome.failed and outcome.value.text.startswith('digraph "hql"')
    assert str(outcome.type) == "Presentation"
    assert session.run("cards | take(2) | mermaid").value.text.startswith("flowchart LR")
    assert session.run("1 | graphml").failed  # pictures need cards or a graph

    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "hql",
            "--vault",
            str(BIRDS),
            "--format",
            "graphml",
            "eval",
            OWL_GRAPH,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "<graphml" in run.stdout
    run = subprocess.run(
        [sys.executable, "-m", "hql", "--format", "dot", "eval", "1 + 1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1 and "has type Int" in run.stderr and "Traceback" not in run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "hql", "--vault", str(BIRDS), "--format", "dot", "check", "-"],
        input=OWL_GRAPH,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (run.returncode, run.stdout) == (0, "Graph\n")  # checking has only a type to show


def test_svg_needs_graphviz_and_says_how_to_install_it(
    graph: Graph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hql.graph_export as export

    monkeypatch.setattr(export, "graphviz_dot", lambda: None)
    with pytest.raises(ExportError, match="apt-get install graphviz"):
        write_svg(graph, tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()


def test_svg_through_a_dot_program(graph: Graph, tmp_path: Path) -> None:
    """A stand-in `dot` checks the arguments and input; the real one is used when installed."""
    fake = tmp_path / "dot"
    fake.write_text(
        f"#!{sys.executable}\nimport sys\nassert sys.argv[1:] == ['-Tsvg']\n"
        "text = sys.stdin.read()\nassert text.startswith('digraph')\n"
        "print('<svg>' + str(text.count('->')) + '</svg>')\n",
        encoding="utf-8",
    )
    fake.chmod(0o755)
    write_svg(graph, tmp_path / "g.svg", dot_program=str(fake))
    assert (tmp_path / "g.svg").read_text(encoding="utf-8").strip() == "<svg>4</svg>"
    failing = tmp_path / "bad-dot"
    failing.write_text("#!/bin/sh\necho 'syntax error' >&2\nexit 3\n", encoding="utf-8")
    failing.chmod(0o755)
    with pytest.raises(ExportError, match="syntax error"):
        write_svg(graph, tmp_path / "h.svg", dot_program=str(failing))


def test_eval_svg_without_graphviz_is_a_clear_message(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "hql",
            "--vault",
            str(BIRDS),
            "eval",
            OWL_GRAPH,
            "--svg",
            str(tmp_path / "owl.svg"),
        ],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert run.returncode == 1
    assert "hql: writing SVG needs Graphviz's `dot` program" in run.stderr
    assert "apt-get install graphviz" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot is not installed (CI installs it)"
)
def test_svg_through_real_graphviz(graph: Graph, tmp_path: Path) -> None:
    target = tmp_path / "real.svg"
    write_svg(graph, target)
    svg = html.unescape(target.read_text(encoding="utf-8"))  # Graphviz writes `-` as &#45;
    assert "<svg" in svg and "</svg>" in svg
    for name in graph.nodes:
        assert f"<title>{name}</title>" in svg


def test_graphml_stays_well_formed_with_control_characters() -> None:
    """XML 1.0 cannot hold most control characters: they are shown as U+FFFD (issue 14, 17)."""
    import xml.etree.ElementTree as ElementTree

    presence = {"bell\x07card": Member(), "plain": Member()}
    edges = [Edge("bell\x07card", "plain", {"note": "esc\x1b[0m and nul\x00"})]
    text = to_graphml(Graph(presence, edges))
    root = ElementTree.fromstring(text)  # raised "not well-formed" before
    ids = sorted(
        node.get("id") for node in root.iter("{http://graphml.graphdrawing.org/xmlns}node")
    )
    assert ids == ["bell\ufffdcard", "plain"]
    assert "esc\ufffd[0m and nul\ufffd" in text
