"""Graph pictures in the `present` extension: `dot`, `mermaid` and `graphml`.

Each takes a Graph, or cards and hits it projects into one first (as `graph`
does), and returns the picture's text. The writers live in hql.graph_export.
"""

from __future__ import annotations

import hql.steps.present  # noqa: F401  (the `present` extension must exist first)
from hql import types as ty
from hql.checker import StepTyping
from hql.interpreter import StepCall
from hql.registry import REGISTRY, StepSpec
from hql.steps.graph import _check_cards, _project
from hql.types import Type
from hql.values import Presentation


def check_picture(call: StepTyping) -> Type:
    _check_cards(call, allow_graph=True)
    return ty.PRESENTATION


def _presenter(format_name: str) -> StepSpec:
    def run(call: StepCall) -> Presentation:
        from hql.graph_export import export

        return Presentation(format_name, export(_project(call), format_name))

    summaries = {
        "dot": "the graph as Graphviz DOT, presence and relation labels included",
        "mermaid": "the graph as a Mermaid flowchart, presence and relation labels included",
        "graphml": "the graph as GraphML with presence, score, seed and depth attributes",
    }
    return StepSpec(
        format_name,
        "present",
        (),
        f"Graph | {format_name} -> Presentation",
        summaries[format_name],
        f"cards | take(3) | expand(depth = 1) | {format_name}",
        check_picture,
        run,
    )


for name in ("dot", "mermaid", "graphml"):
    REGISTRY.add(_presenter(name))
