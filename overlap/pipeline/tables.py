"""Read and write sample tables: DailyDialog text, CSV, TSV, JSONL, Parquet, DataFrames.

CSV, TSV and JSONL use only the standard library.  Parquet needs ``pyarrow``
(the ``dataframe`` extra); a pandas DataFrame, a Hugging Face
``datasets.Dataset`` or a plain dict of columns can be passed wherever a path
is accepted.  Optional packages are imported only when used, with a clear
message when missing.

A *table* here is a dict of column name to list of values, all equally long,
in column order.  Errors name the file and the line (or row).  Every writer
writes to a temporary name and renames the file when it is complete.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .._batches import read_whole_table
from .._columns import ArrowColumn
from .._lines import check_str, text_file_kind
from .._optional import MissingExtra, require
from .._progress import ProgressArg, check_progress, make_progress
from .._readers import EXTENSIONS, TEXT_FIELD, Records, no_column, no_field, not_a_string, open_records
from .._validation import check_int, type_name
from .output import atomic_write, temporary_name

__all__ = [
    "FORMATS",
    "MissingExtra",
    "infer_format",
    "write_rows",
    "infer_fields",
    "row_labels",
    "read_table",
    "write_table",
    "read_fields",
    "read_named_fields",
    "as_table",
    "table_from_dataframe",
    "table_from_dataset",
]

#: Formats understood by :func:`read_table` / :func:`read_fields`.
FORMATS = ("dailydialog", "text", "csv", "tsv", "jsonl", "parquet")

_DIALECTS = {"csv": csv.excel, "tsv": csv.excel_tab}




def infer_format(path: str | os.PathLike, fmt: str | None = None, *,
                 sniff: bool = True) -> str:
    """The format of ``path``: ``fmt`` when given, else from the file extension.

    A ``.txt`` file is ``"dailydialog"`` when its first non-empty line holds
    ``__eou__`` and ``"text"`` (one sample per line, field ``text``) otherwise
    (:func:`overlap._lines.text_file_kind`, the rule of every reader).  With
    ``sniff=False`` (output paths) or a ``.txt`` path that does not exist, a
    ``.txt`` is ``"text"``.

    Raises
    ------
    ValueError
        For an unknown ``fmt`` or an extension that says nothing.
    """
    if fmt is not None:
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        return fmt
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or path-like, got {type_name(path)}")
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in EXTENSIONS:
        raise ValueError(
            f"{os.fspath(path)}: cannot tell the format from the extension {ext!r}; "
            f"give one of {', '.join(FORMATS)}"
        )
    out = EXTENSIONS[ext]
    if ext == ".txt":
        p = os.fspath(path)
        return text_file_kind(p) if sniff and os.path.isfile(p) else "text"
    return out


# ------------------------------------------------------------------ readers
# Files are read by the reading layer (overlap._readers: one reader per format,
# the same errors as the streaming reader); this module collects the records.
@contextlib.contextmanager
def _read_progress(progress: ProgressArg, path: str) -> Iterator[ProgressArg]:
    """One byte progress for a file read by the arrow reader and, when that hands
    it back, by the stdlib reader from the start: only bytes beyond those
    already reported are reported again."""
    if progress is None or progress is False:
        yield False
        return
    bar = make_progress(progress, os.path.getsize(path), "read", unit="B")
    shown = 0

    def report(done: int, total: int) -> None:
        nonlocal shown
        if done > shown:
            bar.update(done - shown)
            shown = done

    try:
        yield report
    finally:
        bar.close()


def _collect_fast(src: Records, fmt: str, fields: Sequence[str] | None,
                  max_line_bytes: int | None, progress: ProgressArg, arrow: bool = False):
    """:func:`_collect`, or the same table read by pyarrow (JSONL and text files;
    see :func:`overlap._batches.read_whole_table`; ``arrow``: its columns kept
    as :class:`overlap._columns.ArrowColumn`)."""
    fast = read_whole_table(src.path, fmt, fields, max_line_bytes, progress=progress,
                            arrow=arrow)
    if fast is not None:
        src.close(False)  # its progress is not used: the fast reader reported
        return fast[0], fast[1], {}
    return _collect(src, fields)


def _collect(src: Records, fields: Sequence[str] | None = None
             ) -> tuple[dict[str, list], list[int], dict[str, tuple[int, list]]]:
    """Columns of every record of ``src``, the line (row) of each, and for a
    column some records lack (JSONL), the first such row and its keys.

    A key first seen on a later record gets None for the rows before (and for
    every record without it).  ``fields`` are checked on every record as the
    streaming reader checks them (present, a string).
    """
    fixed = src.columns is not None  # every record has these keys, in this order
    cols: dict[str, list] = {c: [] for c in src.columns} if fixed else {}  # type: ignore
    lists = list(cols.values())
    numbers: list[int] = []
    absent: dict[str, tuple[int, list]] = {}
    complete = False
    try:
        for n, rec in src:
            if fields is not None:
                for f in fields:
                    if f not in rec:
                        raise no_field(src.at(n), f, list(rec))
                    if not isinstance(rec[f], str):
                        raise not_a_string(src.at(n), f, rec[f])
            if fixed:
                numbers.append(n)
                for lst, v in zip(lists, rec.values()):
                    lst.append(v)
                continue
            if len(rec) != len(cols) or any(k not in cols for k in rec):
                for k in rec:
                    if k not in cols:
                        cols[k] = [None] * len(numbers)
                        if numbers:
                            absent.setdefault(k, (0, list(rec)))
                for k in cols:
                    if k not in rec:
                        absent.setdefault(k, (len(numbers), list(rec)))
            numbers.append(n)
            for k, lst in cols.items():
                lst.append(rec.get(k))
        complete = True
    finally:
        src.close(complete)
    return cols, numbers, absent


def read_table(path: str | os.PathLike, fmt: str | None = None, *,
               max_line_bytes: int | None = None,
               progress: ProgressArg = False) -> dict[str, list]:
    """Read a CSV or TSV (header line), JSONL (one object a line), text or Parquet file.

    Parameters
    ----------
    path : str or path-like
    fmt : {"csv", "tsv", "jsonl", "text", "parquet"}, optional
        Default: from the extension (a ``.txt`` without ``__eou__`` is
        ``"text"``: one sample per line, column ``text``).
    max_line_bytes : int, optional
        Longest line read (default 64 MiB, :data:`overlap._lines.MAX_LINE_BYTES`,
        or the limit set by :func:`overlap._lines.line_limit`); a longer line is
        a ValueError naming file and line.
    progress : bool or callable f(bytes_read, file_size), default False
        Progress of the reading in bytes, reported every 4,096 lines and at the
        end (``bytes_read`` then reaches ``file_size``); True shows a bar on
        stderr.

    Returns
    -------
    dict of str to list
        Columns in file order.  JSONL keys missing on a line read as None.
    """
    check_progress(progress)
    fmt = infer_format(path, fmt)
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise FileNotFoundError(f"{p}: no such file")
    if fmt == "dailydialog":
        raise ValueError(f"{p}: DailyDialog files hold dialogues, not a table; use read_fields")
    with _read_progress(progress, p) as cb:
        src = open_records(p, fmt, max_line_bytes=max_line_bytes, progress=cb)
        return _collect_fast(src, fmt, None, max_line_bytes, cb)[0]


def _is_dataset(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "datasets" and hasattr(obj, "column_names")


def table_from_dataframe(df: Any) -> dict[str, list]:
    """Columns of a pandas DataFrame as a table (dict of lists)."""
    if not (hasattr(df, "columns") and hasattr(df, "to_dict")) or _is_dataset(df):
        raise TypeError(f"df must be a pandas DataFrame, got {type_name(df)}")
    names = [str(c) for c in df.columns]
    if len(set(names)) != len(names):
        raise ValueError("DataFrame: duplicate column names")
    return {str(c): df[c].tolist() for c in df.columns}


def table_from_dataset(ds: Any) -> dict[str, list]:
    """Columns of a Hugging Face ``datasets.Dataset`` as a table (dict of lists).

    Only the ``Dataset`` object is touched: nothing is downloaded.
    """
    if not _is_dataset(ds) or not hasattr(ds, "to_dict"):
        raise TypeError(f"ds must be a datasets.Dataset, got {type_name(ds)}")
    return {str(c): list(v) for c, v in ds.to_dict().items()}


def _table_from_mapping(m: Mapping, name: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for k, v in m.items():
        if not isinstance(k, str):
            raise TypeError(f"{name}: column names must be str, got {type_name(k)}")
        if isinstance(v, (str, bytes)) or not isinstance(v, Sequence):
            raise TypeError(f"{name}[{k!r}] must be a list of values, got {type_name(v)}")
        out[k] = list(v)
    lengths = {len(v) for v in out.values()}
    if len(lengths) > 1:
        raise ValueError(f"{name}: columns must be equally long, got lengths {sorted(lengths)}")
    return out


def as_table(source: Any, name: str = "source") -> dict[str, list]:
    """A table (dict of column lists) from a DataFrame, a ``datasets.Dataset`` or a dict.

    Raises
    ------
    TypeError
        For anything else (paths are read by :func:`read_table`).
    """
    if isinstance(source, Mapping):
        return _table_from_mapping(source, name)
    if _is_dataset(source):
        return table_from_dataset(source)
    if hasattr(source, "columns") and hasattr(source, "to_dict"):
        return table_from_dataframe(source)
    raise TypeError(
        f"{name} must be a path, a dict of columns, a pandas DataFrame or a "
        f"datasets.Dataset, got {type_name(source)}"
    )


def row_labels(source: Any) -> list | None:
    """The row labels of an in-memory table, or None when they are the positions.

    A pandas DataFrame's index (so results join back with ``df.join``); for a
    ``datasets.Dataset`` made by ``filter``/``select``/``shuffle``, the row
    numbers in the dataset it came from.  Anything else: None (0..n-1).
    """
    if isinstance(source, (str, os.PathLike, Mapping)):
        return None
    if _is_dataset(source):
        try:
            ind = getattr(source, "_indices", None)
            return None if ind is None else [int(x) for x in ind.column(0).to_pylist()]
        except Exception:  # a datasets version without the mapping: positions
            return None
    index = getattr(source, "index", None)
    if hasattr(source, "columns") and index is not None and hasattr(index, "tolist"):
        return list(index.tolist())
    return None


def _parse_fields(fields: Sequence[str] | str) -> list[str]:
    if isinstance(fields, str):
        fields = [f.strip() for f in fields.split(",")]
    if isinstance(fields, (bytes, bytearray)) or not isinstance(fields, Sequence):
        raise TypeError(f"fields must be a sequence of column names, got {type_name(fields)}")
    out = list(fields)
    if not out or any(not isinstance(f, str) or not f for f in out):
        raise ValueError(f"fields must be non-empty column names, got {fields!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"fields must not repeat a column, got {out!r}")
    return out


#: Column names never taken for the text (ids, keys).
_ID_NAMES = frozenset({"id", "idx", "index", "uid", "uuid", "guid", "key"})


def _number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def _text_like(name: str, values: list) -> bool:
    """A column of strings that is not an id, a number or a category (language, label)."""
    low = name.lower()
    if low in _ID_NAMES or low.endswith(("_id", "_idx")):
        return False
    if not all(isinstance(v, str) for v in values):
        return False
    if values and all(_number(v) for v in values):
        return False
    n = len(values)
    return not (n >= 4 and 2 * len(set(values)) <= n)


def infer_fields(table: Mapping[str, list], where: str = "table") -> list[str]:
    """The compared columns of a table when none are named.

    ``context`` and ``response`` when both are present (dialogue samples);
    else ``text``; else the one *text-like* column: strings, not all numbers,
    not an id (``id``, ``*_id``...), not a category (half or more of the rows
    repeat a value, as in ``language`` or ``label``).  With none or several,
    a ValueError names ``--fields`` and lists the candidate columns.
    """
    if "context" in table and "response" in table:
        return ["context", "response"]
    if TEXT_FIELD in table:
        return [TEXT_FIELD]
    cands = [c for c, v in table.items()
             if not (isinstance(v, ArrowColumn) and not v.is_string) and _text_like(c, list(v))]
    if len(cands) == 1:
        return cands
    have = ", ".join(table) or "none"
    if cands:
        what = f"{len(cands)} text-like columns ({', '.join(cands)})"
    else:
        what = "no text-like column"
    raise ValueError(
        f"{where}: no context/response or text column and {what}; name the compared "
        f"column(s) with --fields (fields= in Python), e.g. --fields "
        f"{(cands or list(table) or ['text'])[0]} (columns: {have})"
    )


def read_fields(
    source: str | os.PathLike | Any,
    fields: Sequence[str] | str | None = None,
    fmt: str | None = None,
    *,
    turns: int = 1,
    max_line_bytes: int | None = None,
    progress: ProgressArg = False,
) -> tuple[list[list[str]], dict[str, list]]:
    """Read the text fields of a sample file (or DataFrame) for scanning.

    Parameters
    ----------
    source : path, dict of columns, pandas DataFrame or datasets.Dataset
        A DailyDialog file is cut into (context, response) samples with
        ``turns`` context turns; a plain text file gives one sample per line
        (column ``text``); other formats give their rows.
    fields : sequence of str or comma-separated str, optional
        The columns compared (the ratio is the minimum over them).  For
        DailyDialog files they must be ``context`` and/or ``response``.
        Default: :func:`infer_fields` (``context,response``, else ``text``,
        else the one text-like column).
    fmt : str, optional
        One of :data:`FORMATS`; default from the extension.
    turns : int, default 1
    max_line_bytes : int, optional
        Longest line of a file read (default 64 MiB); see :func:`read_table`.
    progress : bool or callable f(bytes_read, file_size), default False
        Progress of reading a file, in bytes (see :func:`read_table`); nothing
        is reported for an in-memory table.

    Returns
    -------
    columns : list of list of str
        One list per field.
    table : dict of str to list
        The whole table (DailyDialog: context, response, dialogue, turn).

    Raises
    ------
    ValueError
        A missing column, a value that is not a string (with its line), or a
        file that gives no sample.
    """
    names, cols, table = read_named_fields(source, fields, fmt, turns=turns,
                                           max_line_bytes=max_line_bytes, progress=progress)
    return cols, table


def read_named_fields(
    source: str | os.PathLike | Any,
    fields: Sequence[str] | str | None = None,
    fmt: str | None = None,
    *,
    turns: int = 1,
    max_line_bytes: int | None = None,
    progress: ProgressArg = False,
) -> tuple[list[str], list[list[str]], dict[str, list]]:
    """:func:`read_fields`, and the field names it used first (inferred when not given)."""
    return read_named_columns(source, fields, fmt, turns=turns, max_line_bytes=max_line_bytes,
                              progress=progress)


def read_named_columns(
    source: str | os.PathLike | Any,
    fields: Sequence[str] | str | None = None,
    fmt: str | None = None,
    *,
    turns: int = 1,
    max_line_bytes: int | None = None,
    progress: ProgressArg = False,
    arrow: bool = False,
) -> tuple[list[str], list[Any], dict[str, Any]]:
    """:func:`read_named_fields`; with ``arrow``, the columns of a JSONL or text
    file read by pyarrow stay in Arrow buffers (:class:`overlap._columns.ArrowColumn`,
    read-only sequences of the same values), for the command line's in-memory
    paths.  In-memory tables and the stdlib reader's give lists either way."""
    names = None if fields is None else _parse_fields(fields)
    turns = check_int(turns, "turns", minimum=1)
    check_progress(progress)
    src = None
    if not isinstance(source, (str, os.PathLike)):
        table = as_table(source)
        where = type(source).__name__
    else:
        fmt = infer_format(source, fmt)
        where = os.fspath(source)
        if not os.path.isfile(where):
            raise FileNotFoundError(f"{where}: no such file")
        with _read_progress(progress, where) as cb:
            src = open_records(where, fmt, turns=turns, max_line_bytes=max_line_bytes,
                               progress=cb, fields=names)
            # named fields are checked on every record as it is read
            table, lines, absent = _collect_fast(src, fmt, names, max_line_bytes, cb, arrow)
    read_checked = src is not None and names is not None  # every record, as it was read
    if names is None:
        names = infer_fields(table, where)
    for f in names:
        if f not in table:
            raise no_column(where, f, list(table))
        if read_checked:
            continue
        if src is None:  # an in-memory table: a str in every row
            for i, v in enumerate(table[f]):
                if not isinstance(v, str):
                    raise not_a_string(f"{where}: row {i}", f, v)
                check_str(v, where, f"row {i}", f"field {f!r}")
            continue
        # fields inferred from a file: checked now, with the errors of a named one
        col: Any = table[f]
        if isinstance(col, ArrowColumn) and col.is_string:
            continue  # the arrow reader takes string columns without nulls only
        bad = next((i for i, v in enumerate(table[f]) if not isinstance(v, str)), None)
        if bad is not None:
            if f in absent and absent[f][0] <= bad:
                row, keys = absent[f]
                raise no_field(src.at(lines[row]), f, keys)
            raise not_a_string(src.at(lines[bad]), f, table[f][bad])
    if src is not None and not len(table[names[0]]):
        what = ("no (context, response) sample: every dialogue has one utterance or none"
                if fmt == "dailydialog" else "no rows")
        raise ValueError(f"{where}: {what} (0 samples read)")
    return names, [table[f] for f in names], table


# ------------------------------------------------------------------ writers
#: formats :func:`write_rows` writes to a text stream (Parquet is binary)
STREAM_WRITE_FORMATS = ("csv", "tsv", "jsonl", "text")

#: Rows written between two progress reports of :func:`write_rows`.
_WRITE_EVERY = 4096


def _table_rows(table: Mapping[str, Sequence]) -> int:
    if not isinstance(table, dict):
        raise TypeError(f"table must be a dict of column lists, got {type_name(table)}")
    lengths = {len(v) for v in table.values()}
    if len(lengths) > 1:
        raise ValueError(f"table: columns must be equally long, got lengths {sorted(lengths)}")
    return lengths.pop() if lengths else 0


def _check_text_column(table: Mapping[str, Sequence], where: str) -> Sequence:
    if TEXT_FIELD not in table:
        raise ValueError(f"{where}: a text file holds the column {TEXT_FIELD!r}; the table "
                         f"has {', '.join(table) or 'none'}")
    lines = table[TEXT_FIELD]
    for i, v in enumerate(lines):
        if not isinstance(v, str) or "\n" in v or "\r" in v:
            raise ValueError(f"{where}: row {i}: a text file needs one-line strings, got "
                             f"{type_name(v) if not isinstance(v, str) else 'a line break'}")
    return lines


def write_rows(fh: Any, table: Mapping[str, Sequence], fmt: str, where: str = "output", *,
               progress: ProgressArg = False) -> None:
    """Write a table to an open text stream (a file, ``sys.stdout``) as CSV, TSV, JSONL or text.

    Parameters
    ----------
    fh : text stream
        Opened with ``newline=""`` for CSV/TSV (as the csv module asks).
    table : dict of str to list
    fmt : {"csv", "tsv", "jsonl", "text"}
    where : str
        Names the output in errors.
    progress : bool or callable f(rows_written, rows), default False
        Rows written so far, every 4,096 rows and at the end; True shows a
        bar on stderr.
    """
    check_progress(progress)
    if fmt not in STREAM_WRITE_FORMATS:
        raise ValueError(f"{where}: a stream takes {', '.join(STREAM_WRITE_FORMATS)}, got {fmt!r}")
    n = _table_rows(table)
    lines = _check_text_column(table, where) if fmt == "text" else None
    bar = make_progress(progress, n, "write", unit="row")
    try:
        cols = list(table)
        w = csv.writer(fh, dialect=_DIALECTS[fmt]) if fmt in ("csv", "tsv") else None
        if w is not None:
            w.writerow(cols)
        for a in range(0, n, _WRITE_EVERY):
            z = min(n, a + _WRITE_EVERY)
            # a block of rows as Python values at a time (an ArrowColumn's slice is a list)
            if w is not None:
                w.writerows(zip(*[table[c][a:z] for c in cols]))
            elif lines is None:
                fh.writelines(json.dumps(dict(zip(cols, row)), ensure_ascii=False) + "\n"
                              for row in zip(*[table[c][a:z] for c in cols]))
            else:
                fh.writelines(v + "\n" for v in lines[a:z])
            bar.update(z - a)
    finally:
        bar.close()


def _parquet_column(col: Sequence) -> Any:
    """What ``pa.table`` is given for a column: an ArrowColumn's array in one
    chunk, ``string`` (as a list of str gives), else the column."""
    if not isinstance(col, ArrowColumn):
        return col
    import pyarrow as pa

    arr = col.arrow
    if arr.null_count == len(arr):  # all None (or no row): pa.table types it null
        return pa.nulls(len(arr))
    if str(arr.type) == "large_string":
        arr = arr.cast(pa.string())  # chunk by chunk: each is a block of the file
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def write_table(path: str | os.PathLike, table: Mapping[str, Sequence], fmt: str | None = None, *,
                progress: ProgressArg = False) -> None:
    """Write a table (dict of equally long lists) as CSV, TSV, JSONL, text or Parquet.

    The file is written to a temporary name and renamed when complete.

    Parameters
    ----------
    path : str or path-like
    table : dict of str to list
    fmt : {"csv", "tsv", "jsonl", "parquet", "text"}, optional
        Default: from the extension (``.txt``: ``"text"``, the ``text`` column
        one value a line).
    progress : bool or callable f(rows_written, rows), default False
        Rows written so far, every 4,096 rows and at the end (Parquet: at the
        end only); True shows a bar on stderr.
    """
    check_progress(progress)
    fmt = infer_format(path, fmt, sniff=False)
    n = _table_rows(table)
    p = os.fspath(path)
    if fmt in STREAM_WRITE_FORMATS:
        if fmt == "text":
            _check_text_column(table, p)  # before the file is opened
        with atomic_write(p, "w", encoding="utf-8", newline="" if fmt in ("csv", "tsv")
                          else "\n") as fh:
            write_rows(fh, table, fmt, p, progress=progress)
    elif fmt == "parquet":
        pa = require("pyarrow", "dataframe", "writing Parquet")
        pq = require("pyarrow.parquet", "dataframe", "writing Parquet")
        bar = make_progress(progress, n, "write", unit="row")
        tmp = temporary_name(p)
        try:
            pq.write_table(pa.table({k: _parquet_column(v) for k, v in table.items()}), tmp)
            os.replace(tmp, p)
            bar.update(n)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        finally:
            bar.close()
    else:
        raise ValueError(f"{p}: write DailyDialog files with "
                         "overlap.pipeline.dialogue.write_dialogues")
