"""`collapse` and the similarity behind it, on an Obsidian vault of a few hundred notes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import hql
from hql.context.similarity import near_duplicates, similarity
from hql.values import Ranking

FIXTURES = Path(__file__).parent / "fixtures"

ROTATION = """---
tags: [ops, secrets]
---
# Rotating the signing key

The signing key for session tokens lives in the vault under ops/signing.
Rotate it every ninety days, or at once when someone with access leaves.
First publish the new public key beside the old one so both verify.
Wait one full token lifetime before the old key stops verifying tokens.
Then remove the old key and record the rotation date in the runbook.
Never paste the private key into chat, tickets or a terminal recording.
"""

# The same lesson with one sentence changed, as a copy kept in another folder drifts.
ROTATION_COPY = ROTATION.replace(
    "Wait one full token lifetime before the old key stops verifying tokens.",
    "Keep the old key verifying for a whole token lifetime, then retire it.",
).replace("# Rotating the signing key", "# Rotating the signing key (copy)")

# Another card on the same broad topic (keys and tokens), saying something else.
REVOCATION = """---
tags: [ops, secrets]
---
# Revoking a leaked token

When a session token leaks, revoke it through the admin console at once.
Revocation lists are checked by every service on each request.
Tell the owner of the account, and look in the audit log for its use.
A leaked signing key is a rotation, not a revocation: see the key runbook.
"""


@pytest.fixture(scope="module")
def vault_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("collapse") / "vault"
    shutil.copytree(FIXTURES / "obsidian", root)
    lessons = root / "Lessons"
    lessons.mkdir()
    (lessons / "Key rotation.md").write_text(ROTATION, encoding="utf-8")
    (root / "Daily" / "Key rotation copy.md").write_text(ROTATION_COPY, encoding="utf-8")
    (lessons / "Token revocation.md").write_text(REVOCATION, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def vault(vault_root: Path) -> hql.Vault:
    return hql.open_vault(vault_root, use_cache=False)


def run(program: str, vault: hql.Vault) -> hql.Outcome:
    outcome = hql.run(program, vault=vault)
    assert not outcome.failed, outcome.render_reports()
    return outcome


QUESTION = "rotate the signing key for session tokens"


def test_copies_differing_by_one_sentence_are_alike_and_a_shared_topic_is_not() -> None:
    assert similarity(ROTATION, ROTATION_COPY) >= 0.6
    assert similarity(ROTATION, REVOCATION) < 0.2
    assert similarity(ROTATION, ROTATION) == 1.0


def test_collapse_hides_the_copy_and_keeps_the_other_card(vault: hql.Vault) -> None:
    before = run(f'import bm25\ncards | bm25("{QUESTION}") | take(5)', vault).value
    assert isinstance(before, Ranking)
    names = [hit.card.name for hit in before]
    assert {"Key rotation", "Key rotation copy", "Token revocation"} <= set(names)

    after = run(f'import bm25\ncards | bm25("{QUESTION}") | collapse | take(5)', vault).value
    assert isinstance(after, Ranking)
    kept = [hit.card.name for hit in after]
    assert "Token revocation" in kept
    assert ("Key rotation" in kept) != ("Key rotation copy" in kept)
    shown = next(hit for hit in after if hit.card.name.startswith("Key rotation"))
    hidden = ({"Key rotation", "Key rotation copy"} - {shown.card.name}).pop()
    assert shown.detail is not None and shown.detail["collapsed"] == [hidden]
    groups = after.retrieval.extra["collapse"]["groups"]
    assert {"kept": shown.card.name, "hidden": [hidden]} in groups
    assert not any("Token revocation" in group["hidden"] for group in groups)
    # The generated field notes of this vault are templates too: they collapse as well.
    assert after.retrieval.extra["collapse"]["hidden"] >= 1
    # Nothing else moved: the kept hits are in the order the ranking had them.
    whole = run(f'import bm25\ncards | bm25("{QUESTION}")', vault).value
    assert isinstance(whole, Ranking)
    order = [hit.card.name for hit in whole]
    assert kept == sorted(kept, key=order.index)


def test_explain_says_what_was_collapsed_and_why(vault: hql.Vault) -> None:
    session = hql.Session(vault)
    from hql.explain import explain

    text, _, failed = explain(
        session, f'import bm25\ncards | bm25("{QUESTION}") | collapse | take(3)', "<test>"
    )
    assert not failed
    assert "collapse: threshold" in text and "hidden in" in text
    assert "stands for Key rotation" in text and "resemblance" in text


def test_the_project_card_and_a_must_card_are_preferred(vault: hql.Vault) -> None:
    from hql.context.collapse import collapsed_hits

    ranking = run(f'import bm25\ncards | bm25("{QUESTION}") | take(5)', vault).value
    assert isinstance(ranking, Ranking)
    pair = [hit for hit in ranking if hit.card.name.startswith("Key rotation")]
    second = pair[1].card.name

    kept, _ = collapsed_hits(
        pair, None, priority=lambda h: "must" if h.card.name == second else "should"
    )
    assert [hit.card.name for hit in kept] == [second]
    assert kept[0].detail is not None and "`must`" in kept[0].detail["collapse"]["representative"]


def test_near_duplicates_propose_the_notes_a_new_text_repeats(vault: hql.Vault) -> None:
    found = near_duplicates(ROTATION_COPY, vault.cards, 0.5)
    assert [similar.name for similar in found] == ["Key rotation copy", "Key rotation"]
    assert found[0].score > found[1].score >= 0.5 and "resemblance" in found[1].why
    assert near_duplicates("a text no note repeats at all, about whales", vault.cards, 0.5) == []


def test_collapse_refuses_a_threshold_outside_zero_to_one(vault: hql.Vault) -> None:
    outcome = hql.run('import bm25\ncards | bm25("key") | collapse(threshold = 1.5)', vault=vault)
    assert outcome.failed and "between 0 and 1" in outcome.render_reports()
    outcome = hql.run("cards | collapse", vault=vault)
    assert outcome.failed and "reads a ranking; found Set<Card>" in outcome.render_reports()
    outcome = hql.run('import bm25\ncards | bm25("key") | collapse(threshold = "x")', vault=vault)
    assert outcome.failed and "threshold" in outcome.render_reports()


def test_cosine_decides_when_both_cards_have_vectors(tmp_path: Path) -> None:
    import numpy as np
    from standin_embedder import standin_vector

    from hql.index.commands import build_command

    class BagEmbedder:
        model_id, revision = "bag", "1"

        def embed_passages(self, texts: list[str]) -> np.ndarray:
            return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

        embed_queries = embed_passages

    root = tmp_path / "lessons"
    root.mkdir()
    (root / "hql.toml").write_text('[semantics]\nindex = ".hql/index.sqlite"\n', encoding="utf-8")
    for name, text in (("rotation", ROTATION), ("copy", ROTATION_COPY), ("revocation", REVOCATION)):
        (root / f"{name}.md").write_text(text, encoding="utf-8")
    code, said = build_command(hql.open_vault(root, use_cache=False), embedder=BagEmbedder())
    assert code == 0, said
    vault = hql.open_vault(root, use_cache=False)
    ranking = run(f'import bm25\ncards | bm25("{QUESTION}") | collapse', vault).value
    assert isinstance(ranking, Ranking)
    record = ranking.retrieval.extra["collapse"]
    assert record["methods"] == ["cosine"]
    assert [group["hidden"] for group in record["groups"]] == [["copy"]]
    assert "cosine" in ranking.hits[0].detail["collapse"]["alike"]["copy"]["why"]
