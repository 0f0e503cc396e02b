"""The fixed shapes of the MCP tools' answers, published as each tool's output schema.

Each tool's answer is a JSON object; these records say which keys it always
has and what they hold, so a client can check an answer before it reads it.
The SDK derives the JSON Schema from them and validates every answer that is
not an error against it. Keys that are not listed may be added later without
breaking anyone (the schemas allow them): `search`'s hits, for one, carry
each ranker's own provenance beside the listed keys.
"""

from __future__ import annotations

from typing import Any, NotRequired

# pydantic reads a TypedDict's fields on Python 3.11 only from typing_extensions' own
from typing_extensions import TypedDict


class Report(TypedDict):
    """One report: where (1-based line and column, in characters) and the caret text."""

    severity: str
    stage: str
    message: str
    line: int
    column: int
    end_line: int
    end_column: int
    text: str


class Truncated(TypedDict, total=False):
    """What was cut to fit the output limit: how many elements, or characters, were shown."""

    shown: int
    total: int
    shown_characters: int
    total_characters: int
    note: str
    start: str


class Answer(TypedDict):
    """What every program's answer carries."""

    ok: bool
    reports: list[Report]


class QueryAnswer(Answer):
    type: str | None
    value: Any
    truncated: NotRequired[Truncated]


class ContextItem(TypedDict):
    card: str
    title: str
    scope: str
    priority: str
    tokens: int


class ContextAnswer(TypedDict):
    """A context block: its text (empty when nothing passed), its cards, and why it is empty."""

    ok: bool
    block: str
    tokens: int
    token_kind: str
    items: list[ContextItem]
    trimmed: list[dict[str, Any]]
    abstention: str | None
    warnings: list[str]
    diagnostics: NotRequired[dict[str, Any]]


class CheckAnswer(Answer):
    type: str | None


class Hit(TypedDict):
    rank: int
    card: str
    title: str | None
    score: float
    matched: NotRequired[dict[str, float]]


class SearchAnswer(Answer):
    ranker: str  # the ranker that ran (`auto` resolved)
    ranker_reason: str
    program: str
    hits: list[Hit]
    retrieval: dict[str, Any] | None
    truncated: NotRequired[Truncated]


class ConceptHit(TypedDict):
    rank: int
    name: str
    title: str
    source: str  # card, relation or imported
    labels: list[str]
    links: list[str]
    card: str | None
    score: float
    matched: NotRequired[dict[str, float]]


class RecallAnswer(Answer):
    program: str
    concepts: list[ConceptHit]
    retrieval: dict[str, Any] | None
    truncated: NotRequired[Truncated]


class CardAnswer(TypedDict):
    name: str
    title: str | None
    kind: str
    path: str
    metadata: dict[str, Any]
    tags: list[str]
    links: list[str]
    backlinks: list[str]
    body: str | None
    truncated: NotRequired[Truncated]


class Stage(TypedDict):
    stage: str
    input: str | None
    output: str
    ms: float


class ExplainAnswer(Answer):
    type: str | None
    value: Any
    stages: list[Stage]
    retrievals: list[dict[str, Any]]
    total_ms: NotRequired[float]
    rewrites: NotRequired[list[Any]]
    truncated: NotRequired[Truncated]


class RenderAnswer(TypedDict):
    ok: bool
    path: str
    written: bool
    blocks: NotRequired[int]
    failed_blocks: NotRequired[int]
    reports: NotRequired[list[Report]]


class VaultOffer(TypedDict):
    name: str
    description: str | None
    path: str
    cards: int
    writable: bool
    indexes: dict[str, dict[str, Any]]


class VaultsAnswer(TypedDict):
    default: str
    vaults: list[VaultOffer]


class NoteAnswer(TypedDict):
    """What a write tool did: `written` says whether the file changed; `digest` is the
    note's digest after it (the `base_digest` of the next change). A proposal of
    `remember` lists `similar` notes instead and writes nothing."""

    ok: bool
    written: bool
    action: NotRequired[str]
    name: NotRequired[str]
    path: NotRequired[str]
    digest: NotRequired[str | None]
    previous_digest: NotRequired[str | None]
    diff: NotRequired[str]
    similar: NotRequired[list[dict[str, Any]]]
    message: NotRequired[str]


class NoteReadAnswer(TypedDict):
    ok: bool
    name: str
    path: str
    digest: str
    properties: dict[str, Any]
    text: str
