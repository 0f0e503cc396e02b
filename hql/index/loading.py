"""Loading a local model so that Ctrl-C cannot leave the process unable to load it again.

A model load imports large packages (torch takes seconds). An interrupt that lands
halfway through an import leaves some of the package's modules in `sys.modules`
and not the package itself, and every later import of it then fails ("partially
initialized module"). So, while a model loads:

* in the main thread, a first Ctrl-C is held until the load is done: the model is
  kept, then the interrupt stops the query as usual, and the next query finds the
  model ready. A second Ctrl-C stops the load at once;
* whenever an interrupt does stop the load, the modules it had begun to import are
  forgotten, so the next attempt imports them afresh.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

from hql import messages
from hql.progress import Status

T = TypeVar("T")
K = TypeVar("K")


def load_model(load: Callable[[], T], model: str, into: dict[K, T], key: K) -> T:
    """`into[key] = load()`, with a "loading model" line on a terminal and interrupts made safe.

    The model is stored before a held interrupt is raised, so it is kept for the next query.
    """
    with _interrupt_held_until_done(), Status(messages.loading_model(model)):
        into[key] = forgetting_imports_if_interrupted(load)
    return into[key]


def forgetting_imports_if_interrupted(load: Callable[[], T]) -> T:
    """Run `load`; if an interrupt stops it, drop the modules it had started importing."""
    before = set(sys.modules)
    try:
        return load()
    except KeyboardInterrupt:
        # Python has already dropped the modules whose import was cut short; what is left
        # behind are finished submodules of those packages, which would stop the package
        # from importing again. Packages that finished (numpy, say) stay as they are.
        for name in sorted(set(sys.modules) - before):
            if _orphaned(name):
                sys.modules.pop(name, None)
        raise


def _orphaned(name: str) -> bool:
    """Is a package above `name` missing from sys.modules?"""
    parts = name.split(".")
    return any(".".join(parts[:end]) not in sys.modules for end in range(1, len(parts)))


@contextmanager
def _interrupt_held_until_done() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only: nothing to hold here
        return
    try:
        previous = signal.getsignal(signal.SIGINT)
    except ValueError:  # pragma: no cover - no signal support in this interpreter
        yield
        return
    if previous is not signal.default_int_handler:
        yield  # someone else handles Ctrl-C (an embedding application): leave it to them
        return
    held: list[int] = []

    def hold(number: int, frame: FrameType | None) -> None:
        if held:  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        held.append(number)
        print(f"\n{messages.interrupt_held_for_model()}", file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt
