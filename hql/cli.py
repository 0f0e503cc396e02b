"""The `hql` command line.

    hql [--vault DIR] [--format text|json] [--report strict|collect] <command> …

Exit codes: 0 success (warnings allowed), 1 a language or host failure, 2 a usage error.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from hql import messages
from hql.api import HostError, Outcome, Session, open_vault, resolve_mode
from hql.diagnostics import render_all
from hql.parameters import MAX_DEPTH as MAX_PARAMETER_DEPTH
from hql.version import __version__

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}
# How a command opens its vault: a watcher answering commands (hql/served.py) hands on the
# one it keeps open.
vault_opener: Callable[[str], Any] = open_vault


def command(
    name: str,
) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    def register(
        function: Callable[[argparse.Namespace], int],
    ) -> Callable[[argparse.Namespace], int]:
        COMMANDS[name] = function
        return function

    return register


def _global_options(parser: argparse.ArgumentParser, suppress: bool) -> None:
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--vault", metavar="DIR", default=default, help="the vault to query")
    parser.add_argument(
        "--format",
        choices=("text", "json", *PICTURE_FORMATS),
        default=argparse.SUPPRESS if suppress else "text",
        help="how to print the answer (default: text); dot, mermaid and graphml draw graphs",
    )
    parser.add_argument(
        "--report",
        metavar="MODE",
        default=default,
        help="strict (stop at the first error) or collect (report every statement)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="print no warnings (the vault's or the program's); failures still print",
    )


PLUGIN_COMMANDS = {"index"}
PICTURE_FORMATS = ("dot", "mermaid", "graphml")


def _param_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--param",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="bind $NAME in the program to the String VALUE (repeatable)",
    )
    parser.add_argument(
        "--param-json",
        metavar="NAME=JSON",
        action="append",
        default=[],
        help="bind $NAME to a JSON value: a number, true/false, a list or an object",
    )


def _eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program")
    parser.add_argument(
        "--svg", metavar="FILE", help="draw the graph value as SVG (needs Graphviz)"
    )
    _param_arguments(parser)


def _program_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program")
    _param_arguments(parser)


def _file_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the program file (or - for stdin)")
    _param_arguments(parser)


def _render_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="the document (or - for stdin)")
    parser.add_argument("--write", action="store_true", help="write the rendered document back")
    parser.add_argument(
        "--all", action="store_true", help="render every document of the vault that carries blocks"
    )


def _config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action", nargs="?", choices=("get", "set"), help="read or change one setting"
    )
    parser.add_argument("key", nargs="?", help="a setting such as report.mode")
    parser.add_argument(
        "value", nargs="?", help="its new value: a TOML literal, or plain text for a string"
    )


def _check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="the program file (or - for stdin)")
    parser.add_argument(
        "-e", "--expression", metavar="PROGRAM", help="check this program instead of a file"
    )
    _param_arguments(parser)


def _one(name: str, **options: Any) -> Callable[[argparse.ArgumentParser], None]:
    """Arguments of a subcommand that takes one positional."""

    def add(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(name, **options)

    return add


def _analyze_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text")
    parser.add_argument(
        "--envelope",
        action="store_true",
        help="read the text as an agent's prompt: language, segments, commands, paths, "
        "symbols, constraints, keywords",
    )


SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "eval": ("evaluate a program given as an argument", _eval_arguments),
    "check": (
        "check a program from a file (or - for stdin, or -e PROGRAM) and print its type",
        _check_arguments,
    ),
    "run": ("run a program from a file (or - for stdin)", _file_arguments),
    "explain": (
        "show the checked plan, the analysed questions and why each hit scored",
        _program_arguments,
    ),
    "repl": ("read and evaluate programs interactively", lambda parser: None),
    "render": (
        "run the hql blocks of a document and write their answers beneath them",
        _render_arguments,
    ),
    "analyze": (
        "show how bm25 analyses a text: words, terms, ignored words, synonyms "
        "(--envelope: the text read as a prompt)",
        _analyze_arguments,
    ),
    "builtins": (
        "list the registered extensions and their steps (installed packages too)",
        _one(
            "--extension",
            metavar="NAME",
            help="describe one extension's steps and functions in full",
        ),
    ),
    "config": (
        "show the report mode and the vault; `get KEY` / `set KEY VALUE` read and edit hql.toml",
        _config_arguments,
    ),
    "init": (
        "write a starter hql.toml for a vault",
        _one("directory", nargs="?", help="the vault folder (default: --vault, else here)"),
    ),
}


def _mcp_arguments(parser: argparse.ArgumentParser) -> None:
    # `--vault` again, once per vault: this replaces the global option's single DIR
    parser.add_argument(
        "--vault",
        dest="vaults",
        metavar="DIR",
        action="append",
        default=[],
        help="a vault to serve; repeat it for several (the first answers calls that name none)",
    )
    parser.add_argument(
        "--vaults",
        dest="vaults_file",
        metavar="FILE",
        help="a TOML file naming the vaults to serve: [mcp.vaults.NAME] path, description",
    )
    parser.add_argument(
        "--allow-write", action="store_true", help="offer the tools that write documents"
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="stop a program that runs longer (default: 10)",
    )
    parser.add_argument(
        "--max-output",
        type=int,
        default=60_000,
        metavar="CHARS",
        help="cut an answer longer than this, with a note (default: 60000)",
    )
    http = parser.add_argument_group("over HTTP (instead of stdio)")
    http.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp")
    http.add_argument("--host", help="the address to listen on (default: 127.0.0.1)")
    http.add_argument("--port", type=int, help="the port (default: 8765; 0: any free port)")
    http.add_argument(
        "--token-env",
        metavar="NAME",
        help="the environment variable holding the bearer token every request must send "
        "(required on any address but 127.0.0.1)",
    )
    http.add_argument(
        "--allow-host", action="append", default=[], metavar="NAME", help="another Host to answer"
    )
    http.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="URL",
        help="a web page that may call the server (browsers send its Origin)",
    )
    http.add_argument(
        "--rate-limit",
        type=float,
        metavar="PER_SECOND",
        help="requests a second on one connection (default: 100, ten times that from one "
        "address; 0: no limit)",
    )
    http.add_argument(
        "--max-request-bytes",
        type=int,
        metavar="BYTES",
        help="refuse a larger request body (default: 1048576)",
    )


SUBCOMMANDS["mcp"] = (
    "serve vaults to AI agents over the Model Context Protocol (stdio, or streamable HTTP)",
    _mcp_arguments,
)


def _context_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "prompt", nargs="?", help="the prompt (or - for stdin; read from stdin when left out)"
    )
    parser.add_argument("--file", metavar="FILE", help="read the prompt from this file")
    parser.add_argument(
        "--budget", type=int, default=2000, metavar="TOKENS", help="the block's budget (2000)"
    )
    parser.add_argument(
        "--max-items", type=int, default=8, metavar="N", help="at most this many cards (8)"
    )
    parser.add_argument(
        "--block",
        choices=("markdown", "json"),
        default="markdown",
        help="how the block itself is written (default: markdown)",
    )
    parser.add_argument(
        "--no-libraries", action="store_true", help="only the vault's own cards, no libraries"
    )
    parser.add_argument(
        "--status",
        default="active",
        metavar="LIST",
        help="the statuses a card may have, comma-separated (active; add archived, draft or "
        "superseded to look back)",
    )


SUBCOMMANDS["context"] = (
    "the context block for a prompt: the cards it may need, within a token budget; "
    "--format json adds the diagnostics (every candidate and why it was left out)",
    _context_arguments,
)
SUBCOMMANDS["log"] = (
    "the retrieval log ([log] retrieval = true): what each context block chose and left out, "
    "newest first; prompts are kept only as hashes",
    _one("--limit", type=int, default=20, metavar="N", help="the last N blocks (20)"),
)
SUBCOMMANDS["card"] = (
    "print a card's file whole (a library's card by its qualified name, `global:name`)",
    _one("name", help="the card's name, as a context block or a ranking gives it"),
)


def _skill_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "folder",
        nargs="?",
        help="where to write it (default: .claude/skills/hql; any harness's skills folder)",
    )
    parser.add_argument("--force", action="store_true", help="replace the skill's files there")


SUBCOMMANDS["skill"] = (
    "write the agent skill (SKILL.md and examples) that teaches an agent to use `hql mcp`",
    _skill_arguments,
)


def _base_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the .base file (Obsidian Bases)")
    parser.add_argument("--view", metavar="NAME", help="run only this view")
    parser.add_argument(
        "--this", metavar="NOTE", help="the note the base is shown for (`this`; default: the base)"
    )
    parser.add_argument(
        "--explain", action="store_true", help="print the HQL program of each view before its rows"
    )


SUBCOMMANDS["base"] = (
    "run the views of an Obsidian base (a .base file) as tables",
    _base_arguments,
)
SUBCOMMANDS["vault"] = (
    "about the vault itself: `warnings` lists every load warning; `doctor` lists orphans, "
    "dead links, links found only by case or alias and near-duplicate titles; `watch` keeps "
    "watching it so loads need not check every file; `unwatch` stops that watcher",
    _one("action", choices=("warnings", "doctor", "watch", "unwatch"), help="what to do"),
)


def _note_arguments(parser: argparse.ArgumentParser) -> None:
    from hql.notes.commands import add_note_arguments

    add_note_arguments(parser)


SUBCOMMANDS["note"] = (
    "write notes: new, append, set, section, edit, move, archive, supersede, remember "
    "(each checks --base-digest, --dry-run prints the diff)",
    _note_arguments,
)


def _memory_arguments(parser: argparse.ArgumentParser) -> None:
    from hql.notes.commands import add_memory_arguments

    add_memory_arguments(parser)


SUBCOMMANDS["memory"] = (
    "about the vault as a memory: `suggest` proposes relation cards for cards often retrieved "
    "together (the retrieval log); nothing is written without --write and a yes",
    _memory_arguments,
)
VALUED_OPTIONS = {"--vault", "--format", "--report"}
# A command prints this many lines of load warnings (one per kind), then a count;
# `hql vault warnings` lists them all.
WARNINGS_SHOWN = 5


def _requested_command(argv: Sequence[str]) -> str | None:
    """The subcommand named in argv, when it is a known one and no help is asked for."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-h", "--help"):
            return None
        elif arg in VALUED_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            return arg if arg in SUBCOMMANDS else None
    return None


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The argument parser; for a well-formed command it holds just that subcommand (faster to build)."""
    parser = argparse.ArgumentParser(
        prog="hql", description="HQL, the Hyper Query Language: query a vault of Markdown cards."
    )
    parser.add_argument("--version", action="version", version=f"hql {__version__}")
    _global_options(parser, suppress=False)
    commands = parser.add_subparsers(dest="command", metavar="<command>")
    commands.required = True

    def sub(name: str, help_text: str) -> argparse.ArgumentParser:
        # "resolve": a subcommand may give a global option its own meaning (`mcp --vault`, repeated)
        child = commands.add_parser(
            name, help=help_text, description=help_text, conflict_handler="resolve"
        )
        _global_options(child, suppress=True)
        return child

    wanted = _requested_command(argv)
    for name, (help_text, arguments) in SUBCOMMANDS.items():
        if wanted is None or name == wanted:
            arguments(sub(name, help_text))
    # Plugin commands pull in their libraries, so they are added only when asked for (or for help).
    if wanted is None:
        _add_plugin_commands(commands, sub)
    return parser


def _add_plugin_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    sub: Callable[[str, str], argparse.ArgumentParser],
) -> None:
    """Commands contributed by libraries (index, analyze) when they are present."""
    try:
        from hql.index.commands import add_index_commands
    except ImportError:
        return
    add_index_commands(commands)


def main(argv: Sequence[str] | None = None) -> int:
    return run_parsed(parse_arguments(list(sys.argv[1:] if argv is None else argv)))


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """The command line read; a usage error is said and exits (SystemExit 2), as argparse does."""
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command == "check" and (args.file is None) == (args.expression is None):
        parser.error(messages.check_usage())
    return args


def run_parsed(args: argparse.Namespace) -> int:
    """Run a parsed command; every failure is a report and an exit code."""
    try:
        handler = COMMANDS.get(args.command)
        if handler is None:
            from hql.index.commands import run_index_command

            vault = open_vault(args.vault) if args.vault else None
            return run_index_command(args, vault)  # type: ignore[arg-type]
        return handler(args)
    except HostError as error:
        print(f"hql: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"hql: {messages.interrupted()}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except MemoryError:  # the process's memory limit, not a defect: say what to do
        print(f"hql: {messages.out_of_memory()}", file=sys.stderr)
        return 1
    except Exception as error:  # a defect in HQL, not a user mistake: say so, briefly
        if os.environ.get("HQL_DEBUG"):
            raise
        print(f"hql: {messages.internal_error(error)}", file=sys.stderr)
        return 1


# --- shared ----------------------------------------------------------------------


def session_for(args: argparse.Namespace) -> Session:
    vault = vault_opener(args.vault) if args.vault else None
    if vault is not None and not quiet(args):
        for line in summarized_warnings(vault.warnings):
            print(f"warning: {line}", file=sys.stderr)
    from hql.deadline import configured_seconds

    limits = vault.config.section("limits") if vault is not None else {}
    return Session(vault, args.report, seconds=configured_seconds(limits))


def quiet(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "quiet", False))


def summarized_warnings(warnings: Sequence[Any]) -> list[str]:
    """Load warnings as a command prints them: one line per kind (the first of the kind,
    and how many more there are), at most WARNINGS_SHOWN lines, then how many are left."""
    kinds: dict[str, list[Any]] = {}
    for warning in warnings:
        kinds.setdefault(messages.load_warning_kind(warning.message), []).append(warning)
    lines = [
        str(group[0])
        if len(group) == 1
        else messages.load_warnings_like(str(group[0]), len(group) - 1)
        for group in kinds.values()
    ]
    if len(lines) <= WARNINGS_SHOWN:
        return lines
    hidden = sum(len(group) for group in list(kinds.values())[WARNINGS_SHOWN:])
    return [*lines[:WARNINGS_SHOWN], messages.more_warnings(hidden)]


def cli_params(args: argparse.Namespace) -> dict[str, Any]:
    """`--param name=value` (a String) and `--param-json name=json` as a params mapping."""
    params: dict[str, Any] = {}
    for text in args.param:
        name, equals, value = text.partition("=")
        if not equals or not name:
            raise HostError(messages.parameter_flag(text))
        params[name.removeprefix("$")] = value
    for text in args.param_json:
        name, equals, value = text.partition("=")
        if not equals or not name:
            raise HostError(messages.parameter_flag(text))
        import json

        try:
            params[name.removeprefix("$")] = json.loads(value)
        except ValueError as error:
            raise HostError(messages.parameter_json(name, error)) from None
        except RecursionError:  # deeper than Python's parser goes: far past the parameters' limit
            raise HostError(messages.parameter_too_deep(name, MAX_PARAMETER_DEPTH)) from None
    return params


def read_program(path: str, command: str = "run") -> tuple[str, str]:
    """(text, origin) of a program file, or of stdin for `-`."""
    if path == "-":
        try:  # strictly, as a file is read: undecodable bytes are the reader's problem, not a lexer's
            return sys.stdin.buffer.read().decode("utf-8"), "<stdin>"
        except UnicodeDecodeError as error:
            raise HostError(messages.cannot_read("<stdin>", error)) from None
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read(), path
    except FileNotFoundError:
        raise HostError(messages.program_file_missing(path, command)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise HostError(messages.cannot_read(path, error)) from None


def emit(outcome: Outcome, args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if args.format in PICTURE_FORMATS:
        from hql.graph_export import emit_picture

        return emit_picture(outcome, args.format, out, sys.stderr)
    if args.format == "json":
        print(outcome.json_text(), file=out)
    else:
        reports = [r for r in outcome.reports if r.failed] if quiet(args) else outcome.reports
        if reports:
            print(render_all(reports, outcome.source), file=sys.stderr)
        if not outcome.failed:
            print(outcome.text(), file=out)
    return 1 if outcome.failed else 0


# --- commands --------------------------------------------------------------------


@command("eval")
def eval_command(args: argparse.Namespace) -> int:
    outcome = session_for(args).run(args.program, "<expression>", params=cli_params(args))
    if args.svg:
        from hql.graph_export import emit_svg

        return emit_svg(outcome, args.svg, sys.stdout, sys.stderr)
    return emit(outcome, args)


@command("run")
def run_command(args: argparse.Namespace) -> int:
    text, origin = read_program(args.file)
    return emit(session_for(args).run(text, origin, params=cli_params(args)), args)


@command("check")
def check_command(args: argparse.Namespace) -> int:
    if args.expression is not None:
        text, origin = args.expression, "<expression>"
    else:
        text, origin = read_program(args.file, "check")
    params = cli_params(args)
    return emit(session_for(args).run(text, origin, evaluate=False, params=params), args)


@command("explain")
def explain_command(args: argparse.Namespace) -> int:
    from hql.explain import explain

    session = session_for(args)
    text, report_text, failed = explain(session, args.program, "<expression>", cli_params(args))
    if report_text:
        print(report_text, file=sys.stderr)
    if text:
        print(text)
    return 1 if failed else 0


@command("repl")
def repl_command(args: argparse.Namespace) -> int:
    session = session_for(args)
    if sys.stdin.isatty() and sys.stdout.isatty():
        try:
            from hql.repl.app import run_interactive
        except ImportError:
            pass
        else:
            return run_interactive(session)
    from hql.repl.lines import run_lines

    return run_lines(session, sys.stdin, sys.stdout, sys.stderr, interactive=sys.stdin.isatty())


@command("render")
def render_command(args: argparse.Namespace) -> int:
    from hql.render import render_command as render

    return render(args, session_for)


@command("base")
def base_command(args: argparse.Namespace) -> int:
    from hql.bases.run import base_command as run_base

    return run_base(args, session_for)


@command("analyze")
def analyze_command(args: argparse.Namespace) -> int:
    from hql.printing import dumps
    from hql.steps.retrieval import analyzer_for

    vault = open_vault(args.vault) if args.vault else None
    if args.envelope:
        return _print_envelope(args, analyzer_for(vault))
    analysis = analyzer_for(vault).analyze(args.text)
    if args.format == "json":
        print(dumps(analysis.to_json()))
        return 0
    synonyms = ", ".join(f"{found} -> {group}" for found, group in analysis.synonyms)
    print(f"words:    {' '.join(analysis.words)}")
    print(f"terms:    {' '.join(analysis.terms)}")
    print(f"ignored:  {' '.join(analysis.ignored)}")
    print(f"synonyms: {synonyms}")
    return 0


def _print_envelope(args: argparse.Namespace, analyzer: Any) -> int:
    from hql.context.envelope import read_envelope
    from hql.printing import dumps

    tree = read_envelope(args.text, analyzer).to_json()
    if args.format == "json":
        print(dumps(tree))
        return 0
    for key, value in tree.items():
        shown = value if isinstance(value, str) else " | ".join(value)
        print(f"{key + ':':<13}{shown}")
    return 0


@command("builtins")
def builtins_command(args: argparse.Namespace) -> int:
    from hql.builtins import describe

    vault = open_vault(args.vault) if args.vault else None
    if args.extension:
        from hql.builtins import describe_extension

        print(describe_extension(args.extension, vault))
        return 0
    print(describe(vault))
    return 0


@command("config")
def config_command(args: argparse.Namespace) -> int:
    if args.action is not None:
        from hql.init import config_edit_command

        return config_edit_command(args.action, args.key, args.value, args.vault)
    vault = open_vault(args.vault) if args.vault else None
    mode, origin = resolve_mode(args.report, vault)
    print(f"report mode: {mode} (from {origin})")
    if vault is None:
        print("vault: none")
    else:
        print(f"vault: {vault.root} ({messages.plural(len(vault.cards), 'card')})")
        print(f"config: {vault.config.path if vault.config.path else messages.no_config_file()}")
        for item in vault.warnings:
            print(f"warning: {item}")
    return 0


@command("vault")
def vault_command(args: argparse.Namespace) -> int:
    if not args.vault:
        raise HostError(messages.vault_command_needs_vault())
    if args.action == "watch":
        return watch_command(args.vault)
    if args.action == "unwatch":
        return unwatch_command(args.vault)
    vault = open_vault(args.vault)
    if args.action == "doctor":
        return doctor_command(vault, args)
    if args.format == "json":
        from hql.printing import dumps

        print(dumps([{"path": w.path, "message": w.message} for w in vault.warnings]))
        return 0
    for item in vault.warnings:
        print(f"warning: {item}")
    if not vault.warnings:
        print(messages.no_load_warnings())
    if vault.dialect_note is not None:
        print(f"note: {vault.dialect_note}")
    return 0


def doctor_command(vault: Any, args: argparse.Namespace) -> int:
    """Orphans, dead links, links found only by case or alias, near-duplicate titles."""
    from hql.vault.doctor import diagnose

    found = diagnose(vault)
    if args.format == "json":
        from hql.printing import dumps

        print(dumps(found.to_json()))
        return 0
    if not quiet(args):
        for line in summarized_warnings(vault.warnings):
            print(f"warning: {line}", file=sys.stderr)
    print(
        messages.doctor_summary(
            found.cards,
            len(found.orphans),
            len(found.dead),
            len(found.by_case),
            len(found.by_alias),
            len(found.near_duplicates),
        )
    )
    sections = [
        (messages.doctor_orphans, found.orphans),
        (
            messages.doctor_dead,
            [messages.doctor_link(i.source, i.written, None) for i in found.dead],
        ),
        (
            messages.doctor_by_case,
            [messages.doctor_link(i.source, i.written, i.found) for i in found.by_case],
        ),
        (
            messages.doctor_by_alias,
            [messages.doctor_link(i.source, i.written, i.found) for i in found.by_alias],
        ),
        (messages.doctor_near_duplicates, [_titles(group) for group in found.near_duplicates]),
    ]
    for heading, lines in sections:
        if lines:
            print(f"\n{heading(len(lines))}")
            for line in lines:
                print(f"  {line}")
    if not any(lines for _, lines in sections):
        print(messages.doctor_healthy())
    return 0


def _titles(group: list[tuple[str, str]]) -> str:
    return ", ".join(name if title == name else f"{title} ({name})" for name, title in group)


def unwatch_command(vault: str) -> int:
    """Stop the vault's watcher, whether started by hand or by `[vault] watch = true`."""
    from pathlib import Path

    from hql.vault import watch
    from hql.vault.config import load_config
    from hql.vault.store import STATE_DIR

    root = Path(vault)
    if watch.tell(root / STATE_DIR, b"stop") != b"stopping\n":
        print(messages.not_watched(vault), file=sys.stderr)
        return 0
    print(messages.unwatched(vault), file=sys.stderr)
    if load_config(root)[0].watch:
        print(f"note: {messages.unwatch_while_configured()}", file=sys.stderr)
    return 0


def watch_command(vault: str) -> int:
    """Watch the vault until interrupted (or terminated); loads meanwhile trust the catalogue."""
    import signal
    from pathlib import Path

    from hql.search.shared import many_questions_ahead
    from hql.served import Answering
    from hql.vault import VaultError
    from hql.vault.store import check_root
    from hql.vault.watcher import Watcher, WatchError

    try:
        check_root(vault, Path(vault))
    except VaultError as error:
        raise HostError(str(error)) from None
    # Absolute, and to this process's own stderr: a command it answers runs in the caller's
    # directory with its output captured.
    root = os.path.abspath(vault)
    refresh = functools.partial(_refresh_seen, root, sys.stderr)
    watcher = Watcher(Path(vault), refresh, Answering(root, sys.stderr))
    many_questions_ahead()  # this process answers commands until it stops
    try:
        watcher.start()
    except WatchError as error:
        raise HostError(str(error)) from None
    signal.signal(signal.SIGTERM, lambda *_: watcher.stop())
    print(messages.watching(vault, len(watcher.folders)), file=sys.stderr, flush=True)
    try:
        watcher.serve()
    except WatchError as error:
        raise HostError(str(error)) from None
    except KeyboardInterrupt:
        pass
    print(messages.watch_stopped(), file=sys.stderr)
    return 0


def _refresh_seen(vault: str, log: TextIO, relpaths: list[str]) -> None:
    """What the watcher saw change reaches the bm25 store and (when asked for) the vectors."""
    from hql.notes.fresh import refresh_seen

    try:
        fresh = refresh_seen(vault, relpaths)
    except Exception as error:  # noqa: BLE001 - the watcher goes on; the next load catches up
        print(messages.watch_refresh_failed(str(error)), file=log, flush=True)
        return
    for problem in fresh.problems:
        print(messages.watch_refresh_failed(problem), file=log, flush=True)


@command("context")
def context_command(args: argparse.Namespace) -> int:
    from hql.context.block import ContextError
    from hql.context.read_path import assemble
    from hql.printing import dumps
    from hql.vault.recall import asked_statuses

    vault = _needs_vault(args)
    prompt = _prompt_text(args)
    for name, number in (("--budget", args.budget), ("--max-items", args.max_items)):
        if number < 1:
            raise HostError(messages.context_option_positive(name, number))
    try:
        statuses = asked_statuses(part for part in args.status.split(",") if part.strip())
    except ValueError as error:
        raise HostError(messages.context_option_status(str(error))) from None

    def warn(message: str) -> None:
        print(f"warning: {message}", file=sys.stderr)

    try:
        block = assemble(
            vault,
            prompt,
            budget=args.budget,
            max_items=args.max_items,
            format=args.block,
            libraries=not args.no_libraries,
            statuses=statuses,
            warn=warn,
        )
    except ContextError as error:
        raise HostError(str(error)) from None
    if args.format == "json":
        print(dumps(block.to_json()))
        return 0
    if block.abstention is not None:
        print(messages.context_abstained_note(block.abstention), file=sys.stderr)
    sys.stdout.write(block.rendered)
    return 0


def _needs_vault(args: argparse.Namespace) -> Any:
    if not args.vault:
        raise HostError(messages.command_needs_vault(args.command))
    return vault_opener(args.vault)


def _prompt_text(args: argparse.Namespace) -> str:
    """The prompt: the argument, a file (`--file`), or stdin (`-`, or nothing given)."""
    if args.file is not None and args.prompt is not None:
        raise HostError(messages.context_prompt_twice())
    if args.file is not None and args.file != "-":
        try:
            with open(args.file, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as error:
            raise HostError(messages.context_prompt_unreadable(args.file, error)) from None
    elif args.file == "-" or args.prompt is None or args.prompt == "-":
        text, _ = read_program("-", "context")
    else:
        text = args.prompt
    if not text.strip():
        raise HostError(messages.context_prompt_empty())
    return text


@command("log")
def log_command(args: argparse.Namespace) -> int:
    from hql.context.log import LogError, enabled, log_path, read_entries
    from hql.printing import dumps

    vault = _needs_vault(args)
    if args.limit < 1:
        raise HostError(messages.context_option_positive("--limit", args.limit))
    try:
        entries = read_entries(vault, args.limit)
    except LogError as error:
        raise HostError(str(error)) from None
    if args.format == "json":
        print(dumps(entries))
        return 0
    if not entries:
        print(messages.log_empty(str(log_path(vault)), enabled(vault)))
        return 0
    for entry in entries:
        print(messages.log_entry_line(entry))
    return 0


@command("card")
def card_command(args: argparse.Namespace) -> int:
    from hql.context.read_path import find_card
    from hql.printing import card_json, dumps

    vault = _needs_vault(args)
    card = find_card(vault, args.name)
    if card is None:
        raise HostError(messages.card_not_found(args.name))
    try:
        with open(card.path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise HostError(messages.cannot_read(card.relpath, error)) from None
    if args.format == "json":
        print(dumps({**card_json(card), "library": card.library, "text": text}))
        return 0
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


@command("note")
def note_command(args: argparse.Namespace) -> int:
    from hql.notes.commands import run_note_command

    return run_note_command(args)


@command("memory")
def memory_command(args: argparse.Namespace) -> int:
    from hql.notes.commands import run_memory_command

    return run_memory_command(args)


@command("init")
def init_command(args: argparse.Namespace) -> int:
    from hql.init import init_command as init

    return init(args.directory or args.vault or ".")


@command("skill")
def skill_command(args: argparse.Namespace) -> int:
    from hql.mcp.skill import run

    return run(args.folder, args.force)


@command("mcp")
def mcp_command(args: argparse.Namespace) -> int:
    from hql.mcp import run

    return run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
