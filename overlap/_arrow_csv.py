"""CSV and TSV read by pyarrow, block by block, only where the stdlib reader agrees.

The arrow engine of :mod:`overlap._batches` reads a CSV or TSV file in blocks
of whole records: blocks of whole lines (:class:`overlap._line_blocks.Blocks`)
joined until their count of ``"`` is even, so that no block ends inside a
quoted field (a quoted field may hold newlines).  pyarrow parses a block
(``pyarrow.csv``, every column a string: ``"007"`` stays ``"007"``, an empty
field stays ``""``) only when the block is *plain CSV*, which both parsers
read the same way:

* valid UTF-8, no NUL byte, no BOM opening a block after the first (the
  stdlib drops a BOM only at the start of the file);
* every quoted field is quoted whole: an opening ``"`` starts a field (at the
  start of a line, after the delimiter) and its closing ``"`` ends it (before
  the delimiter, a newline, ``\\r\\n`` or the end), a ``""`` inside standing
  for one ``"``; no ``"`` elsewhere.  Blocks are cut where the quotes are
  balanced, so the quotes of a plain block pair up from its start;
* a ``\\r`` outside quotes is followed by ``\\n``;
* pyarrow gives as many rows as the block holds records (a record ends at a
  newline outside quotes; an empty line is no record), every one as wide as
  the header.

The blocks are parsed on the parse workers of :mod:`overlap._line_blocks`,
several at once (:class:`RecordBlocks` keeps the ones read ahead of the
block handed back, so that a hand-over below starts at that block).

The first block that is not plain (a stray quote, a lone ``\\r``, bad UTF-8,
a row of the wrong width, quotes still open after :data:`RECORD_BLOCKS`
blocks) and everything after it is read by the stdlib reader
(:func:`overlap._readers.csv_records`), from the same line, as one stream:
the blocks before were plain, so a record starts there for both readers, and
the rows and the errors (file and line) are the stdlib reader's.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

from ._line_blocks import (BOM, PYTHON_BATCH, Batch, Blocks, arrow_reader, count_bytes,
                           empty_strings, from_rows, parse_workers, record_batches, valid_utf8)
from ._ordered_map import map_in_order
from ._progress import make_progress
from ._readers import Lines, Records, csv_records, open_records

__all__ = ["csv_batches", "csv_table", "plain_records", "RecordBlocks", "RECORD_BLOCKS"]

#: Blocks a quoted field may span before the rest of the file goes to the stdlib
#: reader (which bounds the bytes held by the line limit only).
RECORD_BLOCKS = 8

_QUOTE, _CR, _LF = 34, 13, 10


def csv_batches(path: str, fmt: str, fields: list[str], limit: int | None,
                block_bytes: int) -> Iterator[Batch]:
    """The ``fields`` of a CSV (``fmt="csv"``) or TSV file in batches of Arrow arrays."""
    delimiter = "," if fmt == "csv" else "\t"
    # the header, and its errors, are the stdlib reader's
    src = open_records(path, fmt, max_line_bytes=limit, fields=fields, only_fields=True)
    header = list(src.columns or ())
    src.close(False)
    return _batches(path, delimiter, header, fields, limit, block_bytes)


class RecordBlocks:
    """Blocks of lines joined until their quotes balance (or ``cap`` bytes are
    held): ``(block, lines_before, consumed)``, ``consumed`` the bytes of the
    file read for the block (:meth:`Blocks.consumed`).  :attr:`taken` keeps
    every block handed out until the caller :meth:`done` with it, and
    :attr:`pieces` the blocks of lines read since the last one handed out:
    with them, a caller that reads ahead can hand the rest of the file to the
    stdlib reader from any block (:meth:`rest`)."""

    def __init__(self, blocks: Blocks, cap: int) -> None:
        self.blocks, self.cap = blocks, cap
        self.pieces: list[bytes] = []
        self.taken: deque[tuple[bytes, int, int]] = deque()

    def __iter__(self) -> Iterator[tuple[bytes, int, int]]:
        held = quotes = first = 0
        for block, before in self.blocks:
            if not self.pieces:
                first = before
            self.pieces.append(block)
            held += len(block)
            quotes += count_bytes(block, b'"')
            if quotes % 2 == 0 or held > self.cap:
                yield self._take(first)
                held, quotes = 0, 0
        if self.pieces:  # quotes open at the end of the file: not plain
            yield self._take(first)

    def _take(self, first: int) -> tuple[bytes, int, int]:
        pieces, self.pieces = self.pieces, []
        item = (pieces[0] if len(pieces) == 1 else b"".join(pieces), first,
                self.blocks.consumed())
        self.taken.append(item)
        return item

    def done(self) -> None:
        """The caller is done with the oldest block handed out."""
        self.taken.popleft()

    def rest(self) -> tuple[IO[bytes], int]:
        """The file from the oldest block not done on (the stdlib reader reads
        the rest from there), and the bytes consumed for the blocks handed out
        and not done: call once no more blocks are read."""
        head = b"".join([*(b for b, _, _ in self.taken), *self.pieces])
        carried = sum(c for _, _, c in self.taken)
        self.taken.clear()
        self.pieces = []
        return self.blocks.rest(head), carried


def _parsed_records(blocks: Blocks, parse: Any) -> tuple[RecordBlocks, Iterator]:
    """The record blocks of ``blocks`` and ``(item, parse(block, lines_before))``
    of each, parsed on the parse workers, in order."""
    records = RecordBlocks(blocks, RECORD_BLOCKS * blocks.size)
    return records, map_in_order(lambda item: parse(item[0], item[1]), records,
                                 parse_workers())


def _batches(path, delimiter, header, fields, limit, block_bytes) -> Iterator[Batch]:
    blocks = Blocks(path, limit, block_bytes)
    records, parsed = _parsed_records(
        blocks, lambda block, before: _arrow_block(block, before, delimiter, header, fields))
    try:
        for (_, before, consumed), cols in parsed:
            if cols is None:  # this block and the rest of the file: the stdlib reader
                parsed.close()  # no block read ahead any more
                stream, carried = records.rest()
                lines = Lines(path, limit, stream=stream, first_line=before)
                recs = csv_records(lines, delimiter, None if before == 0 else header)

                def consumed_since() -> int:  # the blocks read ahead count with the first batch
                    nonlocal carried
                    done, carried = blocks.consumed() + carried, 0
                    return done

                yield from record_batches(Records(path, iter(recs), recs.columns,
                                                   consumed_since, recs.close),
                                           fields, True, PYTHON_BATCH)
                return
            records.done()
            n = len(cols[fields[0]])
            yield Batch(cols, n, consumed)
        yield from_rows([], fields, blocks.consumed(), True)
    finally:
        parsed.close()
        blocks.close()


def plain_records(block: bytes, delimiter: str) -> np.ndarray | None:
    """The ends (newline positions) of the records of a plain block, or None
    when the block is not plain (module notes; UTF-8 is checked apart)."""
    if b"\x00" in block:
        return None
    d = ord(delimiter)
    a = np.frombuffer(block, np.uint8)
    size = a.size
    q = np.flatnonzero(a == _QUOTE)
    nl = np.flatnonzero(a == _LF)
    cr = np.flatnonzero(a == _CR)
    if q.size:
        if q.size % 2:
            return None
        opens, closes = q[0::2], q[1::2]
        before = a[np.maximum(opens - 1, 0)]
        ok = (opens == 0) | (before == d) | (before == _LF)
        ok[1:] |= opens[1:] - 1 == closes[:-1]  # "" inside a quoted field
        if not ok.all():
            return None
        nxt = closes + 1
        after = a[np.minimum(nxt, size - 1)]
        after2 = a[np.minimum(nxt + 1, size - 1)]
        ok = ((nxt == size) | (after == d) | (after == _LF)
              | ((after == _CR) & (nxt + 1 < size) & (after2 == _LF)))
        ok[:-1] |= nxt[:-1] == opens[1:]
        if not ok.all():
            return None
        outside_cr = cr[np.searchsorted(q, cr) % 2 == 0]
        nl = nl[np.searchsorted(q, nl) % 2 == 0]
    else:
        outside_cr = cr
    if outside_cr.size and not ((outside_cr + 1 < size)
                                & (a[np.minimum(outside_cr + 1, size - 1)] == _LF)).all():
        return None
    return nl


def _records(a: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, stops)`` of the records of a plain block whose records end at
    ``ends`` (newlines outside quotes), empty lines left out (they are no record);
    a last record with no newline stops at the end of the block."""
    size = a.size
    starts = np.r_[0, ends + 1]
    stops = np.r_[ends, size]
    keep = starts < size
    starts, stops = starts[keep], stops[keep]
    first = a[starts]
    second = a[np.minimum(starts + 1, size - 1)]
    empty = (first == _LF) | ((first == _CR) & (starts + 1 < size) & (second == _LF))
    return starts[~empty], stops[~empty]


def _arrow_block(block: bytes, before: int, delimiter: str, header: list[str],
                 fields: list[str], lines: bool = False) -> Any:
    """The ``fields`` of a block parsed by pyarrow, or None when it is not plain.

    ``lines``: also the line of each row, the stdlib reader's (where its record
    ends): ``(columns, lines)``."""
    if before == 0 and block.startswith(BOM):
        block = block[3:]
    ends = plain_records(block, delimiter)
    if ends is None or not valid_utf8(block):
        return None
    a = np.frombuffer(block, np.uint8)
    starts, stops = _records(a, ends)
    body = block
    if before == 0:  # the header record, read by the stdlib reader already
        if not starts.size or starts[0] != 0:
            return None
        body = block[stops[0] + 1:]
        starts, stops = starts[1:], stops[1:]
    if body.startswith(BOM):  # pyarrow would drop it, the stdlib keeps it
        return None
    if not starts.size:
        cols = {f: empty_strings() for f in fields}
    else:
        table = _parse(body, delimiter, header, fields)
        if table is None or table.num_rows != starts.size:
            return None
        cols = {}
        for f in fields:
            col = table.column(f)
            if col.null_count:
                return None
            cols[f] = col.combine_chunks()
    if not lines:
        return cols
    newlines = np.flatnonzero(a == _LF)
    return cols, (before + 1 + np.searchsorted(newlines, stops)).tolist()


def csv_table(path: str, fmt: str, limit: int | None, progress: Any,
              block_bytes: int) -> tuple[dict, list[int]] | None:
    """A whole CSV or TSV file as columns of str and the line of each row, read
    by pyarrow; None when a block is not plain (the caller then reads the file
    with the stdlib reader, which also raises the errors)."""
    delimiter = "," if fmt == "csv" else "\t"
    src = open_records(path, fmt, max_line_bytes=limit)
    header = list(src.columns or ())
    src.close(False)
    cols: dict[str, list] = {h: [] for h in header}
    rows: list[int] = []
    blocks = Blocks(path, limit, block_bytes)
    bar = make_progress(progress, os.path.getsize(path), "read", unit="B")
    records, parsed = _parsed_records(
        blocks, lambda block, before: _arrow_block(block, before, delimiter, header, header,
                                                   lines=True))
    try:
        for (_, _, consumed), part in parsed:
            if part is None:
                return None
            records.done()
            for h in header:
                cols[h] += part[0][h].to_pylist()
            rows += part[1]
            bar.update(consumed)  # a block taken (one handed back is not reported)
        bar.update(blocks.consumed())
    finally:
        parsed.close()
        blocks.close()
        bar.close()
    return cols, rows


def _parse(block: bytes, delimiter: str, header: list[str], fields: list[str]) -> Any:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    try:
        return pcsv.read_csv(
            arrow_reader(block),
            read_options=pcsv.ReadOptions(column_names=header, use_threads=True,
                                          block_size=len(block) + 1),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char='"',
                                            double_quote=True, escape_char=False,
                                            newlines_in_values=True, ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(
                column_types={f: pa.large_string() for f in fields}, include_columns=fields,
                strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowException, ValueError):
        return None
