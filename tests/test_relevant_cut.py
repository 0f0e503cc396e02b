"""`ranker | relevant`: the ranker hands on only the hits the rule can keep (`relevant-cut`).

The answer must be what the whole ranking gives: the kept hits, their details, and the
cutoff record (threshold, candidates, hits without evidence, uncorroborated ones).
Each program runs planned and unplanned on vaults with folders, tags, relation cards,
duplicates whose scores tie exactly, and questions that negate or match nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_planner import assert_same, both_ways

import hql
from hql.api import Session
from hql.explain import explain
from hql.extend import Extension, ExtensionError
from hql.values import Ranking

ROOT = Path(__file__).resolve().parents[1]
GARDEN = ROOT / "bench" / "data" / "garden"
WEB_AUTH = ROOT / "vaults" / "web-auth"

QUESTIONS = [
    "ocean temperature along the Brazilian coast",
    "how does a client prove who it is with a token",
    "coral reef",
    "reef reef coral",
    "do not use tokens, only passwords",  # a negated part: fewer words are evidence
    "the of and",  # only words every card shares, or none
    "zzzz qqqq",  # no card shares a word
    "corals",  # prefix and stem matches without the whole word
    "token",
]
PROGRAMS = [
    "import bm25\ncards | bm25($q) | relevant",
    "import bm25\ncards | bm25($q) | relevant | take(3)",
    "import bm25\ncards | bm25($q) | relevant | count",
    "import bm25\ncards | bm25($q) | relevant | explain",
    "import bm25\ncards | bm25($q) | relevant(min = 2)",
    "import bm25\ncards | bm25($q) | relevant(min = 0)",
    "import bm25\ncards | bm25($q) | relevant(min = 1000.5)",
    'import bm25\ncards | filter(c => c.folder != "Reading") | bm25($q) | relevant | explain',
    'import bm25\ncards | filter(c => in_folder(c, "Ocean")) | bm25($q) | relevant',
    "import bm25\ncards | bm25($q) | relevant | map(h => [h.card.name, h.score, h.retrieval])",
]


@pytest.fixture(scope="module")
def vaults(tmp_path_factory: pytest.TempPathFactory) -> list[hql.Vault]:
    """The garden with web-auth inside, and copies of some notes: exact ties at every score."""
    root = tmp_path_factory.mktemp("cut") / "vault"
    shutil.copytree(GARDEN, root, ignore=shutil.ignore_patterns(".hql"))
    shutil.copytree(WEB_AUTH, root / "web-auth", ignore=shutil.ignore_patterns(".hql"))
    ocean = sorted((root / "Ocean").rglob("*.md"))[:25]
    for copy in range(3):
        for note in ocean:
            (note.parent / f"{note.stem} copy {copy}.md").write_bytes(note.read_bytes())
    return [hql.Vault.open(root), hql.Vault.open(WEB_AUTH)]


def _assert_same_ranking(planned: hql.Outcome, plain: hql.Outcome) -> None:
    assert_same(planned, plain)
    if isinstance(plain.value, Ranking):
        assert isinstance(planned.value, Ranking)
        assert planned.value.retrieval == plain.value.retrieval
        assert [hit.detail for hit in planned.value] == [hit.detail for hit in plain.value]
        assert [hit.retrieval for hit in planned.value] == [hit.retrieval for hit in plain.value]


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("text", PROGRAMS)
def test_the_cut_ranking_answers_as_the_whole_one(
    vaults: list[hql.Vault], text: str, question: str
) -> None:
    program = text.replace("$q", '"' + question + '"')
    for vault in vaults:
        planned, plain = both_ways(program, vault)
        _assert_same_ranking(planned, plain)


def test_the_rule_fires_and_hands_on_only_what_can_pass(vaults: list[hql.Vault]) -> None:
    vault = vaults[0]
    session = Session(vault)
    _, plan, _ = session.check('import bm25\ncards | bm25("coral reef") | relevant')
    assert plan is not None
    assert plan.rewrites == [
        "relevant-cut: bm25 hands relevant only the hits its rule can keep",
        "lazy-cards: bm25 builds only the cards it hands on",
    ]
    cut = session.run('import bm25\ncards | bm25("coral reef") | relevant | count')
    whole = session.run('import bm25\ncards | bm25("coral reef") | count')
    passing = session.run('import bm25\ncards | bm25("coral reef") | relevant')
    record = passing.value.retrieval.extra["cutoff"]  # type: ignore[union-attr]
    assert cut.value == record["kept"] < record["candidates"] == whole.value
    assert "precut" not in passing.value.retrieval.extra  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    [
        'import bm25\ncards | bm25("coral") | take(5) | relevant',  # take first: no cut
        'import bm25\nr = cards | bm25("coral")\nr | relevant',  # a named ranking is used as is
        'import bm25\ncards | bm25("coral") | relevant(min = 1 + 1)',  # not a literal floor
        'import bm25\n[cards | bm25("coral"), cards | bm25("reef")] | map(r => r | relevant)',
    ],
)
def test_the_rule_does_not_fire_where_the_whole_ranking_is_needed(
    vaults: list[hql.Vault], text: str
) -> None:
    _, plan, _ = Session(vaults[0]).check(text)
    assert plan is not None
    assert not any(line.startswith("relevant-cut") for line in plan.rewrites), plan.rewrites
    _assert_same_ranking(*both_ways(text, vaults[0]))


def test_explain_names_the_cut(vaults: list[hql.Vault]) -> None:
    text, _, failed = explain(
        Session(vaults[0]), 'import bm25\ncards | bm25("coral reef") | relevant | take(2)', "-"
    )
    assert not failed
    assert "rewrites\n  relevant-cut: bm25 hands relevant only the hits its rule can keep" in text


def test_only_a_ranking_step_may_absorb_relevant() -> None:
    extension = Extension("cutter", version="1", summary="x")
    with pytest.raises(ExtensionError, match="absorbs `relevant` returns a Ranking"):
        extension.add_step(
            "Seq<T> | f() -> List<T>", lambda xs: xs, summary="x", absorbs=("relevant",)
        )
