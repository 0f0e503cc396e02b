"""The parser's LALR tables are the ones Lark computes from grammar/hql.lark."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hql.syntax import parser, tables
from hql.syntax.build_tables import compute
from hql.syntax.parser import grammar_text, parse
from hql.syntax.tree import Node

GOLDEN = Path(__file__).parent / "golden"
PROGRAMS = [
    "1 + 2 + 3",
    'cards | filter(c => c.metadata.status == "todo") | sort(by = c => c.title) | map(c => c.title) | table',
    "x : Option<Int> = 1\nx",
    'import lexical\ncards | lexical.lexical("q") | take(5)',
    "[1, 2] | sort((a, b) => compare(b, a))",
    '{a: 1, "b.c": [1, 2], d: {}}',
    "{1, 2, 3,}",
    "SortedMap<String, Int>([], [])",
    '[[a]] -> [[b]] {k: "v"}',
    "type X<T> : {A, B} { a: Int, b?: String } where T : Orderable",
    "type U = union { Int, String, }",
    "cards\n  | count\n\n1 +\n2",
]


def test_tables_were_generated_from_this_grammar() -> None:
    digest = hashlib.sha256(grammar_text().encode("utf-8")).hexdigest()
    assert digest == tables.GRAMMAR_DIGEST, "run: python -m hql.syntax.build_tables"


def _programs() -> list[str]:
    found = [
        path.read_text(encoding="utf-8") for path in sorted(GOLDEN.rglob("*.hql")) if path.is_file()
    ]
    return PROGRAMS + found


def _shape(node: object) -> object:
    """A comparable rendering of a syntax tree (nodes compare by identity)."""
    if isinstance(node, Node):
        return (type(node).__name__, tuple(_shape(getattr(node, name)) for name in node._fields))
    if isinstance(node, tuple):
        return tuple(_shape(item) for item in node)
    return node


@pytest.mark.parametrize("program", _programs())
def test_committed_tables_parse_as_freshly_computed_ones(
    program: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hql.diagnostics import HqlError

    def outcome() -> object:
        try:
            return _shape(parse(program))
        except HqlError as error:
            return error.report

    committed = outcome()
    fresh = compute(grammar_text())
    parser._tables.cache_clear()
    monkeypatch.setattr(tables, "GRAMMAR_CRC32", -1)  # force the in-memory rebuild path
    monkeypatch.setattr(parser, "grammar_text", lambda: grammar_text())
    try:
        import hql.syntax.build_tables as build

        monkeypatch.setattr(build, "compute", lambda grammar: fresh)
        assert outcome() == committed
    finally:
        parser._tables.cache_clear()
