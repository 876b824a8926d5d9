"""Column batches of a sample file: read by pyarrow in C++, or by the stdlib readers.

:func:`read_batches` yields the compared fields of a file as
:class:`Batch` objects (columns, rows, bytes of the file consumed), each
field checked to be a string in every row.  Two engines give the same rows:

``"python"``
    The stdlib readers of :mod:`overlap._readers` (one record a line, Python
    ``str`` values; the columns are lists).
``"arrow"``
    JSONL, plain text, CSV, TSV and Parquet read by pyarrow (``pyarrow.json``
    on blocks of whole lines, numpy on the newlines of a text block,
    ``pyarrow.csv`` on blocks of whole records (:mod:`overlap._arrow_csv`),
    Parquet record batches), handing back ``pyarrow.large_string`` arrays
    with no Python object per row.  DailyDialog is read by the stdlib reader.
``"auto"`` (default)
    ``"arrow"`` when pyarrow is installed, else ``"python"``.  A reader given
    no engine takes the one set by :func:`reader_engine` (the command line's
    ``--engine``), else the environment variable ``OVERLAP_READER``
    (``python`` or ``arrow``), else ``"auto"``.

Line files are cut into blocks of whole lines (:data:`BLOCK_BYTES`, grown
until a newline when a line is longer, up to the line limit).  The arrow
engine takes a block only when it can show the stdlib reader would give the
same rows: valid UTF-8, one JSON object on every line (pyarrow's row count
equals the line count, no two objects on a line, no BOM inside the file, no
nesting deep enough for Python's parser to refuse it), and every field a
string.  Any other block (a bad line, a blank line, a null, a number) is read
by the stdlib reader from the same bytes and line number: the rows are the
same, and a bad line raises the stdlib reader's error naming file and line.
A CSV or TSV record may span lines (a quoted newline), so a block that is not
plain CSV hands the rest of the file to the stdlib reader
(:mod:`overlap._arrow_csv`).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ._arrow_pool import reading_pool
from ._line_blocks import (BOM, PYTHON_BATCH, Batch, Blocks, arrow_reader, empty_strings,
                           from_rows, parse_workers, piece_sizes, record_batches, valid_utf8)
from ._line_scan import bom_after_newline, jsonl_block_facts
from ._optional import require
from ._ordered_map import map_in_order
from ._progress import make_progress
from ._readers import (Lines, Records, check_fields_of, checked_rows, jsonl_records, no_column,
                       open_records, text_records)

__all__ = ["Batch", "ENGINES", "ENGINE_VARIABLE", "BLOCK_BYTES", "read_batches", "choose_engine",
           "reader_engine"]

#: Reading engines (see the module notes).
ENGINES = ("auto", "arrow", "python")
#: Environment variable that picks the engine when none is passed.
ENGINE_VARIABLE = "OVERLAP_READER"
#: Formats the arrow engine reads itself.
ARROW_FORMATS = ("jsonl", "text", "parquet", "csv", "tsv")
#: Bytes of a line file read at a time (a block then ends at its last newline); 2 MiB:
#: larger blocks were no faster and raised the peak memory of a scan (16 MiB: +100 MB).
BLOCK_BYTES = 2 << 20
#: Whether pyarrow parses a whole-file read's JSONL blocks on its thread pool.
#: No: mimalloc keeps the pages a pool thread allocated resident after the
#: table is freed on another (``release_unused`` collects the calling
#: thread's only): 37 MB of ``overlap dedup``'s peak on a 101 MB file
#: (456-457 MB against 491-499 MB, three runs each), and reading that file
#: took no longer on two cores (0.62-0.80 s against 0.73-0.84 s).  The
#: blocks are parsed whole on the :func:`overlap._line_blocks.parse_workers` threads instead,
#: several at once, with pyarrow's default pool: those threads end with the
#: read, and ``dedup``'s peak on that file was 444-449 MB against 440 MB on
#: one thread (with arrays from ``reading_pool``, jemalloc's: 462-472 MB).
#: The chunked reader's arrays come from ``overlap._arrow_pool.reading_pool``.
WHOLE_FILE_THREADS = False
#: Parquet rows per record batch.
PARQUET_BATCH = 65536
#: Bytes of a Parquet file read at a time (``pyarrow.parquet.ParquetFile(buffer_size=)``).
PARQUET_READ_BUFFER = 1 << 20
#: A JSON line with this many ``[``/``{`` may nest too deeply for Python's parser:
#: such a block is read by the stdlib reader, which decides.
NESTING_GUARD = 200


def _have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


_ENGINE: contextvars.ContextVar[str | None] = contextvars.ContextVar("overlap_reader_engine",
                                                                  default=None)


@contextlib.contextmanager
def reader_engine(engine: str | None) -> Iterator[None]:
    """Within the block, files are read with ``engine`` when a reader is given
    none (the command line's ``--engine``; None: unchanged).  It comes before
    the environment variable :data:`ENGINE_VARIABLE`."""
    if engine is None:
        yield
        return
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    token = _ENGINE.set(engine)
    try:
        yield
    finally:
        _ENGINE.reset(token)


def choose_engine(engine: str | None, fmt: str) -> str:
    """``"arrow"`` or ``"python"``: the engine that reads a ``fmt`` file.

    ``engine`` when given, else the one set by :func:`reader_engine`, else the
    environment variable :data:`ENGINE_VARIABLE`, else ``"auto"``."""
    where = "engine"
    if engine is None:
        engine = _ENGINE.get()
    if engine is None:
        engine = os.environ.get(ENGINE_VARIABLE) or "auto"
        where = f"the environment variable {ENGINE_VARIABLE}"
    if engine not in ENGINES:
        raise ValueError(f"{where} must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "arrow":
        require("pyarrow", "dataframe", "the arrow reader (engine='arrow')")
    elif engine == "auto":
        engine = "arrow" if _have_pyarrow() else "python"
    if fmt not in ARROW_FORMATS:
        return "python"
    return engine


def read_batches(path: str, fmt: str, fields: Sequence[str], *, turns: int = 1,
                 max_line_bytes: int | None = None, engine: str | None = None,
                 block_bytes: int | None = None,
                 batch_rows: int = PYTHON_BATCH) -> Iterator[Batch]:
    """The ``fields`` of ``path`` (read as ``fmt``) in batches, every value a string.

    Both engines give the same rows and raise the same errors (file and line,
    or Parquet row).  ``batch_rows``: rows per batch of the stdlib reader
    (the arrow reader's batches are a block of lines or a Parquet record batch).  The generator closes the file when it ends or is closed.
    """
    fields = list(fields)
    block_bytes = BLOCK_BYTES if block_bytes is None else block_bytes
    how = choose_engine(engine, fmt)
    if how == "arrow" and fmt == "jsonl":
        return _line_batches(path, fields, max_line_bytes, block_bytes, _jsonl_block)
    if how == "arrow" and fmt == "text":
        check_fields_of(path, fmt, fields)
        return _line_batches(path, fields, max_line_bytes, block_bytes, _chunk_text_block)
    if how == "arrow" and fmt == "parquet":
        return _parquet_batches(path, fields)
    if how == "arrow" and fmt in ("csv", "tsv"):
        from ._arrow_csv import csv_batches
        return csv_batches(path, fmt, fields, max_line_bytes, block_bytes)
    return _python_batches(path, fmt, fields, turns, max_line_bytes, how == "arrow",
                           max(1, batch_rows))


# ------------------------------------------------------------------ stdlib engine
def _python_batches(path, fmt, fields, turns, limit, as_arrow, size) -> Iterator[Batch]:
    src = open_records(path, fmt, turns=turns, max_line_bytes=limit, fields=fields,
                       only_fields=True)
    return record_batches(src, fields, as_arrow, size)


# ------------------------------------------------------------------ line blocks
def _line_batches(path, fields, limit, block_bytes, parse) -> Iterator[Batch]:
    blocks = Blocks(path, limit, block_bytes)
    workers = parse_workers()

    def parsed(item):
        block, before, _ = item
        return parse(block, before, fields, alone=workers > 1)

    blocks_parsed = map_in_order(parsed, blocks.counted(), workers)
    try:
        any_rows = False
        for (block, before, consumed), cols in blocks_parsed:
            if cols is None:  # the stdlib reader on the same lines
                src = Lines(path, limit, block=block, first_line=before)
                recs = jsonl_records(src) if parse is _jsonl_block else text_records(src)
                rows = list(checked_rows(recs, fields))
                batch = from_rows(rows, fields, consumed, True)
            else:
                n = len(next(iter(cols.values())))
                batch = Batch(cols, n, consumed)
            any_rows = any_rows or batch.n_rows > 0
            yield batch
        if not any_rows:
            yield from_rows([], fields, blocks.consumed(), True)
    finally:
        blocks_parsed.close()  # waits for the blocks being parsed
        blocks.close()


def _jsonl_block(block: bytes, before: int, fields: list[str], alone: bool = False
                 ) -> dict | None:
    """The fields of a JSONL block read by pyarrow, or None when the stdlib must read it.

    ``alone``: parsed whole on this thread (other blocks are parsed on the
    other workers), not in pieces on pyarrow's threads."""
    import pyarrow as pa
    import pyarrow.json as pj

    if _bom_inside(block, before):
        return None  # Python refuses a BOM inside the file
    if not valid_utf8(block):
        return None
    newlines, openers, two_objects = jsonl_block_facts(block)
    lines = newlines + (not block.endswith(b"\n"))
    schema = pa.schema([(f, pa.large_string()) for f in fields])
    table = _read_json(block, pj.ParseOptions(explicit_schema=schema,
                                              unexpected_field_behavior="ignore"),
                       pieces=not alone, pool=reading_pool(), threads=not alone)
    if table is None:
        return None
    if table.num_rows != lines or two_objects:
        return None  # a blank line, or two objects on a line
    if _may_nest_deeply(block, lines, openers):  # Python's parser may refuse it
        return None
    cols = {}
    for f in fields:
        col = table.column(f)  # the pieces' arrays, as parsed (no copy)
        if col.null_count:
            return None
        cols[f] = col
    return cols


def _bom_inside(block: bytes, before: int) -> bool:
    """Whether a line of ``block`` other than the file's first starts with a BOM.

    Python's reader refuses it; pyarrow takes a BOM at the start of the
    piece it parses (a block in pieces puts a line there), so the block goes
    to the stdlib reader and its error."""
    return (bool(before) and block.startswith(BOM)) or bom_after_newline(block)


def _read_json(block: bytes, parse_options: Any, pieces: bool = True,
               pool: Any = None, threads: bool = True) -> Any:
    """pyarrow's JSON reader on ``block`` in pieces (:func:`piece_sizes`), or
    None when it refuses the block.  pyarrow takes a line that spans two
    pieces, not one that spans three (a long line with more pieces): when it
    refuses the pieces, the block is read again as one.

    Only with an explicit schema: when pyarrow infers the types, it reconciles
    the pieces' types (a number in one piece and a string in another came back
    as the string ``"3"``) where one piece is refused; ``pieces=False`` then.
    ``pool``: the pyarrow memory pool of the arrays (default pyarrow's).
    ``threads``: pyarrow parses the pieces on its thread pool.
    """
    import pyarrow as pa
    import pyarrow.json as pj

    for size in piece_sizes(len(block)) if pieces else [len(block) + 1]:
        try:
            return pj.read_json(arrow_reader(block, reuse=True),
                                read_options=pj.ReadOptions(use_threads=threads,
                                                            block_size=size),
                                parse_options=parse_options, memory_pool=pool)
        except (pa.ArrowException, ValueError):
            continue
    return None


def _may_nest_deeply(block: bytes, lines: int, openers: int) -> bool:
    """Whether a line of ``block`` may hold :data:`NESTING_GUARD` levels of nesting
    (``openers``: the block's ``[`` and ``{``).

    Sound only once every line is known to hold a JSON object (pyarrow's row
    count equals the line count): each line then holds one ``{`` at least, and
    the count beyond that bounds any one line's."""
    return (openers - (lines - 1) >= NESTING_GUARD
            and _max_openers(block) >= NESTING_GUARD)


def _max_openers(block: bytes) -> int:
    """Most ``[`` and ``{`` on one line of ``block`` (a bound of its nesting)."""
    a = np.frombuffer(block, np.uint8)
    line_of = np.cumsum(a == 10)
    opens = (a == ord("[")) | (a == ord("{"))
    return int(np.bincount(line_of[opens]).max()) if opens.any() else 0


def _text_block(block: bytes, before: int, fields: list[str], pool: Any = None) -> dict | None:
    """Every line of a text block as a string (trailing ``\\r``/``\\n`` dropped);
    ``pool``: the pyarrow memory pool of the strings (default pyarrow's)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    last_open = not block.endswith(b"\n")  # a last line with no newline (blocks are never empty)
    if not before and block.startswith(BOM):
        block = block[3:]
    if not valid_utf8(block):
        return None
    ends = np.flatnonzero(np.frombuffer(block, np.uint8) == 10) + 1
    if last_open:
        ends = np.r_[ends, len(block)]
    offsets = np.r_[np.int64(0), ends.astype(np.int64)]
    arr = pa.Array.from_buffers(pa.large_string(), len(ends),
                                [None, pa.py_buffer(offsets), pa.py_buffer(block)])
    return {fields[0]: pc.utf8_rtrim(arr, characters="\r\n", memory_pool=pool)}


def _chunk_text_block(block: bytes, before: int, fields: list[str], alone: bool = False
                      ) -> dict | None:
    """:func:`_text_block` of the chunked reader, its strings from :func:`reading_pool`."""
    return _text_block(block, before, fields, reading_pool())


# ------------------------------------------------------------------ Parquet
_STRING_TYPES = ("string", "large_string", "string_view")


def _parquet_batches(path: str, fields: list[str]) -> Iterator[Batch]:
    import pyarrow as pa
    pq = require("pyarrow.parquet", "dataframe", "reading Parquet")
    try:
        # the column chunks are read a buffer of PARQUET_READ_BUFFER at a time,
        # not a row group's chunk at once (pyarrow's pre_buffer): as fast, and
        # the 0.3 GB stream scan's peak memory fell from 430-490 to 312 MB
        pf = pq.ParquetFile(path, pre_buffer=False, buffer_size=PARQUET_READ_BUFFER)
        pooled = _pooled_reader(path, pf.metadata, reading_pool())
        if pooled is not None:
            pf.reader = pooled
        names = list(pf.schema_arrow.names)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read Parquet: {e}") from None
    missing = [f for f in fields if f not in names]
    if missing:
        raise no_column(path, missing[0], names)
    return _parquet_rows(pa, pf, path, fields)


def _pooled_reader(path: str, metadata: Any, pool: Any) -> Any:
    """pyarrow's Parquet reader over ``path`` allocating from ``pool``
    (:mod:`overlap._arrow_pool`), for ``ParquetFile.reader``.

    ``pyarrow.parquet.ParquetFile`` takes no memory pool; the reader it
    wraps (``pyarrow._parquet.ParquetReader``) does.  None where this
    pyarrow's reader takes none: the file is then read with the default pool,
    the same rows.
    """
    try:
        from pyarrow._parquet import ParquetReader

        reader = ParquetReader(memory_pool=pool)
        reader.open(path, metadata=metadata, pre_buffer=False, buffer_size=PARQUET_READ_BUFFER)
    except (ImportError, AttributeError, TypeError):
        return None
    return reader


def _parquet_rows(pa, pf, path, fields) -> Iterator[Batch]:
    size = os.path.getsize(path)
    total = max(pf.metadata.num_rows, 1)
    row, reported = 0, 0
    try:
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH, columns=fields):
            cols = {f: _string_column(batch.column(f)) for f in fields}
            if any(c is None for c in cols.values()):  # the stdlib checks name the row
                data = batch.to_pydict()
                recs = Records(path, ((row + i, {f: data[f][i] for f in fields})
                                      for i in range(batch.num_rows)),
                               list(fields), lambda: 0, lambda c: None, by_row=True)
                rows = list(checked_rows(recs, fields))
                cols = {f: pa.array([r[k] for r in rows], pa.large_string())
                        for k, f in enumerate(fields)}
            row += batch.num_rows
            upto = size * row // total
            yield Batch(cols, batch.num_rows, upto - reported)
            reported = upto
        yield Batch({f: empty_strings() for f in fields}, 0, size - reported)
    except (OSError, ValueError) as e:
        if isinstance(e, ValueError) and str(e).startswith(f"{path}:"):
            raise
        raise ValueError(f"{path}: cannot read Parquet: {e}") from None


def _string_column(col) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    if pa.types.is_dictionary(t) and str(t.value_type) in _STRING_TYPES:
        # the values at the indices (a null index gives a null); not the
        # dictionary_decode method, which imported pandas before pyarrow 12
        col = pc.take(col.dictionary, col.indices)
        t = col.type
    if str(t) not in _STRING_TYPES or col.null_count:
        return None
    # new offsets; the strings' bytes are shared (pc.cast: the cast method
    # imported pandas before pyarrow 12)
    return pc.cast(col, pa.large_string())


# ------------------------------------------------------------------ whole files
_TABLE_TYPES = ("string", "large_string", "int64", "bool")


def read_whole_table(path: str, fmt: str, fields: Sequence[str] | None = None,
                     max_line_bytes: int | None = None, engine: str | None = None,
                     progress: Any = False, arrow: bool = False
                     ) -> tuple[dict, Sequence[int]] | None:
    """A whole JSONL, text, CSV or TSV file as columns of Python values, read by pyarrow.

    Returns ``(columns, line of each row)``, the same as the stdlib reader's
    table, or None when the arrow reader is not used or cannot show that it
    is the same: then the caller reads the file with the stdlib reader (which
    also raises the errors).  A CSV or TSV file is taken when every block is
    plain CSV (:mod:`overlap._arrow_csv`).  A JSONL file is taken only when every block is
    plain (module notes), no value is null or missing, every column holds
    strings, integers or booleans, and ``fields`` are strings.  ``progress``:
    as the stdlib reader's, bytes of the file read (when the file is handed
    back, the caller's progress must ignore the stdlib reader's reports of
    bytes already reported: ``overlap.pipeline.tables`` does).  ``arrow``:
    each column an :class:`overlap._columns.ArrowColumn` over the blocks'
    arrays (a list where the blocks gave a column different types), with the
    same values (CSV and TSV columns stay lists).  The lines are a ``range``
    for JSONL and text (every row is one line).
    """
    if fmt not in ("jsonl", "text", "csv", "tsv") or choose_engine(engine, fmt) != "arrow":
        return None
    parts: dict[str, list] = {}  # column: the arrays of the blocks
    n_rows = 0
    size = os.path.getsize(path)
    # blocks of an eighth of the file (64 KiB to BLOCK_BYTES): progress along the way
    block_bytes = min(BLOCK_BYTES, max(1 << 16, size // 8))
    if fmt in ("csv", "tsv"):
        from ._arrow_csv import csv_table
        return csv_table(path, fmt, max_line_bytes, progress, block_bytes)
    blocks = Blocks(path, max_line_bytes, block_bytes)
    # several blocks at once on worker threads, each parsed whole (their arrays
    # from pyarrow's default pool: see WHOLE_FILE_THREADS)
    workers = parse_workers()

    def parsed(item):
        block, before, _ = item
        if fmt == "text":
            return _text_block(block, before, ["text"])
        return _jsonl_table_block(block, before, fields)

    bar = make_progress(progress, size, "read", unit="B")
    blocks_parsed = map_in_order(parsed, blocks.counted(), workers)
    try:
        for (_, _, consumed), part in blocks_parsed:
            if part is None:
                return None
            n = len(next(iter(part.values()))) if part else 0
            if n:
                if not n_rows:
                    parts = {k: [] for k in part}
                if list(part) != list(parts):  # a key missing from some rows
                    return None
                for k, v in part.items():
                    parts[k].append(v)
                n_rows += n
            bar.update(consumed)  # a block taken (one handed back is not reported)
        bar.update(blocks.consumed())
    finally:
        blocks_parsed.close()
        blocks.close()
        bar.close()
    if fmt == "text" and not n_rows:
        parts = {"text": []}
    cols = {k: _whole_column(v, arrow) for k, v in parts.items()}
    return cols, range(1, n_rows + 1)


def _whole_column(chunks: list, arrow: bool) -> Any:
    """One column from the arrays of its blocks: a list of Python values, or an
    ArrowColumn when ``arrow`` and every block gave the column the same type."""
    if arrow and len({str(c.type) for c in chunks}) == 1:
        import pyarrow as pa

        from ._columns import ArrowColumn

        return ArrowColumn(pa.chunked_array(chunks))
    out: list = []
    for c in chunks:
        out += c.to_pylist()
    return out


def _jsonl_table_block(block: bytes, before: int, fields) -> dict | None:
    import pyarrow as pa
    import pyarrow.json as pj

    if _bom_inside(block, before):
        return None
    if not valid_utf8(block):
        return None
    newlines, openers, two_objects = jsonl_block_facts(block)
    lines = newlines + (not block.endswith(b"\n"))
    # first the rows, with no column inferred (pyarrow's type inference overflows
    # its stack on a deeply nested value, so the nesting is checked before it).
    # Parsed on this thread (WHOLE_FILE_THREADS): the arrays of a whole file
    # are freed here, and a pool thread's mimalloc pages stay resident after
    rows = _read_json(block, pj.ParseOptions(explicit_schema=pa.schema([]),
                                             unexpected_field_behavior="ignore"),
                      threads=WHOLE_FILE_THREADS)
    if rows is None or rows.num_rows != lines or two_objects:
        return None
    if _may_nest_deeply(block, lines, openers):
        return None
    table = _read_json(block, pj.ParseOptions(), pieces=False,  # types inferred
                       threads=WHOLE_FILE_THREADS)
    if table is None or table.num_rows != lines:
        return None
    out = {}
    for name, col in zip(table.column_names, table.columns):
        if str(col.type) not in _TABLE_TYPES or col.null_count:
            return None
        out[name] = col.combine_chunks()
    for f in fields or ():
        if f not in out or str(out[f].type) not in ("string", "large_string"):
            return None
    return out
