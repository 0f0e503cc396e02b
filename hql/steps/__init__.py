"""The shipped extensions. Importing this package registers every step."""

from hql.steps import core, functions, graph, present  # noqa: F401
