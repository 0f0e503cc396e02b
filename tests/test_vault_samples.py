"""The bundled sample vaults load cleanly and show what HQL is for."""

from __future__ import annotations

from pathlib import Path

import pytest

from hql.graphs import expand, project
from hql.vault import RELATION_CARD, Vault

SAMPLES = Path(__file__).parent.parent / "vaults"


@pytest.fixture(scope="module")
def web_auth() -> Vault:
    return Vault.open(SAMPLES / "web-auth", use_cache=False)


def test_loads_without_warnings(web_auth: Vault) -> None:
    assert web_auth.warnings == ()
    assert 10 <= len(web_auth.cards) <= 20
    assert web_auth.config.imports == ("lexical",)


def test_has_concepts_relations_metadata_and_annotations(web_auth: Vault) -> None:
    relations = [card for card in web_auth.cards if card.kind == RELATION_CARD]
    assert len(relations) == 4
    owners = {card.metadata.get("owner") for card in web_auth.cards} - {None}
    assert owners == {"ada", "barbara", "edsger", "grace"}
    annotated = [edge for edge in web_auth.edges if "relation" in edge.data]
    assert len(annotated) >= 8
    oauth = web_auth.card("oauth")
    assert oauth is not None
    assert {"relation": "requires", "since": "OAuth 2.1"} in [
        link.annotation for link in oauth.links
    ]


def test_queries_document_links_nowhere(web_auth: Vault) -> None:
    queries = web_auth.card("queries")
    assert queries is not None and queries.links == ()
    assert queries.body.count("```hql\n") >= 5


def test_every_link_resolves(web_auth: Vault) -> None:
    assert all(web_auth.card(edge.target) is not None for edge in web_auth.edges)


def test_expand_from_csrf(web_auth: Vault) -> None:
    csrf = web_auth.card("csrf")
    assert csrf is not None
    graph = expand(project([csrf], web_auth), web_auth, 1, "both")
    assert graph.nodes == [
        "authorization-header",
        "cors",
        "csrf",
        "same-site-cookies",
        "session-cookies",
    ]


def test_a_page_made_only_of_queries_is_a_card_and_says_so(web_auth: Vault) -> None:
    """The choice (docs/vault.md): what a document holds does not decide whether it is a card."""
    import hql

    queries = web_auth.card("queries")
    assert queries is not None and queries.kind == "ConceptCard"
    outside_blocks = "".join(queries.body.split("```")[0::2])  # the prose between fences
    assert "This page is a card too" in outside_blocks
    answer = hql.run('cards | filter(c => c.name == "queries") | count', vault=web_auth)
    assert answer.value == 1
    # and it can rank, as the page says
    ranked = hql.run('cards | lexical("bearer token")', vault=web_auth).value
    assert "queries" in [hit.card.name for hit in ranked]


def test_the_sample_query_page_is_current() -> None:
    """`render vaults/web-auth/queries.md` of a fresh clone changes nothing."""
    import hql
    from hql.render import render_text

    page = SAMPLES / "web-auth" / "queries.md"
    text = page.read_text(encoding="utf-8")
    vault = hql.open_vault(SAMPLES / "web-auth")
    rendered = render_text(text, lambda program: hql.Session(vault).run(program, str(page)))
    assert rendered.failed == 0
    assert rendered.text == text, "run hql --vault vaults/web-auth render vaults/web-auth/queries.md --write"
