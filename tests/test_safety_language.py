"""Programs that used to crash, hang or eat memory (issue 14, items 11-13)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import hql

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"


def test_a_very_long_integer_is_the_range_report() -> None:
    outcome = hql.run("1" * 4301)
    assert outcome.failed
    assert "outside the signed 64-bit range" in outcome.render_reports()
    assert hql.run("0" * 30 + "7").value == 7  # leading zeros are not magnitude


def _seconds(source: str) -> tuple[float, hql.Outcome]:
    started = time.process_time()
    outcome = hql.run(source)
    return time.process_time() - started, outcome


def test_parsing_a_long_list_is_linear() -> None:
    small, outcome = _seconds("[" + ", ".join(["1"] * 4000) + "] | count")
    assert outcome.value == 4000
    large, outcome = _seconds("[" + ", ".join(["1"] * 40000) + "] | count")
    assert outcome.value == 40000
    assert large < 25 * small + 1.0  # 10x the elements: linear, not 100x


def test_a_comparator_sort_is_n_log_n() -> None:
    numbers = [(i * 7919) % 10007 for i in range(10000)]
    source = f"[{', '.join(map(str, numbers))}] | sort(by = (a, b) => compare(a, b))"
    started = time.process_time()
    outcome = hql.run(source)
    assert time.process_time() - started < 20  # the insertion sort took minutes
    assert not outcome.failed, outcome.render_reports()[:300]
    assert list(outcome.value) == sorted(numbers)
    descending = hql.run("[3, 1, 2, 1] | sort(by = (a, b) => compare(a, b), descending = true)")
    assert list(descending.value) == [3, 2, 1, 1]


def test_nested_sharing_ends_with_a_report_naming_the_expression() -> None:
    lines = ["a0 = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for level in range(1, 9):
        previous = f"a{level - 1}"
        lines.append(f"a{level} = [{', '.join([previous] * 10)}]")
    lines.append("a8 == a8")
    source = "\n".join(lines)
    assert len(source) < 500
    started = time.process_time()
    outcome = hql.run(source)
    assert time.process_time() - started < 10
    assert outcome.failed
    report = outcome.render_reports()
    assert "more than 10,000,000 elements" in report
    assert "`[a5, a5, a5" in report  # the expression that made it: 10^7 elements and more


def test_a_cross_product_of_cards_ends_with_a_report(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(SAMPLE, tmp_path / "v")
    (tmp_path / "v" / "hql.toml").write_text("[limits]\nelements = 20000\n")
    vault = hql.open_vault(tmp_path / "v", use_cache=False)
    source = (
        "cards | flat_map(a => cards | flat_map(b => cards | flat_map(c => "
        "cards | map(d => [a.name, b.name, c.name, d.name]))))"
    )
    outcome = hql.run(source, vault)
    assert outcome.failed and "more than 20,000 elements" in outcome.render_reports()
    assert not hql.run("cards | flat_map(a => cards | map(b => a.name)) | count", vault).failed


def test_a_long_text_is_over_the_byte_budget(tmp_path: Path) -> None:
    (tmp_path / "hql.toml").write_text("[limits]\nbytes = 1000\n")
    vault = hql.open_vault(tmp_path, use_cache=False)
    words = " + ".join(['"' + "x" * 100 + '"'] * 20)
    outcome = hql.run(words, vault)
    assert outcome.failed and "more than 1,000 bytes" in outcome.render_reports()


@pytest.mark.parametrize("n", [10_000])
def test_statements_parse_in_linear_time(n: int) -> None:
    source = "\n".join(f"a{i} = {i}" for i in range(n)) + "\na0"
    outcome = hql.run(source)
    assert outcome.value == 0


# --- 12, continued: a literal of 10^5 elements parses, checks and runs in a few seconds ---


def _work_to_parse(elements: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(climbs of the precedence ladder worked out, tokens read the general way) while
    parsing a list of `elements` integers with fresh tables."""
    from hql.syntax import parser, tokens

    counts = {"climbs": 0, "general": 0}

    def counted(name: str, real: Any) -> Any:
        def wrapper(*args: Any) -> Any:
            counts[name] += 1
            return real(*args)

        return wrapper

    parser._tables.cache_clear()  # the climbs are remembered with the tables
    with monkeypatch.context() as patched:
        patched.setattr(parser, "_collapse", counted("climbs", parser._collapse))
        patched.setattr(
            tokens._Scanner, "well_formed", counted("general", tokens._Scanner.well_formed)
        )
        patched.setattr(
            tokens._Scanner, "careful_step", counted("general", tokens._Scanner.careful_step)
        )
        program = parser.parse("[" + ", ".join(["1"] * elements) + "] | count")
    assert len(program.statements) == 1
    return counts["climbs"], counts["general"]


def test_parsing_a_long_list_does_a_constant_amount_of_work_per_element(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small, large = _work_to_parse(2_000, monkeypatch), _work_to_parse(20_000, monkeypatch)
    # An operand's climb up the precedence ladder (about ten `?rule` collapses) is worked
    # out once per context, not once per element; and plain tokens never take the general
    # lexer path (a regex and a dispatch per token).
    assert small == large, (small, large)
    assert large[0] <= 40 and large[1] == 0, large


def _tokens_both_ways(source: str, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    from hql.diagnostics import HqlError
    from hql.syntax import tokens

    def outcome() -> object:
        try:
            return [tuple(token) for token in tokens.tokenize(source)]
        except HqlError as error:
            return error.report

    fast = outcome()
    with monkeypatch.context() as patched:
        patched.setattr(tokens._Scanner, "run_ascii", lambda self: None)  # the general path only
        general = outcome()
    return fast, general


def test_the_ascii_lexer_reads_exactly_what_the_general_one_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import random

    golden = Path(__file__).resolve().parent / "golden"
    programs = [p.read_text(encoding="utf-8") for p in sorted(golden.rglob("*.hql")) if p.is_file()]
    pieces = [
        "1", "-1", "1.5", "-2.5", "1_000", "12a", "1.", "x-1", "a - 1", "[[oauth]]", "[[",
        '"s"', '"a\\\\n"', '"bad\\\\q"', "$p", "$1", "//c\n", "==", "=>", "->", "??", "<=",
        ">=", "|", ".", ",", "(", ")", "{", "}", "[", "]", ":", "+", "*", "%", "/", "<", ">",
        "?", "=", " ", "\t", "\n", "true", "false", "and", "not", "9" * 19, "9" * 18, "é", "→",
    ]  # fmt: skip
    rng = random.Random(14)
    programs += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))) for _ in range(800)]
    assert len(programs) > 800
    for program in programs:
        fast, general = _tokens_both_ways(program, monkeypatch)
        assert fast == general, program


def _sorted_both_ways(
    source: str, monkeypatch: pytest.MonkeyPatch, vault: object = None
) -> tuple[object, object]:
    from hql.steps import core

    fast = hql.run(source, vault)
    with monkeypatch.context() as patched:
        patched.setattr(core, "_compares_itself", lambda call: None)
        patched.setattr(core, "_plainly_ordered", lambda values: False)
        general = hql.run(source, vault)
    return (fast.value, fast.render_reports()), (general.value, general.render_reports())


def test_sorting_by_compare_or_by_plain_values_orders_as_the_comparator_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import random

    rng = random.Random(7)
    big = 2**53
    number_lists = [
        [rng.randrange(-50, 50) for _ in range(200)],
        [rng.choice([big - 1, big, big + 1, -big - 3, 10**18, 9, 10, 3]) for _ in range(60)],
    ]
    word_lists = [
        [rng.choice(["b", "a", "B", "é", "e", "zz", "", "Ω", "a b", "10", "9"]) for _ in range(80)]
    ]
    literals = [str(values) for values in number_lists]
    literals += ["[" + ", ".join(f'"{word}"' for word in words) + "]" for words in word_lists]
    literals.append("[1.5, 2, -0.5, 2.0, 1]")
    tails = [
        "sort(by = (a, b) => compare(a, b))",
        "sort(by = (a, b) => compare(b, a))",
        "sort(by = (x, y) => compare(y, x), descending = true)",
        "sort(by = (a, b) => compare(a, b)) | take(7)",
        "sort",
        "sort(descending = true)",
        "sort | take(5)",
        "sort(descending = true) | take(5)",
    ]
    for literal in literals:
        for tail in tails:
            fast, general = _sorted_both_ways(f"{literal} | {tail}", monkeypatch)
            assert fast == general, (literal, tail)
    vault = hql.open_vault(SAMPLE, use_cache=False)
    for tail in [
        "sort(by = c => c.title)",
        "sort(by = c => c.title, descending = true) | take(3)",
        "sort(by = c => size(c.links))",
        "sort(by = c => size(c.links), descending = true)",
        "sort(by = (a, b) => compare(a.name, b.name))",
    ]:
        fast, general = _sorted_both_ways(f"cards | {tail} | map(c => c.name)", monkeypatch, vault)
        assert fast == general, tail


def test_a_literal_of_a_hundred_thousand_elements_is_cheap_to_sort_by_compare() -> None:
    from hql.steps import core

    calls = 0
    real = core._comparator_sort

    def counted(*args: object) -> object:
        nonlocal calls
        calls += 1
        return real(*args)  # type: ignore[arg-type]

    core._comparator_sort = counted  # type: ignore[assignment]
    try:
        source = "[" + ", ".join(str(i % 1000) for i in range(100_000)) + "]"
        outcome = hql.run(source + " | sort(by = (a, b) => compare(b, a)) | count")
        assert outcome.value == 100_000
        assert calls == 0  # no lambda call per comparison for `compare` itself
        other = hql.run("[3, 1, 2] | sort(by = (a, b) => compare(a + 0, b))")
        assert list(other.value) == [1, 2, 3] and calls == 1  # any other comparator is called
    finally:
        core._comparator_sort = real  # type: ignore[assignment]
