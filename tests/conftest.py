"""Fixtures shared by several test modules."""

from __future__ import annotations

from typing import Any

import pytest

from hql.vault import assembly


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every card built, alone or by a whole load."""
    names: list[str] = []
    real = assembly.build_card

    def counted(item: Any, name: str, *rest: Any) -> Any:
        names.append(name)
        return real(item, name, *rest)

    monkeypatch.setattr(assembly, "build_card", counted)
    return names


@pytest.fixture
def worker_pools(monkeypatch: pytest.MonkeyPatch) -> Any:
    """What worker processes do in a bm25 build: `pools`, every pool made (None where it
    could not fork), and `analysed`, how many batches the building process took from them.
    Threads another test left running do not keep the workers out."""
    from types import SimpleNamespace

    from hql.search import bm25

    seen = SimpleNamespace(pools=[], analysed=0)
    real_pool, real_renumbered = bm25._worker_pool, bm25._Renumbering._renumbered

    def recorded(*arguments: Any) -> Any:
        seen.pools.append(real_pool(*arguments))
        return seen.pools[-1]

    def renumbered(self: Any, *arguments: Any) -> Any:
        seen.analysed += 1
        return real_renumbered(self, *arguments)

    monkeypatch.setattr(bm25, "_threads_at_work", lambda: False)
    monkeypatch.setattr(bm25, "_worker_pool", recorded)
    monkeypatch.setattr(bm25._Renumbering, "_renumbered", renumbered)
    return seen
