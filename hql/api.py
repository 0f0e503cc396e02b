"""The Python API: run and check HQL programs from other programs.

    import hql
    vault = hql.Vault.open("vaults/web-auth")
    outcome = hql.run("cards | count", vault=vault)
    outcome.value, outcome.type, outcome.reports, outcome.failed, outcome.text()

A `Session` keeps bindings and imports between programs (the REPL uses one).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import operator
import os
import re
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hql import messages
from hql.budget import OverBudget
from hql.checker import Checker, Plan, Scope
from hql.diagnostics import HqlError, Report, evaluation, render_all
from hql.parameters import ParameterError, convert
from hql.printing import display, dumps, to_json
from hql.record import field, record
from hql.registry import installed, registry
from hql.source import Source, Span
from hql.syntax.parser import parse
from hql.types import Type

if TYPE_CHECKING:
    from hql.interpreter import Interpreter
    from hql.vault import Vault

MODES = {"strict": "strict", "collect": "collect", "all": "collect"}


class HostError(Exception):
    """A failure outside the language: a bad flag, a missing vault. Printed as `hql: <message>`."""


@record(frozen=False)
class Outcome:
    """A program's value, its type, and every report, oldest first."""

    source: Source
    value: Any = None
    type: Type | None = None
    reports: list[Report] = field(default_factory=list)
    evaluated: bool = False

    @property
    def failed(self) -> bool:
        return any(map(_FAILED, self.reports))

    def text(self) -> str:
        """The plain display of the value (the type when the program was only checked)."""
        if self.failed:
            return ""
        if self.evaluated:
            return display(self.value)
        return str(self.type) if self.type is not None else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.source.origin,
            "type": str(self.type) if self.type is not None and not self.failed else None,
            "value": to_json(self.value) if self.evaluated and not self.failed else None,
            "reports": [report.to_json() for report in self.reports],
        }

    def json_text(self) -> str:
        return dumps(self.to_json())

    def render_reports(self) -> str:
        return render_all(self.reports, self.source)


def extension_metadata() -> dict[str, dict[str, Any]]:
    """What each registered extension contributes to every card's metadata, under its own name."""
    return {
        name: ext.card_metadata for name, ext in installed().extensions.items() if ext.card_metadata
    }


@functools.cache
def vault_class() -> type[Vault]:
    """`hql.Vault`: the vault library's Vault, whose cards carry every registered extension's metadata."""
    from hql.vault import Vault as LibraryVault

    contributions = extension_metadata

    class Vault(LibraryVault):
        @classmethod
        def open(
            cls,
            path: str | Path,
            *,
            extension_metadata: Any = None,
            use_cache: bool = True,
        ) -> LibraryVault:
            metadata = contributions() if extension_metadata is None else extension_metadata
            return super().open(path, extension_metadata=metadata, use_cache=use_cache)

    Vault.__module__, Vault.__qualname__ = "hql", "Vault"
    return Vault


def open_vault(path: str | os.PathLike[str], *, use_cache: bool = True) -> Vault:
    """Load a vault with every registered extension's card metadata; HostError if it cannot be opened."""
    from hql.vault import VaultError

    try:
        return vault_class().open(
            Path(path) if not isinstance(path, str) else path, use_cache=use_cache
        )
    except VaultError as error:
        raise HostError(str(error)) from None


def open_listed_vault(path: str | os.PathLike[str]) -> Vault | None:
    """The vault as its catalogue last listed it, opened without walking (`Vault.open_listed`:
    for a writer that recorded its own edits); None: open it with `open_vault`."""
    from hql.vault import VaultError

    try:
        return vault_class().open_listed(
            Path(path) if not isinstance(path, str) else path,
            extension_metadata=extension_metadata(),
        )
    except VaultError as error:
        raise HostError(str(error)) from None


def resolve_mode(flag: str | None, vault: Vault | None) -> tuple[str, str]:
    """The report mode and where it came from: the flag, the vault's hql.toml, $HQL_REPORT, the default."""
    mode: str | None = flag
    origin = "this query"
    if mode is None and vault is not None:
        mode, origin = vault.config.report_mode, "the vault's hql.toml"
    if mode is None:
        mode, origin = os.environ.get("HQL_REPORT") or None, "$HQL_REPORT"
        if mode is None:
            return "strict", "the default"
    if mode not in MODES:
        raise HostError(messages.unknown_report_mode(mode))
    return MODES[mode], origin


def initial_scope(vault: Vault | None) -> Scope:
    """The scope a session starts from: the default imports and the vault's `imports`."""
    reg = registry()
    known = _known(reg)
    try:
        memo = _INITIAL.get(vault) if vault is not None else _NO_VAULT
    except TypeError:  # a vault that cannot be weakly referenced
        memo = None
    if memo and memo[0] == known:
        return memo[1].copy()
    scope = _initial_scope(reg, vault)
    entry = (_known(reg), scope.copy())  # after loading any installed extension
    if vault is None:
        _NO_VAULT[:] = entry
    else:
        with contextlib.suppress(TypeError):
            _INITIAL[vault] = entry
    return scope


def _known(reg: Any) -> tuple[int, int, int]:
    """What the registry knows, counted: an extension registered later may change a scope
    or make a refused program valid."""
    steps = sum(map(len, map(_STEPS_OF, reg.extensions.values())))
    return (len(reg.extensions), steps, len(reg.functions))


_STEPS_OF = operator.attrgetter("steps")
_FAILED = operator.attrgetter("failed")


# Each loaded vault's initial scope (its configuration is a snapshot), with what the
# registry knew when it was worked out; a session copies it.
_INITIAL: weakref.WeakKeyDictionary[Any, tuple[tuple[int, int, int], Scope]] = (
    weakref.WeakKeyDictionary()
)
_NO_VAULT: list[Any] = []


def _initial_scope(reg: Any, vault: Vault | None) -> Scope:
    prelude = vault.config.prelude if vault is not None else True
    imports = reg.default_imports(prelude)
    if vault is not None:
        for name in vault.config.imports:
            if name not in reg.extensions and name not in reg.load_installed().extensions:
                failure = reg.load_failures.get(name)
                if failure:
                    raise HostError(messages.ext_failed_to_load(name, failure))
                raise HostError(messages.config_imports_unknown(name))
            if name not in imports:
                imports.append(name)
    return Scope(imports=imports)


@record
class _Checked:
    """What checking a program gave: reports, the plan (None after a syntax error), the scope."""

    reports: tuple[Report, ...]
    plan: Plan | None
    scope: Scope
    vault: Any  # a weak reference to the vault the plan was checked against, or None
    changed: bool = False  # whether the program changed the scope it was checked in


class PlanCache:
    """Checked plans, keyed by (program text, parameter types, vault and its revision,
    report mode, session scope), so a program run again, with new parameter values or
    not, is parsed and checked once. Bounded (least recently used go first); thread-safe."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._entries: dict[tuple[Any, ...], _Checked] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], vault: Vault | None) -> _Checked | None:
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is None or (entry.vault() if entry.vault else None) is not vault:
                return None  # a vault at a reused address is another vault
            self._entries[key] = entry  # most recently used last
            return entry

    def put(self, key: tuple[Any, ...], entry: _Checked) -> None:
        with self._lock:
            self._entries[key] = entry
            while self._entries and len(self._entries) > self.size:
                self._entries.pop(next(iter(self._entries)))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


PLANS = PlanCache()
_SCOPES = itertools.count(1)


def parameters(params: Mapping[str, Any] | None) -> tuple[dict[str, Type], dict[str, Any]]:
    """The parameters' types and HQL values; HostError for a value HQL cannot hold."""
    try:
        return convert(params)
    except ParameterError as error:
        raise HostError(str(error)) from None


class Session:
    """Bindings, imports and declarations that persist from one program to the next."""

    def __init__(
        self,
        vault: Vault | str | os.PathLike[str] | None = None,
        mode: str | None = None,
        *,
        optimize: bool = True,
        cache: PlanCache | None = None,
        seconds: float | None = None,
    ) -> None:
        """`vault`: an opened Vault, or the path of a vault folder to open (as `hql.run` takes);
        `seconds`: stop each program (parsing, checking and running it) after that long."""
        self.vault = _vault_of(vault)
        self.seconds = seconds
        self.optimize = optimize  # run the planner's rewrites (off only to compare answers)
        self.mode, self.mode_origin = resolve_mode(mode, self.vault)
        # Worked out when first needed; at once when the vault's imports could be refused.
        self._scope: Scope | None = None
        if self.vault is not None and self.vault.config.imports:
            self._scope = initial_scope(self.vault)
        self.values: dict[str, Any] = {}
        self.cache = PLANS if cache is None else cache  # PlanCache(0): check every program afresh
        self._scope_key: tuple[Any, ...] = ("initial",)  # what the cache knows this scope by

    @property
    def scope(self) -> Scope:
        """What the checker knows from the programs run so far (never changed in place)."""
        if self._scope is None:
            self._scope = initial_scope(self.vault)
        return self._scope

    @scope.setter
    def scope(self, scope: Scope) -> None:
        self._scope = scope

    def reset(self) -> None:
        self.scope = initial_scope(self.vault)
        self.values = {}
        self._scope_key = ("initial",)

    def _adopt(self, checked: _Checked) -> None:
        """Keep the scope a program left; a changed scope is a new one to the plan cache."""
        if checked.changed:
            self._scope_key = ("session", next(_SCOPES))
            self.scope = checked.scope

    def check(
        self,
        text: str,
        origin: str = "<expression>",
        *,
        params: Mapping[str, Type] | None = None,
    ) -> tuple[Outcome, Plan | None, Scope]:
        """Parse and check (or find the plan checked before); `params` are `$name` types."""
        outcome, checked = self._checked(text, origin, params)
        if checked is None:
            return outcome, None, self.scope.copy()
        return outcome, checked.plan, checked.scope.copy()

    def _checked(
        self, text: str, origin: str, params: Mapping[str, Type] | None
    ) -> tuple[Outcome, _Checked | None]:
        """`check`: the outcome so far and what checking gave (None: refused unchecked)."""
        text = _encodable(text)
        source = Source(text, origin)
        outcome = Outcome(source)
        types = dict(params or {})
        key = self._cache_key(text, types)
        checked = self.cache.get(key, self.vault)
        if checked is None:
            try:
                checked = self._check(text, source, types)
            except MemoryError:  # a program too large for the memory this process may use
                checked = None
                refusal = messages.out_of_memory()
            else:
                refusal = messages.too_deep_to_check()
            if checked is None:  # too deep or too large to check: reported, never cached
                outcome.reports.append(evaluation(refusal, Span(0, len(source.data))))
                return outcome, None
            self.cache.put(key, checked)
        outcome.reports.extend(checked.reports)
        if checked.plan is not None and not outcome.failed:
            outcome.type = checked.plan.result  # a program that failed to check has no type
        return outcome, checked

    def _cache_key(self, text: str, types: dict[str, Type]) -> tuple[Any, ...]:
        vault = self.vault
        revision = None if vault is None else (id(vault), getattr(vault, "revision", None))
        params = tuple(sorted((name, str(found)) for name, found in types.items()))
        known = _known(registry())  # an extension registered later may make a refused program valid
        return (text, params, revision, self.mode, self.optimize, self._scope_key, known)

    def _check(self, text: str, source: Source, types: dict[str, Type]) -> _Checked | None:
        vault = weakref.ref(self.vault) if self.vault is not None else None
        try:
            program = parse(text)
        except HqlError as error:
            return _Checked((error.report,), None, self.scope, vault)
        scope = self.scope.copy()
        checker = Checker(
            has_vault=self.vault is not None, scope=scope, vault=self.vault, params=types
        )
        try:
            plan, reports = checker.check(program, collect=self.mode == "collect")
        except RecursionError:
            return None
        if self.optimize and not any(report.failed for report in reports):
            from hql.planner import optimize

            plan = optimize(plan)
        return _Checked(tuple(reports), plan, scope, vault, scope != self.scope)

    def run(
        self,
        text: str,
        origin: str = "<expression>",
        *,
        evaluate: bool = True,
        params: Mapping[str, Any] | None = None,
    ) -> Outcome:
        """Parse, check (once per program text and parameter types) and evaluate a program.

        `params` binds `$name` in the program: str, int, float, bool, list, dict or
        datetime.date values (HostError for anything else)."""
        if self.seconds is not None:
            return self._within_seconds(self.seconds, text, origin, evaluate, params)
        return self._run(text, origin, evaluate, params)

    def _within_seconds(
        self,
        seconds: float,
        text: str,
        origin: str,
        evaluate: bool,
        params: Mapping[str, Any] | None,
    ) -> Outcome:
        from hql.deadline import Overrun, within

        try:
            outcome: Outcome = within(seconds, lambda: self._run(text, origin, evaluate, params))
        except Overrun:
            outcome = Outcome(Source(_encodable(text), origin))
            span = Span(0, len(outcome.source.data))
            outcome.reports.append(evaluation(messages.time_limit_reached(seconds), span))
        return outcome

    def _run(
        self, text: str, origin: str, evaluate: bool, params: Mapping[str, Any] | None
    ) -> Outcome:
        Interpreter = _interpreter_class()  # noqa: N806
        types, bound = parameters(params)
        outcome, checked = self._checked(text, origin, types)
        plan = checked.plan if checked is not None else None
        if checked is None or plan is None or outcome.failed or not evaluate:
            if checked is not None and plan is not None and not outcome.failed:
                self._adopt(checked)
            return outcome
        values = dict(self.values)
        interpreter = Interpreter(plan, self.vault, values, params=bound, text=outcome.source.data)
        try:
            outcome.value = interpreter.run()
            outcome.evaluated = True
        except HqlError as error:
            interpreter.reports.append(error.report)
        except RecursionError:
            interpreter.reports.append(
                evaluation(messages.too_deep_to_run(), Span(0, len(outcome.source.data)))
            )
        except OverBudget as over:  # counted by a step outside any measured expression
            interpreter.reports.append(
                interpreter.over_budget(over, Span(0, len(outcome.source.data))).report
            )
        except MemoryError:
            interpreter.reports.append(
                evaluation(messages.out_of_memory(), Span(0, len(outcome.source.data)))
            )
        outcome.reports.extend(interpreter.reports)
        if not outcome.failed:
            self._adopt(checked)
            self.values = values
        return outcome


@functools.cache
def _interpreter_class() -> type[Interpreter]:
    from hql.interpreter import Interpreter

    return Interpreter


def _encodable(text: str) -> str:
    """Lone surrogates (undecodable bytes read with `surrogateescape`) become U+FFFD, which
    the lexer then reports as an unexpected character: spans are UTF-8 bytes, and a lone
    surrogate has none."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udfff]", "\ufffd", text)
    return text


def _vault_of(vault: object) -> Vault | None:
    """The vault a program runs against: None, an opened Vault, or a vault folder's path opened now.

    Anything else is a HostError naming what was given (never an AttributeError later)."""
    if vault is None:
        return None
    if isinstance(vault, _library_vault()):  # first: the os.PathLike test is an ABC's
        return vault
    if isinstance(vault, str | bytes | os.PathLike):
        path = os.fspath(vault)
        return open_vault(os.fsdecode(path) if isinstance(path, bytes) else path)
    raise HostError(messages.api_vault_expected(type(vault).__name__))


@functools.cache
def _library_vault() -> type[Vault]:
    # The class itself: hql.vault resolves its `Vault` name lazily, on every lookup.
    from hql.vault.store import Vault as LibraryVault

    return LibraryVault


def run(
    source: str,
    vault: Vault | str | os.PathLike[str] | None = None,
    mode: str | None = None,
    origin: str = "<expression>",
    params: Mapping[str, Any] | None = None,
) -> Outcome:
    """Parse, check and (when checking found no error) evaluate a program.

    `params` binds the program's `$name`s (`hql.run("… $q …", vault=v, params={"q": text})`):
    the text of a question never has to be spliced into the program. A program's checked
    plan is reused for every run with parameters of the same types against the same Vault
    object (pass an opened Vault, not a path, to benefit)."""
    return Session(_vault_of(vault), mode).run(source, origin, params=params)


def check(
    source: str,
    vault: Vault | str | os.PathLike[str] | None = None,
    mode: str | None = None,
    origin: str = "<expression>",
    params: Mapping[str, Any] | None = None,
) -> Outcome:
    """Parse and check a program; `Outcome.type` is its type, nothing is evaluated."""
    return Session(_vault_of(vault), mode).run(source, origin, evaluate=False, params=params)
