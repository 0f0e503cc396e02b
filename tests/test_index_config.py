"""`[semantics]` and `[semantics.embedder]` validation, and the argparse wiring of `hql index`."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from standin_embedder import BASE_CARDS, write_vault

from hql.index import EmbedderError, SemanticIndexError
from hql.index.commands import add_index_commands, run_index_command
from hql.index.config import (
    EmbedderConfig,
    SemanticsConfig,
    load_semantics_config,
    resolve_index_path,
)
from hql.index.workers import Progress
from hql.vault import Vault

HTTP = {
    "provider": "http",
    "endpoint": "http://127.0.0.1:1/v1/embeddings",
    "model": "m",
    "revision": "r",
}


def config(**semantics: object) -> SemanticsConfig:
    return load_semantics_config({"semantics": semantics})


def refused(**semantics: object) -> str:
    with pytest.raises(SemanticIndexError) as caught:
        config(**semantics)
    return caught.value.message


def test_absent_section_means_everything_off() -> None:
    assert load_semantics_config({}) == SemanticsConfig()
    assert load_semantics_config(None).index is None


def test_a_local_model_embeds_new_questions_unless_the_vault_says_not() -> None:
    local = {"provider": "local", "model": "multilingual-e5-small"}
    assert config(index="i.sqlite", embedder=local).embed_queries is True
    assert config(index="i.sqlite", embedder=local, embed_queries=False).embed_queries is False
    assert config(index="i.sqlite", embedder=HTTP).embed_queries is False  # a request costs
    assert config(index="i.sqlite").embed_queries is False


def test_full_section() -> None:
    loaded = config(
        index=".hql/i.sqlite",
        embed_queries=True,
        on_unavailable="lexical",
        embedder=dict(HTTP, api_key_env="K", dimensions=8, batch_size=4, timeout=2),
    )
    assert (
        loaded.index == ".hql/i.sqlite"
        and loaded.embed_queries
        and loaded.on_unavailable == "lexical"
    )
    assert loaded.embedder == EmbedderConfig(
        provider="http", model="m", revision="r", endpoint=HTTP["endpoint"], api_key_env="K",
        dimensions=8, batch_size=4, timeout=2.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("semantics", "expected"),
    [
        ({"embed_queries": "yes"}, "`semantics.embed_queries` in hql.toml must be true or false"),
        (
            {"on_unavailable": "retry"},
            '`semantics.on_unavailable` in hql.toml must be "fail" or "lexical"',
        ),
        ({"indx": "x"}, "unknown key `indx` in `[semantics]`"),
        ({"index": 3}, "`semantics.index` in hql.toml must be a non-empty string"),
        ({"embedder": "http"}, "`semantics.embedder` in hql.toml must be a table"),
        ({"embedder": {"provider": "grpc", "model": "m"}}, "unknown embedder provider `grpc`"),
        ({"embedder": {"provider": "local"}}, "the `local` embedder needs `model`"),
        (
            {"embedder": {"provider": "http", "model": "m", "revision": "r"}},
            "the `http` embedder needs `endpoint`",
        ),
        (
            {"embedder": {"provider": "http", "model": "m", "endpoint": "e"}},
            "the `http` embedder needs `revision`",
        ),
        (
            {"embedder": dict(HTTP, endpoint="file:///etc/passwd")},
            "must be an http:// or https:// URL",
        ),
        ({"embedder": dict(HTTP, colour="blue")}, "unknown key `colour` in `[semantics.embedder]`"),
        ({"embedder": dict(HTTP, dimensions=0)}, "must be a positive integer up to 8192"),
        ({"embedder": dict(HTTP, timeout=-1)}, "must be a positive number of seconds"),
    ],
)
def test_refusals(semantics: dict[str, object], expected: str) -> None:
    assert expected in refused(**semantics)


def test_literal_api_key_is_refused_first_and_never_echoed() -> None:
    message = refused(embedder={"api_key": "sk-LEAK", "provider": "nonsense", "extra": 1})
    assert "sk-LEAK" not in message and "api_key_env" in message
    with pytest.raises(EmbedderError):
        config(embedder={"api_key": "sk-LEAK"})


def test_index_path_stays_inside_the_vault(tmp_path: Path) -> None:
    assert resolve_index_path(tmp_path, ".hql/index.sqlite") == tmp_path / ".hql/index.sqlite"
    for outside in ("/abs.sqlite", "../up.sqlite", "x/../../up.sqlite", "\\\\server\\share\\x"):
        with pytest.raises(SemanticIndexError):
            resolve_index_path(tmp_path, outside)


def test_progress_is_a_bar_on_a_terminal_and_timed_lines_elsewhere() -> None:
    class Stream:
        def __init__(self, tty: bool) -> None:
            self.tty, self.text = tty, ""

        def isatty(self) -> bool:
            return self.tty

        def write(self, text: str) -> None:
            self.text += text

        def flush(self) -> None:
            pass

    now = [0.0]
    quiet, loud = Stream(False), Stream(True)
    for stream in (quiet, loud):
        now[0] = 0.0
        bar = Progress("embedding sections", stream, clock=lambda: now[0])  # type: ignore[arg-type]
        bar.begin(40, "loading model…")
        for _ in range(4):
            now[0] += 6.0
            bar.advance(10)
        bar.finish("embedded 40 sections")
    # Off a terminal: a line when ten seconds have passed (not for every batch), then the summary.
    assert quiet.text == "embedding sections: 20/40 (1.7/s)\nembedded 40 sections\n"
    # On a terminal: the bar from the start, with the model loading, then counts and rate.
    assert loud.text.startswith("\rembedding sections [" + "-" * 30 + "] 0/40 loading model…")
    assert "\rembedding sections [" + "#" * 30 + "] 40/40 1.7/s" in loud.text
    assert loud.text.endswith("embedded 40 sections\n")


def test_argparse_wiring(tmp_path: Path, capsys) -> None:
    parser = argparse.ArgumentParser(prog="hql")
    add_index_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["index", "build", "--query", "a", "--query", "b c", "--built-at", "T"]
    )
    assert (args.command, args.index_command, args.query, args.built_at) == (
        "index",
        "build",
        ["a", "b c"],
        "T",
    )
    root = tmp_path / "v"
    write_vault(root, BASE_CARDS, '[semantics]\nindex = ".hql/i.sqlite"\n')
    vault = Vault.open(root, use_cache=False)
    assert run_index_command(args, vault) == 1
    assert "no embedder is configured" in capsys.readouterr().err
    assert run_index_command(parser.parse_args(["index", "verify"]), None) == 1
    assert "needs a vault" in capsys.readouterr().err
    assert (
        run_index_command(
            parser.parse_args(["index", "inspect", "--index", str(root / "nope")]), None
        )
        == 1
    )
    assert "there is no index" in capsys.readouterr().err
