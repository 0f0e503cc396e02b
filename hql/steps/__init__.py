"""The shipped extensions. Importing this package registers every step.

`strings` (and the other modules of everyday steps) add to `core`, which `core` creates.
"""

from hql.steps import core, functions, graph, pictures, present, retrieval, strings  # noqa: F401
