"""Where a key is written in a TOML text, so a report about `hql.toml` can name its line.

tomllib gives values, not positions. `key_line(text, "vault.libraries[2].scope")` finds
the line of that key: table headers (`[vault]`, `[[vault.libraries]]`), assignments
(`libraries = [...]`, dotted keys) and, inside a value, the n-th element of an array
(counted from 1, as the reports count) and a key of an inline table. A key that cannot be
found gives the line of the nearest enclosing one that can (the `libraries = [` line for
an entry that is not there), or None.

The text is first masked: comments become spaces, and every string's characters that
could look like structure (brackets, braces, commas, `=`, `#`, quotes) become `_`,
newlines kept, so the scan below reads only structure and counts lines exactly.
"""

from __future__ import annotations

import re

Path = tuple[str | int, ...]

_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_HEADER = re.compile(r"[ \t]*(\[\[?)[ \t]*([^\]\n]+?)[ \t]*\]\]?[ \t]*(?:$|\n)")
_ASSIGN = re.compile(r"[ \t]*([A-Za-z0-9_\-\"'. \t]+?)[ \t]*=")
_STRUCTURE = set("[]{},=#\"'")


def key_path(key: str) -> Path:
    """`vault.libraries[2].scope` as ("vault", "libraries", 2, "scope")."""
    return tuple(int(index) if index else name.strip() for name, index in _PART.findall(key))


def key_line(text: str, key: str) -> int | None:
    """The 1-based line where `key` is written in `text` (see the module)."""
    target = key_path(key)
    masked = mask(text)
    best: tuple[int, int] | None = None  # (parts matched, offset)
    for path, offset, value_at in _statements(masked):
        if target[: len(path)] != path:
            continue
        matched, at = len(path), offset
        if value_at is not None and len(path) < len(target):
            matched, at = _descend(masked, value_at, target[len(path) :], matched, at)
        if best is None or matched > best[0]:
            best = (matched, at)
    if best is None:
        return None
    return masked.count("\n", 0, best[1]) + 1


def mask(text: str) -> str:
    """The text with comments blanked and the structure-like characters of strings made `_`."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == "#":
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)  # a comment is not there at all
            i = end
        elif text.startswith(('"""', "'''"), i):
            quote = text[i : i + 3]
            end = _closing(text, i + 3, quote, escapes=quote == '"""')
            _blank(out, i + 3, end)
            i = end + 3
        elif char in "\"'":
            end = _closing(text, i + 1, char, escapes=char == '"', line=True)
            _blank(out, i + 1, end)
            i = end + 1
        else:
            i += 1
    return "".join(out)


def _closing(text: str, start: int, quote: str, escapes: bool, line: bool = False) -> int:
    """Where the string opened before `start` closes (the end of its line, or of the text,
    when it does not)."""
    i = start
    while i < len(text):
        if escapes and text[i] == "\\":
            i += 2
            continue
        if line and text[i] == "\n":
            return i
        if text.startswith(quote, i):
            return i
        i += 1
    return len(text)


def _blank(out: list[str], start: int, end: int) -> None:
    for at in range(start, min(end, len(out))):
        if out[at] in _STRUCTURE:
            out[at] = "_"


def _statements(masked: str) -> list[tuple[Path, int, int | None]]:
    """Each header and top-level assignment: its full path, where it starts, and where its
    value starts (None for a header)."""
    found: list[tuple[Path, int, int | None]] = []
    table: Path = ()
    arrays: dict[Path, int] = {}
    offset = 0
    depth = 0  # inside a value that spans lines
    for line in masked.splitlines(keepends=True):
        start = offset
        offset += len(line)
        if depth > 0:
            depth += _balance(line)
            continue
        header = _HEADER.match(line)
        if header is not None:
            path = key_path(_unquoted(header.group(2)))
            if header.group(1) == "[[":
                arrays[path] = arrays.get(path, 0) + 1
                path = (*path, arrays[path])
            table = path
            found.append((path, start, None))
            continue
        assign = _ASSIGN.match(line)
        if assign is not None:
            path = (*table, *key_path(_unquoted(assign.group(1))))
            found.append((path, start, start + assign.end()))
            depth = max(0, _balance(line[assign.end() :]))
    return found


def _unquoted(key: str) -> str:
    return key.replace('"', "").replace("'", "")


def _balance(text: str) -> int:
    return sum(text.count(o) - text.count(c) for o, c in ("[]", "{}"))


def _descend(masked: str, at: int, rest: Path, matched: int, best: int) -> tuple[int, int]:
    """Follow `rest` into the value at `at`: (how many parts were found, where the last is)."""
    for part in rest:
        at = _skip_space(masked, at)
        if isinstance(part, int):
            found = _element(masked, at, part) if masked.startswith("[", at) else None
        else:
            found = _inline_key(masked, at, part) if masked.startswith("{", at) else None
        if found is None:
            break
        matched, best, at = matched + 1, found[0], found[1]
    return matched, best


def _skip_space(masked: str, at: int) -> int:
    while at < len(masked) and masked[at] in " \t\r\n":
        at += 1
    return at


def _items(masked: str, at: int) -> list[int]:
    """Where each item of the array or inline table opening at `at` starts."""
    starts = []
    depth, i = 0, at + 1
    expecting = True
    while i < len(masked):
        char = masked[i]
        if expecting and char not in " \t\r\n":
            if char in "]}":
                break
            starts.append(i)
            expecting = False
        if char in "[{":
            depth += 1
        elif char in "]}":
            if depth == 0:
                break
            depth -= 1
        elif char == "," and depth == 0:
            expecting = True
        i += 1
    return starts


def _element(masked: str, at: int, number: int) -> tuple[int, int] | None:
    starts = _items(masked, at)
    if not 1 <= number <= len(starts):
        return None
    return starts[number - 1], starts[number - 1]


def _inline_key(masked: str, at: int, name: str) -> tuple[int, int] | None:
    for start in _items(masked, at):
        assign = _ASSIGN.match(masked, start)
        if assign is not None and key_path(_unquoted(assign.group(1))) == (name,):
            return start, assign.end()
    return None


__all__ = ["key_line", "key_path", "mask"]
