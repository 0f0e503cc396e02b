"""Golden tests: each sample vault's documents carry `hql` blocks with their answers
beneath them (query and expected output side by side); the answers must be current."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted(
    path
    for path in (ROOT / "vaults").glob("*/**/*.md")
    if "```hql" in path.read_text(encoding="utf-8")
)


def vault_of(document: Path) -> Path:
    return ROOT / "vaults" / document.relative_to(ROOT / "vaults").parts[0]


def test_there_are_golden_documents() -> None:
    assert DOCUMENTS, "a sample vault should carry a document with hql blocks"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_answers_are_current(document: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hql
    from hql.render import render_text

    monkeypatch.chdir(ROOT)  # answers show paths relative to the repository
    vault = hql.open_vault(str(vault_of(document).relative_to(ROOT)), use_cache=False)
    text = document.read_text(encoding="utf-8")
    rendered = render_text(text, lambda program: hql.Session(vault).run(program, str(document)))
    assert rendered.blocks > 0
    assert "```hql#result\nerror" not in rendered.text
    assert rendered.text == text, (
        f"{document.name} is out of date: "
        f"hql --vault {vault_of(document).relative_to(ROOT)} render {document.relative_to(ROOT)} --write"
    )
