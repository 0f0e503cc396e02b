"""The retrieval steps as a user writes them: through `hql.run`, against real vaults."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
from standin_embedder import BASE_CARDS, http_toml, standin_server, write_vault

import hql
from hql.index.commands import build_command
from hql.values import Ranking

FIXTURES = Path(__file__).parent / "fixtures"


def run(source: str, vault: object) -> hql.Outcome:
    outcome = hql.run(source, vault=vault)  # type: ignore[arg-type]
    assert not outcome.failed, outcome.render_reports()
    return outcome


@pytest.fixture(scope="module")
def fixture_vault() -> hql.Vault:
    return hql.open_vault(FIXTURES / "vault", use_cache=False)


def test_lexical_reproduces_the_original_scores(fixture_vault: hql.Vault) -> None:
    outcome = run('import lexical\ncards | lexical("bearer token authorization")', fixture_vault)
    assert outcome.text() == (
        "[oauth (0.4861), bearer-tokens (0.4819), oauth-defines-bearer (0.4061), http-headers (0.1431)]"
    )
    assert str(outcome.type) == "Ranking<Card>"


def test_lexical_on_birds_matches_the_upstream_readme() -> None:
    vault = hql.open_vault(FIXTURES / "birds", use_cache=False)
    outcome = run(
        'import lexical\ncards | lexical("night hunting birds") | take(3) | map(h => h.card.name)',
        vault,
    )
    assert outcome.text() == "[mute-swan, passeriformes, alcedinidae]"


def test_ranking_keeps_its_retrieval_through_take_and_filter(fixture_vault: hql.Vault) -> None:
    outcome = run(
        'import lexical\ncards | lexical("bearer token authorization") | take(3) | filter(h => h.score == h.score)',
        fixture_vault,
    )
    ranking = outcome.value
    assert isinstance(ranking, Ranking) and len(ranking) == 3
    assert str(outcome.type) == "Ranking<Card>"
    retrieval = ranking.retrieval
    assert all(hit.retrieval is retrieval for hit in ranking)  # one object, shared
    assert (retrieval.model, retrieval.metric, retrieval.approximate) == (
        "hql.hashbag.v1",
        "cosine",
        False,
    )
    assert retrieval.revision == hql.__version__


def test_ranking_json_and_table(fixture_vault: hql.Vault) -> None:
    outcome = run(
        'import lexical\ncards | lexical("bearer token authorization") | take(2)', fixture_vault
    )
    projected = outcome.to_json()["value"]
    assert set(projected["retrieval"]) >= {
        "query",
        "index",
        "model",
        "revision",
        "metric",
        "approximate",
    }
    assert projected["hits"][0] == {
        "card": "oauth",
        "title": "OAuth 2.0",
        "score": pytest.approx(0.4861, abs=1e-4),
    }
    table = run(
        'import lexical\ncards | lexical("bearer token authorization") | take(2) | table',
        fixture_vault,
    )
    assert table.text().split("\n")[0].split() == ["rank", "score", "card", "title"]


def test_ranker_contract_errors(fixture_vault: hql.Vault) -> None:
    outcome = hql.run('import lexical\n[1, 2] | lexical("x")', vault=fixture_vault)
    assert outcome.failed and "ranks documents, not Int" in outcome.reports[0].message
    outcome = hql.run("import lexical\ncards | lexical(3)", vault=fixture_vault)
    assert outcome.failed and "a query is text, not Int" in outcome.reports[0].message
    outcome = hql.run('cards | lexical("x")', vault=fixture_vault)
    assert (
        "`lexical` is provided by the `lexical` extension: write `import lexical`"
        in outcome.reports[0].message
    )


MULTILINGUAL = {
    "en": ("How do I reset my password?", "password-reset"),
    "pt": ("Quanto custa a entrega?", "shipping-price"),
    "ja": ("営業時間は何時ですか", "opening-hours"),
}


@pytest.fixture(scope="module")
def shop_vault(tmp_path_factory: pytest.TempPathFactory) -> hql.Vault:
    root = tmp_path_factory.mktemp("shop")
    cards = {
        "password-reset": (
            "Resetting a password",
            "Open settings and choose reset password. A link is e-mailed.",
        ),
        "shipping-price": ("Preço da entrega", "A entrega custa R$ 20,00 para todo o Brasil."),
        "opening-hours": ("営業時間", "店舗の営業時間は午前10時から午後8時までです。"),
        "returns": ("Returns", "Items can be returned within 30 days."),
    }
    for name, (title, body) in cards.items():
        (root / f"{name}.md").write_text(f"---\ntitle: {title}\n---\n{body}\n", encoding="utf-8")
    return hql.open_vault(root, use_cache=False)


@pytest.mark.parametrize("language", sorted(MULTILINGUAL))
def test_bm25_finds_the_card_in_its_language(shop_vault: hql.Vault, language: str) -> None:
    question, expected = MULTILINGUAL[language]
    outcome = run(
        f'import bm25\ncards | bm25("{question}") | relevant | map(h => h.card.name)', shop_vault
    )
    assert outcome.value.items[0] == expected


def test_bm25_hits_say_which_terms_matched(shop_vault: hql.Vault) -> None:
    outcome = run('import bm25\ncards | bm25("reset password")', shop_vault)
    best = outcome.value.hits[0]
    assert best.card.name == "password-reset"
    assert {"reset", "password"} <= set(best.detail["matched"])
    assert best.retrieval.metric == "bm25" and best.retrieval.model == "hql.bm25.v1"


def test_relevant_abstains_on_nonsense(shop_vault: hql.Vault) -> None:
    assert (
        run(
            'import bm25\ncards | bm25("zebra quantum lattice") | relevant | count', shop_vault
        ).value
        == 0
    )


def test_relevant_floor_is_recorded(shop_vault: hql.Vault) -> None:
    outcome = run('import bm25\ncards | bm25("reset password") | relevant(min = 0.5)', shop_vault)
    cutoff = outcome.value.retrieval.extra["cutoff"]
    assert (
        cutoff["rule"] == "min"
        and cutoff["min"] == 0.5
        and all(hit.score >= 0.5 for hit in outcome.value)
    )


def test_fuse_keeps_every_input(shop_vault: hql.Vault) -> None:
    outcome = run(
        'import bm25\nimport lexical\nfuse(cards | bm25("reset password"), cards | lexical("reset password"), k = 10)',
        shop_vault,
    )
    ranking = outcome.value
    assert ranking.retrieval.metric == "rrf" and ranking.retrieval.extra["k"] == 10
    assert [i["model"] for i in ranking.retrieval.extra["inputs"]] == [
        "hql.bm25.v1",
        "hql.hashbag.v1",
    ]
    assert ranking.hits[0].card.name == "password-reset"
    assert all(len(hit.detail["inputs"]) == 2 for hit in ranking)
    assert ranking.hits[0].score == pytest.approx(2 / 11)


def test_analyze_shows_words_terms_and_synonyms(shop_vault: hql.Vault) -> None:
    outcome = run('analyze("Quanto custa a entrega?")', shop_vault)
    tree = outcome.value.tree
    assert "entrega" in tree["words"] and "quanto" in tree["ignored"]
    assert any(item["group"] == "price" for item in tree["synonyms"])


def test_explain_shows_plan_terms_and_times(shop_vault: hql.Vault) -> None:
    from hql.explain import explain

    text, reports, failed = explain(
        hql.Session(shop_vault), 'import bm25\ncards | bm25("reset password") | take(2)', "<t>"
    )
    assert not failed and not reports
    stage_line = next(
        line for line in text.split("\n") if line.strip().startswith('bm25("reset password")')
    )
    assert stage_line.split()[2:4] == ["Set<Card>", "Ranking<Card>"] and stage_line.endswith("ms")
    assert "question words: reset, password" in text
    assert "ms" in text and "password-reset" in text and "reset " in text


# --- semantic, through the stand-in embedder on loopback ----------------------------------


@pytest.fixture
def semantic_vault(tmp_path: Path):
    with standin_server() as (endpoint, state):
        root = tmp_path / "zoo"
        write_vault(root, BASE_CARDS, http_toml(endpoint, extra="embed_queries = true\n"))
        code, text = build_command(hql.open_vault(root), queries=["penguins catch fish"])
        assert code == 0, text
        yield root, endpoint, state


def test_semantic_step_ranks_every_card(semantic_vault) -> None:
    root, _, _ = semantic_vault
    outcome = run('import semantic\ncards | semantic("penguins catch fish")', hql.open_vault(root))
    ranking = outcome.value
    assert ranking.hits[0].card.name == "penguin" and len(ranking) == len(BASE_CARDS)
    assert ranking.retrieval.model == "standin-bow" and ranking.retrieval.approximate is False
    assert ranking.retrieval.index.endswith("index.sqlite")


def test_semantic_live_query_is_embedded_and_said(semantic_vault) -> None:
    root, _, state = semantic_vault
    before = len(state.requests)
    outcome = run('import semantic\ncards | semantic("ducks on ponds")', hql.open_vault(root))
    assert outcome.value.hits[0].card.name == "duck"
    assert outcome.value.retrieval.extra.get("query_embedded_now") is True
    assert len(state.requests) == before + 1


def test_semantic_stale_card_is_ranked_with_a_warning(semantic_vault) -> None:
    root, _, _ = semantic_vault
    (root / "owl.md").write_text(
        "---\ntitle: Owl\n---\nOwls changed their habits.\n", encoding="utf-8"
    )
    outcome = hql.run(
        'import semantic\ncards | semantic("penguins catch fish")', vault=hql.open_vault(root)
    )
    assert not outcome.failed
    assert any("owl" in r.message and "stale" in r.message for r in outcome.reports)


def _dead_endpoint() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1/embeddings"


def test_unreachable_embedder_fails_with_a_report(semantic_vault) -> None:
    root, _, _ = semantic_vault
    (root / "hql.toml").write_text(
        http_toml(_dead_endpoint(), extra="embed_queries = true\n"), encoding="utf-8"
    )
    outcome = hql.run(
        'import semantic\ncards | semantic("something new")', vault=hql.open_vault(root)
    )
    assert outcome.failed and "cannot be reached" in outcome.reports[-1].message
    assert outcome.reports[-1].span.start > 0  # points at the step


def test_unreachable_embedder_falls_back_when_asked(semantic_vault) -> None:
    root, _, _ = semantic_vault
    toml = http_toml(_dead_endpoint(), extra='embed_queries = true\non_unavailable = "lexical"\n')
    (root / "hql.toml").write_text(toml, encoding="utf-8")
    outcome = run(
        'import semantic\ncards | semantic("penguins swim underwater")', hql.open_vault(root)
    )
    retrieval = outcome.value.retrieval
    assert (
        retrieval.model == "hql.bm25.v1"
        and "cannot be reached" in retrieval.extra["fallback"]["reason"]
    )
    assert outcome.value.hits[0].card.name == "penguin"
    assert any(r.severity.word == "warning" for r in outcome.reports)


def test_semantic_without_an_index_is_a_name_error(fixture_vault: hql.Vault) -> None:
    outcome = hql.run('import semantic\ncards | semantic("x")', vault=fixture_vault)
    assert outcome.failed and outcome.reports[0].stage.value == "name"
    assert "hql index build" in outcome.reports[0].message


def test_hybrid_fuses_words_and_meaning(semantic_vault) -> None:
    root, _, _ = semantic_vault
    outcome = run('import hybrid\ncards | hybrid("penguins catch fish")', hql.open_vault(root))
    ranking = outcome.value
    assert ranking.retrieval.metric == "rrf"
    models = [item["model"] for item in ranking.retrieval.extra["inputs"]]
    assert models == ["hql.bm25.v1", "standin-bow"]
    assert ranking.hits[0].card.name == "penguin"
    assert "cutoff" in ranking.retrieval.extra["inputs"][1]
    json.dumps(outcome.to_json())


def test_tampered_index_is_refused_without_traceback(semantic_vault) -> None:
    root, _, _ = semantic_vault
    (root / ".hql" / "index.sqlite").write_bytes(b"not a database at all")
    outcome = hql.run(
        'import semantic\ncards | semantic("penguins catch fish")', vault=hql.open_vault(root)
    )
    assert outcome.failed and outcome.reports[-1].stage.value == "evaluation"


def test_copying_fixture_vault_keeps_scores(tmp_path: Path) -> None:
    copy = tmp_path / "vault"
    shutil.copytree(FIXTURES / "vault", copy)
    outcome = run(
        'import lexical\ncards | lexical("bearer token authorization") | take(1)',
        hql.open_vault(copy),
    )
    assert outcome.text() == "[oauth (0.4861)]"


def test_bm25_relevant_needs_evidence_beyond_prefixes_and_negations(tmp_path: Path) -> None:
    root = tmp_path / "help"
    notes = {
        "units": ("Units", "Set the quantity of each item in the table."),
        "browser": ("Browser", "Open the note in Chrome or Firefox."),
        "hooks": ("Hook runtime", "The provider neutral hook runtime runs before each task."),
    }
    for name, (title, body) in notes.items():
        (root / f"{name}.md").parent.mkdir(parents=True, exist_ok=True)
        (root / f"{name}.md").write_text(f"---\ntitle: {title}\n---\n{body}\n", encoding="utf-8")
    vault = hql.open_vault(root, use_cache=False)

    def relevant_names(question: str) -> list[str]:
        outcome = run(f'import bm25\ncards | bm25("{question}") | relevant', vault)
        assert not outcome.failed, outcome.to_json()
        return [hit.card.name for hit in outcome.value]

    # "quantum" and "chromodynamics" share only 5-letter prefixes with "quantity" and "Chrome".
    found = run('import bm25\ncards | bm25("quantum chromodynamics lattice")', vault).value
    assert {hit.card.name for hit in found} == {"units", "browser"}
    assert relevant_names("quantum chromodynamics lattice") == []
    # A negated request is not evidence for the card it names; the same request is.
    assert relevant_names("use the provider neutral hook runtime") == ["hooks"]
    assert relevant_names("do not use the provider neutral hook runtime") == []
    assert relevant_names("不要 provider neutral hook runtime") == []
    cutoff = run(
        'import bm25\ncards | bm25("quantum chromodynamics lattice") | relevant', vault
    ).value.retrieval.extra["cutoff"]
    assert cutoff["rule"] == "coverage" and cutoff["without_evidence"] == 2


def test_relevant_on_a_fusion_keeps_what_any_input_would_keep(shop_vault: hql.Vault) -> None:
    program = (
        "import bm25\nimport lexical\n"
        'fuse(cards | bm25("reset password"), cards | lexical("reset password")) | relevant'
    )
    outcome = run(program, shop_vault)
    assert not outcome.failed, outcome.to_json()
    ranking = outcome.value
    assert [hit.card.name for hit in ranking] == ["password-reset"]
    cutoff = ranking.retrieval.extra["cutoff"]
    assert cutoff["rule"] == "any-input" and cutoff["inputs"] == ["coverage", "median-margin"]
    nonsense = run(
        'import bm25\nfuse(cards | bm25("zebra lattice"), cards | bm25("quantum")) | relevant',
        shop_vault,
    )
    assert nonsense.value.hits == ()


def test_bm25_relevant_needs_several_question_words_or_a_large_share(tmp_path: Path) -> None:
    # bench/data/garden: 440 notes on the ocean, Wikipedia articles and this manual.
    garden = tmp_path / "garden"
    shutil.copytree(Path(__file__).parents[1] / "bench" / "data" / "garden", garden)
    vault = hql.open_vault(garden, use_cache=False)

    def relevant(question: str) -> Ranking:
        return run(f'import bm25\ncards | bm25("{question}") | relevant', vault).value

    # Off-topic: each top hit shares one common word ("home", "rules") with the question.
    for question in ("how do I bake sourdough bread at home", "rules for castling in chess"):
        ranked = run(f'import bm25\ncards | bm25("{question}")', vault).value
        assert len(ranked.hits) > 3
        judged = relevant(question)
        assert [hit.card.name for hit in judged] == []
        cutoff = judged.retrieval.extra["cutoff"]
        assert cutoff["corroboration"]["words"] == 3 and cutoff["uncorroborated"] >= 1
    # On-topic: several question words, or one carrying a large share of the question.
    assert [h.card.name for h in relevant("castles and vineyards in the river gorge")] == ["Rhine"]
    assert "Ctenophora" in [h.card.name for h in relevant("comb rows of ctenophores")]
