"""The vault's `hql.toml` (reference §13): read with tomllib, never fatal.

A missing file means defaults. A file that cannot be read or parsed, or an
entry of the wrong shape, means defaults for what it affects plus a warning
that says why, so a typo never stops a vault from loading.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hql import files, messages
from hql.vault.model import LoadWarning

CONFIG_FILE = "hql.toml"


@dataclass(frozen=True)
class LibrarySpec:
    """One `[vault] libraries` entry: another vault whose cards join the candidate set."""

    path: str  # as written: relative to the vault, or absolute, `~` allowed
    scope: str = "global"
    name: str = ""  # how its cards are qualified on a clash; its scope when unsaid
    entry: int = 0  # its place in the list, from 1 (a report names its line by it)


@dataclass(frozen=True)
class VaultConfig:
    report_mode: str | None = None  # [report] mode
    imports: tuple[str, ...] = ()  # [extensions] import
    prelude: bool = True  # [extensions] prelude
    dialect: str | None = None  # [vault] dialect: "reference" or "obsidian"; None = detect
    exclude: tuple[str, ...] = ()  # [vault] exclude: globs of vault-relative paths to leave out
    raw: dict[str, Any] = field(default_factory=dict)  # the whole parsed file
    path: Path | None = None  # the hql.toml, if there is one
    allow_outside: tuple[str, ...] = ()  # [vault] allow_outside: outside roots that may be read
    watch: bool = False  # [vault] watch: a load starts `hql vault watch` when none answers
    libraries: tuple[LibrarySpec, ...] = ()  # [vault] libraries: other vaults beside this one

    def section(self, name: str) -> dict[str, Any]:
        """A top-level table such as `semantics` or `search`; {} when absent or not a table."""
        value = self.raw.get(name)
        return value if isinstance(value, dict) else {}


# hql.toml is read whole: a larger one is refused unread.
MAX_CONFIG_BYTES = 1024 * 1024


def load_config(root: Path) -> tuple[VaultConfig, list[LoadWarning]]:
    path = root / CONFIG_FILE
    shown = str(path)
    try:
        if path.is_symlink() and not files.Containment(root).inside_vault(path):
            reason = "it is a symlink that leads outside the vault"
            return VaultConfig(), [LoadWarning(shown, messages.config_unreadable(reason))]
        raw_bytes = files.read_regular(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        return VaultConfig(), []
    except IsADirectoryError:
        return VaultConfig(), [LoadWarning(shown, messages.config_unreadable("it is a directory"))]
    except OSError as error:
        reason = error.strerror or str(error)
        return VaultConfig(), [LoadWarning(shown, messages.config_unreadable(reason))]
    import tomllib  # ~4 ms to import: a vault without hql.toml never needs it

    try:
        text = raw_bytes.decode("utf-8")
        raw = tomllib.loads(text)
    except UnicodeDecodeError as error:
        reason = f"not valid UTF-8 at byte {error.start}"
        return VaultConfig(path=path), [LoadWarning(shown, messages.config_unparsable(reason))]
    except tomllib.TOMLDecodeError as error:
        return VaultConfig(path=path), [LoadWarning(shown, messages.config_unparsable(str(error)))]
    return _interpret(raw, path, text)


def _interpret(
    raw: dict[str, Any], path: Path, text: str | None = None
) -> tuple[VaultConfig, list[LoadWarning]]:
    """The configuration in `raw`, and a warning per bad entry; with the file's `text`,
    each warning names the line of its entry (`hql.toml:7: …`)."""
    warnings: list[LoadWarning] = []

    def at(key: str, message: str) -> None:
        warnings.append(_warning_at(path, text, key, message))

    def bad(key: str, expected: str) -> None:
        at(key, messages.config_bad_entry(key, expected))

    report = _table(raw, "report", bad)
    extensions = _table(raw, "extensions", bad)

    mode = report.get("mode")
    if mode is not None and not isinstance(mode, str):
        bad("report.mode", "a string")
        mode = None

    imports: tuple[str, ...] = ()
    declared = extensions.get("import", [])
    if isinstance(declared, list) and all(isinstance(item, str) for item in declared):
        imports = tuple(declared)
    else:
        bad("extensions.import", "a list of extension names")

    prelude = extensions.get("prelude", True)
    if not isinstance(prelude, bool):
        bad("extensions.prelude", "true or false")
        prelude = True

    vault = _table(raw, "vault", bad)
    dialect, exclude = _vault_table(vault, at, bad)
    allow_outside: tuple[str, ...] = ()
    allowed = vault.get("allow_outside", [])
    if isinstance(allowed, list) and all(isinstance(item, str) and item for item in allowed):
        allow_outside = tuple(allowed)
    else:
        bad("vault.allow_outside", "a list of directories")
    watch = vault.get("watch", False)
    if not isinstance(watch, bool):
        bad("vault.watch", "true or false")
        watch = False
    libraries = _libraries(vault.get("libraries", []), bad)
    _check_limits(_table(raw, "limits", bad), at, bad)

    config = VaultConfig(
        report_mode=mode,
        imports=imports,
        prelude=prelude,
        dialect=dialect,
        exclude=exclude,
        raw=raw,
        path=path,
        allow_outside=allow_outside,
        watch=watch,
        libraries=libraries,
    )
    return config, warnings


def _libraries(declared: Any, bad: Any) -> tuple[LibrarySpec, ...]:
    """`[vault] libraries = [{ path = "…", scope = "global", name = "…" }]`; a bad entry is
    left out with a warning, the others kept."""
    if not isinstance(declared, list):
        bad("vault.libraries", 'a list of tables such as { path = "~/notes", scope = "global" }')
        return ()
    found: list[LibrarySpec] = []
    names: set[str] = {"project"}
    for number, entry in enumerate(declared, start=1):
        key = f"vault.libraries[{number}]"
        path = entry.get("path") if isinstance(entry, dict) else None
        scope = entry.get("scope", "global") if isinstance(entry, dict) else None
        name = entry.get("name", "") if isinstance(entry, dict) else None
        if not (isinstance(path, str) and path):
            bad(key, 'a table with a `path`, such as { path = "~/notes", scope = "global" }')
            continue
        if not (isinstance(scope, str) and _plain_name(scope)) or scope == "project":
            bad(f"{key}.scope", "a word other than `project`, such as `global` or `team`")
            continue
        if not (isinstance(name, str) and (name == "" or _plain_name(name))):
            bad(f"{key}.name", "a word naming the library")
            continue
        shown = name or scope
        if shown in names:
            bad(f"{key}.name", f"a name no other library has (`{shown}` is taken)")
            continue
        names.add(shown)
        found.append(LibrarySpec(path, scope, shown, number))
    return tuple(found)


LIMIT_KEYS = ("elements", "bytes", "seconds")


def _check_limits(table: dict[str, Any], at: Any, bad: Any) -> None:
    """`[limits]` (docs/vault.md, "The caps"): a bad entry is reported at its line and the
    default kept, never quietly ignored (a budget the vault thinks it set must be the one)."""
    import math

    for key, value in table.items():
        if key not in LIMIT_KEYS:
            at(f"limits.{key}", messages.config_unknown_key("limits", str(key), list(LIMIT_KEYS)))
        elif key == "seconds":
            number = not isinstance(value, bool) and isinstance(value, int | float)
            if not (number and 0 < value < math.inf):
                bad("limits.seconds", "a positive number of seconds")
        elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            bad(f"limits.{key}", "a positive integer")


def _plain_name(text: str) -> bool:
    """A library's scope or name: letters, digits, `-` and `_` (it prefixes card names)."""
    return bool(text) and all(char.isalnum() or char in "-_" for char in text)


def _vault_table(table: dict[str, Any], at: Any, bad: Any) -> tuple[str | None, tuple[str, ...]]:
    """`[vault] dialect` and `[vault] exclude` (everyday.md §4)."""
    from hql.vault.walk import DIALECTS  # not the link grammar: every load reads this

    dialect = table.get("dialect")
    if dialect is not None and dialect not in DIALECTS:
        if isinstance(dialect, str):
            at("vault.dialect", messages.unknown_dialect(dialect))
        else:
            bad("vault.dialect", "a string")
        dialect = None
    exclude: tuple[str, ...] = ()
    declared = table.get("exclude", [])
    if isinstance(declared, list) and all(isinstance(item, str) for item in declared):
        exclude = tuple(declared)
    else:
        bad("vault.exclude", "a list of glob patterns")
    return dialect, exclude


def _table(raw: dict[str, Any], name: str, bad: Any) -> dict[str, Any]:
    value = raw.get(name, {})
    if isinstance(value, dict):
        return value
    bad(name, "a table")
    return {}


def _warning_at(path: Path, text: str | None, key: str, message: str) -> LoadWarning:
    """A warning about `key` of the file at `path`, printed with the key's line when the
    text shows where it is written."""
    from hql.vault.toml_lines import key_line  # only a file with a bad entry needs it

    line = key_line(text, key) if text is not None else None
    return LoadWarning(str(path), message, subject=f"{path}:{line}" if line else None)


def entry_place(config: VaultConfig, key: str) -> str:
    """Where `key` of a loaded configuration is written, `hql.toml:7` (the file alone when
    the line cannot be found, "" without a file): for a report found after loading."""
    from hql.vault.toml_lines import key_line

    if config.path is None:
        return ""
    try:
        text = files.read_regular(config.path, MAX_CONFIG_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return str(config.path)
    line = key_line(text, key)
    return f"{config.path}:{line}" if line else str(config.path)
