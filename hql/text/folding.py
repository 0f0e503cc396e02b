"""Case-insensitive patterns matched on a text's lower case: the same places, found faster.

A case-insensitive pattern folds the case of every character it tries. When the pattern
is written in lower case and its letters are Latin (up to U+024F; checked over every code
point), matching it case-sensitively on the
text's lower case finds the same places: lowering keeps every character one character, a
word character or a space as it was, and makes a character match such a letter exactly
when case folding would, but for three characters (İ lowers to two characters; ı and ſ
fold to i and s without lowering to them). A text holding one of them is matched as it is.
"""

from __future__ import annotations

import re
import threading

_FOLDS_APART = re.compile("[\u0130\u0131\u017f]")
_LOWER: dict[re.Pattern[str], re.Pattern[str]] = {}
_lock = threading.Lock()


def lowered(text: str) -> str | None:
    """The text's lower case, when lower-case patterns find in it what case-insensitive ones
    find in the text; None when they may not."""
    if text.isascii() or not _FOLDS_APART.search(text):
        return text.lower()
    return None


def case_sensitive(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """The pattern without IGNORECASE (for a lowered text); it must be written in lower case."""
    found = _LOWER.get(pattern)
    if found is None:
        assert pattern.pattern == pattern.pattern.lower(), "written in lower case"
        found = re.compile(pattern.pattern, pattern.flags & ~re.IGNORECASE)
        with _lock:
            _LOWER[pattern] = found
    return found


def negated_clauses(
    text: str, clause: re.Pattern[str], negation: re.Pattern[str]
) -> list[tuple[str, int | None]]:
    """The pieces `clause.split(text)` gives, each with where `negation` first matches in it
    (None: nowhere); both patterns case-insensitive, written in lower case, Latin letters."""
    low = lowered(text)
    if low is None:
        return [(piece, _start(negation.search(piece))) for piece in clause.split(text)]
    finder = case_sensitive(negation)
    found: list[tuple[str, int | None]] = []
    start = 0
    # Each piece is searched as a string of its own (as `split` gives it), so a word
    # boundary at its start does not see the character before it.
    for match in case_sensitive(clause).finditer(low):
        end = match.start()
        found.append((text[start:end], _start(finder.search(low[start:end]))))
        start = match.end()
    found.append((text[start:], _start(finder.search(low[start:]))))
    return found


def _start(match: re.Match[str] | None) -> int | None:
    return None if match is None else match.start()
