"""Editing a front-matter block without rewriting what the person wrote.

ruamel.yaml (its round-trip loader) reads the block and says on which line each
top-level key starts. An edit rewrites only the lines of the key it changes: the
new value is rendered by ruamel.yaml in the style the old one had (its quotes,
flow or block, the indent of its list items, a comment at the end of its line);
every other line, comment and blank line stays byte for byte. A re-dump of the
whole block, even by a round-trip library, re-indents lists and drops some
spacing: bench/front_matter.py measures both on real front matter.

A block whose top level is written in flow style (`{a: 1}`) has no lines to
splice; it is dumped whole by ruamel.yaml (which keeps its comments).
"""

from __future__ import annotations

import datetime
import io
from typing import Any

from hql import messages


class BrokenFrontMatter(ValueError):
    """The block cannot be read as a mapping; `line` is 1-based within the block, or None."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


def _yaml(sequence_offset: int = 2) -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1 << 16  # never fold a long value onto a second line
    yaml.indent(mapping=2, sequence=sequence_offset + 2, offset=sequence_offset)
    return yaml


class FrontMatter:
    """One block (the text between the `---` lines, `\\n` line ends), edited key by key."""

    def __init__(self, lines: list[str], data: Any) -> None:
        self._lines = lines
        self._data = data
        self._flow = bool(getattr(data, "fa", None) and data.fa.flow_style())

    @classmethod
    def parse(cls, block: str) -> FrontMatter:
        from ruamel.yaml.error import MarkedYAMLError, YAMLError

        try:
            data = _yaml().load(block) if block.strip() else None
        except MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            line = mark.line + 1 if mark is not None else None
            raise BrokenFrontMatter(str(error.problem or error.context or error), line) from None
        except (YAMLError, ValueError, TypeError) as error:
            raise BrokenFrontMatter(str(error)) from None
        if data is None:
            from ruamel.yaml.comments import CommentedMap

            data = CommentedMap()
        if not isinstance(data, dict):
            raise BrokenFrontMatter(messages.note_front_matter_not_mapping(), 1)
        lines = block.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        return cls(lines, data)

    def text(self) -> str:
        if self._flow:
            out = io.StringIO()
            _yaml().dump(self._data, out)
            return out.getvalue()
        return "".join(self._lines)

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def keys(self) -> list[str]:
        return [str(key) for key in self._data]

    def set(self, key: str, value: Any) -> None:
        """Give `key` this value (JSON-like: str, int, float, bool, None, date, list, dict)."""
        if self._flow:
            self._data[key] = _styled(value, self._data.get(key))
            return
        if key in self._data:
            start, end = self._span(key)
            old = self._data[key]
            rendered = self._render(key, value, old, self._lines[start:end])
            rendered = self._keep_line_comment(key, start, end, rendered)
            self._lines[start:end] = rendered
            self._reload()
            return
        self._lines.extend(self._render(key, value, None, []))
        self._reload()

    def set_inside(self, parent: str, key: str, value: Any) -> None:
        """`parent.key` given `value`, in the mapping `parent` (rewritten in its own style)."""
        old = self._data.get(parent)
        merged = {str(name): item for name, item in old.items()} if isinstance(old, dict) else {}
        merged[key] = value
        self.set(parent, merged)

    def delete_inside(self, parent: str, key: str) -> None:
        old = self._data.get(parent)
        if isinstance(old, dict) and key in old:
            self.set(parent, {str(name): item for name, item in old.items() if name != key})

    def delete(self, key: str) -> None:
        if key not in self._data:
            return
        if self._flow:
            del self._data[key]
            return
        start, end = self._span(key)
        del self._lines[start:end]
        self._reload()

    # --- where a key's lines are -------------------------------------------------

    def _span(self, key: str) -> tuple[int, int]:
        """The key's lines: from its own to the last line of its value (comments and blank
        lines before the next key stay where they are)."""
        starts = sorted(self._data.lc.key(name)[0] for name in self._data)
        start = self._data.lc.key(key)[0]
        later = [line for line in starts if line > start]
        end = later[0] if later else len(self._lines)
        while end - 1 > start and _between(self._lines[end - 1]):
            end -= 1
        return start, end

    def _reload(self) -> None:
        """Read the spliced lines again, so the next edit knows where every key now is."""
        self._data = FrontMatter.parse("".join(self._lines))._data

    def _keep_line_comment(self, key: str, start: int, end: int, rendered: list[str]) -> list[str]:
        """A comment at the end of a one-line value stays at the end of the new value's line."""
        if end - start != 1 or len(rendered) != 1:
            return rendered
        comment = self._data.ca.items.get(key)
        token = comment[2] if comment and len(comment) > 2 else None
        if token is None or token.start_mark.line != start:
            return rendered
        original = self._lines[start]
        column = token.start_mark.column
        tail = original[column:].rstrip("\n")
        if not tail.lstrip().startswith("#"):
            return rendered
        gap = original[:column]
        spaces = len(gap) - len(gap.rstrip())
        return [rendered[0].rstrip("\n") + " " * max(spaces, 1) + tail.lstrip() + "\n"]

    def _render(self, key: str, value: Any, old: Any, old_lines: list[str]) -> list[str]:
        from ruamel.yaml.comments import CommentedMap

        offset = _list_offset(old_lines) if old_lines else _list_offset(self._lines)
        out = io.StringIO()
        single = CommentedMap()
        single[key] = _styled(value, old)
        _yaml(offset if offset is not None else 2).dump(single, out)
        return out.getvalue().splitlines(keepends=True)


def _between(line: str) -> bool:
    """A blank line, or a comment at the left margin: not part of the value above it."""
    return not line.strip() or line.startswith("#")


def _list_offset(lines: list[str]) -> int | None:
    """How far the block's list items are indented (`- a` 0, `  - a` 2), when it has any."""
    for line in lines:
        stripped = line.lstrip(" ")
        if stripped.startswith("- ") or stripped.rstrip("\n") == "-":
            indent = len(line) - len(stripped)
            if indent <= 4:
                return indent
    return None


def _styled(value: Any, old: Any) -> Any:
    """The value as ruamel.yaml should write it: in the old value's style when there was one."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import (
        DoubleQuotedScalarString,
        LiteralScalarString,
        SingleQuotedScalarString,
    )

    if isinstance(value, str):
        if isinstance(old, LiteralScalarString) or "\n" in value:
            return LiteralScalarString(value)
        if isinstance(old, SingleQuotedScalarString):
            return SingleQuotedScalarString(value)
        if isinstance(old, DoubleQuotedScalarString) or value.startswith("[["):
            return DoubleQuotedScalarString(value)  # `"[[note]]"`, as Obsidian writes a link
        return value
    if isinstance(value, list | tuple):
        old_items = list(old) if isinstance(old, list) else []
        seq = CommentedSeq(
            _styled(item, old_items[at] if at < len(old_items) else None)
            for at, item in enumerate(value)
        )
        if isinstance(old, CommentedSeq) and old.fa.flow_style():
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, dict):
        mapping = CommentedMap()
        for name, item in value.items():
            mapping[str(name)] = _styled(item, old.get(name) if isinstance(old, dict) else None)
        if isinstance(old, CommentedMap) and old.fa.flow_style():
            mapping.fa.set_flow_style()
        return mapping
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    return value
