"""The retrieval steps as a user writes them: through `hql.run`, against real vaults."""

from __future__ import annotations

import json
import re
import shutil
import socket
from contextlib import contextmanager
from pathlib import Path

import pytest
from standin_embedder import BASE_CARDS, http_toml, standin_server, write_vault
from store_parity import StoreVaults, exact, on_every_store

import hql
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
# Each test marked `on_every_store` runs on the SQLite file and on Qdrant's local mode,
# where every answer is checked against a SQLite twin of the vault (store_parity).


@contextmanager
def _zoo(folder: Path, store: str):
    with standin_server() as (endpoint, state), standin_server() as (twin_endpoint, _):
        extra = "embed_queries = true\n"
        vaults = StoreVaults.make(
            store,
            folder,
            lambda root, toml: write_vault(root, BASE_CARDS, toml),
            http_toml(endpoint, extra=extra),
            twin_toml=http_toml(twin_endpoint, extra=extra),  # its requests are not counted
        )
        try:
            vaults.build(queries=["penguins catch fish"])
            yield vaults, state
        finally:
            vaults.close()


@pytest.fixture
def semantic_vault(tmp_path: Path, store: str):
    """A zoo of its own, for a test that changes it."""
    with _zoo(tmp_path, store) as made:
        yield made


@pytest.fixture(scope="module")
def shared_vault(tmp_path_factory: pytest.TempPathFactory, store: str):
    """One zoo per store for the tests that only read it."""
    with _zoo(tmp_path_factory.mktemp("zoo"), store) as made:
        yield made


@pytest.fixture
def store() -> str:
    """The store a test not marked `on_every_store` runs on."""
    return "sqlite"


@on_every_store
def test_semantic_step_ranks_every_card(shared_vault) -> None:
    vaults, _ = shared_vault
    ranking = vaults.run('import semantic\ncards | semantic("penguins catch fish")').value
    assert ranking.hits[0].card.name == "penguin" and len(ranking) == len(BASE_CARDS)
    assert ranking.retrieval.model == "standin-bow" and ranking.retrieval.approximate is False
    if vaults.store == "sqlite":
        assert ranking.retrieval.index.endswith("index.sqlite")
    else:
        assert ranking.retrieval.index.startswith("qdrant:")


@on_every_store
def test_semantic_live_query_is_embedded_and_said(semantic_vault) -> None:
    vaults, state = semantic_vault
    before = len(state.requests)
    outcome = vaults.run('import semantic\ncards | semantic("ducks on ponds")')
    assert outcome.value.hits[0].card.name == "duck"
    assert outcome.value.retrieval.extra.get("query_embedded_now") is True
    assert len(state.requests) == before + 1


@on_every_store
def test_semantic_stale_card_is_ranked_with_a_warning(semantic_vault) -> None:
    vaults, _ = semantic_vault
    vaults.write("owl.md", "---\ntitle: Owl\n---\nOwls changed their habits.\n")
    outcome = vaults.outcome('import semantic\ncards | semantic("penguins catch fish")')
    assert not outcome.failed
    assert any("owl" in r.message and "stale" in r.message for r in outcome.reports)


def _dead_endpoint() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1/embeddings"


@on_every_store
def test_unreachable_embedder_fails_with_a_report(semantic_vault) -> None:
    vaults, _ = semantic_vault
    vaults.configure(http_toml(_dead_endpoint(), extra="embed_queries = true\n"))
    outcome = vaults.outcome('import semantic\ncards | semantic("something new")')
    assert outcome.failed and "cannot be reached" in outcome.reports[-1].message
    assert outcome.reports[-1].span.start > 0  # points at the step


@on_every_store
def test_unreachable_embedder_falls_back_when_asked(semantic_vault) -> None:
    vaults, _ = semantic_vault
    toml = http_toml(_dead_endpoint(), extra='embed_queries = true\non_unavailable = "lexical"\n')
    vaults.configure(toml)
    outcome = vaults.run('import semantic\ncards | semantic("penguins swim underwater")')
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


@on_every_store
def test_hybrid_fuses_words_and_meaning(shared_vault) -> None:
    vaults, _ = shared_vault
    outcome = vaults.run('import hybrid\ncards | hybrid("penguins catch fish")')
    ranking = outcome.value
    assert ranking.retrieval.metric == "standing"
    models = [item["model"] for item in ranking.retrieval.extra["inputs"]]
    assert models == ["hql.bm25.v1", "standin-bow"]
    assert ranking.hits[0].card.name == "penguin"
    assert "cutoff" in ranking.retrieval.extra["inputs"][1]
    first = ranking.hits[0].detail["inputs"]
    assert [place["rank"] for place in first] == [1, 1] and first[1]["standing"] > 0
    json.dumps(outcome.to_json())
    judged = vaults.run('import hybrid\ncards | hybrid("penguins catch fish") | relevant')
    cutoff = judged.value.retrieval.extra["cutoff"]
    assert cutoff["rule"] == "words-or-meaning" and cutoff["kept"] == 1
    assert cutoff["by_meaning"] + cutoff["by_words"] == 1


@on_every_store
@pytest.mark.parametrize(
    ("program", "names"),
    [
        ('cards | semantic("penguins catch fish") | take(2)', ["penguin", "duck"]),
        ('cards | semantic("penguins catch fish") | relevant', ["penguin"]),
        (
            'cards | filter(c => c.name != "penguin") | semantic("penguins catch fish")',
            ["duck", "owl", "weaver"],
        ),
        ('cards | hybrid("penguins catch fish") | relevant', ["penguin"]),
        (
            'fuse(cards | semantic("penguins catch fish"), cards | bm25("fish")) | take(3)',
            ["penguin", "duck", "owl"],
        ),
        ('cards | semantic("penguins catch fish") | table', "penguin"),
    ],
)
def test_semantic_rankings_through_other_steps(
    shared_vault, program: str, names: list[str] | str
) -> None:
    vaults, _ = shared_vault
    outcome = vaults.run("import semantic\nimport hybrid\nimport bm25\n" + program)
    if isinstance(names, str):  # a table: its first row names the best card
        assert outcome.text().split("\n")[2].split()[:3] == ["1", "0.6547", names]
    else:
        assert [hit.card.name for hit in outcome.value] == names


@on_every_store
def test_explain_of_a_semantic_program_differs_only_in_how_it_searched(shared_vault) -> None:
    from hql.explain import explain

    vaults, _ = shared_vault
    program = 'import semantic\ncards | semantic("penguins catch fish") | take(2)'

    def explained(root: Path, source: str) -> str:
        text, reports, failed = explain(hql.Session(vaults.open(root)), source, "<t>")
        assert not failed and not reports
        return _without_timings(text)

    if vaults.twin is None:
        text = explained(vaults.root, program)
        assert "penguin" in text and "search: exact scan (sqlite)" in text
        return
    # The Qdrant side says where and how it searched; the rest is the twin's.
    found = explained(vaults.root, exact(program))
    assert "search: exact" in found and "qdrant" in found
    assert _without_store_lines(found) == _without_store_lines(explained(vaults.twin, program))


def _without_timings(text: str) -> str:
    return re.sub(r"\d+(\.\d+)? ?ms", "_ ms", text)


def _without_store_lines(text: str) -> str:
    """Explain's text without the lines naming the store and `exact = true` (re-spaced)."""
    text = text.replace(", exact = true)", ")")
    lines = [
        re.sub(r" {2,}", "  ", line.rstrip())
        for line in text.split("\n")
        if not line.strip().startswith(("search:", "index ")) and line.strip(" -")
    ]
    return "\n".join(lines)


def test_tampered_index_is_refused_without_traceback(semantic_vault) -> None:
    # SQLite only: it overwrites the index file, which the Qdrant store does not have.
    vaults, _ = semantic_vault
    (vaults.root / ".hql" / "index.sqlite").write_bytes(b"not a database at all")
    outcome = hql.run(
        'import semantic\ncards | semantic("penguins catch fish")', vault=vaults.open()
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


def test_an_analyser_is_built_once_per_vault_and_follows_its_configuration(tmp_path: Path) -> None:
    """`analyze` and `relevant` use one analyser per loaded vault; a vault opened after its
    `[search]` table changed is analysed by the new table, never by an earlier vault's analyser."""
    from hql.steps import retrieval

    root = tmp_path / "shop"
    root.mkdir()
    for name, body in {
        "reset": "Reset the password from the settings page.",
        "bike": "A bicycle shop that also resets passwords.",
        "hours": "Opening hours of the shop.",
    }.items():
        (root / f"{name}.md").write_text(f"---\ntitle: {name}\n---\n{body}\n", encoding="utf-8")
    question = 'analyze("reset password preço")'
    relevant = 'import bm25\ncards | bm25("reset password") | relevant'
    first = hql.open_vault(root, use_cache=False)
    assert retrieval.analyzer_for(first) is retrieval.analyzer_for(first)
    before = run(question, first).value.tree
    assert "password" in before["words"] and before["synonyms"]
    ranked_before = run(relevant, first).json_text()
    (root / "hql.toml").write_text(
        '[search]\nignore = ["password"]\nbuiltin_synonyms = false\n', encoding="utf-8"
    )
    second = hql.open_vault(root, use_cache=False)
    assert retrieval.analyzer_for(second) is not retrieval.analyzer_for(first)
    after = run(question, second).value.tree
    assert "password" not in after["words"] and "password" in after["ignored"]
    assert not after["synonyms"]
    ranked_after = run(relevant, second).json_text()
    assert run(question, first).value.tree == before  # the first vault keeps its own table
    retrieval._analyzers.clear()  # what analysers built afresh answer
    assert run(question, second).value.tree == after
    assert run(relevant, second).json_text() == ranked_after
    assert run(relevant, first).json_text() == ranked_before
    assert run('analyze("reset password")', None).value.tree["words"] == ["reset", "password"]


def test_a_synonym_of_the_vaults_own_group_corroborates_a_note_in_another_language(
    tmp_path: Path,
) -> None:
    """A Portuguese question whose only match with an English note is a synonym: kept when
    the group is the vault's own (`[search] synonyms`); a built-in group (price) is not the
    vault's, and a match through it alone is still dropped as uncorroborated."""
    root = tmp_path / "help"
    root.mkdir()
    (root / "hql.toml").write_text(
        '[search]\nsynonyms = [["refund", "reembolso"]]\n', encoding="utf-8"
    )
    for name, text in {
        "refunds": "# Refunds\n\nA refund is paid back to the card used, within 14 days.",
        "plans": "# Plans\n\nThe price of the yearly plan is shown at checkout.",
        "themes": "# Themes\n\nThemes change how the app looks; install them from settings.",
        **{f"topic-{n}": f"# Topic {n}\n\nNotes about topic number {n}." for n in range(12)},
    }.items():
        (root / f"{name}.md").write_text(text + "\n", encoding="utf-8")
    vault = hql.open_vault(root, use_cache=False)

    def relevant(question: str) -> Ranking:
        return run(f'import bm25\ncards | bm25("{question}") | relevant', vault).value

    assert [hit.card.name for hit in relevant("como pedir um reembolso da assinatura")] == [
        "refunds"
    ]
    through_builtin = relevant("qual é o preço da assinatura anual")
    assert [hit.card.name for hit in through_builtin] == []
    assert through_builtin.retrieval.extra["cutoff"]["uncorroborated"] == 1
