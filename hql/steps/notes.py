"""Helpers over notes as people write them, as Obsidian's Bases has them (everyday.md §4).

`has_tag(c, "a")` is true for the tag `a` and for nested tags `a/b` (case
does not matter, a leading `#` may be written); `in_folder(c, "papers")`
includes subfolders; `has_link(c, "Note")` resolves "Note" as a link written
in `c` would and asks whether `c` links there (an unresolved target counts
when written the same way, ignoring case).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hql import messages
from hql import types as ty
from hql.diagnostics import HqlError, type_error
from hql.registry import REGISTRY, FunctionSpec
from hql.steps.functions import _positional
from hql.syntax import tree as t
from hql.types import Type
from hql.values import ABSENT, Card

if TYPE_CHECKING:
    from hql.checker import Checker
    from hql.interpreter import Interpreter


def _check(name: str) -> Any:
    def check(
        checker: Checker, expr: t.Node, types: tuple[Type, ...], args: Sequence[t.Argument]
    ) -> Type:
        card, text = _positional(checker, name, expr, args, 2)
        if not ty.is_document(ty.strip_option(card)) or ty.strip_option(card) == ty.DOC:
            raise HqlError(type_error(messages.helper_needs_card(name, card), args[0].span))
        if text != ty.STRING:
            raise HqlError(type_error(messages.helper_needs_string(name, text), args[1].span))
        return ty.option(ty.BOOL) if card.name == "Option" else ty.BOOL

    return check


def has_tag(card: Card, wanted: str) -> bool:
    wanted = wanted.lstrip("#").casefold()
    return any(
        tag.casefold() == wanted or tag.casefold().startswith(wanted + "/") for tag in card.tags
    )


def in_folder(card: Card, folder: str) -> bool:
    folder = folder.strip("/")
    return not folder or card.folder == folder or card.folder.startswith(folder + "/")


def has_link(card: Card, target: str, vault: Any) -> bool:
    table = card._table
    if table is not None and table.dialect == "obsidian":
        found = table.resolver.resolve(target, card.relpath)
    elif vault is not None:
        resolved = vault.resolve(target)
        found = resolved.name if resolved is not None else None
    else:
        found = None
    if found is not None:
        return found in card.outlinks
    wanted = target.casefold()
    return any(name.casefold() == wanted for name in card.unresolved)


def _run(name: str) -> Any:
    def run(interpreter: Interpreter, expr: t.Node, values: list[Any]) -> Any:
        card, text = values
        if card is ABSENT or text is ABSENT:
            return ABSENT
        if name == "has_tag":
            return has_tag(card, text)
        if name == "in_folder":
            return in_folder(card, text)
        return has_link(card, text, interpreter.vault)

    return run


for _name, _signature, _summary, _example in (
    (
        "has_tag",
        "has_tag(c: Card, tag: String) -> Bool",
        "whether the card has the tag, or a tag nested below it (`a` finds `a/b`)",
        'cards | filter(c => has_tag(c, "project"))',
    ),
    (
        "in_folder",
        "in_folder(c: Card, folder: String) -> Bool",
        "whether the card's file is in the folder or one of its subfolders",
        'cards | filter(c => in_folder(c, "papers"))',
    ),
    (
        "has_link",
        "has_link(c: Card, note: String) -> Bool",
        "whether the card links to the note, the name resolved as a link is",
        'cards | filter(c => has_link(c, "Home"))',
    ),
):
    REGISTRY.add_function(
        FunctionSpec(_name, _signature, _summary, _example, _check(_name), _run(_name))
    )
