"""Read a corpus bigger than memory as chunks of rows, in a fixed global order.

A *source* is one file or a directory of shards.  Files are JSONL (``.jsonl``,
``.ndjson``), CSV/TSV (``.csv``, ``.tsv``), Parquet (``.parquet``, ``.pq``) or
plain text with one sample per line (``.txt``, ``.text``; the field is called
``"text"``) or DailyDialog (a ``.txt`` whose first non-empty line holds
``__eou__``: one dialogue a line, cut into ``context``/``response`` samples,
the rule of :func:`overlap._lines.text_file_kind` that every reader follows);
JSONL, CSV/TSV and text may be compressed: gzip (``.gz``) or Zstandard (``.zst``,
inflated by pyarrow or the optional ``zstandard`` package).  A line longer than
``max_line_bytes`` (default 64 MiB) is refused with its file and line before
it is held in memory, and a source that gives no row at all is an error.  A
directory is read shard by shard in sorted file-name order, skipping files
whose format cannot be told from the name; rows are numbered globally in that
order, starting at 0.

Memory is bounded by one chunk (``chunk_rows`` rows of the requested fields),
plus one block of the file being read (2 MiB of lines, or one Parquet record
batch): nothing else of a shard is kept.  With pyarrow installed, JSONL, CSV, TSV, text
and Parquet are read by pyarrow in C++ and the chunk columns are Arrow
arrays (see :mod:`overlap._batches`); without it, the standard library reads
every format but Parquet, and the columns are lists of str.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ._lines import check_path_name, text_file_kind, uncompressed_name
from ._batches import PYTHON_BATCH, read_batches
from ._readers import EXTENSIONS, TEXT_FIELD
from ._validation import check_int, type_name

__all__ = ["Chunk", "STREAM_FORMATS", "shard_paths", "source_size", "read_chunks"]

#: Formats :func:`read_chunks` understands.
STREAM_FORMATS = ("jsonl", "csv", "tsv", "parquet", "text", "dailydialog")



@dataclass(frozen=True)
class Chunk:
    """Consecutive rows of one shard.

    Attributes
    ----------
    columns : dict of str to (list of str or pyarrow.ChunkedArray)
        The requested fields, each ``n_rows`` long, every value a string (no
        nulls).  A ``pyarrow.ChunkedArray`` of ``large_string`` when the
        arrow engine read the shard (the default when pyarrow is installed):
        the arrays pyarrow parsed, not copied into one; else a list of str;
        :meth:`overlap.TokenSets.from_texts` takes either without copying,
        and ``col.to_pylist()`` (Arrow) gives the str of a row.
    first_row : int
        Global number of the first row (over all shards, in reading order).
    path : str
        The shard the rows come from.
    shard_row : int
        Number of the first row within its shard.
    nbytes : int
        Bytes of the shard file consumed since the previous chunk (compressed
        bytes for ``.gz`` and ``.zst``; for Parquet, the file size pro rata of rows).
    """

    columns: dict
    first_row: int
    path: str
    shard_row: int
    nbytes: int

    @property
    def n_rows(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0


def _format_of(path: str, fmt: str | None) -> str | None:
    if fmt is not None:
        return fmt
    return EXTENSIONS.get(os.path.splitext(uncompressed_name(path))[1].lower())


def shard_format(path: str, fmt: str | None) -> str:
    """The format a shard is read as: a ``.txt`` holding ``__eou__`` is DailyDialog."""
    f = _format_of(path, fmt)
    if fmt is None and f == "text" and os.path.splitext(
            uncompressed_name(path))[1].lower() == ".txt":
        return text_file_kind(path)
    return f  # type: ignore[return-value]


def shard_paths(source: str | os.PathLike | Sequence, fmt: str | None = None) -> list[str]:
    """The files of ``source`` in reading order.

    Parameters
    ----------
    source : path or sequence of paths
        A file, a directory (its files with a known extension, sorted by name;
        not recursive) or an explicit list of files (read in the given order).
    fmt : str, optional
        One of :data:`STREAM_FORMATS` for every file, instead of the extension.
    """
    if fmt is not None and fmt not in STREAM_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(STREAM_FORMATS)}, got {fmt!r}")
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            files = sorted(
                os.path.join(path, f) for f in os.listdir(path)
                if os.path.isfile(os.path.join(path, f)) and _format_of(f, fmt) is not None
                and not f.startswith(".")
            )
            for f in files:
                check_path_name(f)
            if not files:
                raise ValueError(
                    f"source: {path} holds no file with a known extension "
                    f"({', '.join(sorted(EXTENSIONS))}, optionally .gz or .zst)"
                )
            return files
        items = [path]
    elif isinstance(source, Sequence) and not isinstance(source, bytes):
        items = [os.fspath(p) for p in source]
    else:
        raise TypeError(f"source must be a path or a list of paths, got {type_name(source)}")
    for p in items:
        check_path_name(p)
        if not os.path.isfile(p):
            raise ValueError(f"source: {p} is not a file or directory")
        if _format_of(p, fmt) is None:
            raise ValueError(
                f"{p}: cannot tell the format from the name; pass fmt= (one of "
                f"{', '.join(STREAM_FORMATS)})"
            )
    return items


def source_size(source, fmt: str | None = None) -> int:
    """Total bytes of the shard files (the denominator of a byte progress bar)."""
    return sum(os.path.getsize(p) for p in shard_paths(source, fmt))


def _chunks(path: str, fmt: str, fields: list[str], chunk_rows: int, first_row: int,
            turns: int, max_line_bytes: int | None, engine: str | None) -> Iterator[Chunk]:
    """The chunks of one shard: its batches (the reading layer's) cut into runs of
    ``chunk_rows``; a batch's bytes are shared among its chunks pro rata of rows.
    Bytes read after the last full chunk with no row (blank lines at the end) come
    in one more, empty, chunk, so that the bytes add up to the shard."""
    batches = read_batches(path, fmt, fields, turns=turns, max_line_bytes=max_line_bytes,
                           engine=engine, batch_rows=min(chunk_rows, PYTHON_BATCH))
    try:
        parts: list[dict] = []  # pieces of the chunk being filled
        held = nbytes = shard_row = 0
        for batch in batches:
            start, left_bytes = 0, batch.nbytes
            if batch.n_rows == 0:
                nbytes += left_bytes
                continue
            while start < batch.n_rows:
                take = min(chunk_rows - held, batch.n_rows - start)
                part_bytes = (left_bytes if start + take == batch.n_rows
                              else batch.nbytes * take // batch.n_rows)
                left_bytes -= part_bytes
                nbytes += part_bytes
                parts.append({f: _slice(c, start, take, batch.n_rows)
                              for f, c in batch.columns.items()})
                held += take
                start += take
                if held == chunk_rows:
                    yield _make(parts, fields, first_row + shard_row, path, shard_row, nbytes)
                    shard_row += held
                    parts, held, nbytes = [], 0, 0
        if held or shard_row == 0 or nbytes:
            yield _make(parts, fields, first_row + shard_row, path, shard_row, nbytes)
    finally:
        batches.close()


def _slice(col, start: int, n: int, total: int):
    if start == 0 and n == total:
        return col
    return col[start:start + n] if isinstance(col, list) else col.slice(start, n)


def _make(parts: list[dict], fields, first_row, path, shard_row, nbytes) -> Chunk:
    cols = {}
    for f in fields:
        pieces = [p[f] for p in parts]
        if not pieces:
            cols[f] = []
        elif isinstance(pieces[0], list):
            cols[f] = pieces[0] if len(pieces) == 1 else [t for piece in pieces for t in piece]
        else:
            cols[f] = _chunked(pieces)
    return Chunk(cols, first_row, path, shard_row, nbytes)


def _chunked(pieces: list):
    """The Arrow arrays (or chunked arrays) of a chunk's pieces as one
    ``ChunkedArray``: the arrays the reader made, not copied."""
    import pyarrow as pa
    arrays = [a for p in pieces for a in (p.chunks if isinstance(p, pa.ChunkedArray) else [p])]
    return pa.chunked_array(arrays, type=pa.large_string())


def read_chunks(
    source,
    fields: Sequence[str] | str | None = None,
    *,
    fmt: str | None = None,
    chunk_rows: int = 65536,
    turns: int = 1,
    max_line_bytes: int | None = None,
    engine: str | None = None,
) -> Iterator[Chunk]:
    """Yield the rows of ``source`` as :class:`Chunk` objects of at most ``chunk_rows``.

    Parameters
    ----------
    source : path or sequence of paths
        A file, a directory of shards or a list of files (see :func:`shard_paths`).
    fields : str or sequence of str, optional
        The columns (JSON keys) to read; default ``["text"]``.  Other columns
        are not kept.
    fmt : str, optional
        One of :data:`STREAM_FORMATS` for every file; default: from the names.
    chunk_rows : int, default 65536
        Rows per chunk (a chunk never spans two shards, so a shard's last
        chunk may be shorter).
    turns : int, default 1
        Context turns of the samples cut from DailyDialog shards.
    max_line_bytes : int, optional
        Longest line read, after inflation of a ``.gz`` or ``.zst`` file (default 64 MiB,
        :data:`overlap._lines.MAX_LINE_BYTES`, or the limit set with
        :func:`overlap._lines.line_limit`); a longer one is a ValueError
        naming file and line.
    engine : {"auto", "arrow", "python"}, optional
        How files are read (:mod:`overlap._batches`): ``"arrow"`` reads
        JSONL, CSV, TSV, text and Parquet with pyarrow and gives Arrow string columns;
        ``"python"`` reads with the standard library and gives lists of str.
        Both give the same rows and errors.  Default: the environment variable
        ``OVERLAP_READER`` (after :func:`overlap._batches.reader_engine`,
        the command line's ``--engine``), else ``"arrow"`` when pyarrow is installed.

    Yields
    ------
    Chunk
        In global row order; every shard yields at least one (possibly empty)
        chunk, so byte progress reaches the total (an empty chunk may also
        close a shard, carrying the bytes after its last full chunk).

    Raises
    ------
    ValueError
        Bad input (with file and line), or a source that gives no row at all.
    """
    if fields is None:
        fields = [TEXT_FIELD]
    elif isinstance(fields, str):
        fields = [fields]
    else:
        fields = list(fields)
        if not fields or not all(isinstance(f, str) for f in fields):
            raise TypeError("fields must be a str or a non-empty list of str")
        if len(set(fields)) != len(fields):
            raise ValueError(f"fields has repeats: {fields!r}")
    chunk_rows = check_int(chunk_rows, "chunk_rows", minimum=1)
    turns = check_int(turns, "turns", minimum=1)
    paths = shard_paths(source, fmt)
    first_row = 0
    for path in paths:
        gen = _chunks(path, shard_format(path, fmt), fields, chunk_rows, first_row, turns,
                      max_line_bytes, engine)
        for chunk in gen:
            yield chunk
            first_row += chunk.n_rows
    if first_row == 0:
        what = paths[0] if len(paths) == 1 else f"{len(paths)} shard files"
        raise ValueError(f"{what}: no rows (0 samples read)")
