"""Hostile vaults: each case warns where the reference would, the rest loads, nothing hangs."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from hql.graphs import expand, project
from hql.vault import Vault, loader
from hql.vault.loader import MAX_CARD_BYTES

# A guard against hangs and runaway loops, not a speed measure: generous enough for a loaded
# machine, far below what loading a whole file system or an endless cycle would take.
HANG_GUARD = 30.0


@contextmanager
def within(seconds: float = HANG_GUARD) -> Iterator[None]:
    started = time.perf_counter()
    yield
    assert time.perf_counter() - started < seconds


def good_card(root: Path) -> None:
    (root / "good.md").write_text("---\ntitle: Good\n---\nSee [[other]].\n")


def open_vault(root: Path) -> Vault:
    with within():
        vault = Vault.open(root, use_cache=False)
    assert vault.card("good") is not None, "the rest of the vault must load"
    return vault


def only_warning(vault: Vault, filename: str) -> str:
    assert len(vault.warnings) == 1, [str(w) for w in vault.warnings]
    warning = vault.warnings[0]
    assert warning.path.endswith(filename)
    return warning.message


def test_invalid_utf8(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "latin1.md").write_bytes(b"# Caf\xe9\n")
    message = only_warning(open_vault(tmp_path), "latin1.md")
    assert message == "stream did not contain valid UTF-8 (at byte 5); document skipped"


def test_invalid_yaml(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "invalid.hmd").write_text("---\ntitle: [unclosed\n---\nbody\n")
    message = only_warning(open_vault(tmp_path), "invalid.hmd")
    assert message.startswith("header: invalid YAML at line")
    assert message.endswith("; document skipped")


def test_billion_laughs(tmp_path: Path) -> None:
    good_card(tmp_path)
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        previous = f"*a{level - 1}"
        lines.append(f"a{level}: &a{level} [{', '.join([previous] * 9)}]")
    (tmp_path / "bomb.md").write_text("---\n" + "\n".join(lines) + "\n---\n")
    message = only_warning(open_vault(tmp_path), "bomb.md")
    assert message == "header: aliases expand to more than 100000 nodes; document skipped"


def test_deep_nesting(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "deep.md").write_text("---\na: " + "[" * 5000 + "]" * 5000 + "\n---\n")
    (tmp_path / "deep2.md").write_text("---\na: " + "[" * 100 + "]" * 100 + "\n---\n")
    vault = open_vault(tmp_path)
    assert len(vault.warnings) == 2
    assert all("document skipped" in w.message for w in vault.warnings)


def test_fifty_megabyte_card(tmp_path: Path) -> None:
    good_card(tmp_path)
    with open(tmp_path / "huge.md", "wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    message = only_warning(open_vault(tmp_path), "huge.md")
    assert message == (
        "the file is 52428800 bytes, more than the 8 MiB a card may be; document skipped"
    )


def test_card_just_under_the_cap_loads(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "big.md").write_text("# Big\n" + "word " * ((MAX_CARD_BYTES - 100) // 5))
    vault = open_vault(tmp_path)
    assert vault.warnings == () and vault.card("big") is not None


def test_symlink_loop(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner.md").write_text("# Inner\n")
    (tmp_path / "sub" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "self.md").symlink_to(tmp_path / "self.md")  # a symlink to itself
    vault = open_vault(tmp_path)
    assert sorted(card.name for card in vault.cards) == ["good", "inner"]
    messages = sorted(str(w) for w in vault.warnings)
    assert len(messages) == 2
    assert any("symlink leads back to a directory already loaded" in m for m in messages)
    assert any(m.startswith(f"{tmp_path / 'self.md'}: ") for m in messages)


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good_card(tmp_path)
    (tmp_path / "secret.md").write_text("# Secret\n")
    real_open = open

    def refusing_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path).endswith("secret.md"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(loader, "open", refusing_open, raising=False)
    message = only_warning(open_vault(tmp_path), "secret.md")
    assert message == "cannot be read (permission denied); document skipped"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_by_mode(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "secret.md").write_text("# Secret\n")
    (tmp_path / "secret.md").chmod(0)
    message = only_warning(open_vault(tmp_path), "secret.md")
    assert message.startswith("cannot be read")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_named_like_a_card_does_not_block(tmp_path: Path) -> None:
    good_card(tmp_path)
    os.mkfifo(tmp_path / "pipe.md")
    message = only_warning(open_vault(tmp_path), "pipe.md")
    assert message == "not a regular file; document skipped"


def test_directory_named_like_a_card(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "folder.md").mkdir()
    (tmp_path / "folder.md" / "inside.md").write_text("# Inside\n")
    vault = open_vault(tmp_path)
    assert vault.warnings == () and vault.card("inside") is not None


def test_file_vanishes_during_the_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good_card(tmp_path)
    (tmp_path / "ghost.md").write_text("# Ghost\n")
    from hql.vault import walk as walking

    walk = walking.walk

    def walk_then_delete(root: str, warnings: list[Any], *rest: Any) -> walking.Walk:
        found = walk(root, warnings, *rest)
        (tmp_path / "ghost.md").unlink()
        return found

    monkeypatch.setattr(walking, "walk", walk_then_delete)
    message = only_warning(open_vault(tmp_path), "ghost.md")
    assert message == "the file vanished while the vault was loading; document skipped"


def test_link_cycles_terminate(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "other.md").write_text("[[good]] [[other]] [[good]]\n")
    vault = open_vault(tmp_path)
    with within():
        graph = expand(project(vault.cards, vault), vault, 10**9, "both")
    assert graph.nodes == ["good", "other"]
    assert len(graph.induced_edges) == 3


def test_ten_thousand_links(tmp_path: Path) -> None:
    good_card(tmp_path)
    links = " ".join(f"[[t{index}]] {{n: {index}}}" for index in range(10_000))
    (tmp_path / "hub.md").write_text(f"# Hub\n{links}\n")
    vault = open_vault(tmp_path)
    hub = vault.card("hub")
    assert hub is not None and len(hub.links) == 10_000
    assert len(vault.uplinks("hub")) == 10_000
    with within():
        graph = expand(project([hub], vault), vault, 2, "both")
    assert len(graph.nodes) == 10_001


def test_same_stem_in_different_folders(tmp_path: Path) -> None:
    good_card(tmp_path)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "note.md").write_text(f"# Note {folder}\n")
    (tmp_path / "a" / "note.hmd").write_text("# Note a again\n")
    vault = open_vault(tmp_path)
    names = sorted(card.name for card in vault.cards)
    assert names == ["a/note.hmd", "a/note.md", "b/note", "good"]
    assert len(vault.warnings) == 2  # the two documents only their extension tells apart


def test_garbage_documents(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "empty.md").write_text("")
    (tmp_path / "fence-only.md").write_text("---\n---\n")
    (tmp_path / "nul.md").write_bytes(b"# N\x00L\n[[\x00]]\n")
    (tmp_path / "scalar-header.md").write_text("---\njust text\n---\n")
    vault = open_vault(tmp_path)
    assert {"empty", "fence-only", "nul"} <= {card.name for card in vault.cards}
    assert [w.path.endswith("scalar-header.md") for w in vault.warnings] == [True]


def test_broken_hql_toml_warns_with_the_line(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "hql.toml").write_text("[extensions]\nimport = [lexical]\n")
    vault = open_vault(tmp_path)
    assert vault.config.imports == () and vault.config.prelude is True
    message = only_warning(vault, "hql.toml")
    assert "line 2" in message and message.endswith("using the defaults")


def test_badly_shaped_hql_toml_entries(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "hql.toml").write_text(
        '[report]\nmode = 3\n[extensions]\nimport = "lexical"\nprelude = "no"\n'
    )
    vault = open_vault(tmp_path)
    assert vault.config.report_mode is None and vault.config.imports == ()
    assert len(vault.warnings) == 3


def test_header_with_too_many_nodes(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "wide.md").write_text("---\na: [" + "1," * 300_000 + "1]\n---\n")
    message = only_warning(open_vault(tmp_path), "wide.md")
    assert message == "header: more than 100000 nodes; document skipped"


def test_body_with_too_many_links(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "spam.md").write_text("[[x]]" * 100_001)
    message = only_warning(open_vault(tmp_path), "spam.md")
    assert message == "more than 100000 `[[…]]` references; document skipped"


# --- containment: nothing outside the vault is read or written (issue 14, 7-8) -------


def outside_dir(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nNot part of the vault.\n")
    return outside


def test_symlinks_leaving_the_vault_are_skipped_with_one_counting_warning(
    tmp_path: Path,
) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    good_card(root)
    outside = outside_dir(tmp_path)
    (root / "passwd.md").symlink_to("/etc/passwd")
    (root / "env.md").symlink_to("/proc/self/environ")
    (root / "secret.md").symlink_to(outside / "secret.md")
    (root / "root").symlink_to("/")
    (root / "shared").symlink_to(outside)
    with within():
        vault = open_vault(root)
    assert sorted(card.name for card in vault.cards) == ["good"]
    message = only_warning(vault, "")
    assert message.startswith("5 symlinks lead outside the vault; skipped")


def test_symlinks_inside_the_vault_still_load(tmp_path: Path) -> None:
    good_card(tmp_path)
    (tmp_path / "drafts").mkdir()
    (tmp_path / "drafts" / "real.md").write_text("# Real\n")
    (tmp_path / "alias.md").symlink_to(tmp_path / "drafts" / "real.md")
    (tmp_path / "linked").symlink_to("drafts")
    vault = open_vault(tmp_path)
    assert {"alias", "good"} <= {card.name for card in vault.cards}
    assert not [w for w in vault.warnings if "outside the vault" in w.message]


def test_a_vault_may_allow_named_outside_roots(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    good_card(root)
    outside = outside_dir(tmp_path)
    (root / "hql.toml").write_text('[vault]\nallow_outside = ["../outside"]\n')
    (root / "shared").symlink_to(outside)
    (root / "passwd.md").symlink_to("/etc/passwd")
    vault = open_vault(root)
    assert vault.card("secret") is not None
    assert vault.card("passwd") is None
    assert only_warning(vault, "passwd.md").startswith("1 symlink leads outside the vault")


def test_hql_toml_linked_outside_the_vault_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    good_card(root)
    (tmp_path / "elsewhere.toml").write_text('[report]\nmode = "collect"\n')
    (root / "hql.toml").symlink_to(tmp_path / "elsewhere.toml")
    vault = open_vault(root)
    assert vault.config.report_mode is None
    assert "leads outside the vault" in only_warning(vault, "hql.toml")


def test_a_state_directory_linked_outside_is_neither_read_nor_written(tmp_path: Path) -> None:
    import hql

    root = tmp_path / "vault"
    root.mkdir()
    good_card(root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".hql").symlink_to(elsewhere)
    Vault.open(root)
    outcome = hql.run('import bm25\ncards | bm25("good") | count', hql.open_vault(root))
    assert not outcome.failed
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("layout", ["linked-folder", "linked-state-dir"])
def test_an_index_path_through_a_symlink_out_of_the_vault_is_refused(
    tmp_path: Path, layout: str
) -> None:
    from hql.index.commands import build_command

    root = tmp_path / "vault"
    root.mkdir()
    good_card(root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if layout == "linked-folder":
        (root / "link").symlink_to(elsewhere)
        configured = "link/index.sqlite"
    else:
        (root / ".hql").symlink_to(elsewhere)
        configured = ".hql/index.sqlite"
    (root / "hql.toml").write_text(f'[semantics]\nindex = "{configured}"\n')
    code, text = build_command(Vault.open(root, use_cache=False), embedder=object())  # type: ignore[arg-type]
    assert code == 1 and "outside the vault" in text
    assert list(elsewhere.iterdir()) == []


def test_render_all_never_writes_outside_the_vault(tmp_path: Path, capsys: Any) -> None:
    import argparse

    import hql
    from hql.render import render_command

    root = tmp_path / "vault"
    root.mkdir()
    good_card(root)
    outside = outside_dir(tmp_path)
    block = "```hql\n1 + 1\n```\n"
    (outside / "secret.md").write_text(block)
    (root / "shared").symlink_to(outside)
    args = argparse.Namespace(file=None, write=True, all=True, vault=str(root), report=None)
    render_command(args, lambda _: hql.Session(hql.open_vault(root, use_cache=False)))
    assert (outside / "secret.md").read_text() == block
    (root / "hql.toml").write_text('[vault]\nallow_outside = ["../outside"]\n')
    code = render_command(args, lambda _: hql.Session(hql.open_vault(root, use_cache=False)))
    assert code == 1 and "outside the vault" in capsys.readouterr().err
    assert (outside / "secret.md").read_text() == block
