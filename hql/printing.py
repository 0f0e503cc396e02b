"""How values print (reference section 8): plain display, JSON projection, tables.

These rules are byte-exact: a `hql#result` block rendered here must match one
rendered by the original.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

from hql.values import (
    ABSENT,
    UNIT,
    Card,
    Concept,
    Data,
    Date,
    Edge,
    Group,
    Hit,
    ListValue,
    MapValue,
    Ordering,
    Presentation,
    Ranking,
    SetValue,
    Task,
)

_TASK_DATES = frozenset({"due", "scheduled", "completed"})


def is_graph(value: Any) -> bool:
    from hql.graphs import Graph

    return isinstance(value, Graph)


def is_context(value: Any) -> bool:
    """A context block (hql.context.block): only a program that made one loaded that module."""
    import sys

    block = sys.modules.get("hql.context.block")
    return block is not None and isinstance(value, block.Context)


# --- scalars -----------------------------------------------------------------


def format_float(value: float) -> str:
    """Rust's `{:?}` for f64: shortest round-trip digits, always a point or an exponent."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}e{int(exponent)}"
    return text if "." in text else text + ".0"


def format_score(score: float) -> str:
    return f"{score:.4f}"


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}


def quote(text: str) -> str:
    """A Data string leaf: double-quoted with Rust's escapes."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif not char.isprintable() and char != " ":
            out.append(f"\\u{{{ord(char):x}}}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


# --- plain display -----------------------------------------------------------


def display_data(tree: Any) -> str:
    if tree is None:
        return "empty"
    if isinstance(tree, bool):
        return "true" if tree else "false"
    if isinstance(tree, int):
        return str(tree)
    if isinstance(tree, float):
        return format_float(tree)
    if isinstance(tree, str):
        return quote(tree)
    if isinstance(tree, list):
        return "[" + ", ".join(display_data(item) for item in tree) + "]"
    if isinstance(tree, dict):
        entries = (f"{key}: {display_data(tree[key])}" for key in sorted(tree))
        return "{" + ", ".join(entries) + "}"
    return display(tree)


def display(value: Any) -> str:
    """The plain display of any value (section 8.1)."""
    if value is UNIT:
        return "()"
    if value is ABSENT:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Data):
        return display_data(value.tree)
    if isinstance(value, Date):
        return value.iso()
    if isinstance(value, Task):  # as the Data map it was, its dates unquoted
        fields = [
            f"{key}: {item if key in _TASK_DATES else display_data(item)}"
            for key, item in value.tree().items()
        ]
        return "{" + ", ".join(fields) + "}"
    if isinstance(value, Card | Concept):
        return value.name
    if isinstance(value, Edge):
        return f"{value.source} -> {value.target}"
    if isinstance(value, Hit):
        return f"{value.card.name} ({format_score(value.score)})"
    if isinstance(value, ListValue | SetValue | Ranking):
        return "[" + ", ".join(display(item) for item in value) + "]"
    if isinstance(value, Presentation):
        return value.text
    if isinstance(value, Ordering):
        return value.value
    if isinstance(value, MapValue):
        entries = ", ".join(f"{display(k)}: {display(v)}" for k, v in value.items())
        return f"{value.kind} {{{entries}}}"
    if isinstance(value, Group):
        return f"Group {{key: {display(value.key)}, items: {display(value.items)}}}"
    if is_graph(value):
        return f"graph of {len(value.nodes)} nodes and {len(value.induced_edges)} edges"
    if is_context(value):
        return str(value.display())
    return str(value)


# --- JSON projection ---------------------------------------------------------


def card_json(card: Card) -> dict[str, Any]:
    return {
        "name": card.name,
        "kind": card.kind,
        "title": card.title,
        "path": card.path,
        "header": card.header,
        "metadata": card.metadata,
    }


def edge_json(edge: Edge) -> dict[str, Any]:
    return {"source": edge.source, "target": edge.target, "data": edge.data}


def to_json(value: Any) -> Any:
    """The JSON projection of a value (section 8.2), as plain Python data."""
    if value is UNIT or value is ABSENT:
        return None
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, Data):
        return value.tree
    if isinstance(value, Date):
        return value.iso()
    if isinstance(value, Task | Concept):
        return value.tree()
    if isinstance(value, Card):
        return card_json(value)
    if isinstance(value, Edge):
        return edge_json(value)
    if isinstance(value, Hit):
        return {
            "card": value.card.name,
            "score": value.score,
            "retrieval": value.retrieval.as_tree(),
            **_hit_section(value),
        }
    if isinstance(value, Ranking):
        return {
            "retrieval": value.retrieval.as_tree(),
            "hits": [
                {
                    "card": hit.card.name,
                    "title": hit.card.title,
                    "score": hit.score,
                    **_hit_section(hit),
                }
                for hit in value.hits
            ],
        }
    if isinstance(value, ListValue | SetValue):
        return [to_json(item) for item in value]
    if isinstance(value, Presentation):
        if value.columns is not None and value.rows is not None:
            rows = [dict(zip(value.columns, row, strict=True)) for row in value.rows]
            return {
                "presenter": value.presenter,
                "text": value.text,
                "columns": list(value.columns),
                "rows": rows,
            }
        return {"presenter": value.presenter, "text": value.text}
    if isinstance(value, Ordering):
        return value.value
    if isinstance(value, MapValue):
        entries = [{"key": to_json(k), "value": to_json(v)} for k, v in value.items()]
        return {"type": value.type_text, "entries": entries}
    if isinstance(value, Group):
        return {"key": to_json(value.key), "items": to_json(value.items)}
    if is_graph(value):
        return {
            "nodes": [
                {"name": name, "presence": value.presence[name].label()} for name in value.nodes
            ],
            "edges": [edge_json(edge) for edge in value.induced_edges],
        }
    if is_context(value):
        return value.to_json()
    return str(value)


def dumps(tree: Any, indent: str = "") -> str:
    """Pretty JSON with two-space indentation, as serde_json writes it (floats included)."""
    import json  # only programs that print JSON pay for it

    if isinstance(tree, float) and math.isfinite(tree):
        return json_float(tree)
    inner = indent + "  "
    if isinstance(tree, dict) and tree:
        entries = (
            f"{inner}{json.dumps(str(key), ensure_ascii=False)}: {dumps(value, inner)}"
            for key, value in tree.items()
        )
        return "{\n" + ",\n".join(entries) + f"\n{indent}}}"
    if isinstance(tree, list | tuple) and tree:
        return "[\n" + ",\n".join(f"{inner}{dumps(item, inner)}" for item in tree) + f"\n{indent}]"
    return json.dumps(tree, ensure_ascii=False)


def json_float(value: float) -> str:
    """A float as serde_json writes it (ryu): `1.0`, `0.00001`, `1e20`, `1.5e-7`; never `1e+20`."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, point = _shortest_digits(abs(value))  # value = 0.<digits> * 10**point
    length = len(digits)
    if length <= point <= 16:
        return f"{sign}{digits}{'0' * (point - length)}.0"
    if 0 < point <= 16:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if -5 < point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    mantissa = digits if length == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{sign}{mantissa}e{point - 1}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest round-trip digits of a positive float (as repr finds them) and the point's place."""
    mantissa, _, exponent = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    leading_zeros = len(whole + fraction) - len(digits)
    point = len(whole) - leading_zeros + int(exponent or 0)
    return digits.rstrip("0") or "0", point


# --- tables ------------------------------------------------------------------


def display_width(text: str) -> int:
    """Terminal cells `text` takes: wide and fullwidth characters (CJK) two, combining marks none."""
    import unicodedata

    if text.isascii():
        return len(text)
    width = 0
    for char in text:
        if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def layout(header: Sequence[str], rows: Sequence[Sequence[str]], *, cells: bool = False) -> str:
    """Header, a rule of `-` per column, rows; cells padded, joined by two spaces, right-trimmed.

    Widths count characters, as the original's table presenter does (so rendered tables match
    it byte for byte); with `cells`, they count terminal cells, for output read on a screen.
    """
    measure = display_width if cells else len
    widths = [measure(name) for name in header]
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], measure(cell))

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell + " " * (widths[i] - measure(cell)) for i, cell in enumerate(cells)
        ).rstrip()

    return "\n".join(
        [line(header), line(["-" * width for width in widths]), *(line(row) for row in rows)]
    )


def _card_rows(items: Sequence[Any]) -> list[list[str]]:
    cards = [item.card if isinstance(item, Hit) else item for item in items]
    return [[card.name, card.kind, card.title] for card in cards]


def records_of(value: Any) -> list[dict[str, Any]] | None:
    """The maps of a List or Set whose elements are all Data maps (records), else None."""
    if not isinstance(value, ListValue | SetValue) or not value.items:
        return None
    trees = [item.tree if isinstance(item, Data) else None for item in value.items]
    if not all(isinstance(tree, dict) for tree in trees):
        return None
    return cast(list[dict[str, Any]], trees)


def record_columns(records: Sequence[dict[str, Any]]) -> list[str]:
    """Every key of the records, in the order they are first seen."""
    return list(dict.fromkeys(key for tree in records for key in tree))


def columns_table(records: Sequence[dict[str, Any]]) -> str:
    """A table of records: one column per key (first seen first), a blank where a record has
    no value; strings unquoted, lists joined by `, `."""
    header = record_columns(records)
    rows = [[_cell(tree.get(key)) for key in header] for tree in records]
    return layout(header, rows, cells=True)


def _cell(tree: Any) -> str:
    if tree is None:
        return ""
    if isinstance(tree, str):
        return tree
    if isinstance(tree, list):
        return ", ".join(_cell(item) for item in tree)
    return display_data(tree)


def table(value: Any) -> str:
    """The `table` presenter's layout (section 8.3)."""
    if isinstance(value, Ranking):
        rows = [
            [str(rank), format_score(hit.score), hit.card.name, hit.card.title]
            for rank, hit in enumerate(value.hits, start=1)
        ]
        return layout(["rank", "score", "card", "title"], rows)
    if is_graph(value):
        nodes = layout(["node", "presence"], [[n, value.presence[n].label()] for n in value.nodes])
        edges = layout(
            ["source", "target", "data"],
            [[e.source, e.target, display_data(e.data)] for e in value.induced_edges],
        )
        return nodes + "\n" + edges
    if isinstance(value, ListValue | SetValue):
        items = value.items
        if items and all(isinstance(item, Card | Hit) for item in items):
            return layout(["card", "kind", "title"], _card_rows(items))
        if items and all(isinstance(item, Group) for item in items):
            rows = [[display(group.key), display(group.items)] for group in items]
            return layout(["key", "items"], rows)
        return layout(["value"], [[display(item)] for item in items])
    if isinstance(value, Data) and isinstance(value.tree, dict):
        tree = value.tree
        return layout(["key", "value"], [[key, display_data(tree[key])] for key in sorted(tree)])
    if isinstance(value, MapValue):
        return layout(["key", "value"], [[display(k), display(v)] for k, v in value.items()])
    if isinstance(value, Presentation):
        return value.text
    if is_context(value):
        header, rows = value.table_rows()
        return layout(header, rows)
    return layout(["value"], [[display(value)]])


# --- ordering keys (section 8.4) ---------------------------------------------


def order_key(value: Any) -> tuple[int, float, str] | None:
    """(kind, number, text): numbers compare numerically, dates as dates, everything else by text."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return (0, float(value), str(value))
    if isinstance(value, str):
        return (1, 0.0, value)
    if isinstance(value, Card):
        return (1, 0.0, value.name)
    if isinstance(value, Hit):
        return (0, -value.score, value.card.name)
    if isinstance(value, Date):
        return (2, 0.0, value.iso())
    return None


# Integers in this range are exact as floats (their order keys order as the integers do).
_EXACT_LOW, _EXACT_HIGH = -(2**53), 2**53


def compare_values(a: Any, b: Any) -> int:
    """-1, 0 or 1; values without a key compare equal, so sorting stays stable."""
    if (
        type(a) is int
        and type(b) is int
        and _EXACT_LOW <= a <= _EXACT_HIGH
        and _EXACT_LOW <= b <= _EXACT_HIGH
    ):  # their floats are exact: the keys below order as the integers do
        return (a > b) - (a < b)
    ka, kb = order_key(a), order_key(b)
    if ka is None or kb is None:
        return 0
    if ka[0] == 0 and kb[0] == 0:
        if ka[1] != kb[1]:
            return -1 if ka[1] < kb[1] else 1
        return _compare_text(ka[2], kb[2])
    if ka[0] == 2 and kb[0] == 2:
        from hql.dates import compare

        return compare(a, b) or _compare_text(ka[2], kb[2])
    return _compare_text(ka[2], kb[2])


def compare_first(a: tuple[Any, Any], b: tuple[Any, Any]) -> int:
    """Compare (key, value) pairs by their keys: sorting by a computed key."""
    return compare_values(a[0], b[0])


def _compare_text(a: str, b: str) -> int:
    ab, bb = a.encode("utf-8"), b.encode("utf-8")
    return (ab > bb) - (ab < bb)


# --- equality ----------------------------------------------------------------


def as_data(value: Any) -> Any:
    """A comparable, type-tagged tree: `1 == 1.0` is false, cards compare by path."""
    if value is ABSENT or value is UNIT:
        return ("empty",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, Data):
        return _tag_tree(value.tree)
    if isinstance(value, Date):
        return ("date", value.iso())
    if isinstance(value, Task | Concept):
        return _tag_tree(value.tree())
    if isinstance(value, Card):
        return ("card", value.path)
    if isinstance(value, Edge):
        return ("edge", value.source, value.target)
    if isinstance(value, Hit):
        return ("hit", value.card.path, value.score)
    if isinstance(value, ListValue | Ranking):
        return ("list", tuple(as_data(item) for item in value))
    if isinstance(value, SetValue):
        return ("list", tuple(sorted((as_data(item) for item in value), key=repr)))
    if isinstance(value, MapValue):
        return ("map", tuple((as_data(k), as_data(v)) for k, v in value.items()))
    if isinstance(value, Ordering):
        return ("str", value.value)
    if isinstance(value, Group):  # two groups are equal when their keys are (HQL-0004)
        return ("group", as_data(value.key))
    return ("other", id(value))


def _tag_tree(tree: Any) -> Any:
    if isinstance(tree, dict):
        return ("map", tuple((("str", key), _tag_tree(tree[key])) for key in sorted(tree)))
    if isinstance(tree, list):
        return ("list", tuple(_tag_tree(item) for item in tree))
    if tree is None:
        return ("empty",)
    return as_data(tree)


def values_equal(a: Any, b: Any) -> bool:
    return bool(as_data(a) == as_data(b))


Formatter = Callable[[Any], str]


def _hit_section(hit: Hit) -> dict[str, Any]:
    """The section a semantic hit matched (heading path, line span), when the index has sections."""
    section = hit.detail.get("section") if hit.detail else None
    return {"section": section} if section else {}
