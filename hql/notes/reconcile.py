"""`remember(text)`: before a note is written, the notes it may repeat are looked for.

The vault is ranked against the new text (bm25, the `CANDIDATES` best) and each
candidate compared with it by `hql.context.similarity` (word shingles: the same
measure `collapse` uses). Candidates at or above the threshold (`[memory]
similar_threshold`, default the similarity module's) come back as `similar`
(name, score, why) and nothing is written, unless the caller says `create`
(write a new note anyway) or `merge_into = NAME` (append to that note under
today's date). A score proposes; the caller decides.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hql import messages

if TYPE_CHECKING:
    from hql.notes.writer import Notes

CANDIDATES = 20
TITLE_WORDS = 8
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s")


def remember(
    notes: Notes,
    text: str,
    *,
    title: str | None = None,
    properties: Mapping[str, Any] | None = None,
    create: bool = False,
    merge_into: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """What remembering `text` did: proposed similar notes, merged, or wrote a new note."""
    from hql.notes.writer import Invalid

    if not text.strip():
        raise Invalid(messages.note_needs_text())
    if merge_into is not None:
        written = notes.append(merge_into, text, dated=True, dry_run=dry_run)
        answer = written.to_json()
        answer["action"] = "merge"
        return answer
    title = title.strip() if title and title.strip() else title_from(text)
    similar, warnings = similar_notes(notes, f"{title} {text}")
    if similar and not create:
        answer = {
            "ok": True,
            "written": False,
            "action": "propose",
            "similar": [item.to_json() for item in similar],
            "message": messages.remember_decide(len(similar)),
        }
    else:
        answer = notes.new(title, text, properties=properties, dry_run=dry_run).to_json()
        answer["similar"] = [item.to_json() for item in similar]
    if warnings:
        answer["warnings"] = warnings
    return answer


def similar_notes(notes: Notes, text: str) -> tuple[list[Any], list[str]]:
    """The notes at least the threshold alike to `text`, most alike first, and what was
    wrong with the `[memory]` table that sets the threshold."""
    from hql.context.similarity import DEFAULT_THRESHOLD, near_duplicates
    from hql.notes.config import memory_config
    from hql.notes.fresh import bm25_store

    vault = notes.vault()
    config = memory_config(notes.root, vault.config.raw)
    if not len(vault):
        return [], list(config.warnings)
    threshold = config.similar_threshold or DEFAULT_THRESHOLD
    candidates = [hit.card for hit in bm25_store(vault).search(text, CANDIDATES)]
    return near_duplicates(text, candidates, threshold), list(config.warnings)


def title_from(text: str) -> str:
    """A title for a text that has none: its first heading, else its first sentence's
    first words."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip()
            if heading:
                return heading
        if stripped:
            first = _SENTENCE_END.split(stripped, 1)[0].rstrip(".!?。！？")
            words = first.split()
            if len(words) > TITLE_WORDS:
                return " ".join(words[:TITLE_WORDS]) + "…"
            return first
    return text.strip()[:60]
