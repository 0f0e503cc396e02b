"""Embedding passages on every core, and the build's progress report.

Texts are sorted by length and cut into batches, so a batch holds texts of
like length and little of it is padding. A local model configured in
hql.toml runs in worker processes (`[semantics.embedder] workers`, default:
the machine's cores), each loading the model once and running it on its
share of the cores; the longest batches go first so no worker is left with a
long one at the end. An embedder handed in by the caller, an HTTP endpoint,
or a single worker runs in this process.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from hql import messages
from hql.index.config import EmbedderConfig
from hql.index.embedders import Embedder, make_embedder

if TYPE_CHECKING:
    import numpy as np

BATCH = 32
REPORT_EVERY_SECONDS = 10.0
BAR_WIDTH = 30


def machine_cores() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Progress:
    """The build's progress on stderr.

    On a terminal: a bar, drawn from the start (with "loading model…" until
    the first batch is back). Elsewhere (logs, CI): one line every ten seconds
    with the count and the rate. Both end with a one-line summary.
    """

    def __init__(
        self,
        label: str,
        stream: TextIO | None = None,
        *,
        every: float = REPORT_EVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.label = label
        self.total = 0
        self.done = 0
        self.status = ""
        self._clock = clock
        self._every = every
        self._terminal = _is_terminal(self.stream)
        self._started = clock()
        self._reported = self._started
        self._drawn = 0.0
        self._width = 0

    def begin(self, total: int, status: str = "") -> None:
        self.total, self.status = total, status
        self._started = self._reported = self._clock()
        if self._terminal and total:
            self._draw()

    def advance(self, count: int) -> None:
        self.done = min(self.total, self.done + count)
        self.status = ""
        now = self._clock()
        if self._terminal:
            if now - self._drawn >= 0.1 or self.done == self.total:
                self._draw()
        elif now - self._reported >= self._every and self.done < self.total:
            self._reported = now
            self._write(
                messages.index_progress_line(self.label, self.done, self.total, self.rate())
            )

    def finish(self, summary: str | None) -> None:
        if self._terminal and self.total:
            self._write("\r" + " " * self._width + "\r")
        if summary:
            self._write(summary + "\n")

    def seconds(self) -> float:
        return max(self._clock() - self._started, 1e-9)

    def rate(self) -> float:
        return self.done / self.seconds()

    def _draw(self) -> None:
        filled = BAR_WIDTH * self.done // self.total if self.total else 0
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        tail = self.status or f"{self.rate():.1f}/s"
        text = f"{self.label} [{bar}] {self.done}/{self.total} {tail}"
        self._width = max(self._width, len(text))
        self._drawn = self._clock()
        self._write("\r" + text.ljust(self._width))

    def _write(self, text: str) -> None:
        self.stream.write(text if self._terminal or text.endswith("\n") else text + "\n")
        self.stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def embed_passages(
    embedder: Embedder,
    texts: Sequence[str],
    progress: Progress,
    config: EmbedderConfig | None = None,
    workers: int = 1,
) -> tuple[np.ndarray, int]:
    """Every text's vector, in the order given, and how many worker processes made them.

    Worker processes run when `config` names a local model and there are two
    batches or more for each; otherwise this process embeds (0 workers).
    """
    import numpy as np

    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    batches = [order[start : start + BATCH] for start in range(0, len(order), BATCH)]
    rows: np.ndarray | None = None

    def place(batch: list[int], vectors: np.ndarray) -> None:
        nonlocal rows
        if rows is None:
            rows = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        elif vectors.shape[1] != rows.shape[1]:
            from hql.index.errors import EmbedderError

            raise EmbedderError(
                messages.embedder_wrong_dimensions(int(vectors.shape[1]), int(rows.shape[1]))
            )
        rows[batch] = vectors
        progress.advance(len(batch))

    parallel = config is not None and config.provider == "local" and workers > 1
    # Starting a worker costs about a second (interpreter, model): worth it from two batches each.
    used = 0
    if parallel and len(batches) >= 2 * workers:
        assert config is not None
        used = workers
        batches = _in_workers(config, texts, batches, workers, place)
    for batch in batches:  # in this process: by choice, or what a broken pool left
        place(batch, embedder.embed_passages([texts[i] for i in batch]))
    if rows is None:
        return np.zeros((0, 0), dtype=np.float32), used
    return rows, used


def _in_workers(
    config: EmbedderConfig,
    texts: Sequence[str],
    batches: list[list[int]],
    workers: int,
    place: Callable[[list[int], Any], None],
) -> list[list[int]]:
    """Embed the batches in worker processes; returns the batches left undone.

    Worker processes are started fresh (spawn), so a script that calls the
    producer must guard its own top level with `if __name__ == "__main__"`;
    when workers cannot start (or die), the rest is embedded in this process.
    """
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    threads = max(1, machine_cores() // workers)
    context = multiprocessing.get_context("spawn")  # a forked OpenMP or ONNX runtime can hang
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start_worker, initargs=(config, threads)
    )
    pending: dict[Any, list[int]] = {}
    try:
        pending = {pool.submit(_embed_batch, [texts[i] for i in batch]): batch for batch in batches}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                batch = pending[future]
                vectors = future.result()
                del pending[future]
                place(batch, vectors)
    except BrokenProcessPool:
        pool.shutdown(wait=False, cancel_futures=True)
        return sorted(pending.values(), key=lambda batch: batches.index(batch))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return []


_WORKER_EMBEDDER: Embedder | None = None
_WORKER_FAILURE: BaseException | None = None


def _start_worker(config: EmbedderConfig, threads: int) -> None:
    """Load the model once in this worker; Ctrl-C is the parent's to handle.

    A failure to load is kept and raised by the first batch, so the parent
    reports the embedder's own message rather than a broken pool.
    """
    global _WORKER_EMBEDDER, _WORKER_FAILURE
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    try:
        _WORKER_EMBEDDER = make_embedder(config, threads=threads)
        load = getattr(_WORKER_EMBEDDER, "load", None)
        if callable(load):
            load()
    except Exception as error:
        _WORKER_FAILURE = error


def _embed_batch(texts: list[str]) -> np.ndarray:
    if _WORKER_FAILURE is not None:
        raise _WORKER_FAILURE
    assert _WORKER_EMBEDDER is not None
    return _WORKER_EMBEDDER.embed_passages(texts)
