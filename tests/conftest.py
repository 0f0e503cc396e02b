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
