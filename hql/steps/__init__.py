"""The shipped extensions. Importing this package registers every step."""

from hql.steps import core, functions, graph, pictures, present, retrieval  # noqa: F401
