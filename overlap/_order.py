"""Ordering helpers shared by the indexes, the join, the Dask layer and dedup."""

from __future__ import annotations

import numpy as np

from ._kernels import _vocab
from ._kernels._collection import stable_argsort_u64  # the kernel sorts fingerprints with it too

_INT64_MAX = np.iinfo(np.int64).max


def lex_order(*keys: np.ndarray) -> np.ndarray:
    """``np.lexsort(keys[::-1])``: rows by the first key, then the next, ..., stably.

    When every key holds non-negative integers and the combined key (the keys
    and then the row index, mixed-radix) fits in int64, one sort of that key
    gives the same permutation: the keys are unique, so numpy's default sort
    (SIMD where the CPU has it, not stable) cannot reorder ties.  That is 6x
    (two size keys of 76k rows: 1.4 against 8.8 ms) to 40x (a join's 178k
    nearly sorted pairs: 0.5 against 19 ms) faster than ``np.lexsort``, which
    anything else falls back to.
    """
    if not keys:
        raise ValueError("lex_order: at least one key")
    keys = tuple(np.asarray(k) for k in keys)
    n = keys[0].shape[0] if keys[0].ndim == 1 else -1
    if any(k.ndim != 1 or k.shape[0] != n for k in keys):
        raise ValueError("lex_order: the keys must be 1-D and of one length")
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    if all(k.dtype.kind in "iu" for k in keys):
        widths, total = [], n
        for k in keys:
            lo, hi = int(k.min()), int(k.max())
            if lo < 0:
                break
            widths.append(hi + 1)
            total *= hi + 1
        else:
            # every width and the combined key's range itself must fit int64
            # (one pair (0, 2**63 - 1) has total - 1 = 2**63 - 1 but width 2**63)
            if total <= _INT64_MAX:
                combined = np.zeros(n, dtype=np.int64)
                for k, w in zip(keys, widths):
                    combined *= np.int64(w)
                    combined += k.astype(np.int64)
                combined *= np.int64(n)
                combined += np.arange(n, dtype=np.int64)
                return np.argsort(combined)
    return np.lexsort(keys[::-1])


def pair_order(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Pairs by ``first``, then ``second``, stably (``np.lexsort((second, first))``)."""
    first, second = np.asarray(first), np.asarray(second)
    if first.shape != second.shape or first.ndim != 1:
        raise ValueError("pair_order: first and second must be 1-D and of one length")
    return lex_order(first, second)


def count_key_order(counts: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``np.lexsort((keys, counts))``: by count, ties by key (uint64 hashes), stably.

    The vocabulary's scan order (rarest first, ties by hash), by the kernel
    ``_vocab.count_key_order``: a byte-wise radix sort by key, then a
    counting sort by count, where ``np.lexsort`` makes two numpy sorts.
    """
    counts, keys = np.asarray(counts), np.asarray(keys)
    if counts.shape != keys.shape or counts.ndim != 1:
        raise ValueError("count_key_order: counts and keys must be 1-D and of one length")
    return _vocab.count_key_order(np.ascontiguousarray(counts, dtype=np.int64),
                                   np.ascontiguousarray(keys, dtype=np.uint64))
