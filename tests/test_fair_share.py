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
# About 1.9 million: many seconds alone, so only a deadline ends it here.
LONGER = (
    "cards | flat_map(a => cards | flat_map(b => cards | flat_map(c => cards"
    " | flat_map(e => cards | map(f => a.name))))) | count"
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


def test_a_call_arriving_among_runaways_is_served_while_they_wait(
    vault: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A holder not seen for WANTS seconds is passed over (its own test is below); on a loaded
    # machine a thread can wait that long for a core, so this test counts turns without it.
    monkeypatch.setattr(deadline, "WANTS", 600.0)
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

    def calls() -> dict[int, int]:
        return {ident: turn[1] for ident, turn in _others(before).items()}

    def cheap() -> None:
        start = calls()
        seen["value"] = hql.run(CHEAP, vault).value
        end = calls()
        seen["progressed"] = sum(end[ident] != count for ident, count in start.items())
        seen["paused"] = sum(paused for _, _, paused in _others(before).values())

    deadline.within(120, cheap)
    assert seen["value"] == 18**3
    # the runaway holding the baton when the call came ran on for its quantum at most;
    # the others did not move, and all three waited while the call finished
    assert seen["progressed"] <= 1, seen
    assert seen["paused"] == 3, seen
    for thread in threads:
        thread.join(120)
    assert answers == [18**4] * 3  # they all finished their work afterwards


def test_programs_taking_turns_still_end_at_their_deadlines(vault: Any) -> None:
    """Three runaways, one evaluating at a time: the waiting ones end at their deadline too."""
    before = deadline.turns()
    ended: list[str] = []
    waited: list[bool] = []

    def runaway() -> None:
        try:
            deadline.within(0.5, lambda: hql.run(LONGER, vault))
            ended.append("finished")
        except deadline.Overrun:
            ended.append("overrun")

    threads = [threading.Thread(target=runaway, daemon=True) for _ in range(3)]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        waited.append(any(paused for _, _, paused in _others(before).values()))
        time.sleep(0.01)
    for thread in threads:
        thread.join(120)
    assert ended == ["overrun"] * 3 and any(waited)
    assert not _others(before)


def test_a_holder_waiting_on_something_else_does_not_hold_the_others_up(vault: Any) -> None:
    """A program that took the baton and then blocks (on a server, a lock, a file) takes no
    more turns: the others wait for it WANTS seconds at most, then run while it is blocked."""
    release = threading.Event()
    holding = threading.Event()
    answers: list[Any] = []

    def blocked() -> None:
        def work() -> None:
            while deadline._BATON[0] is None or not holding.is_set():
                for _ in range(deadline.CHECK_EVERY):
                    deadline.take_turn()
                holding.set()
            release.wait(120)

        deadline.within(120, work)

    def runaway() -> None:
        answers.append(deadline.within(120, lambda: hql.run(RUNAWAY, vault)).value)

    before = deadline.turns()
    worker = threading.Thread(target=runaway, daemon=True)
    worker.start()  # two programs: the baton is passed
    waiting = threading.Thread(target=blocked, daemon=True)
    waiting.start()
    assert holding.wait(120)
    worker.join(120)
    still_blocked = waiting.is_alive()
    release.set()
    waiting.join(120)
    assert answers == [18**4] and still_blocked
    assert not _others(before)
