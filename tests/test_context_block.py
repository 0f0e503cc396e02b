"""The `Context` value and the `context` step: budget, required cards, abstention, formats."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

import hql
from hql.context.block import Context, estimate_tokens

FIXTURES = Path(__file__).parent / "fixtures"

LESSONS = {
    "Deploy freeze": (
        "priority: must\nsummary: No deploys on Friday after 15:00; ask the release owner.\n"
        "use_when: deploying, releasing or merging to main\n"
        "ignore_when: [deploy to github pages]\n",
        "Deploys on Friday afternoon caused three outages. The freeze holds for every service.",
    ),
    "Deploy checklist": (
        "summary: Run the smoke tests and watch the error rate for ten minutes after a deploy.\n",
        "1. Run `make smoke`.\n2. Watch the dashboard.\n3. Roll back when errors double.",
    ),
    "Deploy rollback": (
        "",
        "To roll back a deploy, redeploy the previous tag with `deploy --tag`. " * 12,
    ),
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> hql.Vault:
    root = tmp_path_factory.mktemp("block") / "vault"
    shutil.copytree(FIXTURES / "obsidian", root)
    (root / "Lessons").mkdir()
    for name, (front, body) in LESSONS.items():
        text = f"---\n{front}---\n# {name}\n\n{body}\n" if front else f"# {name}\n\n{body}\n"
        (root / "Lessons" / f"{name}.md").write_text(text, encoding="utf-8")
    return hql.open_vault(root, use_cache=False)


def block(program: str, vault: hql.Vault) -> Context:
    outcome = hql.run("import bm25\n" + program, vault=vault)
    assert not outcome.failed, outcome.render_reports()
    assert str(outcome.type) == "Context"
    assert isinstance(outcome.value, Context)
    return outcome.value


DEPLOY = 'cards | bm25("deploy rollback checklist freeze") | take(3)'


def test_a_block_names_each_card_and_how_to_read_it_whole(vault: hql.Vault) -> None:
    made = block(DEPLOY + " | context", vault)
    ranked = hql.run("import bm25\n" + DEPLOY, vault=vault).value
    others = [hit.card.name for hit in ranked.hits if hit.card.name != "Deploy freeze"]
    assert [item.name for item in made.items] == [
        "Deploy freeze",
        *[name for name in others if name in made.rendered],
    ][: len(made.items)]
    text = made.rendered
    assert text.startswith("# Context: 3 cards")
    assert "## Deploy freeze\n- card: `Deploy freeze` (required)" in text
    assert "- summary: No deploys on Friday after 15:00" in text
    assert "- use if: deploying, releasing or merging to main" in text
    assert "- ignore if: deploy to github pages" in text
    assert "- matched by: words " in text
    assert '`hql card "Deploy checklist"`' in text
    # A card without a summary shows the opening of its body, cut at a word.
    assert "- excerpt: To roll back a deploy" in text and " …" in text
    assert made.tokens == estimate_tokens(text) == math.ceil(len(text) / 4)
    assert made.token_kind == "estimated" and made.abstention is None


def test_the_budget_trims_and_says_why(vault: hql.Vault) -> None:
    whole = block(DEPLOY + " | context", vault)
    sizes = {item.name: item.tokens for item in whole.items}
    budget = whole.tokens - sizes["Deploy rollback"] + 5
    made = block(DEPLOY + f" | context(budget = {budget})", vault)
    assert "Deploy rollback" not in [item.name for item in made.items]
    assert made.tokens <= budget
    (cut,) = made.trimmed
    assert cut.name == "Deploy rollback" and f"of the budget of {budget} left" in cut.reason
    made = block(DEPLOY + " | context(max_items = 2)", vault)
    assert len(made.items) == 2 and made.trimmed[0].reason == "beyond max_items = 2"


def test_a_required_card_the_budget_would_trim_is_a_failure_naming_it(vault: hql.Vault) -> None:
    outcome = hql.run("import bm25\n" + DEPLOY + " | context(budget = 60)", vault=vault)
    assert outcome.failed
    said = outcome.render_reports()
    assert "the required card `Deploy freeze` (priority: must) does not fit" in said
    assert "budget of 60" in said


def test_a_required_card_is_kept_before_better_ranked_ones(vault: hql.Vault) -> None:
    program = 'cards | bm25("rollback deploy tag checklist smoke") | take(3) | context'
    whole = block(program, vault)
    names = [item.name for item in whole.items]
    assert names.index("Deploy freeze") > 0  # ranked below another card
    freeze = next(item for item in whole.items if item.name == "Deploy freeze")
    frame = whole.tokens - sum(item.tokens for item in whole.items)
    budget = frame + freeze.tokens + 2
    made = block(program.replace("context", f"context(budget = {budget})"), vault)
    assert [item.name for item in made.items] == ["Deploy freeze"]
    assert {cut.name for cut in made.trimmed} == set(names) - {"Deploy freeze"}


def test_nothing_passing_is_an_empty_block_that_says_why(vault: hql.Vault) -> None:
    made = block('cards | bm25("quantum chromodynamics") | relevant | context', vault)
    assert made.items == () and made.rendered == "" and made.tokens == 0
    assert made.abstention == "no card passed: the ranking found no candidate"
    outcome = hql.run(
        'import bm25\ncards | bm25("deploy on a friday afternoon") | filter(h => h.score > 99.0)'
        " | context",
        vault=vault,
    )
    assert outcome.text() == "(empty context: no card passed: the ranking found no candidate)"


def test_json_format_table_and_fields(vault: hql.Vault) -> None:
    made = block(DEPLOY + ' | context(format = "json")', vault)
    tree = json.loads(made.rendered)
    assert tree["context"].startswith("Context: 3 cards")
    first = tree["cards"][0]
    assert first["card"] == "Deploy freeze" and first["ignore_if"] == ["deploy to github pages"]
    assert made.tokens == estimate_tokens(made.rendered)

    projected = hql.run("import bm25\n" + DEPLOY + " | context | json", vault=vault).text()
    value = json.loads(projected)
    assert value["tokens"] == {"count": made_tokens(vault), "kind": "estimated"}
    assert value["items"][0]["tokens"]["kind"] == "estimated"

    table = hql.run("import bm25\n" + DEPLOY + " | context | table", vault=vault).text()
    assert table.splitlines()[0].split() == [
        "rank",
        "card",
        "scope",
        "priority",
        "tokens",
        "status",
    ]
    assert table.splitlines()[2].split() == [
        "1",
        "Deploy",
        "freeze",
        "project",
        "must",
        str(made_items_tokens(vault)),
        "in",
        "the",
        "block",
    ]

    fields = hql.run(
        "import bm25\nb = " + DEPLOY + " | context(budget = 200)\n"
        "[b.tokens, size(b.items), size(b.trimmed)]",
        vault=vault,
    )
    assert not fields.failed, fields.render_reports()
    small = block(DEPLOY + " | context(budget = 200)", vault)
    assert fields.text() == f"[{small.tokens}, {len(small.items)}, {len(small.trimmed)}]"
    assert len(small.trimmed) >= 1


def made_tokens(vault: hql.Vault) -> int:
    return block(DEPLOY + " | context", vault).tokens


def test_bad_arguments_are_reported_where_written(vault: hql.Vault) -> None:
    for program, said in (
        (DEPLOY + ' | context(format = "yaml")', 'format "markdown" or "json"'),
        (DEPLOY + " | context(budget = 0)", "budget of at least 1"),
        (DEPLOY + ' | context(budget = "big")', "budget"),
        ("cards | context", "`context` reads a ranking"),
    ):
        outcome = hql.run("import bm25\n" + program, vault=vault)
        assert outcome.failed and said in outcome.render_reports(), program


def made_items_tokens(vault: hql.Vault) -> int:
    return block(DEPLOY + " | context", vault).items[0].tokens


def test_a_callers_token_count_is_measured_and_the_budget_uses_it(vault: hql.Vault) -> None:
    from hql.context.read_path import assemble

    def words(text: str) -> int:  # a caller's own count (here: fewer than the estimate)
        return len(text.split())

    prompt = "deploy rollback checklist freeze"
    whole = assemble(vault, prompt, budget=2000, count_tokens=words)
    assert len(whole.items) == 3 and whole.token_kind == "measured"
    assert whole.tokens == words(whole.rendered) < estimate_tokens(whole.rendered)
    as_json = whole.to_json()
    assert as_json["tokens"] == {"count": whole.tokens, "kind": "measured"}
    assert {item["tokens"]["kind"] for item in as_json["items"]} == {"measured"}
    # The caller's count decides what fits: its own total holds all three cards, while the
    # estimate (ceil(chars / 4)) of the same cards overflows it and trims one.
    counted = assemble(vault, prompt, budget=whole.tokens, count_tokens=words)
    assert [item.name for item in counted.items] == [item.name for item in whole.items]
    assert counted.tokens <= whole.tokens and not counted.trimmed
    estimated = assemble(vault, prompt, budget=whole.tokens)
    assert estimated.token_kind == "estimated" and estimated.trimmed
    assert estimated.tokens <= whole.tokens and len(estimated.items) < 3
