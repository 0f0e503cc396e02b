"""Hub priors (hql.index.hubs) and `hybrid | relevant` reading cosines less them.

The vault is real notes with a real SQLite index built by the stand-in embeddings server
(a hashed bag of words); one note, an FAQ, shares words with every English question of
the bank, as a hub shares meaning with every question.
"""

from __future__ import annotations

import weakref
from pathlib import Path

import pytest
from standin_embedder import BASE_CARDS, http_toml, standin_server, write_vault

import hql
from hql.index.commands import build_command
from hql.index.hubs import BANK, hub_priors
from hql.index.reader import clear_cache

FAQ = (
    "Notes stored on disk, sync the vault between computers, pack for hiking, boil an egg, "
    "sea level on the coast, the colour theme of the app, renew a passport, back up files."
)


@pytest.fixture
def zoo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from hql.index import hubs

    monkeypatch.setattr(hubs, "_BANK_VECTORS", {})  # each test's server embeds the bank anew
    with standin_server() as (endpoint, state):
        root = tmp_path / "zoo"
        write_vault(
            root, {**BASE_CARDS, "faq": FAQ}, http_toml(endpoint, extra="embed_queries = true\n")
        )
        code, text = build_command(hql.open_vault(root, use_cache=False))
        assert code == 0, text
        clear_cache()
        yield root, state


def test_the_card_near_every_question_has_the_highest_prior_and_priors_centre_on_zero(
    zoo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hql.index import hubs

    root, state = zoo
    vault = hql.open_vault(root, use_cache=False)
    before = len(state.requests)
    priors = hub_priors(vault)
    assert priors is not None and set(priors) == {"faq", *BASE_CARDS}
    assert max(priors, key=priors.__getitem__) == "faq" and priors["faq"] > 0.05
    assert sum(priors.values()) == pytest.approx(0.0, abs=1e-9)
    embedded = [text for request in state.requests[before:] for text in request["input"]]
    assert sorted(embedded) == sorted(BANK)  # the whole bank, once
    again = len(state.requests)
    assert hub_priors(vault) == priors and len(state.requests) == again  # not embedded again
    # Another process (nothing in memory) reads the bank's vectors kept beside the index.
    kept = list((root / ".hql").glob("index.sqlite.hubs-*.npy"))
    assert len(kept) == 1
    monkeypatch.setattr(hubs, "_BANK_VECTORS", {})
    monkeypatch.setattr(hubs, "_PRIORS", weakref.WeakKeyDictionary())
    clear_cache()
    assert hub_priors(hql.open_vault(root, use_cache=False)) == pytest.approx(priors)
    assert len(state.requests) == again
    # A damaged file is embedded anew and replaced.
    kept[0].write_bytes(b"not an array")
    monkeypatch.setattr(hubs, "_BANK_VECTORS", {})
    monkeypatch.setattr(hubs, "_PRIORS", weakref.WeakKeyDictionary())
    clear_cache()
    assert hub_priors(hql.open_vault(root, use_cache=False)) == pytest.approx(priors)
    assert len(state.requests) > again and kept[0].stat().st_size > 100


def test_no_priors_when_the_bank_cannot_be_embedded(tmp_path: Path) -> None:
    with standin_server() as (endpoint, _):
        root = tmp_path / "zoo"
        write_vault(root, BASE_CARDS, http_toml(endpoint))  # embed_queries off (an HTTP model)
        assert build_command(hql.open_vault(root, use_cache=False))[0] == 0
        clear_cache()
        assert hub_priors(hql.open_vault(root, use_cache=False), bank=("owls at night",)) is None


def test_hybrid_relevant_reads_a_models_cosines_less_their_hub_prior(
    zoo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a hub floor for the stand-in model (0.3), the FAQ's cosine to an egg question
    (0.34, above the floor) less its prior (0.08) is below it: nothing stands out and the
    question is not answered; the penguin note still answers a question about penguins."""
    from hql.search import relevance

    root, _ = zoo
    vault = hql.open_vault(root, use_cache=False)
    egg = 'import hybrid\ncards | hybrid("how long do I boil an egg") | relevant'
    penguins = 'import hybrid\ncards | hybrid("penguins catch fish underwater") | relevant'
    monkeypatch.setitem(relevance.MODEL_FLOORS, "standin-bow", 0.3)
    outcome = hql.run(egg, vault=vault)
    assert not outcome.failed, outcome.render_reports()
    assert [hit.card.name for hit in outcome.value] == ["faq"]  # the raw cosine passes
    monkeypatch.setitem(relevance.HUB_FLOORS, "standin-bow", 0.3)
    outcome = hql.run(egg, vault=vault)
    cutoff = outcome.value.retrieval.extra["cutoff"]
    assert list(outcome.value) == [] and cutoff["hub_floor"] == 0.3
    assert cutoff["by_meaning"] == 0 and "reach" not in cutoff
    assert "hub prior" in cutoff["words_need"]
    outcome = hql.run(penguins, vault=vault)
    assert [hit.card.name for hit in outcome.value] == ["penguin"]
    assert outcome.value.retrieval.extra["cutoff"]["by_meaning"] == 1


def test_priors_are_worked_out_once_while_new_questions_are_kept_in_the_index(
    zoo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each new question's vector is written into the index; that write is the index's own,
    so the store that worked out the priors (48 searches of every card) keeps them."""
    from hql.index import hubs
    from hql.search import relevance

    root, _ = zoo
    monkeypatch.setitem(relevance.HUB_FLOORS, "standin-bow", 0.3)
    monkeypatch.setattr(hubs, "_PRIORS", weakref.WeakKeyDictionary())
    worked_out: list[int] = []
    real = hubs._bank_vectors
    monkeypatch.setattr(hubs, "_bank_vectors", lambda *a: worked_out.append(1) or real(*a))
    vault = hql.open_vault(root, use_cache=False)
    for question in ("penguins catch fish", "owls hunt at night", "which bird swims"):
        outcome = hql.run(f'import hybrid\ncards | hybrid("{question}") | relevant', vault=vault)
        assert not outcome.failed, outcome.render_reports()
    assert len(worked_out) == 1
