"""Errors of the semantic index: each carries a finished, user-facing message."""

from __future__ import annotations


class SemanticIndexError(Exception):
    """A refusal about the index, its configuration or its embedder.

    The message is complete (from `hql.messages`); callers attach a span.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class EmbedderError(SemanticIndexError):
    """The embedder is misconfigured or answered something unusable."""


class EmbedderUnavailable(EmbedderError):
    """The embedder cannot be reached right now (network, timeout, server error).

    Distinct so that `[semantics] on_unavailable = "lexical"` can fall back.
    """


class StoreUnavailable(SemanticIndexError):
    """The vector store cannot be reached right now (a server down, a timeout, an overload).

    Like `EmbedderUnavailable`, `[semantics] on_unavailable = "lexical"` may fall back.
    """
