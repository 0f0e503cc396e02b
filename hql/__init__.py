"""HQL, the Hyper Query Language: a statically checked pipeline language over a vault of Markdown cards."""

from __future__ import annotations

from hql.version import __version__

# Not `typing.TYPE_CHECKING`: a command a vault's watcher answers imports nothing it can skip.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hql.api import HostError, Outcome, Session, check, open_vault, run
    from hql.vault import Vault

__all__ = ["HostError", "Outcome", "Session", "Vault", "__version__", "check", "open_vault", "run"]

_FROM_API = frozenset({"HostError", "Outcome", "Session", "check", "open_vault", "run"})


def __getattr__(name: str) -> Any:
    # The language loads when it is first used: a command that a vault's watcher answers
    # (hql/served.py) starts without it, and the vault library (and PyYAML) load only when
    # a vault is used.
    if name in _FROM_API:
        from hql import api

        found = getattr(api, name)
    elif name == "Vault":
        from hql.api import vault_class

        found = vault_class()
    else:
        raise AttributeError(name)
    globals()[name] = found  # loaded now: the next use is a plain lookup
    return found
