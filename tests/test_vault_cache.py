"""The load cache under `.hql/`: used when files are unchanged, never trusted otherwise."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hql.files import seal, unseal
from hql.vault import Vault, document
from hql.vault.cache import CACHE_FILE

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    target = tmp_path / "vault"
    shutil.copytree(FIXTURES / "vault", target, ignore=shutil.ignore_patterns(".hql"))
    return target


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the body of every document actually parsed (not served from the cache)."""
    seen: list[str] = []
    real = document.parse

    def counting(text: str) -> document.ParsedDocument:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(document, "parse", counting)
    return seen


def summary(vault: Vault) -> tuple[object, ...]:
    return (
        [(c.name, c.kind, c.title, c.header, c.metadata, c.body, c.links) for c in vault.cards],
        vault.edges,
        [str(w) for w in vault.warnings],
    )


def test_second_load_parses_nothing_and_matches(root: Path, parses: list[str]) -> None:
    first = Vault.open(root)
    assert len(parses) == 6 and (root / ".hql" / CACHE_FILE).is_file()
    parses.clear()
    second = Vault.open(root)
    assert parses == []
    assert summary(second) == summary(first)


def test_a_changed_file_is_parsed_again(root: Path, parses: list[str]) -> None:
    Vault.open(root)
    parses.clear()
    card = root / "sessions.hmd"
    status = card.stat()
    text = card.read_text().replace("Session cookies", "Session cookie!")  # same size
    card.write_text(text)
    os.utime(card, ns=(status.st_atime_ns, status.st_mtime_ns + 1))
    vault = Vault.open(root)
    assert len(parses) == 1
    sessions = vault.card("sessions")
    assert sessions is not None and sessions.title == "Session cookie!"


def test_deleted_and_added_files(root: Path, parses: list[str]) -> None:
    Vault.open(root)
    (root / "sessions.hmd").unlink()
    (root / "new.md").write_text("# New\n")
    parses.clear()
    vault = Vault.open(root)
    assert len(parses) == 1
    assert vault.card("sessions") is None and vault.card("new") is not None


def test_refusals_are_cached_with_their_warning(root: Path, parses: list[str]) -> None:
    (root / "bad.md").write_text("---\na: 1\na: 2\n---\n")
    first = Vault.open(root)
    parses.clear()
    second = Vault.open(root)
    assert parses == []
    assert [str(w) for w in second.warnings] == [str(w) for w in first.warnings]
    assert len(second.warnings) == 2


@pytest.mark.parametrize(
    "garbage", [b"", b"\x00\x01garbage", b"\xe3" + b"x" * 100, b"\xfb\x00\x00\x00\x00"]
)
def test_corrupt_cache_is_ignored_and_rebuilt(
    root: Path, parses: list[str], garbage: bytes
) -> None:
    expected = summary(Vault.open(root, use_cache=False))
    (root / ".hql").mkdir()
    (root / ".hql" / CACHE_FILE).write_bytes(garbage)
    parses.clear()
    assert summary(Vault.open(root)) == expected
    assert len(parses) == 6
    parses.clear()
    Vault.open(root)
    assert parses == []


def test_cache_of_the_wrong_shape_is_ignored(root: Path, parses: list[str]) -> None:
    import marshal

    from hql.vault import cache

    (root / ".hql").mkdir()
    bogus = {"oauth.hmd": (0, 0, ("ok", "not a dict", 3, None, []))}
    from hql.vault.loader import parser_fingerprint

    magic = (cache._MAGIC, parser_fingerprint())
    payload = marshal.dumps((magic, cache._PYTHON, bogus))
    (root / ".hql" / CACHE_FILE).write_bytes(seal(payload))  # well sealed, wrongly shaped
    vault = Vault.open(root)
    assert len(vault.cards) == 6 and len(parses) == 6


def test_unwritable_state_dir_means_no_cache(root: Path, parses: list[str]) -> None:
    (root / ".hql").write_text("a file where the directory would be")
    Vault.open(root)
    parses.clear()
    vault = Vault.open(root)
    assert len(vault.cards) == 6 and len(parses) == 6


def test_use_cache_false_writes_nothing(root: Path) -> None:
    Vault.open(root, use_cache=False)
    assert not (root / ".hql").exists()


def test_a_cache_from_another_parser_is_ignored(root: Path, parses: list[str]) -> None:
    import marshal

    Vault.open(root)
    file = root / ".hql" / CACHE_FILE
    (magic, fingerprint), python, entries = marshal.loads(unseal(file.read_bytes()) or b"")
    file.write_bytes(seal(marshal.dumps(((magic, "another parser"), python, entries))))
    parses.clear()
    Vault.open(root)
    assert len(parses) == 6


def test_threads_share_one_vault(root: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    vault = Vault.open(root)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: (vault.edges, vault.uplinks("oauth")), range(32)))
    assert all(edges is results[0][0] for edges, _ in results)
    assert all(len(up) == 2 for _, up in results)
