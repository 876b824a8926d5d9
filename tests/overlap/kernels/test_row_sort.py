"""The tokenizer's in-place sort of a row (``_sort.sort_hashes``: buckets by
the top bits, or ``_sort.sort_u64``'s insertion, branch-free merge sort, shell
sort and qsort by length), seen through ``_tokenize.finalize_rows``: every row
comes back sorted and de-duplicated (or counted), as numpy's ``unique`` gives
it, on both sides of every switch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap import _tokenize

# lengths around the sort's switches (8: buckets, 16, 512, 4096), the bucket
# counts (powers of two) and around the runs of four and the merge widths
LENGTHS = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 36, 63, 64, 65, 100, 255,
           256, 257, 511, 512, 513, 1000, 4095, 4096, 4097, 6000]


def _check(rows, multiset, n_threads=2):
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    flat = (np.concatenate(rows) if rows else np.zeros(0)).astype(np.uint64)
    before = flat.copy()
    ip, h, c = _tokenize.finalize_rows(indptr, flat, 1, multiset, n_threads)
    np.testing.assert_array_equal(flat, before)  # the input is not touched
    for i, r in enumerate(rows):
        keys, counts = np.unique(np.asarray(r, dtype=np.uint64), return_counts=True)
        np.testing.assert_array_equal(h[ip[i]:ip[i + 1]], keys)
        if multiset:
            np.testing.assert_array_equal(c[ip[i]:ip[i + 1]], counts)


@pytest.mark.parametrize("multiset", [False, True])
def test_every_length_around_the_switches(rng, multiset):
    rows = []
    for n in LENGTHS:
        rows.append(rng.integers(0, 2**64, size=n, dtype=np.uint64))  # distinct, random
        rows.append(rng.integers(0, max(1, n // 3), size=n).astype(np.uint64))  # duplicates
        rows.append(np.arange(n, dtype=np.uint64)[::-1].copy())  # descending
        rows.append(np.arange(n, dtype=np.uint64))  # sorted already
        rows.append(np.full(n, 2**64 - 1, dtype=np.uint64))  # one value, the largest
    _check(rows, multiset)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.one_of(st.integers(0, 5), st.integers(0, 2**64 - 1)),
                         max_size=600), max_size=6),
       st.booleans(), st.sampled_from([1, 2]))
def test_random_rows(rows, multiset, n_threads):
    _check([np.array(r, dtype=np.uint64) for r in rows], multiset, n_threads)


def _crowded(rng, n, per_bucket, bits):
    """n random hashes, ``per_bucket`` of them sharing the top ``bits`` bits
    (the rest spread), in random order: a bucket just at or past the limit."""
    top = rng.integers(0, 2**bits, dtype=np.uint64)
    low = rng.integers(0, 2**(64 - bits), size=per_bucket, dtype=np.uint64)
    same = (top << np.uint64(64 - bits)) | low
    rest = rng.integers(0, 2**64, size=n - per_bucket, dtype=np.uint64)
    row = np.concatenate([same, rest])
    rng.shuffle(row)
    return row


@pytest.mark.parametrize("multiset", [False, True])
def test_buckets_at_and_past_their_limit(rng, multiset):
    """Rows whose hashes crowd one bucket with 7 to n values, at every bucket
    count: from a few shifts of the insertion pass to far more than its limit
    (HASH_SHIFTS_PER_VALUE shifts a value: the row is then merge-sorted from
    the middle of the pass)."""
    rows = []
    for n in [9, 12, 16, 17, 32, 33, 64, 65, 128, 300, 512]:
        bits = max(5, int(np.ceil(np.log2(n))))
        for per_bucket in (7, 8, 9, 16, n):
            rows.append(_crowded(rng, n, min(per_bucket, n), bits))
            # the crowded values repeated (a multiset's counts in one bucket)
            row = _crowded(rng, n, min(per_bucket, n), bits)
            row[: n // 4] = row[n // 4: 2 * (n // 4)]
            rows.append(row)
        # the edges of the range: the first and the last bucket
        rows.append(np.concatenate([np.arange(4, dtype=np.uint64),
                                    np.uint64(2**64 - 1) - np.arange(4, dtype=np.uint64),
                                    rng.integers(0, 2**64, size=n - 8, dtype=np.uint64)]))
    _check(rows, multiset)


@pytest.mark.parametrize("multiset", [False, True])
def test_frequent_values_among_spread_ones(rng, multiset):
    """A text's frequent words: a few hashes many times each among spread ones,
    so that a bucket holds many copies of one value (the insertion pass, not
    the merge sort), and the copies in the same bucket as other values."""
    rows = []
    for n in [9, 16, 17, 20, 36, 64, 65, 200, 512]:
        for copies in (2, 9, n // 2):
            frequent = rng.integers(0, 2**64, size=3, dtype=np.uint64)
            row = rng.integers(0, 2**64, size=n, dtype=np.uint64)
            row[:copies] = frequent[0]
            row[copies:min(n, 2 * copies)] = frequent[rng.integers(0, 3)]
            # a value just below the copies, in their bucket, after them
            row[-1] = frequent[0] - np.uint64(1) if frequent[0] else np.uint64(1)
            rng.shuffle(row[:-1])
            rows.append(row)
    _check(rows, multiset)
