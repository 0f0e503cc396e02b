"""Steps of `core` on text: `lower upper trim length starts_with ends_with split replace matches`.

Each is a step (`c.title | lower`) and a direct call (`lower(c.title)`); `contains`
on a String lives with the other `contains` in core.py. `matches` uses RE2, loaded
only when a program uses it: linear time whatever the pattern.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import types as ty
from hql.checker import StepTyping
from hql.diagnostics import HqlError, evaluation
from hql.interpreter import StepCall
from hql.registry import REGISTRY, Param, StepSpec
from hql.steps import core  # noqa: F401  (creates the extension these steps join)
from hql.steps.scalars import (
    TEXT,
    argument_reach,
    argument_span,
    input_reach,
    lifted,
    reach,
    result,
)
from hql.syntax import tree as t
from hql.types import Type
from hql.values import ListValue

if TYPE_CHECKING:
    from hql.source import Span

STRING = (ty.STRING,)


def _check_text(returns: Type, params: tuple[str, ...] = ()) -> Callable[[StepTyping], Type]:
    def check(call: StepTyping) -> Type:
        unreached = reach(call.input, STRING) is None
        if call.spec.name == "length" and unreached and ty.element_type(call.input) is not None:
            raise call.error(messages.length_of_collection(), call.input_span)
        reaches = [input_reach(call, STRING, "a String")]
        reaches += [argument_reach(call, name, STRING, "String") for name in params]
        return result(returns, *reaches)

    return check


def _split(call: StepCall, text: str, separator: str) -> ListValue:
    # counted before splitting: a split into characters costs far more than its text
    pieces = len(text) if separator == "" else text.count(separator) + 1
    kept = len(text) - (pieces - 1) * len(separator)
    call.interpreter.budget.ahead(1 + pieces, kept)
    parts = list(text) if separator == "" else text.split(separator)
    return ListValue(tuple(parts))


def _replace(call: StepCall, text: str, old: str, new: str) -> str:
    # the result's length is known from the count (an empty `old` matches len + 1 times)
    length = len(text) + text.count(old) * (len(new) - len(old))
    call.interpreter.budget.ahead(1, length)
    return text.replace(old, new)


# --- matches: RE2 ----------------------------------------------------------------

_PATTERNS: dict[str, Any] = {}


def compile_pattern(pattern: str, span: Span, failure: Callable[..., Any]) -> Any:
    """The compiled RE2 pattern; a bad one raises a report (made by `failure`) at `span`."""
    compiled = _PATTERNS.get(pattern)
    if compiled is None:
        import re2  # only programs that match patterns load RE2

        options = re2.Options()
        options.log_errors = False  # the report says what is wrong; RE2 would also print it
        try:
            compiled = re2.compile(pattern, options)
        except re2.error as error:
            reason = error.args[0] if error.args else str(error)
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", errors="replace")
            raise HqlError(failure(messages.bad_pattern(str(reason)), span)) from None
        if len(_PATTERNS) > 256:
            _PATTERNS.clear()
        _PATTERNS[pattern] = compiled
    return compiled


def check_matches(call: StepTyping) -> Type:
    checked = _check_text(ty.BOOL, ("pattern",))(call)
    written = call.args["pattern"].value
    if isinstance(written, t.StringLit):  # a literal pattern is judged before anything runs
        from hql.diagnostics import type_error

        compile_pattern(written.value, written.span, type_error)
    return checked


def _matches(call: StepCall, text: str, pattern: str) -> bool:
    compiled = compile_pattern(pattern, argument_span(call, "pattern"), evaluation)
    return compiled.search(text) is not None


# --- the registry ------------------------------------------------------------------


def _text_step(
    name: str,
    params: tuple[Param, ...],
    returns: Type,
    apply: Callable[..., Any],
    signature: str,
    summary: str,
    example: str,
    check: Callable[[StepTyping], Type] | None = None,
) -> StepSpec:
    names = tuple(param.name for param in params)
    return StepSpec(
        name,
        "core",
        params,
        signature,
        summary,
        example,
        check or _check_text(returns, names),
        lifted(TEXT, "text", apply, names),
        direct=True,
    )


def _text(name: str) -> Param:
    return Param(name, "String")


for spec in (
    _text_step(
        "lower",
        (),
        ty.STRING,
        lambda call, s: s.lower(),
        "String | lower -> String",
        "the text in lower case",
        'c.title | lower == "bearer tokens"',
    ),
    _text_step(
        "upper",
        (),
        ty.STRING,
        lambda call, s: s.upper(),
        "String | upper -> String",
        "the text in upper case",
        "c.name | upper",
    ),
    _text_step(
        "trim",
        (),
        ty.STRING,
        lambda call, s: s.strip(),
        "String | trim -> String",
        "the text without white space at either end",
        '"  owl " | trim',
    ),
    _text_step(
        "length",
        (),
        ty.INT,
        lambda call, s: len(s),
        "String | length -> Int",
        "how many characters (code points) the text has",
        "c.title | length",
    ),
    _text_step(
        "starts_with",
        (_text("prefix"),),
        ty.BOOL,
        lambda call, s, prefix: s.startswith(prefix),
        "String | starts_with(prefix: String) -> Bool",
        "whether the text begins with the prefix",
        'c.name | starts_with("oauth")',
    ),
    _text_step(
        "ends_with",
        (_text("suffix"),),
        ty.BOOL,
        lambda call, s, suffix: s.endswith(suffix),
        "String | ends_with(suffix: String) -> Bool",
        "whether the text ends with the suffix",
        'c.path | ends_with(".md")',
    ),
    _text_step(
        "split",
        (_text("sep"),),
        ty.list_of(ty.STRING),
        _split,
        "String | split(sep: String) -> List<String>",
        "the pieces between separators (an empty separator gives the characters)",
        '"a,b,c" | split(",")',
    ),
    _text_step(
        "replace",
        (_text("old"), _text("new")),
        ty.STRING,
        _replace,
        "String | replace(old: String, new: String) -> String",
        "the text with every occurrence of `old` replaced by `new`",
        'c.title | replace("-", " ")',
    ),
    _text_step(
        "matches",
        (_text("pattern"),),
        ty.BOOL,
        _matches,
        "String | matches(pattern: String) -> Bool",
        "whether the RE2 pattern occurs in the text (anchor it with ^ and $ to match the whole)",
        'c.title | matches("(?i)^oauth")',
        check_matches,
    ),
):
    REGISTRY.add(spec)
