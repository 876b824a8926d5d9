"""Ordering helpers shared by the join, the Dask layer and dedup."""

from __future__ import annotations

import numpy as np

_INT64_MAX = np.iinfo(np.int64).max


def pair_order(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``np.lexsort((second, first))``: pairs by ``first``, then ``second``, stably.

    For non-negative integers whose combined key ``first * (max(second) + 1) +
    second`` fits in int64 (every join result: ids below 2**31), one stable
    argsort of that key gives the same permutation, 40-100x faster on a join's
    nearly sorted output (178k pairs of the W train self-join: 0.2 ms against
    19 ms).  Anything else falls back to ``np.lexsort``.
    """
    first = np.asarray(first)
    second = np.asarray(second)
    if first.shape != second.shape or first.ndim != 1:
        raise ValueError("pair_order: first and second must be 1-D and of one length")
    if first.size == 0:
        return np.zeros(0, dtype=np.intp)
    if first.dtype.kind in "iu" and second.dtype.kind in "iu":
        f_lo, f_hi = int(first.min()), int(first.max())
        s_lo, s_hi = int(second.min()), int(second.max())
        width = s_hi + 1
        if f_lo >= 0 and s_lo >= 0 and f_hi * width + s_hi <= _INT64_MAX:
            key = first.astype(np.int64) * np.int64(width) + second.astype(np.int64)
            return np.argsort(key, kind="stable")
    return np.lexsort((second, first))
