"""`hql init` writes a starter hql.toml; `hql config get|set` read and edit it, keeping the rest."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from hql.init import ConfigError, get_setting, init_vault, parse_value, set_setting, starter_text
from hql.vault.config import load_config


def hql(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hql", *args], capture_output=True, text=True, check=False, cwd=cwd
    )


def test_starter_file_parses_to_defaults_and_explains_each_section() -> None:
    text = starter_text()
    assert tomllib.loads(text) == {
        "report": {"mode": "strict"},
        "extensions": {"import": [], "prelude": True},
        "search": {"ignore": [], "synonyms": [], "builtin_synonyms": True},
        "semantics": {},
        "vault": {},
    }
    for section in ("report", "extensions", "search", "semantics", "vault"):
        before = text.split(f"[{section}]")[0].rstrip().splitlines()[-1]
        assert before.startswith("# "), section  # every section comes with its comment
    assert '# model = "bge-m3"' in text
    watch = text.split("[vault]")[1].splitlines()
    assert watch[-1] == "# watch = true" and "watcher" in watch[-2]  # commented, explained
    uncommented = tomllib.loads(text.replace("# watch = true", "watch = true"))
    assert uncommented["vault"] == {"watch": True}


def test_init_writes_a_file_the_vault_loads_without_warnings(tmp_path: Path) -> None:
    path = init_vault(tmp_path / "new-vault")
    config, warnings = load_config(path.parent)
    assert warnings == [] and config.report_mode == "strict" and config.prelude


def test_init_writes_the_dialect_the_notes_choose(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "Home.md").write_text("See [[Soil Food Web|the web]] and [[Compost]].\n")
    (clone / "Soil Food Web.md").write_text("web\n")
    (clone / "Compost.md").write_text("compost\n")
    text = init_vault(clone).read_text(encoding="utf-8")
    assert tomllib.loads(text)["vault"] == {"dialect": "obsidian"}
    assert "# Here: 1 of its 2 links are in forms only Obsidian reads." in text
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.hmd").write_text("[[b]]\n")
    assert tomllib.loads(init_vault(plain).read_text(encoding="utf-8"))["vault"] == {
        "dialect": "reference"
    }
    declared = tmp_path / "declared"
    (declared / ".obsidian").mkdir(parents=True)
    text = init_vault(declared).read_text(encoding="utf-8")
    assert tomllib.loads(text)["vault"] == {"dialect": "obsidian"} and "`.obsidian/`" in text


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    (tmp_path / "hql.toml").write_text("# mine\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="already exists"):
        init_vault(tmp_path)
    assert (tmp_path / "hql.toml").read_text(encoding="utf-8") == "# mine\n"
    run = hql("init", str(tmp_path))
    assert run.returncode == 1 and run.stderr.startswith("hql: ") and "already exists" in run.stderr


def test_init_on_the_command_line(tmp_path: Path) -> None:
    run = hql("init", cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "wrote hql.toml"
    assert (tmp_path / "hql.toml").read_text(encoding="utf-8") == starter_text()
    (tmp_path / "file").write_text("", encoding="utf-8")
    run = hql("init", str(tmp_path / "file"))
    assert run.returncode == 1 and "not a directory" in run.stderr
    # `--vault DIR` names the folder as for every other command (not the current one).
    (tmp_path / "other").mkdir()
    run = hql("--vault", str(tmp_path / "other"), "init", cwd=tmp_path)
    assert run.returncode == 0 and (tmp_path / "other" / "hql.toml").is_file()


def test_values_are_toml_literals_or_plain_text() -> None:
    assert parse_value("collect") == "collect"
    assert parse_value("true") is True
    assert parse_value("3") == 3
    assert parse_value('["lexical", "bm25"]') == ["lexical", "bm25"]
    assert parse_value('"true"') == "true"


def test_set_keeps_comments_and_other_settings(tmp_path: Path) -> None:
    path = init_vault(tmp_path)
    result = set_setting(path, "report.mode", "collect")
    assert result.comments_kept
    set_setting(path, "extensions.import", '["lexical"]')
    set_setting(path, "search.ignore", '["the", "a"]')
    set_setting(path, "semantics.index", ".hql/index.sqlite")
    set_setting(path, "semantics.embedder.model", "bge-m3")
    text = path.read_text(encoding="utf-8")
    assert text.count("# ") >= starter_text().count("# ")  # every comment is still there
    assert tomllib.loads(text) == {
        "report": {"mode": "collect"},
        "extensions": {"import": ["lexical"], "prelude": True},
        "search": {"ignore": ["the", "a"], "synonyms": [], "builtin_synonyms": True},
        "semantics": {"index": ".hql/index.sqlite", "embedder": {"model": "bge-m3"}},
        "vault": {},
    }
    assert get_setting(path, "extensions.import") == ["lexical"]


def test_a_multi_line_value_is_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "hql.toml"
    path.write_text(
        '# top\n[extensions]\nimport = [\n  "a",\n  "b",\n]\nprelude = false\n', encoding="utf-8"
    )
    assert set_setting(path, "extensions.import", '["c"]').comments_kept
    assert (
        path.read_text(encoding="utf-8") == '# top\n[extensions]\nimport = ["c"]\nprelude = false\n'
    )


def test_forms_it_cannot_edit_in_place_are_rewritten_without_comments(tmp_path: Path) -> None:
    path = tmp_path / "hql.toml"
    path.write_text('# gone\nreport = { mode = "strict" }\nother.kept = 1\n', encoding="utf-8")
    result = set_setting(path, "report.mode", "collect")
    assert not result.comments_kept
    assert tomllib.loads(path.read_text(encoding="utf-8")) == {
        "report": {"mode": "collect"},
        "other": {"kept": 1},
    }


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("report.mode", "loud", "unknown report mode `loud`"),
        ("extensions.prelude", "3", "must be true or false"),
        ("extensions.import", "lexical", "a list of extension names"),
        ("report", "x", "not a setting name"),
        ("report.mode.deeper", "x", "not a table"),
    ],
)
def test_bad_values_are_refused_and_the_file_is_unchanged(
    tmp_path: Path, key: str, value: str, message: str
) -> None:
    path = init_vault(tmp_path)
    with pytest.raises(ConfigError, match=message):
        set_setting(path, key, value)
    assert path.read_text(encoding="utf-8") == starter_text()


def test_config_get_and_set_on_the_command_line(tmp_path: Path) -> None:
    init_vault(tmp_path)
    vault = ["--vault", str(tmp_path)]
    run = hql(*vault, "config", "set", "report.mode", "collect")
    assert run.returncode == 0 and run.stdout.startswith('report.mode = "collect" in ')
    assert hql(*vault, "config", "get", "report.mode").stdout == "collect\n"
    assert hql(*vault, "config", "get", "extensions.prelude").stdout == "true\n"
    assert hql(*vault, "config").stdout.startswith(
        "report mode: collect (from the vault's hql.toml)"
    )
    missing = hql(*vault, "config", "get", "search.nothing")
    assert missing.returncode == 1 and "`search.nothing` is not set" in missing.stderr
    assert hql(*vault, "config", "set", "report.mode").returncode == 2
    broken = tmp_path / "hql.toml"
    broken.write_text("[report\n", encoding="utf-8")
    run = hql(*vault, "config", "set", "report.mode", "strict")
    assert (
        run.returncode == 1 and "cannot be edited" in run.stderr and "Traceback" not in run.stderr
    )
    assert "does not exist" in hql("--vault", str(tmp_path / "none"), "config", "get", "a.b").stderr
