"""Explain: the checked plan, the analysed questions, why each hit scored, and the time each stage took.

Used by `hql explain`, the REPL's `:explain` and the `explain` presenter.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hql import messages
from hql.diagnostics import HqlError
from hql.interpreter import Interpreter
from hql.printing import display, format_score, layout
from hql.source import Source, Span
from hql.syntax import tree as t
from hql.types import Type
from hql.values import Ranking, Retrieval

if TYPE_CHECKING:
    from hql.api import Outcome, Session
    from hql.checker import Plan


@dataclass
class StageRecord:
    text: str
    input: Type | None
    output: Type
    seconds: float
    value: Any


class TimedInterpreter(Interpreter):
    """Records every step it runs, with its types and the time it took."""

    def __init__(self, *args: Any, source: Source, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.source = source
        self.records: list[StageRecord] = []

    def run_step(self, node: t.Node, input_value: Any, input_type: Type, span: Span) -> Any:
        started = time.perf_counter()
        value = super().run_step(node, input_value, input_type, span)
        elapsed = time.perf_counter() - started
        self.records.append(
            StageRecord(self._text(span), input_type, self.plan.types[node], elapsed, value)
        )
        return value

    def _text(self, span: Span) -> str:
        return self.source.data[span.start : span.end].decode("utf-8", errors="replace")


@dataclass
class Trace:
    """One program checked and run stage by stage: its outcome, plan, stage records and time."""

    outcome: Outcome
    plan: Plan | None
    records: list[StageRecord]
    seconds: float
    value: Any


def trace(
    session: Session, text: str, origin: str, params: Mapping[str, Any] | None = None
) -> Trace:
    """Check a program and, when it checks, run it recording every stage."""
    from hql.api import parameters

    types, values = parameters(params)
    outcome, plan, scope = session.check(text, origin, params=types)
    if plan is None or outcome.failed:
        return Trace(outcome, None, [], 0.0, None)
    interpreter = TimedInterpreter(
        plan,
        session.vault,
        dict(session.values),
        source=outcome.source,
        text=outcome.source.data,  # quoted by warnings about messy front matter
        params=values,
    )
    started = time.perf_counter()
    try:
        value = interpreter.run()
    except HqlError as error:
        interpreter.reports.append(error.report)
        value = None
    total = time.perf_counter() - started
    outcome.reports.extend(interpreter.reports)
    return Trace(outcome, plan, interpreter.records, total, value)


def explain(
    session: Session, text: str, origin: str, params: Mapping[str, Any] | None = None
) -> tuple[str, str, bool]:
    """(explanation, rendered reports, failed) for one program (`params` bind its `$name`s)."""
    run = trace(session, text, origin, params)
    outcome, plan, total, value = run.outcome, run.plan, run.seconds, run.value
    if plan is None:
        return "", outcome.render_reports(), True
    lines = ["plan"]
    rows = [
        [
            record.text,
            str(record.input) if record.input else "",
            str(record.output),
            f"{record.seconds * 1000:.2f} ms",
        ]
        for record in run.records
    ]
    lines += [
        "  " + line
        for line in layout(["stage", "input", "output", "time"], rows, cells=True).split("\n")
    ]
    lines.append(f"  total {total * 1000:.2f} ms; result {plan.result}")
    if plan.rewrites:
        lines += ["", "rewrites", *("  " + rewrite for rewrite in plan.rewrites)]
    shown: list[Retrieval] = []
    for record in run.records:  # each retrieval once, where it was made (take keeps it)
        if isinstance(record.value, Ranking) and not any(
            r is record.value.retrieval for r in shown
        ):
            shown.append(record.value.retrieval)
            lines += ["", *describe_ranking(record.value, heading=record.text)]
    if not outcome.failed and value is not None:
        lines += ["", "value", *("  " + line for line in display(value).split("\n"))]
    reports = outcome.render_reports() if outcome.reports else ""
    return "\n".join(lines), reports, outcome.failed


def describe_retrieval(retrieval: Retrieval) -> list[str]:
    lines = [
        f"  model {retrieval.model} (revision {retrieval.revision}), metric {retrieval.metric}, "
        f"approximate {'true' if retrieval.approximate else 'false'}",
    ]
    if retrieval.index:
        lines.append(f"  index {retrieval.index}")
    search = retrieval.extra.get("search")
    if isinstance(search, dict) and "store" in search:
        lines.append(_search_line(search))
    analysis = retrieval.extra.get("analysis")
    if isinstance(analysis, dict):
        synonyms = ", ".join(
            f"{item['found']} -> {item['group']}" for item in analysis.get("synonyms", [])
        )
        lines += [
            f"  question words: {', '.join(analysis.get('words', [])) or '(none)'}",
            f"  ignored: {', '.join(analysis.get('ignored', [])) or '(none)'}",
            f"  synonyms applied: {synonyms or '(none)'}",
            f"  terms: {', '.join(analysis.get('terms', [])) or '(none)'}",
        ]
    cutoff = retrieval.extra.get("cutoff")
    if isinstance(cutoff, dict):
        details = ", ".join(
            f"{key} {_number(value)}" for key, value in cutoff.items() if key != "rule"
        )
        lines.append(f"  relevant: rule {cutoff.get('rule')} ({details})")
    collapse = retrieval.extra.get("collapse")
    if isinstance(collapse, dict):
        threshold = collapse.get("threshold")
        shown = (
            ", ".join(f"{method} {value}" for method, value in threshold.items())
            if isinstance(threshold, dict)
            else _number(threshold)
        )
        lines.append(
            messages.collapse_line(
                shown,
                ", ".join(collapse.get("methods", [])),
                int(collapse.get("hidden", 0)),
                len(collapse.get("groups", [])),
            )
        )
    if "fallback" in retrieval.extra:
        lines.append(f"  fell back: {retrieval.extra['fallback'].get('reason')}")
    for number, source in enumerate(retrieval.extra.get("inputs", []), start=1):
        lines.append(
            f"  input {number}: {source.get('model')} ({source.get('metric')}) for {source.get('query')!r}"
        )
    if "k" in retrieval.extra:
        lines.append(f"  k {retrieval.extra['k']}")
    lines += _prompt_lines(retrieval.extra)
    concepts = retrieval.extra.get("concepts")
    if isinstance(concepts, dict):
        lines += messages.recall_reach(concepts)
    return lines


def _prompt_lines(extra: Mapping[str, Any]) -> list[str]:
    """A prompt ranking's variants, fusion and rejected candidates."""
    variants = extra.get("variants")
    if not isinstance(variants, list):
        return []
    fusion = extra.get("fusion", {})
    lines = [messages.explain_prompt_fusion(fusion.get("rule", "rrf"), fusion.get("k", 60))]
    for variant in variants:
        lines.append(
            messages.explain_prompt_variant(variant["name"], variant["query"], variant["hits"])
        )
    for rejected in extra.get("rejected", []):
        lines.append(messages.explain_prompt_rejected(rejected["card"], rejected["gate"]))
    return lines


def _search_line(search: dict[str, Any]) -> str:
    """How a store searched: exact or approximate, with the parameters in force."""
    parameters = ", ".join(
        f"{key} {_number(value)}"
        for key, value in search.items()
        if key not in ("store", "exact", "reason")
    )
    return messages.explain_search(
        str(search["store"]), not search.get("exact", True), parameters, search.get("reason")
    )


def _number(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def describe_ranking(ranking: Ranking, heading: str | None = None) -> list[str]:
    retrieval = ranking.retrieval
    lines = [f"retrieval {heading or repr(retrieval.query)}", *describe_retrieval(retrieval)]
    rows = []
    for rank, hit in enumerate(ranking.hits, start=1):
        rows.append([str(rank), hit.card.name, format_score(hit.score), _why(hit.detail)])
    lines += [
        "  " + line
        for line in layout(["rank", "card", "score", "why"], rows, cells=True).split("\n")
    ]
    return lines


def _why(detail: Mapping[str, Any] | None) -> str:
    if not detail:
        return ""
    if "collapsed" in detail:
        from hql.context.collapse import describe

        rest = {key: value for key, value in detail.items() if key not in ("collapsed", "collapse")}
        return "; ".join(part for part in (_why(rest), describe(detail)) if part)
    if isinstance(detail.get("why"), str):  # an extension's own words (hql.extend.ranking)
        return str(detail["why"])
    if "evidence" in detail and isinstance(detail["evidence"], Mapping):
        channels = detail["evidence"].get("channels", {})
        return ", ".join(f"{name} {points}" for name, points in channels.items()) or "no evidence"
    if "matched" in detail:
        matched = sorted(detail["matched"].items(), key=lambda item: -item[1])
        return ", ".join(f"{term} {weight:.3f}" for term, weight in matched)
    if "inputs" in detail:
        places = [
            f"#{n}: rank {p['rank']} ({p['score']:.4f})" if p else f"#{n}: absent"
            for n, p in enumerate(detail["inputs"], start=1)
        ]
        if "section" in detail:
            places.append(section_label(detail["section"]))
        return ", ".join(places)
    if "section" in detail:
        return section_label(detail["section"])
    return ""


def section_label(section: dict[str, Any]) -> str:
    """Where a semantic hit matched: `§ Heading > Sub (lines 12-30)`."""
    heading = " > ".join(section.get("heading", [])) or "(whole note)"
    first, last = section.get("lines", [0, 0])
    return f"§ {heading} (lines {first}-{last})"
