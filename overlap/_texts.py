"""Arrow string columns as input of ``TokenSets.from_texts``, read from their buffers.

A pyarrow ``Array`` or ``ChunkedArray`` of ``string`` or ``large_string`` (and
a pandas Series whose values are Arrow strings: ``pd.ArrowDtype(pa.string())``,
``"string[pyarrow]"``, pandas 3's default ``str``) reaches the tokenizer as its
buffers: the offsets (int32 or int64, of a sliced array too) and the UTF-8
data, with no Python ``str`` per row.  ``_tokenize.scan_utf8`` tokenizes ASCII
rows on the bytes and hands the others to the str path, so the token sets are
those of the list of the same strings.

pyarrow is never imported unless the input is an Arrow (or Arrow-backed pandas)
object.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def arrow_column(texts: Any, name: str = "texts") -> Any | None:
    """The Arrow string column (Array or ChunkedArray) behind ``texts``, or None.

    None for anything that is not an Arrow array or an Arrow-backed pandas
    Series of strings: those take the list path.  TypeError for an Arrow array
    that does not hold strings; TypeError naming the first null row.
    """
    top = str(getattr(type(texts), "__module__", None) or "").split(".")[0]
    if top == "pyarrow":
        import pyarrow as pa

        if not isinstance(texts, (pa.Array, pa.ChunkedArray)):
            return None
        col = _string_column(texts, name)
    elif top == "pandas":
        col = _pandas_column(texts)
        if col is None:
            return None
        col = _string_column(col, name)
    else:
        return None
    check_no_nulls(col, name)
    return col


def _pandas_column(series: Any) -> Any | None:
    """The Arrow array of a pandas Series of Arrow-backed strings, else None."""
    import pandas as pd

    if not isinstance(series, pd.Series):
        return None
    dtype = series.dtype
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        t = dtype.pyarrow_dtype
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            return None
    elif not (isinstance(dtype, pd.StringDtype)
              and str(getattr(dtype, "storage", "")).startswith("pyarrow")):
        return None
    values = series.array
    if not hasattr(values, "__arrow_array__"):  # pragma: no cover - pandas always has it
        return None
    return values.__arrow_array__()


def _string_column(col: Any, name: str) -> Any:
    """``col`` as a string or large_string column (string_view is cast: a copy)."""
    import pyarrow as pa

    t = col.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return col
    is_view = getattr(pa.types, "is_string_view", None)
    if is_view is not None and is_view(t):
        return col.cast(pa.large_string())
    raise TypeError(
        f"{name} must be an Arrow column of strings (string or large_string), "
        f"got Arrow type {t}"
    )


def check_no_nulls(col: Any, name: str) -> None:
    """TypeError naming the first null row (as for ``None`` in a list)."""
    if not col.null_count:
        return
    base = 0
    for chunk in _chunks(col):
        if chunk.null_count:
            i = int(np.argmax(chunk.is_null().to_numpy(zero_copy_only=False)))
            raise TypeError(
                f"{name}[{base + i}] must be str, got an Arrow null; drop the null rows, "
                "or make them empty strings with .fill_null('')"
            )
        base += len(chunk)


def _chunks(col: Any) -> list:
    import pyarrow as pa

    return list(col.chunks) if isinstance(col, pa.ChunkedArray) else [col]


def buffers(arr: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of one string array: its ``n + 1`` offsets (int32 or
    int64, a view that honours the slice; not rebased) and its UTF-8 bytes."""
    import pyarrow as pa

    _, off_buf, data_buf = arr.buffers()[:3]
    n = len(arr)
    dtype = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    if off_buf is None:  # an empty array may come without buffers
        offsets = np.zeros(n + 1, dtype=dtype)
    else:
        offsets = np.frombuffer(off_buf, dtype=dtype)[arr.offset:arr.offset + n + 1]
    data = (np.zeros(0, dtype=np.uint8) if data_buf is None
            else np.frombuffer(data_buf, dtype=np.uint8))
    return offsets, data


def pieces(col: Any, budget: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """``(first_row, offsets, data)`` of consecutive row ranges of about ``budget``
    bytes each (at least one row), over every chunk; one piece for an empty column."""
    out = []
    base = 0
    for chunk in _chunks(col):
        offsets, data = buffers(chunk)
        n = len(chunk)
        if n:
            rel = offsets[1:] - offsets[0]
            total = int(rel[-1])
            cuts = (np.searchsorted(rel, np.arange(budget, total, budget), side="left") + 1
                    if total > budget else np.zeros(0, dtype=np.int64))
            bounds = np.unique(np.concatenate([[0], np.minimum(cuts, n), [n]]))
            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                out.append((base + a, offsets[a:b + 1], data))
        base += n
    if not out:
        out.append((0, np.zeros(1, dtype=np.int32), np.zeros(0, dtype=np.uint8)))
    return out
