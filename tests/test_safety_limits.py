"""Hostile programs and parameters, round three: reports instead of internal errors, linear
parsing of deep nesting, budgets that stop a value while it is being built, and a time guard."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hql
from hql.values import ABSENT

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"
HQL = [sys.executable, "-m", "hql"]
GIGABYTE = 1024**3


def _limited(gigabytes: float) -> object:
    """A preexec_fn holding a child process to this much address space."""

    def limit() -> None:
        size = int(gigabytes * GIGABYTE)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return limit


def _hql(
    *args: str, memory: float = 1.5, timeout: float = 60, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HQL, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
        preexec_fn=_limited(memory),  # noqa: PLW1509  (nothing else runs threads here)
        env={**os.environ, "HQL_DEBUG": ""},
    )


# --- internal errors that are reports ---------------------------------------------------


def test_a_ten_million_character_literal_lexes_in_little_memory(tmp_path: Path) -> None:
    program = tmp_path / "big.hql"
    program.write_text('"' + "a" * 10**7 + '" | length\n')
    done = _hql("run", str(program), memory=0.6)  # the regex's stack took 1.2 GB
    assert done.returncode == 0, done.stderr[:300]
    assert done.stdout.strip() == "10000000"
    escaped = tmp_path / "escaped.hql"
    escaped.write_text('"' + "\\n" * (5 * 10**6) + "\\\\" + '" | length\n')
    done = _hql("run", str(escaped), memory=0.6)
    assert done.stdout.strip() == "5000001", done.stderr[:300]


def test_string_escapes_decode_as_written() -> None:
    cases = {
        r'"a\\nb"': "a\\nb",
        r'"a\\\nb"': "a\\\nb",
        r'"\"\t\\"': '"\t\\',
        r'"x\\\"y"': 'x\\"y',
        '"é\\n"': "é\n",
    }
    for literal, value in cases.items():
        outcome = hql.run(literal)
        assert outcome.value == value, literal
    bad = hql.run('"abc\\q"')
    assert bad.failed and "escape" in bad.render_reports()


def test_running_out_of_memory_is_a_report_not_a_defect(tmp_path: Path) -> None:
    program = tmp_path / "grow.hql"
    program.write_text('x = "' + "a" * 10**7 + '"\nx + x + x + x + x + x + x + x\n')
    done = _hql("--format", "json", "run", str(program), memory=0.12)
    assert "internal error" not in done.stderr, done.stderr[:300]
    text = done.stdout + done.stderr
    assert "more memory than this process may use" in text, text[:500]


def test_number_of_thousands_of_digits_is_absent_or_a_float() -> None:
    digits = "1" * 5000
    assert hql.run(f'"{digits}" | number').value is ABSENT  # past the Float range
    assert hql.run(f'number("-{digits}")').value is ABSENT
    assert hql.run('"1' + "0" * 24 + '" | number').value.tree == 1e24
    assert hql.run('"00000000000000000000042" | number').value.tree == 42
    done = _hql("eval", f'"{digits}" | number')
    assert done.returncode == 0 and "internal error" not in done.stderr


@pytest.mark.parametrize("opener", ["[", '{"a": '])
def test_a_deeply_nested_parameter_is_refused(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    deep = opener * 900 + "1" + closer * 900
    done = _hql("eval", "$x", "--param-json", f"x={deep}")
    assert done.returncode == 1
    assert "nests lists or maps deeper than 64 levels" in done.stderr, done.stderr[:300]
    deeper = opener * 10_000 + "1" + closer * 10_000  # past the JSON parser's recursion
    program = "import sys\nfrom hql.cli import main\nsys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", program, "eval", "$x", "--param-json", f"x={deeper}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "deeper than 64 levels" in done.stderr, done.stderr[:300]
    with pytest.raises(hql.HostError, match="deeper than 64"):
        hql.run("$x", params={"x": json.loads("[" * 200 + "]" * 200)})
    assert hql.run("$x | size", params={"x": json.loads("[" * 60 + "]" * 60)}).value == 1


# --- deep nesting: refused with a report -------------------------------------------------
# That the refusal takes linear time is measured by bench/nesting.py (a ratio against the
# same run's shallow program), not here: a timed assertion fails on a loaded machine.


@pytest.mark.parametrize(
    "opener, closer",
    [("(", ")"), ("f(", ")"), ("x < ", ""), ("[", "]"), ("{a: ", "}"), ("Set<", "")],
)
def test_deep_nesting_is_refused_with_a_report(opener: str, closer: str) -> None:
    for depth in (10_000, 50_000):
        outcome = hql.check(opener * depth + "1" + closer * depth)
        reports = outcome.render_reports()
        assert outcome.failed and "internal error" not in reports
        assert " --> <expression>:1:" in reports  # the report points into the program


def test_type_arguments_still_read_as_type_arguments() -> None:
    assert str(hql.check("Set<Int>([1])").type) == "Set<Int>"
    assert str(hql.check("Set<List<Int>>([ [1] ])").type) == "Set<List<Int>>"
    assert str(hql.check("x: List<Set<Int>> = []\nx").type) == "List<Set<Int>>"
    assert hql.run("1 < 2").value is True
    assert hql.run("x = 3\nx < 4 and 2 > 1").value is True


# --- budgets that count before building ------------------------------------------------------


def _budget_vault(tmp_path: Path, elements: int) -> hql.Vault:
    shutil.copytree(SAMPLE, tmp_path / "v")
    (tmp_path / "v" / "hql.toml").write_text(f"[limits]\nelements = {elements}\n")
    return hql.open_vault(tmp_path / "v", use_cache=False)


def test_a_cross_product_stops_at_the_budget_not_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hql import compiler

    vault = _budget_vault(tmp_path, 20_000)
    fields = 0
    real = compiler.get_field

    def counted(value: object, name: str) -> object:
        nonlocal fields
        fields += 1
        return real(value, name)

    monkeypatch.setattr(compiler, "get_field", counted)
    nested = "cards | map(e => a.name)"
    for name in "dcba":
        nested = f"cards | flat_map({name} => {nested})"
    outcome = hql.run(nested.replace("cards | flat_map(a", "cards | flat_map(a", 1), vault)
    assert outcome.failed and "more than 20,000 elements" in outcome.render_reports()
    # 18 cards: one `b` level alone is 18^4 = 104,976 names; it used to be built whole
    assert fields < 2 * 20_000, fields
    fields = 0
    deep_map = "cards | map(a => cards | map(b => cards | map(c => cards | map(d => a.name))))"
    outcome = hql.run(deep_map, vault)
    assert outcome.failed and "more than 20,000 elements" in outcome.render_reports()
    assert fields < 2 * 20_000, fields
    small = hql.run("cards | flat_map(a => cards | map(b => [a.name, b.name])) | count", vault)
    assert small.value == 18 * 18


def test_flatten_and_flat_map_keep_their_answers(tmp_path: Path) -> None:
    assert list(hql.run("[ [1, 2], [3] ] | flatten").value) == [1, 2, 3]
    assert list(hql.run('["a b", "c"] | flat_map(s => split(s, " "))').value) == ["a", "b", "c"]
    vault = hql.open_vault(SAMPLE)
    tags = hql.run("cards | flat_map(c => c.metadata.tags) | distinct | count", vault)
    assert not tags.failed and tags.value > 0
    assert hql.run("[1, 2] | map(n => [n, n])").text() == "[[1, 1], [2, 2]]"


def test_split_replace_and_join_are_refused_before_they_allocate(tmp_path: Path) -> None:
    # 2^27 characters: a split into characters used to take 4.7 GB before the budget spoke
    doubling = ['t0 = "' + "a" * 1024 + '"'] + [f"t{i} = t{i - 1} + t{i - 1}" for i in range(1, 18)]
    base = "\n".join(doubling)
    for last, expected in [
        ('t17 | split("") | size', "more than 10,000,000 elements"),
        ('t17 | split("a") | size', "more than 10,000,000 elements"),
        ('t17 | replace("a", "aaa") | length', "bytes of text"),
        ('t17 | replace("", "b") | length', "bytes of text"),
        ("[t17, t17, t17] | join(t17) | length", "bytes of text"),
    ]:
        program = tmp_path / "split.hql"
        program.write_text(base + "\n" + last + "\n")
        done = _hql("run", str(program), memory=1.2)
        assert done.returncode == 1, (last, done.stdout[:200])
        assert expected in done.stderr, (last, done.stderr[:400])
    assert list(hql.run('"a,b,,c" | split(",")').value) == ["a", "b", "", "c"]
    assert hql.run('"abc" | replace("", "-")').value == "-a-b-c-"
    assert hql.run('["a", "b"] | join("--")').value == "a--b"


# --- a time guard for the command line: `[limits] seconds` -------------------------------------


def test_limits_seconds_stops_a_runaway_program_on_the_command_line(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE, tmp_path / "v")
    (tmp_path / "v" / "hql.toml").write_text("[limits]\nseconds = 2\n")
    runaway = (
        "cards | flat_map(a => cards | flat_map(b => cards | flat_map(c => cards | flat_map("
        "d => cards | flat_map(e => cards | map(f => a.name)))))) | count"
    )
    started = time.monotonic()
    done = _hql("--vault", str(tmp_path / "v"), "eval", runaway, timeout=60)
    assert time.monotonic() - started < 20  # it ran for half a minute and more
    assert done.returncode == 1
    assert "stopped after 2 seconds (`[limits] seconds`" in done.stderr, done.stderr[:300]
    deep = "(" * 60_000 + "1" + ")" * 60_000  # the parser is guarded too
    done = _hql("--vault", str(tmp_path / "v"), "run", "-", stdin=deep, timeout=60)
    assert done.returncode == 1 and "internal error" not in done.stderr
    quick = _hql("--vault", str(tmp_path / "v"), "eval", "cards | count")
    assert quick.returncode == 0 and quick.stdout.strip() == "18"


def test_the_guard_is_off_unless_configured() -> None:
    from hql.deadline import configured_seconds

    assert configured_seconds({}) is None
    assert configured_seconds({"seconds": 0}) is None
    assert configured_seconds({"seconds": True}) is None
    assert configured_seconds({"seconds": "5"}) is None
    assert configured_seconds({"seconds": 2.5}) == 2.5
    session = hql.Session(None, seconds=0.5)
    started = time.monotonic()
    outcome = session.run("[1, 2] | map(n => n)")
    assert list(outcome.value) == [1, 2] and time.monotonic() - started < 5


def test_a_bad_limits_entry_is_reported_at_its_line_and_the_default_kept(tmp_path: Path) -> None:
    from hql.budget import MAX_ELEMENTS
    from hql.vault.config import load_config

    (tmp_path / "hql.toml").write_text(
        '[vault]\nwatch = false\n\n[limits]\nelements = -5\nbytes = "lots"\n'
        "second = 3\nseconds = 0\n",
        encoding="utf-8",
    )
    _, warnings = load_config(tmp_path)
    said = {warning.subject: warning.message for warning in warnings}
    where = str(tmp_path / "hql.toml")
    assert said == {
        f"{where}:5": "`limits.elements` must be a positive integer; ignored",
        f"{where}:6": "`limits.bytes` must be a positive integer; ignored",
        f"{where}:7": (
            "unknown key `second` in `[limits]`; known keys: `elements`, `bytes`, `seconds`;"
            " ignored"
        ),
        f"{where}:8": "`limits.seconds` must be a positive number of seconds; ignored",
    }
    (tmp_path / "n.md").write_text("# N\n", encoding="utf-8")
    vault = hql.open_vault(tmp_path, use_cache=False)
    assert hql.run("cards | count", vault=vault).value == 1
    from hql.budget import Budget

    assert Budget.from_config(vault.config.section("limits")).max_elements == MAX_ELEMENTS
    (tmp_path / "hql.toml").write_text("[limits]\nelements = 5\nseconds = 2.5\n")
    assert load_config(tmp_path)[1] == []
