"""HQL, the Hyper Query Language: a statically checked pipeline language over a vault of Markdown cards."""

from hql.api import HostError, Outcome, Session, check, open_vault, run
from hql.vault import Vault
from hql.version import __version__

__all__ = ["HostError", "Outcome", "Session", "Vault", "__version__", "check", "open_vault", "run"]
