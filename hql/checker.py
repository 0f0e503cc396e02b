"""The checker: types a whole program before anything runs.

It produces a `Plan`: the program with a type for every expression and the
step each stage resolves to. In strict mode the first error stops checking;
in collect mode every statement is judged on its own (a failed binding binds
its name as `Data`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hql import messages
from hql import operators as ops
from hql import types as ty
from hql.diagnostics import HqlError, Report, name_error, type_error
from hql.record import field, record
from hql.registry import Extension, FunctionSpec, Registry, StepSpec, closest, registry
from hql.source import Span
from hql.syntax import tree as t
from hql.types import Type

RESERVED = "cards"


@record(frozen=False, eq=False)
class Plan:
    """What the interpreter needs: the checked program and everything the checker decided.

    `compiled` holds the plan's closures for each vault it ran against (hql.compiler)."""

    program: t.Program
    types: dict[t.Node, Type] = field(default_factory=dict)
    steps: dict[t.Node, StepSpec] = field(default_factory=dict)
    functions: dict[t.Node, FunctionSpec] = field(default_factory=dict)
    arguments: dict[t.Node, dict[str, t.Argument]] = field(default_factory=dict)
    inputs: dict[t.Node, t.Expr | None] = field(
        default_factory=dict
    )  # direct calls: the input argument
    type_args: dict[t.Node, Type] = field(default_factory=dict)  # `typed(RelationCard)`
    result: Type = ty.UNIT
    imports: list[str] = field(default_factory=list)
    declared: dict[str, Type] = field(default_factory=dict)
    vault_cards: set[t.Node] = field(default_factory=set)  # the `cards` names that mean the vault's
    # Filled by the planner: what each step may absorb (`{"limit": 10}`), and the rules that fired.
    hints: dict[t.Node, dict[str, Any]] = field(default_factory=dict)
    rewrites: list[str] = field(default_factory=list)
    compiled: dict[int, Any] = field(default_factory=dict)


@record(frozen=False)
class Scope:
    """What a checker knows between statements (the REPL keeps one across lines)."""

    names: dict[str, Type] = field(default_factory=dict)
    imports: list[str] = field(default_factory=list)
    declared_types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Each declared record's fields: name -> whether it is optional.
    declared_fields: dict[str, dict[str, bool]] = field(default_factory=dict)

    def copy(self) -> Scope:
        return Scope(
            dict(self.names),
            list(self.imports),
            dict(self.declared_types),
            dict(self.declared_fields),
        )

    def required_fields(self, parents: list[str]) -> dict[str, str]:
        """The fields the declared ancestors require: field -> the ancestor that requires it."""
        required: dict[str, str] = {}
        pending, seen = list(parents), set()
        while pending:
            parent = pending.pop()
            if parent in seen:
                continue
            seen.add(parent)
            for name, optional in self.declared_fields.get(parent, {}).items():
                if not optional:
                    required.setdefault(name, parent)
            pending.extend(self.declared_types.get(parent, ()))
        return required


class StepTyping:
    """What a step's typing rule sees: its input type, its arguments, and helpers."""

    def __init__(
        self,
        checker: Checker,
        spec: StepSpec,
        node: t.Node,
        input_type: Type,
        input_span: Span,
        args: dict[str, t.Argument],
        span: Span,
    ) -> None:
        self.checker = checker
        self.spec = spec
        self.node = node
        self.input = input_type
        self.input_span = input_span
        self.args = args
        self.span = span

    def has(self, name: str) -> bool:
        return name in self.args

    def arg_span(self, name: str) -> Span:
        return self.args[name].span if name in self.args else self.span

    def element(self) -> Type:
        """The input's element type; a type error when the input is no collection."""
        element = ty.element_type(self.input)
        if element is None:
            raise HqlError(
                type_error(
                    messages.step_needs_collection(self.spec.name, self.input), self.input_span
                )
            )
        return element

    def value(self, name: str) -> Type:
        argument = self.args[name]
        if isinstance(argument.value, t.Lambda):
            raise HqlError(
                type_error(messages.lambda_not_expected(self.spec.name, name), argument.value.span)
            )
        return self.checker.expression(argument.value)

    def lambda_result(self, name: str, params: Sequence[Type]) -> Type:
        argument = self.args[name]
        function = argument.value
        if not isinstance(function, t.Lambda):
            raise HqlError(
                type_error(messages.expects_lambda(self.spec.name, name), argument.value.span)
            )
        if len(function.params) != len(params):
            raise HqlError(
                type_error(
                    messages.lambda_arity(len(function.params), self.spec.name, len(params)),
                    function.span,
                )
            )
        return self.checker.lambda_body(function, params)

    def lambda_arity(self, name: str) -> int | None:
        function = self.args[name].value
        return len(function.params) if isinstance(function, t.Lambda) else None

    def type_argument(self, name: str) -> Type:
        argument = self.args[name].value
        written = _type_expr_of(argument)
        if written is None:
            raise HqlError(type_error(messages.expects_type_name(self.spec.name), argument.span))
        resolved = self.checker.resolve(written)
        self.checker.plan.type_args[self.node] = resolved
        return resolved

    def error(self, message: str, span: Span | None = None) -> HqlError:
        return HqlError(type_error(message, span or self.span))

    @property
    def has_vault(self) -> bool:
        return self.checker.has_vault

    @property
    def vault(self) -> Any:
        return self.checker.vault


def _type_expr_of(expr: t.Expr) -> t.TypeExpr | None:
    if isinstance(expr, t.Name):
        return t.TypeExpr(expr.span, expr.name)
    return None


class Checker:
    def __init__(
        self,
        *,
        has_vault: bool,
        scope: Scope | None = None,
        registry_: Registry | None = None,
        vault: Any = None,
        params: dict[str, Type] | None = None,
    ) -> None:
        self.registry = registry_ or registry()
        self.params = params or {}  # `$name`: the types of the values the caller supplies
        self.has_vault = has_vault
        self.vault = (
            vault  # steps may read its configuration while checking (`semantic` needs an index)
        )
        self.scope = scope or Scope(imports=self.registry.default_imports())
        for always in self.registry.default_imports(prelude=False):  # `core` needs no import
            if always not in self.scope.imports:
                self.scope.imports.insert(0, always)
        self.plan = Plan(t.Program(Span(0, 0), ()))
        self.lambda_scopes: list[dict[str, Type]] = []
        self.placeholders: set[str] = set()  # names a failed binding bound to Data
        self.list_like_refs: list[t.DocRef] = []  # `[[1], [2]]`: read as a card reference

    # --- programs and statements -----------------------------------------

    def check(self, program: t.Program, *, collect: bool) -> tuple[Plan, list[Report]]:
        self.plan = Plan(program)
        reports: list[Report] = []
        result = ty.UNIT
        for statement in program.statements:
            self.list_like_refs = []
            try:
                result = self.statement(statement)
            except HqlError as error:
                reports.append(self._with_nested_list_hint(error.report))
                if not collect:
                    break
                if isinstance(statement, t.Binding) and statement.name != RESERVED:
                    self.scope.names[statement.name] = ty.DATA
                    self.placeholders.add(statement.name)
                result = ty.DATA
        self.plan.result = result
        self.plan.imports = list(self.scope.imports)
        return self.plan, reports

    def _with_nested_list_hint(self, report: Report) -> Report:
        """A report about a statement that wrote `[[1, 2], [3]]` says how to write a nested
        list: the reference reads `[[` as a card reference whatever follows it."""
        for ref in self.list_like_refs:
            hint = messages.nested_list_hint(ref.name)
            if hint and hint not in report.message:
                return Report(report.stage, report.severity, report.message + hint, report.span)
        return report

    def statement(self, statement: t.Statement) -> Type:
        if isinstance(statement, t.ExprStatement):
            return self.expression(statement.expr)
        if isinstance(statement, t.Import):
            self.import_extension(statement)
        elif isinstance(statement, t.Binding):
            self.binding(statement)
        elif isinstance(statement, t.Declaration):
            self.declaration(statement)
        return ty.UNIT

    def import_extension(self, statement: t.Import) -> None:
        extension = self.registry.extensions.get(statement.name) or self.installed_extension(
            statement.name, statement.name_span
        )
        if statement.name in self.scope.imports:
            return
        for other in self.scope.imports:
            shared = sorted(set(self.registry.extensions[other].steps) & set(extension.steps))
            if shared:
                raise HqlError(
                    name_error(
                        messages.ambiguous_import(other, statement.name, shared[0]), statement.span
                    )
                )
        self.scope.imports.append(statement.name)

    def binding(self, statement: t.Binding) -> None:
        if statement.name == RESERVED:
            raise HqlError(name_error(messages.reserved_name(RESERVED), statement.name_span))
        inferred = self.expression(statement.value)
        if statement.annotation is not None:
            declared = self.resolve(statement.annotation)
            if not ty.is_subtype(inferred, declared):
                raise HqlError(
                    type_error(
                        messages.declared_mismatch(statement.name, declared, inferred),
                        statement.value.span,
                    )
                )
            inferred = declared
        self.scope.names[statement.name] = inferred

    def declaration(self, statement: t.Declaration) -> None:
        params = set(statement.params)
        for param in statement.params:
            if (
                param in ty.ATOM_PARENTS
                or param in ty.GENERIC_ARITY
                or param in self.scope.declared_types
            ):
                raise HqlError(type_error(messages.parameter_shadows(param), statement.span))
        if statement.name in self.scope.declared_types:
            raise HqlError(type_error(messages.declared_twice(statement.name), statement.name_span))
        parents = [self.resolve(parent, params) for parent in statement.supertypes]
        for member in statement.union:
            self.resolve(member, params)
        seen: set[str] = set()
        for entry in statement.fields:
            if entry.name in seen:
                raise HqlError(type_error(messages.field_declared_twice(entry.name), entry.span))
            seen.add(entry.name)
            self.resolve(entry.type, params)
        for _, bound in statement.bounds:
            self.resolve(bound, params)
        builtin = statement.name in ty.ATOM_PARENTS or statement.name in ty.GENERIC_ARITY
        if builtin:
            for parent in parents:
                if (
                    not ty.is_subtype(Type(statement.name), parent)
                    and statement.name in ty.ATOM_PARENTS
                ):
                    raise HqlError(
                        type_error(
                            messages.contradicts_builtin(statement.name, parent), statement.span
                        )
                    )
            return
        concrete = [p for p in parents if p.name not in ty.ABSTRACT_ATOMS and not p.args]
        for i, first in enumerate(concrete):
            for second in concrete[i + 1 :]:
                if not ty.is_subtype(first, second) and not ty.is_subtype(second, first):
                    raise HqlError(
                        type_error(
                            messages.uninhabitable(statement.name, first, second), statement.span
                        )
                    )
        required = self.scope.required_fields([p.name for p in parents])
        for entry in statement.fields:
            if entry.optional and entry.name in required:
                message = messages.required_field_made_optional(
                    statement.name, entry.name, required[entry.name]
                )
                raise HqlError(type_error(message, entry.span))
        self.scope.declared_types[statement.name] = tuple(p.name for p in parents if not p.args)
        self.scope.declared_fields[statement.name] = {f.name: f.optional for f in statement.fields}

    # --- types -------------------------------------------------------------

    def resolve(self, written: t.TypeExpr, params: set[str] | None = None) -> Type:
        name = ty.ALIASES.get(written.name, written.name)
        args = tuple(self.resolve(arg, params) for arg in written.args)
        if params and name in params and not args:
            return Type(name)
        if name in ty.GENERIC_ARITY:
            if len(args) != ty.GENERIC_ARITY[name]:
                raise HqlError(
                    type_error(
                        messages.type_arity(name, ty.GENERIC_ARITY[name], len(args)), written.span
                    )
                )
            if name == "SortedMap" and not ty.is_orderable(args[0]):
                raise HqlError(type_error(messages.sorted_map_key(args[0]), written.span))
            return Type(name, args)
        if name in ty.ATOM_PARENTS or name in self.scope.declared_types:
            if args:
                raise HqlError(type_error(messages.type_arity(name, 0, len(args)), written.span))
            return Type(name)
        raise HqlError(name_error(messages.unknown_type(written.name), written.span))

    # --- expressions ---------------------------------------------------------

    def expression(self, expr: t.Expr) -> Type:
        result = self._expression(expr)
        self.plan.types[expr] = result
        return result

    def _expression(self, expr: t.Expr) -> Type:
        if isinstance(expr, t.IntLit):
            return ty.INT
        if isinstance(expr, t.FloatLit):
            return ty.FLOAT
        if isinstance(expr, t.BoolLit):
            return ty.BOOL
        if isinstance(expr, t.StringLit):
            return ty.STRING
        if isinstance(expr, t.DocRef):
            if messages.nested_list_hint(expr.name):
                self.list_like_refs.append(expr)
            return ty.option(ty.CARD)
        if isinstance(expr, t.Name):
            return self.name(expr)
        if isinstance(expr, t.Lambda):
            raise HqlError(type_error(messages.lambda_not_a_value(), expr.span))
        if isinstance(expr, t.DataLit):
            for entry in expr.entries:
                self.data_member(entry.value)
            return ty.DATA
        if isinstance(expr, t.ListLit):
            return ty.list_of(self.common_type(expr.items))
        if isinstance(expr, t.SetLit):
            return ty.set_of(self.common_type(expr.items))
        if isinstance(expr, t.Add):
            return self.addition(expr)
        if isinstance(expr, t.Equality):
            return self.equality(expr)
        if isinstance(expr, t.EdgeLit):
            return self.edge(expr)
        if isinstance(expr, t.Field):
            return self.field(expr)
        if isinstance(expr, t.Pipe):
            return self.pipe(expr)
        if isinstance(expr, t.Call):
            return self.call(expr)
        if isinstance(expr, t.TypeCall):
            return self.type_call(expr)
        operator = _OPERATORS.get(type(expr))
        if operator is not None:
            return operator(self, expr)
        raise AssertionError(f"unknown expression {type(expr).__name__}")  # pragma: no cover

    def name(self, expr: t.Name) -> Type:
        for scope in reversed(self.lambda_scopes):
            if expr.name in scope:
                return scope[expr.name]
        if expr.name in self.scope.names:
            return self.scope.names[expr.name]
        if expr.name == RESERVED:
            if not self.has_vault:
                raise HqlError(name_error(messages.cards_needs_vault(), expr.span))
            self.plan.vault_cards.add(expr)
            return ty.set_of(ty.CARD)
        if expr.name in self.registry.step_names() or expr.name in self.registry.functions:
            raise HqlError(name_error(messages.step_needs_input(expr.name), expr.span))
        raise HqlError(name_error(self.unknown_name_message(expr.name), expr.span))

    def unknown_name_message(self, name: str) -> str:
        known = set(self.scope.names) | {RESERVED} | self.registry.step_names()
        for scope in self.lambda_scopes:
            known |= set(scope)
        return messages.unknown_name(name, closest(name, known))

    def lambda_body(self, function: t.Lambda, params: Sequence[Type]) -> Type:
        self.lambda_scopes.append(dict(zip(function.params, params, strict=True)))
        try:
            return self.expression(function.body)
        finally:
            self.lambda_scopes.pop()

    def data_member(self, expr: t.Expr) -> None:
        member = self.expression(expr)
        if not ty.is_data(ty.strip_option(member)):
            raise HqlError(type_error(messages.not_data(member), expr.span))

    def common_type(self, items: Sequence[t.Expr]) -> Type:
        common = ty.NEVER
        for item in items:
            item_type = self.expression(item)
            joined = ty.join(common, item_type)
            if joined is None:
                raise HqlError(type_error(messages.no_common_type(common, item_type), item.span))
            common = joined
        return common

    def addition(self, expr: t.Add) -> Type:
        left = self.expression(expr.left)
        right = self.expression(expr.right)
        result = ops.arithmetic_type("+", left, right)
        if result is not None:
            return result
        if ty.strip_option(left) in (ty.STRING, ty.DATE):  # sums the reference did not have
            raise HqlError(type_error(messages.arithmetic_operands("+", left, right), expr.span))
        # the reference's report, pointing at the operand that does not fit
        wrong = expr.left if ty.strip_option(left) not in (ty.INT, ty.FLOAT) else expr.right
        wrong_type = left if wrong is expr.left else right
        if ty.strip_option(wrong_type) == ty.DATA and not (
            isinstance(wrong, t.Name) and wrong.name in self.placeholders
        ):  # front matter or `number(…)` of text: say what it is and how to make it a number
            raise HqlError(type_error(messages.addition_of_data(left, right), wrong.span))
        raise HqlError(type_error(messages.addition_operands(), wrong.span))

    # --- operators of everyday.md section 1 ------------------------------------------

    def arithmetic(self, expr: t.Arithmetic) -> Type:
        left, right = self.expression(expr.left), self.expression(expr.right)
        return _operator_result(
            ops.arithmetic_type(expr.op, left, right),
            lambda: messages.arithmetic_operands(expr.op, left, right),
            expr.span,
        )

    def compare(self, expr: t.Compare) -> Type:
        left, right = self.expression(expr.left), self.expression(expr.right)
        return _operator_result(
            ops.order_type(left, right), lambda: messages.ordering_operands(left, right), expr.span
        )

    def logic(self, expr: t.Logic) -> Type:
        left, right = self.expression(expr.left), self.expression(expr.right)
        return _operator_result(
            ops.logic_type(left, right),
            lambda: messages.logic_operands(expr.op, left, right),
            expr.span,
        )

    def logical_not(self, expr: t.Not) -> Type:
        operand = self.expression(expr.operand)
        return _operator_result(
            ops.not_type(operand), lambda: messages.not_operand(operand), expr.span
        )

    def negative(self, expr: t.Negative) -> Type:
        operand = self.expression(expr.operand)
        return _operator_result(
            ops.negative_type(operand), lambda: messages.negative_operand(operand), expr.span
        )

    def otherwise(self, expr: t.Otherwise) -> Type:
        left, right = self.expression(expr.left), self.expression(expr.right)
        return _operator_result(
            ops.otherwise_type(left, right),
            lambda: messages.otherwise_operands(left, right),
            expr.span,
        )

    def parameter(self, expr: t.Param) -> Type:
        found = self.params.get(expr.name)
        if found is None:
            message = messages.unbound_parameter(expr.name, sorted(self.params))
            raise HqlError(name_error(message, expr.span))
        return found

    def equality(self, expr: t.Equality) -> Type:
        left = ty.strip_option(self.expression(expr.left))
        right = ty.strip_option(self.expression(expr.right))
        comparable = (
            left == right
            or ty.DATA in (left, right)
            or ty.NEVER in (left, right)
            or ty.is_subtype(left, right)
            or ty.is_subtype(right, left)
        )
        if not comparable:
            raise HqlError(type_error(messages.never_equal(left, right), expr.span))
        return ty.BOOL

    def edge(self, expr: t.EdgeLit) -> Type:
        for endpoint in (expr.source, expr.target):
            endpoint_type = ty.strip_option(self.expression(endpoint))
            if (
                endpoint_type != ty.STRING
                and endpoint_type.name not in ty.CARD_FAMILY
                and endpoint_type != ty.DOC
            ):
                raise HqlError(type_error(messages.edge_endpoint(endpoint_type), endpoint.span))
        if expr.data is not None:
            self.expression(expr.data)
        return ty.EDGE

    def field(self, expr: t.Field) -> Type:
        receiver = self.expression(expr.receiver)
        optional = receiver.name == "Option"
        found = field_type(ty.strip_option(receiver), expr.name)
        if found is None:
            raise HqlError(
                name_error(
                    messages.no_such_field(ty.strip_option(receiver), expr.name), expr.name_span
                )
            )
        return ty.option(found) if optional else found

    # --- steps and calls -------------------------------------------------------

    def pipe(self, expr: t.Pipe) -> Type:
        input_type = self.expression(expr.input)
        spec = self.resolve_step(expr.stage)
        if input_type == ty.PRESENTATION and spec.extension != "present":
            raise HqlError(type_error(messages.presentation_is_final(), expr.input.span))
        self.plan.steps[expr] = spec
        return self.apply_step(
            spec, expr, input_type, expr.input.span, expr.stage.args or (), expr.stage.span
        )

    def resolve_step(self, stage: t.Stage) -> StepSpec:
        reg = self.registry
        if stage.extension is not None:
            if stage.extension in self.scope.names:
                raise HqlError(name_error(messages.extension_hidden(stage.extension), stage.span))
            extension = reg.extensions.get(stage.extension) or self.installed_extension(
                stage.extension, stage.span
            )
            if stage.extension not in self.scope.imports:
                raise HqlError(
                    name_error(messages.needs_import(stage.name, stage.extension), stage.name_span)
                )
            if stage.name not in extension.steps:
                raise HqlError(
                    name_error(
                        messages.not_in_extension(stage.name, stage.extension), stage.name_span
                    )
                )
            return extension.steps[stage.name]
        for name in self.scope.imports:
            extension = reg.extensions[name]
            if stage.name in extension.steps:
                return extension.steps[stage.name]
        providers = reg.providers(stage.name)
        if providers:
            raise HqlError(
                name_error(messages.needs_import(stage.name, providers[0].name), stage.name_span)
            )
        suggestion = closest(stage.name, reg.step_names())
        raise HqlError(name_error(messages.not_a_step(stage.name, suggestion), stage.name_span))

    def apply_step(
        self,
        spec: StepSpec,
        node: t.Node,
        input_type: Type,
        input_span: Span,
        args: Sequence[t.Argument],
        span: Span,
    ) -> Type:
        bound = self.bind_arguments(spec, args, span)
        self.plan.arguments[node] = bound
        typing = StepTyping(self, spec, node, input_type, input_span, bound, span)
        return spec.check(typing)

    def bind_arguments(
        self, spec: StepSpec, args: Sequence[t.Argument], span: Span
    ) -> dict[str, t.Argument]:
        bound: dict[str, t.Argument] = {}
        positional = [p for p in spec.params if p.positional]
        index = 0
        for argument in args:
            if argument.name is None:
                if spec.variadic:
                    bound[f"#{index}"] = argument
                    index += 1
                    continue
                while index < len(positional) and positional[index].name in bound:
                    index += 1
                if index >= len(positional):
                    raise HqlError(
                        type_error(
                            messages.too_many_arguments(spec.name, len(positional)), argument.span
                        )
                    )
                bound[positional[index].name] = argument
                index += 1
                continue
            param = spec.param(argument.name)
            if param is None:
                suggestion = closest(argument.name, [p.name for p in spec.params])
                raise HqlError(
                    type_error(
                        messages.no_such_argument(spec.name, argument.name, suggestion),
                        argument.span,
                    )
                )
            if not param.named:
                raise HqlError(
                    type_error(
                        messages.argument_not_nameable(spec.name, argument.name), argument.span
                    )
                )
            if argument.name in bound:
                raise HqlError(
                    type_error(messages.argument_twice(spec.name, argument.name), argument.span)
                )
            bound[argument.name] = argument
        for param in spec.params:
            if param.required and param.name not in bound:
                raise HqlError(type_error(messages.missing_argument(spec.name, param.name), span))
        return bound

    def call(self, expr: t.Call) -> Type:
        callee = expr.callee
        if not isinstance(callee, t.Name) or self._is_bound(callee.name):
            raise HqlError(type_error(messages.not_callable(), callee.span))
        function = self.registry.functions.get(callee.name) or self.imported_function(callee.name)
        if function is not None:
            self.plan.functions[expr] = function
            return function.check(self, expr, (), expr.args)
        spec = self.direct_step(callee)
        if not expr.args or expr.args[0].name is not None:
            raise HqlError(type_error(messages.direct_call_needs_input(callee.name), expr.span))
        first = expr.args[0].value
        input_type = self.expression(first)
        self.plan.steps[expr] = spec
        self.plan.inputs[expr] = first
        return self.apply_step(spec, expr, input_type, first.span, expr.args[1:], expr.span)

    def _is_bound(self, name: str) -> bool:
        return name in self.scope.names or any(name in scope for scope in self.lambda_scopes)

    def direct_step(self, callee: t.Name) -> StepSpec:
        for name in self.scope.imports:
            spec = self.registry.extensions[name].steps.get(callee.name)
            if spec is not None:
                if not spec.direct:
                    raise HqlError(name_error(messages.step_needs_input(callee.name), callee.span))
                return spec
        if self.registry.providers(callee.name):
            raise HqlError(name_error(messages.step_needs_input(callee.name), callee.span))
        providers = self.registry.function_providers(callee.name)
        if providers:
            message = messages.needs_import(callee.name, providers[0].name)
            raise HqlError(name_error(message, callee.span))
        known = set(self.registry.functions) | {s.name for s in self.registry.steps() if s.direct}
        known |= {name for ext in self.registry.extensions.values() for name in ext.functions}
        raise HqlError(
            name_error(
                messages.unknown_function(callee.name, closest(callee.name, known)), callee.span
            )
        )

    # --- extensions declared through hql.extend ----------------------------------

    def installed_extension(self, name: str, span: Span) -> Extension:
        """An extension HQL does not ship: installed packages are looked for only now, when a
        program first needs one; a name error when none provides it (or its package is broken)."""
        extension = self.registry.load_installed().extensions.get(name)
        if extension is not None:
            return extension
        failure = self.registry.load_failures.get(name)
        message = messages.ext_failed_to_load(name, failure) if failure else None
        raise HqlError(name_error(message or messages.no_such_extension(name), span))

    def imported_function(self, name: str) -> FunctionSpec | None:
        for extension in self.scope.imports:
            function = self.registry.extensions[extension].functions.get(name)
            if function is not None:
                return function
        return None

    def type_call(self, expr: t.TypeCall) -> Type:
        function = self.registry.functions.get(expr.name)
        if function is None or not expr.name[:1].isupper():
            raise HqlError(name_error(messages.unknown_constructor(expr.name), expr.span))
        types = tuple(self.resolve(written) for written in expr.types)
        self.plan.functions[expr] = function
        return function.check(self, expr, types, expr.args)


_OPERATORS: dict[type, Any] = {
    t.Arithmetic: Checker.arithmetic,
    t.Compare: Checker.compare,
    t.Logic: Checker.logic,
    t.Not: Checker.logical_not,
    t.Negative: Checker.negative,
    t.Otherwise: Checker.otherwise,
    t.Param: Checker.parameter,
}
DATE_FIELDS = ("year", "month", "day", "weekday")


def field_type(receiver: Type, name: str) -> Type | None:
    """The type of `receiver.name`, or None when there is no such field (reference 7.3)."""
    if receiver == ty.DATA or receiver == ty.NEVER:
        return receiver
    doc_fields = {
        "name": ty.STRING,
        "title": ty.STRING,
        "path": ty.STRING,
        "format": ty.STRING,
        "body": ty.STRING,
        "header": ty.DATA,
    }
    if receiver == ty.DOC:
        return doc_fields.get(name)
    if receiver.name in ty.CARD_FAMILY:
        return {**doc_fields, "metadata": ty.DATA, "kind": ty.STRING}.get(name) or NOTE_FIELDS.get(
            name
        )
    if receiver == ty.EDGE:
        return {"source": ty.STRING, "target": ty.STRING, "data": ty.DATA}.get(name)
    if receiver.name == "Hit":
        return {
            "card": receiver.arg,
            "score": ty.FLOAT,
            "query": ty.STRING,
            "retrieval": ty.DATA,
        }.get(name)
    if receiver.name == "Ranking":
        return {
            "hits": ty.list_of(ty.hit_of(receiver.arg)),
            "query": ty.STRING,
            "retrieval": ty.DATA,
        }.get(name)
    if receiver == ty.GRAPH:
        return {"nodes": ty.list_of(ty.STRING), "edges": ty.list_of(ty.EDGE)}.get(name)
    if receiver == ty.CONTEXT:
        return CONTEXT_FIELDS.get(name)
    if receiver.name == "Group":
        return {"key": receiver.args[0], "items": ty.list_of(receiver.args[1])}.get(name)
    if receiver == ty.DATE:
        return ty.INT if name in DATE_FIELDS else None
    if receiver == ty.TASK:
        return TASK_FIELDS.get(name)
    if receiver == ty.CONCEPT:
        return CONCEPT_FIELDS.get(name)
    if receiver.name in ty.MAPS and name == "keys":
        key = receiver.args[0]
        return ty.set_of(key) if receiver.name == "Map" else ty.seq_of(key)
    return None


# What a card says as people write notes (everyday.md §4), beside the reference's fields.
NOTE_FIELDS: dict[str, Type] = {
    "tags": ty.list_of(ty.STRING),
    "aliases": ty.list_of(ty.STRING),
    "folder": ty.STRING,
    "relpath": ty.STRING,
    "modified": ty.DATE,
    "created": ty.option(ty.DATE),
    "tasks": ty.list_of(ty.TASK),
    "headings": ty.list_of(ty.STRING),
    "outlinks": ty.list_of(ty.STRING),
    "inlinks": ty.list_of(ty.STRING),
    "unresolved": ty.list_of(ty.STRING),
    "library": ty.STRING,  # `project`, or the library's name ([vault] libraries)
    "scope": ty.STRING,  # `project`, or the library's scope (`global`, …)
    # The recall fields (memory.md §2), through the vault's `[context.fields]` mapping.
    "summary": ty.option(ty.STRING),
    "triggers": ty.list_of(ty.STRING),
    "use_when": ty.list_of(ty.STRING),
    "ignore_when": ty.list_of(ty.STRING),
    "topics": ty.list_of(ty.STRING),
    "priority": ty.STRING,
    "status": ty.STRING,
    "superseded_by": ty.list_of(ty.STRING),
    "day": ty.option(ty.DATE),
    "ctime": ty.option(ty.DATE),
    "size": ty.INT,
}

# A task of `c.tasks` (a `Task`).
TASK_FIELDS: dict[str, Type] = {
    "text": ty.STRING,
    "done": ty.BOOL,
    "line": ty.INT,
    "due": ty.option(ty.DATE),
    "scheduled": ty.option(ty.DATE),
    "completed": ty.option(ty.DATE),
}


# A concept of `recall` (hql.values.Concept).
CONCEPT_FIELDS: dict[str, Type] = {
    "name": ty.STRING,
    "title": ty.STRING,
    "labels": ty.list_of(ty.STRING),
    "source": ty.STRING,
    "card": ty.option(ty.CARD),
    "links": ty.list_of(ty.STRING),
    "kind": ty.STRING,
}


# What a context block (`ranking | context`) shows of itself.
CONTEXT_FIELDS: dict[str, Type] = {
    "items": ty.list_of(ty.DATA),
    "trimmed": ty.list_of(ty.DATA),
    "rendered": ty.STRING,
    "tokens": ty.INT,
    "abstention": ty.option(ty.STRING),
    "diagnostics": ty.DATA,
}


def fields_of(receiver: Type) -> list[str]:
    """Every field name a receiver type has (for completion and suggestions)."""
    candidates = [
        "name",
        "title",
        "path",
        "format",
        "body",
        "header",
        "metadata",
        "kind",
        "source",
        "target",
        "data",
        "card",
        "score",
        "query",
        "retrieval",
        "hits",
        "nodes",
        "edges",
        "keys",
        "key",
        "items",
        *DATE_FIELDS,
        *NOTE_FIELDS,
        *CONTEXT_FIELDS,
        *TASK_FIELDS,
        *CONCEPT_FIELDS,
    ]
    return [
        name
        for name in candidates
        if field_type(receiver, name) is not None and receiver != ty.DATA
    ]


def check_program(
    program: t.Program, *, has_vault: bool, collect: bool, scope: Scope | None = None
) -> tuple[Plan, list[Report]]:
    checker = Checker(has_vault=has_vault, scope=scope)
    return checker.check(program, collect=collect)


def _operator_result(result: Type | None, refusal: Callable[[], str], span: Span) -> Type:
    """An operator's type, or its type error at the operator (the typing rule said None)."""
    if result is None:
        raise HqlError(type_error(refusal(), span))
    return result
