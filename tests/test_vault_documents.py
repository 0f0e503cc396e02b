"""Document anatomy (§9.2) and the era C YAML strictness, one file at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from hql.vault import Vault
from hql.vault.document import DocumentRefused, annotation_end, parse, references, split_header
from hql.vault.yamldata import YamlRefused, load, load_mapping


def test_split_header_variants() -> None:
    assert split_header("---\na: 1\n---\nbody") == ("a: 1\n", "body")
    assert split_header("---\r\na: 1\r\n---  \r\nbody") == ("a: 1\r\n", "body")
    assert split_header("no header\n---\n") == ("", "no header\n---\n")
    with pytest.raises(DocumentRefused, match="unterminated front matter"):
        split_header("---\na: 1\n")


def test_title_falls_back_to_heading_then_name(tmp_path: Path) -> None:
    (tmp_path / "plain.md").write_text("text only\n")
    (tmp_path / "numeric.md").write_text("---\ntitle: 42\n---\n  # Heading  \n")
    vault = Vault.open(tmp_path)
    plain, numeric = vault.card("plain"), vault.card("numeric")
    assert plain is not None and plain.title == "plain" and "title" not in plain.header
    assert numeric is not None and numeric.title == "Heading"
    assert numeric.header["title"] == "Heading"


def test_derived_entries_overwrite_authored_ones(tmp_path: Path) -> None:
    (tmp_path / "card.md").write_text("---\nname: other\npath: /etc\nformat: x\n---\n")
    card = Vault.open(tmp_path).card("card")
    assert card is not None
    assert card.header["name"] == "card" and card.header["format"] == "Markdown"
    assert card.authored == {"format": "x", "name": "other", "path": "/etc"}


def test_references_and_annotations() -> None:
    body = (
        "[[a]] {relation: parent} and [[ b ]]\n"
        "[[c]]   {note: 'it''s {fine}', n: 2}\n"
        "[[d]]\n{not: bound}\n"
        "[[]] [[e]]x{y: 1}\n"
        '[[f]] {q: "a \\" }"}\n'
        "[[unterminated"
    )
    assert references(body) == [
        ("a", {"relation": "parent"}),
        ("b", {}),
        ("c", {"n": 2, "note": "it's {fine}"}),
        ("d", {}),
        ("e", {}),
        ("f", {"q": 'a " }'}),
    ]


def test_apostrophe_in_a_plain_word_is_not_a_quote() -> None:
    text = "{note: don't stop}"
    assert annotation_end(text, 0) == len(text)


def test_bad_annotation_refuses_the_document() -> None:
    with pytest.raises(DocumentRefused, match="reference annotation at body byte 6"):
        parse("[[a]] {b: [}\n")
    with pytest.raises(DocumentRefused, match="unterminated reference annotation"):
        parse("[[a]] {b: 1\n")


def test_yaml_core_schema_scalars() -> None:
    assert load_mapping(
        "a: yes\nb: 1e3\nc: 0x1F\nd: 2024-01-02\ne: ~\nf: 1_000\ng: True\nh: '1'\ni: 1.5\nj: 0o17"
    ) == {
        "a": "yes",
        "b": 1000.0,
        "c": 31,
        "d": "2024-01-02",
        "e": None,
        "f": "1_000",
        "g": True,
        "h": "1",
        "i": 1.5,
        "j": 15,
    }


def test_yaml_anchors_aliases_merge_keys_and_block_scalars() -> None:
    text = (
        "base: &b {x: 1, y: 2}\n"
        "child:\n  <<: *b\n  y: 3\n"
        "list: [*b, *b]\n"
        "text: |\n  line one\n  line two\n"
    )
    data = load_mapping(text)
    assert data["child"] == {"x": 1, "y": 3}
    assert data["list"] == [{"x": 1, "y": 2}, {"x": 1, "y": 2}]
    assert data["text"] == "line one\nline two\n"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a: 1\na: 2\n", "duplicate key `a`"),
        ("1: a\n", "keys must be strings, not a int"),
        ("a: !custom x\n", "the tag `!custom` is not supported"),
        ("a: !!binary aGk=\n", "the tag `!!binary` is not supported"),
        ("a: .inf\n", "`.inf` is not a finite number"),
        ("a: .nan\n", "`.nan` is not a finite number"),
        ("a: 9223372036854775808\n", "does not fit in 64 bits"),
        ("a: 1\n---\nb: 2\n", "invalid YAML"),
        ("- a\n- b\n", "must be a mapping, not a list"),
        ("a: [1\n", "invalid YAML at line"),
        ("a: &x [1, *x]\n", "an alias refers to the node that contains it"),
    ],
)
def test_yaml_refusals(text: str, reason: str) -> None:
    with pytest.raises(YamlRefused) as caught:
        load_mapping(text)
    assert reason in str(caught.value)


def test_int_at_the_64_bit_edge_is_kept() -> None:
    assert load("a: -9223372036854775808")["a"] == -(2**63)


def test_refused_header_skips_only_that_document(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("# Good\n")
    (tmp_path / "dup.md").write_text("---\na: 1\na: 2\n---\n")
    vault = Vault.open(tmp_path)
    assert [card.name for card in vault.cards] == ["good"]
    assert [str(w) for w in vault.warnings] == [
        f"{tmp_path / 'dup.md'}: header: duplicate key `a`; document skipped"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "{relation: defines}",
        "{relation: is part of, weight: 2, ratio: 1.5e3, ok: true, none: null}",
        "{a: -1, b: +2, c: 0x1F, d: 0o7, e: .5, f: 1.}",
        "{ a : b }",
        "{}",
        "{a: ~}",
        "{a: 2024-01-02, b: x/y, c: a-b_c.d}",
    ],
)
def test_simple_annotation_fast_path_agrees_with_yaml(text: str) -> None:
    from hql.vault.yamldata import load_simple_flow_mapping

    fast = load_simple_flow_mapping(text)
    assert fast is not None
    assert fast == load_mapping(text)
    assert list(fast) == list(load_mapping(text))


@pytest.mark.parametrize(
    "text",
    [
        "{a: 1, a: 2}",
        "{true: x}",
        "{null: x}",
        "{a: .inf}",
        "{a: 'q'}",
        "{a: [1]}",
        "{a: b: c}",
        "{a: - x}",
        "{<<: x}",
    ],
)
def test_annotations_the_fast_path_leaves_to_yaml(text: str) -> None:
    from hql.vault.yamldata import load_simple_flow_mapping

    assert load_simple_flow_mapping(text) is None


def test_fast_path_never_disagrees_with_yaml() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from hql.vault.yamldata import YamlRefused, load_simple_flow_mapping

    pieces = st.sampled_from([*"ab01.-+~/ _:,exinfTrunl", "true", "null", ": ", ", "])

    @settings(max_examples=400, deadline=None)
    @given(st.lists(pieces, max_size=12))
    def agree(parts: list[str]) -> None:
        text = "{" + "".join(parts) + "}"
        fast = load_simple_flow_mapping(text)
        if fast is None:
            return
        try:
            assert load_mapping(text) == fast
        except YamlRefused:
            raise AssertionError(f"fast path accepted {text!r}, YAML refuses it") from None

    agree()


@pytest.mark.parametrize(
    "text",
    [
        "aliases: [Start, Dashboard]\ntags: [hub]\npinned: \"[[Soil Food Web]]\"",
        "categories:\n  - \"[[Books]]\"\nauthor:\n- '[[Ada Mensah]]'\nrating: 4\nyear: 1999",
        "aliases:\n  - alias\n  - How to/Add aliases to note\npermalink: aliases",
        "# a comment\ntitle: Notes on it\nurl: https://example.org/a?b=c\ncreated: 2024-03-01",
        "empty:\nlist: []\nnone: ~\nflag: true\nratio: 1.5e3\nhex: 0x1F\nword: yes",
        "Date created: a [b] {c}, it's C#\nnested-key.x: \"quoted # not a comment\"",
        "tags: [a b, 'c d', \"e\", 1, null]",
        "aliases:\n\n  - one\n# between\n  - two\nafter: x",
    ],
)
def test_simple_front_matter_fast_path_agrees_with_yaml(text: str) -> None:
    from hql.vault.yamldata import load_simple_block_mapping

    fast = load_simple_block_mapping(text)
    assert fast is not None
    assert fast == load_mapping(text)
    assert list(fast) == list(load_mapping(text))


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\na: 2",  # duplicate keys: YAML refuses
        "true: x",
        "a: .inf",
        "a: b: c",
        "a: x # comment",
        "a: \"esc\\\"aped\"",
        "a: 'it''s'",
        "a: {{date}}",
        "a: [[Books]]",
        "a: [x, [y]]",
        "a: [x,]",
        "a: &anchor x\nb: *anchor",
        "a: |\n  block",
        "review:\n  due: 2026-01-01",
        "a:\n  - x\n    continued",
        "a:\n  - x\n - y",
        "a: x\n- y",
        "a:\n  -",
        "<<: x",
        "key : x",
        "a: x\tb",
        "a: x\r",
        "  # indented comment\na: x",
        "\ufeffa: x",
        "",
    ],
)
def test_front_matter_the_fast_path_leaves_to_yaml(text: str) -> None:
    from hql.vault.yamldata import load_simple_block_mapping

    assert load_simple_block_mapping(text) is None


def test_front_matter_fast_path_never_disagrees_with_yaml() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from hql.vault.yamldata import load_simple_block_mapping

    pieces = st.sampled_from(
        ["a", "b", "key", "x y", ":", ": ", "\n", "  ", "- ", "[", "]", ", ", "'", '"', "#"]
        + [" #", "1", "-1", "true", "null", "~", ".inf", "\\", "<<", "é", "-", "{", "0x", "."]
    )

    @settings(max_examples=300, deadline=None)
    @given(st.lists(pieces, max_size=16))
    def agree(parts: list[str]) -> None:
        text = "".join(parts)
        fast = load_simple_block_mapping(text)
        if fast is None:
            return
        try:
            assert load_mapping(text) == fast, text
        except YamlRefused:
            raise AssertionError(f"fast path accepted {text!r}, YAML refuses it") from None

    agree()


def test_random_documents_are_loaded_or_refused_never_crash() -> None:
    import marshal

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from hql.vault.loader import _parse

    pieces = st.sampled_from(
        ["a: ", "&x ", "*x ", "<<: ", "[", "]", "{", "}", ",", "\n", "  ", "- ", "'", '"']
        + ["!t ", "!!int ", "? ", ":", "#", "|", "1", "x", "true", "~", ".inf", "\t", "--- "]
    )

    @settings(max_examples=300, deadline=None)
    @given(st.lists(pieces, max_size=20), st.lists(pieces, max_size=6))
    def loads_or_refuses(header: list[str], annotation: list[str]) -> None:
        text = "---\n" + "".join(header) + "\n---\n[[x]] {" + "".join(annotation) + "}"
        payload = _parse(text.encode("utf-8"))
        assert payload[0] in ("ok", "refused")
        assert marshal.loads(marshal.dumps(payload)) == payload  # cacheable as is

    loads_or_refuses()
