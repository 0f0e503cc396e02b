"""The registry of extensions and their steps.

A step's signature is data (`StepSpec`) declared next to its implementation;
this one registry feeds the checker, `hql builtins`, suggestions, REPL
completion and the generated step reference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from hql.record import field, record

if TYPE_CHECKING:
    from hql.checker import StepTyping
    from hql.interpreter import StepCall
    from hql.types import Type


class _Required:
    def __repr__(self) -> str:
        return "required"


REQUIRED: Any = _Required()


@record
class Param:
    name: str
    type: str  # as shown in signatures: "Int", "T => Bool"
    default: Any = REQUIRED
    positional: bool = True
    named: bool = True
    kind: str = "value"  # "value", "lambda" or "type"

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@record
class StepSpec:
    name: str
    extension: str
    params: tuple[Param, ...]
    signature: str
    summary: str
    example: str
    check: Callable[[StepTyping], Type]
    run: Callable[[StepCall], Any]
    pure: bool = True
    direct: bool = False  # may also be called as `name(input, …)`
    variadic: bool = False  # takes any number of positional values (`fuse`)
    # What the planner may push into this step (hql/planner.py), e.g. ("limit",): the step
    # then reads `StepCall.limit` and may return only its first `limit` elements.
    absorbs: tuple[str, ...] = ()

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


def core_step(
    name: str,
    params: tuple[Param, ...],
    signature: str,
    summary: str,
    example: str,
    check: Callable[[StepTyping], Type],
    run: Callable[[StepCall], Any],
) -> StepSpec:
    """A core step that may also be called directly, `name(input, …)`, as every everyday
    library step (strings, collections, conversions) can."""
    return StepSpec(name, "core", params, signature, summary, example, check, run, direct=True)


@record
class FunctionSpec:
    """A plain function such as `compare(a, b)` or a constructor such as `Map(keys, values)`."""

    name: str
    signature: str
    summary: str
    example: str
    check: Callable[..., Type]
    run: Callable[..., Any]
    # The extension that provides it; "" for the functions every program may call.
    extension: str = ""
    params: tuple[Param, ...] = ()  # declared parameters, when known (completion shows them)
    lazy: bool = False  # `run` gets the argument expressions and evaluates only those it needs


@record(frozen=False)
class Extension:
    name: str
    version: str
    summary: str
    always: bool = False  # core: available without import
    prelude: bool = False  # imported unless the vault declines the prelude
    steps: dict[str, StepSpec] = field(default_factory=dict)
    # Card metadata the extension contributes under its own name (reference 9.3).
    card_metadata: dict[str, Any] = field(default_factory=dict)
    # Functions callable only where the extension is imported (declared through hql.extend).
    functions: dict[str, FunctionSpec] = field(default_factory=dict)
    package: str | None = None  # the installed distribution that provides it, "name version"


class Registry:
    def __init__(self) -> None:
        self.extensions: dict[str, Extension] = {}
        self.functions: dict[str, FunctionSpec] = {}
        # Installed extensions (entry points in the `hql.extensions` group) load on first need.
        self.installed_loaded = False
        self.load_failures: dict[str, str] = {}  # extension name -> why its package did not load

    def extension(self, name: str, **kwargs: Any) -> Extension:
        if name not in self.extensions:
            self.extensions[name] = Extension(name=name, **kwargs)
        return self.extensions[name]

    def add(self, spec: StepSpec) -> StepSpec:
        self.extensions[spec.extension].steps[spec.name] = spec
        return spec

    def add_function(self, spec: FunctionSpec) -> FunctionSpec:
        self.functions[spec.name] = spec
        return spec

    def steps(self) -> Iterator[StepSpec]:
        for extension in self.extensions.values():
            yield from extension.steps.values()

    def providers(self, step: str) -> list[Extension]:
        self.load_installed()
        return [ext for ext in self.extensions.values() if step in ext.steps]

    def default_imports(self, prelude: bool = True) -> list[str]:
        return [
            ext.name for ext in self.extensions.values() if ext.always or (prelude and ext.prelude)
        ]

    def step_names(self) -> set[str]:
        self.load_installed()
        return {spec.name for spec in self.steps()}

    # --- installed extensions (hql.extend) ---------------------------------------

    def load_installed(self) -> Registry:
        """Add every installed extension package, once; programs using only the shipped
        extensions never come here, so they import nothing more."""
        if not self.installed_loaded:
            from hql.extend import load_installed

            load_installed(self)
        return self

    def function_providers(self, name: str) -> list[Extension]:
        self.load_installed()
        return [ext for ext in self.extensions.values() if name in ext.functions]

    def remove(self, name: str) -> None:
        """Forget an extension (and its steps and functions)."""
        self.extensions.pop(name, None)


REGISTRY = Registry()


def registry() -> Registry:
    """The registry with every shipped extension loaded."""
    if not _SHIPPED:
        import hql.steps  # noqa: F401  (registers the shipped steps)

        _SHIPPED.append(True)
    return REGISTRY


_SHIPPED: list[bool] = []  # not empty once hql.steps was imported


def installed() -> Registry:
    """The registry with the shipped extensions and every installed extension package."""
    return registry().load_installed()


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def closest(
    name: str, candidates: Iterator[str] | list[str] | set[str], limit: int = 2
) -> str | None:
    """The nearest candidate within `limit` edits (and no more edits than the name has letters).

    (`x` may suggest `y`, not `max`: a name of one letter is no basis for two edits.)
    """
    scored = sorted((edit_distance(name, c), c) for c in set(candidates) if c != name)
    if scored and scored[0][0] <= min(limit, len(name)):
        return scored[0][1]
    return None
