"""HQL, the Hyper Query Language: a statically checked pipeline language over a vault of Markdown cards."""

from typing import Any

from hql.api import HostError, Outcome, Session, check, open_vault, run
from hql.version import __version__

__all__ = ["HostError", "Outcome", "Session", "Vault", "__version__", "check", "open_vault", "run"]


def __getattr__(name: str) -> Any:
    # The vault library (and PyYAML) load only when a vault is used.
    if name == "Vault":
        from hql.api import vault_class

        return vault_class()
    raise AttributeError(name)
