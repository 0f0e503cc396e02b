"""The planner changes how much work a program does, never its answer.

Every golden program, every program of the property corpus and a stream of mutated
programs run with and without the planner; value, type, printing and reports must agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from test_golden import PROGRAMS, headers, vault_named
from test_properties import CORPUS, VAULT, mutated_programs

import hql
from hql import dates
from hql.api import Outcome, Session
from hql.explain import explain, trace
from hql.values import Ranking

WEB_AUTH = hql.open_vault(Path(__file__).resolve().parents[1] / "vaults" / "web-auth")


def both_ways(text: str, vault: hql.Vault | None, mode: str = "strict") -> tuple[Outcome, Outcome]:
    # Both runs read one clock, so `now()` cannot tell them apart by the microseconds between them.
    with mock.patch("hql.dates.now", return_value=dates.now()):
        planned = Session(vault, mode).run(text)
        plain = Session(vault, mode, optimize=False).run(text)
    return planned, plain


def assert_same(planned: Outcome, plain: Outcome) -> None:
    assert planned.failed == plain.failed
    assert str(planned.type) == str(plain.type)
    assert planned.render_reports() == plain.render_reports()
    if not planned.failed:
        assert planned.text() == plain.text()
        assert planned.to_json() == plain.to_json()


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_golden_programs_answer_the_same_planned(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    given_headers = headers(text)
    vault = vault_named(given_headers["vault"]) if "vault" in given_headers else None
    assert_same(*both_ways(text, vault, given_headers.get("mode", "strict")))


@pytest.mark.parametrize("text", CORPUS)
def test_corpus_programs_answer_the_same_planned(text: str) -> None:
    assert_same(*both_ways(text, VAULT))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_programs())
def test_mutated_programs_answer_the_same_planned(text: str) -> None:
    assert_same(*both_ways(text, VAULT))


RANKED = [
    'import bm25\ncards | bm25("bearer token") | take(3)',
    'import bm25\ncards | bm25("token") | take(0)',
    'import bm25\ncards | bm25("token") | take(100)',
    'import bm25\ncards | filter(c => c.metadata.status == "todo") | bm25("token") | take(2)',
    'import bm25\ncards | bm25("token") | take(2) | relevant',
    'import bm25\ncards | bm25("token") | relevant | take(2)',
    'import bm25\nr = cards | bm25("client secret") | take(4)\nr | map(h => h.score)',
    'import bm25\n[[oauth], [bearer-token]] | bm25("token") | take(1)',
    "cards | sort(by = c => c.metadata.status) | take(3) | map(c => c.name)",
    "cards | sort(by = c => c.metadata.status, descending = true) | take(3) | map(c => c.name)",
    "[3, 1, 2, 1, 3] | sort | take(2)",
    "sort([3, 1, 2, 1, 3], descending = true) | take(4)",
    "cards | map(c => c.title) | sort | take(100)",
]


@pytest.mark.parametrize("text", RANKED)
def test_rankings_cut_by_take_answer_the_same(text: str) -> None:
    planned, plain = both_ways(text, WEB_AUTH)
    assert not plain.failed, plain.render_reports()
    assert_same(planned, plain)
    if isinstance(plain.value, Ranking):
        assert [hit.detail for hit in planned.value] == [hit.detail for hit in plain.value]


def test_take_after_a_ranker_is_pushed_into_it() -> None:
    session = Session(WEB_AUTH)
    _, plan, _ = session.check('import bm25\ncards | bm25("token") | take(2)')
    assert plan is not None
    assert plan.rewrites == [
        "top-k: take(2) pushed into bm25",
        "lazy-cards: bm25 builds only the cards it hands on",
    ]
    assert list(plan.hints.values()) == [{"limit": 2}, {"lazy_cards": True}]


def test_sort_then_take_keeps_ties_in_input_order() -> None:
    text = (
        "[{k: 1, i: 0}, {k: 0, i: 1}, {k: 1, i: 2}, {k: 0, i: 3}] | sort(by = d => d.k) | take(3)"
    )
    planned, plain = both_ways(text, None)
    assert planned.text() == plain.text() == "[{i: 1, k: 0}, {i: 3, k: 0}, {i: 0, k: 1}]"
    _, plan, _ = Session(None).check(text)
    assert plan is not None and plan.rewrites == ["top-k: take(3) pushed into sort"]


def test_no_rewrite_without_a_literal_count_or_an_absorbing_step() -> None:
    session = Session(WEB_AUTH)
    for text in (
        "n = 2\ncards | take(n)",
        "cards | map(c => c.title) | take(2)",
        'import bm25\ncards | bm25("token") | relevant | take(2)',
    ):
        _, plan, _ = session.check(text)
        assert plan is not None, text
        # `relevant` absorbs no limit: take(2) stays where it is (bm25 is cut by its rule).
        assert not any(line.startswith("top-k") for line in plan.rewrites), text
        cut = [
            "relevant-cut: bm25 hands relevant only the hits its rule can keep",
            "lazy-cards: bm25 builds only the cards it hands on",
        ]
        assert plan.rewrites in ([], cut), text


def _ranker_output(session: Session, text: str) -> Ranking:
    """What the bm25 stage itself handed on (before `take`)."""
    records = trace(session, text, "-").records
    return next(r.value for r in records if r.text.startswith("bm25"))


def test_a_pushed_ranker_hands_on_only_the_hits_take_keeps() -> None:
    text = 'import bm25\ncards | bm25("token") | take(2)'
    assert len(_ranker_output(Session(WEB_AUTH, optimize=False), text).hits) > 2
    assert len(_ranker_output(Session(WEB_AUTH), text).hits) == 2


def test_matched_terms_are_worked_out_only_when_a_hit_is_explained(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hql.search.bm25 import Bm25Index

    calls: list[int] = []
    explain_all = Bm25Index._impacts_of_all

    def counted(self: Any, slots: Any, term_ids: Any) -> Any:
        calls.append(len(slots))
        return explain_all(self, slots, term_ids)

    monkeypatch.setattr(Bm25Index, "_impacts_of_all", counted)
    outcome = hql.run('import bm25\ncards | bm25("token") | count', vault=WEB_AUTH)
    assert outcome.value > 2 and calls == []
    ranking = hql.run('import bm25\ncards | bm25("token")', vault=WEB_AUTH).value
    assert ranking.hits[0].detail["matched"] and len(calls) == 1


def test_explain_names_the_rewrites() -> None:
    text, _, failed = explain(
        Session(WEB_AUTH), 'import bm25\ncards | bm25("token") | take(2)', "-"
    )
    assert not failed
    assert "rewrites\n  top-k: take(2) pushed into bm25" in text


COUNTED = [
    "cards | count",
    "count(cards)",
    "cards | size",
    "size(cards)",
    "(cards | count) + 1",
    "[cards | count, cards | map(c => c.name) | count]",
    "cards | count([[oauth]])",
    "[cards] | map(cards => cards | count)",
    "[cards | count, [cards] | map(cards => cards | count) | sum]",
    'cards | filter(c => c.name == "oauth") | count',
]


@pytest.mark.parametrize("text", COUNTED)
def test_counting_cards_answers_the_same(text: str) -> None:
    planned, plain = both_ways(text, WEB_AUTH)
    assert not plain.failed, plain.render_reports()
    assert_same(planned, plain)


def test_card_count_fires_only_on_the_vaults_own_cards() -> None:
    session = Session(WEB_AUTH)
    for text, expected in (
        ("cards | count", ["card-count: count of cards is how many the vault holds"]),
        ("size(cards)", ["card-count: size of cards is how many the vault holds"]),
        ("cards | count([[oauth]])", []),
        ("cards | take(2) | count", []),
        ("[cards] | map(cards => cards | count)", []),  # a parameter called `cards`
        (  # the parameter shadows only its own body
            "[cards | count, [cards] | map(cards => cards | count) | sum]",
            ["card-count: count of cards is how many the vault holds"],
        ),
    ):
        _, plan, _ = session.check(text)
        assert plan is not None and plan.rewrites == expected, text


def test_counting_cards_of_a_catalogued_vault_builds_no_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from hql.vault import assembly

    root = tmp_path / "vault"
    shutil.copytree(WEB_AUTH.root, root, ignore=shutil.ignore_patterns(".hql"))
    expected = len(hql.open_vault(root).cards)  # the first load writes the catalogue
    built: list[int] = []
    build_cards = assembly.build_cards

    def counted(documents: Any, *rest: Any) -> Any:
        built.append(len(documents))
        return build_cards(documents, *rest)

    monkeypatch.setattr(assembly, "build_cards", counted)
    vault = hql.open_vault(root)
    assert hql.run("cards | count", vault=vault).value == expected and built == []
    assert hql.run("cards | map(c => c.name) | count", vault=vault).value == expected
    assert built == [expected]


def test_lexical_takes_its_best_k_alone_with_ties_kept_in_name_order(tmp_path: Path) -> None:
    # Six cards saying the same thing tie; they must come in name order, planned or not.
    for name in ("f", "b", "e", "a", "d", "c"):
        (tmp_path / f"{name}.md").write_text("# Token\n\nbearer token in a header\n")
    (tmp_path / "other.md").write_text("# Other\n\na token\n")
    (tmp_path / "far.md").write_text("# Far\n\nnothing in common\n")
    vault = hql.open_vault(tmp_path)
    for k in (0, 1, 3, 6, 7, 20):
        text = f'import lexical\ncards | lexical("bearer token header") | take({k})'
        planned, plain = both_ways(text, vault)
        assert_same(planned, plain)
        assert len(planned.value.hits) == min(k, 7)
    lines, _, _ = explain(Session(vault), text, "<expression>", {})
    assert "top-k: take(20) pushed into lexical" in lines
