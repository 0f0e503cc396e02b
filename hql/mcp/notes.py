"""The MCP write tools over `hql.notes`: remember, append_note, edit_note, set_property,
move_note, archive_note. Offered only with `hql mcp --allow-write`.

Each answer is a dict: `ok`, `written`, the note's `name`, `path`, new `digest` (pass it
as `base_digest` to the next change), `previous_digest` and the `diff`; a change that
was not made answers `ok: false` with its `reason` (stale, exists, outside, broken,
not_found, invalid) and a message that says what to do. After a write the server's
vault is loaded again on the next call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hql import messages

if TYPE_CHECKING:
    from hql.mcp.service import VaultService
    from hql.notes.writer import Notes


def _notes(service: VaultService) -> Notes:
    from hql.mcp.service import ToolFailure
    from hql.notes import open as open_notes

    if not service.allow_write:
        raise ToolFailure(messages.mcp_write_not_allowed())
    return open_notes(service.live.root)


def _answered(service: VaultService, change: Callable[[Notes], Any]) -> dict[str, Any]:
    from hql.notes.writer import NoteRefused

    notes = _notes(service)
    try:
        done = change(notes)
    except NoteRefused as refusal:
        return refusal.to_json()
    answer = done if isinstance(done, dict) else done.to_json()
    if answer.get("written"):
        service.live.expire()
    return answer


def remember(
    service: VaultService,
    text: str,
    title: str | None = None,
    properties: dict[str, Any] | None = None,
    create: bool = False,
    merge_into: str | None = None,
    supersedes: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    from hql.notes.reconcile import remember as remembered

    given = dict(properties or {})
    if supersedes:
        given["supersedes"] = f"[[{supersedes.removeprefix('[[').removesuffix(']]')}]]"
    return _answered(
        service,
        lambda notes: remembered(
            notes,
            text,
            title=title,
            properties=given,
            create=create,
            merge_into=merge_into,
            dry_run=dry_run,
        ),
    )


def append_note(
    service: VaultService,
    name: str,
    text: str,
    heading: str | None = None,
    dated: bool = False,
    base_digest: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    return _answered(
        service,
        lambda notes: notes.append(
            name, text, heading=heading, dated=dated, base_digest=base_digest, dry_run=dry_run
        ),
    )


def edit_note(
    service: VaultService,
    name: str,
    new_text: str,
    old_text: str | None = None,
    section: str | None = None,
    base_digest: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    if section is not None:
        return _answered(
            service,
            lambda notes: notes.section(
                name, section, new_text, base_digest=base_digest, dry_run=dry_run
            ),
        )
    return _answered(
        service,
        lambda notes: notes.edit(
            name, new_text, old_text=old_text, base_digest=base_digest, dry_run=dry_run
        ),
    )


def set_property(
    service: VaultService,
    name: str,
    key: str,
    value: Any = None,
    remove: bool = False,
    base_digest: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    if remove:
        return _answered(
            service,
            lambda notes: notes.unset(name, key, base_digest=base_digest, dry_run=dry_run),
        )
    return _answered(
        service,
        lambda notes: notes.set(name, key, value, base_digest=base_digest, dry_run=dry_run),
    )


def move_note(
    service: VaultService,
    name: str,
    to: str,
    base_digest: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    return _answered(
        service, lambda notes: notes.move(name, to, base_digest=base_digest, dry_run=dry_run)
    )


def archive_note(
    service: VaultService,
    name: str,
    delete: bool = False,
    base_digest: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    return _answered(
        service,
        lambda notes: notes.archive(name, delete=delete, base_digest=base_digest, dry_run=dry_run),
    )


def read_note(service: VaultService, name: str) -> dict[str, Any]:
    """A note's path, digest and properties: what a change passes as `base_digest`."""
    from hql.notes import open as open_notes
    from hql.notes.writer import NoteRefused

    try:
        state = open_notes(service.live.root, fresh=False).read(name)
    except NoteRefused as refusal:
        return refusal.to_json()
    return {
        "ok": True,
        "name": state.name,
        "path": state.path,
        "digest": state.digest,
        "properties": state.properties,
        "text": state.text,
    }
