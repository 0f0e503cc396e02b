"""An independent evaluation of Obsidian Bases filters over a vault's files.

Shares no code with hql/: a Bases expression is rewritten into Python
(`&&` -> `and`, `!x` -> `not x`, `if(` -> `_if(`, `.filter(e)` -> a lambda
over `value`) and evaluated with Python's own parser over small classes that
behave as Bases documents its values (Bases syntax, Functions). Notes are
read with tests/obsidian_resolver.py. `rows(root, base_path, this=None)`
gives, per view, the vault-relative paths of the notes the view keeps, in
the view's sort order (then path order) and within its limit.

    python tests/bases_evaluator.py VAULT FILE.base
"""

from __future__ import annotations

import ast
import datetime
import re
import sys
from functools import cmp_to_key
from pathlib import Path
from typing import Any

import yaml
from obsidian_resolver import (
    Resolver,
    aliases_of,
    notes_of,
    split_front_matter,
    strip_code,
    targets_of,
)

_TAG = re.compile(r"(?:^|\s)#([\w/\-]*[A-Za-z_\-/][\w/\-]*)")
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")


def _python(expression: str) -> str:
    """The expression in Python's syntax (strings left as they are)."""
    out, last = [], 0
    for match in _STRING.finditer(expression):
        out.append(_rewrite(expression[last : match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(_rewrite(expression[last:]))
    return "".join(out)


def _rewrite(code: str) -> str:
    code = code.replace("&&", " and ").replace("||", " or ")
    code = re.sub(r"!(?!=)", " not ", code)
    code = re.sub(r"\btrue\b", "True", code)
    code = re.sub(r"\bfalse\b", "False", code)
    code = re.sub(r"\bnull\b", "None", code)
    return re.sub(r"\bif\s*\(", "_if(", code)


class _Lambdas(ast.NodeTransformer):
    """`x.filter(e)` and `x.map(e)` get `lambda value: e`; every other name is looked up in
    `_env` (so lambdas see the same names as the expression around them)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("filter", "map"):
            arguments = ast.arguments(
                posonlyargs=[], args=[ast.arg("value")], kwonlyargs=[], kw_defaults=[], defaults=[]
            )
            node.args = [ast.Lambda(arguments, arg) for arg in node.args]
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == "value" or not isinstance(node.ctx, ast.Load):
            return node
        return ast.Subscript(ast.Name("_env", ast.Load()), ast.Constant(node.id), ast.Load())


def compile_expression(expression: str) -> Any:
    tree = ast.parse(_python(str(expression)).strip(), mode="eval")
    tree = ast.fix_missing_locations(_Lambdas().visit(tree))
    return compile(tree, "<base>", "eval")


# --- values ------------------------------------------------------------------------


def plain(value: Any) -> Any:
    return value.value if isinstance(value, V) else value


def wrap(value: Any) -> Any:
    if isinstance(value, V | File | Link):
        return value
    if isinstance(value, datetime.datetime):
        return V(value.strftime("%Y-%m-%dT%H:%M:%S"))
    if isinstance(value, datetime.date):
        return V(value.isoformat())
    if isinstance(value, str):
        found = re.fullmatch(r"\s*\[\[([^\]|#]*)[^\]]*\]\]\s*", value)
        if found:
            return Link(found.group(1).strip())
    if isinstance(value, list):
        return V([wrap(item) for item in value])
    return V(value)


def truthy(value: Any) -> bool:
    value = plain(value)
    if isinstance(value, File | Link):
        return True
    if isinstance(value, list | str | dict):
        return len(value) > 0
    return bool(value)


def equal(a: Any, b: Any) -> bool:
    a, b = wrap(a), wrap(b)
    if isinstance(a, Link | File) and isinstance(b, Link | File):
        return a.key() == b.key()
    if isinstance(a, Link | File) or isinstance(b, Link | File):
        return False
    x, y = plain(a), plain(b)
    if isinstance(x, bool) or isinstance(y, bool):
        return x is y
    return bool(x == y)


class V:
    """A Bases value: text, number, Boolean, list, map or null."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __bool__(self) -> bool:
        return truthy(self)

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return equal(self, other)

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return not equal(self, other)

    def _order(self, other: Any, test: Any) -> bool:
        x, y = plain(self), plain(wrap(other))
        if x is None or y is None or isinstance(y, Link | File):
            return False  # a link is no more or less than a date, a number or a text
        if isinstance(x, int | float) and isinstance(y, int | float):
            return bool(test(x, y))
        if isinstance(x, int | float) or isinstance(y, int | float):
            return False
        return bool(test(str(x), str(y)))

    def __lt__(self, other: Any) -> bool:
        return self._order(other, lambda x, y: x < y)

    def __le__(self, other: Any) -> bool:
        return self._order(other, lambda x, y: x <= y)

    def __gt__(self, other: Any) -> bool:
        return self._order(other, lambda x, y: x > y)

    def __ge__(self, other: Any) -> bool:
        return self._order(other, lambda x, y: x >= y)

    def __getitem__(self, index: Any) -> Any:
        items, at = self.value, plain(index)
        if isinstance(items, list | str) and isinstance(at, int) and -len(items) <= at < len(items):
            return wrap(items[at])
        return V(None)

    def __getattr__(self, name: str) -> Any:
        if name == "length":
            return V(len(self.value)) if isinstance(self.value, list | str) else V(None)
        if name.startswith("_"):
            raise AttributeError(name)
        if isinstance(self.value, dict):
            return wrap(self.value.get(name))
        return V(None)  # a field of nothing is nothing

    def _items(self) -> list[Any]:
        return self.value if isinstance(self.value, list) else []

    def contains(self, *wanted: Any) -> V:
        return self.containsAny(*wanted)

    def containsAny(self, *wanted: Any) -> V:  # noqa: N802 - Bases' name
        return V(any(self._has(item) for item in wanted))

    def containsAll(self, *wanted: Any) -> V:  # noqa: N802 - Bases' name
        return V(all(self._has(item) for item in wanted))

    def _has(self, item: Any) -> bool:
        if isinstance(self.value, list):
            return any(equal(element, item) for element in self.value)
        if isinstance(self.value, str):
            other = plain(wrap(item))
            return isinstance(other, str) and other in self.value
        return False

    def isEmpty(self) -> V:  # noqa: N802
        return V(self.value is None or self.value in ("", [], {}))

    def toString(self) -> V:  # noqa: N802
        if self.value is None:
            return V("")
        if isinstance(self.value, list):
            return V(", ".join(str(plain(item.toString())) for item in self.value))
        return V(str(self.value).lower() if isinstance(self.value, bool) else str(self.value))

    def lower(self) -> V:
        return V(str(self.value).lower()) if self.value is not None else V(None)

    def startsWith(self, prefix: Any) -> V:  # noqa: N802
        return V(isinstance(self.value, str) and self.value.startswith(str(plain(prefix))))

    def unique(self) -> V:
        kept: list[Any] = []
        for item in self._items():
            if not any(equal(item, other) for other in kept):
                kept.append(item)
        return V(kept)

    def filter(self, test: Any) -> V:
        return V([item for item in self._items() if truthy(test(item))])

    def map(self, change: Any) -> V:
        return V([wrap(change(item)) for item in self._items()])

    def __add__(self, other: Any) -> V:
        x, y = plain(self), plain(wrap(other))
        if _moment(x) is not None and _duration(y) is not None:
            return V(_shifted(_moment(x), _duration(y), 1))
        if isinstance(x, int | float) and isinstance(y, int | float):
            return V(x + y)
        return V(f"{'' if x is None else x}{'' if y is None else y}")

    def __mul__(self, other: Any) -> V:
        x, y = plain(self), plain(wrap(other))
        if isinstance(x, int | float) and isinstance(y, int | float):
            return V(x * y)
        return V(None)

    def __truediv__(self, other: Any) -> V:
        x, y = plain(self), plain(wrap(other))
        if isinstance(x, int | float) and isinstance(y, int | float) and y != 0:
            return V(x / y)
        return V(None)

    def toFixed(self, digits: Any) -> V:  # noqa: N802
        """JavaScript's `toFixed`: the nearest text with that many decimals, a tie away from
        zero (so 1.125 gives "1.13", where Python's format gives "1.12")."""
        from decimal import ROUND_HALF_UP, Decimal

        places = plain(wrap(digits))
        if not isinstance(self.value, int | float) or isinstance(self.value, bool):
            return V(None)
        exact = Decimal(self.value).quantize(Decimal(1).scaleb(-int(places)), ROUND_HALF_UP)
        return V(f"{exact:.{int(places)}f}")

    def __sub__(self, other: Any) -> V:
        x, y = plain(self), plain(wrap(other))
        if _moment(x) is not None and _duration(y) is not None:
            return V(_shifted(_moment(x), _duration(y), -1))
        moments = [_moment(x), _moment(y)]
        if all(moment is not None for moment in moments):
            seconds = (moments[0] - moments[1]).total_seconds()
            return V(
                {
                    "days": seconds / 86400,
                    "years": seconds / (365.2425 * 86400),
                    "months": seconds / (30.436875 * 86400),
                }
            )
        if isinstance(x, int | float) and isinstance(y, int | float):
            return V(x - y)
        return V(None)

    def floor(self) -> V:
        import math

        return V(math.floor(self.value)) if isinstance(self.value, int | float) else V(None)

    def round(self) -> V:
        import math

        return V(math.floor(self.value + 0.5)) if isinstance(self.value, int | float) else V(None)


_UNITS = {
    "y": "years", "year": "years", "years": "years",
    "M": "months", "month": "months", "months": "months",
    "w": "weeks", "week": "weeks", "weeks": "weeks",
    "d": "days", "day": "days", "days": "days",
    "h": "hours", "hour": "hours", "hours": "hours",
    "m": "minutes", "minute": "minutes", "minutes": "minutes",
    "s": "seconds", "second": "seconds", "seconds": "seconds",
}  # fmt: skip


def _duration(value: Any) -> tuple[int, str] | None:
    """`"60d"`, `"1M"`, `"2 weeks"`: an amount and a unit, as Bases' date arithmetic reads."""
    if not isinstance(value, str):
        return None
    found = re.fullmatch(r"\s*(-?\d+)\s*([A-Za-z]+)\s*", value)
    if found is None or found.group(2) not in _UNITS:
        return None
    return int(found.group(1)), _UNITS[found.group(2)]


def _shifted(moment: Any, duration: Any, sign: int) -> str:
    amount, unit = duration
    amount *= sign
    if unit in ("years", "months"):
        months = moment.month - 1 + amount * (12 if unit == "years" else 1)
        first = moment.replace(year=moment.year + months // 12, month=months % 12 + 1, day=1)
        moved = first + datetime.timedelta(days=moment.day - 1)  # JavaScript's overflow
    else:
        moved = moment + datetime.timedelta(**{unit: amount})
    return moved.strftime("%Y-%m-%dT%H:%M:%S")


def _moment(value: Any) -> datetime.datetime | None:
    if isinstance(value, str) and re.match(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return datetime.datetime.fromisoformat(value).replace(tzinfo=None)
        except ValueError:
            return None
    return None


class Vault:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.notes = notes_of(root)
        self.texts = {
            n: (root / n).read_text(encoding="utf-8", errors="replace") for n in self.notes
        }
        self.resolver = Resolver(self.notes, {n: aliases_of(t) for n, t in self.texts.items()})
        self.links: dict[str, list[str]] = {}
        for note, text in self.texts.items():
            found: list[str] = []
            for target in targets_of(text):
                resolved = self.resolver.resolve(note, target)
                if resolved is not None and resolved != note and resolved not in found:
                    found.append(resolved)
            self.links[note] = found
        self.backlinks = {
            n: sorted(s for s, ts in self.links.items() if n in ts) for n in self.notes
        }

    def header(self, note: str) -> dict[str, Any]:
        header, _ = split_front_matter(self.texts[note])
        return header if isinstance(header, dict) else {}

    def tags(self, note: str) -> list[str]:
        header = self.header(note)
        written = header.get("tags", header.get("tag")) or []
        if isinstance(written, str):
            written = [part.strip() for part in written.split(",")]
        _, body = split_front_matter(self.texts[note])
        inline = _TAG.findall(strip_code(body))
        seen, kept = set(), []
        for tag in [str(t).lstrip("#") for t in written] + inline:
            if tag and tag.casefold() not in seen:
                seen.add(tag.casefold())
                kept.append(tag)
        return kept


class Link:
    def __init__(self, target: str, vault: Vault | None = None) -> None:
        self.target = target
        self.vault = vault or CURRENT[0]

    def key(self) -> str:
        return self.vault.resolver.resolve("", self.target) or self.target.casefold()

    def contains(self, *wanted: Any) -> V:
        """Another link: the same note; a text: part of the link's path."""
        found = []
        for item in wanted:
            item = wrap(item)
            if isinstance(item, Link | File):
                found.append(equal(self, item))
            else:
                found.append(str(plain(item)) in self.target)
        return V(any(found))

    containsAny = contains  # noqa: N815 - Bases' name

    def toString(self) -> V:  # noqa: N802
        return V(f"[[{self.target}]]")

    def isEmpty(self) -> V:  # noqa: N802
        return V(False)

    def asFile(self) -> Any:  # noqa: N802
        note = self.vault.resolver.resolve("", self.target)
        return File(self.vault, note) if note is not None else V(None)

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return equal(self, other)


class File:
    """A note of the vault (`file`), or the `.base` file itself as `this`."""

    def __init__(self, vault: Vault, note: str) -> None:
        self.vault, self.note = vault, note

    def key(self) -> str:
        return self.note

    @property
    def file(self) -> File:
        return self

    @property
    def name(self) -> V:
        return V(Path(self.note).stem)

    @property
    def path(self) -> V:
        return V(self.note)

    @property
    def folder(self) -> V:
        parent = str(Path(self.note).parent)
        return V("" if parent == "." else parent)

    @property
    def ext(self) -> V:
        return V(Path(self.note).suffix.lstrip("."))

    @property
    def links(self) -> V:
        return V([File(self.vault, n) for n in self.vault.links.get(self.note, [])])

    @property
    def backlinks(self) -> V:
        return V([File(self.vault, n) for n in self.vault.backlinks.get(self.note, [])])

    @property
    def tags(self) -> V:
        return V(self.vault.tags(self.note) if self.note in self.vault.texts else [])

    @property
    def embeds(self) -> V:
        if self.note not in self.vault.texts:
            return V([])
        _, body = split_front_matter(self.vault.texts[self.note])
        found = re.findall(r"!\[\[([^\]|#]+)", strip_code(body))
        return V([Link(target.strip(), self.vault) for target in found])

    @property
    def properties(self) -> V:
        return V(self.vault.header(self.note) if self.note in self.vault.texts else {})

    def __getattr__(self, name: str) -> Any:  # `this.related`: a property of the note
        if name.startswith("_"):
            raise AttributeError(name)
        return wrap(
            self.vault.header(self.note).get(name) if self.note in self.vault.texts else None
        )

    def hasTag(self, *tags: Any) -> V:  # noqa: N802
        mine = [tag.casefold() for tag in plain(self.tags)]
        wanted = [str(plain(tag)).lstrip("#").casefold() for tag in tags]
        return V(any(t == w or t.startswith(w + "/") for t in mine for w in wanted))

    def inFolder(self, folder: Any) -> V:  # noqa: N802
        name = str(plain(folder)).strip("/")
        mine = str(plain(self.folder))
        return V(mine == name or mine.startswith(name + "/"))

    def hasLink(self, other: Any) -> V:  # noqa: N802
        other = wrap(other)
        if isinstance(other, File | Link):
            return V(other.key() in self.vault.links.get(self.note, []))
        target = self.vault.resolver.resolve(self.note, str(plain(other)))
        return V(target in self.vault.links.get(self.note, []))

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return equal(self, other)

    def __bool__(self) -> bool:
        return True


class Note:
    """`note.x`, or a bare property name."""

    def __init__(self, vault: Vault, note: str | None) -> None:
        self.values = vault.header(note) if note in vault.texts else {}

    def __getattr__(self, name: str) -> Any:
        return wrap(self.values.get(name))


CURRENT: list[Vault] = []


def _functions(vault: Vault) -> dict[str, Any]:
    def link(target: Any) -> Any:
        return Link(str(plain(target)).removesuffix(".md"), vault)

    def listed(value: Any) -> V:
        value = wrap(value)
        if isinstance(value, V) and isinstance(value.value, list):
            return value
        if isinstance(value, V) and value.value is None:
            return V([])
        return V([value])

    def choose(test: Any, yes: Any, no: Any = None) -> Any:
        return wrap(yes) if truthy(test) else wrap(no)

    def now() -> V:
        return V(datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S"))

    def empty(value: Any) -> V:
        return V(not truthy(value))

    def number(value: Any) -> V:
        value = plain(wrap(value))
        if isinstance(value, bool):
            return V(int(value))
        if isinstance(value, int | float):
            return V(value)
        try:
            found = float(str(value))
        except ValueError:
            return V(None)
        return V(int(found) if found.is_integer() else found)

    return {
        "link": link,
        "list": listed,
        "_if": choose,
        "now": now,
        "empty": empty,
        "number": number,
    }


def evaluate(code: Any, vault: Vault, note: str, this: File | V, formulas: dict[str, Any]) -> Any:
    class Names(dict):  # type: ignore[type-arg]
        def __missing__(self, name: str) -> Any:
            return wrap(vault.header(note).get(name))

    names = Names(_functions(vault))
    names.update(file=File(vault, note), note=Note(vault, note), this=this)

    class Formula:
        def __getattr__(self, name: str) -> Any:
            return wrap(evaluate(formulas[name], vault, note, this, formulas))

    names["formula"] = Formula()
    return eval(code, {"__builtins__": {}, "_env": names})  # noqa: S307 - our own rewriting


def keeps(filters: Any, vault: Vault, note: str, this: Any, formulas: dict[str, Any]) -> bool:
    if filters is None:
        return True
    if isinstance(filters, str):
        return truthy(evaluate(compile_expression(filters), vault, note, this, formulas))
    ((kind, items),) = filters.items()
    results = [keeps(item, vault, note, this, formulas) for item in items]
    if kind == "and":
        return all(results)
    if kind == "or":
        return any(results)
    return not any(results)


def rows(root: Path, base_path: Path, this: str | None = None) -> dict[str, list[str]]:
    vault = Vault(root)
    CURRENT[:] = [vault]
    base = yaml.safe_load(base_path.read_text(encoding="utf-8")) or {}
    formulas = {
        name: compile_expression(str(text)) for name, text in (base.get("formulas") or {}).items()
    }
    if this is not None:
        this_file: Any = File(vault, vault.resolver.resolve("", this))
    else:
        relative = base_path.resolve().relative_to(root.resolve()).as_posix()
        this_file = File(vault, relative)  # not a note: it has no links, tags or properties
    found: dict[str, list[str]] = {}
    for view in base.get("views") or [{"name": "Table"}]:
        kept = [
            note
            for note in vault.notes
            if keeps(base.get("filters"), vault, note, this_file, formulas)
            and keeps(view.get("filters"), vault, note, this_file, formulas)
        ]
        entries = ([view["groupBy"]] if view.get("groupBy") else []) + list(view.get("sort") or [])
        for entry in reversed(entries):  # a stable sort per key, the last key first
            prop = entry.get("property", entry.get("column"))
            code = compile_expression(prop)
            down = str(entry.get("direction", "ASC")).upper() == "DESC"
            keyed = [
                (plain(wrap(evaluate(code, vault, note, this_file, formulas))), note)
                for note in kept
            ]
            present = [pair for pair in keyed if _sortable(pair[0])]
            absent = [note for value, note in keyed if not _sortable(value)]
            present.sort(key=cmp_to_key(lambda a, b: _compare(a[0], b[0])), reverse=down)
            kept = [note for _, note in present] + absent
        limit = view.get("limit")
        found[str(view.get("name"))] = kept[:limit] if isinstance(limit, int) else kept
    return found


def _sortable(value: Any) -> bool:
    return (
        isinstance(value, int | float | str)
        and not isinstance(value, bool)
        or isinstance(value, bool)
    )


def _compare(a: Any, b: Any) -> int:
    def rank(value: Any) -> tuple[int, Any]:
        if isinstance(value, bool):
            return (2, value)
        if isinstance(value, int | float):
            return (0, value)
        return (1, value)

    x, y = rank(a), rank(b)
    return (x > y) - (x < y)


if __name__ == "__main__":
    for name, kept in rows(Path(sys.argv[1]), Path(sys.argv[2])).items():
        print(f"{name}: {len(kept)}")
        for note in kept:
            print(f"  {note}")
