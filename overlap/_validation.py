"""Every check of the public ``overlap`` API and every error message it raises.

Checks run in the Python layer before any kernel, never modify their inputs, and
name the argument that was wrong together with what was expected and what came.

A leaf module: it imports nothing from ``overlap`` (checks of TokenSets fields
live in ``overlap._fields``; the kernels' limits come from ``overlap._kernels._collection``).
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

import numpy as np


#: Largest value of an argument the kernels take as a C ``int``.
MAX_C_INT = (1 << 31) - 1


def type_name(x: Any) -> str:
    return type(x).__name__


# Numbers written on a command line or in a text file: ASCII digits only.
# Python's int() and float() also take '1_0' (as 10), other scripts' digits
# and surrounding white space, which a user did not mean as a number.
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def parse_int_text(text: str, name: str) -> int:
    """The integer written as ``text`` (ASCII digits, an optional sign), else ValueError."""
    if not isinstance(text, str) or not _INTEGER_TEXT.fullmatch(text):
        raise ValueError(f"{name}: expected an integer, got {text!r}")
    return int(text)


def parse_float_text(text: str, name: str) -> float:
    """The decimal number written as ``text`` (e.g. ``0.8``, ``1e-3``), else ValueError."""
    if not isinstance(text, str) or not _DECIMAL_TEXT.fullmatch(text):
        raise ValueError(f"{name}: expected a number, got {text!r}")
    return float(text)


def check_int(
    value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """An int (not a bool) in ``[minimum, maximum]``; the bounds are optional."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type_name(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_unit_interval(value: Any, name: str, *, allow_zero: bool = True) -> float:
    """A float in [0, 1] (or (0, 1] when ``allow_zero`` is False)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in [0, 1], got {type_name(value)}")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must be a number in [0, 1], got NaN")
    lo_ok = value > 0.0 if not allow_zero else value >= 0.0
    if not lo_ok or value > 1.0:
        interval = "[0, 1]" if allow_zero else "(0, 1]"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return value


#: The set measures, in the order of the kernels' ``Measure`` enum
#: (``overlap/_kernels/_bounds.pxd``); the definitions are in docs/measures.md.
MEASURES = ("dice", "jaccard", "cosine", "overlap", "containment")
#: How reports and plots name each measure.
MEASURE_LABELS = {"dice": "Dice", "jaccard": "Jaccard", "cosine": "cosine",
                  "overlap": "overlap coefficient", "containment": "containment"}


def check_measure(measure: Any, *, self_join: bool = False,
                  call: str = "a self-join or dedup") -> int:
    """``measure=``: one of MEASURES; returns its kernel code.

    ``self_join``: the call scores each pair of one collection once (a
    self-join, dedup), which an asymmetric measure cannot do; ``call`` names
    it in the error (e.g. "a self-join (right=None)").
    """
    if not isinstance(measure, str) or measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(map(repr, MEASURES))}, "
                         f"got {measure!r}")
    if self_join and measure == "containment":
        raise ValueError(
            "measure='containment' is asymmetric (how much of the query lies inside the "
            f"reference), so {call}, which scores each pair once, cannot use it; "
            "measure='overlap' scores a pair by how much of the smaller row lies inside the "
            "larger (the larger of the two containments)"
        )
    return MEASURES.index(measure)


def check_join_threshold(threshold: Any) -> float:
    """A threshold join's ``threshold``: in (0, 1] (at 0 every pair qualifies)."""
    t = check_unit_interval(threshold, "threshold")
    if t == 0.0:
        raise ValueError(
            "threshold must be > 0: at 0 every pair qualifies (n x m rows); use a small "
            "positive threshold to list every overlapping pair"
        )
    return t


def check_texts(texts: Any, name: str = "texts") -> list[str]:
    """A sequence of str (not a single str); returns a list."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of str, got a single {type_name(texts)}")
    if isinstance(texts, np.ndarray) and texts.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got an array of shape {texts.shape}")
    try:
        out = list(texts)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of str, got {type_name(texts)}") from None
    for i, t in enumerate(out):
        if type(t) is not str:
            if not isinstance(t, str):
                raise TypeError(f"{name}[{i}] must be str, got {type_name(t)}")
            out[i] = exact_str(t)
    return out


def exact_str(s: str) -> str:
    """The value of a ``str`` (or str subclass) as an exact ``str``.

    Kernels read a string's code points directly, so they are only ever handed
    objects whose type is exactly ``str``; a subclass's overridden methods are
    never called.
    """
    out = str.__str__(s)
    if type(out) is not str:  # pragma: no cover - CPython always copies
        out = "".join(out)
    return out


def check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {type_name(seed)}")
    if not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return int(seed)


def as_array(x: Any, name: str) -> np.ndarray:
    """``np.asarray(x)``; a ragged nested list is a ValueError naming ``name``."""
    try:
        return np.asarray(x)
    except ValueError as exc:  # numpy: "setting an array element with a sequence"
        raise ValueError(f"{name} must be a flat array-like (not ragged): {exc}") from None


def as_int_array(x: Any, name: str, *, ndim: int = 1) -> np.ndarray:
    """An integer numpy array view/copy of ``x`` (never the caller's buffer mutated)."""
    arr = as_array(x, name)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if arr.dtype == object or np.issubdtype(arr.dtype, np.bool_):
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr


def as_uint64_values(x: Any, name: str = "hashes") -> np.ndarray:
    """``np.asarray(x)``, but a list of Python ints beyond int64 stays exact.

    numpy turns ``[1, 2**63]`` into float64, which would round hashes; a list
    or tuple of ints becomes uint64 instead (ValueError outside ``[0, 2**64)``).
    """
    arr = as_array(x, name)
    if arr.dtype.kind in "fO" and isinstance(x, (list, tuple)) and x and all(
        isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in x
    ):
        if min(x) < 0:
            raise ValueError(f"{name} must be non-negative (they are stored as uint64)")
        if max(x) >= 2**64:
            raise ValueError(f"{name} must be < 2**64, got {max(x)}")
        return np.array([int(v) for v in x], dtype=np.uint64)
    return arr


def as_int64(arr: np.ndarray, name: str) -> np.ndarray:
    """An integer array as int64, refusing unsigned values that int64 cannot hold.

    A plain ``astype(np.int64)`` wraps ``2**63`` and above to negative numbers,
    which would then pass for (or be reported as) small negative values.
    """
    if arr.dtype.kind == "u" and arr.size and arr.dtype.itemsize >= 8:
        top = arr.max()
        if top > np.iinfo(np.int64).max:
            raise ValueError(f"{name} holds {int(top)}, beyond the int64 range")
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_csr(indptr: Any, hashes: Any, counts: Any = None):
    """Validate raw CSR arrays of token sets; return contiguous copies/views."""
    ip = as_int_array(indptr, "indptr")
    if ip.size == 0:
        raise ValueError("indptr must have at least one element (n_rows + 1)")
    ip = as_int64(ip, "indptr")
    h = as_uint64_values(hashes)
    if h.ndim != 1:
        raise ValueError(f"hashes must be 1-dimensional, got shape {h.shape}")
    if h.size and not np.issubdtype(h.dtype, np.integer):
        raise TypeError(f"hashes must hold unsigned 64-bit integers, got dtype {h.dtype}")
    if h.size and np.issubdtype(h.dtype, np.signedinteger) and (h < 0).any():
        raise ValueError("hashes must be non-negative (they are stored as uint64)")
    h = np.ascontiguousarray(h, dtype=np.uint64)
    if ip[0] != 0:
        raise ValueError(f"indptr[0] must be 0, got {ip[0]}")
    if ip[-1] != h.shape[0]:
        raise ValueError(
            f"indptr[-1] must equal len(hashes) = {h.shape[0]}, got {ip[-1]}"
        )
    d = np.diff(ip)
    if (d < 0).any():
        r = int(np.flatnonzero(d < 0)[0])
        raise ValueError(f"indptr must be non-decreasing; it falls at row {r}")
    if h.shape[0] > 1:
        step_ok = h[1:] > h[:-1]
        # positions where a row starts may go down; inside a row they must rise
        row_start = np.zeros(h.shape[0], dtype=bool)
        row_start[ip[1:-1][ip[1:-1] < h.shape[0]]] = True
        bad = ~step_ok & ~row_start[1:]
        if bad.any():
            pos = int(np.flatnonzero(bad)[0]) + 1
            row = int(np.searchsorted(ip, pos, side="right") - 1)
            what = "a duplicate" if h[pos] == h[pos - 1] else "out of order"
            raise ValueError(
                f"hashes of row {row} must be sorted ascending and unique; "
                f"position {pos - ip[row]} is {what}"
            )
    c = None
    if counts is not None:
        c = as_int_array(counts, "counts")
        if c.shape[0] != h.shape[0]:
            raise ValueError(
                f"counts must have one entry per hash ({h.shape[0]}), got {c.shape[0]}"
            )
        if c.size and (c.min() < 1 or c.max() > np.iinfo(np.uint32).max):
            raise ValueError("counts must be in [1, 2**32 - 1]")
        c = np.ascontiguousarray(c, dtype=np.uint32)
    return ip, h, c


def row_indices(rows: Any, n: int, what: str) -> np.ndarray:
    """Integer indices (negative ones wrap) or a boolean mask -> int64 positions in [0, n)."""
    idx = as_array(rows, "rows")
    if idx.dtype == np.bool_:
        if idx.shape != (n,):
            raise ValueError(f"a boolean mask for rows must have shape ({n},), got {idx.shape}")
        return np.flatnonzero(idx)
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"rows must be integer indices or a boolean mask, got {idx.dtype}")
    if idx.dtype.kind == "u" and idx.size and idx.max() >= n:
        raise IndexError(f"rows out of range for {n} {what}: {int(idx.max())}")
    idx = idx.astype(np.int64, copy=False).ravel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"rows out of range for {n} {what}")
    return idx % max(n, 1)
