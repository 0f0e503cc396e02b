"""YAML text to Data, with the strictness of the reference's era C loader.

Data is the open tree of headers, metadata and annotations: plain dicts (keys
sorted, as the reference keeps them), lists, str, int, float, bool and None.

PyYAML parses (with libyaml when available; it is imported by the first
parse, so cards without YAML never load it); this module decides what the
tree may hold. Scalars resolve by the YAML 1.2 core schema, as the
reference's parser does (`yes` stays a string, `1e3` is a float, a date is
a string because Data has no date). Refused, each with a `YamlRefused`
naming the problem: a non-mapping header, duplicate keys, non-string keys,
tags outside the core schema, `.inf`/`.nan`, integers beyond signed 64 bits,
more than one document. Anchors, aliases and merge keys work, but a tree
whose aliases expand beyond `MAX_NODES` nodes or `MAX_DEPTH` levels is
refused, so a "billion laughs" header costs milliseconds, not memory; so is
a document that holds more than `MAX_NODES` nodes as written.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from hql import messages
from hql.regex import lazy

if TYPE_CHECKING:
    import yaml
    from yaml.nodes import Node

MAX_NODES = 100_000
MAX_DEPTH = 64

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ, _MERGE = _TAG + "map", _TAG + "seq", _TAG + "merge"
_CORE_TAGS = frozenset({_STR, _INT, _FLOAT, _BOOL, _NULL, _MAP, _SEQ, _MERGE})

_INT_PATTERN = lazy(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z")
_FLOAT_PATTERN = lazy(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z"
)
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


class YamlRefused(Exception):
    """A YAML text the loader will not turn into Data; the message says why."""


_BOOL_PATTERN = lazy(r"^(?:true|True|TRUE|false|False|FALSE)\Z")
_NULL_PATTERN = lazy(r"^(?:~|null|Null|NULL)\Z")


def _resolve_plain(value: str) -> str:
    """The tag of a plain (unquoted) scalar under the YAML 1.2 core schema."""
    if not value:
        return _NULL
    first = value[0]
    if first in "-+0123456789.":
        if _INT_PATTERN.match(value):
            return _INT
        if _FLOAT_PATTERN.match(value):
            return _FLOAT
    elif first in "tTfF":
        if _BOOL_PATTERN.match(value):
            return _BOOL
    elif first in "~nN":
        if _NULL_PATTERN.match(value):
            return _NULL
    elif value == "<<":
        return _MERGE
    return _STR


@functools.cache
def _core_schema_loader() -> type:
    # PyYAML costs ~25 ms to import; a vault whose cards have no front matter never needs it.
    import yaml
    from yaml.nodes import ScalarNode, SequenceNode

    class _CoreSchemaLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        """Resolves plain scalars by the YAML 1.2 core schema instead of PyYAML's 1.1.

        Overriding `resolve` (and dropping path resolvers, which HQL never uses)
        also skips PyYAML's general resolver machinery, the hot spot of a load.
        """

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.nodes_composed = 0

        def resolve(self, kind: type, value: Any, implicit: Any) -> str:
            # libyaml asks for every node it composes: the one place to stop a huge
            # document early, before it has cost seconds and memory.
            self.nodes_composed += 1
            if self.nodes_composed > MAX_NODES:
                raise YamlRefused(messages.yaml_too_many_nodes(MAX_NODES))
            if kind is ScalarNode:
                return _resolve_plain(value) if implicit[0] else _STR
            return _SEQ if kind is SequenceNode else _MAP

        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            return None

        def ascend_resolver(self) -> None:
            return None

    return _CoreSchemaLoader


def load(text: str) -> Any:
    """Parse one YAML document into Data; an empty document is None."""
    import yaml  # loaded by _core_schema_loader already

    loader = _core_schema_loader()(text)
    try:
        node = loader.get_single_node()
    except YamlRefused:
        raise
    except RecursionError:  # the pure-Python parser, when libyaml is missing, recurses
        raise YamlRefused(messages.yaml_too_deep(MAX_DEPTH)) from None
    except yaml.MarkedYAMLError as error:
        raise YamlRefused(_describe_marked(error)) from None
    except yaml.YAMLError as error:
        raise YamlRefused(messages.yaml_invalid(str(error))) from None
    finally:
        loader.dispose()
    if node is None:
        return None
    if "*" in text:  # without aliases the tree is no larger than the text
        _check_expanded_size(node)
    return _convert(node, {}, 0)


def load_mapping(text: str) -> dict[str, Any]:
    """Parse a YAML document that must be a mapping; an empty one is `{}`."""
    value = load(text)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise YamlRefused(messages.yaml_not_a_mapping(_shape(value)))
    return value


# `{key: value, ...}` with plain words only: most annotations. Anything else
# (quotes, nesting, anchors, comments, colons in values) goes through YAML.
_SIMPLE_ENTRY = lazy(
    r"\s*([A-Za-z_][A-Za-z0-9_-]*)\s*:\s+([A-Za-z0-9_.+/~-][A-Za-z0-9_.+/~ -]*?)\s*"
)


def load_simple_flow_mapping(text: str) -> dict[str, Any] | None:
    """A fast path for simple flow mappings; None means "not simple, ask YAML".

    Whatever it returns is exactly what `load_mapping` would return.
    """
    if not (text.startswith("{") and text.endswith("}")):
        return None
    inner = text[1:-1]
    if not inner.strip():
        return {}
    if inner.count(",") >= MAX_NODES // 2:
        return None  # YAML counts the nodes and refuses
    result: dict[str, Any] = {}
    for entry in inner.split(","):
        match = _SIMPLE_ENTRY.fullmatch(entry)
        if match is None:
            return None
        key, value = match.groups()
        if key in result or _resolve_plain(key) != _STR:  # `true: x` has a bool key
            return None
        if value == "-" or value.startswith("- "):
            return None
        tag = _resolve_plain(value)
        if tag == _MERGE:
            return None
        try:
            result[key] = _scalar(tag, value)
        except YamlRefused:
            return None
    return dict(sorted(result.items()))


# The lines of a front matter most notes write: `key: value`, `key: [a, b]`, `key:` and
# `- item` lines under it, `# comments`. Anything else goes through YAML.
_BLOCK_KEY = lazy(r"([^\W\d][\w .-]*?):(?: +(.*))?")
_BLOCK_ITEM = lazy(r"( *)- +(.*)")
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")


def load_simple_block_mapping(text: str) -> dict[str, Any] | None:
    """A fast path for front matter written in the plainest block style; None means
    "not simple, ask YAML". Whatever it returns is exactly what `load_mapping` would."""
    if "\t" in text or "\r" in text or not text.replace("\n", "").isprintable():
        return None
    result: dict[str, Any] = {}
    items: list[Any] | None = None  # the block list under the last `key:`
    indent: int | None = None
    blocks: list[str] = []  # the keys written as `key:` alone
    nodes = 0
    for line in text.split("\n"):
        if not line.strip() or line.startswith("#"):
            continue
        nodes += 2
        if nodes > MAX_NODES // 2:
            return None  # YAML counts the nodes and refuses
        item = _BLOCK_ITEM.fullmatch(line)
        if item is not None:
            if items is None or (indent is not None and len(item.group(1)) != indent):
                return None
            indent = len(item.group(1))
            value = _simple_scalar(item.group(2).rstrip(" "), flow=False)
            if value is _NOT_SIMPLE:
                return None
            items.append(value)
            continue
        entry = _BLOCK_KEY.fullmatch(line)
        if entry is None:
            return None
        key, written = entry.group(1), (entry.group(2) or "").rstrip(" ")
        if key in result or key != key.rstrip(" ") or _resolve_plain(key) != _STR:
            return None
        items, indent = None, None
        if not written:
            items = result[key] = []
            blocks.append(key)
        elif written.startswith("[") and written.endswith("]"):
            listed = []
            if written[1:-1].strip(" "):
                for piece in written[1:-1].split(","):
                    value = _simple_scalar(piece.strip(" "), flow=True)
                    if value is _NOT_SIMPLE:
                        return None
                    listed.append(value)
                    nodes += 1
            result[key] = listed
        else:
            value = _simple_scalar(written, flow=False)
            if value is _NOT_SIMPLE:
                return None
            result[key] = value
    if not result:
        return None
    for key in blocks:  # `key:` with no items under it is empty
        if not result[key]:
            result[key] = None
    return dict(sorted(result.items()))


_NOT_SIMPLE = object()


def _simple_scalar(text: str, flow: bool) -> Any:
    """A plain or quoted scalar with nothing YAML would read otherwise, else _NOT_SIMPLE."""
    if not text or not text.isprintable():
        return _NOT_SIMPLE
    quote = text[0]
    if quote in "\"'":
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != quote or quote in inner or "\\" in inner:
            return _NOT_SIMPLE
        return inner
    if text[0] in _INDICATORS or ": " in text or " #" in text or text.endswith(":"):
        return _NOT_SIMPLE
    if flow and any(mark in text for mark in ",[]{}:#"):
        return _NOT_SIMPLE
    tag = _resolve_plain(text)
    if tag == _MERGE:
        return _NOT_SIMPLE
    if tag == _STR:
        return text
    try:
        return _scalar(tag, text)
    except YamlRefused:
        return _NOT_SIMPLE


def _describe_marked(error: yaml.MarkedYAMLError) -> str:
    problem = error.problem or error.context or "invalid YAML"
    mark = error.problem_mark or error.context_mark
    if mark is None:
        return messages.yaml_invalid(problem)
    return messages.yaml_invalid_at(problem, mark.line + 1, mark.column + 1)


def _check_expanded_size(root: Node) -> None:
    """Count the nodes the tree would have once every alias is expanded.

    Aliases share node objects, so sizes are memoised per node; a node met
    again while it is still being counted is a recursive alias.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: Node, depth: int) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if depth > MAX_DEPTH:
            raise YamlRefused(messages.yaml_too_deep(MAX_DEPTH))
        if key in active:
            raise YamlRefused(messages.yaml_recursive_alias())
        active.add(key)
        total = 1
        kind = _kind(node)
        if kind == "sequence":
            for child in node.value:
                total += size(child, depth + 1)
                _check_total(total)
        elif kind == "mapping":
            for key_node, value_node in node.value:
                total += size(key_node, depth + 1) + size(value_node, depth + 1)
                _check_total(total)
        active.discard(key)
        sizes[key] = total
        return total

    size(root, 0)


def _check_total(total: int) -> None:
    if total > MAX_NODES:
        raise YamlRefused(messages.yaml_too_large(MAX_NODES))


def _convert(node: Node, memo: dict[int, Any], depth: int) -> Any:
    """Node graph to Data; aliased nodes convert once and are shared (read-only)."""
    key = id(node)
    if key in memo:
        return memo[key]
    if depth > MAX_DEPTH:
        raise YamlRefused(messages.yaml_too_deep(MAX_DEPTH))
    tag = node.tag
    if tag not in _CORE_TAGS:
        raise YamlRefused(messages.yaml_tag_refused(tag))
    value: Any
    kind = _kind(node)
    if kind == "scalar":
        value = _scalar(tag, node.value)
    elif kind == "sequence":
        _expect(tag, _SEQ)
        value = [_convert(child, memo, depth + 1) for child in node.value]
    elif kind == "mapping":
        _expect(tag, _MAP)
        value = _mapping(node, memo, depth)
    else:  # pragma: no cover - PyYAML has no other node kinds
        raise YamlRefused(messages.yaml_invalid(f"unexpected node {node!r}"))
    memo[key] = value
    return value


def _kind(node: Node) -> str:
    """PyYAML's node id ("scalar", "sequence" or "mapping"), read without importing its classes."""
    return node.id  # type: ignore[attr-defined]


def _expect(tag: str, wanted: str) -> None:
    if tag != wanted:
        raise YamlRefused(messages.yaml_tag_refused(tag))


def _mapping(node: Node, memo: dict[int, Any], depth: int) -> dict[str, Any]:
    own: dict[str, Any] = {}
    merged: dict[str, Any] = {}
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE:
            _merge_into(merged, value_node, memo, depth)
            continue
        name = _convert(key_node, memo, depth + 1)
        if not isinstance(name, str):
            raise YamlRefused(messages.yaml_key_not_string(_shape(name)))
        if name in own:
            raise YamlRefused(messages.yaml_duplicate_key(name))
        own[name] = _convert(value_node, memo, depth + 1)
    merged.update(own)
    return dict(sorted(merged.items()))


def _merge_into(merged: dict[str, Any], value_node: Node, memo: dict[int, Any], depth: int) -> None:
    """`<<: *base` or `<<: [*a, *b]`; earlier sources win, as YAML's merge says."""
    sources = value_node.value if _kind(value_node) == "sequence" else [value_node]
    for source in sources:
        value = _convert(source, memo, depth + 1)
        if not isinstance(value, dict):
            raise YamlRefused(messages.yaml_merge_not_mapping())
        for name, item in value.items():
            merged.setdefault(name, item)


def _scalar(tag: str, text: str) -> Any:
    if tag == _STR:
        return text
    if tag == _NULL:
        if text not in ("", "~", "null", "Null", "NULL"):
            raise YamlRefused(messages.yaml_bad_scalar(text, "null"))
        return None
    if tag == _BOOL:
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise YamlRefused(messages.yaml_bad_scalar(text, "bool"))
        return lowered == "true"
    if tag == _INT:
        return _integer(text)
    if tag == _FLOAT:
        return _float(text)
    raise YamlRefused(messages.yaml_tag_refused(tag))


def _integer(text: str) -> int:
    if not _INT_PATTERN.match(text):
        raise YamlRefused(messages.yaml_bad_scalar(text, "int"))
    if text.startswith("0o"):
        value = int(text[2:], 8)
    elif text.startswith("0x"):
        value = int(text[2:], 16)
    else:
        value = int(text, 10)
    if not _I64_MIN <= value <= _I64_MAX:
        raise YamlRefused(messages.yaml_int_out_of_range(text))
    return value


def _float(text: str) -> float:
    if not _FLOAT_PATTERN.match(text):
        raise YamlRefused(messages.yaml_bad_scalar(text, "float"))
    if "inf" in text.lower() or "nan" in text.lower():
        raise YamlRefused(messages.yaml_not_finite(text))
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise YamlRefused(messages.yaml_not_finite(text))
    return value


def _shape(value: Any) -> str:
    """The reference's shape words: empty, bool, int, float, string, list, map."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "map"
