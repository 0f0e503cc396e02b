"""An Obsidian `.base` file as HQL programs, one per view (docs/bases.md).

A base is YAML: `filters` (a string, or `and`/`or`/`not` lists of them),
`formulas` (named expressions), `properties` (display names) and `views`
(each with its own `filters`, `order` (the columns), `sort`, `limit` and
`groupBy`). Each view becomes a program:

    this = …                       # the note the base is shown for, or the .base file
    cards
      | filter(c => …)             # the base's filters and the view's, joined by `and`
      | sort(by = c => [...], descending = [...])
      | take(n)
      | map(c => {"file name": …, "author": …})
      | table(columns = true)

Bases expressions become HQL calling the Bases functions of
hql/steps/bases.py (`base_get`, `base_call`, `base_fn`, `base_op`,
`base_true`), except the file helpers with literal arguments, which become
HQL's own (`has_tag`, `in_folder`, `has_link`). Every piece of a program
remembers the span of the `.base` text it came from, so reports point into
the `.base` file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from hql import messages
from hql.bases import expression as ex
from hql.steps.bases import FILE_FIELDS, FUNCTIONS, METHODS

# View settings that change only how Obsidian draws a view: a table in a terminal has none.
_DISPLAY_ONLY = frozenset(
    {"image", "imageFit", "imageAspectRatio", "cardSize", "columnSize", "rowHeight", "markers"}
)
_VIEW_KEYS = frozenset({"type", "name", "filters", "order", "sort", "limit", "groupBy"})


class BaseError(Exception):
    """A `.base` file HQL cannot read or translate; `start`/`end` are character offsets."""

    def __init__(self, message: str, start: int = 0, end: int = 0) -> None:
        super().__init__(message)
        self.start, self.end = start, max(end, start + 1)


class Text(str):
    """A string of the `.base` file, knowing where its text starts there."""

    at: int

    def __new__(cls, value: str, at: int) -> Text:
        made = super().__new__(cls, value)
        made.at = at
        return made


@dataclass
class Fragment:
    """HQL text and, per piece, the `.base` span it came from (offsets in characters)."""

    text: str
    marks: list[tuple[int, int, int, int]] = field(default_factory=list)

    def __add__(self, other: Fragment | str) -> Fragment:
        if isinstance(other, str):
            return Fragment(self.text + other, self.marks)
        shift = len(self.text)
        moved = [(s + shift, e + shift, bs, be) for s, e, bs, be in other.marks]
        return Fragment(self.text + other.text, self.marks + moved)

    def __radd__(self, other: str) -> Fragment:
        return Fragment(other) + self

    def marked(self, start: int, end: int) -> Fragment:
        return Fragment(self.text, [*self.marks, (0, len(self.text), start, end)])


def joined(parts: list[Fragment], separator: str) -> Fragment:
    result = Fragment("")
    for at, part in enumerate(parts):
        result = result + (separator if at else "") + part
    return result


@dataclass
class View:
    name: str
    program: Fragment
    notes: list[str]
    columns: list[str] = field(default_factory=list)

    def base_span(self, char_start: int, char_end: int) -> tuple[int, int] | None:
        """The `.base` span of the smallest piece of the program holding this span."""
        best: tuple[int, int, int, int] | None = None
        for start, end, base_start, base_end in self.program.marks:
            inside = start <= char_start and char_end <= end
            if inside and (best is None or end - start < best[1] - best[0]):
                best = (start, end, base_start, base_end)
        return (best[2], best[3]) if best is not None else None


@dataclass
class Base:
    path: str
    text: str
    views: list[View]


def read_base(path: str, text: str, this: str | None, relpath: str) -> Base:
    """Translate a `.base` file's text; `this` names the note it is shown for (else the
    `.base` file itself is `this`); `relpath` is the file's path in the vault."""
    tree = _load(text)
    if not isinstance(tree, dict):
        raise BaseError(messages.base_not_a_map(), 0, len(text))
    translator = _Translator(tree, text)
    prelude = _this(this, relpath)
    views = tree.get("views") or [{"type": "table", "name": "Table"}]
    if not isinstance(views, list):
        raise BaseError(messages.base_views_not_list(), *_span_of(tree, "views"))
    made = []
    for at, view in enumerate(views):
        if not isinstance(view, dict):
            raise BaseError(messages.base_view_not_map(at + 1), 0, len(text))
        made.append(translator.view(view, prelude, at))
    return Base(path, text, made)


def _this(this: str | None, relpath: str) -> str:
    if this is not None:
        return f"this = [[{this}]]\n"
    folder, _, name = relpath.rpartition("/")
    stem = name.rsplit(".", 1)[0]
    fields = {
        "name": stem,
        "basename": stem,
        "path": relpath,
        "folder": folder,
        "ext": "base",
        "links": [],
        "tags": [],
    }
    entries = ", ".join(f"{key}: {json.dumps(value)}" for key, value in fields.items())
    return f"this = {{file: {{{entries}}}}}\n"


class _Translator:
    def __init__(self, tree: dict[str, Any], text: str) -> None:
        self.tree = tree
        self.text = text
        formulas = tree.get("formulas") or {}
        self.formulas: dict[str, Any] = formulas if isinstance(formulas, dict) else {}
        self.names = _display_names(tree)
        self._expanding: list[str] = []

    # --- views ----------------------------------------------------------------------

    def view(self, view: dict[str, Any], prelude: str, at: int) -> View:
        name = str(view.get("name") or f"View {at + 1}")
        notes = self._notes(view, name)
        program = Fragment(prelude + "cards\n")
        conditions = [
            self.filters(filters)
            for filters in (self.tree.get("filters"), view.get("filters"))
            if filters
        ]
        if conditions:
            program = program + "  | filter(c => " + joined(conditions, " and ") + ")\n"
        keys, directions = self._sort_keys(view, notes)
        # Ties, and a view without `sort`, in path order (as the files are listed).
        keys.append(Fragment("c.relpath"))
        directions.append(False)
        flags = ", ".join("true" if down else "false" for down in directions)
        program = (
            program + "  | sort(by = c => [" + joined(keys, ", ") + f"], descending = [{flags}])\n"
        )
        limit = view.get("limit")
        if limit is not None:
            if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
                raise BaseError(messages.base_bad_limit(limit), *_span_of(view, "limit"))
            program = program + f"  | take({limit})\n"
        labels, columns = self._columns(view)
        program = (
            program + "  | map(c => {" + joined(columns, ", ") + "})\n  | table(columns = true)\n"
        )
        return View(name, program, notes, labels)

    def _notes(self, view: dict[str, Any], name: str) -> list[str]:
        notes = []
        kind = view.get("type", "table")
        if kind != "table":
            notes.append(messages.base_view_as_table(name, str(kind)))
        unused = sorted(key for key in view if key in _DISPLAY_ONLY)
        if unused:
            notes.append(messages.base_view_display_only(name, unused))
        unknown = sorted(
            str(key) for key in view if key not in _VIEW_KEYS and key not in _DISPLAY_ONLY
        )
        if unknown:
            notes.append(messages.base_view_not_run(name, unknown))
        if "file.ext" in repr((self.tree.get("filters"), view.get("filters"))):
            notes.append(messages.base_view_notes_only(name))
        return notes

    def _sort_keys(
        self, view: dict[str, Any], notes: list[str]
    ) -> tuple[list[Fragment], list[bool]]:
        keys: list[Fragment] = []
        directions: list[bool] = []
        entries = []
        group = view.get("groupBy")
        if isinstance(group, dict) and group.get("property"):
            entries.append(group)
            notes.append(messages.base_grouped(str(view.get("name")), str(group["property"])))
        sort = view.get("sort") or []
        if not isinstance(sort, list):
            raise BaseError(messages.base_sort_not_list(), *_span_of(view, "sort"))
        entries += sort
        for entry in entries:
            prop = entry.get("property", entry.get("column")) if isinstance(entry, dict) else None
            if not isinstance(prop, str):
                raise BaseError(messages.base_sort_entry(), *_span_of(view, "sort"))
            direction = str(entry.get("direction", "ASC")).upper()
            keys.append('base_call("orderKey", ' + self.property(prop) + ")")
            directions.append(direction == "DESC")
        return keys, directions

    def _columns(self, view: dict[str, Any]) -> tuple[list[str], list[Fragment]]:
        order = view.get("order") or ["file.name"]
        if not isinstance(order, list):
            raise BaseError(messages.base_order_not_list(), *_span_of(view, "order"))
        columns = []
        group = view.get("groupBy")
        if isinstance(group, dict) and isinstance(group.get("property"), str):
            order = [group["property"], *[p for p in order if p != group["property"]]]
        seen: set[str] = set()
        labels: list[str] = []
        for prop in order:
            if not isinstance(prop, str):
                raise BaseError(messages.base_order_entry(), *_span_of(view, "order"))
            label = self.names.get(prop) or _label(prop)
            while label in seen:
                label += "'"
            seen.add(label)
            labels.append(label)
            columns.append(json.dumps(label) + ": " + self.property(prop))
        return labels, columns

    def property(self, prop: str) -> Fragment:
        """A property id (`file.name`, `note.author`, `author`, `formula.Total`) as a value."""
        at = prop.at if isinstance(prop, Text) else 0
        return self.value(self._parse(prop), at)

    # --- filters --------------------------------------------------------------------

    def filters(self, filters: Any) -> Fragment:
        if isinstance(filters, str):
            return self.condition(self._parse(filters), _at(filters))
        if isinstance(filters, dict) and len(filters) == 1:
            ((kind, items),) = filters.items()
            if kind in ("and", "or", "not") and isinstance(items, list):
                parts = [self.filters(item) for item in items]
                if not parts:
                    return Fragment("true" if kind != "or" else "false")
                if kind == "not":
                    return "not (" + joined(parts, " or ") + ")"
                return "(" + joined(parts, f" {kind} ") + ")"
        start, end = _first_text_span(filters)
        raise BaseError(messages.base_bad_filter(), start, end)

    def _parse(self, text: str) -> tuple[ex.Node, int]:
        at = _at(text)
        try:
            return ex.parse(str(text)), at
        except ex.BaseSyntaxError as error:
            raise BaseError(str(error), at + error.start, at + error.end) from None

    # --- expressions ------------------------------------------------------------------

    def condition(self, parsed: tuple[ex.Node, int] | ex.Node, at: int = 0) -> Fragment:
        node, at = parsed if isinstance(parsed, tuple) else (parsed, at)
        return self._condition(node, at)

    def _condition(self, node: ex.Node, at: int) -> Fragment:
        if isinstance(node, ex.Unary) and node.op == "!":
            made = "not (" + self._condition(node.operand, at) + ")"
        elif isinstance(node, ex.Binary) and node.op in ("&&", "||"):
            word = "and" if node.op == "&&" else "or"
            made = (
                "("
                + self._condition(node.left, at)
                + f" {word} "
                + self._condition(node.right, at)
                + ")"
            )
        else:
            made = self._helper(node, at) or "base_true(" + self._value(node, at) + ")"
        return made.marked(at + node.start, at + node.end)

    def _helper(self, node: ex.Node, at: int) -> Fragment | None:
        """`file.hasTag("a")`, `file.inFolder("x")`, `file.hasLink("Note")` as HQL's own."""
        if not (isinstance(node, ex.Call) and isinstance(node.callee, ex.Member)):
            return None
        receiver, method = node.callee.receiver, node.callee.name
        if not (isinstance(receiver, ex.Name) and receiver.name == "file"):
            return None
        texts = [arg.value for arg in node.args if isinstance(arg, ex.Literal)]
        if len(texts) != len(node.args) or not all(isinstance(v, str) for v in texts) or not texts:
            return None
        quoted = [json.dumps(value) for value in texts]
        if method == "hasTag":
            return Fragment("(" + " or ".join(f"has_tag(c, {q})" for q in quoted) + ")")
        if method == "inFolder" and len(quoted) == 1:
            return Fragment(f"in_folder(c, {quoted[0]})")
        if method == "hasLink" and len(quoted) == 1:
            return Fragment(f"has_link(c, {quoted[0]})")
        return None

    def value(self, parsed: tuple[ex.Node, int], at: int = 0) -> Fragment:
        node, at = parsed
        return self._value(node, at)

    def _value(self, node: ex.Node, at: int) -> Fragment:
        made = self._made(node, at)
        return made.marked(at + node.start, at + node.end)

    def _made(self, node: ex.Node, at: int) -> Fragment:
        if isinstance(node, ex.Literal):
            return Fragment(_literal(node.value))
        if isinstance(node, ex.Name | ex.Member) and _path(node) is not None:
            return self._property(node, at)
        if isinstance(node, ex.Member):
            return self._field(self._value(node.receiver, at), node.name)
        if isinstance(node, ex.Index):
            return self._index(node, at)
        if isinstance(node, ex.Call):
            return self._call(node, at)
        if isinstance(node, ex.Unary):
            op = "!" if node.op == "!" else "neg"
            return f'base_op("{op}", ' + self._value(node.operand, at) + ")"
        if isinstance(node, ex.Binary):
            left, right = self._value(node.left, at), self._value(node.right, at)
            if node.op == "&&":
                return 'base_fn("if", ' + left + ", " + right + ", " + left + ")"
            if node.op == "||":
                return 'base_fn("if", ' + left + ", " + left + ", " + right + ")"
            return f'base_op("{node.op}", ' + left + ", " + right + ")"
        raise BaseError(messages.base_unexpected("this"), at + node.start, at + node.end)

    def _index(self, node: ex.Index, at: int) -> Fragment:
        return (
            'base_call("at", '
            + self._value(node.receiver, at)
            + ", "
            + self._value(node.index, at)
            + ")"
        )

    def _property(self, node: ex.Node, at: int) -> Fragment:
        path = _path(node)
        assert path is not None
        root, rest = path[0], path[1:]
        if root == "value" and "value" in self._lambda_names:
            made = Fragment("value")
        elif root == "file":
            if rest and rest[0] in FILE_FIELDS:
                made = Fragment(f'base_get(c, "file.{rest[0]}")')
                rest = rest[1:]
            elif rest:
                raise BaseError(
                    messages.base_unknown_file_field(rest[0]), at + node.start, at + node.end
                )
            else:
                made = Fragment('base_get(c, "file")')
        elif root == "this":
            if rest and rest[0] == "file":
                if len(rest) > 1:
                    made = Fragment(f'base_get(this, "file.{rest[1]}")')
                    rest = rest[2:]
                else:
                    made = Fragment('base_get(this, "file")')
                    rest = []
            elif rest:
                made = Fragment(f'base_get(this, "note.{rest[0]}")')
                rest = rest[1:]
            else:
                made = Fragment('base_get(this, "file")')
        elif root == "note" and rest:
            made = Fragment(f"base_get(c, {json.dumps('note.' + rest[0])})")
            rest = rest[1:]
        elif root == "formula" and rest:
            made = self._formula(rest[0], at + node.start, at + node.end)
            rest = rest[1:]
        else:
            made = Fragment(f"base_get(c, {json.dumps('note.' + root)})")
        for name in rest:
            made = self._field(made, name)
        return made

    def _field(self, receiver: Fragment, name: str) -> Fragment:
        """`value.name`: a list's or text's `length`, a map's entry, a linked note's property
        (`.properties`, `file` fields), a duration's `years`, `days`, …"""
        if name == "length":
            return 'base_call("length", ' + receiver + ")"
        return 'base_call("get", ' + receiver + f", {json.dumps(name)})"

    _lambda_names: frozenset[str] = frozenset()

    def _formula(self, name: str, start: int, end: int) -> Fragment:
        if name not in self.formulas:
            raise BaseError(messages.base_no_formula(name), start, end)
        if name in self._expanding:
            raise BaseError(messages.base_formula_cycle([*self._expanding, name]), start, end)
        written = self.formulas[name]
        if not isinstance(written, str | int | float):
            raise BaseError(messages.base_bad_formula(name), start, end)
        if not isinstance(written, str):
            return Fragment(_literal(written))
        self._expanding.append(name)
        try:
            node, at = self._parse(written)
            return "(" + self._value(node, at) + ")"
        finally:
            self._expanding.pop()

    def _call(self, node: ex.Call, at: int) -> Fragment:
        callee = node.callee
        if isinstance(callee, ex.Name):
            if callee.name not in FUNCTIONS:
                raise BaseError(
                    messages.base_unknown_function(callee.name), at + callee.start, at + callee.end
                )
            args = [self._value(arg, at) for arg in node.args]
            return joined([Fragment(f'base_fn("{callee.name}"'), *args], ", ") + ")"
        if not isinstance(callee, ex.Member):
            raise BaseError(messages.base_unexpected("a call"), at + node.start, at + node.end)
        method = callee.name
        receiver = self._value(callee.receiver, at)
        if method in ("filter", "map"):
            return self._with_value(method, receiver, node, at)
        if method not in METHODS:
            start = at + callee.end - len(method)
            raise BaseError(messages.base_unknown_method(method), start, at + callee.end)
        args = [self._value(arg, at) for arg in node.args]
        return joined([Fragment(f'base_call("{method}"'), receiver, *args], ", ") + ")"

    def _with_value(self, method: str, receiver: Fragment, node: ex.Call, at: int) -> Fragment:
        """`list.filter(expr)` / `list.map(expr)`, `value` naming each element."""
        if len(node.args) != 1:
            raise BaseError(messages.base_one_expression(method), at + node.start, at + node.end)
        before = self._lambda_names
        self._lambda_names = before | {"value"}
        try:
            inner = node.args[0]
            if method == "filter":
                body = "base_true(" + self._value(inner, at) + ")"
            else:
                body = self._value(inner, at)
        finally:
            self._lambda_names = before
        listed = 'base_fn("list", ' + receiver + ")"
        return "(" + listed + f" | {method}(value => " + body + "))"


def _path(node: ex.Node) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None when the chain does not start at a name."""
    if isinstance(node, ex.Name):
        return [node.name]
    if isinstance(node, ex.Member):
        inner = _path(node.receiver)
        return None if inner is None else [*inner, node.name]
    return None


def _literal(value: object) -> str:
    if value is None:
        return 'base_fn("null")'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value) if isinstance(value, int) else repr(float(str(value)))


def _label(prop: str) -> str:
    for prefix in ("note.", "formula."):
        if prop.startswith(prefix):
            return prop[len(prefix) :]
    return prop.replace(".", " ")


def _display_names(tree: dict[str, Any]) -> dict[str, str]:
    names: dict[str, str] = {}
    properties = tree.get("properties")
    if isinstance(properties, dict):
        for prop, settings in properties.items():
            if isinstance(settings, dict) and isinstance(settings.get("displayName"), str):
                names[str(prop)] = settings["displayName"].replace(".", " ")
    display = tree.get("display")  # the first format's spelling
    if isinstance(display, dict):
        for prop, shown in display.items():
            if isinstance(shown, str):
                names.setdefault(str(prop), shown.replace(".", " "))
    for prop in list(names):  # `author` and `note.author` are the same property
        bare = prop[len("note.") :] if prop.startswith("note.") else None
        if bare is not None:
            names.setdefault(bare, names[prop])
    return names


def _at(text: object) -> int:
    return text.at if isinstance(text, Text) else 0


def _span_of(tree: dict[str, Any], key: str) -> tuple[int, int]:
    for written in tree:
        if written == key and isinstance(written, Text):
            return written.at, written.at + len(written)
    return 0, 1


def _first_text_span(value: Any) -> tuple[int, int]:
    if isinstance(value, Text):
        return value.at, value.at + len(value)
    if isinstance(value, dict):
        for key in value:
            return _first_text_span(key)
    if isinstance(value, list) and value:
        return _first_text_span(value[0])
    return 0, 1


# --- YAML with positions -----------------------------------------------------------------


def _load(text: str) -> Any:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = mark.index if mark is not None else 0
        raise BaseError(
            messages.base_bad_yaml(str(getattr(error, "problem", error))), at, at + 1
        ) from None
    return _plain(node) if node is not None else {}


def _plain(node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return {_plain(key): _plain(value) for key, value in node.value}
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item) for item in node.value]
    value = yaml.constructor.SafeConstructor().construct_object(node, deep=True)
    if isinstance(value, str):
        quoted = getattr(node, "style", None) in ("'", '"')
        return Text(value, node.start_mark.index + (1 if quoted else 0))
    return value
