"""`recall(q)` ranks concepts (memory.md §7): concept cards, relation endpoints that have no card,
and the concepts of `[memory] concepts`; the retrieval counts the concepts it cannot reach."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import hql
import hql.notes
from hql.explain import describe_retrieval

NOTES = {
    "oauth": "# OAuth\n\nDelegated authorization: a client gets an access token from a server.\n",
    "jwt": "---\naliases: [JSON Web Token]\n---\n# JWT\n\nSigned claims carried as a token.\n",
    "pkce": "# PKCE\n\nA code verifier protects the authorization code of public clients.\n",
    "gardens": "# Gardens\n\nRaised beds, compost and the watering of tomatoes.\n",
}
RELATION = (
    "---\ntitle: OAuth relies on token rotation\nmetadata:\n  knowledge:\n    type: Relation\n"
    "    relation:\n      source: oauth\n      target: {target}\n---\n# Relation\n"
)


def _vault(root: Path, concepts: list[object] | None = None, extra: str = "") -> hql.Vault:
    root.mkdir()
    for name, text in NOTES.items():
        (root / f"{name}.md").write_text(text)
    toml = '[vault]\ndialect = "reference"\n'
    if concepts is not None:
        lines = [item if isinstance(item, str) else json.dumps(item) for item in concepts]
        (root / "concepts.jsonl").write_text("\n".join(lines) + "\n")
        toml += '[memory]\nconcepts = "concepts.jsonl"\n'
    (root / "hql.toml").write_text(toml + extra)
    return hql.Vault.open(root)


def _recall(vault: hql.Vault, query: str) -> hql.Outcome:
    outcome = hql.run("cards | recall($q)", vault=vault, params={"q": query})
    assert not outcome.failed, outcome.render_reports()
    return outcome


def _ranked(outcome: hql.Outcome) -> list[tuple[str, str]]:
    return [(hit.card.name, hit.card.source) for hit in outcome.value.hits]


def test_without_relations_or_a_list_recall_ranks_the_cards_as_bm25_does(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v")
    for question in ("authorization token", "compost tomatoes", "signed claims"):
        recalled = _recall(vault, question).value
        ranked = hql.run("import bm25\ncards | bm25($q)", vault=vault, params={"q": question})
        assert [(h.card.name, h.score) for h in recalled.hits] == [
            (h.card.name, h.score) for h in ranked.value.hits
        ]
        assert recalled.hits and all(h.card.source == "card" for h in recalled.hits)
        assert recalled.hits[0].card.card.name == recalled.hits[0].card.name


def test_an_endpoint_without_a_card_is_a_concept_known_by_its_name(tmp_path: Path) -> None:
    root = tmp_path / "v"
    vault = _vault(root)
    (root / "claims.md").write_text(RELATION.format(target="token rotation"))
    (root / "uses.md").write_text(RELATION.format(target="pkce").replace("token rotation", "PKCE"))
    vault = hql.Vault.open(root)
    outcome = _recall(vault, "rotation")
    assert ("token rotation", "relation") in _ranked(outcome)
    found = next(h.card for h in outcome.value.hits if h.card.name == "token rotation")
    assert found.card is hql.values.ABSENT and found.links == ("claims",)
    concepts = outcome.value.retrieval.extra["concepts"]
    # `uses` is a relation card (both ends are cards): an edge, not a concept
    assert concepts["from_card"] == 5 and concepts["from_relation"] == 1
    names = [h.card.name for h in _recall(vault, "authorization relies").value.hits]
    assert "uses" not in names and "claims" in names  # `claims` stays a concept card


def test_listed_concepts_join_and_label_the_cards(tmp_path: Path) -> None:
    concepts = [
        {"name": "Token binding", "labels": ["DPoP", "proof of possession"], "links": ["oauth"]},
        {"name": "PKCE", "labels": ["proof key for code exchange"]},  # the card `pkce`
    ]
    vault = _vault(tmp_path / "v", concepts)
    hits = _recall(vault, "proof of possession").value.hits
    assert hits[0].card.name == "Token binding" and hits[0].card.source == "imported"
    assert hits[0].card.links == ("oauth",) and hits[0].card.title == "DPoP"
    # `exchange` is in no card's text: only the label listed for the card reaches it
    exchange = _recall(vault, "exchange").value.hits
    assert [(h.card.name, h.card.source) for h in exchange] == [("pkce", "card")]
    assert "proof key for code exchange" in exchange[0].card.labels
    typed = hql.run('cards | recall("dpop") | map(h => h.card.labels)', vault=vault)
    assert not typed.failed and str(typed.type) == "List<List<String>>"
    assert typed.value.items[0].items == ("DPoP", "proof of possession")


def test_the_retrieval_counts_and_explain_names_what_cannot_be_recalled(tmp_path: Path) -> None:
    concepts = [{"name": "!!!"}, {"name": "the"}, {"name": "Sourdough", "labels": ["starter"]}]
    vault = _vault(tmp_path / "v", concepts)
    retrieval = _recall(vault, "starter").value.retrieval
    counted = retrieval.extra["concepts"]
    assert counted["total"] == 7 and counted["from_imported"] == 3
    assert counted["name_only"] == 3
    assert counted["unreachable"] == 2 and counted["unreachable_names"] == ["!!!", "the"]
    explained = "\n".join(describe_retrieval(retrieval))
    assert "could not be reached" in explained and "2: !!!, the" in explained
    assert "matched by name and labels only (no card): 3" in explained
    none = _vault(tmp_path / "w").root
    plain = _recall(hql.Vault.open(none), "compost").value.retrieval
    assert plain.extra["concepts"]["unreachable"] == 0


def test_a_bad_list_is_reported_by_line_and_the_rest_is_read(tmp_path: Path) -> None:
    lines: list[object] = [
        {"name": "Sourdough", "labels": ["starter"]},
        "not json",
        {"labels": ["no name"]},
        {"name": "Rye", "labels": "rye flour"},
        {"name": "Spelt", "labels": [3]},
    ]
    vault = _vault(tmp_path / "v", lines)
    outcome = _recall(vault, "starter rye flour spelt")
    assert _ranked(outcome)[:2] == [("Rye", "imported"), ("Sourdough", "imported")]
    warned = [report.message for report in outcome.reports]
    assert any(m.startswith("concepts.jsonl:2: ") for m in warned), warned
    assert any(m.startswith("concepts.jsonl:3: ") and "name" in m for m in warned), warned
    assert any(m.startswith("concepts.jsonl:5: ") and "labels" in m for m in warned), warned
    assert not any("concepts.jsonl:1:" in m or "concepts.jsonl:4:" in m for m in warned)

    missing = _vault(tmp_path / "m", extra='[memory]\nconcepts = "gone.jsonl"\n')
    warned = [report.message for report in _recall(missing, "compost").reports]
    assert any("gone.jsonl" in m and "does not exist" in m for m in warned), warned
    (tmp_path / "outside.jsonl").write_text('{"name": "Secret"}\n')
    outside = _vault(tmp_path / "o", extra='[memory]\nconcepts = "../outside.jsonl"\n')
    outcome = _recall(outside, "secret")
    assert outcome.value.hits == ()
    assert any("not inside the vault" in report.message for report in outcome.reports)


def test_recall_takes_cards_only(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v")
    outcome = hql.run('[1, 2] | recall("x")', vault=vault)
    assert outcome.failed
    assert "`recall` ranks documents, not Int" in outcome.render_reports()
    outcome = hql.run("cards | recall(3)", vault=vault)
    assert outcome.failed and "a query is text, not Int" in outcome.render_reports()


def test_the_mcp_recall_tool_answers_concepts_and_what_it_cannot_reach(tmp_path: Path) -> None:
    import pytest

    from hql.mcp.server import offered
    from hql.mcp.service import ToolFailure, VaultService

    concepts = [{"name": "Token binding", "labels": ["DPoP"], "links": ["oauth"]}, {"name": "!!!"}]
    _vault(tmp_path / "v", concepts)
    service = VaultService(tmp_path / "v")
    answer = service.recall("dpop token", k=3)
    assert answer["ok"] and answer["program"] == 'cards | recall("dpop token") | take(3)'
    first = answer["concepts"][0]
    assert first["rank"] == 1 and first["name"] == "Token binding" and first["card"] is None
    assert (first["source"], first["labels"], first["links"]) == ("imported", ["DPoP"], ["oauth"])
    assert "dpop" in first["matched"] and len(answer["concepts"]) <= 3
    carded = next(item for item in answer["concepts"] if item["source"] == "card")
    assert carded["card"] == carded["name"]
    reached = answer["retrieval"]["concepts"]
    assert reached["unreachable"] == 1 and reached["unreachable_names"] == ["!!!"]
    with pytest.raises(ToolFailure):
        service.recall("token", k=0)
    assert offered("recall", allow_write=False)  # a reading tool: offered without --allow-write


def test_a_memory_table_of_the_wrong_shape_is_said_not_ignored(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v", extra="[memory]\nconcepts = 5\n")
    warned = [report.message for report in _recall(vault, "compost").reports]
    assert any("`memory.concepts` should be a file name" in m for m in warned), warned

    root = tmp_path / "w"
    _vault(root, extra='[memory]\nsimilar_threshold = "x"\n')
    from hql.notes.reconcile import remember

    answer = remember(hql.notes.open(root), "Compost needs turning every week.", create=True)
    assert answer["written"] is True
    assert any("`memory.similar_threshold` should be" in w for w in answer["warnings"]), answer
    done = subprocess.run(
        [sys.executable, "-m", "hql", "--vault", str(root), "note", "remember", "Rye bread."],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "warning: hql.toml: `memory.similar_threshold` should be" in done.stderr
