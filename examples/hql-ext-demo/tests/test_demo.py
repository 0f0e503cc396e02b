"""The demo extension, used from HQL programs as a user would (installed, then `import demo`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hql_ext_demo import words

import hql
import hql.registry


@pytest.fixture()
def vault(tmp_path: Path) -> hql.Vault:
    cards = {
        "bearer": "# Bearer tokens\n\nA bearer token grants access to whoever holds the token.\n",
        "oauth": "# OAuth\n\nOAuth issues access tokens to clients. See [[bearer]].\n",
        "cooking": "# Bread\n\nFlour, water, salt and time make bread.\n",
    }
    for name, text in cards.items():
        (tmp_path / f"{name}.md").write_text(text, encoding="utf-8")
    return hql.Vault.open(tmp_path)


def test_words_are_lowercased_word_characters() -> None:
    assert words("Bearer-Token, OAuth!") == ["bearer", "token", "oauth"]


def test_wordcount_counts_body_words(vault: hql.Vault) -> None:
    # The body holds its heading: "Bearer tokens" and the sentence's ten words make 12;
    # oauth has 9 and the bread card 8, so `min = 10` keeps one card.
    outcome = hql.run("import demo\ncards | wordcount(min = 10)", vault=vault)
    assert not outcome.failed, outcome.render_reports()
    assert hql_json(outcome) == [{"card": "bearer", "words": 12}]


def test_shout(vault: hql.Vault) -> None:
    assert hql.run('import demo\nshout("hi")', vault=vault).value == "HI!"


def test_similar_ranks_by_shared_words(vault: hql.Vault) -> None:
    outcome = hql.run('import demo\ncards | similar("bearer token")', vault=vault)
    assert str(outcome.type) == "Ranking<Card>"
    names = [hit.card.name for hit in outcome.value.hits]
    assert names == ["bearer", "oauth"]  # bread shares no word
    assert outcome.value.retrieval.model == "demo.similar.v1"


def test_take_after_similar_is_pushed_into_it(vault: hql.Vault) -> None:
    whole = hql.run('import demo\ncards | similar("token access")', vault=vault).value
    first = hql.run('import demo\ncards | similar("token access") | take(1)', vault=vault).value
    assert [h.card.name for h in first.hits] == [h.card.name for h in whole.hits[:1]]
    spec = hql.registry.installed().extensions["demo"].steps["similar"]
    assert spec.absorbs == ("limit",)


def test_card_metadata_is_contributed(vault: hql.Vault) -> None:
    outcome = hql.run("[[oauth]].metadata.demo.words_model", vault=vault)
    assert outcome.text() == '"demo.words.v1"'


def hql_json(outcome: hql.Outcome) -> object:
    return outcome.to_json()["value"]
