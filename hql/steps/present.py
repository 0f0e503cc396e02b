"""Extension `present` (prelude): presenters turn any value into its final text."""

from __future__ import annotations

from hql import types as ty
from hql.checker import StepTyping
from hql.interpreter import StepCall
from hql.printing import display, dumps, table, to_json
from hql.registry import REGISTRY, StepSpec
from hql.types import Type
from hql.values import Presentation
from hql.version import __version__

REGISTRY.extension("present", version=__version__, summary="presenters", prelude=True)


def check_presenter(call: StepTyping) -> Type:
    return ty.PRESENTATION


def _unwrap(value: object) -> object:
    return value.text if isinstance(value, Presentation) else value


def run_table(call: StepCall) -> Presentation:
    return Presentation("table", table(call.input))


def run_json(call: StepCall) -> Presentation:
    return Presentation("json", dumps(to_json(call.input)))


def run_text(call: StepCall) -> Presentation:
    return Presentation("text", display(call.input))


def run_explain(call: StepCall) -> Presentation:
    from hql.explain import describe_ranking
    from hql.values import Ranking

    if isinstance(call.input, Ranking):
        return Presentation("explain", "\n".join(describe_ranking(call.input)))
    return Presentation("explain", display(call.input))


for spec in (
    StepSpec(
        "table",
        "present",
        (),
        "T | table -> Presentation",
        "a table of the value",
        "cards | table",
        check_presenter,
        run_table,
    ),
    StepSpec(
        "json",
        "present",
        (),
        "T | json -> Presentation",
        "the value as pretty JSON",
        "cards | take(2) | json",
        check_presenter,
        run_json,
    ),
    StepSpec(
        "text",
        "present",
        (),
        "T | text -> Presentation",
        "the value's plain display",
        "cards | count | text",
        check_presenter,
        run_text,
    ),
    StepSpec(
        "explain",
        "present",
        (),
        "T | explain -> Presentation",
        "how a ranking was made and why each hit scored (matched terms, per-input ranks)",
        'cards | bm25("token") | explain',
        check_presenter,
        run_explain,
    ),
):
    REGISTRY.add(spec)
