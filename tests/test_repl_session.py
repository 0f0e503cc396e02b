"""The interactive REPL driven through prompt-toolkit's pipe input and a dummy output."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from hql.api import Session, open_vault
from hql.repl.app import paint_reports, run_interactive
from hql.repl.history import history_path, open_history

BIRDS = Path(__file__).parent / "fixtures" / "birds"


def drive(
    keys: str,
    *,
    vault: bool = True,
    history: object = None,
    color: bool = False,
) -> tuple[int, str, str]:
    """Type `keys` into a REPL (\\r is Enter, \\x04 Ctrl-D) and return (status, stdout, stderr)."""
    session = Session(open_vault(BIRDS) if vault else None)
    out, err = io.StringIO(), io.StringIO()
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        status = run_interactive(
            session,
            input=pipe,
            output=DummyOutput(),
            out=out,
            err=err,
            history=history or InMemoryHistory(),
            color=color,
        )  # type: ignore[arg-type]
    return status, out.getvalue(), err.getvalue()


def test_an_answer_is_printed_and_ctrl_d_leaves() -> None:
    status, out, err = drive("1 + 2\r\x04")
    assert status == 0
    assert out.splitlines()[1:] == ["3"]
    assert "`:help`" in out.splitlines()[0]


def test_enter_inside_an_open_pipeline_continues_the_input() -> None:
    status, out, _ = drive(
        'owls = cards |\r  filter(c => c.name == "barn-owl")\rowls | count\r\x04'
    )
    assert out.splitlines()[1:] == ["1"]  # the binding shows nothing, the count shows 1


def test_bindings_and_imports_persist_and_reset_forgets_them() -> None:
    _, out, err = drive("x = 41\rx + 1\r:reset\rx\r\x04")
    assert out.splitlines()[1:3] == ["42", "bindings and imports forgotten"]
    assert "`x`" in err


def test_collections_and_graphs_are_shown_as_tables() -> None:
    _, out, _ = drive("[[barn-owl]] | expand(depth = 1)\rcards | take(2)\r\x04")
    assert "node          presence" in out
    assert "tytonidae     expanded from barn-owl at depth 1" in out
    assert "card" in out and "kind" in out and "title" in out


def test_meta_commands() -> None:
    status, out, err = drive(":type cards | count\r:vault\r:help\r:nope\r:quit\r")
    assert status == 0
    lines = out.splitlines()
    assert lines[1] == "Int"
    assert lines[2].startswith("vault: ") and "cards)" in lines[2]
    assert any(line.startswith(":explain EXPR") for line in lines)
    assert any(line.strip().startswith("take") for line in lines)  # :help lists the steps
    assert "unknown command `:nope`" in err


def test_ctrl_c_cancels_the_input_and_the_session_goes_on() -> None:
    _, out, _ = drive("cards | ta\x03cards | count\r\x04")
    assert out.splitlines()[1].isdigit()


def test_reports_carry_carets_and_are_coloured_on_terminals() -> None:
    _, _, plain = drive("cards | nope\r\x04")
    assert "^^^^" in plain and "\x1b[" not in plain
    _, _, coloured = drive("cards | nope\r\x04", color=True)
    assert "\x1b[1m\x1b[31mname error:" in coloured
    assert "\x1b[0m         \x1b[1m\x1b[31m^^^^\x1b[0m" in coloured


def test_paint_reports_colours_warnings_yellow() -> None:
    text = "check warning: careful\n --> <repl>:1:1\n  |\n1 | x\n  | ^"
    painted = paint_reports(text)
    assert painted.startswith("\x1b[1m\x1b[33mcheck warning:")
    assert painted.endswith("\x1b[1m\x1b[33m^\x1b[0m")
    assert paint_reports(text, color=False) == text


def test_history_file_is_written(tmp_path: Path) -> None:
    path = tmp_path / "state" / "hql" / "history"
    history, warning = open_history(path)
    assert warning is None and isinstance(history, FileHistory)
    drive("cards | count\r:vault\r\x04", history=history)
    written = path.read_text(encoding="utf-8")
    assert "+cards | count" in written and "+:vault" in written
    assert list(FileHistory(str(path)).load_history_strings())[0] == ":vault"


def test_history_lives_in_the_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert history_path({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "hql" / "history"
    assert history_path({"XDG_STATE_HOME": "relative"}) == Path.home() / ".local/state/hql/history"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    drive_default_history = Session(None)
    out, err = io.StringIO(), io.StringIO()
    with create_pipe_input() as pipe:
        pipe.send_text("1\r\x04")
        run_interactive(drive_default_history, input=pipe, output=DummyOutput(), out=out, err=err)
    assert (tmp_path / "hql" / "history").read_text(encoding="utf-8").endswith("+1\n")


def test_an_unwritable_history_falls_back_to_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    history, warning = open_history(blocker / "hql" / "history")
    assert isinstance(history, InMemoryHistory)
    assert warning is not None and "this session only" in warning


def test_eval_does_not_import_prompt_toolkit() -> None:
    import subprocess
    import sys

    code = (
        "import sys\nfrom hql.cli import main\nmain(['eval', '1 + 1'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'prompt_toolkit'))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines() == ["2", "[]"]


def test_ctrl_c_during_an_evaluation_stops_it_and_the_session_goes_on() -> None:
    session = Session(None)
    plain_run = session.run

    def run(text: str, origin: str = "<expression>", *, evaluate: bool = True) -> object:
        if text == "1 + 1":
            raise KeyboardInterrupt  # as if Ctrl-C arrived while it ran
        return plain_run(text, origin, evaluate=evaluate)

    session.run = run  # type: ignore[method-assign,assignment]
    out, err = io.StringIO(), io.StringIO()
    with create_pipe_input() as pipe:
        pipe.send_text("1 + 1\r2 + 2\r\x04")
        status = run_interactive(
            session,
            input=pipe,
            output=DummyOutput(),
            out=out,
            err=err,
            history=InMemoryHistory(),
            color=False,
        )
    assert status == 0 and "interrupted" in err.getvalue()
    assert out.getvalue().splitlines()[1:] == ["4"]


def test_tab_completes_inside_the_prompt() -> None:
    import threading
    import time

    session = Session(open_vault(BIRDS))
    out, err = io.StringIO(), io.StringIO()
    with create_pipe_input() as pipe:

        def type_slowly() -> None:
            # Completion runs in the background: give it time between keys, as a person would.
            for keys in ("[[barn-s", "\t", ".tit", "\t", "\r", "\x04"):  # one Tab inserts a lone candidate
                time.sleep(0.3)
                pipe.send_text(keys)

        typist = threading.Thread(target=type_slowly)
        typist.start()
        run_interactive(
            session,
            input=pipe,
            output=DummyOutput(),
            out=out,
            err=err,
            history=InMemoryHistory(),
            color=False,
        )
        typist.join()
    assert out.getvalue().splitlines()[1:] == ["Barn swallow"]


def test_one_tab_inserts_a_lone_candidate() -> None:
    status, out, err = drive("cards | cou\t\r\x04")
    assert (status, err) == (0, "")
    assert out.splitlines()[1:] == [str(len(open_vault(BIRDS).cards))]


def test_tab_with_several_candidates_inserts_none_of_them() -> None:
    _, out, err = drive("cards | ta\t\r\x04")  # `take`, `table`, …: the menu opens, nothing is chosen
    assert out.splitlines()[1:] == []
    assert "`ta` is not a pipeline step" in err


def test_type_and_explain_without_an_expression_print_their_usage() -> None:
    status, out, err = drive(":type\r:explain  \r\x04")
    assert status == 0 and out.splitlines()[1:] == []
    assert err.splitlines() == [
        "usage: :type EXPR (check an expression and print its type)",
        "usage: :explain EXPR (show the checked plan and why each hit scored)",
    ]


class Screen(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_reports_are_coloured_only_when_stderr_is_a_terminal() -> None:
    def run(err: io.StringIO) -> str:
        with create_pipe_input() as pipe:
            pipe.send_text("1 + true\r\x04")
            run_interactive(
                Session(None),
                input=pipe,
                output=DummyOutput(),
                out=Screen(),  # stdout is the terminal …
                err=err,
                history=InMemoryHistory(),
            )  # type: ignore[arg-type]
        return err.getvalue()

    redirected = run(io.StringIO())  # … and stderr goes to a file
    assert "type error: addition requires" in redirected and "\x1b[" not in redirected
    assert "\x1b[" in run(Screen())
