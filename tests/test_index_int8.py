"""`[semantics.embedder] int8 = true`: all-MiniLM-L6-v2 with its products in int8 too, made
once from the shipped model (hql.index.quantized), its copy pinned by its own digest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hql.index.config import EmbedderConfig, load_embedder_config
from hql.index.embedders import MINILM_ONNX_REVISION, MINILM_ONNX_SHA256, make_embedder
from hql.index.errors import EmbedderError, SemanticIndexError
from hql.index.quantized import int8_model

ROOT = Path(__file__).resolve().parents[1]
BIRDS = Path(__file__).parent / "fixtures" / "birds"
FP32_VECTORS = Path(__file__).parent / "fixtures" / "minilm-fp32-vectors.json"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
OWLS = {"strigiformes", "tytonidae", "strigidae", "barn-owl", "tawny-owl",
        "great-horned-owl", "little-owl", "snowy-owl"}  # fmt: skip


def test_the_int8_copy_keeps_the_fp32_models_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fixture = json.loads(FP32_VECTORS.read_text())
    expected = np.stack([np.frombuffer(bytes.fromhex(v), dtype="<f4") for v in fixture["vectors"]])
    embedder = make_embedder(EmbedderConfig(provider="local", model=MINILM, int8=True))
    got = embedder.embed_passages(fixture["texts"])
    cosines = (got * expected).sum(axis=1)
    assert cosines.min() >= 0.98, cosines
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # Its own revision: an index of the shipped model's vectors is not read with it.
    assert embedder.revision.startswith(MINILM_ONNX_REVISION.split(" ")[0] + " onnx-dynamic-int8 ")
    made = list((tmp_path / "cache" / "hql" / "models").glob("*-int8.onnx"))
    assert len(made) == 1 and made[0].with_name(made[0].name + ".sha256").exists()
    # A copy the cache holds is checked by its own digest; the shipped file is not read again.

    def unread() -> Path:
        raise AssertionError("the shipped model was read to find a copy the cache holds")

    assert int8_model(MINILM, unread, MINILM_ONNX_SHA256)[0] == made[0]


def test_int8_is_refused_for_other_models() -> None:
    for table, said in (
        ({"provider": "local", "model": "multilingual-e5-small", "int8": True}, "local"),
        (
            {
                "provider": "http",
                "model": MINILM,
                "endpoint": "http://127.0.0.1:1/v1/embeddings",
                "revision": "r",
                "int8": True,
            },
            "http",
        ),  # fmt: skip
    ):
        with pytest.raises(EmbedderError) as raised:
            load_embedder_config(table)
        assert "int8 = true" in str(raised.value) and said in str(raised.value)
    with pytest.raises(SemanticIndexError, match="true or false"):
        load_embedder_config({"provider": "local", "model": MINILM, "int8": "yes"})


def test_a_vault_built_with_int8_answers_and_a_changed_copy_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "birds"
    shutil.copytree(BIRDS, root, ignore=shutil.ignore_patterns(".hql"))
    (root / "hql.toml").write_text(
        '[semantics]\nindex = ".hql/index.sqlite"\n'
        f'[semantics.embedder]\nprovider = "local"\nmodel = "{MINILM}"\nint8 = true\n'
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def hql(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "hql", "--vault", str(root), *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)

    built = hql("index", "build")
    assert built.returncode == 0, built.stderr
    assert "WARNING" not in built.stderr  # the quantiser's own advice is not shown
    program = 'import semantic\ncards | semantic("birds that hunt at night") | take(3) | map(h => h.card.name)'
    asked = hql("eval", program, "--format", "json")
    assert asked.returncode == 0, asked.stderr
    assert set(json.loads(asked.stdout)["value"]) <= OWLS, asked.stdout
    (made,) = (tmp_path / "cache" / "hql" / "models").glob("*-int8.onnx")
    data = bytearray(made.read_bytes())
    data[len(data) // 2] ^= 0xFF
    made.write_bytes(bytes(data))
    # A question the index has not kept needs the model: its copy is checked first.
    refused = hql("eval", program.replace("hunt at night", "swim under water"))
    assert refused.returncode != 0
    assert "is not the one HQL made there" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    # A damaged digest file (bytes that are not ASCII) is refused the same way.
    data[len(data) // 2] ^= 0xFF
    made.write_bytes(bytes(data))
    made.with_name(made.name + ".sha256").write_bytes(b"\xff\xfe not a digest")
    damaged = hql("eval", program.replace("hunt at night", "sing at dawn"))
    assert damaged.returncode != 0
    assert "is not the one HQL made there" in damaged.stderr, damaged.stderr
    assert "Traceback" not in damaged.stderr
