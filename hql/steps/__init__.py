"""The shipped extensions. Importing this package registers every step.

`collections`, `conversions` and `strings` add everyday steps to `core` (each imports
`core` first, which creates the extension).
"""

from hql.steps import (  # noqa: F401
    bases,
    collections,
    context,
    conversions,
    core,
    dates,
    functions,
    graph,
    memory,
    notes,
    pictures,
    present,
    rerank,
    retrieval,
    strings,
)
