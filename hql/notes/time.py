"""Time in notes: which are current, superseded or not yet valid (the rules: hql.vault.currency).

`status_of(card, vault)` is what the context read path asks (a derived `superseded`
or `pending` overrides the front matter's own `status`); `as_of(cards, day)` keeps
the cards that were current on that day, as the vault stood then: no note that
began later, none already superseded or archived.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any

from hql.vault import currency

CURRENT = ("active", "draft")
RULE = "current notes first: superseded, archived and pending notes after the others"


def status_of(card: Any, vault: Any = None, on: datetime.date | None = None) -> str:
    """active, draft, archived or superseded on the day `on` (default today); a note whose
    `valid_from` is still to come reads as draft (not current yet, as a draft is not)."""
    found = currency.status(card, on)
    return "draft" if found == "pending" else found


def superseded_by(card: Any, vault: Any = None) -> list[str]:
    return currency.superseded_by(card)


def as_of(cards: Iterable[Any], day: datetime.date) -> list[Any]:
    """The cards current on `day`, in their order."""
    return [card for card in cards if currency.status(card, day) in CURRENT]


def day_of(value: Any) -> datetime.date | None:
    return currency.day_of(value)
