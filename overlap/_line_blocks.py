"""Pieces shared by the arrow readers of line files (:mod:`overlap._batches`,
:mod:`overlap._arrow_csv`): the :class:`Batch` they yield, the blocks of whole
lines of a file they read and how many threads parse them, the UTF-8 check,
and batches of stdlib-read rows."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from ._line_scan import count_byte
from ._lines import max_line_bytes, open_binary, too_long
from ._readers import Records, checked_rows
from ._threads import usable_cores

__all__ = ["Batch", "Blocks", "BOM", "PYTHON_BATCH", "PARSE_PIECES", "PARSE_MIN_PIECE",
           "PARSE_WORKERS", "PARSE_WORKERS_MAX", "parse_workers",
           "arrow_reader", "piece_sizes", "valid_utf8", "count_bytes", "from_rows",
           "record_batches"]

#: Rows of a stdlib-read file per batch.
PYTHON_BATCH = 8192

BOM = b"\xef\xbb\xbf"

#: Pieces of a JSONL block that pyarrow's threads parse at once (None: one for
#: each of pyarrow's CPU threads, at least two), and the smallest piece (a block
#: of less than two is one piece).
PARSE_PIECES: int | None = None
PARSE_MIN_PIECE = 64 << 10


#: Threads that parse the blocks of a line file (JSONL, text, CSV, TSV) at
#: once (None: one for each usable core, at most :data:`PARSE_WORKERS_MAX`;
#: :func:`parse_workers`).  The blocks are read in turn on the calling thread
#: and parsed whole on these, handed back in the file's order
#: (:func:`overlap._ordered_map.map_in_order`; ``workers + 1`` blocks in
#: flight); with one, the chunked reader parses each JSONL block in pieces on
#: pyarrow's threads instead (:data:`PARSE_PIECES`).
PARSE_WORKERS: int | None = None
#: Most parsing workers by default: one parses about 300 MB/s of JSONL (the
#: 0.3 GB corpus of ``bench.stream_contamination``: 1.0 s of CPU), while the
#: calling thread hands out blocks at about 1.5 GB/s (0.2 s), so more than 8
#: would only hold more blocks in memory.
PARSE_WORKERS_MAX = 8


def parse_workers() -> int:
    """Threads that parse the blocks of a line file at once: :data:`PARSE_WORKERS`,
    else one for each core this process may use, at most :data:`PARSE_WORKERS_MAX`."""
    return max(1, PARSE_WORKERS or min(usable_cores(), PARSE_WORKERS_MAX))


@dataclass
class Batch:
    """Consecutive rows of a file: ``columns`` (field -> list of str or
    ``pyarrow.large_string`` array), ``n_rows``, and ``nbytes`` of the file
    (compressed bytes for ``.gz`` and ``.zst``) consumed for them."""

    columns: dict
    n_rows: int
    nbytes: int


def record_batches(src: Records, fields, as_arrow: bool, size: int) -> Iterator[Batch]:
    complete = False
    try:
        rows: list[tuple] = []
        for row in checked_rows(src, fields):
            rows.append(row)
            if len(rows) == size:
                yield from_rows(rows, fields, src.consumed(), as_arrow)
                rows = []
        yield from_rows(rows, fields, src.consumed(), as_arrow)
        complete = True
    finally:
        src.close(complete)


def from_rows(rows, fields, nbytes, as_arrow) -> Batch:
    cols: dict[str, Any] = {f: [r[k] for r in rows] for k, f in enumerate(fields)}
    if as_arrow:
        import pyarrow as pa
        cols = {f: pa.array(v, pa.large_string()) if v else empty_strings()
                for f, v in cols.items()}
    return Batch(cols, len(rows), nbytes)


def empty_strings() -> Any:
    """An empty ``large_string`` array.

    Not ``pa.array([], ...)``: pyarrow imports pandas (where installed) to
    check the type of what ``pa.array`` is handed, 0.2 s on the first call of
    a process; the end of every file read would pay it in the middle of a
    scan.
    """
    import pyarrow as pa

    return pa.nulls(0, pa.large_string())


class _Chained(io.RawIOBase):
    """Bytes held, then the rest of a stream (not closed with this one)."""

    def __init__(self, head: bytes, stream: IO[bytes]) -> None:
        self.head, self.at, self.stream = head, 0, stream

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        if self.at < len(self.head):
            n = min(len(buf), len(self.head) - self.at)
            buf[:n] = self.head[self.at:self.at + n]
            self.at += n
            return n
        data = self.stream.read(len(buf))
        buf[:len(data)] = data
        return len(data)


class Blocks:
    """Blocks of whole lines of a (possibly compressed) file: ``(block, lines_before)``.

    A block ends at a newline (or the end of the file); a line longer than
    the limit raises the stdlib reader's error (file and line) before more
    than ``limit + block_bytes`` bytes are held.
    """

    def __init__(self, path: str, limit: int | None, block_bytes: int) -> None:
        self.path, self.limit, self.size = path, max_line_bytes(limit), max(int(block_bytes), 4)
        self.stream = open_binary(path)
        self.raw = getattr(self.stream, "fileobj", None) or self.stream
        self.mark = 0
        self.pending: list[bytes] = []

    def consumed(self) -> int:
        pos = self.raw.tell()
        done, self.mark = pos - self.mark, pos
        return done

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            self.raw.close()

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        line = 0
        self.pending = []  # bytes read after the last newline
        held = 0
        # the file is read into one buffer, reused: each block is then the one
        # copy of its bytes (a fresh ``read`` and a slice of it were two, and
        # the fresh pages of every read had to be zeroed by the kernel)
        buf = bytearray(self.size)
        view = memoryview(buf)
        while True:
            n = self.stream.readinto(view)
            if not n:
                if held:
                    tail = b"".join(self.pending)
                    self._check_lengths(tail, line)
                    self.pending = []
                    yield tail, line
                return
            cut = buf.rfind(b"\n", 0, n)
            if cut < 0:
                self.pending.append(bytes(view[:n]))
                held += n
                if held > self.limit:  # a line (the first of these bytes) is too long
                    raise too_long(self.path, line + 1, self.limit)
                continue
            pending = self.pending
            block = b"".join([*pending, view[:cut + 1]]) if pending else bytes(view[:cut + 1])
            rest = bytes(view[cut + 1:n])
            # a line too long raises with the block's bytes still pending, so that
            # rest() gives the whole file from the blocks yielded before it
            self.pending = [block, rest] if rest else [block]
            self._check_lengths(block, line)
            self.pending, held = ([rest], len(rest)) if rest else ([], 0)
            yield block, line
            line += count_byte(block, 10)

    def counted(self) -> Iterator[tuple[bytes, int, int]]:
        """``(block, lines_before, consumed)``: each block with the bytes of the
        file consumed for it (:meth:`consumed` when the block is taken), for a
        reader that reads blocks ahead of the ones it hands back."""
        for block, before in self:
            yield block, before, self.consumed()

    def rest(self, head: bytes) -> IO[bytes]:
        """``head`` (the last block yielded, or blocks from there on), then the
        bytes of the file not yielded yet: the stdlib reader reads the rest of
        the file from there."""
        return io.BufferedReader(_Chained(b"".join([head, *self.pending]), self.stream),
                                 1 << 16)

    def _check_lengths(self, block: bytes, line: int) -> None:
        """The stdlib rule: a line holds at most ``limit`` bytes besides its newline."""
        if len(block) <= self.limit:
            return
        nl = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
        ends = nl + 1  # every line that ends in a newline, and the last one if not
        has_nl = np.ones(len(ends), np.int64)
        if not block.endswith(b"\n"):
            ends, has_nl = np.r_[ends, len(block)], np.r_[has_nl, 0]
        lens = np.diff(np.r_[0, ends])
        bad = np.flatnonzero(lens - has_nl > self.limit)
        if bad.size:
            raise too_long(self.path, line + int(bad[0]) + 1, self.limit)


def arrow_reader(block: bytes, reuse: bool = False) -> Any:
    """A pyarrow input stream over a copy of ``block`` in memory pyarrow owns.

    pyarrow's threaded JSON and CSV readers may drop their last reference to
    the input on one of their worker threads after the call has returned.  A
    buffer over a Python ``bytes`` then takes the GIL there to release it, and
    if the interpreter is exiting by then, that thread is stopped inside a C++
    destructor: std::terminate ("terminate called without an active
    exception", an abort at the end of ``overlap scan`` on CSV input).  The
    copy costs one memcpy of the block.

    ``reuse=True`` copies into one buffer per thread, kept from call to call,
    instead of a fresh one: for a reader whose output holds no view of its
    input (pyarrow's JSON reader copies every string into its arrays;
    ``tests/overlap/pipeline/test_arrow_reader.py`` checks it), and read to the
    end before the next call on the thread.  A fresh 2 MiB buffer a block had
    its pages zeroed by the kernel each time: 5 % of the stream scan's CPU.
    """
    import pyarrow as pa

    n = len(block)
    if reuse:
        buf = getattr(_held, "buffer", None)
        if buf is None or buf.size < n:
            buf = pa.allocate_buffer(max(n, 1), resizable=True)
            _held.buffer = buf
        view = buf.slice(0, n)
    else:
        view = buf = pa.allocate_buffer(n)
    if n:
        np.frombuffer(buf, dtype=np.uint8)[:n] = np.frombuffer(block, dtype=np.uint8)
    return pa.BufferReader(view)


#: The buffer :func:`arrow_reader` reuses, one per thread.
_held = threading.local()


def piece_sizes(n_bytes: int) -> list[int]:
    """The ``block_size`` values to hand pyarrow's JSON reader for a block of
    ``n_bytes``, in the order to try them: pieces for its threads to parse at
    once (:data:`PARSE_PIECES`; one piece is parsed by one thread: on two quiet
    cores, two pieces of 1 MiB read 1.1-1.2x faster), then the whole block, for the block whose
    long line pyarrow refuses across pieces.  Not for CSV: pyarrow's CSV reader
    loses the ``\n`` of a quoted ``\r\n`` that a piece edge splits (pyarrow
    26), so CSV blocks go to it whole."""
    import pyarrow as pa

    sizes = [n_bytes + 1]
    pieces = min(PARSE_PIECES or max(2, pa.cpu_count()), n_bytes // PARSE_MIN_PIECE)
    if pieces > 1:
        sizes.insert(0, n_bytes // pieces + 1)
    return sizes


def count_bytes(block: bytes, chars: bytes) -> int:
    """How many bytes of ``block`` are one of ``chars`` (distinct bytes; counted
    in C, :func:`overlap._line_scan.count_byte`)."""
    return sum(count_byte(block, c) for c in chars)


def valid_utf8(block: bytes) -> bool:
    import pyarrow as pa
    arr = pa.Array.from_buffers(pa.large_string(), 1, [
        None, pa.py_buffer(np.array([0, len(block)], np.int64)), pa.py_buffer(block)])
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True
