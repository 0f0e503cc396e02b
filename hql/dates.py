"""Dates: parsing ISO 8601, ordering, day arithmetic and formatting of `Date` values.

Imported only by programs that use dates, so `hql eval '1 + 1'` never loads `datetime`.
A date compares with a date-time as its midnight in the date-time's offset (UTC when
the date-time has none); two date-times, one with an offset and one without, compare
as if the one without were UTC.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from hql.values import Date

_FORMAT = re.compile(r"YYYY|YY|MM|DD|HH|mm|ss")


def parse(text: str) -> Date | None:
    """An ISO 8601 date (`2024-05-01`) or date-time (`2024-05-01T09:30`, `…Z`, `…+02:00`)."""
    text = text.strip()
    try:
        return Date(_dt.date.fromisoformat(text))
    except ValueError:
        pass
    try:
        return Date(_dt.datetime.fromisoformat(text))
    except ValueError:
        return None


def from_python(value: _dt.date) -> Date:
    return Date(value)


def now() -> Date:
    """The clock, as a date-time with the local offset."""
    return Date(_dt.datetime.now().astimezone())


def today_of(clock: Date) -> Date:
    return Date(clock.value.date())


def _utc(moment: _dt.datetime) -> _dt.datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=_dt.UTC)
    return moment


def _as_moments(a: Any, b: Any) -> tuple[Any, Any]:
    """Two values that compare directly: a plain date meets a date-time at its midnight."""
    a_time, b_time = isinstance(a, _dt.datetime), isinstance(b, _dt.datetime)
    if a_time == b_time:
        return (_utc(a), _utc(b)) if a_time else (a, b)
    if not a_time:
        a = _dt.datetime.combine(a, _dt.time(), b.tzinfo)
    else:
        b = _dt.datetime.combine(b, _dt.time(), a.tzinfo)
    return _utc(a), _utc(b)


def compare(a: Date, b: Date) -> int:
    """-1, 0 or 1."""
    x, y = _as_moments(a.value, b.value)
    return (x > y) - (x < y)


def shift(date: Date, days: int) -> Date:
    """`date + days`; OverflowError when the result leaves years 1 to 9999."""
    return Date(date.value + _dt.timedelta(days=days))


def days_between(a: Date, b: Date) -> int:
    """`a - b` in whole days (towards zero)."""
    x, y = _as_moments(a.value, b.value)
    delta = x - y
    days = abs(delta) // _dt.timedelta(days=1)
    return days if delta >= _dt.timedelta(0) else -days


def field(date: Date, name: str) -> int:
    value = date.value
    if name == "weekday":
        return int(value.isoweekday())
    return int(getattr(value, name))


def format_date(date: Date, pattern: str) -> str:
    """`YYYY`, `YY`, `MM`, `DD`, `HH`, `mm`, `ss` replaced; everything else kept as written."""
    value = date.value
    hour, minute, second = (value.hour, value.minute, value.second) if date.has_time else (0, 0, 0)
    parts = {
        "YYYY": f"{value.year:04d}",
        "YY": f"{value.year % 100:02d}",
        "MM": f"{value.month:02d}",
        "DD": f"{value.day:02d}",
        "HH": f"{hour:02d}",
        "mm": f"{minute:02d}",
        "ss": f"{second:02d}",
    }
    return _FORMAT.sub(lambda match: parts[match[0]], pattern)
