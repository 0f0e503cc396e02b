"""The docs run: every `hql` block in docs/ is executed against the vault its page names,
and the answers written under the blocks must be what HQL answers now."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import hql
from hql.docs import step_reference
from hql.render import render_text

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
VAULT_MARK = re.compile(r"<!-- vault: (\S+) -->")


def pages_with_blocks() -> list[Path]:
    return [page for page in DOCS if "```hql" in page.read_text(encoding="utf-8")]


def test_every_page_with_blocks_names_its_vault() -> None:
    for page in pages_with_blocks():
        assert VAULT_MARK.search(page.read_text(encoding="utf-8")), f"{page.name} names no vault"


@pytest.mark.parametrize("page", pages_with_blocks(), ids=lambda page: page.name)
def test_page_answers_are_current(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # pages name their vault, and show paths, relative to the repository
    text = page.read_text(encoding="utf-8")
    match = VAULT_MARK.search(text)
    assert match is not None
    vault = hql.open_vault(match.group(1))
    columns = vault.dialect == "obsidian"  # as `hql render` prints that vault's tables
    rendered = render_text(
        text, lambda program: hql.Session(vault).run(program, str(page)), columns
    )
    assert rendered.blocks > 0
    assert rendered.text == text, f"{page.name} is out of date: run hql render {page} --write"


# The only refusals the pages show on purpose: everything else in a page must answer.
DELIBERATE_FAILURES = {("tutorial.md", "error: String and Int are never equal")}


def test_the_only_failures_in_docs_are_the_deliberate_ones() -> None:
    shown = set()
    for page in pages_with_blocks():
        for block in re.findall(r"```hql#result\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            for line in block.splitlines():
                if line.startswith(("error: ", "failure: ")):
                    shown.add((page.name, line))
    assert shown == DELIBERATE_FAILURES


def test_step_reference_is_generated_from_the_registry() -> None:
    written = (ROOT / "docs" / "steps.md").read_text(encoding="utf-8")
    assert written == step_reference(), (
        "docs/steps.md is out of date: python -m hql.docs > docs/steps.md"
    )


def test_no_page_says_minilm_needs_torch() -> None:
    """MiniLM runs as int8 ONNX on onnxruntime (hql/index/embedders.py): a sentence that
    names both MiniLM and torch must say it goes without torch."""
    negated = re.compile(r"\b(no|not|without|never)\b[^.]*\btorch|torch[^.]*\bonly\b", re.I)
    wrong = []
    for page in [*DOCS, ROOT / "README.md"]:
        text = re.sub(r"\s+", " ", page.read_text(encoding="utf-8"))
        for sentence in re.split(r"(?<=[.!?]) |\|", text):
            if "minilm" in sentence.lower() and "torch" in sentence and not negated.search(sentence):
                wrong.append(f"{page.name}: {sentence.strip()}")
    assert wrong == []
