"""When Enter runs the input and when it continues it, by the language's own layout rules.

The input continues while a bracket is open or the last token is one after
which a statement cannot end (`|`, `+`, `=`, `,`, `=>` …: the lexer's
CONTINUES_AFTER). A lexical error (an unterminated string) ends the input so
the error is shown at once; an unclosed `[[` continues it, since a card name
is still being typed. A blank last line always ends the input: the way out
of a statement that can never be completed.
"""

from __future__ import annotations

from hql.syntax.tokens import CLOSERS, CONTINUES_AFTER, Token, iter_highlight_tokens

# `<` and `>` pair only in type arguments; counting them would keep `a > b` open.
_PAIRED_OPENERS = {"LPAR", "LBRACE", "LSQB"}
_PAIRED_CLOSERS = CLOSERS - {"GT"}


def open_brackets(tokens: list[Token]) -> int:
    depth = 0
    for token in tokens:
        if token.kind in _PAIRED_OPENERS:
            depth += 1
        elif token.kind in _PAIRED_CLOSERS:
            depth = max(0, depth - 1)
    return depth


def _lexes_completely(text: str, tokens: list[Token]) -> bool:
    """True when the lexer consumed everything but whitespace and comments."""
    end = tokens[-1].span.end if tokens else 0
    rest = text.encode("utf-8")[end:].decode("utf-8", "replace")
    return all(not line.strip() or line.strip().startswith("//") for line in rest.splitlines())


def is_complete(text: str) -> bool:
    """Should Enter at the end of `text` run it?"""
    if not text.strip():
        return True
    body = text[1:].partition(" ")[2] if text.lstrip().startswith(":") else text
    lines = text.split("\n")
    if len(lines) > 1 and not lines[-1].strip():
        return True
    tokens = list(iter_highlight_tokens(body))
    if not _lexes_completely(body, tokens):
        return not _inside_docref(body)
    significant = [token for token in tokens if token.kind != "NEWLINE"]
    if not significant:
        return True
    if open_brackets(significant) > 0:
        return False
    return significant[-1].kind not in CONTINUES_AFTER


def _inside_docref(text: str) -> bool:
    start = text.rfind("[[")
    return start >= 0 and "]]" not in text[start:]
