"""Prompts read as tasks, recall fields, evidence and the prompt ranker (memory.md §1-2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import hql
from hql.context.envelope import read_envelope, symbol_parts
from hql.context.evidence import Evidence, PromptView, affirmed_part, evidence, evidence_of
from hql.context.fields import RecallFields, field_mapping, recall_fields
from hql.context.prompt import rank_prompt
from hql.text.analyzer import Analyzer


def test_envelope_takes_a_prompt_apart() -> None:
    envelope = read_envelope(
        "Fix the bug in src/hql/cli.py, then run `git status` and npm test.\n"
        "- Rename readEnvelope to read_envelope in hql.context.envelope\n"
        "- Don't touch hql.toml or *.md files; the word test alone is no command"
    )
    assert envelope.language == "en"
    assert envelope.commands == ("git status", "npm test")
    assert envelope.paths == ("src/hql/cli.py", "hql.toml", "*.md")
    assert "readEnvelope" in envelope.symbols and "envelope" in envelope.symbols
    assert "read_envelope" in envelope.symbols and "hql.context.envelope" in envelope.symbols
    assert len(envelope.segments) == 4  # lines, list items, sentences (a semicolon ends one)
    assert "Don't touch hql.toml or *.md files" in envelope.constraints


@pytest.mark.parametrize(
    ("prompt", "constraint"),
    [
        ("Ship it. You MUST NOT touch prod, ever.", "MUST NOT touch prod"),
        ("Ship the Ölmodul. Sie MÜSSEN die Tests laufen lassen.", "MÜSSEN die Tests laufen lassen"),
        ("Ship İzmir's build. NEVER skip the review.", "NEVER skip the review"),
        ("Fix the ſtore. Do ſolo the tests; ıt must pass.", "must pass"),
    ],
)
def test_constraints_are_found_whatever_their_case(prompt: str, constraint: str) -> None:
    assert constraint in read_envelope(prompt).constraints


def test_envelope_language_from_scripts() -> None:
    assert read_envelope("帮我提交代码前检查一下，不要推送到远程。").language == "zh"
    assert read_envelope("コミットする前にテストを実行してください").language == "ja"
    assert read_envelope("커밋하기 전에 테스트를 실행하세요").language == "ko"
    assert (
        read_envelope("修复前端页面的 bug，然后在真实浏览器里 validate the result").language
        == "mixed"
    )
    # technical tokens do not make a Chinese prompt mixed
    assert read_envelope("请修复 src/hql/cli.py 里的问题").language == "zh"
    assert read_envelope("Como faço para renovar o token de acesso?").language == "pt"


def test_command_shaped_text_only() -> None:
    assert read_envelope("make sure the github tests pass").commands == ()
    assert read_envelope("run `make test` then hql index build").commands == (
        "make test",
        "hql index build",
    )
    assert read_envelope("git").commands == ()


def test_symbol_parts() -> None:
    assert symbol_parts("readEnvelope") == ["read", "envelope"]
    assert symbol_parts("BM25Index") == ["bm", "25", "index"]
    assert symbol_parts("std::vec::Vec") == ["std", "vec"]
    assert symbol_parts("HTTPServer_config") == ["http", "server", "config"]


def _card(front: str, body: str = "", name: str = "card") -> str:
    return f"---\n{front}---\n{body}\n"


def _vault(tmp_path: Path, cards: dict[str, str], toml: str = "") -> hql.Vault:
    for name, text in cards.items():
        (tmp_path / f"{name}.md").write_text(text, encoding="utf-8")
    if toml:
        (tmp_path / "hql.toml").write_text(toml, encoding="utf-8")
    return hql.Vault.open(str(tmp_path))


def test_recall_fields_and_mapping(tmp_path: Path) -> None:
    vault = _vault(
        tmp_path,
        {
            "ome": _card(
                "title: Deploy safely\ncriteria:\n  use_when: deploying to production\n"
                "recall:\n  triggers: [deploy, ship it]\nrecallPolicy: must\n"
                "aliases:\n  en: [release]\n  zh: [发布]\nstatus: Archived\n"
            )
        },
        '[context.fields]\nuse_when = "criteria.use_when"\ntriggers = "recall.triggers"\n'
        'priority = ["priority", "recallPolicy"]\n',
    )
    mapping, problems = field_mapping(vault.config.section("context")["fields"])
    assert problems == []
    fields = recall_fields(vault.card("ome"), mapping)
    assert fields.use_when == ("deploying to production",)
    assert fields.triggers == ("deploy", "ship it")
    assert fields.priority == "must"
    assert fields.status == "archived"
    assert fields.aliases == ("release", "发布")
    assert dict(fields.aliases_by_language) == {"en": ("release",), "zh": ("发布",)}
    _, problems = field_mapping({"trigger": "x", "topics": 3})
    assert len(problems) == 2 and "`trigger`" in problems[0]


def test_workflow_status_reads_as_active(tmp_path: Path) -> None:
    vault = _vault(tmp_path, {"todo": _card("status: todo\n")})
    assert recall_fields(vault.card("todo")).status == "active"


@pytest.fixture
def deploy_vault(tmp_path: Path) -> hql.Vault:
    return _vault(
        tmp_path,
        {
            "github-pages": _card(
                "title: Publishing the docs site\ntriggers: [publish the docs]\n"
                "ignore_when: [deploy to github]\n",
                "The docs site is built by mkdocs and published on GitHub pages.",
            ),
            "release-checklist": _card(
                "title: Release checklist\ntriggers: [deploy to github, cut a release]\n"
                "priority: must\n",
                "Tag, build, deploy.",
            ),
            "old-release": _card(
                "title: Release checklist (2019)\ntriggers: [deploy to github]\nstatus: archived\n"
            ),
            "github-notes": _card(
                "title: Notes about github\n", "Broad words: deploy, github, docs, release."
            ),
        },
    )


def test_gates_and_must(deploy_vault: hql.Vault) -> None:
    ranking = rank_prompt(deploy_vault.cards, "Please deploy to GitHub today", vault=deploy_vault)
    names = [hit.card.name for hit in ranking.hits]
    assert names[0] == "release-checklist"
    assert "github-pages" not in names and "old-release" not in names
    rejected = {item["card"]: item["gate"] for item in ranking.retrieval.extra["rejected"]}
    assert rejected == {
        "github-pages": 'ignore_when: "deploy to github"',
        "old-release": "status: archived",
    }
    first = evidence_of(ranking.hits[0])
    assert first is not None and first.channels["trigger"] > 0 and first.channels["priority"] > 0
    assert 0 <= first.score <= 100
    asked = rank_prompt(
        deploy_vault.cards,
        "Please deploy to GitHub today",
        vault=deploy_vault,
        statuses=("active", "archived"),
    )
    assert "old-release" in [hit.card.name for hit in asked.hits]


def test_the_step_looks_back_only_when_asked(deploy_vault: hql.Vault) -> None:
    def names(program: str) -> list[str]:
        outcome = hql.run("import bm25\n" + program, vault=deploy_vault)
        assert not outcome.failed, outcome.render_reports()
        return [hit.card.name for hit in outcome.value]

    asked = '"Please deploy to GitHub today"'
    assert "old-release" not in names(f"cards | prompt({asked})")
    assert "old-release" in names(f'cards | prompt({asked}, statuses = ["active", "Archived"])')
    assert names(f'cards | prompt({asked}, statuses = ["archived"])') == ["old-release"]
    for wrong, said in (('["old"]', "unknown status `old`"), ("[]", "at least one status")):
        outcome = hql.run(
            f"import bm25\ncards | prompt({asked}, statuses = {wrong})", vault=deploy_vault
        )
        assert outcome.failed and said in outcome.render_reports()
        assert "Traceback" not in outcome.render_reports()


def test_prompt_step_and_relevant(deploy_vault: hql.Vault) -> None:
    outcome = hql.run(
        'import bm25\ncards | prompt("cut a release and deploy to github") | relevant',
        vault=deploy_vault,
    )
    assert not outcome.failed, outcome.render_reports()
    assert [hit.card.name for hit in outcome.value] == ["release-checklist"]
    cutoff = outcome.value.retrieval.extra["cutoff"]
    assert cutoff["rule"] == "evidence" and cutoff["evidence"] == 40
    tree = json.loads(outcome.json_text())
    assert tree is not None
    explained = hql.run(
        'import bm25\ncards | prompt("cut a release and deploy to github") | explain',
        vault=deploy_vault,
    ).text()
    assert "variants fused by rrf" in explained and "trigger 70" in explained
    assert 'rejected github-pages: ignore_when: "deploy to github"' in explained


def test_relevant_evidence_on_bm25(deploy_vault: hql.Vault) -> None:
    outcome = hql.run(
        'import bm25\ncards | bm25("cut a release") | relevant(evidence = 40)', vault=deploy_vault
    )
    assert [hit.card.name for hit in outcome.value] == ["release-checklist"]
    both = hql.check(
        'import bm25\ncards | bm25("x") | relevant(min = 1, evidence = 40)', vault=deploy_vault
    )
    assert both.reports and "not both" in both.reports[0].message


def test_envelope_function_and_command(tmp_path: Path) -> None:
    outcome = hql.run('envelope("run `npm test` in web/app.ts")')
    assert outcome.value.tree["commands"] == ["npm test"]
    assert outcome.value.tree["paths"] == ["web/app.ts"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hql",
            "--format",
            "json",
            "analyze",
            "--envelope",
            "git push 到远程仓库",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    tree = json.loads(done.stdout)
    assert tree["commands"] == ["git push"] and tree["language"] in ("zh", "mixed")


def test_relevant_evidence_judges_every_bm25_hit() -> None:
    """bm25's relevant-cut must not pre-cut for an evidence threshold (it is not its rule)."""
    vault = hql.Vault.open("vaults/web-auth")
    every = hql.run(
        'import bm25\ncards | bm25("refresh an expired access token") | count', vault=vault
    )
    judged = hql.run(
        'import bm25\ncards | bm25("refresh an expired access token") | relevant(evidence = 30)',
        vault=vault,
    )
    assert judged.value.retrieval.extra["cutoff"]["candidates"] == every.value
    assert [hit.card.name for hit in judged.value] == ["refresh-tokens"]


def test_recall_fields_on_c() -> None:
    vault = hql.Vault.open("vaults/agent-memory")
    outcome = hql.run(
        'cards | filter(c => c.priority == "must") | map(c => [c.name, c.use_when])', vault=vault
    )
    assert outcome.value.items == (
        hql.run('["git-commit-safety", []]').value,
        hql.run('["secret-handling", ["handling credentials for PyPI, npm or GitHub"]]').value,
    )
    archived = hql.run(
        'cards | filter(c => c.status == "archived") | map(c => c.name)', vault=vault
    )
    assert list(archived.value.items) == ["old-release-process"]
    assert str(hql.check("cards | map(c => c.summary)", vault=vault).type) == "List<Option<String>>"


def _evidence_for(prompt: str, fields: RecallFields, title: str = "A card") -> Evidence:
    card = SimpleNamespace(title=title, body="")
    return evidence(PromptView(prompt, Analyzer()), card, fields)


def test_a_standalone_bu_refuses_what_follows() -> None:
    assert "修改" not in affirmed_part("只读查看 git diff，不修改、暂存或提交。")
    assert "git diff" in affirmed_part("只读查看 git diff，不修改、暂存或提交。")
    # Inside a word (不同: different, 不过: but) 不 negates nothing.
    assert "方法" in affirmed_part("用不同的方法修改")
    assert "修改" in affirmed_part("不过这里要修改配置")


def test_an_ignore_phrase_mostly_present_takes_points() -> None:
    fields = RecallFields(
        triggers=("continue modifying the current git diff",),
        ignore_when=("只读 review 当前 git diff",),
    )
    near = _evidence_for("只读查看 git diff 并给 findings", fields)
    assert near.channels["near_ignore"] < 0 and near.gate is None
    far = _evidence_for("继续修改 git diff", fields)
    assert "near_ignore" not in far.channels
    # What the prompt holds of the phrase must be more than the card's own words:
    # `git log` is not near `git commit` for a card about git.
    git = RecallFields(triggers=("git commit",), ignore_when=("git log",), topics=("git",))
    assert "near_ignore" not in _evidence_for("git commit my changes", git).channels


def test_a_pasted_uuid_holds_the_word_uuid() -> None:
    fields = RecallFields(triggers=("session uuid",))
    pasted = _evidence_for(
        "look up 123e4567-e89b-12d3-a456-426614174000 in the session log", fields
    )
    plain = _evidence_for("look up the session log", fields)
    assert pasted.channels["trigger"] > plain.channels.get("trigger", 0)


def test_identifier_kinds_of_pasted_text() -> None:
    from hql.context.evidence import identifier_kinds

    assert identifier_kinds(
        "see HTTPS://example.org/a and 123E4567-E89B-12D3-A456-426614174000"
    ) == {
        "url",
        "uuid",
    }
    assert identifier_kinds("a well-known https site, 123e4567-e89b") == frozenset()


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("Run `hql.toml`, then: STOP. Next!", "run hql.toml then stop next"),
        ("see /goal (e.g. src/a_b.py) #ops @me!", "see /goal e.g src/a_b.py #ops @me"),
        ("读取「配置」，然后提交。", "读取 配置 然后提交"),
        ("end.\n..and. ", "end ..and"),
    ],
)
def test_phrase_form_splits_at_punctuation_between_words(text: str, form: str) -> None:
    from hql.context.evidence import phrase_form

    assert phrase_form(text) == form
