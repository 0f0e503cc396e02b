"""Loading a local model: Ctrl-C halfway must leave the process able to load it again.

No real model is needed: small stand-in packages are imported the way torch and
sentence-transformers are, and interrupted the same way.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from hql.index import embedders
from hql.index.loading import forgetting_imports_if_interrupted, load_model
from hql.progress import Status

ROOT = Path(__file__).resolve().parent.parent


def _package(root: Path, name: str) -> None:
    """A package whose import finishes one submodule, then is interrupted once (a flag file)."""
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        f"import {name}.models\nimport {name}.slow\nSentenceTransformer = {name}.models.Model\n",
        encoding="utf-8",
    )
    (package / "models.py").write_text(
        textwrap.dedent(
            """
            import numpy as np

            class Model:
                max_seq_length = 512

                def __init__(self, *args, **kwargs):
                    pass

                def encode(self, texts, **kwargs):
                    return np.ones((len(texts), 384), dtype=np.float32)
            """
        ),
        encoding="utf-8",
    )
    (package / "slow.py").write_text(
        textwrap.dedent(
            f"""
            import os
            FLAG = os.path.join({str(root)!r}, "{name}.interrupted")
            if not os.path.exists(FLAG):
                open(FLAG, "w").close()
                raise KeyboardInterrupt  # as if Ctrl-C landed in the middle of the import
            """
        ),
        encoding="utf-8",
    )


@pytest.fixture
def packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in list(sys.modules):
        if name.startswith("hqlfake_"):
            del sys.modules[name]


def test_an_interrupted_import_cannot_be_retried_as_it_is(packages: Path) -> None:
    """The failure itself, reproduced: this is what a second query used to meet."""
    import importlib

    _package(packages, "hqlfake_plain")
    with pytest.raises(KeyboardInterrupt):
        importlib.import_module("hqlfake_plain")
    with pytest.raises(AttributeError, match="partially initialized module"):
        importlib.import_module("hqlfake_plain")


def test_after_an_interrupted_load_the_second_attempt_works(packages: Path) -> None:
    import importlib

    _package(packages, "hqlfake_guarded")
    (packages / "hqlfake_finished.py").write_text("VALUE = 1\n", encoding="utf-8")

    def load() -> object:
        importlib.import_module("hqlfake_finished")  # finishes before the interrupt
        return importlib.import_module("hqlfake_guarded").SentenceTransformer()

    with pytest.raises(KeyboardInterrupt):
        forgetting_imports_if_interrupted(load)
    assert not any(name.startswith("hqlfake_guarded") for name in sys.modules)
    assert "hqlfake_finished" in sys.modules  # a finished import is kept (numpy cannot load twice)
    model = forgetting_imports_if_interrupted(load)
    assert model.encode(["owls"]).shape == (1, 384)


def test_the_sentence_transformers_embedder_recovers_from_an_interrupted_import(
    tmp_path: Path,
) -> None:
    """The local sentence-transformers path of the embedder, with stand-ins for its packages."""
    _package(tmp_path, "sentence_transformers")
    (tmp_path / "huggingface_hub.py").write_text(
        "def snapshot_download(name, local_files_only=True):\n    return '/cache/snapshots/abc123'\n",
        encoding="utf-8",
    )
    script = textwrap.dedent(
        """
        from hql.index.config import EmbedderConfig
        from hql.index.embedders import make_embedder

        embedder = make_embedder(EmbedderConfig(provider="local", model="local/stand-in"))
        try:
            embedder.embed_queries(["owls"])
        except KeyboardInterrupt:
            print("interrupted")
        print(embedder.embed_queries(["owls"]).shape)
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["interrupted", "(1, 384)"]


@pytest.fixture
def default_ctrl_c() -> Iterator[None]:
    """Python's own Ctrl-C handler, as in a command run from a terminal (a suite started in
    the background by a shell without job control inherits Ctrl-C ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("default_ctrl_c")
def test_a_first_ctrl_c_is_held_until_the_model_is_loaded_and_kept(capsys) -> None:
    calls: list[int] = []

    def load() -> str:
        calls.append(1)
        signal.raise_signal(signal.SIGINT)  # Ctrl-C while the model loads
        return "model"

    key = ("test", "held-interrupt")
    embedders._LOCAL_MODELS.pop(key, None)
    with pytest.raises(KeyboardInterrupt):  # the query is stopped, once the load is done
        embedders._shared_model(key, load)
    assert "stopping once the model has loaded" in capsys.readouterr().err
    assert embedders._shared_model(key, load) == "model"  # kept: the next query finds it
    assert calls == [1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    embedders._LOCAL_MODELS.pop(key, None)


@pytest.mark.usefixtures("default_ctrl_c")
def test_a_second_ctrl_c_stops_the_load_at_once(capsys) -> None:
    def load() -> str:
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)
        raise AssertionError("the second Ctrl-C must stop the load")

    store: dict[str, str] = {}
    with pytest.raises(KeyboardInterrupt):
        load_model(load, "m", store, "m")
    assert store == {}
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_loading_line_is_shown_on_a_terminal_and_erased() -> None:
    screen = FakeTerminal()
    with Status("loading model all-MiniLM-L6-v2…", screen):
        assert screen.getvalue() == "\rloading model all-MiniLM-L6-v2…"
    assert screen.getvalue().endswith("\r" + " " * 31 + "\r")
    quiet = io.StringIO()
    with Status("loading model all-MiniLM-L6-v2…", quiet):
        pass
    assert quiet.getvalue() == ""
