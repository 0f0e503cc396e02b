"""The interpreter: runs a checked plan against a vault.

Evaluation happens only after checking succeeded, so the interpreter trusts
the plan's types and reports only what can go wrong at run time: overflow,
negative counts, unresolved references (warnings) and step failures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import types as ty
from hql.budget import OverBudget
from hql.checker import Plan
from hql.compiler import compiled, distinct  # noqa: F401  (steps import `distinct` from here)
from hql.diagnostics import HqlError, Report, evaluation, warning
from hql.operators import INT_MAX, INT_MIN  # noqa: F401  (steps check their sums against them)
from hql.registry import StepSpec
from hql.source import Span
from hql.syntax import tree as t
from hql.types import Type
from hql.values import UNIT, Card, Date

if TYPE_CHECKING:
    from hql.vault import Vault


class StepCall:
    """What a step's implementation sees when it runs."""

    def __init__(
        self,
        interpreter: Interpreter,
        spec: StepSpec,
        node: t.Node,
        input_value: Any,
        input_type: Type,
        output_type: Type,
        args: dict[str, Any],
        span: Span,
    ) -> None:
        self.interpreter = interpreter
        self.spec = spec
        self.node = node
        self.input = input_value
        self.input_type = input_type
        self.output_type = output_type
        self.args = args
        self.span = span

    @property
    def vault(self) -> Vault | None:
        return self.interpreter.vault

    @property
    def limit(self) -> int | None:
        """How many leading elements of this step's result are used (set by the planner)."""
        return self.interpreter.plan.hints.get(self.node, {}).get("limit")

    def hint(self, name: str) -> Any:
        """What the planner offered this step under `name` (None: nothing)."""
        return self.interpreter.plan.hints.get(self.node, {}).get(name)

    def arg(self, name: str, default: Any = None) -> Any:
        return self.args.get(name, default)

    def type_argument(self) -> Type:
        return self.interpreter.plan.type_args[self.node]

    def fail(self, message: str) -> HqlError:
        return HqlError(evaluation(message, self.span))

    def warn(self, message: str) -> None:
        self.interpreter.warn(message, self.span)


class Interpreter:
    def __init__(
        self,
        plan: Plan,
        vault: Vault | None,
        names: dict[str, Any] | None = None,
        *,
        params: dict[str, Any] | None = None,
        text: bytes = b"",
    ) -> None:
        self.plan = plan
        self.vault = vault
        self.names: dict[str, Any] = names if names is not None else {}
        self.params = params or {}  # `$name` values, already converted to HQL values
        self.text = text  # the program, to quote expressions in warnings
        self.reports: list[Report] = []
        self._warned: set[tuple[str, Span]] = set()
        self._tallies: dict[tuple[str, Span], tuple[int, int]] = {}  # -> (report index, count)
        self.locals: list[dict[str, Any]] = []
        self.clock: Date | None = None  # `now()` and `today()` read the clock once per run
        # Values of another kind met by a comparison or `date(…)`: node -> subjects seen.
        self.messy: dict[t.Node, set[int]] = {}
        self.compiler = compiled(plan, vault)  # made once per plan and vault
        self.budget = self.compiler.budget(vault)

    def warn(self, message: str, span: Span) -> None:
        if (message, span) not in self._warned:
            self._warned.add((message, span))
            self.reports.append(warning(message, span))

    def warn_counted(self, key: str, span: Span, message: Callable[[int], str]) -> None:
        """One warning per (key, span) for the whole run, its message counting the occurrences."""
        index, count = self._tallies.get((key, span), (len(self.reports), 0))
        report = warning(message(count + 1), span)
        if count == 0:
            self.reports.append(report)
        else:
            self.reports[index] = report
        self._tallies[(key, span)] = (index, count + 1)

    def run(self) -> Any:
        result: Any = UNIT
        try:
            for statement in self.plan.program.statements:
                result = self.statement(statement)
        finally:
            self.report_messy()
        return result

    def now(self) -> Date:
        if self.clock is None:
            from hql.dates import now

            self.clock = now()
        return self.clock

    # --- messy front matter: one warning per expression, counting what it skipped ----

    def note_messy(self, node: t.Node) -> None:
        """A value of another kind met at `node`; counted per card (per value outside cards)."""
        subject = next(
            (
                id(value)
                for scope in reversed(self.locals)
                for value in scope.values()
                if isinstance(value, Card)
            ),
            None,
        )
        seen = self.messy.setdefault(node, set())
        seen.add(subject if subject is not None else -len(seen) - 1)

    def report_messy(self) -> None:
        for node, seen in self.messy.items():
            cards = all(subject >= 0 for subject in seen)
            subjects = "cards" if cards else "values"
            quoted = self.quote(node.span)
            if isinstance(node, t.Compare):
                message = messages.messy_comparison(quoted, len(seen), subjects)
            else:
                message = messages.messy_date(quoted, len(seen), subjects)
            self.warn(message, node.span)
        self.messy = {}

    def quote(self, span: Span) -> str:
        return self.text[span.start : span.end].decode("utf-8", errors="replace")

    def statement(self, statement: t.Statement) -> Any:
        if isinstance(statement, t.ExprStatement):
            return self.evaluate(statement.expr)
        if isinstance(statement, t.Binding):
            self.names[statement.name] = self.evaluate(statement.value)
        return UNIT

    # --- expressions: compiled once per plan and vault (hql/compiler.py) ----------------

    def evaluate(self, expr: t.Expr) -> Any:
        """The value of `expr` in the current lambda scopes."""
        return self.compiler.expression(expr)(self)

    def within_budget(self, value: Any, span: Span) -> None:
        try:
            self.budget.check(value)
        except OverBudget as over:
            raise self.over_budget(over, span) from None

    def over_budget(self, over: OverBudget, span: Span) -> HqlError:
        """The report of a value over the budget, naming the expression at `span`."""
        message = messages.value_over_budget(
            self.quote(span), over.elements, over.size, self.budget
        )
        return HqlError(evaluation(message, span))

    def run_step(self, node: t.Node, input_value: Any, input_type: Type, span: Span) -> Any:
        spec = self.plan.steps[node]
        args = {name: argument(self) for name, argument in self.compiler.arguments(node)}
        call = StepCall(
            self, spec, node, input_value, input_type, self.plan.types[node], args, span
        )
        return spec.run(call)

    def card_count(self) -> int:
        """`cards | count` as the planner's `card-count` rule answers it: without any card."""
        assert self.vault is not None, "the checker lets `cards` through only with a vault"
        return len(self.vault)


# --- helpers shared by steps -----------------------------------------------------


def element_of_type(t_: Type) -> Type:
    return ty.element_type(t_) or ty.NEVER
