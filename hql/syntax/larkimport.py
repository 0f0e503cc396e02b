"""Import Lark without its optional `regex` module.

Lark imports the third-party `regex` package when it is installed, which costs
about 10 ms at every start. HQL hands Lark ready-made tokens (see
`hql.syntax.tokens`), so Lark compiles no patterns and `re` serves it fine.
The block is lifted right after the import, so anything else may still use
`regex`.
"""

from __future__ import annotations

import sys

_blocked = "regex" not in sys.modules
if _blocked:
    sys.modules["regex"] = None  # type: ignore[assignment]
try:
    import lark
    from lark.exceptions import UnexpectedInput, UnexpectedToken, VisitError
finally:
    if _blocked:
        del sys.modules["regex"]

__all__ = ["UnexpectedInput", "UnexpectedToken", "VisitError", "lark"]
