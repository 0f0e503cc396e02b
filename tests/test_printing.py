"""Printing (reference section 8): plain display, JSON projection, tables, ordering keys.

A `String` value prints raw and a Data string leaf prints quoted; floats keep a point.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import hql
from hql.printing import (
    compare_values,
    display,
    dumps,
    format_float,
    json_float,
    layout,
    table,
    to_json,
)
from hql.values import (
    ABSENT,
    UNIT,
    Data,
    Edge,
    Hit,
    ListValue,
    MapValue,
    Ordering,
    Presentation,
    Ranking,
    Retrieval,
    SetValue,
)
from hql.vault import Vault

VAULT = Path(__file__).parent / "fixtures" / "vault"


@pytest.fixture(scope="module")
def vault() -> Vault:
    return hql.open_vault(VAULT)


def retrieval() -> Retrieval:
    return Retrieval("bearer token", "/v", "hql.hashbag.v1", "0.1.0", "cosine", False)


def ranking(vault: Vault) -> Ranking:
    shared = retrieval()
    return Ranking(
        (
            Hit(vault.card("oauth"), 0.48611, shared),
            Hit(vault.card("bearer-tokens"), 0.4819, shared),
        ),
        shared,
    )


# --- plain display (8.1) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (UNIT, "()"),
        (ABSENT, "none"),
        (42, "42"),
        (-7, "-7"),
        (True, "true"),
        (False, "false"),
        ("Bearer tokens", "Bearer tokens"),
        ('say "hi"\n', 'say "hi"\n'),
        (Data("todo"), '"todo"'),
        (Data('a "q"\t\\'), '"a \\"q\\"\\t\\\\"'),
        (Data(None), "empty"),
        (Data(3), "3"),
        (Data(2.0), "2.0"),
        (Data(False), "false"),
        (Data([1, "owl", [True, 2.5]]), '[1, "owl", [true, 2.5]]'),
        (Data({"tags": [1], "b": {"z": None, "a": 1}}), "{b: {a: 1, z: empty}, tags: [1]}"),
        (Data({}), "{}"),
        (ListValue((Data({"species": "owl"}), "owl", 3)), '[{species: "owl"}, owl, 3]'),
        (ListValue((ListValue(("robin",)), ListValue(("owl", "owl")))), "[[robin], [owl, owl]]"),
        (SetValue((1, 2)), "[1, 2]"),
        (ListValue(()), "[]"),
        (Edge("a", "b", {}), "a -> b"),
        (Ordering.LESS, "Less"),
        (Ordering.EQUAL, "Equal"),
        (Ordering.GREATER, "Greater"),
        (
            MapValue("Map", ("barn-owl", "robin"), (2, 1), "Map<String, Int>"),
            "Map {barn-owl: 2, robin: 1}",
        ),
        (MapValue("SortedMap", (), (), "SortedMap<String, Int>"), "SortedMap {}"),
        (Presentation("table", "value\n-----\n1"), "value\n-----\n1"),
    ],
)
def test_display(value: object, expected: str) -> None:
    assert display(value) == expected


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (3.0, "3.0"),
        (0.75, "0.75"),
        (0.25, "0.25"),
        (-1.5, "-1.5"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e20, "1e20"),
        (1e16, "1e16"),
        (1e15, "1000000000000000.0"),
        (1e-6, "1e-6"),
        (0.0001, "0.0001"),
        (1.2345678901234568e18, "1.2345678901234568e18"),
    ],
)
def test_floats_print_like_rust_debug(number: float, expected: str) -> None:
    assert format_float(number) == expected


def test_cards_hits_rankings_and_graphs(vault: Vault) -> None:
    oauth = vault.card("oauth")
    assert display(oauth) == "oauth"
    ranked = ranking(vault)
    assert display(ranked.hits[0]) == "oauth (0.4861)"
    assert display(ranked) == "[oauth (0.4861), bearer-tokens (0.4819)]"
    assert hql.run("cards | graph", vault=vault).text() == "graph of 5 nodes and 4 edges"


def test_string_values_and_data_leaves_differ(vault: Vault) -> None:
    assert hql.run("[[bearer-tokens]].title", vault=vault).text() == "Bearer tokens"
    assert hql.run("[[bearer-tokens]].metadata.status", vault=vault).text() == '"todo"'


# --- JSON projection (8.2) --------------------------------------------------------------------


def test_json_of_scalars_and_data() -> None:
    assert to_json(UNIT) is None and to_json(ABSENT) is None
    assert to_json(1) == 1 and to_json(1.5) == 1.5 and to_json("s") == "s" and to_json(True) is True
    assert to_json(Data({"a": [1, None]})) == {"a": [1, None]}
    assert to_json(SetValue((1, 2))) == [1, 2]
    assert to_json(Ordering.GREATER) == "Greater"
    assert to_json(Edge("a", "b", {"k": 1})) == {"source": "a", "target": "b", "data": {"k": 1}}
    assert to_json(Presentation("text", "x")) == {"presenter": "text", "text": "x"}
    assert to_json(MapValue("OrderedMap", ("b", "a"), (1, 2), "OrderedMap<String, Int>")) == {
        "type": "OrderedMap<String, Int>",
        "entries": [{"key": "b", "value": 1}, {"key": "a", "value": 2}],
    }


def test_json_of_cards(vault: Vault) -> None:
    projected = to_json(vault.card("bearer-tokens"))
    assert list(projected) == ["name", "kind", "title", "path", "header", "metadata"]
    assert projected["kind"] == "ConceptCard" and projected["metadata"]["status"] == "todo"
    assert projected["header"]["metadata"] == {"owner": "ada", "status": "todo"}


def test_json_of_hits_and_rankings(vault: Vault) -> None:
    ranked = ranking(vault)
    hit = to_json(ranked.hits[0])
    assert hit["card"] == "oauth" and hit["score"] == 0.48611
    assert hit["retrieval"]["model"] == "hql.hashbag.v1"
    projected = to_json(ranked)
    assert list(projected) == ["retrieval", "hits"]
    assert set(projected["retrieval"]) >= {
        "query",
        "index",
        "model",
        "revision",
        "metric",
        "approximate",
    }
    assert projected["hits"][0] == {"card": "oauth", "title": "OAuth 2.0", "score": 0.48611}


def test_json_of_graphs(vault: Vault) -> None:
    text = hql.run("[[oauth]] | expand | json", vault=vault).text()
    projected = json.loads(text)
    assert projected["nodes"] == [
        {"name": "bearer-tokens", "presence": "expanded from oauth at depth 1"},
        {"name": "oauth", "presence": "member"},
    ]
    assert [(e["source"], e["target"]) for e in projected["edges"]] == [
        ("bearer-tokens", "oauth"),
        ("oauth", "bearer-tokens"),
        ("oauth", "bearer-tokens"),
    ]


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.5, "0.5"),
        (-2.5, "-2.5"),
        (0.0, "0.0"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e16"),
        (1e20, "1e20"),
        (1.5e300, "1.5e300"),
        (1e-4, "0.0001"),
        (1e-5, "0.00001"),
        (1e-7, "1e-7"),
        (1.25e-7, "1.25e-7"),
        (1.2345678901234568e17, "1.2345678901234568e17"),
        (5e-324, "5e-324"),
    ],
)
def test_json_floats_are_written_as_serde_json_writes_them(number: float, expected: str) -> None:
    assert json_float(number) == expected
    assert dumps([number]) == f"[\n  {expected}\n]"


def test_pretty_json_uses_two_spaces_and_keeps_unicode() -> None:
    assert dumps({"a": [1, "é"]}) == '{\n  "a": [\n    1,\n    "é"\n  ]\n}'
    assert dumps(1.0) == "1.0"
    tree = {"a": [1, 2.5, {}, [], 'é\n"', None, True], "b": {"c": {"d": []}}, "e": []}
    assert dumps(tree) == json.dumps(tree, indent=2, ensure_ascii=False)


# --- tables (8.3) ---------------------------------------------------------------------------------


def test_layout_pads_joins_with_two_spaces_and_trims() -> None:
    assert layout(["a", "long"], [["xyz", ""], ["b", "c"]]) == "\n".join(
        ["a    long", "---  ----", "xyz", "b    c"]
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (ListValue((1, 2)), "value\n-----\n1\n2"),
        (ListValue(()), "value\n-----"),
        (SetValue(("a", "bb", "ccc")), "value\n-----\na\nbb\nccc"),
        (
            ListValue((Data({"a": 1}), Data({"b": [1, "x"]}))),
            'value\n-------------\n{a: 1}\n{b: [1, "x"]}',
        ),
        (Data({"b": "x", "a": 1}), 'key  value\n---  -----\na    1\nb    "x"'),
        (
            MapValue("Map", ("a", "b"), (1, 2), "Map<String, Int>"),
            "key  value\n---  -----\na    1\nb    2",
        ),
        (1, "value\n-----\n1"),
        ("s", "value\n-----\ns"),
        (Presentation("text", "already"), "already"),
    ],
)
def test_table_layouts(value: object, expected: str) -> None:
    assert table(value) == expected


def test_card_and_ranking_tables(vault: Vault) -> None:
    cards = ListValue((vault.card("oauth"), vault.card("oauth-defines-bearer")))
    assert table(cards) == "\n".join(
        [
            "card                  kind          title",
            "--------------------  ------------  ------------------------------",
            "oauth                 ConceptCard   OAuth 2.0",
            "oauth-defines-bearer  RelationCard  OAuth defines the bearer token",
        ]
    )
    assert table(ranking(vault)) == "\n".join(
        [
            "rank  score   card           title",
            "----  ------  -------------  -------------",
            "1     0.4861  oauth          OAuth 2.0",
            "2     0.4819  bearer-tokens  Bearer tokens",
        ]
    )


def test_graph_table(vault: Vault) -> None:
    assert hql.run("[[sessions]] | graph | table", vault=vault).text() == "\n".join(
        [
            "node      presence",
            "--------  --------",
            "sessions  member",
            "source  target  data",
            "------  ------  ----",
        ]
    )


# --- ordering keys (8.4) ---------------------------------------------------------------------------


def test_ordering_keys(vault: Vault) -> None:
    assert compare_values(2, 10) < 0  # numerically, not by text
    assert compare_values(1.5, 2) < 0
    assert compare_values("B", "a") < 0  # byte order
    assert compare_values("z", "é") < 0
    assert compare_values(vault.card("oauth"), vault.card("bearer-tokens")) > 0  # by name
    assert compare_values(True, False) == 0  # no key: equal, so sorting stays stable
    assert compare_values(Data({"a": 1}), 1) == 0


def test_display_width_counts_terminal_cells() -> None:
    from hql.printing import display_width

    assert display_width("oauth") == 5
    assert display_width("東京") == 4  # wide characters take two cells
    assert display_width("ｔｏｋｅｎ") == 10  # fullwidth forms too
    assert display_width("cafe\u0301") == 4  # a combining accent takes none
    assert display_width("Ünïcödé") == 7


def test_tables_pad_by_characters_and_explain_by_cells(tmp_path: Path) -> None:
    # The table presenter counts characters, as the original does, so rendered tables match it.
    assert layout(["card"], [["東京"], ["osaka"]]).split("\n")[2:] == ["東京", "osaka"]
    assert layout(["card", "n"], [["東京", "1"], ["osaka", "2"]]).split("\n")[2] == "東京     1"
    assert layout(["card", "n"], [["東京", "1"], ["osaka", "2"]], cells=True).split("\n")[2] == (
        "東京   1"
    )
    # explain is read on a screen: its columns line up in cells whatever the script.
    (tmp_path / "東京.md").write_text("# 東京\n\nbearer token\n", encoding="utf-8")
    (tmp_path / "osaka.md").write_text("# Osaka\n\nbearer bearer token\n", encoding="utf-8")
    (tmp_path / "大阪府.md").write_text("# 大阪府\n\ntoken\n", encoding="utf-8")
    from hql.api import Session, open_vault
    from hql.explain import explain
    from hql.printing import display_width

    text, _, failed = explain(
        Session(open_vault(tmp_path)), 'import lexical\ncards | lexical("bearer token")', "<t>"
    )
    assert not failed
    lines = text.split("\n")
    start = lines.index(next(line for line in lines if line.lstrip().startswith("rank")))
    rows = lines[start : start + 5]
    assert [row.split()[1] for row in rows[2:]] == ["osaka", "東京", "大阪府"]
    score_columns = {display_width(row[: list(re.finditer(r"\S+", row))[2].start()]) for row in rows}
    assert len(score_columns) == 1, rows  # every score starts in the same cell
