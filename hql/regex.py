"""Regular expressions compiled when first used.

Compiling a pattern whose character classes reach beyond Latin-1 costs milliseconds (the
class becomes a bitmap built in Python); a module that holds such patterns for rare text
(accents, Vietnamese, CJK) would pay that at every start of `hql`, for a question that is
plain ASCII. `lazy(pattern)` stands for `re.compile(pattern)` until a method is first
called; from then on the compiled pattern's methods are looked up as quickly as its own.
"""

from __future__ import annotations

import re
from typing import Any


class LazyPattern:
    """`re.compile(pattern, flags)`, made on first use (see the module's docstring)."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self._source = (pattern, flags)

    def compiled(self) -> re.Pattern[Any]:
        found: re.Pattern[Any] | None = self.__dict__.get("_compiled")
        if found is None:
            found = re.compile(*self._source)
            # Later look-ups find these in the instance, never reaching __getattr__.
            for name in _METHODS:
                self.__dict__[name] = getattr(found, name)
            self.__dict__["_compiled"] = found
        return found

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_source", "_compiled"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"lazy({self._source[0]!r})"


_METHODS = (
    "match",
    "fullmatch",
    "search",
    "sub",
    "subn",
    "split",
    "findall",
    "finditer",
    "pattern",
    "flags",
    "groups",
    "groupindex",
)


def lazy(pattern: str | bytes, flags: int = 0) -> Any:
    """A pattern compiled when first used; typed as `re.Pattern` is used (Any)."""
    return LazyPattern(pattern, flags)
