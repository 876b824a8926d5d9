"""Run an iterator one item ahead on a background thread.

:class:`Prefetch` pulls the items of an iterator (e.g. read a chunk of a file
and tokenize it) on its own thread while the caller works on the previous
item.  It holds at most two items: the one the caller has and the one being
made, which waits until the caller takes the one before.  An exception of the
iterator is raised to the caller in order (after the items made before it);
:meth:`Prefetch.close` (also on the caller's error or ``KeyboardInterrupt``)
stops the thread after its current item, closes the iterator and waits for it.
The thread runs in a copy of the caller's context (:mod:`contextvars`).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["Prefetch"]

_POLL = 0.1  # seconds between checks of a stop request while waiting


class Prefetch:
    """The items of ``items``, made on a background thread one ahead of the caller."""

    def __init__(self, items: Iterator[Any], name: str = "overlap-prefetch") -> None:
        self._items = items
        self._cv = threading.Condition()
        self._slot: Any = None
        self._full = False
        self._done = False
        self._stop = False
        self._error: BaseException | None = None
        # the caller's context variables (e.g. the line limit of overlap._lines) hold there too
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._run,), name=name,
                                        daemon=True)
        self._thread.start()

    def _wait_taken(self) -> bool:
        """Wait until the slot is empty; False when asked to stop."""
        with self._cv:
            while self._full and not self._stop:
                self._cv.wait(_POLL)
            return not self._stop

    def _run(self) -> None:
        try:
            try:
                for item in self._items:
                    if not self._wait_taken():
                        return
                    with self._cv:
                        self._slot, self._full = item, True
                        self._cv.notify_all()
                    del item
                    if not self._wait_taken():  # make the next only once this one is taken
                        return
            finally:
                close = getattr(self._items, "close", None)
                if close is not None:
                    close()
        except BaseException as e:  # handed to the caller
            self._error = e
        finally:
            with self._cv:
                self._done = True
                self._cv.notify_all()

    def __iter__(self) -> Iterator[Any]:
        while True:
            with self._cv:
                while not self._full and not self._done:
                    self._cv.wait(_POLL)
                if self._full:
                    item, self._slot, self._full = self._slot, None, False
                    self._cv.notify_all()
                elif self._error is not None:
                    error, self._error = self._error, None
                    raise error
                else:
                    return
            yield item
            del item

    def close(self) -> None:
        """Stop the thread (after the item it is making) and wait for it."""
        with self._cv:
            self._stop = True
            self._slot, self._full = None, False
            self._cv.notify_all()
        self._thread.join()
