"""The text steps of everyday.md section 2: each as a step and as a direct call, their typing,
their refusals with spans, absence and Data, and RE2 patterns that cannot hang."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import hql
from hql.vault import Vault

VAULT = Path(__file__).parent / "fixtures" / "vault"


@pytest.fixture(scope="module")
def vault() -> Vault:
    return hql.open_vault(VAULT)


def run(text: str, vault: Vault | None = None) -> hql.Outcome:
    return hql.run(text, vault=vault)


def shown(text: str, vault: Vault | None = None) -> str:
    outcome = run(text, vault)
    assert not outcome.failed, outcome.reports
    return outcome.text()


def typed(text: str) -> str:
    outcome = run(text)
    assert not outcome.failed, outcome.reports
    return str(outcome.type)


def refusal(text: str) -> tuple[str, str, str]:
    """(stage, message, the program text the report points at)."""
    outcome = run(text)
    assert outcome.failed
    report = outcome.reports[0]
    pointed = text.encode()[report.span.start : report.span.end].decode()
    return report.stage.value, report.message, pointed


@pytest.mark.parametrize(
    ("step", "call", "direct", "value", "type_"),
    [
        ("lower", '"Bearer Tokens" | lower', 'lower("Bearer Tokens")', "bearer tokens", "String"),
        ("upper", '"straße" | upper', 'upper("straße")', "STRASSE", "String"),
        ("trim", '"  owl \\n" | trim', 'trim("  owl \\n")', "owl", "String"),
        ("length", '"héllo" | length', 'length("héllo")', "5", "Int"),
        (
            "starts_with",
            '"oauth2" | starts_with("oa")',
            'starts_with("oauth2", "oa")',
            "true",
            "Bool",
        ),
        ("ends_with", '"a.md" | ends_with(".txt")', 'ends_with("a.md", ".txt")', "false", "Bool"),
        ("split", '"a,b,,c" | split(",")', 'split("a,b,,c", ",")', "[a, b, , c]", "List<String>"),
        ("replace", '"a-b-c" | replace("-", " ")', 'replace("a-b-c", "-", " ")', "a b c", "String"),
        ("matches", '"OAuth 2" | matches("^oauth \\\\d$")', "", "false", "Bool"),
        ("contains", '"bearer" | contains("ear")', 'contains("bearer", "ear")', "true", "Bool"),
    ],
)
def test_each_text_step_as_a_step_and_a_direct_call(
    step: str, call: str, direct: str, value: str, type_: str
) -> None:
    assert shown(call) == value
    assert typed(call) == type_
    if direct:
        assert shown(direct) == value
        assert typed(direct) == type_


def test_split_on_an_empty_separator_gives_the_characters() -> None:
    assert shown('"owl" | split("")') == "[o, w, l]"


def test_matches_searches_and_anchors_and_flags_work() -> None:
    assert shown('"The OAuth flow" | matches("OAuth")') == "true"
    assert shown('"The OAuth flow" | matches("^OAuth")') == "false"
    assert shown('"The OAuth flow" | matches("(?i)oauth")') == "true"
    assert shown('"café" | matches("^caf.$")') == "true"  # a character, not a byte


def test_a_catastrophic_pattern_runs_in_linear_time() -> None:
    program = f'"{"a" * 50_000}b" | matches("(a+)+$")'
    started = time.perf_counter()
    assert shown(program) == "false"
    assert time.perf_counter() - started < 5  # a backtracking engine would never finish


def test_a_bad_literal_pattern_is_a_type_error_at_the_pattern() -> None:
    assert refusal('"x" | matches("(a")') == (
        "type",
        "this is not a valid RE2 pattern: missing ): (a",
        '"(a"',
    )
    assert refusal('matches("x", "a{2,1}")')[2] == '"a{2,1}"'


def test_a_bad_computed_pattern_fails_at_the_pattern_when_it_runs() -> None:
    stage, message, pointed = refusal('p = "[z-a]"\n"x" | matches(p)')
    assert (stage, pointed) == ("evaluation", "p")
    assert message.startswith("this is not a valid RE2 pattern")


def test_contains_on_a_string_is_a_substring_and_on_collections_is_unchanged() -> None:
    assert shown('"bearer" | contains("bear")') == "true"
    assert shown('["bearer"] | contains("bear")') == "false"
    assert shown('["bearer"] | contains("bearer")') == "true"
    assert refusal('"bearer" | contains(1)')[1:] == (
        "`value` of `contains` is String, not Int",
        "1",
    )


def test_contains_on_an_optional_string_keeps_the_reference_meaning(vault: Vault) -> None:
    # An Option<T> is a collection of zero or one elements, as the reference has it.
    assert shown('[[bearer-tokens]].title | contains("Bearer")', vault) == "false"
    assert shown('[[bearer-tokens]].title | contains("Bearer tokens")', vault) == "true"


def test_absence_gives_absence() -> None:
    assert shown("[[nowhere]].title | lower") == "none"
    assert typed("[[nowhere]].title | lower") == "Option<String>"
    assert typed('[[nowhere]].title | split(",")') == "Option<List<String>>"
    assert shown('"abc" | starts_with([[nowhere]].title)') == "none"


def test_data_is_typed_when_the_program_runs(vault: Vault) -> None:
    outcome = run(
        'cards | map(c => c.metadata.status | upper) | filter(s => s == "TODO") | size', vault
    )
    assert not outcome.failed and outcome.reports == []
    assert int(outcome.text()) > 0
    assert typed('{s: "Owl"}.s | lower') == "Option<String>"
    assert shown('{s: "Owl"}.s | lower') == "owl"


def test_data_of_another_kind_gives_absence_and_one_counted_warning(vault: Vault) -> None:
    outcome = run('cards | map(c => c.metadata | lower) | filter(s => s == "x") | size', vault)
    assert outcome.text() == "0"
    (report,) = outcome.reports
    count = len(vault.cards)
    assert report.severity.word == "warning"
    assert report.message == (
        f"`lower` works on text; {count} values here held something else and gave none"
    )
    assert shown("{a: 1}.a | length") == "none"


@pytest.mark.parametrize(
    ("program", "message", "pointed"),
    [
        ("1 | lower", "`lower` works on a String, not Int", "1"),
        (
            '["a"] | upper',
            "`upper` works on a String, not List<String>; for each element write `map(x => upper(x))`",
            '["a"]',
        ),
        (
            "[1] | length",
            "`length` counts the characters of a String; for a collection write `size`",
            "[1]",
        ),
        ('"a" | split(1)', "`sep` of `split` is String, not Int", "1"),
        ('"a" | replace("a")', "`replace` needs `new`", 'replace("a")'),
        (
            '"a" | starts_with(x => x)',
            "`prefix` of `starts_with` is a value, not a lambda",
            "x => x",
        ),
        ("trim(1.5)", "`trim` works on a String, not Float", "1.5"),
    ],
)
def test_refusals_name_the_types_and_point_at_the_culprit(
    program: str, message: str, pointed: str
) -> None:
    stage, found, at = refusal(program)
    assert stage == "type"
    assert (found, at) == (message, pointed)


def test_re2_is_loaded_only_by_programs_that_match() -> None:
    code = (
        "import sys, hql\n"
        "hql.run('\"a\" | lower')\n"
        "assert 're2' not in sys.modules\n"
        'hql.run(\'"a" | matches("a")\')\n'
        "assert 're2' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # RE2 logs nothing of its own
