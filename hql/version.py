"""The package version, recorded in retrievals and printed by `hql --version`."""

__version__ = "0.1.0"
