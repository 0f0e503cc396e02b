"""What Obsidian Bases' expressions mean, as functions the programs `hql base` writes call.

Bases values are dynamic (a property may hold text, a number, a list or a
link), so a Bases expression becomes HQL over `Data` through five functions:
`base_get(file, "note.author")` reads a file's or a note's property,
`base_call("contains", value, …)` calls a method, `base_fn("link", …)` a
global function, `base_op("==", a, b)` applies an operator, and
`base_true(x)` is a value's truthiness as a `Bool` (what a filter keeps).
Links are the text `[[Name]]` a property holds; two links are equal when
they name the same note (resolved as links are). A row's `file` is its card;
`this` is the note the base is shown for, or the `.base` file itself (a Data
map of its `file` fields). docs/bases.md lists what is supported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import types as ty
from hql.diagnostics import HqlError, type_error
from hql.registry import REGISTRY, FunctionSpec
from hql.syntax import tree as t
from hql.types import Type
from hql.values import ABSENT, Card, Data, Date, ListValue, SetValue

if TYPE_CHECKING:
    from hql.checker import Checker
    from hql.interpreter import Interpreter

_EMBED = re.compile(r"!\[\[([^\]|#]+)")
_CODE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|%%.*?(?:%%|\Z)|`[^`\n]*`", re.S)
_LINK = re.compile(r"^\s*!?\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]\s*$")

METHODS = frozenset(
    {
        "contains",
        "containsAny",
        "containsAll",
        "startsWith",
        "endsWith",
        "isEmpty",
        "isTruthy",
        "toString",
        "lower",
        "upper",
        "trim",
        "title",
        "length",
        "unique",
        "join",
        "flat",
        "sort",
        "reverse",
        "slice",
        "split",
        "replace",
        "hasLink",
        "hasTag",
        "inFolder",
        "hasProperty",
        "asLink",
        "linksTo",
        "abs",
        "round",
        "floor",
        "ceil",
        "toFixed",
        "at",
        "get",
        "orderKey",
        "asFile",
        "format",
        "date",
    }
)
FUNCTIONS = frozenset(
    {
        "if",
        "link",
        "list",
        "number",
        "min",
        "max",
        "now",
        "today",
        "date",
        "file",
        "null",
        "not",
        "empty",
    }
)
OPERATORS = frozenset({"==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "!", "neg"})
FILE_FIELDS = frozenset(
    {
        "file",
        "name",
        "basename",
        "path",
        "folder",
        "ext",
        "size",
        "mtime",
        "ctime",
        "tags",
        "links",
        "backlinks",
        "embeds",
        "properties",
    }
)


class BaseFailure(Exception):
    """A Bases operation HQL does not carry out yet (the message says which)."""


# --- values ---------------------------------------------------------------------


def plain(value: Any) -> Any:
    """An HQL value as the plain value Bases sees."""
    if value is ABSENT:
        return None
    if isinstance(value, Data):
        return value.tree
    if isinstance(value, ListValue | SetValue):
        return [plain(item) for item in value.items]
    if isinstance(value, Card):
        return f"[[{value.name}]]"
    if isinstance(value, Date):
        return value.iso()
    return value


def link_target(value: Any) -> str | None:
    if isinstance(value, str):
        match = _LINK.match(value)
        if match is not None:
            return match.group(1).strip()
    return None


class Context:
    """What the functions need from the run: the vault, to resolve links and find cards."""

    def __init__(self, vault: Any) -> None:
        self.vault = vault
        self._names: dict[str, str | None] = {}

    def resolve(self, target: str) -> str | None:
        if target not in self._names:
            card = self.vault.resolve(target) if self.vault is not None and target else None
            self._names[target] = card.name if card is not None else None
        return self._names[target]

    def card(self, value: Any) -> Card | None:
        if isinstance(value, Card):
            return value
        target = link_target(value)
        if target is None and isinstance(value, str):
            target = value.removesuffix(".md")
        name = self.resolve(target) if target is not None else None
        return self.vault.card(name) if name is not None else None

    def same(self, a: Any, b: Any) -> bool:
        first, second = link_target(a), link_target(b)
        if first is not None and second is not None:
            found_a, found_b = self.resolve(first), self.resolve(second)
            if found_a is not None or found_b is not None:
                return found_a == found_b
            return first.casefold() == second.casefold()
        if isinstance(a, bool) or isinstance(b, bool):
            return a is b
        return bool(a == b)


def truthy(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, str | list | dict):
        return len(value) > 0
    return True


def text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ", ".join(text_of(item) for item in value)
    return str(value)


# --- reading properties ------------------------------------------------------------


def get(context: Context, target: Any, path: str) -> Any:
    """`file.name`, `note.author` (or `author`) of a row's card, or of `this`."""
    if isinstance(target, Data):  # `this` as the .base file: a map of its fields
        tree: Any = target.tree
        for part in path.split("."):
            tree = tree.get(part) if isinstance(tree, dict) else None
        return tree
    if not isinstance(target, Card):
        return None
    if path == "file":
        return f"[[{target.name}]]"
    if path.startswith("file."):
        return _file_field(context, target, path[len("file.") :])
    key = path[len("note.") :] if path.startswith("note.") else path
    return target.metadata.get(key)


def _without_code(body: str) -> str:
    return _CODE.sub("", body)


def _file_field(context: Context, card: Card, name: str) -> Any:
    stem = card.relpath.rsplit("/", 1)[-1]
    if name in ("name", "basename"):
        return stem.rsplit(".", 1)[0]
    if name == "path":
        return card.relpath
    if name == "folder":
        return card.folder
    if name == "ext":
        return stem.rsplit(".", 1)[-1] if "." in stem else ""
    if name == "size":
        return card.size
    if name == "mtime":
        return card.modified.strftime("%Y-%m-%dT%H:%M:%S")
    if name == "ctime":
        born = card.ctime
        return born.strftime("%Y-%m-%dT%H:%M:%S") if born is not None else None
    if name == "tags":
        return list(card.tags)
    if name == "links":
        return [f"[[{name}]]" for name in card.outlinks]
    if name == "backlinks":
        return [f"[[{name}]]" for name in card.inlinks]
    if name == "embeds":  # attachments too (`![[plot.png]]`), which are not links of the vault
        return [f"[[{target.strip()}]]" for target in _EMBED.findall(_without_code(card.body))]
    if name == "properties":
        return dict(card.metadata)
    raise BaseFailure(messages.base_unknown_file_field(name))


# --- methods, functions, operators ----------------------------------------------


def call(context: Context, method: str, receiver: Any, args: list[Any]) -> Any:
    if method in ("hasLink", "hasTag", "inFolder", "hasProperty", "linksTo"):
        return _file_method(context, method, receiver, args)
    if method == "isEmpty":
        return not truthy(receiver) if not isinstance(receiver, int | float) else False
    if method == "isTruthy":
        return truthy(receiver)
    if method == "toString":
        return text_of(receiver)
    if method in ("asLink", "asFile"):
        return receiver
    if method == "get":
        return _member(context, receiver, text_of(args[0]) if args else "")
    if method == "orderKey":  # what a sort orders by: links, lists and maps have no order
        plain_value = isinstance(receiver, str | int | float) and link_target(receiver) is None
        return receiver if plain_value else None
    if receiver is None:
        return None if method not in ("contains", "containsAny", "containsAll") else False
    if method in ("contains", "containsAny", "containsAll"):
        found = [_contains(context, receiver, arg) for arg in args]
        return all(found) if method == "containsAll" else any(found)
    if method == "length":
        return len(receiver) if isinstance(receiver, str | list) else None
    if method == "at":
        index = args[0] if args else None
        if (
            isinstance(receiver, str | list)
            and isinstance(index, int)
            and -len(receiver) <= index < len(receiver)
        ):
            return receiver[index]
        return None
    if isinstance(receiver, list):
        return _list_method(context, method, receiver, args)
    if isinstance(receiver, int | float) and not isinstance(receiver, bool):
        return _number_method(method, receiver, args)
    return _text_method(method, text_of(receiver), args)


def _member(context: Context, receiver: Any, name: str) -> Any:
    """`value.name`: a map's entry, a linked note's `properties` or file fields, else none."""
    if isinstance(receiver, dict):
        return receiver.get(name)
    card = context.card(receiver) if link_target(receiver) is not None else None
    if card is not None:
        if name == "properties":
            return dict(card.metadata)
        if name in FILE_FIELDS:
            return _file_field(context, card, name)
        return card.metadata.get(name)
    return None


def _contains(context: Context, receiver: Any, value: Any) -> bool:
    if isinstance(receiver, list):
        return any(context.same(item, value) for item in receiver)
    if isinstance(receiver, str):
        written = link_target(receiver)
        if written is not None:  # a link: another link is the same note, a text part of its path
            if link_target(value) is not None:
                return context.same(receiver, value)
            return text_of(value) in written
        return text_of(value) in receiver
    return context.same(receiver, value)


def _file_method(context: Context, method: str, receiver: Any, args: list[Any]) -> Any:
    from hql.steps.notes import has_link, has_tag, in_folder

    card = context.card(receiver)
    if card is None:
        return False
    if method == "hasTag":
        return any(has_tag(card, text_of(arg)) for arg in args)
    if method == "inFolder":
        return bool(args) and in_folder(card, text_of(args[0]))
    if method == "hasProperty":
        return bool(args) and text_of(args[0]) in card.metadata
    other = args[0] if args else None
    if isinstance(other, Data):  # `this` as the .base file: no note links to it
        return False
    other_card = context.card(other)
    name = other_card.name if other_card is not None else link_target(other) or text_of(other)
    return has_link(card, name, context.vault)


def _list_method(context: Context, method: str, items: list[Any], args: list[Any]) -> Any:
    if method == "unique":
        kept: list[Any] = []
        for item in items:
            if not any(context.same(item, seen) for seen in kept):
                kept.append(item)
        return kept
    if method == "join":
        separator = text_of(args[0]) if args else ","
        return separator.join(text_of(item) for item in items)
    if method == "flat":
        return [inner for item in items for inner in (item if isinstance(item, list) else [item])]
    if method == "reverse":
        return list(reversed(items))
    if method == "sort":
        return sorted(items, key=lambda item: (item is None, text_of(item)))
    if method == "slice":
        start = int(args[0]) if args else 0
        end = int(args[1]) if len(args) > 1 else None
        return items[start:end]
    raise BaseFailure(messages.base_method_on(method, "a list"))


def _number_method(method: str, number: float, args: list[Any]) -> Any:
    import math

    if method == "abs":
        return abs(number)
    if method == "round":
        digits = int(args[0]) if args else 0
        return round(number, digits) if digits else math.floor(number + 0.5)
    if method == "floor":
        return math.floor(number)
    if method == "ceil":
        return math.ceil(number)
    if method == "toFixed":
        return _to_fixed(number, int(args[0]) if args else 0)
    return _text_method(method, text_of(number), args)


def _to_fixed(number: float, places: int) -> str:
    """JavaScript's `toFixed`: the nearest text with `places` decimals to the number's exact
    value, a tie away from zero (1.125 gives "1.13"; Python's format gives "1.12")."""
    from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

    try:
        exact = Decimal(number).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)
    except (InvalidOperation, ValueError):  # infinities and NaN (no Data holds them), huge places
        return f"{number:.{places}f}"
    return f"{exact:.{places}f}"


def _text_method(method: str, text: str, args: list[Any]) -> Any:
    words = [text_of(arg) for arg in args]
    if method == "startsWith":
        return bool(words) and text.startswith(words[0])
    if method == "endsWith":
        return bool(words) and text.endswith(words[0])
    if method == "lower":
        return text.lower()
    if method == "upper":
        return text.upper()
    if method == "trim":
        return text.strip()
    if method == "title":
        return text.title()
    if method == "reverse":
        return text[::-1]
    if method == "slice":
        start = int(args[0]) if args else 0
        end = int(args[1]) if len(args) > 1 else None
        return text[start:end]
    if method == "split":
        return text.split(words[0]) if words and words[0] else list(text)
    if method == "replace":
        return text.replace(words[0], words[1]) if len(words) > 1 else text
    if method == "date":
        return text[:10] if _looks_like_date(text) else None
    if method == "format":
        return _format_date(text, words[0] if words else "YYYY-MM-DD")
    raise BaseFailure(messages.base_method_on(method, "a text"))


def _format_date(text: str, pattern: str) -> Any:
    moment = _moment(text)
    if moment is None:
        return None
    tokens = {
        "YYYY": "%Y",
        "MM": "%m",
        "DD": "%d",
        "HH": "%H",
        "mm": "%M",
        "ss": "%S",
        "MMMM": "%B",
        "MMM": "%b",
        "dddd": "%A",
        "ddd": "%a",
    }
    written = re.sub(
        "|".join(sorted(tokens, key=len, reverse=True)), lambda m: tokens[m.group(0)], pattern
    )
    return moment.strftime(written)


def function(context: Context, name: str, args: list[Any]) -> Any:
    if name == "if":
        chosen = args[1] if truthy(args[0] if args else None) else None
        if not truthy(args[0] if args else None):
            chosen = args[2] if len(args) > 2 else None
        return chosen
    if name in ("link", "file"):
        value = args[0] if args else None
        if link_target(value) is not None:
            return value
        return f"[[{text_of(value).removesuffix('.md')}]]"
    if name == "list":
        value = args[0] if args else None
        return [] if value is None else value if isinstance(value, list) else [value]
    if name == "number":
        value = args[0] if args else None
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int | float):
            return value
        try:
            number = float(text_of(value))
        except ValueError:
            return None
        return int(number) if number.is_integer() else number
    if name in ("min", "max"):
        numbers = [
            arg for arg in args if isinstance(arg, int | float) and not isinstance(arg, bool)
        ]
        if not numbers:
            return None
        return min(numbers) if name == "min" else max(numbers)
    if name in ("now", "today"):
        import datetime

        moment = datetime.datetime.now()
        return moment.strftime("%Y-%m-%dT%H:%M:%S") if name == "now" else moment.date().isoformat()
    if name == "date":
        return text_of(args[0] if args else None).replace(" ", "T") or None
    if name == "null":
        return None
    if name == "not":
        return not truthy(args[0] if args else None)
    if name == "empty":
        return not truthy(args[0] if args else None)
    raise BaseFailure(messages.base_unknown_function(name))  # pragma: no cover - translator checks


def operate(context: Context, op: str, args: list[Any]) -> Any:
    if op == "!":
        return not truthy(args[0])
    if op == "neg":
        value = args[0]
        return -value if isinstance(value, int | float) else None
    a, b = args
    if op == "==":
        return context.same(a, b)
    if op == "!=":
        return not context.same(a, b)
    if op in ("<", "<=", ">", ">="):
        return _ordered(op, a, b)
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))
    if op in ("+", "-") and _looks_like_date(a):
        if _looks_like_date(b) and op == "-":
            return _duration(a, b)
        if isinstance(b, str):
            return _shifted(a, b, 1 if op == "+" else -1)
    if op == "+":
        if numbers:
            return a + b
        if isinstance(a, str) or isinstance(b, str):
            return text_of(a) + text_of(b)
        return None
    if not numbers:
        return None
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a / b if b else None
    return a % b if b else None


def _ordered(op: str, a: Any, b: Any) -> bool:
    if a is None or b is None or link_target(a) is not None or link_target(b) is not None:
        return False
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return False
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))
    if not numbers:
        if isinstance(a, int | float) or isinstance(b, int | float):
            return False
        a, b = text_of(a), text_of(b)
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def _moment(text: str) -> Any:
    import datetime

    if not _looks_like_date(text):
        return None
    try:
        found = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return found.replace(tzinfo=None)


_UNITS = {
    "y": "years",
    "year": "years",
    "years": "years",
    "M": "months",
    "month": "months",
    "months": "months",
    "d": "days",
    "day": "days",
    "days": "days",
    "w": "weeks",
    "week": "weeks",
    "weeks": "weeks",
    "h": "hours",
    "hour": "hours",
    "hours": "hours",
    "m": "minutes",
    "minute": "minutes",
    "minutes": "minutes",
    "s": "seconds",
    "second": "seconds",
    "seconds": "seconds",
}


def _duration(a: str, b: str) -> Any:
    """`date - date`: a duration, with its length in each unit (`.years`, `.days`, …)."""
    first, second = _moment(a), _moment(b)
    if first is None or second is None:
        return None
    seconds = (first - second).total_seconds()
    return {
        "milliseconds": seconds * 1000,
        "seconds": seconds,
        "minutes": seconds / 60,
        "hours": seconds / 3600,
        "days": seconds / 86400,
        "weeks": seconds / (7 * 86400),
        "months": seconds / (30.436875 * 86400),
        "years": seconds / (365.2425 * 86400),
    }


def _shifted(text: str, written: str, sign: int) -> Any:
    """`date + "1M"`, `date - "2 weeks"`: the date moved by each amount written."""
    import datetime

    moment = _moment(text)
    parts = re.findall(r"(-?\d+)\s*([A-Za-z]+)", written)
    if moment is None or not parts:
        raise BaseFailure(messages.base_date_arithmetic())
    for amount, unit in parts:
        name = _UNITS.get(unit) or _UNITS.get(unit.lower())
        if name is None:
            raise BaseFailure(messages.base_date_arithmetic())
        count = sign * int(amount)
        if name in ("years", "months"):
            months = moment.month - 1 + count * (12 if name == "years" else 1)
            year, month = moment.year + months // 12, months % 12 + 1
            import calendar

            day = min(moment.day, calendar.monthrange(year, month)[1])
            moment = moment.replace(year=year, month=month, day=day)
        else:
            moment = moment + datetime.timedelta(**{name: count})
    has_time = "T" in text or moment.hour or moment.minute or moment.second
    return moment.strftime("%Y-%m-%dT%H:%M:%S") if has_time else moment.date().isoformat()


def _looks_like_date(value: Any) -> bool:
    return isinstance(value, str) and re.match(r"^\d{4}-\d{2}-\d{2}", value) is not None


# --- the functions programs call ---------------------------------------------------


def _check(returns: Type, least: int, named: frozenset[str] | None) -> Any:
    def check(
        checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
    ) -> Type:
        callee = getattr(expr, "callee", None)
        name = getattr(callee, "name", "base")
        if len(args) < least:
            raise HqlError(type_error(messages.function_arity(name, least, len(args)), expr.span))
        for argument in args:
            checker.expression(argument.value)
        if named is not None:
            first = args[0].value
            if not isinstance(first, t.StringLit) or first.value not in named:
                raise HqlError(type_error(messages.base_unknown_operation(name), args[0].span))
        return returns

    return check


def _context(interpreter: Interpreter) -> Context:
    found = getattr(interpreter, "_base_context", None)
    if found is None:
        found = Context(interpreter.vault)
        interpreter._base_context = found  # type: ignore[attr-defined]
    return found


def _failing(run: Any) -> Any:
    def guarded(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Any:
        try:
            return run(interpreter, expr, values)
        except BaseFailure as failure:
            from hql.diagnostics import evaluation

            raise HqlError(evaluation(str(failure), expr.span)) from None

    return guarded


def _run_get(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Data:
    target, path = values
    return Data(get(_context(interpreter), target, path))


def _run_call(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Data:
    method, receiver, *args = values
    return Data(call(_context(interpreter), method, plain(receiver), [plain(a) for a in args]))


def _run_fn(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Data:
    name, *args = values
    return Data(function(_context(interpreter), name, [plain(a) for a in args]))


def _run_op(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Data:
    op, *args = values
    return Data(operate(_context(interpreter), op, [plain(a) for a in args]))


def _run_true(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> bool:
    return truthy(plain(values[0]))


for _name, _signature, _summary, _returns, _least, _named, _run in (
    (
        "base_get",
        "base_get(file: Card | Data, property: String) -> Data",
        "a Bases property of a file (`file.name`, `note.author`, `author`)",
        ty.DATA,
        2,
        None,
        _run_get,
    ),
    (
        "base_call",
        "base_call(method: String, value: T, ...) -> Data",
        "a Bases method on a value (`contains`, `isEmpty`, ...)",
        ty.DATA,
        2,
        METHODS,
        _run_call,
    ),
    (
        "base_fn",
        "base_fn(function: String, ...) -> Data",
        "a Bases global function (`if`, `link`, `list`, ...)",
        ty.DATA,
        1,
        FUNCTIONS,
        _run_fn,
    ),
    (
        "base_op",
        "base_op(operator: String, a: T, b?: T) -> Data",
        "a Bases operator, with Bases' rules for mixed values",
        ty.DATA,
        2,
        OPERATORS,
        _run_op,
    ),
    (
        "base_true",
        "base_true(value: T) -> Bool",
        "whether a Bases value is truthy (what a Bases filter keeps)",
        ty.BOOL,
        1,
        None,
        _run_true,
    ),
):
    REGISTRY.add_function(
        FunctionSpec(
            _name,
            _signature,
            _summary,
            f"hql base FILE.base --explain  # programs using {_name}",
            _check(_returns, _least, _named),
            _failing(_run),
        )
    )
