"""Progress reporting between kernel chunks (tqdm when installed)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Union

ProgressArg = Union[bool, Callable[[int, int], Any], None]


class _Silent:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


class _Callback:
    def __init__(self, fn: Callable[[int, int], Any], total: int) -> None:
        self.fn, self.total, self.done = fn, total, 0

    def update(self, n: int) -> None:
        self.done += n
        self.fn(self.done, self.total)

    def close(self) -> None:
        pass


class _TextBar:
    """A plain stderr progress line for when tqdm is not installed."""

    def __init__(self, total: int, desc: str) -> None:
        self.total, self.desc, self.done = total, desc, 0
        self.start = self.last = time.monotonic()

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last >= 0.5 or self.done >= self.total:
            self.last = now
            pct = 100.0 * self.done / max(self.total, 1)
            sys.stderr.write(
                f"\r{self.desc}: {self.done}/{self.total} ({pct:5.1f}%) {now - self.start:6.1f}s"
            )
            sys.stderr.flush()

    def close(self) -> None:
        if self.done:
            sys.stderr.write("\n")
            sys.stderr.flush()


def check_progress(progress: ProgressArg) -> ProgressArg:
    """Validate a ``progress`` argument before any work starts; return it."""
    if progress is None or isinstance(progress, bool) or callable(progress):
        return progress
    raise TypeError(
        f"progress must be a bool or a callable f(done, total), got {type(progress).__name__}"
    )


def make_progress(progress: ProgressArg, total: int, desc: str, unit: str = "query"):
    """An object with ``update(n)`` and ``close()``.

    ``progress`` may be False/None (silent), True (a tqdm bar on stderr, or a
    plain text line when tqdm is missing) or a callable ``f(done, total)``.
    ``unit`` names what is counted on a tqdm bar (``"B"``: bytes, scaled).
    """
    check_progress(progress)
    if progress is None or progress is False:
        return _Silent()
    if callable(progress):
        return _Callback(progress, total)
    if progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return _TextBar(total, desc)
        return tqdm(total=total, desc=desc, unit=unit, leave=False, dynamic_ncols=True,
                    unit_scale=unit == "B")
    raise AssertionError("unreachable: check_progress accepted it")  # pragma: no cover


class LineProgress:
    """Progress of a file read line by line, in bytes: ``f(bytes_read, file_size)``.

    A reader calls :meth:`tick` when ``not lineno & LineProgress.MASK`` (every
    4,096 lines): the position (``fh.tell()``) is reported then, so there is no
    per-line cost worth measuring.  :meth:`close` reports the end of the file
    (``done`` reaches ``total``).
    """

    #: ``not lineno & MASK`` on every 4,096th line.
    MASK = 4095

    def __init__(self, progress: ProgressArg, fh: Any, total: int, desc: str) -> None:
        self.bar = make_progress(progress, total, desc, unit="B")
        self.on = not isinstance(self.bar, _Silent)
        self.fh, self.total, self.done = fh, total, 0

    def tick(self) -> None:
        if self.on:
            self._report(self.fh.tell())

    def _report(self, pos: int) -> None:
        if pos > self.done:
            self.bar.update(pos - self.done)
            self.done = pos

    def close(self, complete: bool = True) -> None:
        """Report the whole file read (``complete``) and close the bar."""
        if self.on and complete:
            self._report(max(self.total, self.fh.tell()))
        self.bar.close()
