"""The `hql` command line (reference section 14), run as a subprocess.

Exit codes: 0 success (warnings allowed), 1 a language or host failure, 2 a usage error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

VAULT = Path(__file__).parent / "fixtures" / "vault"


def hql(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    environment = {key: value for key, value in os.environ.items() if key != "HQL_REPORT"}
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, "-m", "hql", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr


def test_version_and_help() -> None:
    assert hql("--version") == (0, "hql 0.1.0\n", "")
    code, out, _ = hql("--help")
    assert code == 0 and "Hyper Query Language" in out
    for command in ("eval", "check", "run", "repl", "builtins", "config"):
        assert command in out


@pytest.mark.parametrize(
    "args", [(), ("frob",), ("eval",), ("run",), ("--format", "yaml", "eval", "1")]
)
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    code, out, err = hql(*args)
    assert code == 2 and out == "" and "usage: hql" in err


def test_eval_prints_the_value() -> None:
    assert hql("eval", "1 + 1") == (0, "2\n", "")
    assert hql("eval", "-1") == (0, "-1\n", "")  # a program may start with `-`
    assert hql("eval", '"Bearer tokens"')[1] == "Bearer tokens\n"


def test_a_language_failure_exits_1_with_the_report_on_stderr() -> None:
    code, out, err = hql("eval", "1 + 2.0")
    assert (code, out) == (1, "")
    assert err.startswith(
        "type error: addition requires two Int or two Float operands\n --> <expression>:1:5\n"
    )
    assert "1 | 1 + 2.0\n  |     ^^^\n" in err


def test_warnings_exit_0() -> None:
    code, out, err = hql("--vault", str(VAULT), "eval", "[[nowhere]].title")
    assert (code, out) == (0, "none\n")
    assert "evaluation warning: `[[nowhere]]` does not resolve in this vault" in err


def test_quiet_prints_no_warning_but_every_failure() -> None:
    assert hql("--vault", str(VAULT), "--quiet", "eval", "[[nowhere]].title") == (0, "none\n", "")
    program = "x = [[nowhere]].title\ny = 1 / 0\ny"
    loud = hql("--vault", str(VAULT), "--report", "collect", "eval", program)
    assert "evaluation warning" in loud[2] and "division by zero" in loud[2]
    code, out, err = hql("--vault", str(VAULT), "--report", "collect", "-q", "eval", program)
    assert (code, out) == (1, "") and err.startswith("evaluation failure: division by zero")
    assert "warning" not in err


def test_options_before_or_after_the_subcommand() -> None:
    expected = "6\n"
    assert hql("--vault", str(VAULT), "eval", "cards | count")[1] == expected
    assert hql("eval", "--vault", str(VAULT), "cards | count")[1] == expected
    assert hql("eval", "cards | count", "--vault", str(VAULT))[1] == expected


def test_json_envelope() -> None:
    code, out, err = hql("--format", "json", "eval", "[1, 2] | map(x => x + 1)")
    assert code == 0 and err == ""
    assert json.loads(out) == {
        "origin": "<expression>",
        "type": "List<Int>",
        "value": [2, 3],
        "reports": [],
    }


def test_json_envelope_of_a_failure() -> None:
    code, out, _ = hql("eval", '1 + "a"', "--format", "json")
    assert code == 1
    assert json.loads(out) == {
        "origin": "<expression>",
        "type": None,
        "value": None,
        "reports": [
            {
                "severity": "error",
                "stage": "type",
                "message": "addition requires two Int or two Float operands",
                "span": {"start": 4, "end": 7},
            }
        ],
    }


def test_json_envelope_keeps_warnings_and_the_value() -> None:
    code, out, _ = hql("--vault", str(VAULT), "--format", "json", "eval", "[[nowhere]] | count")
    envelope = json.loads(out)
    assert code == 0 and envelope["value"] == 0 and envelope["type"] == "Int"
    assert [r["severity"] for r in envelope["reports"]] == ["warning"]


def test_check_prints_the_type_only(tmp_path: Path) -> None:
    program = tmp_path / "q.hql"
    program.write_text("x = [1, 2]\nx | map(n => n + 1)\n", encoding="utf-8")
    assert hql("check", str(program)) == (0, "List<Int>\n", "")
    assert hql("check", "-", stdin="[9223372036854775807] | map(n => n + 1)") == (
        0,
        "List<Int>\n",
        "",
    )


def test_run_reads_a_file_or_stdin(tmp_path: Path) -> None:
    program = tmp_path / "q.hql"
    program.write_text("// a query\ncards\n  | take(2)\n", encoding="utf-8")
    assert hql("--vault", str(VAULT), "run", str(program))[:2] == (
        0,
        "[bearer-tokens, broken-relation]\n",
    )
    code, out, err = hql("run", "-", stdin="1 +\n")
    assert (code, out) == (1, "")
    assert " --> <stdin>:" in err


def test_run_reports_carry_the_file_name(tmp_path: Path) -> None:
    program = tmp_path / "bad.hql"
    program.write_text("x = 1\nx + true\n", encoding="utf-8")
    code, _, err = hql("run", str(program))
    assert code == 1 and f" --> {program}:2:5" in err


def test_collect_mode_on_the_command_line() -> None:
    code, _, err = hql("--report", "collect", "eval", "a = nosuchthing\nb = a + 1")
    assert code == 1 and err.rstrip().endswith("2 reports: 0 failure, 2 error, 0 warning")
    _, _, err = hql("eval", "a = nosuchthing\nb = a + 1", env={"HQL_REPORT": "collect"})
    assert "2 reports" in err
    _, _, err = hql(
        "--report", "strict", "eval", "a = nosuchthing\nb = a + 1", env={"HQL_REPORT": "collect"}
    )
    assert "2 reports" not in err


def test_host_errors_exit_1() -> None:
    code, out, err = hql("--report", "loud", "eval", "1")
    assert (code, out, err) == (
        1,
        "",
        "hql: unknown report mode `loud`; expected `strict` or `collect`\n",
    )
    code, _, err = hql("--vault", str(VAULT / "oauth.hmd"), "eval", "1")
    assert code == 1 and err.startswith("hql: ") and err.rstrip().endswith("not a directory")
    code, _, err = hql("run", "/nonexistent/q.hql")
    assert code == 1 and err.startswith("hql: /nonexistent/q.hql")


def test_config() -> None:
    assert hql("config") == (0, "report mode: strict (from the default)\nvault: none\n", "")
    code, out, _ = hql("--vault", str(VAULT), "--report", "collect", "config")
    assert code == 0
    assert out.splitlines()[:2] == [
        "report mode: collect (from this query)",
        f"vault: {VAULT} (6 cards)",
    ]


def test_builtins_lists_extensions_and_signatures() -> None:
    code, out, _ = hql("builtins")
    assert code == 0
    assert "core 0.1.0 (always available)" in out
    assert "graph 0.1.0 (prelude)" in out and "present 0.1.0 (prelude)" in out
    assert "lexical 0.1.0 (imported where it is used)" in out
    assert (
        "  take\n    Collection<T> | take<T>(n: Int) -> List<T> (Ranking input stays Ranking)\n"
        in out
    )


def test_plain_repl_with_piped_stdin() -> None:
    lines = "x = 2\nx + 1\n:type x\n\n1 +\n:quit\nx\n"
    code, out, err = hql("repl", stdin=lines)
    assert code == 0
    assert out == "()\n3\nInt\n"  # no banner, no prompt when stdin is not a terminal
    assert "syntax failure: expected an expression\n --> <stdin>:1:4" in err


def test_plain_repl_ends_at_end_of_input() -> None:
    assert hql("repl", stdin="[1, 2] | count\n") == (0, "2\n", "")


def test_plain_repl_meta_commands_in_process() -> None:
    import io

    import hql
    from hql.repl.lines import run_lines

    out, err = io.StringIO(), io.StringIO()
    lines = io.StringIO("x = 1\n:vault\n:reset\nx\n:type [1]\n:q\n")
    assert run_lines(hql.Session(), lines, out, err, interactive=False) == 0
    assert out.getvalue() == "()\nvault: none\nbindings and imports forgotten\nList<Int>\n"
    assert err.getvalue().startswith("name error: `x` is not bound\n --> <stdin>:1:1")


def test_plain_repl_prompts_when_interactive() -> None:
    import io

    import hql
    from hql.repl.lines import run_lines

    out = io.StringIO()
    run_lines(hql.Session(), io.StringIO("1 + 1\n"), out, io.StringIO(), interactive=True)
    assert out.getvalue() == "hql 0.1.0. `:help` for commands, `:quit` to leave.\nhql> 2\nhql> "


def test_undecodable_stdin_is_a_host_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hql", "run", "-"],
        input=b"\xff1 + 1\n",
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.decode() == (
        "hql: <stdin>: not UTF-8 text (byte 0xff at offset 0); HQL reads programs and documents as UTF-8\n"
    )


def test_a_file_that_is_not_utf8_is_named_and_said_to_be_not_utf8(tmp_path: Path) -> None:
    program = tmp_path / "latin1.hql"
    program.write_bytes("1 + 1 // caf\u00e9".encode("latin-1"))
    for command in ("run", "check"):
        code, out, err = hql(command, str(program))
        assert (code, out) == (1, "")
        assert (
            err
            == f"hql: {program}: not UTF-8 text (byte 0xe9 at offset 12); HQL reads programs and documents as UTF-8\n"
        )
    document = tmp_path / "notes.md"
    document.write_bytes(b"# Notes\n\xff\n")
    code, _, err = hql("render", str(document))
    assert code == 1 and err.startswith(f"hql: {document}: not UTF-8 text (byte 0xff at offset 8)")


def test_check_takes_a_file_or_an_expression_with_e() -> None:
    assert hql("--vault", str(VAULT), "check", "-e", "cards | take(3)")[:2] == (0, "List<Card>\n")
    assert hql("check", "-e", "-1") == (0, "Int\n", "")
    code, out, err = hql("check", "cards | take(3)")
    assert (code, out) == (1, "")
    assert err == (
        "hql: cards | take(3): no such file; `check` reads a program from a file (or - for stdin): "
        "for a program written on the command line, write `hql check -e '…'`\n"
    )
    code, _, err = hql("run", "cards | count")
    assert code == 1 and "write `hql eval '…'`" in err
    for args in (("check",), ("check", "-", "-e", "1")):
        code, out, err = hql(*args)
        assert (
            code == 2
            and out == ""
            and "check takes a program file, - for stdin, or -e PROGRAM" in err
        )
    assert "-e PROGRAM" in hql("check", "--help")[1]


def test_check_in_json_gives_the_type_and_no_value() -> None:
    code, out, _ = hql("--format", "json", "check", "-", stdin="[1] | count")
    assert code == 0
    assert json.loads(out) == {"origin": "<stdin>", "type": "Int", "value": None, "reports": []}


def test_a_defect_is_reported_in_one_line_and_debug_shows_the_traceback(
    monkeypatch, capsys
) -> None:
    import hql.cli as cli

    def broken(args):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("division by zero")

    monkeypatch.setitem(cli.COMMANDS, "builtins", broken)
    monkeypatch.delenv("HQL_DEBUG", raising=False)
    assert cli.main(["builtins"]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("hql: internal error (ZeroDivisionError: division by zero)")
        and "Traceback" not in err
    )
    monkeypatch.setenv("HQL_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        cli.main(["builtins"])
