"""Read a corpus bigger than memory as chunks of rows, in a fixed global order.

A *source* is one file or a directory of shards.  Files are JSONL (``.jsonl``,
``.ndjson``), CSV/TSV (``.csv``, ``.tsv``), Parquet (``.parquet``, ``.pq``) or
plain text with one sample per line (``.txt``, ``.text``; the field is called
``"text"``) or DailyDialog (a ``.txt`` whose first non-empty line holds
``__eou__``: one dialogue a line, cut into ``context``/``response`` samples,
the rule of :func:`overlap._lines.text_file_kind` that every reader follows);
JSONL, CSV/TSV and text may be gzip-compressed (``.gz``).  A line longer than
``max_line_bytes`` (default 64 MiB) is refused with its file and line before
it is held in memory, and a source that gives no row at all is an error.  A
directory is read shard by shard in sorted file-name order, skipping files
whose format cannot be told from the name; rows are numbered globally in that
order, starting at 0.

Memory is bounded by one chunk (``chunk_rows`` rows of the requested fields),
plus one Parquet record batch: nothing else of a shard is kept.  Only the
standard library is needed, except ``pyarrow`` for Parquet (imported when a
Parquet shard is read).
"""

from __future__ import annotations

import csv
import importlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ._lines import (EOU, bounded_lines, check_path_name, decode_line, json_line,
                     open_binary, text_file_kind)
from ._validation import check_int, type_name

__all__ = ["Chunk", "STREAM_FORMATS", "shard_paths", "source_size", "read_chunks"]

#: Formats :func:`read_chunks` understands.
STREAM_FORMATS = ("jsonl", "csv", "tsv", "parquet", "text", "dailydialog")

_EXT = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv",
    ".parquet": "parquet", ".pq": "parquet", ".txt": "text", ".text": "text",
}
_TEXT_FIELD = "text"


@dataclass(frozen=True)
class Chunk:
    """Consecutive rows of one shard.

    Attributes
    ----------
    columns : dict of str to list of str
        The requested fields, each ``n_rows`` long.
    first_row : int
        Global number of the first row (over all shards, in reading order).
    path : str
        The shard the rows come from.
    shard_row : int
        Number of the first row within its shard.
    nbytes : int
        Bytes of the shard file consumed since the previous chunk (compressed
        bytes for ``.gz``; for Parquet, the file size pro rata of rows).
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
    name = path[:-3] if path.endswith(".gz") else path
    return _EXT.get(os.path.splitext(name)[1].lower())


def shard_format(path: str, fmt: str | None) -> str:
    """The format a shard is read as: a ``.txt`` holding ``__eou__`` is DailyDialog."""
    f = _format_of(path, fmt)
    if fmt is None and f == "text" and os.path.splitext(
            path[:-3] if path.endswith(".gz") else path)[1].lower() == ".txt":
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
                    f"({', '.join(sorted(_EXT))}, optionally .gz)"
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


class _CountingLines:
    """Decoded lines of a (possibly gzip) file, counting the raw bytes consumed.

    Lines are read with a bounded ``readline``: one longer than
    ``max_line_bytes`` is an error naming file and line, never a huge string.
    """

    def __init__(self, path: str, max_line_bytes: int | None = None) -> None:
        self.path = path
        self.stream = open_binary(path)
        self.raw = getattr(self.stream, "fileobj", None) or self.stream
        self.limit = max_line_bytes
        self.line = 0
        self.mark = 0
        self.last_raw = b""

    def consumed(self) -> int:
        """Raw bytes read since the previous call."""
        pos = self.raw.tell()
        done, self.mark = pos - self.mark, pos
        return done

    def __iter__(self) -> Iterator[str]:
        for b in bounded_lines(self.stream, self.path, self.limit):
            self.line += 1
            self.last_raw = b
            yield decode_line(b, self.path, self.line)

    def close(self) -> None:
        self.stream.close()
        self.raw.close()


def _rows_jsonl(src: _CountingLines, fields: list[str]) -> Iterator[tuple]:
    for text in src:
        if not text.strip():
            continue
        obj = json_line(src.last_raw, text, src.path, src.line)
        if not isinstance(obj, dict):
            raise ValueError(f"{src.path}:{src.line}: expected a JSON object, got "
                             f"{type(obj).__name__}")
        row = []
        for f in fields:
            if f not in obj:
                raise ValueError(f"{src.path}:{src.line}: no field {f!r} "
                                 f"(has {', '.join(map(repr, obj)) or 'none'})")
            v = obj[f]
            if not isinstance(v, str):
                raise ValueError(f"{src.path}:{src.line}: field {f!r} must be a string, got "
                                 f"{type(v).__name__}")
            row.append(v)
        yield tuple(row)


def _rows_text(src: _CountingLines, fields: list[str]) -> Iterator[tuple]:
    if fields != [_TEXT_FIELD]:
        raise ValueError(f"{src.path}: a text file has one field, {_TEXT_FIELD!r}; "
                         f"got fields={fields!r}")
    for text in src:
        yield (text.rstrip("\r\n"),)


def _rows_dailydialog(src: _CountingLines, fields: list[str], turns: int) -> Iterator[tuple]:
    """(context, response) samples of every dialogue line, as ``make_samples`` cuts them."""
    bad = [f for f in fields if f not in ("context", "response")]
    if bad:
        raise ValueError(f"{src.path}: a DailyDialog file has fields context and response, "
                         f"not {', '.join(bad)}")
    for text in src:
        if src.line == 1 and text.startswith("\ufeff"):
            text = text[1:]
        for part in text.replace("\r\n", "\n").split("\r"):
            if not part.strip():
                continue
            utts = [u.strip() for u in part.split(EOU) if u.strip()]
            if not utts:
                raise ValueError(f"{src.path}:{src.line}: no utterance on this line")
            for t in range(1, len(utts)):
                sample = {"context": " ".join(utts[max(0, t - turns):t]), "response": utts[t]}
                yield tuple(sample[f] for f in fields)


def _rows_csv(src: _CountingLines, fields: list[str], delimiter: str) -> Iterator[tuple]:
    reader = csv.reader(src, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    missing = [f for f in fields if f not in header]
    if missing:
        raise ValueError(f"{src.path}:1: no column {missing[0]!r} (has {', '.join(header)})")
    cols = [header.index(f) for f in fields]
    for rec in reader:
        if not rec:
            continue
        if len(rec) != len(header):
            raise ValueError(f"{src.path}:{src.line}: {len(rec)} columns, the header has "
                             f"{len(header)}")
        yield tuple(rec[c] for c in cols)


def _chunks_lines(path, fmt, fields, chunk_rows, first_row, turns=1,
                  max_line_bytes=None) -> Iterator[Chunk]:
    src = _CountingLines(path, max_line_bytes)
    try:
        if fmt == "jsonl":
            rows = _rows_jsonl(src, fields)
        elif fmt == "text":
            rows = _rows_text(src, fields)
        elif fmt == "dailydialog":
            rows = _rows_dailydialog(src, fields, turns)
        else:
            rows = _rows_csv(src, fields, "," if fmt == "csv" else "\t")
        buf: list[tuple] = []
        shard_row = 0
        for row in rows:
            buf.append(row)
            if len(buf) == chunk_rows:
                yield _make(buf, fields, first_row + shard_row, path, shard_row, src.consumed())
                shard_row += len(buf)
                buf = []
        if buf or shard_row == 0:
            yield _make(buf, fields, first_row + shard_row, path, shard_row, src.consumed())
    finally:
        src.close()


def _make(buf, fields, first_row, path, shard_row, nbytes) -> Chunk:
    cols = {f: [r[k] for r in buf] for k, f in enumerate(fields)}
    return Chunk(cols, first_row, path, shard_row, nbytes)


def _chunks_parquet(path, fields, chunk_rows, first_row) -> Iterator[Chunk]:
    try:
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise ImportError(
            f"reading {path} needs pyarrow, which is not installed: "
            "pip install 'overlap-metrics[parquet]'"
        ) from None
    pf = pq.ParquetFile(path)
    names = pf.schema_arrow.names
    missing = [f for f in fields if f not in names]
    if missing:
        raise ValueError(f"{path}: no column {missing[0]!r} (has {', '.join(names)})")
    total = max(pf.metadata.num_rows, 1)
    size = os.path.getsize(path)
    shard_row = done_bytes = 0
    for batch in pf.iter_batches(batch_size=chunk_rows, columns=fields):
        cols = {}
        for f in fields:
            values = batch.column(f).to_pylist()
            for i, v in enumerate(values):
                if not isinstance(v, str):
                    raise ValueError(f"{path}: row {shard_row + i}: column {f!r} must hold "
                                     f"strings, got {type(v).__name__}")
            cols[f] = values
        n = batch.num_rows
        upto = size * (shard_row + n) // total
        yield Chunk(cols, first_row + shard_row, path, shard_row, upto - done_bytes)
        done_bytes = upto
        shard_row += n
    if shard_row == 0:
        yield Chunk({f: [] for f in fields}, first_row, path, 0, size)


def read_chunks(
    source,
    fields: Sequence[str] | str | None = None,
    *,
    fmt: str | None = None,
    chunk_rows: int = 65536,
    turns: int = 1,
    max_line_bytes: int | None = None,
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
        Longest line read, after gzip inflation (default 64 MiB,
        :data:`overlap._lines.MAX_LINE_BYTES`, or the limit set with
        :func:`overlap._lines.line_limit`); a longer one is a ValueError
        naming file and line.

    Yields
    ------
    Chunk
        In global row order; every shard yields at least one (possibly empty)
        chunk, so byte progress reaches the total.

    Raises
    ------
    ValueError
        Bad input (with file and line), or a source that gives no row at all.
    """
    if fields is None:
        fields = [_TEXT_FIELD]
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
        f = shard_format(path, fmt)
        if f == "parquet":
            gen = _chunks_parquet(path, fields, chunk_rows, first_row)
        else:
            gen = _chunks_lines(path, f, fields, chunk_rows, first_row, turns, max_line_bytes)
        for chunk in gen:
            yield chunk
            first_row += chunk.n_rows
    if first_row == 0:
        what = paths[0] if len(paths) == 1 else f"{len(paths)} shard files"
        raise ValueError(f"{what}: no rows (0 samples read)")
