"""Extension `present` (prelude): presenters turn any value into its final text."""

from __future__ import annotations

from hql import messages
from hql import types as ty
from hql.checker import StepTyping
from hql.interpreter import StepCall
from hql.printing import columns_table, display, dumps, record_columns, records_of, table, to_json
from hql.registry import REGISTRY, Param, StepSpec
from hql.types import Type
from hql.values import Data, Presentation
from hql.vault.walk import OBSIDIAN
from hql.version import __version__

REGISTRY.extension("present", version=__version__, summary="presenters", prelude=True)


def check_presenter(call: StepTyping) -> Type:
    return ty.PRESENTATION


def _unwrap(value: object) -> object:
    return value.text if isinstance(value, Presentation) else value


def check_table(call: StepTyping) -> Type:
    if call.has("columns") and call.value("columns") != ty.BOOL:
        found = call.value("columns")
        raise call.error(
            messages.argument_type("table", "columns", ty.BOOL, found), call.arg_span("columns")
        )
    return ty.PRESENTATION


def run_table(call: StepCall) -> Presentation:
    wanted = call.args.get("columns")
    if wanted is None:  # by default, as the vault's dialect prints (docs/language.md)
        vault = call.vault
        wanted = vault is not None and vault.dialect == OBSIDIAN
    records = records_of(call.input) if wanted is True else None
    if records is None:
        return Presentation("table", table(call.input))
    columns = record_columns(records)
    rows = tuple(
        tuple(to_json(Data(tree[key])) if key in tree else None for key in columns)
        for tree in records
    )
    return Presentation("table", columns_table(records), tuple(columns), rows)


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
        (Param("columns", "Bool", default=None, positional=False),),
        "T | table(columns?: Bool) -> Presentation",
        "a table of the value; a list of records has one column per key (by default in an"
        " Obsidian vault: docs/language.md)",
        "cards | map(c => {name: c.name, tags: c.tags}) | table(columns = true)",
        check_table,
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
