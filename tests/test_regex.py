"""`hql.regex.lazy`: a pattern compiled when first used answers as the compiled one does."""

from __future__ import annotations

import re

from hql.regex import LazyPattern, lazy


def test_a_lazy_pattern_compiles_when_first_used_and_answers_as_compiled() -> None:
    text = "Crème brûlée, 1,234.5 and d’Artagnan"
    source = "[_'\u2019\u02bc`\u00b4]"
    pattern = lazy(source)
    assert isinstance(pattern, LazyPattern) and "_compiled" not in pattern.__dict__
    compiled = re.compile(source)
    assert pattern.sub(" ", text) == compiled.sub(" ", text)
    assert "_compiled" in pattern.__dict__
    assert pattern.findall(text) == compiled.findall(text)
    assert pattern.search(text).span() == compiled.search(text).span()
    assert pattern.pattern == source and pattern.flags == compiled.flags
    assert pattern.compiled() is pattern.compiled()


def test_flags_and_bytes_patterns_are_kept() -> None:
    pattern = lazy(rb"^alias(?:es)?:", re.M)
    assert pattern.findall(b"title: x\naliases: [a]\nalias: b") == [b"aliases:", b"alias:"]
    assert pattern.flags & re.M
