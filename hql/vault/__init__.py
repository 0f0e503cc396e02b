"""The vault library: a directory of Markdown cards loaded into cards, edges and warnings.

    vault = Vault.open("vaults/web-auth")
    vault.card("oauth").title, vault.uplinks("oauth"), vault.warnings

Layers, lower never importing higher: yamldata (YAML text to Data) ->
document (one file's text to header, body, links) -> catalog (what was read,
kept in `.hql/catalog.sqlite`) -> loader (finding and reading files) ->
assembly (names, kinds, edges) -> store (Vault).

The loader (and PyYAML with it) is imported on first use, so a program that
needs no vault starts without it.
"""

from typing import TYPE_CHECKING, Any

from hql.vault.model import (
    CONCEPT_CARD,
    RELATION_CARD,
    Card,
    Edge,
    Link,
    LoadWarning,
    VaultError,
)

if TYPE_CHECKING:
    from hql.vault.config import VaultConfig, load_config
    from hql.vault.store import Vault

__all__ = [
    "CONCEPT_CARD",
    "RELATION_CARD",
    "Card",
    "Edge",
    "Link",
    "LoadWarning",
    "Vault",
    "VaultConfig",
    "VaultError",
    "load_config",
]


def __getattr__(name: str) -> Any:
    if name == "Vault":
        from hql.vault.store import Vault

        return Vault
    if name in ("VaultConfig", "load_config"):
        from hql.vault import config

        return getattr(config, name)
    raise AttributeError(name)
