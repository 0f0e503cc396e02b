"""Write HQL extensions in Python: steps and functions with HQL signatures.

    from hql.extend import Extension

    extension = Extension("wordstats", version="1.0.0", summary="counting words")

    @extension.step(
        "Collection<Card> | wordcount(min: Int = 0) -> List<Data>",
        summary="each card's name and the number of words in its body",
        example="cards | wordcount(min = 100)",
    )
    def wordcount(cards, min):
        counts = [{"card": card.name, "words": len(card.body.split())} for card in cards]
        return [row for row in counts if row["words"] >= min]

An installed package makes its extension known through an entry point in the
`hql.extensions` group (`wordstats = "wordstats:extension"`). Programs use it
after `import wordstats`, exactly as they use a shipped extension: the checker
types every call from the signature, `hql builtins`, completion and
`hql builtins --extension wordstats` describe it, and a failure inside the
Python function is an evaluation report naming the extension and the step.
Installed packages are found only when a program needs a name HQL does not
ship (or lists the extensions, or opens a vault); nothing in a vault folder
is ever executed. docs/extensions.md walks through writing one.

Signatures are written in HQL's own type syntax:

    INPUT | name(param: Type, param: Type = default, param?: Type) -> OUTPUT where T: Bound
    name(param: Type, …) -> OUTPUT                       (a function)

Single capital letters (`T`, `U`, `K`, `V`, …) are type variables; `where T: Doc`
bounds one. A step parameter may take a lambda: `key: T => String`.
"""

from __future__ import annotations

import math
import os
import re
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import types as ty
from hql.diagnostics import HqlError, evaluation, type_error
from hql.record import record
from hql.registry import REQUIRED, FunctionSpec, Param, Registry, StepSpec, closest
from hql.types import Type
from hql.values import (
    ABSENT,
    UNIT,
    Card,
    Data,
    Edge,
    Hit,
    ListValue,
    MapValue,
    Presentation,
    Ranking,
    Retrieval,
    SetValue,
    UnmadeHits,
    elements,
)

if TYPE_CHECKING:
    from hql.checker import Checker, StepTyping
    from hql.interpreter import Interpreter, StepCall
    from hql.source import Span
    from hql.syntax import tree as t
    from hql.vault import Vault

__all__ = [
    "GROUP",
    "Card",
    "Context",
    "Data",
    "Extension",
    "ExtensionError",
    "Hit",
    "Ranking",
    "Retrieval",
    "load_errors",
    "ranking",
    "register",
    "retrieval",
]

# What a planner may push into a step that declares it absorbs it.
HINTS = {"limit", "lazy-cards", "relevant", "count"}
GROUP = "hql.extensions"  # the entry-point group installed packages declare their extension in
RESERVED_PARAMS = ("context",)


class ExtensionError(Exception):
    """A declaration HQL cannot accept; the message says which extension, which step, and why."""


# --- signatures ----------------------------------------------------------------------


@record
class LambdaType:
    """The type of a lambda parameter: `T => Bool`, `(T, U) => Float`."""

    params: tuple[Type, ...]
    result: Type

    def __str__(self) -> str:
        if len(self.params) == 1:
            return f"{self.params[0]} => {self.result}"
        return f"({', '.join(str(p) for p in self.params)}) => {self.result}"


@record
class Signature:
    """A parsed signature: what the checker types calls from and the runner converts by."""

    text: str
    name: str
    input: Type | None  # None for a function
    params: tuple[Param, ...]
    types: tuple[Type | LambdaType, ...]  # one per parameter
    output: Type
    bounds: dict[str, Type]
    variables: frozenset[str]

    def input_text(self) -> str:
        assert self.input is not None
        used = [v for v in sorted(self.bounds) if v in _variables_of(self.input)]
        where = ", ".join(f"{v}: {self.bounds[v]}" for v in used)
        return f"{self.input} where {where}" if where else str(self.input)


_TOKEN = re.compile(
    r"\s*(?:(?P<arrow>->)|(?P<fat>=>)"
    r"|(?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r'|(?P<string>"(?:[^"\\]|\\.)*")'
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<punct>[<>,():|?=]))"
)
_VARIABLE = re.compile(r"[A-Z][0-9]*")


class _SignatureError(Exception):
    def __init__(self, column: int, problem: str) -> None:
        super().__init__(problem)
        self.column = column
        self.problem = problem


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        position = 0
        while position < len(text):
            if text[position:].strip() == "":
                break
            found = _TOKEN.match(text, position)
            if found is None or found.lastgroup is None:
                column = len(text) - len(text[position:].lstrip()) + 1
                raise _SignatureError(
                    column,
                    messages.ext_expected("a name, a type or punctuation", repr(text[column - 1])),
                )
            kind = found.lastgroup
            value = found.group(kind)
            self.tokens.append((kind, value, found.start(kind) + 1))
            position = found.end()
        self.index = 0

    def peek(self, value: str | None = None, kind: str | None = None) -> bool:
        if self.index >= len(self.tokens):
            return False
        token_kind, token_value, _ = self.tokens[self.index]
        return (value is None or token_value == value) and (kind is None or token_kind == kind)

    def column(self) -> int:
        if self.index < len(self.tokens):
            return self.tokens[self.index][2]
        return len(self.text) + 1

    def found(self) -> str:
        if self.index < len(self.tokens):
            return f"`{self.tokens[self.index][1]}`"
        return "the end"

    def expect(self, value: str | None = None, kind: str | None = None, what: str = "") -> str:
        if not self.peek(value, kind):
            raise _SignatureError(
                self.column(), messages.ext_expected(what or f"`{value}`", self.found())
            )
        token = self.tokens[self.index][1]
        self.index += 1
        return token

    def accept(self, value: str) -> bool:
        if self.peek(value):
            self.index += 1
            return True
        return False

    # grammar ---------------------------------------------------------------------

    def signature(self, step: bool) -> tuple[Any, ...]:
        input_type = None
        if step:
            input_type = self.type()
            self.expect("|")
        name = self.expect(kind="name", what="the name of the " + ("step" if step else "function"))
        self.expect("(")
        params: list[tuple[Param, Type | LambdaType, int]] = []
        if not self.peek(")"):
            params.append(self.param())
            while self.accept(","):
                params.append(self.param())
        self.expect(")", what="`,` or `)`")
        self.expect("->")
        output = self.type()
        bounds: dict[str, tuple[Type, int]] = {}
        if self.accept("where"):
            while True:
                column = self.column()
                variable = self.expect(kind="name", what="a type variable")
                self.expect(":")
                bounds[variable] = (self.type(), column)
                if not self.accept(","):
                    break
        if self.index < len(self.tokens):
            raise _SignatureError(self.column(), messages.ext_expected("the end", self.found()))
        return input_type, name, params, output, bounds

    def param(self) -> tuple[Param, Type | LambdaType, int]:
        column = self.column()
        name = self.expect(kind="name", what="a parameter name")
        optional = self.accept("?")
        self.expect(":")
        start = self.column()
        kind_type = self.param_type()
        end = self.column()
        written = self.text[start - 1 : end - 1].strip() if end > start else str(kind_type)
        default: Any = None if optional else REQUIRED
        if not optional and self.accept("="):
            default = self.literal()
        kind = "lambda" if isinstance(kind_type, LambdaType) else "value"
        return Param(name, written, default=default, kind=kind), kind_type, column

    def param_type(self) -> Type | LambdaType:
        if self.accept("("):
            params = [self.type()]
            while self.accept(","):
                params.append(self.type())
            self.expect(")")
            self.expect("=>")
            return LambdaType(tuple(params), self.type())
        first = self.type()
        if self.accept("=>"):
            return LambdaType((first,), self.type())
        return first

    def type(self) -> Type:
        name = self.expect(kind="name", what="a type")
        args: list[Type] = []
        if self.accept("<"):
            args.append(self.type())
            while self.accept(","):
                args.append(self.type())
            self.expect(">", what="`,` or `>`")
        return Type(name, tuple(args))

    def literal(self) -> Any:
        column = self.column()
        if self.peek(kind="number"):
            text = self.expect(kind="number")
            return float(text) if any(c in text for c in ".eE") else int(text)
        if self.peek(kind="string"):
            import json

            return json.loads(self.expect(kind="string"))
        for word, value in (("true", True), ("false", False), ("none", None)):
            if self.accept(word):
                return value
        raise _SignatureError(
            column,
            messages.ext_expected(
                "a default (a number, a string, true, false or none)", self.found()
            ),
        )


def _variables_of(written: Type | LambdaType) -> set[str]:
    if isinstance(written, LambdaType):
        found: set[str] = set()
        for part in (*written.params, written.result):
            found |= _variables_of(part)
        return found
    if (
        not written.args
        and _VARIABLE.fullmatch(written.name)
        and written.name not in ty.ATOM_PARENTS
    ):
        return {written.name}
    found = set()
    for arg in written.args:
        found |= _variables_of(arg)
    return found


def _resolve(written: Type, column: int) -> Type:
    """Aliases replaced, names and arities checked."""
    name = ty.ALIASES.get(written.name, written.name)
    args = tuple(_resolve(arg, column) for arg in written.args)
    if name in ty.GENERIC_ARITY:
        if len(args) != ty.GENERIC_ARITY[name]:
            raise _SignatureError(
                column, messages.ext_type_arity(name, ty.GENERIC_ARITY[name], len(args))
            )
        return Type(name, args)
    if name in ty.ATOM_PARENTS or _VARIABLE.fullmatch(name):
        if args:
            raise _SignatureError(column, messages.ext_type_arity(name, 0, len(args)))
        return Type(name)
    raise _SignatureError(
        column,
        messages.ext_unknown_type(written.name, closest(written.name, ty.known_type_names())),
    )


def _resolve_any(written: Type | LambdaType, column: int) -> Type | LambdaType:
    if isinstance(written, LambdaType):
        return LambdaType(
            tuple(_resolve(p, column) for p in written.params), _resolve(written.result, column)
        )
    return _resolve(written, column)


def parse_signature(text: str, *, step: bool) -> Signature:
    """A signature, or ExtensionError-ready `_SignatureError` saying where it stops making sense."""
    parser = _Parser(text)
    input_written, name, params, output_written, bounds_written = parser.signature(step)
    input_type = _resolve(input_written, 1) if input_written is not None else None
    output = _resolve(output_written, len(text))
    resolved_params: list[Param] = []
    types: list[Type | LambdaType] = []
    seen: set[str] = set()
    for param, written, column in params:
        if param.name in seen:
            raise _SignatureError(column, messages.ext_param_twice(param.name))
        if param.name in RESERVED_PARAMS:
            raise _SignatureError(column, messages.ext_reserved_param(param.name))
        seen.add(param.name)
        kind_type = _resolve_any(written, column)
        if isinstance(kind_type, Type) and param.default not in (REQUIRED, None):
            try:
                _from_python(param.default, kind_type)
            except _Refused:
                raise _SignatureError(
                    column, messages.ext_default_type(param.name, kind_type, param.default)
                ) from None
        resolved_params.append(param)
        types.append(kind_type)
    bounds = {v: _resolve(b, column) for v, (b, column) in bounds_written.items()}
    variables: set[str] = set(bounds)
    for part in (input_type, output, *types):
        if part is not None:
            variables |= _variables_of(part)
    fixed = _variables_of(input_type) if input_type is not None else set()
    for kind_type in types:
        if isinstance(kind_type, Type):
            fixed |= _variables_of(kind_type)
    for param, kind_type in zip(resolved_params, types, strict=True):
        if isinstance(kind_type, LambdaType):
            for part in kind_type.params:
                for variable in sorted(_variables_of(part) - fixed):
                    raise _SignatureError(1, messages.ext_lambda_variable(variable, param.name))
    for kind_type in types:
        if isinstance(kind_type, LambdaType):
            fixed |= _variables_of(kind_type.result)
    for variable in sorted(_variables_of(output) - fixed):
        raise _SignatureError(len(text), messages.ext_unbound_variable(variable))
    return Signature(
        text,
        name,
        input_type,
        tuple(resolved_params),
        tuple(types),
        output,
        bounds,
        frozenset(variables),
    )


# --- matching declared types against the types of a call -------------------------------


def _view(actual: Type, name: str) -> Type | None:
    """`actual` seen as the generic `name` (a List as a Seq, a Ranking as a Seq of hits)."""
    if actual.name == name:
        return actual
    if actual.name == "Ranking" and name in ("Seq", "Collection"):
        return Type(name, (ty.hit_of(actual.arg),))
    if name in ty.GENERIC_PARENTS.get(actual.name, ()):
        return Type(name, actual.args)
    return None


class _Matcher:
    def __init__(self, signature: Signature) -> None:
        self.variables = signature.variables
        self.bounds = signature.bounds
        self.env: dict[str, Type] = {}

    def is_variable(self, t_: Type) -> bool:
        return not t_.args and t_.name in self.variables

    def match(self, pattern: Type, actual: Type) -> bool:
        if self.is_variable(pattern):
            bound = self.bounds.get(pattern.name)
            current = self.env.get(pattern.name)
            if actual == ty.NEVER:
                if current is None and bound is not None:
                    self.env[pattern.name] = bound
                return True
            joined = actual if current is None else ty.join(current, actual)
            if joined is None or (bound is not None and not ty.is_subtype(joined, bound)):
                return False
            self.env[pattern.name] = joined
            return True
        if actual == ty.NEVER:
            return True
        if not _variables_of(pattern):
            return ty.is_subtype(actual, pattern)
        if pattern.name == "Option":
            return self.match(pattern.arg, actual.arg if actual.name == "Option" else actual)
        if actual.name == "Option":
            return False
        view = _view(actual, pattern.name)
        if view is None or len(view.args) != len(pattern.args):
            return False
        return all(self.match(p, a) for p, a in zip(pattern.args, view.args, strict=True))

    def substitute(self, pattern: Type) -> Type:
        if self.is_variable(pattern):
            return self.env.get(pattern.name, self.bounds.get(pattern.name, ty.NEVER))
        if not pattern.args:
            return pattern
        result = Type(pattern.name, tuple(self.substitute(arg) for arg in pattern.args))
        return ty.option(result.arg) if result.name == "Option" else result

    def shown(self, pattern: Type) -> Type:
        """The pattern with the variables known so far filled in (for messages)."""
        if self.is_variable(pattern):
            return self.env.get(pattern.name, pattern)
        return Type(pattern.name, tuple(self.shown(arg) for arg in pattern.args))


@record
class _InputShape:
    matcher: _Matcher
    unwrap_hits: bool  # a ranking given to a collection step: the step sees its cards
    optional: bool  # an Option given to a step of a plain value: absence passes through
    drops_absent: bool = False  # optional elements given to a step of plain ones


def _match_input(signature: Signature, found: Type) -> _InputShape | None:
    assert signature.input is not None
    declared = signature.input
    matcher = _Matcher(signature)
    if matcher.match(declared, found):
        return _InputShape(matcher, False, False)
    fits = found.name not in ty.COLLECTIONS or _view(found, declared.name) is not None
    if declared.name in ty.COLLECTIONS and fits:
        # As with the shipped steps: one value (or none) is a collection of one (or none),
        # and a ranking given to a step over documents gives it the ranked cards. A
        # collection of another kind (a Set for a step over a Seq) is not one.
        element = ty.element_type(found)
        candidates: list[tuple[Type, bool, bool]] = []
        if element is not None:
            candidates.append((element, False, False))
            if element.name == "Hit":
                candidates.append((element.arg, True, False))
            if element.name == "Option":
                candidates.append((element.arg, False, True))
        for candidate, unwrap, drops in candidates:
            matcher = _Matcher(signature)
            if matcher.match(declared.arg, candidate):
                return _InputShape(matcher, unwrap, False, drops)
    elif found.name == "Option" and declared.name != "Option":
        matcher = _Matcher(signature)
        if matcher.match(declared, found.arg):
            return _InputShape(matcher, False, True)
    return None


# --- converting between HQL values and Python ----------------------------------------


class _Refused(Exception):
    def __init__(self, where: str, expected: object, found: str) -> None:
        super().__init__(found)
        self.where = where
        self.expected = expected
        self.found = found


def _describe(value: Any) -> str:
    if value is None:
        return "None"
    return f"a Python {type(value).__name__}"


def to_python(value: Any) -> Any:
    """What a Python function receives for an HQL value: lists for collections, plain trees
    for Data, None for absence, dicts for maps; cards, hits, rankings and edges as they are."""
    if value is ABSENT:
        return None
    if isinstance(value, Data):
        return value.tree
    if isinstance(value, ListValue | SetValue):
        return [to_python(item) for item in value.items]
    if isinstance(value, MapValue):
        return {key: to_python(item) for key, item in value.items()}
    return value


def _data_tree(value: Any, where: str) -> Any:
    if isinstance(value, Data):
        return value.tree
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Refused(where, ty.DATA, f"the float {value}")
        return value
    if isinstance(value, Mapping):
        tree = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Refused(where, ty.DATA, f"a map with the key {key!r}")
            tree[key] = _data_tree(item, where)
        return tree
    if isinstance(value, list | tuple):
        return [_data_tree(item, where) for item in value]
    raise _Refused(where, ty.DATA, _describe(value))


def _items(value: Any, expected: Type, where: str) -> list[Any]:
    if isinstance(value, ListValue | SetValue):
        return list(value.items)
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise _Refused(where, expected, _describe(value))
    return list(value)


def _from_python(value: Any, expected: Type, where: str = "") -> Any:
    """The HQL value of `expected` for what a Python function returned; `_Refused` if none."""
    name = expected.name
    if name == "Option":
        return (
            ABSENT if value is None or value is ABSENT else _from_python(value, expected.arg, where)
        )
    if name == "Unit":
        if value is None or value is UNIT:
            return UNIT
    elif name == "Bool":
        if isinstance(value, bool):
            return value
    elif name == "Int":
        if isinstance(value, int) and not isinstance(value, bool):
            if -(2**63) <= value < 2**63:
                return value
            raise _Refused(where, expected, f"the integer {value}, outside Int")
    elif name == "Float":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif name == "String":
        if isinstance(value, str):
            return value
    elif name == "Scalar":
        if isinstance(value, str | int | float):
            return value
    elif name == "Orderable":
        if isinstance(value, str | int | float | Card) and not isinstance(value, bool):
            return value
    elif name == "Data":
        return Data(_data_tree(value, where))
    elif name in ty.CARD_FAMILY or name == "Doc":
        if isinstance(value, Card) and (name in ("Card", "Doc") or value.kind == name):
            return value
    elif name == "Edge":
        if isinstance(value, Edge):
            return value
    elif name == "Presentation":
        if isinstance(value, Presentation):
            return value
    elif name == "Graph":
        if type(value).__name__ == "Graph" and type(value).__module__ == "hql.graphs":
            return value
    elif name == "Hit":
        if isinstance(value, Hit) and isinstance(value.card, Card):
            return value
    elif name == "Ranking":
        if isinstance(value, Ranking):
            if isinstance(value.hits, UnmadeHits):  # checked, one by one, as they are made
                return _unmade_checked(value, expected, where)
            for rank, hit in enumerate(value.hits, start=1):
                _from_python(hit.card, expected.arg, f"{where}hit {rank}: ")
            return value
    elif name in ("List", "Seq", "Collection"):
        items = _items(value, expected, where)
        return ListValue(
            tuple(
                _from_python(item, expected.arg, f"{where}element {n}: ")
                for n, item in enumerate(items, start=1)
            )
        )
    elif name == "Set":
        from hql.interpreter import distinct

        items = _items(value, expected, where)
        converted = (
            _from_python(item, expected.arg, f"{where}element {n}: ")
            for n, item in enumerate(items, start=1)
        )
        return SetValue(distinct(converted))
    elif name in ty.MAPS:
        return _map(value, expected, where)
    elif name == "Never":
        pass
    else:  # a type this module does not know how to check (one added later): trust it
        return value
    raise _Refused(where, expected, _describe(value))


def _unmade_checked(value: Ranking, expected: Type, where: str) -> Ranking:
    unmade = value.hits
    assert isinstance(unmade, UnmadeHits)

    def made() -> tuple[Hit, ...]:
        hits = tuple(unmade.made())
        for rank, hit in enumerate(hits, start=1):
            _from_python(hit.card, expected.arg, f"{where}hit {rank}: ")
        return hits

    return Ranking(UnmadeHits(len(unmade), made), value.retrieval)


def _map(value: Any, expected: Type, where: str) -> MapValue:
    if isinstance(value, MapValue | Mapping):
        pairs = list(value.items())
    else:
        raise _Refused(where, expected, _describe(value))
    key_type, value_type = expected.args
    converted = [
        (
            _from_python(key, key_type, f"{where}a key: "),
            _from_python(item, value_type, f"{where}the value of {key!r}: "),
        )
        for key, item in pairs
    ]
    if expected.name == "SortedMap":
        import functools

        from hql.printing import compare_first

        converted.sort(key=functools.cmp_to_key(compare_first))
    return MapValue(
        expected.name,
        tuple(k for k, _ in converted),
        tuple(v for _, v in converted),
        str(expected),
    )


# --- what a running step sees -------------------------------------------------------------


class Context:
    """Given to a step or function whose Python function takes a `context` parameter."""

    def __init__(
        self,
        extension: str,
        name: str,
        vault: Vault | None,
        span: Span,
        warn: Callable[[str], None],
        input_type: Type | None,
        output_type: Type,
        limit: int | None = None,
        relevant: Mapping[str, Any] | None = None,
        count_only: bool = False,
    ) -> None:
        self.limit = limit  # set by a planner for a step that absorbs `limit`
        # Set by a planner for a step that absorbs `relevant` when `relevant` follows it:
        # {"min": the literal floor, or None for the metric's own rule}.
        self.relevant = relevant
        # Set by a planner for a step that absorbs `count` when only the number of its
        # ranking's hits is read (`step | count`): `hql.values.UnmadeHits` may stand for them.
        self.count_only = count_only
        self.extension = extension
        self.name = name
        self.vault = vault
        self.span = span
        self._warn = warn
        self.input_type = input_type
        self.output_type = output_type

    def warn(self, message: str) -> None:
        """A warning report at the call (the program still succeeds)."""
        self._warn(message)

    def fail(self, message: str) -> HqlError:
        """An evaluation report at the call: `raise context.fail("the service is down")`."""
        kind = "step" if self.input_type is not None else "function"
        return HqlError(
            evaluation(messages.ext_failed(kind, self.name, self.extension, message), self.span)
        )


# --- declaring an extension ---------------------------------------------------------------

_NAME = re.compile(r"[a-z_][a-z0-9_]*")


@record(frozen=False)
class _Declared:
    kind: str  # "step" or "function"
    signature: Signature
    run: Callable[..., Any]
    summary: str
    example: str
    pure: bool = True
    direct: bool = False
    absorbs: tuple[str, ...] = ()
    wants_context: bool = False


def _plain_function_fits(
    run: Any, code: Any, names: list[str], step: bool
) -> tuple[str | None, bool]:
    """(problem, takes context) for a plain Python function, read from its code object
    (cheap: `inspect` is not imported on the start-up path)."""
    positional = code.co_varnames[: code.co_argcount]
    keyword_only = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    has_varargs = bool(code.co_flags & 0x04)
    has_varkw = bool(code.co_flags & 0x08)
    by_name = set(positional[code.co_posonlyargcount :]) | set(keyword_only)
    wants = "context" in by_name or has_varkw
    offered = [*names, "context"] if wants else names
    if step and not positional and not has_varargs:
        return messages.ext_python_takes_no_input(), wants
    for name in names:
        if name not in by_name and not has_varkw:
            return messages.ext_python_lacks(name), wants
    defaults = len(run.__defaults__ or ())
    required = list(positional[: len(positional) - defaults])
    if step and required:
        required = required[1:]  # the input
    required += [name for name in keyword_only if name not in (run.__kwdefaults__ or {})]
    for name in required:
        if name not in offered:
            return messages.ext_python_requires(name), wants
    return None, wants


def _callable_fits(run: Any, names: list[str], step: bool) -> tuple[str | None, bool]:
    import inspect

    try:
        python = inspect.signature(run)
    except (TypeError, ValueError):
        return None, False
    wants = "context" in python.parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in python.parameters.values()
    )
    arguments = dict.fromkeys([*names, "context"] if wants else names)
    try:
        python.bind(*([None] if step else []), **arguments)
    except TypeError as error:
        return str(error), wants
    return None, wants


class Extension:
    """An extension: a name, a version, a summary, its steps and functions, and the card
    metadata it contributes (every card's `metadata.<name>` holds it)."""

    def __init__(
        self,
        name: str,
        *,
        version: str,
        summary: str,
        card_metadata: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ExtensionError(messages.ext_bad_name(name))
        self.name = name
        self.version = str(version)
        self.summary = summary
        try:
            tree = _data_tree(dict(card_metadata or {}), "")
        except _Refused as refused:
            raise ExtensionError(messages.ext_card_metadata(refused.found)) from None
        self.card_metadata: dict[str, Any] = tree
        self.declared: dict[str, _Declared] = {}
        self.functions: dict[str, _Declared] = {}

    def __repr__(self) -> str:
        return f"Extension({self.name!r}, version={self.version!r})"

    def step(
        self,
        signature: str,
        *,
        summary: str,
        example: str = "",
        pure: bool = True,
        direct: bool = False,
        absorbs: tuple[str, ...] = (),
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Declare a step; decorates the Python function that runs it.

        The function is called as `run(input, **arguments)`, plus `context=` when it takes
        a `context` parameter. `absorbs=("limit",)` lets a planner push a following `take(k)`
        into the step: `context.limit` is then `k` (else None), and the step may return only
        its first `k` elements, which must be the first `k` it would return without the limit.
        `absorbs=("lazy-cards",)` (with `limit`) lets a planner hand the step the vault's
        `cards` as a sequence that builds each card when first read: a step that reads
        only some cards (an index that hands out its best `k`) then builds only those.
        """

        def declare(run: Callable[..., Any]) -> Callable[..., Any]:
            self.add_step(
                signature,
                run,
                summary=summary,
                example=example,
                pure=pure,
                direct=direct,
                absorbs=absorbs,
            )
            return run

        return declare

    def function(
        self, signature: str, *, summary: str, example: str = ""
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Declare a function, called as `name(arguments)` where the extension is imported."""

        def declare(run: Callable[..., Any]) -> Callable[..., Any]:
            self.add_function(signature, run, summary=summary, example=example)
            return run

        return declare

    def add_step(
        self,
        signature: str,
        run: Callable[..., Any],
        *,
        summary: str,
        example: str = "",
        pure: bool = True,
        direct: bool = False,
        absorbs: tuple[str, ...] = (),
    ) -> None:
        parsed = self._parse(signature, step=True)
        if parsed.name in self.declared:
            raise self._error(parsed.name, messages.ext_step_twice(parsed.name))
        for hint in absorbs:
            if hint not in HINTS:
                raise self._error(parsed.name, messages.ext_unknown_hint(hint, sorted(HINTS)))
        if "limit" in absorbs and parsed.output.name not in ("Ranking", "List", "Seq"):
            raise self._error(parsed.name, messages.ext_limit_output(parsed.output))
        for hint in ("relevant", "count"):
            if hint in absorbs and parsed.output.name != "Ranking":
                raise self._error(parsed.name, messages.ext_ranking_output(hint, parsed.output))
        wants = self._check_callable(parsed, run, step=True)
        self.declared[parsed.name] = _Declared(
            "step", parsed, run, summary, example, pure, direct, tuple(absorbs), wants
        )

    def add_function(
        self, signature: str, run: Callable[..., Any], *, summary: str, example: str = ""
    ) -> None:
        parsed = self._parse(signature, step=False)
        if parsed.name in self.functions:
            raise self._error(parsed.name, messages.ext_step_twice(parsed.name))
        for param, kind in zip(parsed.params, parsed.types, strict=True):
            if isinstance(kind, LambdaType):
                raise self._error(parsed.name, messages.ext_function_lambda(param.name))
        wants = self._check_callable(parsed, run, step=False)
        self.functions[parsed.name] = _Declared(
            "function", parsed, run, summary, example, True, False, (), wants
        )

    def _error(self, name: str, problem: str) -> ExtensionError:
        return ExtensionError(messages.ext_declaration(self.name, name, problem))

    def _parse(self, signature: str, *, step: bool) -> Signature:
        try:
            return parse_signature(signature, step=step)
        except _SignatureError as error:
            found = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", signature)
            name = found.group(1) if found else signature
            raise self._error(
                name, messages.ext_signature_unparsable(signature, error.column, error.problem)
            ) from None

    def _check_callable(self, parsed: Signature, run: Callable[..., Any], *, step: bool) -> bool:
        """Whether `run` takes a `context`; ExtensionError when it cannot be called as declared."""
        label = getattr(run, "__qualname__", repr(run))
        if not callable(run):
            raise self._error(
                parsed.name, messages.ext_python_mismatch(label, "it is not callable")
            )
        names = [p.name for p in parsed.params]
        code = getattr(run, "__code__", None)
        if code is not None and not hasattr(run, "__self__") and not hasattr(run, "__wrapped__"):
            problem, wants = _plain_function_fits(run, code, names, step)
        else:
            problem, wants = _callable_fits(run, names, step)
        if problem:
            raise self._error(parsed.name, messages.ext_python_mismatch(label, problem))
        return wants

    def register(self, registry: Registry | None = None, *, package: str | None = None) -> None:
        """Add this extension to a registry (the process-wide one by default)."""
        register(self, registry, package=package)


def register(
    extension: Extension, registry: Registry | None = None, *, package: str | None = None
) -> None:
    """Add a declared extension to a registry; ExtensionError if a name is taken."""
    from hql.registry import REGISTRY
    from hql.registry import Extension as Registered

    target = registry if registry is not None else REGISTRY
    existing = target.extensions.get(extension.name)
    if existing is not None:
        owner = (
            f"the package `{existing.package}`"
            if existing.package
            else messages.ext_builtin_origin()
        )
        raise ExtensionError(messages.ext_already_registered(extension.name, owner))
    for name in extension.functions:
        if name in target.functions:
            raise ExtensionError(
                messages.ext_declaration(extension.name, name, messages.ext_function_taken(name))
            )
    registered = Registered(
        name=extension.name,
        version=extension.version,
        summary=extension.summary,
        card_metadata=dict(extension.card_metadata),
        package=package,
    )
    for declared in extension.declared.values():
        registered.steps[declared.signature.name] = _step_spec(extension.name, declared)
    for declared in extension.functions.values():
        registered.functions[declared.signature.name] = _function_spec(extension.name, declared)
    target.extensions[extension.name] = registered


def _step_spec(extension: str, declared: _Declared) -> StepSpec:
    signature = declared.signature
    name = signature.name

    def check(call: StepTyping) -> Type:
        shape = _match_input(signature, call.input)
        if shape is None:
            raise call.error(
                messages.ext_input_mismatch(name, signature.input_text(), call.input),
                call.input_span,
            )
        matcher = shape.matcher
        pairs = list(zip(signature.params, signature.types, strict=True))
        for param, kind in pairs:
            if isinstance(kind, LambdaType) or not call.has(param.name):
                continue
            found = call.value(param.name)
            if not matcher.match(kind, found):
                raise call.error(
                    messages.argument_type(name, param.name, matcher.shown(kind), found),
                    call.arg_span(param.name),
                )
        for param, kind in pairs:
            if not isinstance(kind, LambdaType) or not call.has(param.name):
                continue
            params = [matcher.substitute(p) for p in kind.params]
            result = call.lambda_result(param.name, params)
            if not matcher.match(kind.result, result):
                raise call.error(
                    messages.ext_lambda_result(
                        name, param.name, matcher.shown(kind.result), result
                    ),
                    call.arg_span(param.name),
                )
        output = matcher.substitute(signature.output)
        return ty.option(output) if shape.optional else output

    assert signature.input is not None
    declared_input = signature.input
    # By input type (a plan runs many times): its shape, and whether the input is a
    # collection of cards the function can take as it is.
    shapes: dict[Type, tuple[_InputShape, bool]] = {}

    def prepare(input_type: Type) -> tuple[_InputShape, bool]:
        shape = _match_input(signature, input_type)
        assert shape is not None, "the checker accepted this input"
        element = shape.matcher.substitute(declared_input.arg) if declared_input.args else None
        plain = (
            element is not None
            and (element.name in ty.CARD_FAMILY or element == ty.DOC)
            and not (shape.unwrap_hits or shape.drops_absent)
        )
        if len(shapes) < 256:
            shapes[input_type] = (shape, plain)
        return shape, plain

    def run(call: StepCall) -> Any:
        shape, plain = shapes.get(call.input_type) or prepare(call.input_type)
        value = call.input
        if shape.optional and value is ABSENT:
            return ABSENT
        given: Any
        if plain and isinstance(value, ListValue | SetValue):
            given = value.items  # cards need no conversion (and `cards` stays the vault's own)
        elif declared_input.name in ty.COLLECTIONS:
            keep_absent = declared_input.arg.name == "Option"
            given = [
                to_python(item.card if shape.unwrap_hits and isinstance(item, Hit) else item)
                for item in elements(value)
                if keep_absent or item is not ABSENT
            ]
        else:
            given = to_python(value)
        arguments: dict[str, Any] = {}
        for param, kind in zip(signature.params, signature.types, strict=True):
            supplied = call.args.get(param.name, param.default)
            if isinstance(kind, LambdaType) and supplied is not None:
                arguments[param.name] = _python_lambda(supplied, kind)
            else:
                arguments[param.name] = to_python(supplied)
        expected = ty.strip_option(call.output_type) if shape.optional else call.output_type
        if declared.wants_context:
            arguments["context"] = Context(
                extension,
                name,
                call.vault,
                call.span,
                call.warn,
                call.input_type,
                expected,
                call.limit if "limit" in declared.absorbs else None,
                call.hint("relevant") if "relevant" in declared.absorbs else None,
                bool(call.hint("count_only")) and "count" in declared.absorbs,
            )
        return _invoke(
            "step", extension, name, declared.run, [given], arguments, expected, call.span
        )

    return StepSpec(
        name,
        extension,
        signature.params,
        signature.text,
        declared.summary,
        declared.example,
        check,
        run,
        pure=declared.pure,
        direct=declared.direct,
        absorbs=declared.absorbs,
    )


def _python_lambda(closure: Callable[..., Any], kind: LambdaType) -> Callable[..., Any]:
    def call(*values: Any) -> Any:
        converted = []
        for value, declared in zip(values, kind.params, strict=False):
            if _variables_of(declared):
                converted.append(Data(value) if isinstance(value, dict | list) else value)
            else:
                converted.append(_from_python(value, declared))
        return to_python(closure(*converted))

    return call


def _invoke(
    kind: str,
    extension: str,
    name: str,
    run: Callable[..., Any],
    positional: list[Any],
    arguments: dict[str, Any],
    expected: Type,
    span: Span,
) -> Any:
    try:
        return _from_python(run(*positional, **arguments), expected)
    except HqlError:
        raise
    except _Refused as refused:
        found = messages.ext_not_a(refused.expected, refused.found)
        message = messages.ext_wrong_return(kind, name, extension, refused.where, found)
        raise HqlError(evaluation(message, span)) from None
    except (Exception, SystemExit, KeyboardInterrupt) as error:
        # the extension's defect, reported as the extension's: an exit or an interrupt raised
        # by its code must not end the command (or the server) with no word
        raise HqlError(
            evaluation(messages.ext_raised(kind, name, extension, error), span)
        ) from None


def _function_spec(extension: str, declared: _Declared) -> FunctionSpec:
    signature = declared.signature
    name = signature.name

    def bind(args: Any) -> dict[str, int]:
        """Parameter name -> index into the call's arguments."""
        bound: dict[str, int] = {}
        positional = 0
        for index, argument in enumerate(args):
            if argument.name is None:
                if positional >= len(signature.params):
                    raise HqlError(
                        type_error(
                            messages.too_many_arguments(name, len(signature.params)), argument.span
                        )
                    )
                bound[signature.params[positional].name] = index
                positional += 1
                continue
            if all(p.name != argument.name for p in signature.params):
                suggestion = closest(argument.name, [p.name for p in signature.params])
                raise HqlError(
                    type_error(
                        messages.no_such_argument(name, argument.name, suggestion), argument.span
                    )
                )
            if argument.name in bound:
                raise HqlError(
                    type_error(messages.argument_twice(name, argument.name), argument.span)
                )
            bound[argument.name] = index
        return bound

    def check(checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Any) -> Type:
        if types:
            raise HqlError(type_error(messages.ext_no_type_arguments(name), expr.span))
        bound = bind(args)
        for param in signature.params:
            if param.required and param.name not in bound:
                raise HqlError(type_error(messages.missing_argument(name, param.name), expr.span))
        matcher = _Matcher(signature)
        for param, kind in zip(signature.params, signature.types, strict=True):
            if param.name not in bound:
                continue
            argument = args[bound[param.name]]
            found = checker.expression(argument.value)
            assert isinstance(kind, Type)
            if not matcher.match(kind, found):
                raise HqlError(
                    type_error(
                        messages.argument_type(name, param.name, matcher.shown(kind), found),
                        argument.span,
                    )
                )
        return matcher.substitute(signature.output)

    def run(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Any:
        bound = bind(expr.args)  # type: ignore[attr-defined]
        arguments = {
            param.name: to_python(
                values[bound[param.name]] if param.name in bound else param.default
            )
            for param in signature.params
        }
        expected = interpreter.plan.types[expr]
        if declared.wants_context:
            arguments["context"] = Context(
                extension,
                name,
                interpreter.vault,
                expr.span,
                lambda message: interpreter.warn(message, expr.span),
                None,
                expected,
            )
        return _invoke(
            "function", extension, name, declared.run, [], arguments, expected, expr.span
        )

    return FunctionSpec(
        name,
        signature.text,
        declared.summary,
        declared.example,
        check,
        run,
        extension=extension,
        params=signature.params,
    )


# --- rankings ---------------------------------------------------------------------------


def retrieval(
    query: str,
    model: str,
    *,
    metric: str,
    revision: str = "",
    index: str = "",
    approximate: bool = False,
    score_bound: float | None = None,
    **extra: Any,
) -> Retrieval:
    """How a ranking was made, shared by all its hits; `hit.retrieval` and `explain` show it.

    `metric` decides what `relevant` does without `min`: "cosine" (scores near [0, 1]; the
    median-margin rule) or "bm25" (with `score_bound`, the most a card can score for this
    query: the coverage rule). Any other metric works with `relevant(min: x)`, `fuse`,
    `take` and `explain`. `extra` keys are kept in the retrieval record as data.
    """
    details = dict(extra)
    if score_bound is not None:
        details["score_bound"] = float(score_bound)
    return Retrieval(query, index, model, revision, metric, approximate, _data_tree(details, ""))


def ranking(
    made_by: Retrieval,
    scored: Iterable[tuple[Card, float] | tuple[Card, float, str | Mapping[str, Any] | None]],
    *,
    sort: bool = True,
) -> Ranking:
    """A ranking of `(card, score)` or `(card, score, why)` triples, every hit sharing `made_by`.

    Sorted by score, best first (ties by card name) unless `sort=False`; a card appears once
    (its first, best, place). `why` is text shown by `explain`, or a map of details.
    """
    rows: list[tuple[Card, float, dict[str, Any] | None]] = []
    seen: set[Card] = set()
    for entry in scored:
        card, score = entry[0], entry[1]
        why = entry[2] if len(entry) > 2 else None
        if not isinstance(card, Card):
            raise TypeError(f"a ranking holds cards, not {type(card).__name__}")
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            raise TypeError(f"a score is a finite number, not {score!r}")
        detail = {"why": why} if isinstance(why, str) else (dict(why) if why is not None else None)
        rows.append((card, float(score), detail))
    if sort:
        rows.sort(key=lambda row: (-row[1], row[0].name))
    hits = []
    for card, score, detail in rows:
        if card in seen:
            continue
        seen.add(card)
        hits.append(Hit(card, score, made_by, detail))
    return Ranking(tuple(hits), made_by)


# --- installed packages -------------------------------------------------------------------

_loading = threading.RLock()


def _installed_paths() -> list[str]:
    """sys.path without the current directory, which `python -m` puts first: a folder HQL
    runs in (a vault, say) can never provide an extension."""
    here = os.path.realpath(os.getcwd())
    return [entry for entry in sys.path if entry and os.path.realpath(entry) != here]


def _may_have_extensions(paths: list[str]) -> bool:
    """Whether any distribution on `paths` declares an `hql.extensions` entry point.

    Reading `entry_points.txt` files directly costs a millisecond or two; importing
    importlib.metadata costs far more, so it is imported only when this says yes."""
    marker = f"[{GROUP}]"
    for entry in paths:
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                # a FIFO in its place must not hang the command: only a regular file is read
                fd = os.open(
                    os.path.join(entry, name, "entry_points.txt"), os.O_RDONLY | os.O_NONBLOCK
                )
            except OSError:
                continue
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    continue
                with os.fdopen(fd, "rb", closefd=False) as handle:
                    # bytes: a file that is not UTF-8 (an unrelated package's) is no reason to fail
                    if marker.encode() in handle.read():
                        return True
            except OSError:
                continue
            finally:
                os.close(fd)
    return False


def _regular_or_absent(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _entry_points(paths: list[str], failures: dict[str, str]) -> list[Any]:
    if not _may_have_extensions(paths):
        return []
    from importlib.metadata import distributions

    found: dict[str, Any] = {}
    seen: set[str] = set()
    for dist in distributions(path=paths):
        where = getattr(dist, "_path", None)
        try:
            if where is not None and not _regular_or_absent(
                os.path.join(where, "entry_points.txt")
            ):
                raise OSError(messages.ext_metadata_not_a_file("entry_points.txt"))
            name = dist.metadata["Name"] or ""
            if name in seen:  # an earlier path entry wins, as it does for imports
                continue
            seen.add(name)
            points = [point for point in dist.entry_points if point.group == GROUP]
        except Exception as error:  # noqa: BLE001  (metadata HQL did not write, possibly broken)
            # An unreadable distribution (not UTF-8, malformed entry points, a FIFO) is
            # skipped: it is most often an unrelated package, and every vault opens without it.
            label = os.path.basename(str(where)) if where is not None else "?"
            failures[label] = messages.ext_metadata_unreadable(str(where or "?"), error)
            continue
        for point in points:
            found.setdefault(point.name, point)
    return [found[name] for name in sorted(found)]


def load_installed(registry: Registry) -> None:
    """Register every installed package's extension, once; a package that fails to load is
    recorded in `registry.load_failures` under the extension name, never raised."""
    with _loading:
        if registry.installed_loaded:
            return
        registry.installed_loaded = True
        from hql.registry import REGISTRY

        if registry is REGISTRY:
            import hql.steps  # noqa: F401  (the shipped extensions come first)
        paths = _installed_paths()
        points = _entry_points(paths, registry.load_failures)
        if not points:
            return
        saved = list(sys.path)
        sys.path[:] = paths  # the package's modules come from where it is installed, only
        try:
            for point in points:
                _load_one(registry, point)
        finally:
            sys.path[:] = saved + [entry for entry in sys.path if entry not in saved]


def _load_one(registry: Registry, point: Any) -> None:
    dist = getattr(point, "dist", None)
    package = f"{dist.name} {dist.version}" if dist is not None else point.value
    try:
        declared = _bounded_load(point)
        if not isinstance(declared, Extension):
            raise ExtensionError(messages.ext_not_declared(declared))
        if declared.name != point.name:
            raise ExtensionError(messages.ext_entry_name(point.name, declared.name))
        register(declared, registry, package=package)
    except (Exception, SystemExit, KeyboardInterrupt) as error:
        # a broken package must not break HQL (nor exit it, with its own code): say which and why
        text = str(error)
        problem = (
            text
            if isinstance(error, ExtensionError)
            else (f"{type(error).__name__}: {text}" if text else type(error).__name__)
        )
        registry.load_failures[point.name] = messages.ext_package_failed(
            package, f"{point.name} = {point.value}", problem
        )


IMPORT_SECONDS = 10.0  # how long one package may take to import before it is given up


def _bounded_load(point: Any) -> Any:
    """The entry point's object, importing its module under a time guard: a package that
    loops on import is reported as failed instead of hanging every command."""
    from hql.deadline import Overrun, within

    def load() -> Any:
        declared = point.load()
        if not isinstance(declared, Extension) and callable(declared):
            declared = declared()
        return declared

    try:
        return within(IMPORT_SECONDS, load)
    except Overrun as overrun:
        if overrun.closing:
            raise
        raise ExtensionError(messages.ext_import_too_long(IMPORT_SECONDS)) from None


def load_errors(registry: Registry | None = None) -> dict[str, str]:
    """Why each installed extension package that failed to load did not (by extension name)."""
    from hql.registry import installed

    target = registry.load_installed() if registry is not None else installed()
    return dict(target.load_failures)
