"""Token id input of ``TokenSets.from_ids`` / ``from_flat_ids`` as one flat array.

Every accepted form ends as ``(values, indptr)``: ``values`` a contiguous uint64
array of every id, row after row, and ``indptr`` (int64, n + 1, from 0) the row
boundaries.  The kernels then hash ``values`` and finalize the rows.

The checks run in bulk: the rows are concatenated first, then one vectorized
check looks at the whole value array.  Whenever a bulk check fails, or the
input holds something the bulk path does not handle, the per-row path
(:func:`per_row`, the original implementation) runs over all rows: it raises
the first wrong row's error, naming the row and what was wrong, or returns the
same arrays.  So the fast paths change only the time, never a result or an
error.

Zero-copy forms: a 2-D C-contiguous int64/uint64 array, an Arrow
``ListArray``/``LargeListArray`` (or a one-chunk ``ChunkedArray``) of
int64/uint64 and :meth:`TokenSets.from_flat_ids` arrays of int64/uint64 reach
the hashing kernel without a copy of the ids; narrower integer types are
widened once.  pyarrow is never imported unless the input is an Arrow object.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from ._validation import as_int64, as_int_array, as_uint64_values, type_name

_DTYPE = attrgetter("dtype")


class _Fallback(Exception):
    """A bulk check found something wrong or unusual: run :func:`per_row`."""


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, dtype=np.uint64), np.zeros(1, dtype=np.int64)


def _as_u64(vals: np.ndarray) -> np.ndarray:
    """Non-negative integer ids as contiguous uint64 (a view for 8-byte native ints)."""
    vals = np.ascontiguousarray(vals)
    if vals.dtype.itemsize == 8 and vals.dtype.isnative:
        return vals.view(np.uint64)
    return vals.astype(np.uint64)


def _indptr(lengths: np.ndarray) -> np.ndarray:
    indptr = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    return indptr


def stacked_indptr(indptrs: Sequence[np.ndarray]) -> np.ndarray:
    """The row boundaries of several row blocks laid one after the other.

    Each ``indptrs[k]`` starts at 0 and ends at its block's value count.
    """
    shifts = np.cumsum([0] + [int(ip[-1]) for ip in indptrs[:-1]])
    return np.concatenate([np.zeros(1, dtype=np.int64)]
                          + [ip[1:] + s for ip, s in zip(indptrs, shifts)]).astype(np.int64)


def _row_at(offsets: np.ndarray, p: int) -> int:
    """The row that holds value position ``p``."""
    return int(np.searchsorted(offsets, p, side="right")) - 1


# ------------------------------------------------------------- per row
def row_ids(seq: Any, i: int) -> np.ndarray:
    """One row ``sequences[i]`` as uint64, with every check of the original path."""
    if isinstance(seq, (str, bytes)):
        raise TypeError(f"sequences[{i}] must be a sequence of ints, got {type_name(seq)}")
    arr = np.asarray(seq)
    if arr.dtype.kind in "fO" and isinstance(seq, (list, tuple)):
        arr = _python_ints(seq, i, arr)
    if arr.ndim != 1:
        if arr.ndim == 0:
            raise TypeError(f"sequences[{i}] must be a sequence of ints, got {type_name(seq)}")
        raise ValueError(f"sequences[{i}] must be 1-dimensional, got shape {arr.shape}")
    if arr.size:
        if not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
            raise TypeError(f"sequences[{i}] must hold integers, got dtype {arr.dtype}")
        if np.issubdtype(arr.dtype, np.signedinteger) and arr.min() < 0:
            raise ValueError(
                f"sequences[{i}] holds a negative id ({int(arr.min())}); ids must be >= 0"
            )
    return arr.astype(np.uint64, copy=False)


def _python_ints(seq: Sequence, i: int, fallback: np.ndarray) -> np.ndarray:
    """Python ints beyond int64 (numpy makes them float/object): keep them exact."""
    if not all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in seq):
        return fallback
    if any(x < 0 for x in seq):
        raise ValueError(f"sequences[{i}] holds a negative id ({min(seq)}); ids must be >= 0")
    if any(x >= 2**64 for x in seq):
        raise ValueError(f"sequences[{i}] holds an id >= 2**64 ({max(seq)})")
    return np.array([int(x) for x in seq], dtype=np.uint64)


def per_row(seqs: list) -> tuple[np.ndarray, np.ndarray]:
    """The original path: check and convert one row at a time (about 8 us a row)."""
    parts = [row_ids(seq, i) for i, seq in enumerate(seqs)]
    if not parts:
        return _empty()
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.uint64), _indptr(lengths)


# ---------------------------------------------------------------- bulk
def sequences_ids(sequences: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(values, indptr)`` of any input ``TokenSets.from_ids`` accepts."""
    if type(sequences).__module__.split(".")[0] == "pyarrow":
        return arrow_ids(sequences, "sequences")
    if isinstance(sequences, np.ndarray) and sequences.ndim == 2 and not isinstance(
        sequences, np.matrix
    ):
        out = _two_d(np.asarray(sequences))
        if out is not None:
            return out
    seqs = list(sequences)  # one pass: the row count is what was read
    try:
        return _bulk(seqs)
    except _Fallback:
        return per_row(seqs)


def _two_d(a: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows of a 2-D array (each row one sequence); None: let the per-row path judge."""
    n, m = a.shape
    if a.size == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(n + 1, dtype=np.int64)
    if a.dtype.kind not in "iu" or (a.dtype.kind == "i" and a.min() < 0):
        return None
    return _as_u64(a.reshape(-1)), np.arange(n + 1, dtype=np.int64) * m


_ARRAY, _LIST, _OTHER = 0, 1, 2


def _code(x: Any) -> int:
    t = type(x)
    if t is np.ndarray:
        return _ARRAY if x.dtype.kind in "iu" else _OTHER
    return _LIST if t is list or t is tuple else _OTHER


def _bulk(seqs: list) -> tuple[np.ndarray, np.ndarray]:
    n = len(seqs)
    if n == 0:
        return _empty()
    types = set(map(type, seqs))
    if types == {np.ndarray}:
        dtypes = set(map(_DTYPE, seqs))
        if all(d.kind in "iu" for d in dtypes):
            vals, lengths = _arrays(seqs, dtypes)
            return vals, _indptr(lengths)
    if types <= {list, tuple}:
        vals, lengths = _lists(seqs)
        return vals, _indptr(lengths)
    # a mix: each kind of row in bulk, then the pieces interleaved back in row order
    codes = np.fromiter(map(_code, seqs), dtype=np.int8, count=n)
    groups = []
    for code, convert in ((_ARRAY, _arrays), (_LIST, _lists), (_OTHER, _each)):
        idx = np.flatnonzero(codes == code)
        if idx.size:
            rows = [seqs[i] for i in idx.tolist()]
            groups.append((idx, *convert(rows)))
    lengths = np.empty(n, dtype=np.int64)
    for idx, _, glen in groups:
        lengths[idx] = glen
    indptr = _indptr(lengths)
    values = np.empty(int(indptr[-1]), dtype=np.uint64)
    for idx, gvals, glen in groups:
        gptr = _indptr(glen)
        values[np.repeat(indptr[idx] - gptr[:-1], glen) + np.arange(gptr[-1])] = gvals
    return values, indptr


def _arrays(rows: list, dtypes: set | None = None) -> tuple[np.ndarray, np.ndarray]:
    """ndarrays of integer dtypes: one concatenate, one check of the minimum."""
    common = np.result_type(*(set(map(_DTYPE, rows)) if dtypes is None else dtypes))
    if common.kind not in "iu":  # int64 with uint64: numpy's common type is float64
        return _each(rows)
    try:
        vals = np.concatenate(rows, dtype=common)
    except (ValueError, TypeError):  # a 0-d row, or rows of different ndim
        raise _Fallback from None
    if vals.ndim != 1 or (common.kind == "i" and vals.size and vals.min() < 0):
        raise _Fallback
    return _as_u64(vals), np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))


def _lists(rows: list) -> tuple[np.ndarray, np.ndarray]:
    """Lists and tuples of Python ints: one flat list, one conversion, one check."""
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    flat = list(chain.from_iterable(rows))
    if not flat:
        return np.zeros(0, dtype=np.uint64), lengths
    if set(map(type, flat)) != {int}:  # bools, floats, numpy scalars: row by row
        return _each(rows)
    vals = np.array(flat)
    if vals.dtype != np.int64:  # ids >= 2**63: exact Python ints, row by row
        return _each(rows)
    if vals.min() < 0:
        raise _Fallback
    return vals.view(np.uint64), lengths


def _each(rows: list) -> tuple[np.ndarray, np.ndarray]:
    """Rows the bulk path does not handle, one at a time."""
    try:
        parts = [row_ids(seq, i) for i, seq in enumerate(rows)]
    except (TypeError, ValueError):
        raise _Fallback from None  # an earlier row may be wrong too: per_row says which
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    vals = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    return vals.astype(np.uint64, copy=False), lengths


# --------------------------------------------------------------- arrow
_ARROW_LISTS = ("ListArray", "LargeListArray", "FixedSizeListArray")


def arrow_ids(col: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A pyarrow list column (array or chunked) of integer ids, read from its buffers."""
    import pyarrow as pa

    kind = type(col).__name__
    if isinstance(col, pa.ChunkedArray):
        if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)
                or pa.types.is_fixed_size_list(col.type)):
            raise TypeError(f"{name} must be a column of id lists, got Arrow type {col.type}")
        parts, base = [], 0
        for chunk in col.chunks:
            parts.append(_arrow_list(chunk, name, base))
            base += len(chunk)
        if not parts:
            return _empty()
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([p[0] for p in parts]), stacked_indptr([p[1] for p in parts])
    if kind not in _ARROW_LISTS:
        raise TypeError(
            f"{name} must be an Arrow ListArray, LargeListArray, FixedSizeListArray or a "
            f"ChunkedArray of one, got pyarrow {kind}"
        )
    return _arrow_list(col, name, 0)


def _arrow_list(arr: Any, name: str, base: int) -> tuple[np.ndarray, np.ndarray]:
    """One Arrow list array (possibly sliced): rows ``base``, ``base + 1``... in messages."""
    import pyarrow as pa

    if not pa.types.is_integer(arr.type.value_type):
        raise TypeError(f"{name} must hold integers, got Arrow type {arr.type}")
    if arr.null_count:
        i = int(np.argmax(arr.is_null().to_numpy(zero_copy_only=False)))
        raise ValueError(
            f"{name}[{base + i}] is null; drop the null rows, or make them empty "
            "with .fill_null([])"
        )
    n = len(arr)
    if pa.types.is_fixed_size_list(arr.type):
        m = arr.type.list_size
        values = arr.flatten()  # this slice's values only
        offsets = np.arange(n + 1, dtype=np.int64) * m
    else:
        offsets = arr.offsets.to_numpy()  # the slice's n + 1 offsets, zero-copy
        first, last = int(offsets[0]), int(offsets[-1])
        values = arr.values.slice(first, last - first)  # .values ignores the slice
        offsets = offsets.astype(np.int64) - first if first else offsets.astype(np.int64)
    if values.null_count:
        row = _row_at(offsets, int(np.argmax(values.is_null().to_numpy(zero_copy_only=False))))
        raise ValueError(f"{name}[{base + row}] holds a null id")
    vals = values.to_numpy(zero_copy_only=True)
    if vals.dtype.kind == "i" and vals.size and vals.min() < 0:
        row = _row_at(offsets, int(np.argmax(vals < 0)))
        low = int(vals[offsets[row]:offsets[row + 1]].min())
        raise ValueError(f"{name}[{base + row}] holds a negative id ({low}); ids must be >= 0")
    return _as_u64(vals), offsets


# ------------------------------------------------------------ flat ids
def flat_ids(values: Any, offsets: Any) -> tuple[np.ndarray, np.ndarray]:
    """Check ``TokenSets.from_flat_ids``' arrays: row i is ``values[offsets[i]:offsets[i+1]]``."""
    if type(values).__module__.split(".")[0] == "pyarrow" and getattr(values, "null_count", 0):
        raise ValueError("values holds a null id")
    v = as_uint64_values(values, "values")
    if v.ndim != 1:
        raise ValueError(f"values must be 1-dimensional, got shape {v.shape}")
    if v.size and (v.dtype.kind not in "iu"):
        raise TypeError(f"values must hold integers, got dtype {v.dtype}")
    ip = as_int_array(offsets, "offsets")
    if ip.size == 0:
        raise ValueError("offsets must have at least one element (n_rows + 1)")
    ip = as_int64(ip, "offsets")
    if ip[0] != 0:
        raise ValueError(f"offsets[0] must be 0, got {ip[0]}")
    if ip[-1] != v.shape[0]:
        raise ValueError(f"offsets[-1] must equal len(values) = {v.shape[0]}, got {ip[-1]}")
    d = np.diff(ip)
    if d.size and d.min() < 0:
        row = int(np.argmax(d < 0))
        raise ValueError(f"offsets must be non-decreasing; they fall at row {row}")
    if v.dtype.kind == "i" and v.size and v.min() < 0:
        p = int(np.argmax(v < 0))
        row = _row_at(ip, p)
        raise ValueError(
            f"values holds a negative id ({int(v[p])}) at position {p}, in row {row}; "
            "ids must be >= 0"
        )
    return _as_u64(v), ip

