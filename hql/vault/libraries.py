"""Libraries: other vaults (a person's global notes beside a project) in one candidate set.

`[vault] libraries = [{ path = "~/notes", scope = "global" }]` names them. Each is
opened as a vault of its own (its own catalogue, index and stores under its own
`.hql/`), on first use, once per loaded project vault. A library that cannot be
opened is a warning and is left out: it never costs a project card. A library's
own libraries are not followed.

A library's cards join a candidate set as tagged copies (`c.library`, `c.scope`);
a name the project (or an earlier library) already has is qualified with the
library's name (`global:Deploy checklist`), so a bare name always means the
project's card.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hql import messages

if TYPE_CHECKING:
    from hql.vault.config import LibrarySpec
    from hql.vault.model import Card
    from hql.vault.store import Vault


class Library:
    """One library of a project vault: its vault (None when it failed) and its tagged cards."""

    def __init__(
        self, spec: LibrarySpec, root: Path, vault: Vault | None, warning: str | None
    ) -> None:
        self.name = spec.name
        self.scope = spec.scope
        self.root = root
        self.vault = vault
        self.warning = warning
        self._taken: frozenset[str] = frozenset()
        self._tagged: dict[str, Card] = {}
        self._lock = threading.Lock()

    def tagged(self, card: Card) -> Card:
        """The library's card as the candidate set holds it (tagged, qualified on a clash)."""
        found = self._tagged.get(card.path)
        if found is None:
            name = self.name_of(card.name)
            found = card.in_library(self.name, self.scope, name if name != card.name else None)
            with self._lock:
                found = self._tagged.setdefault(card.path, found)
        return found

    def name_of(self, name: str) -> str:
        """The name a card of this library has in the candidate set (qualified on a clash)."""
        return f"{self.name}:{name}" if name in self._taken else name

    @property
    def cards(self) -> tuple[Card, ...]:
        if self.vault is None:
            return ()
        return tuple(self.tagged(card) for card in self.vault.cards)

    def __repr__(self) -> str:
        state = f"{len(self.vault)} cards" if self.vault is not None else "not loaded"
        return f"Library({self.name!r}, {self.scope!r}, {state})"


def open_libraries(project: Vault, use_cache: bool = True) -> tuple[Library, ...]:
    """Every library the project's hql.toml names, in order, opened (or failed, with why)."""
    from hql.vault.config import entry_place
    from hql.vault.model import VaultError
    from hql.vault.store import Vault

    specs = project.config.libraries
    if not specs:
        return ()
    taken = set(card_names(project))  # a bare name is the project's
    found = []
    for spec in specs:
        root = library_root(project.root, spec.path)
        vault: Vault | None = None
        warning = None
        try:
            if root.resolve() == project.root.resolve():
                raise VaultError(messages.library_is_the_vault())
            vault = Vault.open(root, use_cache=use_cache)
        except VaultError as error:
            warning = messages.library_failed(spec.name, spec.path, str(error))
        except OSError as error:
            warning = messages.library_failed(spec.name, spec.path, error.strerror or str(error))
        if warning is not None:
            where = entry_place(project.config, f"vault.libraries[{spec.entry}]")
            warning = messages.load_warning(where, warning)
        library = Library(spec, root, vault, warning)
        library._taken = frozenset(taken)
        if vault is not None:
            taken |= {library.name_of(name) for name in card_names(vault)}
        found.append(library)
    return tuple(found)


def card_names(vault: Vault) -> list[str]:
    """A vault's card names; one opened from its catalogue answers from its stored columns,
    building no card (a process that asks one question need not read every note)."""
    from hql.vault.lazy import CardSequence

    lazy = vault.lazy_cards()
    if isinstance(lazy, CardSequence):
        return lazy.names
    return [card.name for card in lazy]


def library_root(project_root: Path, written: str) -> Path:
    """A library's folder: `~` expanded, relative to the project vault when not absolute."""
    path = Path(os.path.expanduser(written))
    return path if path.is_absolute() else project_root / path


def all_cards(project: Vault, libraries: tuple[Library, ...]) -> tuple[Any, ...]:
    """The project's cards, then every library's, tagged."""
    return (*project.cards, *(card for library in libraries for card in library.cards))
