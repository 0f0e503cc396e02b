"""`--max-output`: every tool's answer fits, whatever the call quotes back (a 300k-character
line in a report, a long question, a large header), through the service layer's `fit`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from hql.mcp.service import Limits, VaultService, fit

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"
LIMIT = 2000
LONG = "x" * 300_000


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> VaultService:
    root = tmp_path_factory.mktemp("max-output") / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".hql"))
    header = "\n".join(f"key{i}: {'v' * 40}" for i in range(5000))
    (root / "big-header.md").write_text(
        f"---\ntitle: {'T' * 100_000}\nsummary: {LONG}\n{header}\n---\n# Big\n\nbody\n",
        encoding="utf-8",
    )
    return VaultService(root, Limits(output_chars=LIMIT))


def fits(service: VaultService, answer: dict[str, Any], key: str | None) -> dict[str, Any]:
    """What the server sends for `answer` (shortening `key` first) and for the worst case, no key."""
    for first in (key, None):
        short, text = service.finish(answer, first)
        assert len(text) <= LIMIT, (first, len(text), text[:300])
        assert json.loads(text) == short
    return service.finish(answer, key)[0]


def test_a_report_that_quotes_a_huge_line_fits(service: VaultService) -> None:
    program = f'cards | take("{LONG}")'
    short = fits(service, service.query(program), "value")
    assert not short["ok"] and short["reports"] and "truncated" in short
    fits(service, service.check(program), None)
    fits(service, service.explain(program), "value")
    fits(service, service.query(f"cards | nosuch{LONG}"), "value")


def test_search_with_a_long_question_fits(service: VaultService) -> None:
    short = fits(service, service.search(LONG + " token", ranker="bm25"), "hits")
    assert short["ranker"] == "bm25" and short["program"].endswith("…")


def test_a_card_with_a_large_header_fits(service: VaultService) -> None:
    short = fits(service, service.card("big-header"), "body")
    assert short["name"] == "big-header" and isinstance(short["metadata"], dict)
    assert "note" in short["truncated"]


def test_the_cards_resource_fits(service: VaultService) -> None:
    text = service.cards_text()
    assert len(text) <= LIMIT and json.loads(text)["cards"]


def test_recall_with_a_long_question_fits(service: VaultService) -> None:
    short = fits(service, service.recall(LONG + " token", k=50), "concepts")
    assert short["ok"] and short["program"].endswith("…")


def test_context_with_a_long_prompt_fits(service: VaultService) -> None:
    fits(service, service.context(LONG + " bearer token", budget=100_000, max_items=50), None)


def test_an_answer_that_fits_is_left_alone() -> None:
    answer = {"ok": True, "value": 18, "reports": []}
    assert fit(answer, "value", LIMIT)[0] == answer and fit(answer, None, LIMIT)[0] == answer
