"""HQL, the Hyper Query Language: a statically checked pipeline language over a vault of Markdown cards."""

from hql.version import __version__

__all__ = ["__version__"]
