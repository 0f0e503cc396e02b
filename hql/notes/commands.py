"""`hql note …` and `hql memory …`: argparse wiring over `hql.notes`, answers as text or JSON.

A refused change prints `hql: <why>` on stderr and exits 1 (with `--format json`, the
refusal as JSON on stdout too, `reason` saying which: stale, exists, outside, broken,
not_found, invalid).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from hql import messages

NOTE_ACTIONS = (
    "read",
    "new",
    "append",
    "set",
    "section",
    "edit",
    "move",
    "archive",
    "supersede",
    "remember",
)


def add_note_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="note_action", metavar="ACTION", required=True)

    def action(name: str, help_text: str, note: bool = True) -> argparse.ArgumentParser:
        child = actions.add_parser(name, help=help_text, description=help_text)
        if note:
            child.add_argument("note", help="the note: its name, [[link]] text or vault path")
        return child

    def changes(child: argparse.ArgumentParser, digest: bool = True) -> None:
        if digest:
            child.add_argument(
                "--base-digest",
                metavar="DIGEST",
                help="refuse (write nothing) unless the note still has this digest",
            )
        child.add_argument("--dry-run", action="store_true", help="print the diff; write nothing")

    def text(child: argparse.ArgumentParser, required: bool = False) -> None:
        child.add_argument(
            "--text", metavar="TEXT", required=required, help="the text (`-`: read stdin)"
        )

    action("read", "print a note's path, digest and properties")
    new = action("new", "write a new note (refused when its name exists)", note=False)
    new.add_argument("title", help="the note's title; its file name is made from it")
    text(new)
    _property_flags(new)
    new.add_argument("--folder", metavar="DIR", help="where (default: [memory] folder)")
    changes(new, digest=False)
    append = action("append", "add text at the end of a note")
    text(append, required=True)
    append.add_argument("--heading", metavar="TEXT", help="under a new heading")
    append.add_argument("--dated", action="store_true", help="under a heading of today's date")
    changes(append)
    set_ = action("set", "set (or with --unset remove) a front-matter property")
    set_.add_argument("key")
    set_.add_argument("value", nargs="?", help="read as YAML (true, 3, [a, b]); else text")
    set_.add_argument("--string", action="store_true", help="the value is text, as written")
    set_.add_argument("--unset", action="store_true", help="remove the property")
    changes(set_)
    section = action("section", "replace the text under a heading (added when missing)")
    section.add_argument("heading")
    text(section, required=True)
    changes(section)
    edit = action("edit", "replace a note's body, or with --old one passage of it")
    text(edit, required=True)
    edit.add_argument("--old", metavar="TEXT", help="the passage to replace (found exactly once)")
    changes(edit)
    move = action("move", "move or rename a note (links to it are listed, not rewritten)")
    move.add_argument("to", help="a folder ending in / or a new path inside the vault")
    changes(move)
    archive = action("archive", "set `status: archived` (nothing is deleted)")
    archive.add_argument(
        "--delete", action="store_true", help="delete the file instead (it is gone for good)"
    )
    changes(archive)
    supersede = action("supersede", "mark a note as replacing an older one (supersedes: [[old]])")
    supersede.add_argument("old", help="the note it replaces")
    supersede.add_argument("--valid-from", metavar="DATE", help="from when it holds (YYYY-MM-DD)")
    changes(supersede)
    remember = action("remember", "store a text as a note, after looking for notes like it", False)
    remember.add_argument("text", help="the text to remember (`-`: read stdin)")
    remember.add_argument("--title", metavar="TEXT", help="its title (default: its first words)")
    _property_flags(remember)
    choice = remember.add_mutually_exclusive_group()
    choice.add_argument(
        "--create", action="store_true", help="write a new note even when similar ones exist"
    )
    choice.add_argument(
        "--merge-into", metavar="NOTE", help="append it to this note under today's date"
    )
    changes(remember, digest=False)


def _property_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a front-matter property (repeatable); VALUE read as YAML, else as text",
    )


def run_note_command(args: argparse.Namespace) -> int:
    from hql.api import HostError
    from hql.notes import open as open_notes
    from hql.notes.writer import NoteRefused

    if not args.vault:
        raise HostError(messages.note_needs_vault())
    notes = open_notes(args.vault)
    try:
        answer = _run(notes, args)
    except NoteRefused as refusal:
        if args.format == "json":
            print(json.dumps(refusal.to_json(), ensure_ascii=False, indent=2))
        print(f"hql: {refusal.message}", file=sys.stderr)
        return 1
    _print(answer, args)
    return 0


def _run(notes: Any, args: argparse.Namespace) -> dict[str, Any]:
    action = args.note_action
    dry = getattr(args, "dry_run", False)
    base = getattr(args, "base_digest", None)
    if action == "read":
        state = notes.read(args.note)
        return {
            "ok": True,
            "name": state.name,
            "path": state.path,
            "digest": state.digest,
            "properties": state.properties,
        }
    if action == "new":
        props = _properties(args.property)
        return notes.new(
            args.title, _text(args.text), properties=props, folder=args.folder, dry_run=dry
        ).to_json()
    if action == "append":
        return notes.append(
            args.note,
            _text(args.text),
            heading=args.heading,
            dated=args.dated,
            base_digest=base,
            dry_run=dry,
        ).to_json()
    if action == "set":
        if args.unset:
            return notes.unset(args.note, args.key, base_digest=base, dry_run=dry).to_json()
        if args.value is None:
            raise _usage(messages.note_set_needs_value(args.key))
        value = args.value if args.string else parse_value(args.value)
        return notes.set(args.note, args.key, value, base_digest=base, dry_run=dry).to_json()
    if action == "section":
        return notes.section(
            args.note, args.heading, _text(args.text), base_digest=base, dry_run=dry
        ).to_json()
    if action == "edit":
        return notes.edit(
            args.note, _text(args.text), old_text=args.old, base_digest=base, dry_run=dry
        ).to_json()
    if action == "move":
        return notes.move(args.note, args.to, base_digest=base, dry_run=dry).to_json()
    if action == "archive":
        return notes.archive(args.note, delete=args.delete, base_digest=base, dry_run=dry).to_json()
    if action == "supersede":
        return notes.supersede(
            args.note, args.old, valid_from=args.valid_from, base_digest=base, dry_run=dry
        ).to_json()
    from hql.notes.reconcile import remember

    return remember(
        notes,
        _text(args.text),
        title=args.title,
        properties=_properties(args.property),
        create=args.create,
        merge_into=args.merge_into,
        dry_run=dry,
    )


def _usage(message: str) -> Exception:
    from hql.notes.writer import Invalid

    return Invalid(message)


def _text(text: str | None) -> str:
    if text == "-":
        return sys.stdin.read()
    return text or ""


def _properties(pairs: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise _usage(messages.note_property_flag(pair))
        found[key.strip()] = parse_value(value)
    return found


def parse_value(text: str) -> Any:
    """A property value as front matter would read it (`true`, `3`, `[a, b]`), else the text."""
    from hql.vault import yamldata

    try:
        return yamldata.load_mapping(f"value: {text}").get("value", text)
    except (yamldata.YamlRefused, RecursionError):
        return text


def _print(answer: dict[str, Any], args: argparse.Namespace) -> None:
    for warning in answer.get("warnings", ()):
        print(f"warning: {warning}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(answer, ensure_ascii=False, indent=2))
        return
    if "similar" in answer and not answer.get("written"):
        print(messages.remember_similar_found(len(answer["similar"])))
        for item in answer["similar"]:
            print(f"  {item['name']}  {item['score']:.2f}  {item['why']}")
        print(messages.remember_how_to_decide())
        return
    if "properties" in answer:
        print(f"name        {answer['name']}")
        print(f"path        {answer['path']}")
        print(f"digest      {answer['digest']}")
        for key, value in answer["properties"].items():
            print(f"{key:<11} {json.dumps(value, ensure_ascii=False)}")
        return
    if not answer.get("written"):
        print(answer.get("diff") or messages.note_unchanged(answer["path"]), end="")
        if answer.get("diff"):
            return
        print()
        return
    print(messages.note_written(answer["action"], answer["path"], answer["digest"]))
    for name in answer.get("linked_from", []):
        print(messages.note_still_linked(name, answer.get("moved_from") or ""))


# --- hql memory suggest --------------------------------------------------------------


def add_memory_arguments(parser: argparse.ArgumentParser) -> None:
    from hql.notes.suggest import DEFAULT_LIMIT, DEFAULT_MINIMUM

    actions = parser.add_subparsers(dest="memory_action", metavar="ACTION", required=True)
    suggest = actions.add_parser(
        "suggest",
        help="propose relation cards for cards often retrieved together (the retrieval log)",
        description="propose relation cards for cards often retrieved together (the retrieval "
        "log, [log] retrieval = true); nothing is written without --write and a yes",
    )
    suggest.add_argument(
        "--min",
        type=int,
        default=DEFAULT_MINIMUM,
        metavar="N",
        help=f"retrieved together in at least N context blocks ({DEFAULT_MINIMUM})",
    )
    suggest.add_argument(
        "--limit", type=int, default=DEFAULT_LIMIT, metavar="N", help=f"at most N ({DEFAULT_LIMIT})"
    )
    suggest.add_argument(
        "--write", action="store_true", help="write them as relation cards (asks first)"
    )
    suggest.add_argument("--yes", action="store_true", help="with --write: do not ask")
    suggest.add_argument("--dry-run", action="store_true", help="print the cards' diffs instead")


def run_memory_command(args: argparse.Namespace) -> int:
    from hql.api import HostError, open_vault
    from hql.context.log import LogError, enabled, log_path, read_entries
    from hql.notes import open as open_notes
    from hql.notes.suggest import suggest, write

    if not args.vault:
        raise HostError(messages.command_needs_vault("memory"))
    for flag, value in (("--min", args.min), ("--limit", args.limit)):
        if value < 1:
            raise HostError(messages.context_option_positive(flag, value))
    vault = open_vault(args.vault)
    try:
        entries = read_entries(vault)
    except LogError as error:
        raise HostError(str(error)) from None
    found = suggest(vault, entries, args.min, args.limit)
    answer: dict[str, Any] = {"ok": True, **found.to_json(), "written": []}
    text = args.format != "json"
    if not entries:
        answer["message"] = messages.log_empty(str(log_path(vault)), enabled(vault))
    elif not found.proposals:
        left_out = found.related + found.elsewhere + found.edges
        answer["message"] = messages.suggest_none(len(entries), args.min, left_out)
    if text:
        if "message" in answer:
            print(answer["message"])
        else:
            print(messages.suggest_header(len(entries), len(found.proposals), args.min))
            for proposal in found.proposals:
                print(messages.suggest_line(proposal))
        if found.related or found.elsewhere or found.edges:
            print(messages.suggest_left_out(found.related, found.elsewhere, found.edges))
    wanted = (args.write or args.dry_run) and bool(found.proposals)
    if wanted and args.write and not args.dry_run and not args.yes:
        if not sys.stdin.isatty():
            print(f"hql: {messages.suggest_needs_yes()}", file=sys.stderr)
            if not text:
                print(json.dumps({**answer, "ok": False}, ensure_ascii=False, indent=2))
            return 1
        reply = input(messages.suggest_confirm(len(found.proposals)))
        if reply.strip().lower() not in ("y", "yes"):
            wanted = False
            if text:
                print(messages.suggest_declined())
    if wanted:
        answer["written"] = write(open_notes(args.vault), found.proposals, dry_run=args.dry_run)
    elif text and found.proposals:
        print(messages.suggest_how_to_write())
    if not text:
        print(json.dumps(answer, ensure_ascii=False, indent=2))
        return 0 if all(item.get("ok") for item in answer["written"]) else 1
    for item in answer["written"]:
        if not item.get("ok"):
            print(messages.suggest_refused(item["proposal"]["title"], item["message"]))
        elif item.get("written"):
            print(messages.note_written("new", item["path"], item["digest"]))
        else:
            print(item["diff"], end="")
    return 0 if all(item.get("ok") for item in answer["written"]) else 1
