"""`hql render`: idempotent answers, atomic writes, --all, and failures reported, not raised."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

import pytest

import hql
from hql import files
from hql.api import HostError, Session
from hql.render import render_command

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"
DOCUMENT = "# Notes\n\n```hql\ncards | count\n```\n\n```python\nprint(1)\n```\n\n```hql\n1 +\n```\n"


def _args(**values: object) -> argparse.Namespace:
    defaults = {"file": None, "write": False, "all": False, "vault": None, "report": None}
    return argparse.Namespace(**{**defaults, **values})


def _session(vault: Path) -> object:
    return lambda args: Session(hql.open_vault(vault, use_cache=False))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root)
    (root / "notes.md").write_text(DOCUMENT, encoding="utf-8")
    return root


def test_write_renders_once_and_a_second_render_changes_nothing(vault: Path, capsys) -> None:
    notes = vault / "notes.md"
    code = render_command(_args(file=str(notes), write=True), _session(vault))
    first = notes.read_text(encoding="utf-8")
    assert code == 1  # one block fails
    assert "```hql#result\n19\n```" in first and "failure: expected an expression" in first
    assert "```python\nprint(1)\n```" in first
    render_command(_args(file=str(notes), write=True), _session(vault))
    assert notes.read_text(encoding="utf-8") == first
    assert capsys.readouterr().out.endswith(f"{notes}: 2 blocks rendered\n")


def test_all_reports_each_document_and_writes_only_with_write(vault: Path, capsys) -> None:
    render_command(_args(all=True, vault=str(vault)), _session(vault))
    out = capsys.readouterr().out
    assert "notes.md: 2 blocks rendered (would change; add --write)" in out
    # notes.md is a card too, so the sample's `cards | count` block is now out of date
    assert "queries.md: 8 blocks rendered (would change; add --write)" in out
    assert (vault / "notes.md").read_text(encoding="utf-8") == DOCUMENT
    render_command(_args(all=True, write=True, vault=str(vault)), _session(vault))
    assert "```hql#result" in (vault / "notes.md").read_text(encoding="utf-8")
    capsys.readouterr()
    render_command(_args(all=True, vault=str(vault)), _session(vault))
    again = capsys.readouterr().out
    assert again.count("(up to date)") == 2 and "would change" not in again


def test_a_failed_write_is_a_host_error_and_the_document_is_intact(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(descriptor: int) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "fsync", refuse)
    notes = vault / "notes.md"
    with pytest.raises(HostError, match="cannot write .*: Permission denied"):
        render_command(_args(file=str(notes), write=True), _session(vault))
    with pytest.raises(HostError, match="cannot write"):
        render_command(_args(all=True, write=True, vault=str(vault)), _session(vault))
    assert notes.read_text(encoding="utf-8") == DOCUMENT
    assert [p.name for p in vault.iterdir() if p.name.endswith(".tmp")] == []


def test_atomic_write_keeps_the_file_mode(tmp_path: Path) -> None:
    target = tmp_path / "doc.md"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    files.write_document(tmp_path, "doc.md", b"new", base_digest=files.document_digest(b"old"))
    assert target.read_text(encoding="utf-8") == "new"
    assert target.stat().st_mode & 0o777 == 0o640


def test_a_failing_block_is_named_on_stderr_with_its_file_and_line(vault: Path, capsys) -> None:
    notes = vault / "notes.md"
    assert render_command(_args(file=str(notes)), _session(vault)) == 1
    captured = capsys.readouterr()
    assert "failure: expected an expression" in captured.out  # the answer beneath the block
    # DOCUMENT's failing block opens on line 11; its program `1 +` is line 12
    assert captured.err == f"{notes}:12: a block failed: failure: expected an expression\n"
    # under --all, beside the document's state line
    assert render_command(_args(all=True, vault=str(vault)), _session(vault)) == 1
    captured = capsys.readouterr()
    assert "notes.md: 2 blocks rendered (would change; add --write)" in captured.out
    assert captured.err == f"{notes}:12: a block failed: failure: expected an expression\n"


def test_the_line_of_a_failure_is_the_line_of_the_failing_statement(tmp_path: Path, capsys) -> None:
    document = tmp_path / "doc.md"
    document.write_text(
        "# Doc\n\n  ```hql\n  x = 1\n  y = x + true\n  ```\n\n```hql\n1\n```\n", encoding="utf-8"
    )
    assert render_command(_args(file=str(document)), lambda args: Session(None)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{document}:5: a block failed: error: ")
    assert err.count("\n") == 1  # the second block is fine


RANKING_PAGE = """# Ranked

Which cards speak of tokens?

```hql
import bm25
cards | bm25("token tokens bearer refresh") | take(4)
```

```hql
cards | lexical("token tokens bearer refresh") | take(4)
```
"""


def test_a_page_does_not_rank_its_own_answers_so_render_is_idempotent(vault: Path) -> None:
    """The page ranks first for its own query; its answers (which name the query's words)
    are not part of its text, so rendering it again gives the same answers."""
    page = vault / "ranked.md"
    page.write_text(RANKING_PAGE, encoding="utf-8")
    before = hql.open_vault(vault, use_cache=False).card("ranked")
    renders = []
    for _ in range(3):
        render_command(_args(file=str(page), write=True), _session(vault))
        renders.append(page.read_text(encoding="utf-8"))
    assert renders[0].count("```hql#result") == 2
    assert "ranked" in renders[0].split("```hql#result")[1]  # it ranks itself, in bm25
    assert "ranked" in renders[0].split("```hql#result")[2]  # and in lexical
    assert renders[1] == renders[0] and renders[2] == renders[0]
    after = hql.open_vault(vault).card("ranked")
    assert after.text == before.text and after.digest == before.digest


def test_rendered_answers_leave_the_ranking_text_as_it_was_before_the_render() -> None:
    from hql.render import render_text
    from hql.vault.model import answers_blanked, without_answers

    before = (
        "Intro\n\n```hql\n1 + 1\n```\nafter\n"
        "````markdown\n```hql#result\nan example, kept\n```\n````\n"
    )
    rendered = render_text(before, hql.run).text
    assert "```hql#result\n2\n```" in rendered
    assert without_answers(rendered) == before  # what ranking reads: the page before the render
    blanked = answers_blanked(rendered)
    assert blanked.count("\n") == rendered.count("\n")  # sections: every line keeps its number
    assert blanked.split("\n")[9] == "after" == rendered.split("\n")[9]
    assert "2" not in blanked
    assert "an example, kept" in without_answers(rendered)  # inside another fence: its text
    unclosed = "x\n```hql#result\nnever closed\n"
    assert without_answers(unclosed) == unclosed == answers_blanked(unclosed)
    assert without_answers("no answers here") == "no answers here"


class _WordEmbedder:
    """A hashed bag of words: enough to tell whether a card's text changed."""

    model_id, revision = "words", "1"
    max_tokens = 400

    def count_tokens(self, texts):
        return [len(text.split()) + 2 for text in texts]

    def embed_passages(self, texts):
        import numpy as np
        from standin_embedder import standin_vector

        return np.asarray([standin_vector(t) for t in texts], dtype=np.float32) / 3.0

    embed_queries = embed_passages


def test_a_semantic_index_stays_fresh_when_a_page_is_rendered(tmp_path: Path) -> None:
    from hql.index.commands import build_command, verify_command
    from hql.index.producer import _sections

    root = tmp_path / "notes"
    root.mkdir()
    (root / "hql.toml").write_text('[semantics]\nindex = ".hql/index.sqlite"\n')
    (root / "owl.md").write_text("---\ntitle: Owl\n---\nOwls hunt at night.\n")
    page = root / "page.md"
    page.write_text('# Page\n\n```hql\nimport semantic\ncards | semantic("owls at night")\n```\n')
    vault = hql.open_vault(root, use_cache=False)
    code, text = build_command(vault, queries=["owls at night"], embedder=_WordEmbedder())
    assert code == 0, text
    renders = []
    for _ in range(3):
        render_command(_args(file=str(page), write=True), _session(root))
        renders.append(page.read_text(encoding="utf-8"))
    assert "```hql#result" in renders[0] and "owl" in renders[0].split("```hql#result")[1]
    assert renders[1] == renders[0] and renders[2] == renders[0]
    rendered = hql.open_vault(root, use_cache=False)
    assert verify_command(rendered)[0] == 0  # the page's text (and digest) did not change
    sections = _sections(rendered, _WordEmbedder(), [rendered.card("page")])["page"]
    assert all("hql#result" not in section.text for section in sections)


SNIPPET = "# Snippet\n\nRun this:\n\n```sh\nmake\n```\n\n~~~~\ntilde\n~~~~\n\nend\n"
FENCED_PAGE = (
    "# Page\n\n"
    '```hql\ncards | filter(c => c.name == "snippet") | first | map(c => c.body)\n```\n\n'
    '~~~hql\ncards | filter(c => c.name == "snippet") | first | map(c => c.body)\n~~~\n\n'
    '```hql\n"a\\n```\\n```hql\\n1 + 1\\n```"\n```\n\n'
    "tail\n"
)


def test_an_answer_holding_fences_gets_a_longer_fence_and_renders_once(
    tmp_path: Path, capsys
) -> None:
    root = tmp_path / "fenced"
    root.mkdir()
    (root / "snippet.md").write_text(SNIPPET, encoding="utf-8")
    page = root / "page.md"
    page.write_text(FENCED_PAGE, encoding="utf-8")
    render_command(_args(file=str(page), write=True), _session(root))
    first = page.read_text(encoding="utf-8")
    assert first.count("````hql#result\n") == 2 and "~~~~~hql#result\n" in first
    # the body's own fences stay inside the result; the page's tail is there once
    assert "```sh\nmake\n```\n\n~~~~\ntilde\n~~~~\n\nend\n````\n" in first
    assert "~~~~\ntilde\n~~~~\n\nend\n~~~~~\n" in first
    assert first.count("tail") == 1 and first.endswith("\ntail\n")
    # the string's `hql` block is text of the answer, not a block the next render runs
    assert "````hql#result\na\n```\n```hql\n1 + 1\n```\n````\n" in first
    render_command(_args(file=str(page), write=True), _session(root))
    assert page.read_text(encoding="utf-8") == first
    assert capsys.readouterr().out.endswith(f"{page}: 3 blocks rendered\n")
