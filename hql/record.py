"""Records: small classes with fields, like dataclasses, without importing `dataclasses`.

`dataclasses` brings `inspect`, `ast` and `dis` with it, about 8 ms at every
start of `hql`, for the dozen record types a one-line program touches. A
record gets slots, an `__init__` over its fields (the bases' first), a
`__repr__`, and, unless `eq=False`, value equality (and a hash when frozen).

    @record
    class Span:
        start: int
        end: int
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class _Field:
    __slots__ = ("default", "default_factory")

    def __init__(self, default: Any, default_factory: Callable[[], Any] | Any) -> None:
        self.default = default
        self.default_factory = default_factory


def field(*, default: Any = MISSING, default_factory: Callable[[], Any] | Any = MISSING) -> Any:
    """A field's default, or a factory that makes a fresh one for every record."""
    return _Field(default, default_factory)


class FrozenRecordError(AttributeError):
    pass


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenRecordError(f"a {type(self).__name__} is immutable; cannot set `{name}`")


def _frozen_delattr(self: object, name: str) -> None:
    raise FrozenRecordError(f"a {type(self).__name__} is immutable; cannot delete `{name}`")


def _repr(self: Any) -> str:
    values = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
    return f"{type(self).__name__}({values})"


def _build(cls: type[T], frozen: bool, eq: bool) -> type[T]:
    inherited: tuple[str, ...] = getattr(cls, "_fields", ())
    annotations = cls.__dict__.get("__annotations__", {})
    own = tuple(
        name
        for name, kind in annotations.items()
        if name not in inherited and not name.startswith("_") and "ClassVar" not in str(kind)
    )
    fields = inherited + own
    defaults: dict[str, Any] = dict(getattr(cls, "_defaults", {}))
    factories: dict[str, Any] = dict(getattr(cls, "_factories", {}))
    namespace = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__")}
    for name in own:
        if name not in namespace:
            continue
        value = namespace.pop(name)
        if isinstance(value, _Field):
            if value.default_factory is not MISSING:
                factories[name] = value.default_factory
            elif value.default is not MISSING:
                defaults[name] = value.default
        else:
            defaults[name] = value
    params = []
    body = []
    for at, name in enumerate(fields):
        # `_set{at}`: the field's slot setter (bound below, once the class exists).
        if name in factories:
            params.append(f"{name}=_MISSING")
            body.append(
                f"    _set{at}(self, _factories[{name!r}]() if {name} is _MISSING else {name})"
            )
        elif name in defaults:
            params.append(f"{name}=_defaults[{name!r}]")
            body.append(f"    _set{at}(self, {name})")
        else:
            params.append(name)
            body.append(f"    _set{at}(self, {name})")
    scope: dict[str, Any] = {
        "_defaults": defaults,
        "_factories": factories,
        "_MISSING": MISSING,
    }
    source = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
    own_values = "(" + "".join(f"self.{name}, " for name in fields) + ")"
    other_values = own_values.replace("self.", "other.")
    # Equality and hash compare field tuples written out, as dataclasses generate them: they are hot.
    source += (
        "def __eq__(self, other):\n"
        "    if other.__class__ is not self.__class__:\n"
        "        return NotImplemented\n"
        f"    return {own_values} == {other_values}\n"
        f"def __hash__(self):\n    return hash({own_values})\n"
    )
    exec(source, scope)  # noqa: S102 - generated from field names only
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    namespace.update(
        __slots__=own, _fields=fields, _defaults=defaults, _factories=factories, __init__=init
    )
    namespace.setdefault("__repr__", _repr)
    if eq:
        namespace.setdefault("__eq__", scope["__eq__"])
        namespace["__hash__"] = scope["__hash__"] if frozen else None
    if frozen:
        namespace.setdefault("__setattr__", _frozen_setattr)
        namespace.setdefault("__delattr__", _frozen_delattr)
    metaclass: Any = type(cls)
    built: type[T] = metaclass(cls.__name__, cls.__bases__, namespace)
    for at, name in enumerate(fields):
        scope[f"_set{at}"] = slot_setter(built, name)
    return built


def slot_setter(cls: type, name: str) -> Callable[[Any, Any], None]:
    """What sets field `name` of a `cls` object, past a frozen class's `__setattr__`: its
    slot's own setter (what `object.__setattr__` finds and calls, without the search)."""
    for klass in cls.__mro__:
        found = klass.__dict__.get(name)
        if found is not None:
            if type(found) is _SLOT:
                setter: Callable[[Any, Any], None] = found.__set__
                return setter
            break
    return lambda obj, value: object.__setattr__(obj, name, value)


class _Slotted:
    __slots__ = ("field",)


_SLOT = type(_Slotted.__dict__["field"])  # the type of a slot's descriptor


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(*, frozen: bool = True, eq: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[T] | None = None, /, *, frozen: bool = True, eq: bool = True) -> Any:
    """Make `cls` a record: `@record`, or `@record(frozen=False)` for one that may change."""
    if cls is not None:
        return _build(cls, frozen, eq)
    return lambda inner: _build(inner, frozen, eq)


def replace(obj: T, **changes: Any) -> T:
    """A copy of a record with some fields changed."""
    values = {name: getattr(obj, name) for name in obj._fields}  # type: ignore[attr-defined]
    values.update(changes)
    return type(obj)(**values)


def fields(obj: Any) -> tuple[str, ...]:
    return obj._fields
