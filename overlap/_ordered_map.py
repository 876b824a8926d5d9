"""Apply a function to the items of an iterator on worker threads, results in order.

:func:`map_in_order` is how the arrow readers parse the blocks of a line file
on every core (:mod:`overlap._batches`): the blocks are read one after the
other on the calling thread (cheap: a read and a search for the last
newline), and parsed on ``workers`` threads (pyarrow's parsers and the block
checks of :mod:`overlap._line_scan` run without the GIL).  The results come
back in the order of the items, so the rows and the errors are those of a
serial loop:

* at most ``workers + 1`` items are handed out and not yet given back (the
  memory of the blocks in flight);
* an exception of the function is raised when its item's turn comes, after
  the results of the items before it; an exception of the iterator (e.g. a
  line too long) likewise, after every item it gave before it;
* when the caller stops early (``close()``, an error, ``KeyboardInterrupt``)
  the items not started are dropped, and the call waits for the ones running.

Each call runs in a copy of the caller's :mod:`contextvars` context, taken
when its item is handed out.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["map_in_order"]

T = TypeVar("T")
R = TypeVar("R")


def map_in_order(fn: Callable[[T], R], items: Iterable[T], workers: int,
                 name: str = "overlap-parse") -> Iterator[tuple[T, R]]:
    """``(item, fn(item))`` for each item, in order, ``fn`` run on ``workers`` threads.

    ``workers <= 1`` calls ``fn`` on the calling thread, one item at a time.
    """
    if workers <= 1:
        for item in items:
            yield item, fn(item)
        return
    pending: deque[tuple[T, Future]] = deque()
    failure: Exception | None = None
    pool = ThreadPoolExecutor(workers, thread_name_prefix=name)
    try:
        source = iter(items)
        while True:
            try:
                item = next(source)
            except StopIteration:
                break
            except Exception as e:  # raised in its turn, after the items before it
                failure = e
                break
            pending.append((item, pool.submit(contextvars.copy_context().run, fn, item)))
            if len(pending) > workers:
                first, done = pending.popleft()
                yield first, done.result()
        while pending:
            first, done = pending.popleft()
            yield first, done.result()
        if failure is not None:
            raise failure
    finally:
        for _, future in pending:
            future.cancel()
        pending.clear()
        pool.shutdown(wait=True)
