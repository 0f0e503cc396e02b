"""Every user-facing message HQL prints, in one place so the wording stays consistent.

Functions return finished sentences; callers attach spans and severities.
Names quoted in messages use backticks, as the reference does.
"""

from __future__ import annotations


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """`1 card`, `2 cards`."""
    word = singular if count == 1 else (plural_form or singular + "s")
    return f"{count} {word}"


# --- language: lexer, parser, checker, evaluator ---------------------------

# --- vault: loading, cards, config -----------------------------------------

# --- graph ------------------------------------------------------------------

# --- search: analyser, lexical, bm25, fusion, relevant ----------------------

# --- semantic index: reader, producer, embedders ---------------------------

# --- cli, render, repl -------------------------------------------------------
