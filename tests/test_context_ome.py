"""The OME cases (../shared/eval/ome-cases.json) through the prompt ranker.

Every case that holds in OME without its hand-written signal rules is run as OME runs it:
its corpus becomes a vault of cards carrying their recall fields (tests/ome_cases.py), the
question goes through `prompt`, the case's evidence threshold (OME's, default 40) keeps
hits and its limit cuts them, and the case's own expectation judges the answer.
"""

from __future__ import annotations

from pathlib import Path

import ome_cases
import pytest

import hql
from hql.context.block import ContextError
from hql.context.prompt import rank_prompt
from hql.context.read_path import assemble

pytestmark = pytest.mark.skipif(not ome_cases.EVAL.exists(), reason="needs ../shared/eval")

# Measured on this ranker (the target is 96). The ten it gets wrong need what a lexical
# ranker over one library does not have: project scope and near-duplicate collapse (4),
# OME's intent modes (2), a Chinese prompt for an English card (2), or more than the
# words a short prompt shares (2: "commit my staged changes" for trigger `git commit`,
# the four characters 链路干净).
RIGHT_AT_LEAST = 96


def test_ome_cases(tmp_path: Path) -> None:
    data = ome_cases.load()
    cases = ome_cases.fair_cases(data)
    assert len(cases) == 106
    vaults: dict[str, hql.Vault] = {}
    wrong = []
    for case in cases:
        corpus = case["corpus"]
        if corpus not in vaults:
            root = ome_cases.write_corpus(tmp_path / corpus, data["corpora"][corpus])
            vaults[corpus] = hql.Vault.open(str(root))
        vault = vaults[corpus]
        threshold = case["params"].get("threshold", 40)
        ranking = rank_prompt(vault.cards, case["question"], vault=vault, limit=None)
        names = [hit.card.name for hit in ranking.hits if hit.score >= threshold]
        names = names[: case["params"].get("limit", 4)]
        if not ome_cases.holds(case["expect"], names):
            wrong.append(f"{case['case_id']}: expected {case['expect']}, kept {names}")
    right = len(cases) - len(wrong)
    assert right >= RIGHT_AT_LEAST, "\n".join([f"{right} of {len(cases)} right", *wrong])


# The whole read path (`hql context`) with OME's library scopes as HQL's libraries: the
# project's copy now stands for the global one (required-all-project-preferred); the nine
# it gets wrong are those above but that one.
READ_PATH_RIGHT_AT_LEAST = 97


def test_ome_cases_through_the_read_path(tmp_path: Path) -> None:
    data = ome_cases.load()
    cases = ome_cases.fair_cases(data)
    vaults: dict[str, hql.Vault] = {}
    wrong = []
    for case in cases:
        corpus = case["corpus"]
        if corpus not in vaults:
            root = ome_cases.write_scoped(tmp_path / corpus, data["corpora"][corpus])
            vaults[corpus] = hql.open_vault(root, use_cache=False)
        params = case["params"]
        try:
            block = assemble(
                vaults[corpus],
                case["question"],
                threshold=params.get("threshold", 40),
                max_items=params.get("limit", 4),
                budget=100_000,
            )
            names = [item.name.split(":")[-1] for item in block.items]
        except ContextError as error:
            names = [f"<{error}>"]
        if not ome_cases.holds(case["expect"], names):
            wrong.append(f"{case['case_id']}: expected {case['expect']}, kept {names}")
    right = len(cases) - len(wrong)
    assert right >= READ_PATH_RIGHT_AT_LEAST, "\n".join([f"{right} of {len(cases)} right", *wrong])


def test_the_step_answers_as_the_ranker(tmp_path: Path) -> None:
    data = ome_cases.load()
    case = next(c for c in data["cases"] if c["case_id"] == "ome/fixture-core/browser-validation")
    root = ome_cases.write_corpus(tmp_path / "core", data["corpora"][case["corpus"]])
    outcome = hql.run(
        "import bm25\ncards | prompt($q) | relevant | take(3)",
        vault=hql.Vault.open(str(root)),
        params={"q": case["question"]},
    )
    assert [hit.card.name for hit in outcome.value] == case["expect"]["exact"]
