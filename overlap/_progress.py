"""Progress reporting: the one progress bar of the library and the command line.

``progress=`` arguments (:data:`ProgressArg`) are False/None (silent), True (a
bar on stderr) or a callable ``f(done, total)``.  A bar is tqdm on a terminal
when tqdm is installed (the optional ``progress`` extra, imported only when a
bar is made), else :class:`TextBar`: on a terminal a line redrawn with ``\\r``;
in a log (stderr not a terminal) a plain line at most every
:data:`LOG_INTERVAL` seconds and one at the end, never a carriage return.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Union

#: What a ``progress=`` argument may be.
ProgressArg = Union[bool, Callable[[int, int], Any], None]

#: Seconds between two plain progress lines in a log.
LOG_INTERVAL = 5.0
#: Seconds between two redraws of a text bar on a terminal.
REDRAW_INTERVAL = 0.5


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


def format_bytes(n: float) -> str:
    """``532 B``, ``1.25 MB``, ``5.00 GB`` (powers of 1000)."""
    x = float(n)
    for u in ("B", "kB", "MB", "GB"):
        if x < 1000:
            return f"{x:.0f} {u}" if u == "B" else f"{x:.2f} {u}"
        x /= 1000
    return f"{x:.2f} TB"


class TextBar:
    """A progress line on ``stream`` (the bar when tqdm is missing or in a log).

    ``tty``: redrawn with ``\\r`` (at most every :data:`REDRAW_INTERVAL`
    seconds, and at the end); otherwise a new line at most every ``interval``
    seconds and one at the end.  Shown from ``delay`` seconds after it is made;
    rate and ETA count from when it is made.  ``total=0``: the total is not
    known (no percentage, no ETA).  ``unit="B"`` counts bytes (kB, MB, and a
    rate in MB/s).
    """

    def __init__(self, total: int, desc: str, stream: Any, tty: bool, *,
                 unit: str = "sample", interval: float = LOG_INTERVAL,
                 delay: float = 0.0) -> None:
        self.total, self.desc, self.done, self.unit = total, desc, 0, unit
        self.stream, self.tty, self.interval = stream, tty, interval
        self.start = time.monotonic()
        self.visible = self.start + delay
        self.last_shown = -1e9
        self.shown_done = -1
        self.shown = False

    def _count(self, n: float) -> str:
        return format_bytes(n) if self.unit == "B" else f"{int(n):,}"

    def _line(self, elapsed: float) -> str:
        if not self.total:  # total unknown
            what = "" if self.unit in ("B", "sample") else f" {self.unit}"
            return f"{self.desc}: {self._count(self.done)}{what} {elapsed:5.1f}s"
        pct = 100.0 * self.done / max(self.total, 1)
        line = (f"{self.desc}: {self._count(self.done)}/{self._count(self.total)} "
                f"({pct:5.1f}%) {elapsed:5.1f}s")
        if self.unit == "B":
            line += f", {format_bytes(self.done / max(elapsed, 1e-9))}/s"
        return line + self._eta(elapsed)

    def _eta(self, elapsed: float) -> str:
        """``, ETA 12s`` from the rate so far (nothing before the first unit or after the last)."""
        if self.done <= 0 or self.done >= self.total:
            return ""
        return f", ETA {elapsed * (self.total - self.done) / self.done:.0f}s"

    def _show(self, now: float) -> None:
        text = self._line(now - self.start)
        self.stream.write("\r" + text if self.tty else text + "\n")
        self.shown, self.last_shown, self.shown_done = True, now, self.done
        self.stream.flush()

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now < self.visible:
            return
        wait = REDRAW_INTERVAL if self.tty else self.interval
        finished = self.tty and self.total and self.done >= self.total
        if finished or now - self.last_shown >= wait:
            self._show(now)

    def close(self) -> None:
        if not self.shown:
            return
        if self.done != self.shown_done:
            self._show(time.monotonic())
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def check_progress(progress: ProgressArg) -> ProgressArg:
    """Validate a ``progress`` argument before any work starts; return it."""
    if progress is None or isinstance(progress, bool) or callable(progress):
        return progress
    raise TypeError(
        f"progress must be a bool or a callable f(done, total), got {type(progress).__name__}"
    )


def make_progress(progress: ProgressArg, total: int, desc: str, unit: str = "query", *,
                  stream: Any = None, tty: bool | None = None, delay: float = 0.0) -> Any:
    """An object with ``update(n)`` (``n`` more done) and ``close()``.

    ``progress``: False/None (silent), True (a bar, see the module notes) or a
    callable ``f(done, total)``.  ``stream``: where a bar is drawn (default
    ``sys.stderr``); ``tty``: whether that is a terminal (default: ask it).
    ``unit`` names what is counted (``"B"``: bytes, scaled); ``total=0`` when
    it is not known.  ``delay``: seconds before a bar first shows.
    """
    check_progress(progress)
    if progress is None or progress is False:
        return _Silent()
    if progress is not True:
        return _Callback(progress, total)
    if stream is None:
        stream = sys.stderr
    if tty is None:
        tty = bool(getattr(stream, "isatty", lambda: False)())
    if tty:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            kwargs = dict(total=total or None, desc=desc, unit=unit, leave=False,
                          dynamic_ncols=True, file=stream, mininterval=REDRAW_INTERVAL,
                          unit_scale=unit == "B")
            if not delay:
                return tqdm(**kwargs)
            try:
                return tqdm(delay=delay, **kwargs)
            except TypeError:  # tqdm older than 4.60 has no delay
                pass
    return TextBar(total, desc, stream, tty, unit=unit, delay=delay)


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
