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
from hql.checker import Plan
from hql.diagnostics import HqlError, Report, evaluation, warning
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

INT_MIN, INT_MAX = -(2**63), 2**63 - 1


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
        self, plan: Plan, vault: Vault | None, names: dict[str, Any] | None = None
    ) -> None:
        self.plan = plan
        self.vault = vault
        self.names: dict[str, Any] = names if names is not None else {}
        self.reports: list[Report] = []
        self._warned: set[tuple[str, Span]] = set()
        self._tallies: dict[tuple[str, Span], tuple[int, int]] = {}  # -> (report index, count)
        self.locals: list[dict[str, Any]] = []

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
        for statement in self.plan.program.statements:
            result = self.statement(statement)
        return result

    def statement(self, statement: t.Statement) -> Any:
        if isinstance(statement, t.ExprStatement):
            return self.evaluate(statement.expr)
        if isinstance(statement, t.Binding):
            self.names[statement.name] = self.evaluate(statement.value)
        return UNIT

    # --- expressions -----------------------------------------------------------

    def evaluate(self, expr: t.Expr) -> Any:
        method = _DISPATCH[type(expr)]
        return method(self, expr)

    def _literal(self, expr: t.IntLit | t.FloatLit | t.BoolLit | t.StringLit) -> Any:
        return expr.value

    def _docref(self, expr: t.DocRef) -> Any:
        card = self.vault.card(expr.name) if self.vault is not None else None
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
        total = left + right
        if isinstance(total, int) and not INT_MIN <= total <= INT_MAX:
            raise HqlError(evaluation(messages.numeric_overflow(), expr.span))
        if isinstance(total, float) and total in (float("inf"), float("-inf")):
            raise HqlError(evaluation(messages.numeric_overflow(), expr.span))
        return total

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
            return function.run(self, expr, [self.evaluate(arg.value) for arg in expr.args])
        first = self.plan.inputs[expr]
        assert first is not None
        return self.run_step(expr, self.evaluate(first), self.plan.types[first], expr.span)

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
    if name == "nodes":
        return ListValue(tuple(receiver.nodes))
    if name == "edges":
        return ListValue(tuple(receiver.induced_edges))
    raise AssertionError(f"no field {name} on {type(receiver).__name__}")  # pragma: no cover


def element_of_type(t_: Type) -> Type:
    return ty.element_type(t_) or ty.NEVER
