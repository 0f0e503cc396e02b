"""Notes that agents and people write (docs/memory.md): the Python API of `hql note` and the
MCP write tools.

    import hql.notes
    notes = hql.notes.open("vaults/web-auth")
    state = notes.read("oauth")                       # name, path, digest, properties
    notes.set("oauth", "status", "draft", base_digest=state.digest)
    notes.append("oauth", "Refresh tokens rotate.", heading="Later")
    answer = notes.remember("Tokens expire after an hour.", title="Token lifetime")

Every change takes `base_digest` (refused, nothing written, when the note changed
since) and `dry_run` (the unified diff, nothing written). Writes go through
`hql.files.write_document`; afterwards the catalogue, the bm25 store and (with
`[semantics] embed_on_write`) the vectors are up to date.

Layers: frontmatter (YAML edits in place) and text (a note's parts) -> writer (the
changes) -> reconcile (remember), time (supersede, status), recall, fresh. Nothing
here imports the checker, the interpreter, the CLI or the MCP server.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hql.notes.writer import Notes

__all__ = ["open", "status_of", "superseded_by"]


def open(root: str | os.PathLike[str], **options: Any) -> Notes:  # noqa: A001 - hql.notes.open
    """The notes of the vault at `root`, to read and change (`hql.notes.writer.Notes`)."""
    from hql.notes.writer import Notes

    return Notes(root, **options)


def __getattr__(name: str) -> Any:
    if name in ("Notes", "NoteRefused", "Stale", "Written", "NoteState"):
        from hql.notes import writer

        return getattr(writer, name)
    if name in ("status_of", "superseded_by", "as_of"):
        from hql.notes import time

        return getattr(time, name)
    raise AttributeError(name)
