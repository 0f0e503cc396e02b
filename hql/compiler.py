"""Closure compilation: each checked expression becomes a Python function, made once per
plan and vault.

Walking the syntax tree pays, at every visit of a node, for finding the node's rule,
the plan's entries for it and the test whether its value needs measuring. A lambda's
body is visited once per element (once per comparison of a sort), so each expression is
compiled once into a closure that holds its children's closures and everything the plan
decided about the node (its step or function, its input type, whether its value can be
large). A closure takes the interpreter of the run as its one argument and reads from it
only what belongs to that run (the values, the lambda scopes current at that moment, the
budget, the reports), exactly as the tree walk did: same order of evaluation, same
reports at the same spans, same budget checks. So the closures of a plan are made once
for a vault (`compiled`) and shared by every run of it, in any thread.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import operators as ops
from hql import types as ty
from hql.budget import Budget, OverBudget
from hql.deadline import CROWDED, take_turn
from hql.diagnostics import HqlError, evaluation
from hql.printing import as_data, to_json, values_equal
from hql.source import Span
from hql.syntax import tree as t
from hql.values import (
    ABSENT,
    Card,
    Concept,
    Data,
    Date,
    Edge,
    Group,
    Hit,
    ListValue,
    MapValue,
    Ranking,
    SetValue,
    Task,
)

if TYPE_CHECKING:
    from hql.checker import Plan
    from hql.interpreter import Interpreter
    from hql.vault import Vault

# An expression ready to evaluate in a run: given the run's interpreter (its scopes, values
# and reports), its value.
Compiled = Callable[["Interpreter"], Any]

# Expressions whose value can be larger than their operands: checked against the budget.
_MAKERS = frozenset({t.ListLit, t.SetLit, t.DataLit, t.Add, t.Pipe, t.Call, t.TypeCall})
# Types whose values the budget never measures (no text, no elements): not checked at all.
_UNMEASURED = frozenset({"Int", "Float", "Bool", "Ordering", "Date", "Unit"})
_LITERALS = (t.IntLit, t.FloatLit, t.BoolLit, t.StringLit)
# Vaults a plan keeps compiled closures for (a plan is checked against one vault as a rule).
_KEPT_PER_PLAN = 4


def compiled(plan: Plan, vault: Vault | None) -> Compiler:
    """The closures of `plan` for `vault`: made the first time, shared by every later run."""
    kept = plan.compiled
    entry = kept.get(id(vault))
    if entry is not None:
        held, compiler = entry
        if compiler.plan is plan and (held() if held is not None else None) is vault:
            return compiler
    compiler = Compiler(plan, vault)
    if len(kept) >= _KEPT_PER_PLAN:
        kept.clear()
    kept[id(vault)] = (weakref.ref(vault) if vault is not None else None, compiler)
    return compiler


class Compiler:
    """Compiles the expressions of one checked plan for one vault, each node once.

    Compiling happens under a lock (a node first met by two runs at once is compiled
    once); running the closures needs none."""

    def __init__(self, plan: Plan, vault: Vault | None) -> None:
        self.plan = plan
        # Weakly: a plan kept in a cache keeps its closures, never the vault they ran on.
        self._vault = weakref.ref(vault) if vault is not None else None
        self._compiled: dict[t.Node, Compiled] = {}
        self._arguments: dict[t.Node, list[tuple[str, Compiled]]] = {}
        # The parameters of the lambda whose body is being compiled (none outside a body).
        self._parameters: tuple[str, ...] = ()
        self._lock = threading.RLock()
        # The vault configuration `[limits]` was last read from, and the caps it gave.
        self._limits: tuple[object, int, int] | None = None

    def budget(self, vault: Vault | None) -> Budget:
        """A fresh budget for one run, with the caps of the vault's `[limits]` (read once
        per configuration)."""
        config = vault.config if vault is not None else None
        known = self._limits
        if known is None or known[0] is not config:
            made = Budget.from_config(config.section("limits") if config is not None else {})
            known = self._limits = (config, made.max_elements, made.max_bytes)
        return Budget(known[1], known[2])

    def expression(self, expr: t.Expr) -> Compiled:
        compiled = self._compiled.get(expr)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(expr)
                if compiled is None:
                    compiled = _RULES[type(expr)](self, expr)
                    if type(expr) in _MAKERS and self._measured(expr):
                        compiled = _within_budget(compiled, expr.span)
                    self._compiled[expr] = compiled
        return compiled

    def _measured(self, expr: t.Expr) -> bool:
        """Whether a value of this expression's checked type can hold text or elements."""
        found = self.plan.types.get(expr)
        return found is None or ty.strip_option(found).name not in _UNMEASURED

    # --- values ------------------------------------------------------------------

    def _literal(self, expr: t.IntLit | t.FloatLit | t.BoolLit | t.StringLit) -> Compiled:
        value = expr.value
        return lambda it: value

    def _param(self, expr: t.Param) -> Compiled:
        name = expr.name
        return lambda it: it.params[name]

    def _docref(self, expr: t.DocRef) -> Compiled:
        name, span = expr.name, expr.span

        def docref(it: Interpreter) -> Any:
            card = it.vault.resolve(name) if it.vault is not None else None
            if card is None:
                it.warn(messages.unresolved_reference(name), span)
                return ABSENT
            return card

        return docref

    def _name(self, expr: t.Name) -> Compiled:
        """The innermost lambda parameter of that name, else the program's binding, else the
        vault's cards (the checker has resolved it to one of these)."""
        name = expr.name
        if name in self._parameters:  # its own lambda's: always the innermost scope
            return lambda it: it.locals[-1][name]
        lazy = bool(self.plan.hints.get(expr, {}).get("lazy_cards"))  # planner: `lazy-cards`

        def lookup(it: Interpreter) -> Any:
            scopes = it.locals
            if scopes:
                innermost = scopes[-1]
                if name in innermost:
                    return innermost[name]
                for scope in reversed(scopes):
                    if name in scope:
                        return scope[name]
            names = it.names
            if name in names:
                return names[name]
            vault = it.vault
            assert vault is not None, "the checker lets `cards` through only with a vault"
            if lazy:  # built when first read
                return SetValue(vault.lazy_cards(release=True))  # type: ignore[arg-type]
            return SetValue(vault.cards)

        return lookup

    def _data(self, expr: t.DataLit) -> Compiled:
        entries = [(entry.key.split("."), self.expression(entry.value)) for entry in expr.entries]

        def data(it: Interpreter) -> Data:
            tree: dict[str, Any] = {}
            for path, value in entries:
                *parents, last = path
                node = tree
                for part in parents:
                    child = node.get(part)
                    if not isinstance(child, dict):
                        child = node[part] = {}
                    node = child
                node[last] = to_tree(value(it))
            return Data(tree)

        return data

    def _list(self, expr: t.ListLit) -> Compiled:
        if all(isinstance(item, _LITERALS) for item in expr.items):
            constants = tuple(item.value for item in expr.items)  # type: ignore[attr-defined]
            return lambda it: ListValue(constants)
        items = [self.expression(item) for item in expr.items]
        return lambda it: ListValue(tuple(item(it) for item in items))

    def _set(self, expr: t.SetLit) -> Compiled:
        items = [self.expression(item) for item in expr.items]
        return lambda it: SetValue(distinct(item(it) for item in items))

    def _edge(self, expr: t.EdgeLit) -> Compiled:
        data = self._data(expr.data) if expr.data is not None else None
        source, target = self._endpoint(expr.source), self._endpoint(expr.target)

        def edge(it: Interpreter) -> Edge:
            tree = data(it).tree if data is not None else {}
            return Edge(source(it), target(it), tree)

        return edge

    def _endpoint(self, expr: t.Expr) -> Compiled:
        if isinstance(expr, t.DocRef):  # the name as written: no resolution, no warning
            name = expr.name
            return lambda it: name
        compiled = self.expression(expr)

        def endpoint(it: Interpreter) -> str:
            value = compiled(it)
            if isinstance(value, Card):
                return value.name
            return "" if value is ABSENT else str(value)

        return endpoint

    def _field(self, expr: t.Field) -> Compiled:
        receiver, name = self.expression(expr.receiver), expr.name
        if name in _RECALL_FIELDS:
            return self._recall_field(receiver, name)
        return lambda it: get_field(receiver(it), name)

    def _recall_field(self, receiver: Compiled, name: str) -> Compiled:
        """`c.priority`, `c.triggers`, …: read through the vault's `[context.fields]`."""
        from hql.context.fields import recall_fields
        from hql.context.prompt import mapping_for, status_hook

        mapping = mapping_for(self._vault() if self._vault is not None else None)
        derived = status_hook() if name == "status" else None

        def recalled(it: Interpreter) -> Any:
            card = receiver(it)
            if not isinstance(card, Card):
                return get_field(card, name)
            if derived is not None:  # hql.notes derives `superseded` from `supersedes:`
                return derived(card, it.vault)
            value = getattr(recall_fields(card, mapping), name)
            if isinstance(value, tuple):
                return ListValue(value)
            return ABSENT if value is None else value

        return recalled

    # --- operators ---------------------------------------------------------------

    def _add(self, expr: t.Add) -> Compiled:
        left, right, span = self.expression(expr.left), self.expression(expr.right), expr.span

        def add(it: Interpreter) -> Any:
            a = left(it)
            b = right(it)
            try:
                return ops.add(a, b)
            except ops.OperatorFailure as failure:
                raise _operator_failure(failure, span) from None

        return add

    def _arithmetic(self, expr: t.Arithmetic) -> Compiled:
        op, span = expr.op, expr.span
        left, right = self.expression(expr.left), self.expression(expr.right)

        def arithmetic(it: Interpreter) -> Any:
            a = left(it)
            b = right(it)
            try:
                return ops.arithmetic(op, a, b)
            except ops.OperatorFailure as failure:
                raise _operator_failure(failure, span) from None

        return arithmetic

    def _negative(self, expr: t.Negative) -> Compiled:
        operand, span = self.expression(expr.operand), expr.span

        def negative(it: Interpreter) -> Any:
            try:
                return ops.negative(operand(it))
            except ops.OperatorFailure as failure:
                raise _operator_failure(failure, span) from None

        return negative

    def _compare(self, expr: t.Compare) -> Compiled:
        op = expr.op
        left, right = self.expression(expr.left), self.expression(expr.right)

        def compare(it: Interpreter) -> Any:
            a = left(it)
            b = right(it)
            try:
                return ops.order(op, a, b)
            except ops.WrongKind:
                it.note_messy(expr)
                return False

        return compare

    def _equality(self, expr: t.Equality) -> Compiled:
        negated = expr.negated
        left, right = self.expression(expr.left), self.expression(expr.right)

        def equality(it: Interpreter) -> bool:
            equal = values_equal(left(it), right(it))
            return not equal if negated else equal

        return equality

    def _logic(self, expr: t.Logic) -> Compiled:
        """Short-circuit; with one side absent the other decides when it can (`false and x`)."""
        decisive = expr.op == "or"  # `true or …` is true, `false and …` is false
        left, right = self.expression(expr.left), self.expression(expr.right)

        def logic(it: Interpreter) -> Any:
            first = left(it)
            if first is decisive:
                return decisive
            second = right(it)
            if second is decisive:
                return decisive
            return ABSENT if ABSENT in (first, second) else second

        return logic

    def _not(self, expr: t.Not) -> Compiled:
        operand = self.expression(expr.operand)
        return lambda it: ops.logical_not(operand(it))

    def _otherwise(self, expr: t.Otherwise) -> Compiled:
        left, right = self.expression(expr.left), self.expression(expr.right)
        as_data_value = self.plan.types[expr] == ty.DATA

        def otherwise(it: Interpreter) -> Any:
            value = left(it)
            if ops.is_absent(value):
                value = right(it)
            if as_data_value and not isinstance(value, Data) and value is not ABSENT:
                return Data(to_tree(value))  # `c.metadata.owner ?? "nobody"` is Data either way
            return value

        return otherwise

    # --- steps, functions, lambdas -------------------------------------------------

    def _pipe(self, expr: t.Pipe) -> Compiled:
        if self.plan.hints.get(expr, {}).get("card_count"):
            return _card_count
        return self._step(expr, expr.input, expr.stage.span)

    def _call(self, expr: t.Call) -> Compiled:
        function = self.plan.functions.get(expr)
        if function is None:
            first = self.plan.inputs[expr]
            assert first is not None
            if self.plan.hints.get(expr, {}).get("card_count"):
                return _card_count
            return self._step(expr, first, expr.span)
        run = function.run
        if function.lazy:  # `if(c, a, b)` evaluates one branch
            expressions = [argument.value for argument in expr.args]
            return lambda it: run(it, expr, list(expressions))
        arguments = [self.expression(argument.value) for argument in expr.args]
        if len(arguments) == 2:  # `compare(a, b)`: the comparator's usual body
            first_argument, second_argument = arguments
            return lambda it: run(it, expr, [first_argument(it), second_argument(it)])
        return lambda it: run(it, expr, [argument(it) for argument in arguments])

    def _type_call(self, expr: t.TypeCall) -> Compiled:
        run = self.plan.functions[expr].run
        arguments = [self.expression(argument.value) for argument in expr.args]
        return lambda it: run(it, expr, [argument(it) for argument in arguments])

    def _step(self, node: t.Node, input_expr: t.Expr, span: Span) -> Compiled:
        """A step run on its input: through `Interpreter.run_step`, which `explain` times."""
        input_value = self.expression(input_expr)
        input_type = self.plan.types[input_expr]
        return lambda it: it.run_step(node, input_value(it), input_type, span)

    def arguments(self, node: t.Node) -> list[tuple[str, Compiled]]:
        """A step's arguments by name, each ready to evaluate: a lambda becomes a closure
        over the scopes current when the step runs; a type argument is read from the plan."""
        known = self._arguments.get(node)
        if known is not None:
            return known
        with self._lock:
            known = self._arguments.get(node)
            if known is not None:
                return known
            made: list[tuple[str, Compiled]] = []
            for name, argument in self.plan.arguments[node].items():
                value = argument.value
                if isinstance(value, t.Lambda):
                    made.append((name, self._closure_maker(value)))
                elif value in self.plan.types:
                    made.append((name, self.expression(value)))
                else:
                    made.append((name, _nothing))
            self._arguments[node] = made
        return made

    def _closure_maker(self, function: t.Lambda) -> Compiled:
        params = function.params
        crowded = CROWDED  # other programs running at once: take turns (hql.deadline)
        outer, self._parameters = self._parameters, params
        try:
            body = self.expression(function.body)
        finally:
            self._parameters = outer

        def closure(it: Interpreter) -> Callable[..., Any]:
            # A scope is never changed once made, so capturing the list of them is enough.
            captured = list(it.locals)
            if len(params) == 1:
                (param,) = params

                def call_one(value: Any) -> Any:
                    if crowded[0]:
                        take_turn()
                    saved = it.locals
                    it.locals = [*captured, {param: value}]
                    try:
                        return body(it)
                    finally:
                        it.locals = saved

                return call_one
            if len(params) == 2:
                first, second = params

                def call_two(a: Any, b: Any) -> Any:
                    if crowded[0]:
                        take_turn()
                    saved = it.locals
                    it.locals = [*captured, {first: a, second: b}]
                    try:
                        return body(it)
                    finally:
                        it.locals = saved

                return call_two

            def call(*values: Any) -> Any:
                if crowded[0]:
                    take_turn()
                saved = it.locals
                it.locals = [*captured, dict(zip(params, values, strict=True))]
                try:
                    return body(it)
                finally:
                    it.locals = saved

            return call

        return closure

    def _lambda(self, expr: t.Lambda) -> Compiled:
        span = expr.span

        def not_a_value(it: Interpreter) -> Any:  # pragma: no cover - rejected by the checker
            raise HqlError(evaluation(messages.lambda_not_a_value(), span))

        return not_a_value


def _within_budget(compiled: Compiled, span: Span) -> Compiled:
    def measured(it: Interpreter) -> Any:
        try:
            value = compiled(it)
        except OverBudget as over:  # a step that counts its value while making it
            raise it.over_budget(over, span) from None
        it.within_budget(value, span)
        return value

    return measured


def _operator_failure(failure: ops.OperatorFailure, span: Span) -> HqlError:
    return HqlError(evaluation(messages.operator_failure(str(failure)), span))


def _card_count(it: Interpreter) -> int:
    return it.card_count()


def _nothing(it: Interpreter) -> None:
    return None


_RULES: dict[type, Callable[[Compiler, Any], Compiled]] = {
    t.IntLit: Compiler._literal,
    t.FloatLit: Compiler._literal,
    t.BoolLit: Compiler._literal,
    t.StringLit: Compiler._literal,
    t.DocRef: Compiler._docref,
    t.Name: Compiler._name,
    t.DataLit: Compiler._data,
    t.ListLit: Compiler._list,
    t.SetLit: Compiler._set,
    t.Add: Compiler._add,
    t.Equality: Compiler._equality,
    t.EdgeLit: Compiler._edge,
    t.Field: Compiler._field,
    t.Pipe: Compiler._pipe,
    t.Call: Compiler._call,
    t.TypeCall: Compiler._type_call,
    t.Lambda: Compiler._lambda,
    t.Arithmetic: Compiler._arithmetic,
    t.Compare: Compiler._compare,
    t.Logic: Compiler._logic,
    t.Not: Compiler._not,
    t.Negative: Compiler._negative,
    t.Otherwise: Compiler._otherwise,
    t.Param: Compiler._param,
}


# --- value helpers (steps use them too) -----------------------------------------------


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
        if name in ("day", "ctime"):
            found = getattr(receiver, name)
            return ABSENT if found is None else Date(found)
        return getattr(receiver, name)
    if isinstance(receiver, Task):
        return getattr(receiver, name)
    if isinstance(receiver, Concept):
        value = getattr(receiver, name)
        return ListValue(value) if name in ("labels", "links") else value
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
    if hasattr(receiver, "context_field"):  # a context block (hql.context.block.Context)
        return receiver.context_field(name)
    if name == "nodes":
        return ListValue(tuple(receiver.nodes))
    if name == "edges":
        return ListValue(tuple(receiver.induced_edges))
    raise AssertionError(f"no field {name} on {type(receiver).__name__}")  # pragma: no cover


_RECALL_FIELDS = frozenset(
    {"summary", "triggers", "use_when", "ignore_when", "topics", "priority", "status"}
)

TASK_DATES = ("due", "scheduled", "completed")

_NOTE_LISTS = frozenset(
    {"tags", "aliases", "tasks", "headings", "outlinks", "inlinks", "unresolved", "superseded_by"}
)


def _note_list(card: Card, name: str) -> ListValue:
    items = getattr(card, name)
    if name == "tasks":
        from hql.vault.links import task_dates

        tasks = []
        for item in items:
            dates = task_dates(item["text"])
            tasks.append(
                Task(
                    item["text"],
                    item["done"],
                    item["line"],
                    *(Date(dates[key]) if key in dates else ABSENT for key in TASK_DATES),
                )
            )
        return ListValue(tuple(tasks))
    return ListValue(tuple(items))
