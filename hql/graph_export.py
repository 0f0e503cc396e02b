"""Graph pictures: a Graph value as Graphviz DOT, Mermaid or GraphML text, and SVG through `dot`.

Every format shows why a node is present (retrieved with its score, expanded
with its seed and depth, or a member) and labels relation edges with the
relation card that made them. Only the standard library is used here: the
GraphML is written by hand so the layout stays stable across networkx
versions, and networkx's reader is what the tests parse it with.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from xml.sax.saxutils import escape as _escape
from xml.sax.saxutils import quoteattr as _quoteattr

from hql import messages
from hql.graphs import Expanded, Graph, Member, Presence, Retrieved
from hql.printing import display_data, format_score
from hql.vault.model import Edge

FORMATS = ("dot", "mermaid", "graphml")

# XML 1.0 cannot carry these characters at all, not even as references: GraphML
# shows each as U+FFFD (the replacement character) so the file stays well-formed.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def escape(text: str) -> str:
    return _escape(_NOT_XML.sub("\ufffd", text))


def quoteattr(text: str) -> str:
    return _quoteattr(_NOT_XML.sub("\ufffd", text))


class ExportError(Exception):
    """A picture that cannot be made (Graphviz missing or failing); the message says what to do."""


@dataclass(frozen=True)
class NodeFacts:
    """What a picture says about one node."""

    name: str
    kind: str  # "member", "retrieved" or "expanded"
    detail: str  # the presence as one short line
    score: float | None = None
    seed: str | None = None
    depth: int | None = None


def node_facts(name: str, presence: Presence) -> NodeFacts:
    if isinstance(presence, Retrieved):
        return NodeFacts(
            name,
            "retrieved",
            f"retrieved, score {format_score(presence.score)}",
            score=presence.score,
        )
    if isinstance(presence, Expanded):
        return NodeFacts(
            name,
            "expanded",
            f"expanded from {presence.seed}, depth {presence.depth}",
            seed=presence.seed,
            depth=presence.depth,
        )
    assert isinstance(presence, Member)
    return NodeFacts(name, "member", "member")


def edge_label(edge: Edge) -> str:
    """What an edge says: its `relation` and relation `card` first, then any other data as `key: value`."""
    data = edge.data
    if not isinstance(data, dict):
        return "" if data is None else display_data(data)
    leading = [str(data[key]) for key in ("relation", "card") if isinstance(data.get(key), str)]
    rest = [
        f"{key}: {_plain(value)}"
        for key, value in data.items()
        if not (key in ("relation", "card") and isinstance(value, str))
    ]
    return ", ".join(leading + rest)


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else display_data(value)


def _facts(graph: Graph) -> list[NodeFacts]:
    return [node_facts(name, graph.presence[name]) for name in graph.nodes]


# --- DOT ---------------------------------------------------------------------

_DOT_STYLE = {
    "retrieved": 'style="filled,bold", fillcolor="#fde68a"',
    "expanded": "style=dashed",
    "member": "style=solid",
}


def dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: Graph, name: str = "hql") -> str:
    lines = [
        f"digraph {dot_quote(name)} {{",
        "  node [shape=box, fontname=Helvetica];",
        "  edge [fontname=Helvetica, fontsize=10];",
    ]
    for facts in _facts(graph):
        label = dot_quote(f"{facts.name}\n{facts.detail}")
        lines.append(f"  {dot_quote(facts.name)} [label={label}, {_DOT_STYLE[facts.kind]}];")
    for edge in graph.induced_edges:
        label = edge_label(edge)
        attributes = f" [label={dot_quote(label)}]" if label else ""
        lines.append(f"  {dot_quote(edge.source)} -> {dot_quote(edge.target)}{attributes};")
    lines.append("}")
    return "\n".join(lines)


# --- Mermaid -----------------------------------------------------------------


def _mermaid_text(text: str) -> str:
    """Mermaid labels are quoted; `#quot;`, `#lt;`, `#gt;` are its entity escapes."""
    escaped = text.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
    return '"' + escaped.replace("\n", "<br/>") + '"'


def to_mermaid(graph: Graph) -> str:
    ids = {name: f"n{index}" for index, name in enumerate(graph.nodes)}
    lines = ["flowchart LR"]
    for facts in _facts(graph):
        lines.append(f"  {ids[facts.name]}[{_mermaid_text(facts.name + chr(10) + facts.detail)}]")
    for edge in graph.induced_edges:
        label = edge_label(edge)
        arrow = f" -->|{_mermaid_text(label)}| " if label else " --> "
        lines.append(f"  {ids[edge.source]}{arrow}{ids[edge.target]}")
    lines.append("  classDef retrieved fill:#fde68a,stroke:#b45309,stroke-width:2px")
    lines.append("  classDef expanded stroke-dasharray: 5 5")
    for kind in ("retrieved", "expanded"):
        members = [ids[facts.name] for facts in _facts(graph) if facts.kind == kind]
        if members:
            lines.append(f"  class {','.join(members)} {kind}")
    return "\n".join(lines)


# --- GraphML -----------------------------------------------------------------

_GRAPHML_KEYS = (
    ("presence", "node", "string"),
    ("label", "node", "string"),
    ("score", "node", "double"),
    ("seed", "node", "string"),
    ("depth", "node", "int"),
    ("label", "edge", "string"),
    ("data", "edge", "string"),
)


def _data_element(key: str, value: Any) -> str:
    return f'<data key="{key}">{escape(str(value))}</data>'


def _node_element(facts: NodeFacts) -> str:
    fields = [_data_element("n_presence", facts.kind), _data_element("n_label", facts.detail)]
    if facts.score is not None:
        fields.append(_data_element("n_score", repr(facts.score)))
    if facts.seed is not None:
        fields.append(_data_element("n_seed", facts.seed))
    if facts.depth is not None:
        fields.append(_data_element("n_depth", facts.depth))
    return f"    <node id={quoteattr(facts.name)}>{''.join(fields)}</node>"


def _edge_element(index: int, edge: Edge) -> str:
    import json

    fields = [
        _data_element("e_label", edge_label(edge)),
        _data_element(
            "e_data", json.dumps(edge.data, ensure_ascii=False, sort_keys=True, default=str)
        ),
    ]
    return (
        f'    <edge id="e{index}" source={quoteattr(edge.source)} '
        f"target={quoteattr(edge.target)}>{''.join(fields)}</edge>"
    )


def to_graphml(graph: Graph) -> str:
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">',
    ]
    for name, domain, kind in _GRAPHML_KEYS:
        lines.append(
            f'  <key id="{domain[0]}_{name}" for="{domain}" attr.name="{name}" attr.type="{kind}"/>'
        )
    lines.append('  <graph id="hql" edgedefault="directed">')
    lines.extend(_node_element(facts) for facts in _facts(graph))
    lines.extend(_edge_element(index, edge) for index, edge in enumerate(graph.induced_edges))
    lines.append("  </graph>")
    lines.append("</graphml>")
    return "\n".join(lines)


EXPORTERS: dict[str, Callable[[Graph], str]] = {
    "dot": to_dot,
    "mermaid": to_mermaid,
    "graphml": to_graphml,
}


def export(graph: Graph, format_name: str) -> str:
    return EXPORTERS[format_name](graph)


# --- SVG through Graphviz ----------------------------------------------------


def graphviz_dot() -> str | None:
    """The path of Graphviz's `dot` program, or None when it is not installed."""
    return shutil.which("dot")


def write_svg(graph: Graph, path: Path, dot_program: str | None = None) -> None:
    """Lay the graph out with Graphviz and write the SVG; ExportError says how to install it."""
    program = dot_program or graphviz_dot()
    if program is None:
        raise ExportError(messages.graphviz_missing())
    try:
        result = subprocess.run(
            [program, "-Tsvg"],
            input=to_dot(graph).encode("utf-8"),
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ExportError(messages.graphviz_failed(str(error))) from None
    if result.returncode != 0:
        reason = (
            result.stderr.decode("utf-8", "replace").strip() or f"exit status {result.returncode}"
        )
        raise ExportError(messages.graphviz_failed(reason))
    try:
        path.write_bytes(result.stdout)
    except OSError as error:
        raise ExportError(messages.cannot_write(str(path), error)) from None


# --- the command line ---------------------------------------------------------


def graph_of(outcome: Any, format_name: str) -> Graph:
    """The outcome's Graph value; ExportError naming what it is otherwise."""
    value = outcome.value
    if not isinstance(value, Graph):
        found = str(outcome.type) if outcome.type is not None else type(value).__name__
        raise ExportError(messages.picture_needs_graph(format_name, found))
    return value


def emit_picture(outcome: Any, format_name: str, out: TextIO, err: TextIO) -> int:
    """`--format dot|mermaid|graphml`: the picture on `out`, reports on `err`."""
    if outcome.reports:
        print(outcome.render_reports(), file=err)
    if outcome.failed:
        return 1
    if not outcome.evaluated:  # `hql check`: there is only a type to print
        print(outcome.text(), file=out)
        return 0
    try:
        print(export(graph_of(outcome, format_name), format_name), file=out)
    except ExportError as error:
        print(f"hql: {error}", file=err)
        return 1
    return 0


def emit_svg(outcome: Any, path: str, out: TextIO, err: TextIO) -> int:
    """`eval … --svg FILE`: the graph drawn by Graphviz into FILE."""
    if outcome.reports:
        print(outcome.render_reports(), file=err)
    if outcome.failed:
        return 1
    try:
        graph = graph_of(outcome, "svg")
        write_svg(graph, Path(path))
    except ExportError as error:
        print(f"hql: {error}", file=err)
        return 1
    print(messages.svg_written(path, len(graph.nodes), len(graph.induced_edges)), file=out)
    return 0
