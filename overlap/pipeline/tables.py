"""Read and write sample tables: DailyDialog text, CSV, JSONL, Parquet, DataFrames.

CSV and JSONL use only the standard library.  Parquet needs ``pyarrow`` and
DataFrames ``pandas`` (the ``dataframe`` extra); both are imported only when
used, with a clear message when missing.

A *table* here is a dict of column name to list of values, all equally long,
in column order.  Errors name the file and the line (or row).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from typing import Any

from .._optional import MissingExtra, require
from .._validation import check_int, type_name
from .dialogue import make_samples, read_dialogues

__all__ = [
    "FORMATS",
    "MissingExtra",
    "infer_format",
    "read_table",
    "write_table",
    "read_fields",
    "table_from_dataframe",
]

#: Formats understood by :func:`read_table` / :func:`read_fields`.
FORMATS = ("dailydialog", "csv", "jsonl", "parquet")

_EXTENSIONS = {
    ".txt": "dailydialog",
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def infer_format(path: str | os.PathLike, fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` when given, else from the file extension.

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
    if ext not in _EXTENSIONS:
        raise ValueError(
            f"{os.fspath(path)}: cannot tell the format from the extension {ext!r}; "
            f"give one of {', '.join(FORMATS)}"
        )
    return _EXTENSIONS[ext]


# ------------------------------------------------------------------ readers
def _read_csv(path: str) -> dict[str, list]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise ValueError(f"{path}:1: empty file (a CSV needs a header line)")
            if len(set(header)) != len(header):
                raise ValueError(f"{path}:1: duplicate column names in the header")
            cols: dict[str, list] = {h: [] for h in header}
            lists = list(cols.values())
            for row in reader:
                if not row:
                    continue
                if len(row) != len(header):
                    raise ValueError(
                        f"{path}:{reader.line_num}: {len(row)} fields, the header has "
                        f"{len(header)}"
                    )
                for lst, v in zip(lists, row):
                    lst.append(v)
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except csv.Error as e:
        raise ValueError(f"{path}: bad CSV: {e}") from None
    return cols


def _read_jsonl(path: str) -> dict[str, list]:
    records: list[tuple[int, dict]] = []
    names: dict[str, None] = {}
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}:{lineno}: not UTF-8 text ({e.reason})") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: invalid JSON: {e.msg}") from None
            if not isinstance(obj, dict):
                raise ValueError(
                    f"{path}:{lineno}: each line must be a JSON object, got {type_name(obj)}"
                )
            records.append((lineno, obj))
            for k in obj:
                names.setdefault(k, None)
    cols: dict[str, list] = {k: [] for k in names}
    for _, obj in records:
        for k, lst in cols.items():
            lst.append(obj.get(k))
    cols["__line__"] = [ln for ln, _ in records]
    return cols


def _read_parquet(path: str) -> dict[str, list]:
    pq = require("pyarrow.parquet", "dataframe", "reading Parquet")
    try:
        return pq.read_table(path).to_pydict()
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read Parquet: {e}") from None


def read_table(path: str | os.PathLike, fmt: str | None = None) -> dict[str, list]:
    """Read a CSV (header line), JSONL (one object a line) or Parquet file.

    Parameters
    ----------
    path : str or path-like
    fmt : {"csv", "jsonl", "parquet"}, optional
        Default: from the extension.

    Returns
    -------
    dict of str to list
        Columns in file order.  JSONL keys missing on a line read as None.
    """
    fmt = infer_format(path, fmt)
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise FileNotFoundError(f"{p}: no such file")
    if fmt == "dailydialog":
        raise ValueError(f"{p}: DailyDialog files hold dialogues, not a table; use read_fields")
    if fmt == "csv":
        return _read_csv(p)
    if fmt == "jsonl":
        cols = _read_jsonl(p)
        cols.pop("__line__")
        return cols
    return _read_parquet(p)


def table_from_dataframe(df: Any) -> dict[str, list]:
    """Columns of a pandas DataFrame as a table (dict of lists)."""
    if not (hasattr(df, "columns") and hasattr(df, "to_dict")):
        raise TypeError(f"df must be a pandas DataFrame, got {type_name(df)}")
    return {str(c): df[c].tolist() for c in df.columns}


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


def read_fields(
    source: str | os.PathLike | Any,
    fields: Sequence[str] | str = ("context", "response"),
    fmt: str | None = None,
    *,
    turns: int = 1,
) -> tuple[list[list[str]], dict[str, list]]:
    """Read the text fields of a sample file (or DataFrame) for scanning.

    Parameters
    ----------
    source : path or pandas DataFrame
        A DailyDialog file is cut into (context, response) samples with
        ``turns`` context turns; other formats give their rows.
    fields : sequence of str or comma-separated str, default ("context", "response")
        The columns compared (the ratio is the minimum over them).  For
        DailyDialog files they must be ``context`` and/or ``response``.
    fmt : str, optional
        One of :data:`FORMATS`; default from the extension.
    turns : int, default 1

    Returns
    -------
    columns : list of list of str
        One list per field.
    table : dict of str to list
        The whole table (DailyDialog: context, response, dialogue, turn).

    Raises
    ------
    ValueError
        A missing column, or a value that is not a string (with its line).
    """
    names = _parse_fields(fields)
    turns = check_int(turns, "turns", minimum=1)
    if not isinstance(source, (str, os.PathLike)):
        table = table_from_dataframe(source)
        where = "DataFrame"
        lines = None
    else:
        fmt = infer_format(source, fmt)
        where = os.fspath(source)
        if not os.path.isfile(where):
            raise FileNotFoundError(f"{where}: no such file")
        lines = None
        if fmt == "dailydialog":
            s = make_samples(read_dialogues(where), turns)
            table = {"context": s.context, "response": s.response,
                     "dialogue": s.dialogue.tolist(), "turn": s.turn.tolist()}
            bad = [f for f in names if f not in ("context", "response")]
            if bad:
                raise ValueError(
                    f"{where}: a DailyDialog file has fields context and response, "
                    f"not {', '.join(bad)}"
                )
        elif fmt == "jsonl":
            table = _read_jsonl(where)
            lines = table.pop("__line__")
        else:
            table = read_table(where, fmt)
    for f in names:
        if f not in table:
            have = ", ".join(table) or "none"
            raise ValueError(f"{where}: no column {f!r} (columns: {have})")
        for i, v in enumerate(table[f]):
            if not isinstance(v, str):
                # CSV values are always strings; JSONL knows its lines
                at = f"{where}:{lines[i]}" if lines is not None else f"{where}: row {i}"
                raise ValueError(f"{at}: field {f!r} must be a string, got {type_name(v)}")
    return [table[f] for f in names], table


# ------------------------------------------------------------------ writers
def write_table(path: str | os.PathLike, table: dict[str, list], fmt: str | None = None) -> None:
    """Write a table (dict of equally long lists) as CSV, JSONL or Parquet.

    Parameters
    ----------
    path : str or path-like
    table : dict of str to list
    fmt : {"csv", "jsonl", "parquet"}, optional
        Default: from the extension.
    """
    fmt = infer_format(path, fmt)
    if not isinstance(table, dict):
        raise TypeError(f"table must be a dict of column lists, got {type_name(table)}")
    lengths = {len(v) for v in table.values()}
    if len(lengths) > 1:
        raise ValueError(f"table: columns must be equally long, got lengths {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    p = os.fspath(path)
    cols = list(table)
    if fmt == "csv":
        with open(p, "w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(cols)
            for i in range(n):
                w.writerow([table[c][i] for c in cols])
    elif fmt == "jsonl":
        with open(p, "w", encoding="utf-8", newline="\n") as fh:
            for i in range(n):
                fh.write(json.dumps({c: table[c][i] for c in cols}, ensure_ascii=False) + "\n")
    elif fmt == "parquet":
        pa = require("pyarrow", "dataframe", "writing Parquet")
        pq = require("pyarrow.parquet", "dataframe", "writing Parquet")
        pq.write_table(pa.table(table), p)
    else:
        raise ValueError(f"{p}: write DailyDialog files with overlap.dialogue.write_dialogues")
