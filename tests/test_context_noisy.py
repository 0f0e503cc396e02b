"""A noisy library: each prompt's one real card among 500 decoys written to share its words.

Twenty prompts in English, Chinese and both; each has one card that says when it applies
(a trigger the prompt holds), and the decoys are built from the same words (titles and
bodies drawn from every prompt's vocabulary, Obsidian-style folders). `prompt | relevant`
must put the real card first and keep nothing else; adding 1,000 more decoys must not
move any card's evidence.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

import hql
from hql.context.evidence import evidence_of
from hql.context.prompt import rank_prompt

# (card name, title, triggers, prompt)
REAL = [
    (
        "rotate-leaked-keys",
        "Rotating a leaked access key",
        ["leaked access key"],
        "Someone pasted a leaked access key in the team chat; please rotate it and check the "
        "logs for misuse before lunch.",
    ),
    (
        "flaky-e2e-retries",
        "Flaky end-to-end tests",
        ["flaky e2e test"],
        "The nightly build is red again because of a flaky e2e test in the checkout flow. "
        "Find out why and fix the test.",
    ),
    (
        "migration-dry-run",
        "Database migrations need a dry run",
        ["database migration", "dry run"],
        "We have to ship the database migration for the orders table today. What should I "
        "check first?",
    ),
    (
        "release-notes-style",
        "How release notes are written",
        ["write the release notes"],
        "Write the release notes for version 2.4, keep them short and mention the new export "
        "button.",
    ),
    (
        "docker-cache",
        "Docker layer cache in CI",
        ["docker layer cache"],
        "CI takes twenty minutes; I think the docker layer cache is not reused between jobs. "
        "Can you look at the pipeline?",
    ),
    (
        "timezone-bugs",
        "Dates and time zones",
        ["time zone bug"],
        "Users in Tokyo see yesterday's date on the dashboard, looks like a time zone bug in "
        "the report page.",
    ),
    (
        "api-pagination",
        "Paginating list endpoints",
        ["cursor pagination"],
        "Add cursor pagination to the list endpoint of the orders API and update the client.",
    ),
    (
        "accessibility-review",
        "Accessibility review of a form",
        ["screen reader"],
        "Please review the signup form so that it works with a screen reader and only the "
        "keyboard.",
    ),
    (
        "memory-leak",
        "Hunting a memory leak in the worker",
        ["memory leak"],
        "The worker process grows to 4 GB after a day; I suspect a memory leak in the image "
        "resizing queue.",
    ),
    (
        "feature-flags",
        "Feature flags and their clean-up",
        ["remove the feature flag"],
        "The new search is live for everyone, so remove the feature flag and the old code path.",
    ),
    (
        "zh-deploy-rollback",
        "线上发布回滚流程",
        ["发布回滚"],
        "刚才的版本在线上报错了，需要马上发布回滚，然后通知相关同事。",
    ),
    (
        "zh-code-review",
        "代码评审的要求",
        ["代码评审"],
        "帮我做一次代码评审，重点看错误处理和日志，不用管格式问题。",
    ),
    (
        "zh-invoice",
        "发票抬头和税号",
        ["发票抬头"],
        "客户说发票抬头写错了，要重新开票，税号也需要核对一下。",
    ),
    (
        "zh-oncall",
        "值班交接",
        ["值班交接"],
        "今晚轮到我值班，请整理一份值班交接清单，包括未关闭的告警。",
    ),
    (
        "zh-translation",
        "界面文案翻译",
        ["文案翻译"],
        "设置页面的文案翻译还缺日文和韩文，请补齐并检查长度。",
    ),
    (
        "mixed-redis",
        "Redis 连接池配置",
        ["redis 连接池"],
        "生产环境的 redis 连接池经常耗尽，帮我看看 timeout 和 max connections 怎么配置。",
    ),
    (
        "mixed-git-bisect",
        "用 git bisect 找回归",
        ["git bisect"],
        "这个 regression 不知道是哪个 commit 引入的，用 git bisect 帮我定位一下。",
    ),
    (
        "mixed-k8s-probe",
        "Kubernetes 健康检查探针",
        ["readiness probe"],
        "服务重启后一直不接流量，可能是 readiness probe 配置有问题，请检查 deployment。",
    ),
    (
        "mixed-sql-index",
        "慢查询和 SQL 索引",
        ["慢查询"],
        "orders 表的慢查询越来越多，帮我分析一下需要加哪些 SQL index。",
    ),
    (
        "mixed-webhook",
        "Webhook 签名校验",
        ["webhook 签名"],
        "第三方回调没有做 webhook 签名 校验，请在 handler 里补上并写测试。",
    ),
]

_FILLER = [
    "weekly planning notes",
    "reading list",
    "meeting minutes",
    "project ideas",
    "travel checklist",
    "budget review",
    "onboarding guide",
    "team retrospective",
    "quarterly goals",
    "office hours",
    "周会纪要",
    "读书笔记",
    "项目想法",
    "出差清单",
    "预算回顾",
    "入职指南",
]


def _vocabulary() -> tuple[list[str], list[str]]:
    """The prompts' words, Latin and Chinese, for decoys to share."""
    latin, chinese = set(), set()
    for _, title, triggers, prompt in REAL:
        text = " ".join([title, *triggers, prompt])
        latin.update(w.casefold() for w in re.findall(r"[A-Za-z]{3,}", text))
        chinese.update(re.findall(r"[\u4e00-\u9fff]{2}", text))
    return sorted(latin), sorted(chinese)


def _decoy(rng: random.Random, number: int, latin: list[str], chinese: list[str]) -> str:
    # A broad decoy: a generic title holding one of the prompts' words, a body and topics
    # made of them.
    word = rng.choice(latin) if number % 3 else rng.choice(chinese)
    title = f"{rng.choice(_FILLER)}: {word}"
    body = " ".join(rng.sample(latin, 10) + rng.sample(chinese, 4))
    topics = rng.sample(latin, 2)
    return f"---\ntitle: {json.dumps(title)}\ntopics: {json.dumps(topics)}\n---\n{body}\n"


def _write(root: Path, decoys: int, seed: int = 7, start: int = 0) -> None:
    rng = random.Random(seed)
    latin, chinese = _vocabulary()
    for number in range(start, start + decoys):
        folder = root / f"area-{number % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"decoy-{number:04d}.md").write_text(
            _decoy(rng, number, latin, chinese), encoding="utf-8"
        )


def _library(root: Path, decoys: int) -> None:
    (root / "cards").mkdir(parents=True, exist_ok=True)
    for name, title, triggers, _ in REAL:
        listed = ", ".join(f'"{t}"' for t in triggers)
        (root / "cards" / f"{name}.md").write_text(
            f"---\ntitle: {title}\ntriggers: [{listed}]\n---\nWhat we learned about {title}.\n",
            encoding="utf-8",
        )
    _write(root, decoys)


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("noisy")
    _library(root, 500)
    return root


def test_right_card_first_and_nothing_else(noisy: Path) -> None:
    vault = hql.Vault.open(str(noisy))
    assert len(vault.cards) == 520
    wrong = []
    for name, _, _, prompt in REAL:
        ranking = rank_prompt(vault.cards, prompt, vault=vault)
        kept = [hit for hit in ranking.hits if hit.score >= 40]
        if [hit.card.name for hit in kept] != [name]:
            wrong.append((prompt, [(hit.card.name, hit.score) for hit in ranking.hits[:3]]))
    assert wrong == []


def test_prompt_step_keeps_only_the_real_card(noisy: Path) -> None:
    vault = hql.Vault.open(str(noisy))
    for name, _, _, prompt in REAL[::5]:
        outcome = hql.run(
            "import bm25\ncards | prompt($p) | relevant", vault=vault, params={"p": prompt}
        )
        assert not outcome.failed, outcome.render_reports()
        assert [hit.card.name for hit in outcome.value] == [name]


def test_decoys_do_not_move_evidence(noisy: Path, tmp_path: Path) -> None:
    """Evidence is the prompt's and the card's alone: 1,000 more decoys leave it as it was."""
    import shutil

    before_vault = hql.Vault.open(str(noisy))
    larger = tmp_path / "larger"
    shutil.copytree(noisy, larger, ignore=shutil.ignore_patterns(".hql"))
    _write(larger, 1000, seed=11, start=500)
    after_vault = hql.Vault.open(str(larger))
    assert len(after_vault.cards) == 1520
    for _, _, _, prompt in REAL:
        before = {
            hit.card.name: evidence_of(hit)
            for hit in rank_prompt(before_vault.cards, prompt, vault=before_vault, limit=None).hits
        }
        after = {
            hit.card.name: evidence_of(hit)
            for hit in rank_prompt(after_vault.cards, prompt, vault=after_vault, limit=None).hits
        }
        shared = set(before) & set(after)
        assert shared
        assert all(before[name] == after[name] for name in shared)
