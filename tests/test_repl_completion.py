"""REPL completion, continuation and highlighting, through prompt-toolkit's Document API."""

from __future__ import annotations

from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from hql.api import Session, open_vault
from hql.repl.completer import HqlCompleter, fuzzy_rank
from hql.repl.continuation import is_complete
from hql.repl.lexer import HqlLexer, classify

BIRDS = Path(__file__).parent / "fixtures" / "birds"


@pytest.fixture(scope="module")
def completer() -> HqlCompleter:
    session = Session(open_vault(BIRDS))
    assert not session.run('owls = cards | filter(c => c.name == "barn-owl")').failed
    return HqlCompleter(session)


def complete(
    completer: HqlCompleter, text: str, cursor: int | None = None
) -> list[tuple[str, str, int]]:
    document = Document(text, len(text) if cursor is None else cursor)
    found = completer.get_completions(document, CompleteEvent(completion_requested=True))
    return [(c.text, c.display_meta_text, c.start_position) for c in found]


def texts(completer: HqlCompleter, text: str, cursor: int | None = None) -> list[str]:
    return [text for text, _, _ in complete(completer, text, cursor)]


def test_step_names_after_a_pipe_carry_their_summaries(completer: HqlCompleter) -> None:
    found = complete(completer, "cards | ta")
    assert [text for text, _, _ in found][:2] == ["take", "table"]
    take = next(item for item in found if item[0] == "take")
    assert "first" in take[1] or "elements" in take[1]  # the registry's summary is the meta
    assert take[2] == -2  # replaces the two letters typed


def test_every_step_is_offered_after_a_bare_pipe(completer: HqlCompleter) -> None:
    assert {"count", "take", "expand", "graph", "dot"} <= set(texts(completer, "cards | "))


def test_only_steps_that_can_take_the_input_are_offered(completer: HqlCompleter) -> None:
    on_a_set = set(texts(completer, "cards | "))
    assert {"count", "take", "graph", "table"} <= on_a_set
    assert "get" not in on_a_set  # `get` looks keys up in a map
    assert "relevant" not in on_a_set  # relevant needs a ranking
    assert "relevant" in texts(completer, 'import lexical\ncards | lexical("owl") | ')
    on_a_number = set(texts(completer, "x = cards | count | "))  # the binding is not the input
    assert "table" in on_a_number and "count" not in on_a_number
    assert "get" in texts(completer, 'Map([1, 2], ["a", "b"]) | ')
    after_a_presenter = set(texts(completer, "cards | table | "))
    assert "table" in after_a_presenter and "take" not in after_a_presenter
    # earlier statements of the input count, and bound names too
    assert "relevant" not in texts(completer, "n = 2\nowls | take(n) | ")
    # when the input does not check, every step is offered
    assert {"get", "relevant", "count"} <= set(texts(completer, "nosuchname | "))


def test_parameter_names_appear_when_the_parenthesis_is_typed(completer: HqlCompleter) -> None:
    def while_typing(text: str) -> list[str]:
        found = completer.get_completions(Document(text), CompleteEvent(text_inserted=True))
        return [c.text for c in found]

    assert while_typing("cards | expand(") == ["depth = ", "direction = ", "missing = "]
    assert while_typing("cards | expand(depth = 2, ") == ["direction = ", "missing = "]
    assert while_typing("cards | count") == []  # plain typing offers no names before a word
    assert while_typing("(") == []


def test_fuzzy_matching_finds_letters_in_order(completer: HqlCompleter) -> None:
    assert texts(completer, "cards | tk")[0] == "take"
    # Prefix matches before fuzzy ones, in the registry's order: the everyday step first.
    assert texts(completer, "cards | fi")[:2] == ["filter", "first"]
    assert "expand" in texts(completer, "cards | xpd")
    assert fuzzy_rank("tk", "take") is not None and fuzzy_rank("kt", "take") is None
    assert fuzzy_rank("ta", "take")[0] < fuzzy_rank("ak", "take")[0]  # type: ignore[index]


def test_parameter_names_inside_a_steps_parentheses(completer: HqlCompleter) -> None:
    assert texts(completer, "cards | expand(")[:2] == ["depth = ", "direction = "]
    assert texts(completer, "cards | expand(depth = 1, ")[0] == "direction = "
    assert texts(completer, "cards | take(")[0] == "n = "


def test_extension_names_after_import(completer: HqlCompleter) -> None:
    assert {"core", "graph", "present"} <= set(texts(completer, "import "))
    assert texts(completer, "import gr") == ["graph"]


def test_card_names_inside_a_document_reference(completer: HqlCompleter) -> None:
    found = complete(completer, "[[barn")
    assert [text for text, _, _ in found] == [
        "barn-owl]]",
        "barn-swallow]]",
        "barn-owl-in-tytonidae]]",
    ]
    assert found[0][1] == "Barn owl"
    assert texts(completer, "[[barn-o]]", cursor=len("[[barn-o"))[0] == "barn-owl"  # `]]` is there


def test_lambda_parameters_get_the_fields_of_the_steps_input(completer: HqlCompleter) -> None:
    # the prefix match first; `ctime`, `outlinks`, … hold t-i in order, so they follow
    assert texts(completer, "cards | filter(c => c.ti") == [
        "title",
        "ctime",
        "outlinks",
        "triggers",
        "topics",
    ]
    found = complete(completer, "owls | map(c => c.")
    assert ("kind", "String", 0) in found and ("metadata", "Data", 0) in found
    hits = "cards | take(5) | sort(by = c => c.name) | map(c => c.card"
    assert texts(completer, hits) == []  # cards have no `card` field
    multi_line = "owls |\n  take(1) |\n  filter(c => c.metadata.knowledge.re"
    assert texts(completer, multi_line)[0] == "relation"


def test_fields_after_a_dot_on_a_card_and_metadata_keys(completer: HqlCompleter) -> None:
    assert texts(completer, "[[barn-owl]].ti") == [
        "title",
        "ctime",
        "outlinks",
        "triggers",
        "topics",
    ]
    assert {"name", "title", "metadata", "kind"} <= set(texts(completer, "cards | filter(c => c."))
    assert {"status", "knowledge"} <= set(texts(completer, "cards | filter(c => c.metadata."))
    assert {"type", "relation"} <= set(
        texts(completer, "cards | filter(c => c.metadata.knowledge.")
    )


def test_bound_names_with_their_types(completer: HqlCompleter) -> None:
    found = complete(completer, "ow")
    assert found[0][:2] == ("owls", "Set<Card>")


def test_completion_in_the_middle_of_a_line(completer: HqlCompleter) -> None:
    text = "cards | ta | count"
    assert texts(completer, text, cursor=len("cards | ta"))[0] == "take"
    assert texts(completer, "[[barn-o]] | graph", cursor=len("[[barn-o"))[0] == "barn-owl"
    assert texts(completer, "[[barn-o | graph", cursor=len("[[barn-o"))[0] == "barn-owl]]"


def test_meta_commands_complete_and_their_arguments_too(completer: HqlCompleter) -> None:
    assert texts(completer, ":ty") == [":type"]
    assert texts(completer, ":type cards | cou") == ["count"]


def test_nothing_is_offered_inside_a_string(completer: HqlCompleter) -> None:
    assert texts(completer, 'cards | filter(c => c.name == "ba') == []


@pytest.mark.parametrize(
    ("text", "complete"),
    [
        ("cards | count", True),
        ("cards |", False),
        ("cards | take(", False),
        ("owls = ", False),
        ("f = (a, b) =>", False),
        ("[[barn", False),
        ('"unterminated', True),  # shown as an error at once
        ("cards |\n", True),  # a blank line ends any input
        ('cards | filter(c =>\n  c.kind == "ConceptCard")', True),
        (":type cards |", False),
        (":help", True),
        ("List<Int>", True),
        ("1 // a comment", True),
    ],
)
def test_enter_runs_complete_statements_and_continues_the_rest(text: str, complete: bool) -> None:
    assert is_complete(text) is complete


def test_highlighting_classes_come_from_the_language_tokens() -> None:
    text = 'import graph\ncards | take(3) // first "three"\nx = [[barn-owl]]'
    classes = classify(text)

    def at(fragment: str) -> str:
        return classes[text.index(fragment)]

    assert at("import") == "keyword"
    assert at("take") == "step"
    assert at("3") == "number"
    assert at("|") == "operator"
    assert at("// first") == "comment" and at('"three"') == "comment"
    assert at("[[barn") == "docref"
    assert classify('x = "open')[4:] == ["error"] * 5


def test_highlighting_knows_the_everyday_operators() -> None:
    text = "and = 1\nx > 2 and not y ?? $q - 1"
    classes = classify(text)

    def at(fragment: str) -> str:
        return classes[text.index(fragment)]

    assert at("and =") == "name"  # a name where no operator can stand
    assert at("and not") == "keyword" and at("not") == "keyword"
    assert at(">") == "operator" and at("??") == "operator" and at("- 1") == "operator"
    assert at("$q") == "name"


def test_lexer_splits_styles_by_line() -> None:
    lines = HqlLexer().lex_document(Document("cards |\n  count"))
    assert "".join(text for _, text in lines(1)) == "  count"
    assert ("class:hql.step", "c") in lines(1)
    assert lines(5) == []


def test_the_everyday_library_is_completed(completer: HqlCompleter) -> None:
    after_text = set(texts(completer, '"Barn Owl" | '))
    assert {"lower", "starts_with", "matches", "contains", "exists"} <= after_text
    assert "sum" not in after_text  # a String is no collection of numbers
    after_list = set(texts(completer, "cards | map(c => c.title) | "))
    assert {"distinct", "join", "first"} <= after_list and "lower" not in after_list
    assert "flat_map" in texts(completer, "cards | fl")
    assert "group" in texts(completer, "cards | gr")
    direct = texts(completer, "x = ro")
    assert "round" in direct
    assert "if" in texts(completer, "x = i")


def test_metadata_offers_the_notes_properties_first_and_marks_the_extensions_keys(
    completer: HqlCompleter,
) -> None:
    found = complete(completer, "cards | filter(c => c.metadata.")
    assert [text for text, _, _ in found] == ["knowledge", "status", "bm25", "lexical"]
    assert [meta for _, meta, _ in found] == [
        "property",
        "property",
        "bm25 extension's, not a property",
        "lexical extension's, not a property",
    ]
    # typing keeps the order: a property before an extension key that matches as well
    # (`lexical` holds the `e` earlier than `knowledge` does)
    assert texts(completer, "cards | filter(c => c.metadata.e") == ["knowledge", "lexical"]
    under = complete(completer, "cards | filter(c => c.metadata.bm25.")
    assert under == [
        ("indexed", "bm25 extension's key", 0),
        ("model", "bm25 extension's key", 0),
    ]
