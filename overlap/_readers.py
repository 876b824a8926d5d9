"""The one reading layer: a reader per file format, and one set of errors.

Every path that reads a sample file (the in-memory tables of
:mod:`overlap.pipeline.tables`, the chunks of :mod:`overlap.stream_readers`)
goes through :func:`open_records`, so a bad file gets the same error whichever
reads it: the file, the line (or the row, for Parquet) and what was wrong.

A format's reader lives in :data:`READERS`: a function ``reader(path, turns,
max_line_bytes, progress) -> Records`` that reads the file incrementally (one
line, or one Parquet record batch, at a time).  Records are dicts of column to
value, numbered by line (row for Parquet); :func:`checked_rows` picks the
compared fields out of them, checking each.  A new format is one function and
one entry in :data:`READERS`.

Line formats (CSV, TSV, JSONL, text, DailyDialog) may be compressed: gzip
(``.gz``) or Zstandard (``.zst``, :func:`overlap._lines.open_binary`).  Lines are read with a bounded ``readline`` (:mod:`overlap._lines`,
also the one rule that tells a DailyDialog ``.txt`` from plain text).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from ._lines import EOU, bounded_lines, decode_line, json_line, open_binary
from ._optional import require
from ._progress import LineProgress, ProgressArg, make_progress
from ._validation import type_name

#: The format a file name's extension says (``.txt``: plain text, or DailyDialog
#: by :func:`overlap._lines.text_file_kind`); line formats may end in ``.gz`` or
#: ``.zst`` (:func:`overlap._lines.uncompressed_name`).
EXTENSIONS = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv",
    ".parquet": "parquet", ".pq": "parquet", ".txt": "text", ".text": "text",
}

#: The field of a plain text file (one sample per line).
TEXT_FIELD = "text"
#: The fields of the samples cut from a DailyDialog file.
DIALOGUE_FIELDS = ("context", "response")

#: Longest CSV field read (the csv module's default, 131,072 characters, is far
#: shorter than the texts this library writes; a C long bounds it).
CSV_FIELD_LIMIT = 2**31 - 1
#: CSV rows parsed at a time.
CSV_BATCH = 1024


# ------------------------------------------------------------------ errors
def no_column(where: str, name: str, have: Sequence[str]) -> ValueError:
    return ValueError(f"{where}: no column {name!r} (columns: {', '.join(have) or 'none'}); "
                      "name the compared columns with --fields (fields= in Python)")


def no_field(where: str, name: str, have: Sequence[str]) -> ValueError:
    return ValueError(f"{where}: no field {name!r} "
                      f"(has {', '.join(map(repr, have)) or 'none'})")


def not_a_string(where: str, name: str, value: Any) -> ValueError:
    return ValueError(f"{where}: field {name!r} must be a string, got {type_name(value)}")


def check_fields_of(path: str, fmt: str, fields: Sequence[str]) -> None:
    """Fields a text or DailyDialog file cannot hold are refused before reading."""
    if fmt == "text" and list(fields) != [TEXT_FIELD]:
        raise ValueError(f"{path}: a text file has one field, {TEXT_FIELD!r}; "
                         f"got fields={list(fields)!r}")
    if fmt == "dailydialog":
        bad = [f for f in fields if f not in DIALOGUE_FIELDS]
        if bad:
            raise ValueError(f"{path}: a DailyDialog file has fields context and response, "
                             f"not {', '.join(bad)}")


# ------------------------------------------------------------------ sources
class Records:
    """The records of one file, read incrementally.

    ``columns``: the column names when the format knows them before the rows
    (None for JSONL).  Iterating yields ``(n, record)``: ``n`` the line (row
    for Parquet) and ``record`` a dict of column to value.  :meth:`at` names
    a place (``path:n`` or ``path: row n``), :meth:`consumed` the bytes of the
    file read since its previous call, and :meth:`close` ends the reading
    (reporting the whole file read to the progress when ``complete``).
    """

    def __init__(self, path: str, rows: Iterator[tuple[int, dict]],
                 columns: list[str] | None, consumed: Callable[[], int],
                 close: Callable[[bool], None], by_row: bool = False) -> None:
        self.path, self.columns, self.by_row = path, columns, by_row
        self._rows, self._consumed, self._close = rows, consumed, close

    def __iter__(self) -> Iterator[tuple[int, dict]]:
        return self._rows

    def at(self, n: int) -> str:
        return f"{self.path}: row {n}" if self.by_row else f"{self.path}:{n}"

    @property
    def header_at(self) -> str:
        """Where the column names are: ``path:1``, or the Parquet file."""
        return self.path if self.by_row else f"{self.path}:1"

    def consumed(self) -> int:
        return self._consumed()

    def close(self, complete: bool = True) -> None:
        self._close(complete)


def _open_file_size(f: Any) -> int:
    """Bytes of the open file ``f``: a Python file, or a pyarrow ``OSFile`` (a
    ``.zst`` file's: its ``size()``, as its ``fileno()`` fails before pyarrow 25)."""
    size = getattr(f, "size", None)
    if callable(size):
        return int(size())
    return os.fstat(f.fileno()).st_size


class Lines:
    """Decoded lines of a (possibly gzip) file, numbered from 1 (a BOM dropped).

    Each line is at most ``max_line_bytes`` bytes (else an error naming file
    and line); the progress of the reading is in bytes of the file on disk.
    ``block``: read these bytes instead, whose first line is line
    ``first_line + 1`` of ``path`` (the arrow reader hands a block it cannot
    take to the stdlib reader this way, so rows and errors are the same), or
    the lines of ``stream`` (the rest of the file from such a block on).
    """

    def __init__(self, path: str, max_line_bytes: int | None = None,
                 progress: ProgressArg = False, *, block: bytes | None = None,
                 first_line: int = 0, stream: IO[bytes] | None = None) -> None:
        self.path, self.limit = path, max_line_bytes
        if block is not None or stream is not None:
            # lines of a block cut from the file, or of the rest of the file from a
            # block on (``stream``): the arrow reader's hand-over
            self.stream = self.raw = io.BytesIO(block or b"") if stream is None else stream
            self.read = LineProgress(False, self.raw, 0, "read")
        else:
            self.stream = open_binary(path)
            self.raw = getattr(self.stream, "fileobj", None) or self.stream
            try:
                size = _open_file_size(self.raw)
                self.read = LineProgress(progress, self.raw, size, "read")
            except BaseException:
                self.stream.close()
                self.raw.close()
                raise
        self.line = first_line
        self.mark = 0
        self.last_raw = b""

    def consumed(self) -> int:
        """Bytes of the file read since the previous call."""
        pos = self.raw.tell()
        done, self.mark = pos - self.mark, pos
        return done

    def raw_lines(self) -> Iterator[bytes]:
        """The lines undecoded (:attr:`line` counts them)."""
        mask = LineProgress.MASK
        for raw in bounded_lines(self.stream, self.path, self.limit, self.line):
            self.line += 1
            if not self.line & mask:
                self.read.tick()
            self.last_raw = raw
            yield raw

    def __iter__(self) -> Iterator[str]:
        for raw in self.raw_lines():
            yield decode_line(raw, self.path, self.line, first=self.line == 1)

    def close(self, complete: bool = True) -> None:
        try:
            self.read.close(complete)
        finally:
            self.stream.close()
            self.raw.close()

    def records(self, rows: Iterator[tuple[int, dict]],
                columns: list[str] | None = None) -> Records:
        return Records(self.path, rows, columns, self.consumed, self.close)


@contextlib.contextmanager
def long_csv_fields() -> Iterator[None]:
    """Lift the csv module's field-size limit while reading, then restore it."""
    old = csv.field_size_limit()
    csv.field_size_limit(max(old, CSV_FIELD_LIMIT))
    try:
        yield
    finally:
        csv.field_size_limit(old)


# ------------------------------------------------------------------ readers
def _read_csv(path: str, delimiter: str, max_line_bytes: int | None,
              progress: ProgressArg) -> Records:
    return csv_records(Lines(path, max_line_bytes, progress), delimiter)


def csv_records(src: Lines, delimiter: str, header: list[str] | None = None) -> Records:
    """The records of CSV (``delimiter`` ``","``) or TSV (``"\\t"``) lines.

    ``header``: the column names when the lines of ``src`` start after the
    header record (the arrow reader hands the rest of a file to this reader
    that way); else the first record is the header.
    """
    path = src.path
    kind = "CSV" if delimiter == "," else "TSV"
    reader = csv.reader(src, delimiter=delimiter)
    if header is None:
        try:
            with long_csv_fields():
                header = next(reader, None)
        except csv.Error as e:
            src.close(False)
            raise ValueError(f"{path}:{src.line or 1}: bad {kind}: {e}") from None
        except BaseException:
            src.close(False)
            raise
        if header is None:
            src.close(False)
            raise ValueError(f"{path}:1: empty file (a {kind} needs a header line)")
        if len(set(header)) != len(header):
            src.close(False)
            raise ValueError(f"{path}:1: duplicate column names in the header")

    width = len(header)
    names = list(header)

    def rows() -> Iterator[tuple[int, dict]]:
        batch: list[tuple[int, list[str]]] = []
        while True:
            # CSV_BATCH rows at a time under the lifted limit, which is not held
            # between batches (other readers run meanwhile)
            bad = None
            try:
                with long_csv_fields():
                    for rec in reader:
                        if rec:
                            batch.append((src.line, rec))
                            if len(batch) == CSV_BATCH:
                                break
            except csv.Error as e:
                bad = ValueError(f"{path}:{src.line}: bad {kind}: {e}")
            for n, rec in batch:  # the rows before a bad one first
                if len(rec) != width:
                    raise ValueError(f"{path}:{n}: {len(rec)} fields, the header has {width}")
                yield n, dict(zip(names, rec))
            if bad is not None:
                raise bad
            if not batch:
                return
            batch.clear()

    return src.records(rows(), list(names))


def read_csv(path: str, turns: int = 1, max_line_bytes: int | None = None,
             progress: ProgressArg = False) -> Records:
    """CSV with a header line (fields of any length)."""
    return _read_csv(path, ",", max_line_bytes, progress)


def read_tsv(path: str, turns: int = 1, max_line_bytes: int | None = None,
             progress: ProgressArg = False) -> Records:
    """TSV with a header line (fields of any length)."""
    return _read_csv(path, "\t", max_line_bytes, progress)


def read_jsonl(path: str, turns: int = 1, max_line_bytes: int | None = None,
               progress: ProgressArg = False) -> Records:
    """One JSON object a line (blank lines skipped)."""
    return jsonl_records(Lines(path, max_line_bytes, progress))


def jsonl_records(src: Lines) -> Records:
    """The records of JSONL lines."""
    path = src.path

    def rows() -> Iterator[tuple[int, dict]]:
        for text in src:
            if not text.strip():
                continue
            obj = json_line(src.last_raw, text, path, src.line)
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{src.line}: each line must be a JSON object, got "
                                 f"{type_name(obj)}")
            yield src.line, obj

    return src.records(rows())


def read_text(path: str, turns: int = 1, max_line_bytes: int | None = None,
              progress: ProgressArg = False) -> Records:
    """One sample a line (every line, blank ones too; the newline dropped): field ``text``."""
    return text_records(Lines(path, max_line_bytes, progress))


def text_records(src: Lines) -> Records:
    """The records of plain text lines (field ``text``)."""

    def rows() -> Iterator[tuple[int, dict]]:
        for text in src:
            yield src.line, {TEXT_FIELD: text.rstrip("\r\n")}

    return src.records(rows(), [TEXT_FIELD])


def parse_dialogue(line: str) -> list[str]:
    """Split one DailyDialog line into stripped utterances (empty ones dropped)."""
    return [u.strip() for u in line.split(EOU) if u.strip()]


def dialogue_lines(src: Lines) -> Iterator[tuple[int, list[str]]]:
    """``(line, utterances)`` of every dialogue of a DailyDialog file.

    Universal newlines: ``\\r\\n``, ``\\n`` and a lone ``\\r`` each end a line
    (and count as one); blank lines are skipped, a line with no utterance is
    an error.
    """
    lineno = 0
    for raw in src.raw_lines():
        for part in raw.replace(b"\r\n", b"\n").split(b"\r"):
            if not part:
                continue
            lineno += 1
            text = decode_line(part, src.path, lineno, first=lineno == 1)
            if not text.strip():
                continue
            utts = parse_dialogue(text)
            if not utts:
                raise ValueError(f"{src.path}:{lineno}: no utterance on this line")
            yield lineno, utts


def read_dailydialog(path: str, turns: int = 1, max_line_bytes: int | None = None,
                     progress: ProgressArg = False) -> Records:
    """The (context, response) samples of a DailyDialog file, numbered by the
    line of their dialogue: columns context, response, dialogue, turn (the
    context is the up to ``turns`` utterances before the response)."""
    src = Lines(path, max_line_bytes, progress)

    def rows() -> Iterator[tuple[int, dict]]:
        for d, (lineno, utts) in enumerate(dialogue_lines(src)):
            for t in range(1, len(utts)):
                yield lineno, {"context": " ".join(utts[max(0, t - turns):t]),
                               "response": utts[t], "dialogue": d, "turn": t}

    return src.records(rows(), [*DIALOGUE_FIELDS, "dialogue", "turn"])


#: Record batches of a Parquet file read at a time.
PARQUET_BATCH_ROWS = 65536


def read_parquet(path: str, turns: int = 1, max_line_bytes: int | None = None,
                 progress: ProgressArg = False, batch_rows: int = PARQUET_BATCH_ROWS,
                 columns: Sequence[str] | None = None) -> Records:
    """A Parquet file, one record batch at a time (``columns``: only those);
    rows numbered from 0.  Bytes read are the file size pro rata of rows."""
    pq = require("pyarrow.parquet", "dataframe", "reading Parquet")
    try:
        pf = pq.ParquetFile(path)
        names = list(pf.schema_arrow.names)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read Parquet: {e}") from None
    total = max(pf.metadata.num_rows, 1)
    size = os.path.getsize(path)
    bar = make_progress(progress, size, "read", unit="B")
    state = {"row": 0, "bytes": 0, "reported": 0}
    wanted = None if columns is None else [c for c in columns if c in names]

    def rows() -> Iterator[tuple[int, dict]]:
        try:
            for batch in pf.iter_batches(batch_size=batch_rows, columns=wanted):
                cols = batch.to_pydict()
                start = state["row"]
                n = batch.num_rows
                state["row"] = start + n
                upto = size * state["row"] // total
                bar.update(upto - state["reported"])
                state["reported"] = upto
                keys = list(cols)
                for i in range(n):
                    yield start + i, {k: cols[k][i] for k in keys}
            state["done"] = True
        except (OSError, ValueError) as e:
            if isinstance(e, ValueError) and str(e).startswith(f"{path}:"):
                raise
            raise ValueError(f"{path}: cannot read Parquet: {e}") from None

    def consumed() -> int:
        upto = size if state.get("done") else size * state["row"] // total
        done, state["bytes"] = upto - state["bytes"], upto
        return done

    def close(complete: bool) -> None:
        if complete and state["reported"] < size:
            bar.update(size - state["reported"])
        bar.close()

    return Records(path, rows(), names, consumed, close, by_row=True)


#: The reader of every format: ``reader(path, turns, max_line_bytes, progress)``.
READERS: dict[str, Callable[..., Records]] = {
    "csv": read_csv,
    "tsv": read_tsv,
    "jsonl": read_jsonl,
    "text": read_text,
    "dailydialog": read_dailydialog,
    "parquet": read_parquet,
}


def open_records(path: str, fmt: str, *, turns: int = 1, max_line_bytes: int | None = None,
                 progress: ProgressArg = False, fields: Sequence[str] | None = None,
                 only_fields: bool = False) -> Records:
    """The records of ``path`` read as ``fmt`` (one of :data:`READERS`).

    ``fields``: the columns that will be compared, refused up front when the
    format cannot hold them or the file's header lacks one.  ``only_fields``:
    the other columns are not needed (a Parquet file then reads only these).
    """
    if fields is not None:
        check_fields_of(path, fmt, fields)
    if fmt == "parquet" and only_fields and fields is not None:
        src = read_parquet(path, turns, max_line_bytes, progress, columns=fields)
    else:
        src = READERS[fmt](path, turns, max_line_bytes, progress)
    if fields is not None and src.columns is not None:
        missing = [f for f in fields if f not in src.columns]
        if missing:
            src.close(False)
            raise no_column(src.header_at, missing[0], src.columns)
    return src


def checked_rows(src: Records, fields: Sequence[str]) -> Iterator[tuple]:
    """The ``fields`` of every record of ``src``, each checked to be a string."""
    for n, rec in src:
        row = []
        for f in fields:
            try:
                v = rec[f]
            except KeyError:
                raise no_field(src.at(n), f, list(rec)) from None
            if not isinstance(v, str):
                raise not_a_string(src.at(n), f, v)
            row.append(v)
        yield tuple(row)
