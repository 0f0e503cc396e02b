"""`ranker | count`: how many hits, without making them (`ranking-count`).

The count, and anything else that later reads the hits (`explain`), must be what the
whole ranking gives. On a vault opened from its catalogue, `count` and `relevant`
after bm25 build no card but the hits they hand on.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_planner import assert_same, both_ways

import hql
from hql.api import Session
from hql.explain import explain
from hql.extend import Extension, ExtensionError
from hql.values import UnmadeHits
from hql.vault import Vault

ROOT = Path(__file__).resolve().parents[1]
GARDEN = ROOT / "bench" / "data" / "garden"
WEB_AUTH = ROOT / "vaults" / "web-auth"

COUNTED = [
    'import bm25\ncards | bm25("coral reef") | count',
    'import bm25\ncards | bm25("coral reef") | size',
    'import bm25\ncount(cards | bm25("how does a client prove who it is with a token"))',
    'import bm25\ncards | bm25("zzzz qqqq") | count',
    'import bm25\ncards | filter(c => c.folder != "Reading") | bm25("ocean") | count',
    'import bm25\ncards | filter(c => in_folder(c, "Ocean")) | bm25("ocean") | size',
    'import bm25\n[[oauth], [bearer-token]] | bm25("token") | count',
    'import bm25\ncards | bm25("ocean temperature") | count | explain',
]
NOT_COUNTED = [
    'import bm25\nr = cards | bm25("coral")\n[r | count, r | take(1) | count]',  # used twice
    'import bm25\ncards | bm25("coral") | take(3) | count',  # take's count
    'import bm25\n[cards | bm25("coral")] | map(r => r | count)',
]


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> hql.Vault:
    root = tmp_path_factory.mktemp("count") / "vault"
    shutil.copytree(GARDEN, root, ignore=shutil.ignore_patterns(".hql"))
    shutil.copytree(WEB_AUTH, root / "web-auth", ignore=shutil.ignore_patterns(".hql"))
    return hql.Vault.open(root)


@pytest.mark.parametrize("text", COUNTED + NOT_COUNTED)
def test_counts_answer_as_the_whole_ranking(vault: hql.Vault, text: str) -> None:
    planned, plain = both_ways(text, vault)
    assert not plain.failed, plain.render_reports()
    assert_same(planned, plain)
    _, plan, _ = Session(vault).check(text)
    assert plan is not None
    fired = any(line.startswith("ranking-count") for line in plan.rewrites)
    assert fired == (text in COUNTED), plan.rewrites


def test_explain_shows_the_hits_all_the_same(vault: hql.Vault) -> None:
    """`explain` reads the ranking's hits: they are made then, as the whole ranking's."""
    text = 'import bm25\ncards | bm25("coral reef") | count'
    planned, _, _ = explain(Session(vault), text, "-")
    plain, _, _ = explain(Session(vault, optimize=False), text, "-")

    def without_times_and_rewrites(shown: str) -> str:
        shown = re.sub(r"\n\nrewrites\n(  .*\n)+", "\n", shown)
        shown = re.sub(r" *[0-9.]+ ms", "", shown)
        return re.sub(r"-{2,}", "-", re.sub(r" {2,}", " ", shown))

    assert "ranking-count: count of bm25 makes no hit" in planned
    assert without_times_and_rewrites(planned) == without_times_and_rewrites(plain)
    assert "coral" in plain and "rank" in plain


def test_unmade_hits_are_made_once_and_only_when_read() -> None:
    made: list[int] = []

    def make() -> tuple[Any, ...]:
        made.append(1)
        return ("a", "b", "c")

    hits = UnmadeHits(3, make)
    assert len(hits) == 3 and bool(hits) and made == []
    assert list(hits) == ["a", "b", "c"] and made == [1]
    assert hits[1] == "b" and hits[1:] == ("b", "c") and "c" in hits
    assert hits == ("a", "b", "c") and hits == ("a", "b", "c")
    assert hash(hits) == hash(("a", "b", "c")) and tuple(hits) == ("a", "b", "c")
    assert (*hits,) == ("a", "b", "c") and hits + ("d",) == ("a", "b", "c", "d")
    assert repr(hits) == "('a', 'b', 'c')" and made == [1]
    assert not UnmadeHits(0, tuple)


def test_a_catalogued_vault_counts_and_cuts_without_building_cards(
    tmp_path: Path, built: list[str]
) -> None:
    root = tmp_path / "vault"
    shutil.copytree(GARDEN, root, ignore=shutil.ignore_patterns(".hql"))
    whole = Vault.open(root)
    hql.run('import bm25\ncards | bm25("x") | take(1)', vault=whole)  # the bm25 store
    for text, most in (
        ('import bm25\ncards | bm25("ocean temperature") | count', 0),
        ('import bm25\ncards | bm25("coral reef") | relevant', 3),
        ('import bm25\ncards | bm25("coral reef") | relevant(min = 4) | take(1)', 3),
    ):
        built.clear()
        lazy = Vault.open(root)
        answer = Session(lazy).run(text)
        assert not answer.failed, answer.render_reports()
        assert len(built) <= most and lazy._cards is None, (text, len(built))
        assert_same(answer, Session(Vault.open(root, use_cache=False), optimize=False).run(text))


def test_only_a_ranking_step_may_absorb_count() -> None:
    extension = Extension("counter", version="1", summary="x")
    with pytest.raises(ExtensionError, match="absorbs `count` returns a Ranking"):
        extension.add_step(
            "Seq<T> | f() -> List<T>", lambda xs: xs, summary="x", absorbs=("count",)
        )
