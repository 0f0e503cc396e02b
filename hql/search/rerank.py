"""Reranking through an HTTP rerank endpoint (`[rerank]` in hql.toml).

One `POST` per call, in the shape most rerank servers share:

* `shape = "cohere"` (the default; Cohere, Jina, vLLM, Infinity, llama.cpp's server):
  `{"model", "query", "documents", "top_n"}` answered by
  `{"results": [{"index", "relevance_score"}, …]}`.
* `shape = "tei"` (Hugging Face text-embeddings-inference): `{"query", "texts"}` answered
  by `[{"index", "score"}, …]`.

A server that cannot be reached, answers an HTTP error or something that is not a
ranking of the documents sent raises `RerankUnavailable` with a message that names the
endpoint; `[rerank] on_unavailable = "keep"` asks the step to keep the input's order
instead (recorded as a fallback and warned about), never silently.
"""

from __future__ import annotations

import json
import math
import os
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hql import messages

DEFAULT_CAP = 50
DEFAULT_TIMEOUT = 30.0
SHAPES = ("cohere", "tei")
DOCUMENT_CHARACTERS = 4000  # of each card's text sent: rerank models read ~512 tokens


class RerankError(ValueError):
    """A `[rerank]` table that cannot be used; the message says what to fix."""


class RerankUnavailable(RuntimeError):
    """The endpoint did not rerank (unreachable, an HTTP error, a malformed answer)."""


@dataclass(frozen=True)
class RerankConfig:
    url: str
    model: str = ""
    shape: str = "cohere"
    timeout: float = DEFAULT_TIMEOUT
    api_key_env: str | None = None
    on_unavailable: str = "fail"  # or "keep": the input's order, recorded as a fallback

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> RerankConfig:
        url = section.get("url")
        if not url:
            raise RerankError(messages.rerank_not_configured())
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise RerankError(messages.rerank_bad_setting("url", "an http:// or https:// URL"))
        model = section.get("model", "")
        if not isinstance(model, str):
            raise RerankError(messages.rerank_bad_setting("model", "a string"))
        shape = section.get("shape", "cohere")
        if shape not in SHAPES:
            raise RerankError(messages.rerank_bad_setting("shape", '"cohere" or "tei"'))
        timeout = section.get("timeout", DEFAULT_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise RerankError(
                messages.rerank_bad_setting("timeout", "a positive number of seconds")
            )
        key = section.get("api_key_env")
        if key is not None and not isinstance(key, str):
            raise RerankError(messages.rerank_bad_setting("api_key_env", "a variable's name"))
        fallback = section.get("on_unavailable", "fail")
        if fallback not in ("fail", "keep"):
            raise RerankError(messages.rerank_bad_setting("on_unavailable", '"fail" or "keep"'))
        return cls(url, model, shape, float(timeout), key, fallback)


def rerank_scores(config: RerankConfig, query: str, documents: Sequence[str]) -> list[float]:
    """The endpoint's score for each document, in the documents' order."""
    if not documents:
        return []
    texts = [document[:DOCUMENT_CHARACTERS] for document in documents]
    payload: dict[str, Any]
    if config.shape == "tei":
        payload = {"query": query, "texts": texts, "truncate": True}
    else:
        payload = {"query": query, "documents": texts, "top_n": len(texts)}
        if config.model:
            payload["model"] = config.model
    answer = _post(config, payload)
    return _scores(config, answer, len(texts))


def _post(config: RerankConfig, payload: dict[str, Any]) -> object:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if config.api_key_env and os.environ.get(config.api_key_env):
        headers["Authorization"] = f"Bearer {os.environ[config.api_key_env]}"
    request = urllib.request.Request(
        config.url, data=json.dumps(payload).encode("utf-8"), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=config.timeout) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        raise RerankUnavailable(
            messages.rerank_http_status(config.url, error.code, str(error.reason))
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        raise RerankUnavailable(messages.rerank_unreachable(config.url, str(reason))) from None
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise RerankUnavailable(messages.rerank_bad_response(config.url, "not JSON")) from None


def _scores(config: RerankConfig, answer: object, expected: int) -> list[float]:
    rows = answer.get("results") if isinstance(answer, dict) else answer
    if not isinstance(rows, list):
        raise RerankUnavailable(messages.rerank_bad_response(config.url, "no list of results"))
    found: dict[int, float] = {}
    for row in rows:
        index = row.get("index") if isinstance(row, dict) else None
        score = row.get("relevance_score", row.get("score")) if isinstance(row, dict) else None
        if (
            not isinstance(index, int)
            or isinstance(index, bool)
            or not 0 <= index < expected
            or index in found
            or isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            problem = f"a result without a fresh index below {expected} and a finite score"
            raise RerankUnavailable(messages.rerank_bad_response(config.url, problem))
        found[index] = float(score)
    if len(found) != expected:
        problem = f"{len(found)} scores for {expected} documents"
        raise RerankUnavailable(messages.rerank_bad_response(config.url, problem))
    return [found[index] for index in range(expected)]
