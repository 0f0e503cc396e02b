"""Programs that used to crash, hang or eat memory (issue 14, items 11-13)."""

from __future__ import annotations

import time
from pathlib import Path

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
