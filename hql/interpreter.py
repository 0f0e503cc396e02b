"""The interpreter: runs a checked plan against a vault.

Evaluation happens only after checking succeeded, so the interpreter trusts
the plan's types and reports only what can go wrong at run time: overflow,
negative counts, unresolved references (warnings) and step failures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import operators as ops
from hql import types as ty
from hql.budget import Budget, OverBudget
from hql.checker import Plan
from hql.diagnostics import HqlError, Report, evaluation, warning
from hql.operators import INT_MAX, INT_MIN  # noqa: F401  (steps check their sums against them)
from hql.printing import as_data, to_json, values_equal
from hql.registry import StepSpec
from hql.source import Span
from hql.syntax import tree as t
from hql.types import Type
from hql.values import (
    ABSENT,
    UNIT,
    Card,
    Data,
    Date,
    Edge,
    Group,
    Hit,
    ListValue,
    MapValue,
    Ranking,
    SetValue,
)

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
        limits = vault.config.section("limits") if vault is not None else {}
        self.budget = Budget.from_config(limits)

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

    # --- expressions -----------------------------------------------------------

    def evaluate(self, expr: t.Expr) -> Any:
        method = _DISPATCH[type(expr)]
        value = method(self, expr)
        if type(expr) in _MAKERS:  # expressions that can make a large value
            self.within_budget(value, expr.span)
        return value

    def within_budget(self, value: Any, span: Span) -> None:
        try:
            self.budget.check(value)
        except OverBudget as over:
            message = messages.value_over_budget(
                self.quote(span), over.elements, over.size, self.budget
            )
            raise HqlError(evaluation(message, span)) from None

    def _literal(self, expr: t.IntLit | t.FloatLit | t.BoolLit | t.StringLit) -> Any:
        return expr.value

    def _docref(self, expr: t.DocRef) -> Any:
        card = self.vault.resolve(expr.name) if self.vault is not None else None
        if card is None:
            self.warn(messages.unresolved_reference(expr.name), expr.span)
            return ABSENT
        return card

    def _name(self, expr: t.Name) -> Any:
        for scope in reversed(self.locals):
            if expr.name in scope:
                return scope[expr.name]
        if expr.name in self.names:
            return self.names[expr.name]
        assert self.vault is not None, "the checker lets `cards` through only with a vault"
        if self.plan.hints.get(expr, {}).get("lazy_cards"):  # built when first read (planner)
            return SetValue(self.vault.lazy_cards())  # type: ignore[arg-type]
        return SetValue(self.vault.cards)

    def _data(self, expr: t.DataLit) -> Data:
        tree: dict[str, Any] = {}
        for entry in expr.entries:
            value = to_tree(self.evaluate(entry.value))
            *parents, last = entry.key.split(".")
            node = tree
            for part in parents:
                child = node.get(part)
                if not isinstance(child, dict):
                    child = node[part] = {}
                node = child
            node[last] = value
        return Data(tree)

    def _list(self, expr: t.ListLit) -> ListValue:
        return ListValue(tuple(self.evaluate(item) for item in expr.items))

    def _set(self, expr: t.SetLit) -> SetValue:
        return SetValue(distinct(self.evaluate(item) for item in expr.items))

    def _add(self, expr: t.Add) -> Any:
        left = self.evaluate(expr.left)
        right = self.evaluate(expr.right)
        try:
            return ops.add(left, right)
        except ops.OperatorFailure as failure:
            raise HqlError(evaluation(messages.operator_failure(str(failure)), expr.span)) from None

    def _arithmetic(self, expr: t.Arithmetic) -> Any:
        left, right = self.evaluate(expr.left), self.evaluate(expr.right)
        try:
            return ops.arithmetic(expr.op, left, right)
        except ops.OperatorFailure as failure:
            raise HqlError(evaluation(messages.operator_failure(str(failure)), expr.span)) from None

    def _compare(self, expr: t.Compare) -> Any:
        left, right = self.evaluate(expr.left), self.evaluate(expr.right)
        try:
            return ops.order(expr.op, left, right)
        except ops.WrongKind:
            self.note_messy(expr)
            return False

    def _logic(self, expr: t.Logic) -> Any:
        """Short-circuit; with one side absent the other decides when it can (`false and x`)."""
        decisive = expr.op == "or"  # `true or …` is true, `false and …` is false
        left = self.evaluate(expr.left)
        if left is decisive:
            return decisive
        right = self.evaluate(expr.right)
        if right is decisive:
            return decisive
        return ABSENT if ABSENT in (left, right) else right

    def _not(self, expr: t.Not) -> Any:
        return ops.logical_not(self.evaluate(expr.operand))

    def _negative(self, expr: t.Negative) -> Any:
        try:
            return ops.negative(self.evaluate(expr.operand))
        except ops.OperatorFailure as failure:
            raise HqlError(evaluation(messages.operator_failure(str(failure)), expr.span)) from None

    def _otherwise(self, expr: t.Otherwise) -> Any:
        left = self.evaluate(expr.left)
        value = self.evaluate(expr.right) if ops.is_absent(left) else left
        if self.plan.types[expr] == ty.DATA and not isinstance(value, Data) and value is not ABSENT:
            return Data(to_tree(value))  # `c.metadata.owner ?? "nobody"` is Data either way
        return value

    def _param(self, expr: t.Param) -> Any:
        return self.params[expr.name]

    def _equality(self, expr: t.Equality) -> bool:
        equal = values_equal(self.evaluate(expr.left), self.evaluate(expr.right))
        return not equal if expr.negated else equal

    def _edge(self, expr: t.EdgeLit) -> Edge:
        data = self._data(expr.data).tree if expr.data is not None else {}
        return Edge(self._endpoint(expr.source), self._endpoint(expr.target), data)

    def _endpoint(self, expr: t.Expr) -> str:
        if isinstance(expr, t.DocRef):  # the name as written: no resolution, no warning
            return expr.name
        value = self.evaluate(expr)
        if isinstance(value, Card):
            return value.name
        return "" if value is ABSENT else str(value)

    def _field(self, expr: t.Field) -> Any:
        receiver = self.evaluate(expr.receiver)
        return get_field(receiver, expr.name)

    def _pipe(self, expr: t.Pipe) -> Any:
        if expr in self.plan.hints and self.plan.hints[expr].get("card_count"):
            return self._card_count()
        input_value = self.evaluate(expr.input)
        return self.run_step(expr, input_value, self.plan.types[expr.input], expr.stage.span)

    def run_step(self, node: t.Node, input_value: Any, input_type: Type, span: Span) -> Any:
        spec = self.plan.steps[node]
        args = {
            name: self.argument(argument) for name, argument in self.plan.arguments[node].items()
        }
        call = StepCall(
            self, spec, node, input_value, input_type, self.plan.types[node], args, span
        )
        return spec.run(call)

    def argument(self, argument: t.Argument) -> Any:
        if isinstance(argument.value, t.Lambda):
            return self.closure(argument.value)
        if argument.value in self.plan.types:
            return self.evaluate(argument.value)
        return None  # a type argument such as `typed(RelationCard)`: read from the plan

    def closure(self, function: t.Lambda) -> Callable[..., Any]:
        captured = [dict(scope) for scope in self.locals]

        def call(*values: Any) -> Any:
            saved = self.locals
            self.locals = [*captured, dict(zip(function.params, values, strict=True))]
            try:
                return self.evaluate(function.body)
            finally:
                self.locals = saved

        return call

    def _call(self, expr: t.Call) -> Any:
        function = self.plan.functions.get(expr)
        if function is not None:
            if function.lazy:  # `if(c, a, b)` evaluates one branch
                return function.run(self, expr, [arg.value for arg in expr.args])
            return function.run(self, expr, [self.evaluate(arg.value) for arg in expr.args])
        first = self.plan.inputs[expr]
        assert first is not None
        if expr in self.plan.hints and self.plan.hints[expr].get("card_count"):
            return self._card_count()
        return self.run_step(expr, self.evaluate(first), self.plan.types[first], expr.span)

    def _card_count(self) -> int:
        """`cards | count` as the planner's `card-count` rule answers it: without any card."""
        assert self.vault is not None, "the checker lets `cards` through only with a vault"
        return len(self.vault)

    def _type_call(self, expr: t.TypeCall) -> Any:
        function = self.plan.functions[expr]
        return function.run(self, expr, [self.evaluate(arg.value) for arg in expr.args])

    def _lambda(self, expr: t.Lambda) -> Any:  # pragma: no cover - rejected by the checker
        raise HqlError(evaluation(messages.lambda_not_a_value(), expr.span))


_DISPATCH: dict[type, Callable[[Interpreter, Any], Any]] = {
    t.IntLit: Interpreter._literal,
    t.FloatLit: Interpreter._literal,
    t.BoolLit: Interpreter._literal,
    t.StringLit: Interpreter._literal,
    t.DocRef: Interpreter._docref,
    t.Name: Interpreter._name,
    t.DataLit: Interpreter._data,
    t.ListLit: Interpreter._list,
    t.SetLit: Interpreter._set,
    t.Add: Interpreter._add,
    t.Equality: Interpreter._equality,
    t.EdgeLit: Interpreter._edge,
    t.Field: Interpreter._field,
    t.Pipe: Interpreter._pipe,
    t.Call: Interpreter._call,
    t.TypeCall: Interpreter._type_call,
    t.Lambda: Interpreter._lambda,
    t.Arithmetic: Interpreter._arithmetic,
    t.Compare: Interpreter._compare,
    t.Logic: Interpreter._logic,
    t.Not: Interpreter._not,
    t.Negative: Interpreter._negative,
    t.Otherwise: Interpreter._otherwise,
    t.Param: Interpreter._param,
}


# --- helpers shared by steps -----------------------------------------------------


def distinct(values: Any) -> tuple[Any, ...]:
    seen: set[Any] = set()
    kept = []
    for value in values:
        key = as_data(value)
        if key not in seen:
            seen.add(key)
            kept.append(value)
    return tuple(kept)


def to_tree(value: Any) -> Any:
    """A value converted to Data (its JSON projection, for the kinds Data can hold)."""
    if isinstance(value, Data):
        return value.tree
    return to_json(value)


def get_field(receiver: Any, name: str) -> Any:
    """`receiver.name` at run time; absence propagates, a missing Data key is absent."""
    if receiver is ABSENT:
        return ABSENT
    if isinstance(receiver, Data):
        tree = receiver.tree
        if isinstance(tree, dict) and name in tree:
            return Data(tree[name])
        return ABSENT
    if isinstance(receiver, Card):
        if name in ("header", "metadata"):
            return Data(getattr(receiver, name))
        if name in _NOTE_LISTS:
            return _note_list(receiver, name)
        if name == "created":
            created = receiver.created
            return ABSENT if created is None else Date(created)
        if name == "modified":
            return Date(receiver.modified)
        return getattr(receiver, name)
    if isinstance(receiver, Edge):
        return Data(receiver.data) if name == "data" else getattr(receiver, name)
    if isinstance(receiver, Hit):
        if name == "retrieval":
            return Data(receiver.retrieval.as_tree())
        if name == "query":
            return receiver.retrieval.query
        return getattr(receiver, name)
    if isinstance(receiver, Ranking):
        if name == "hits":
            return ListValue(receiver.hits)
        if name == "retrieval":
            return Data(receiver.retrieval.as_tree())
        return receiver.retrieval.query
    if isinstance(receiver, Group):
        return getattr(receiver, name)
    if isinstance(receiver, MapValue):
        return SetValue(receiver.keys) if receiver.kind == "Map" else ListValue(receiver.keys)
    if isinstance(receiver, Date):
        from hql.dates import field

        return field(receiver, name)
    if name == "nodes":
        return ListValue(tuple(receiver.nodes))
    if name == "edges":
        return ListValue(tuple(receiver.induced_edges))
    raise AssertionError(f"no field {name} on {type(receiver).__name__}")  # pragma: no cover


_NOTE_LISTS = frozenset(
    {"tags", "aliases", "tasks", "headings", "outlinks", "inlinks", "unresolved"}
)


def _note_list(card: Card, name: str) -> ListValue:
    items = getattr(card, name)
    if name == "tasks":
        return ListValue(tuple(Data(item) for item in items))
    return ListValue(tuple(items))


def element_of_type(t_: Type) -> Type:
    return ty.element_type(t_) or ty.NEVER


# Expressions whose value can be larger than their operands: checked against the budget.
_MAKERS = frozenset({t.ListLit, t.SetLit, t.DataLit, t.Add, t.Pipe, t.Call, t.TypeCall})
