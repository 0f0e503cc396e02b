"""Field-aware bm25 (BM25F) over the recall fields, weighted by `[search.fields]` (memory.md §2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hql
from hql.search.bm25 import Bm25Index
from hql.search.fields import DEFAULT_WEIGHTS, field_weights, fields_of, search_fields_for
from hql.text.analyzer import Analyzer
from hql.vault.recall import field_mapping, field_texts

FIXTURES = Path(__file__).parent / "fixtures"
UPSTREAM = Path("/work/shared/upstream-fixtures")


def _vault(root: Path, cards: dict[str, str], toml: str = "") -> hql.Vault:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in cards.items():
        (root / f"{name}.md").write_text(text, encoding="utf-8")
    if toml:
        (root / "hql.toml").write_text(toml, encoding="utf-8")
    return hql.Vault.open(str(root), use_cache=False)


def _ranked(vault: hql.Vault, question: str) -> list[str]:
    outcome = hql.run(
        f'import bm25\ncards | bm25("{question}") | map(h => h.card.name)', vault=vault
    )
    assert not outcome.failed, outcome.render_reports()
    return list(outcome.value)


def _card(front: str, body: str) -> str:
    return f"---\n{front}---\n{body}\n"


CARDS = {
    "train-lesson": _card(
        "title: Planning notes\ntriggers: [release train]\n"
        "ignore_when: [github pages]\ntopics: [scheduling]\n",
        "Notes about planning the quarter.",
    ),
    "train-mention": _card(
        "title: Station log\n", "The release train leaves at nine; a release train is a schedule."
    ),
    "pages": _card(
        "title: Static sites\n", "How to publish with github pages and a custom domain."
    ),
}


def test_a_trigger_outweighs_the_same_words_in_a_body(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v", CARDS)
    assert _ranked(vault, "release train") == ["train-lesson", "train-mention"]
    # Weighted 0, a trigger is no evidence, and the card no longer holds the words at all:
    # its body is its text without the recall fields.
    zero = _vault(tmp_path / "z", CARDS, "[search.fields]\ntriggers = 0\n")
    assert _ranked(zero, "release train") == ["train-mention"]


def test_ignore_when_is_never_evidence(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v", CARDS)
    assert _ranked(vault, "github pages") == ["pages"]
    # Ranked over its whole text (no fields), the card matched its own ignore_when phrase.
    whole = Bm25Index.build(list(vault.cards), Analyzer())
    assert "train-lesson" in [hit.card.name for hit in whole.search("github pages")]


def test_topics_and_title_count_with_their_weights(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v", CARDS)
    assert _ranked(vault, "scheduling")[0] == "train-lesson"
    cards = list(vault.cards)

    def score(weights: dict[str, float], question: str, name: str) -> float:
        index = Bm25Index.build(cards, Analyzer(), fields=fields_of(weights))
        return {hit.card.name: hit.score for hit in index.search(question)}[name]

    for field, question, name in (
        ("title", "station", "train-mention"),
        ("topics", "scheduling", "train-lesson"),
    ):
        lighter = score({**DEFAULT_WEIGHTS, field: 1.0}, question, name)
        assert lighter < score(DEFAULT_WEIGHTS, question, name)


def test_each_field_is_normalised_by_its_own_average_length(tmp_path: Path) -> None:
    cards = {
        "short": _card("triggers: [rotate keys]\n", "Body."),
        "long": _card(
            "triggers: [rotate keys, renew certificates, audit logs, revoke tokens, "
            "scan images, pin versions]\n",
            "Body.",
        ),
    }
    vault = _vault(tmp_path / "v", cards)
    index = Bm25Index.build(list(vault.cards), Analyzer(), fields=fields_of())
    scores = {hit.card.name: hit.score for hit in index.search("rotate")}
    assert scores["short"] > scores["long"] > 0


def test_search_fields_weights_are_read_and_checked(tmp_path: Path) -> None:
    weights, problems = field_weights({"triggers": 8, "topics": "much", "colour": 2, "body": -1})
    assert weights == {**DEFAULT_WEIGHTS, "triggers": 8.0}
    assert len(problems) == 3
    assert any("`colour`" in problem for problem in problems)
    vault = _vault(tmp_path / "v", CARDS, '[search.fields]\ntopics = "much"\n')
    outcome = hql.run('import bm25\ncards | bm25("release")', vault=vault)
    assert not outcome.failed
    assert any("[search.fields] topics" in report.message for report in outcome.reports)
    assert search_fields_for(vault)[0].weight("topics") == DEFAULT_WEIGHTS["topics"]


def test_a_mapped_nested_key_is_a_field_and_leaves_the_body(tmp_path: Path) -> None:
    cards = {
        "ome": _card(
            "criteria:\n  use_when: deploying on a friday\n  owner: ops\n",
            "Ask the release owner.",
        )
    }
    vault = _vault(tmp_path / "v", cards, '[context.fields]\nuse_when = "criteria.use_when"\n')
    mapping = field_mapping({"use_when": "criteria.use_when"})[0]
    split = field_texts(vault.cards[0], mapping)
    assert split is not None
    body, texts = split
    assert texts == {"use_when": "deploying on a friday"}
    assert "friday" not in body and "ops" in body and "release owner" in body
    assert _ranked(vault, "friday") == ["ome"]


def _fixture_vaults() -> list[Path]:
    found = [path for path in sorted(FIXTURES.iterdir()) if path.is_dir()]
    if UPSTREAM.is_dir():
        found += [path for path in sorted(UPSTREAM.iterdir()) if path.is_dir()]
    return found


@pytest.mark.parametrize("root", _fixture_vaults(), ids=lambda path: path.name)
def test_a_vault_without_recall_fields_ranks_exactly_as_before(root: Path) -> None:
    cards = list(hql.Vault.open(str(root), use_cache=False).cards)
    plain = Bm25Index.build(cards, Analyzer())
    fielded = Bm25Index.build(cards, Analyzer(), fields=fields_of())
    assert not len(fielded._postings.fielded.owner), "this fixture declares recall fields"
    questions = [card.title for card in cards] + [" ".join(c.title for c in cards[:5])]
    for question in questions:
        before, after = plain.scores(question), fielded.scores(question)
        assert (before is None) == (after is None)
        if before is not None:
            assert np.array_equal(before, after), question


def test_the_store_keeps_the_recall_fields(tmp_path: Path) -> None:
    root = tmp_path / "v"
    state = tmp_path / "state"
    vault = _vault(root, CARDS)
    fields = fields_of()
    first = Bm25Index.build(list(vault.cards), Analyzer(), state, fields=fields)
    again = Bm25Index.build(list(vault.cards), Analyzer(), state, fields=fields)
    assert first.analysed == 3 and again.analysed == 0

    def scores(index: Bm25Index[hql.Card], question: str) -> list[tuple[str, float]]:
        return [(hit.card.name, hit.score) for hit in index.search(question)]

    for question in ("release train", "scheduling", "github pages", "planning"):
        assert scores(again, question) == scores(first, question)
    # Without fields the same store is not reused: it was split another way.
    assert Bm25Index.build(list(vault.cards), Analyzer(), state).analysed == 3
    Bm25Index.build(list(vault.cards), Analyzer(), state, fields=fields)
    # One card changed, one removed: the store's recall entries follow, as a fresh build has them.
    (root / "train-lesson.md").write_text(
        _card("triggers: [release train, code freeze]\n", "Notes."), encoding="utf-8"
    )
    (root / "pages.md").unlink()
    edited = list(hql.Vault.open(str(root), use_cache=False).cards)
    updated = Bm25Index.build(edited, Analyzer(), state, fields=fields)
    fresh = Bm25Index.build(edited, Analyzer(), fields=fields)
    assert updated.analysed == 1
    for question in ("release train", "code freeze", "scheduling", "nine"):
        got, want = scores(updated, question), scores(fresh, question)
        assert [name for name, _ in got] == [name for name, _ in want]
        assert [score for _, score in got] == pytest.approx([score for _, score in want])


def test_recall_fields_join_in_batches_and_onto_a_store_as_in_one_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cards built in batches of two, or added to a stored index of some of them, hold the
    postings (recall fields' included) one build of them all holds."""
    from hql.search import bm25

    cards = {
        **CARDS,
        "aliases": _card("title: Deploys\naliases: [ship it, rollout]\n", "Shipping the app."),
        "summary": _card(
            "title: Quarter\nsummary: planning the release train\n", "The quarter plan."
        ),
        "plain": _card("title: Release notes\n", "A release, planned for the quarter."),
        "quiet": _card("title: Stop\ntopics: [the]\n", "Only a stop word in its topic."),
    }
    vault = _vault(tmp_path / "v", cards)
    fields = fields_of()
    whole = Bm25Index.build(list(vault.cards), Analyzer(), fields=fields)
    monkeypatch.setattr(bm25, "_BATCH", 2)
    batched = Bm25Index.build(list(vault.cards), Analyzer(), fields=fields)
    state = tmp_path / "state"
    Bm25Index.build(list(vault.cards)[::2], Analyzer(), state, fields=fields)
    added = Bm25Index.build(list(vault.cards), Analyzer(), state, fields=fields)
    assert added.analysed == len(cards) - len(list(vault.cards)[::2])
    for index in (batched, added):
        for question in ("release train", "ship it", "quarter planning", "rollout", "the"):
            expected = [(h.card.name, h.score, dict(h.matched)) for h in whole.search(question)]
            got = [(h.card.name, h.score, dict(h.matched)) for h in index.search(question)]
            assert got == expected

    def recall_entries(index: Bm25Index[object]) -> set[tuple[str, str, int, int]]:
        postings, names = index._postings, [card.name for card in index.cards]
        card_of_slot = index._card_of_slot
        fielded = postings.fielded
        return {
            (postings.vocabulary[term], names[card_of_slot[slot]], kind, tf)
            for term, slot, kind, tf in zip(
                fielded.term.tolist(),
                fielded.slot.tolist(),
                fielded.kind.tolist(),
                fielded.tf.tolist(),
                strict=True,
            )
        }

    assert recall_entries(batched) == recall_entries(whole) == recall_entries(added)
    # The cards declaring recall fields, one of them with no term in them (a stop word).
    owners = [whole.cards[at].name for at in whole._card_of_slot[whole._postings.fielded.owner]]
    assert sorted(owners) == ["quiet", "summary", "train-lesson"]


def test_every_terms_impacts_at_once_are_the_floats_worked_out_term_by_term(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that asked many questions has every term's impacts worked out in one go
    (`_TERMS_ONE_BY_ONE`): the same floats, recall fields included, and the same rankings,
    from the index in memory and from its store read back."""
    from hql.search import bm25

    more = {
        f"note-{i}": _card(f"title: Note {i}\ntopics: [release]\n", f"release {i} train")
        for i in range(40)
    }
    vault = _vault(tmp_path / "v", {**CARDS, **more})
    cards, fields, state = list(vault.cards), fields_of(), tmp_path / "state"
    questions = ("release train", "scheduling", "github pages", "note 7 release")
    monkeypatch.setattr(bm25, "_TERMS_ONE_BY_ONE", 10**9)
    one_by_one = Bm25Index.build(cards, Analyzer(), state, fields=fields)
    terms = len(one_by_one._postings.vocabulary)
    assert terms > 60
    expected = [one_by_one._impact_of(term_id) for term_id in range(terms)]
    ranked = [[(hit.card.name, hit.score) for hit in one_by_one.search(q)] for q in questions]
    assert one_by_one._every is None
    monkeypatch.setattr(bm25, "_TERMS_ONE_BY_ONE", 0)
    for at_once in (
        Bm25Index.build(cards, Analyzer(), fields=fields),
        Bm25Index.build(cards, Analyzer(), state, fields=fields),
    ):
        for term_id, (slots, impacts) in enumerate(expected):
            together = at_once._impact_of(term_id)
            assert at_once._every is not None
            assert np.array_equal(slots, together[0])
            assert impacts.tobytes() == together[1].tobytes(), term_id
        assert [
            [(hit.card.name, hit.score) for hit in at_once.search(q)] for q in questions
        ] == ranked


def test_recall_fields_analysed_by_worker_processes_are_as_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Worker processes number terms their own way: a batch's recall entries, made theirs,
    are the ones one process makes, in the same order, and so is the store."""
    from hql.search import bm25

    cards = {
        **CARDS,
        "aliases": _card("title: Deploys\naliases: [ship it, rollout]\n", "Shipping the app."),
        "summary": _card("title: Quarter\nsummary: zebra planning train\n", "The quarter plan."),
        "plain": _card("title: Release notes\n", "A release, planned for the quarter."),
        "late": _card("title: Late\ntopics: [yak, zebra, apple]\n", "Words met late: yak."),
    }
    vault = _vault(tmp_path / "v", cards)
    monkeypatch.setattr(bm25, "_BATCH", 2)
    # Onto a store of some of the cards: the vault's numbers start after its terms, and a
    # worker's from 0.
    for state in ("alone", "shared"):
        Bm25Index.build(list(vault.cards)[::3], Analyzer(), tmp_path / state, fields=fields_of())
    alone = Bm25Index.build(list(vault.cards), Analyzer(), tmp_path / "alone", fields=fields_of())
    monkeypatch.setattr(bm25, "_PARALLEL_BATCHES", 2)
    monkeypatch.setattr(bm25, "_processors", lambda: 2)
    workers = request.getfixturevalue("worker_pools")
    shared = Bm25Index.build(list(vault.cards), Analyzer(), tmp_path / "shared", fields=fields_of())
    assert workers.pools and workers.pools[0] is not None  # workers did take part
    assert workers.analysed > 0  # and the build used the batches they analysed
    for name in ("slot", "title_tf", "text_tf", "term_count", "title_length", "text_length"):
        assert getattr(alone._postings, name).tolist() == getattr(shared._postings, name).tolist()
    one, other = alone._postings.fielded, shared._postings.fielded
    for name in ("owner", "length", "term", "slot", "kind", "tf"):
        assert getattr(one, name).tolist() == getattr(other, name).tolist(), name
    assert len(alone._postings.fielded.term) > 0
    stored = [(tmp_path / name / bm25.STORE_NAME).read_bytes() for name in ("alone", "shared")]
    assert stored[0] == stored[1]
