"""Long kernels run as a sequence of short calls, so Ctrl-C works.

A compiled kernel holds the interpreter until it returns, and Python raises a
pending KeyboardInterrupt only between bytecodes.  ``run_chunks`` splits the
work into calls of about ``CHUNK_SECONDS`` each (as ``overlap``'s search
does), so a long call stops within about that long of the signal.  The
kernels it drives write disjoint outputs per item, so the result never
depends on the chunking.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["CHUNK_SECONDS", "run_chunks"]

#: Seconds of work one kernel call aims at.
CHUNK_SECONDS = 0.5


def run_chunks(run: Callable[[int, int], None], total: int, least: int, *,
               seconds: float = CHUNK_SECONDS,
               clock: Callable[[], float] = time.perf_counter) -> None:
    """Call ``run(first, stop)`` on consecutive ranges covering ``0 .. total``.

    The first call holds ``least`` items; each next one as many as the
    previous one ran at in ``seconds`` (at most four times as many, at least
    ``least``).
    """
    least = max(1, int(least))
    first, size = 0, least
    while first < total:
        stop = min(total, first + size)
        t0 = clock()
        run(first, stop)
        elapsed = clock() - t0
        done = stop - first
        rate = done * seconds / elapsed if elapsed > 0 else 4.0 * done
        size = max(least, int(min(rate, 4.0 * done)))
        first = stop
