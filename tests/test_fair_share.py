"""Programs running at once take turns (hql.deadline, "fair shares"): a call that arrives
while runaway programs run is served while they wait, and a paused program still ends at
its deadline. Counted in calls of function values, not timed."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

import hql
from hql import deadline

SAMPLE = Path(__file__).resolve().parents[1] / "vaults" / "web-auth"
# About 105,000 calls of function values: a few tenths of a second alone.
RUNAWAY = (
    "cards | flat_map(a => cards | flat_map(b => cards | flat_map(c => cards"
    " | map(e => a.name)))) | count"
)
CHEAP = "cards | flat_map(a => cards | flat_map(b => cards | map(c => a.name))) | count"


@pytest.fixture(scope="module")
def vault() -> Any:
    return hql.open_vault(SAMPLE, use_cache=False)


def _until(condition: Any, what: str) -> None:
    """Wait for `condition()` (a generous cap only, so a broken scheduler fails, not hangs)."""
    cap = time.monotonic() + 120
    while not condition():
        assert time.monotonic() < cap, f"never happened: {what}"
        time.sleep(0.01)


def _others(before: dict[int, Any]) -> dict[int, tuple[float, int, bool]]:
    """The programs this test started (not this thread's, nor any begun before the test)."""
    mine = threading.get_ident()
    return {
        ident: turn
        for ident, turn in deadline.turns().items()
        if ident != mine and ident not in before
    }


def test_a_call_arriving_among_runaways_is_served_while_they_wait(vault: Any) -> None:
    answers: list[Any] = []
    before = deadline.turns()

    def runaway() -> None:
        answers.append(deadline.within(120, lambda: hql.run(RUNAWAY, vault)).value)

    threads = [threading.Thread(target=runaway, daemon=True) for _ in range(3)]
    for thread in threads:
        thread.start()
    # every runaway has had some CPU, and all but one are waiting for their turn
    _until(
        lambda: (
            len(_others(before)) == 3
            and all(attained >= 0.05 for attained, _, _ in _others(before).values())
            and sum(paused for _, _, paused in _others(before).values()) >= 2
        ),
        "three runaways taking turns",
    )
    seen: dict[str, Any] = {}

    def cheap() -> None:
        calls = sum(calls for _, calls, _ in _others(before).values())
        seen["value"] = hql.run(CHEAP, vault).value
        seen["progress"] = sum(calls for _, calls, _ in _others(before).values()) - calls
        seen["paused"] = sum(paused for _, _, paused in _others(before).values())

    deadline.within(120, cheap)
    assert seen["value"] == 18**3
    # the one runaway running when the call came went on to its next turn at most
    assert seen["progress"] <= deadline.CHECK_EVERY, seen
    assert seen["paused"] == 3, seen
    for thread in threads:
        thread.join(120)
    assert answers == [18**4] * 3  # they all finished their work afterwards


def test_a_paused_program_still_ends_at_its_deadline(vault: Any) -> None:
    ended: dict[str, Any] = {}

    def runaway() -> None:
        try:
            deadline.within(0.5, lambda: hql.run(RUNAWAY, vault))
        except deadline.Overrun:
            ended["overrun"] = True

    def holder() -> None:  # a program that has had no CPU yet: the runaway waits for it
        before = deadline.turns()
        thread = threading.Thread(target=runaway, daemon=True)
        thread.start()
        _until(
            lambda: any(paused for _, _, paused in _others(before).values()),
            "the runaway paused",
        )
        thread.join(120)
        ended["joined"] = not thread.is_alive()

    deadline.within(120, holder)
    assert ended == {"overrun": True, "joined": True}


def test_a_program_waiting_on_something_else_does_not_hold_the_others_up(vault: Any) -> None:
    """A call blocked (on a server, a lock, a file) takes no turns: the others wait for it
    at most WANTS seconds, then run on while it is still blocked."""
    release = threading.Event()
    answers: list[Any] = []

    def blocked() -> None:
        deadline.within(120, lambda: release.wait(120))

    def runaway() -> None:
        answers.append(deadline.within(120, lambda: hql.run(RUNAWAY, vault)).value)

    waiting = threading.Thread(target=blocked, daemon=True)
    waiting.start()
    before = deadline.turns()
    worker = threading.Thread(target=runaway, daemon=True)
    worker.start()
    worker.join(120)
    still_blocked = waiting.is_alive()
    release.set()
    waiting.join(120)
    assert answers == [18**4] and still_blocked
    assert not _others(before)
