"""``_vocab.restrict_rows``: rows restricted to a table's keys (as the keys' ids,
with the count of each), against the definition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from overlap._kernels import _vocab
from reference import overlap as ref

# a few hashes, the extremes included (0 is an empty slot's key, with id -1)
HASHES = [0, 1, 2, 3, 17, 2**63, 2**64 - 1, 0x9E3779B97F4A7C15]
token = st.sampled_from(HASHES) | st.integers(0, 2**64 - 1)


def table(keys: list) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys by id, the compact_vocabulary table of them), as QueryTokens
    makes them for one field."""
    distinct, _, tkeys, tids, _ = _vocab.vocab_table(np.array(keys, dtype=np.uint64))
    slots, _ = _vocab.compact_vocabulary(tkeys, tids,
                                         np.array([0, tkeys.shape[0]], dtype=np.int64))
    return distinct, slots


def restricted(rows: list, keys: list, n_threads: int) -> tuple[list, list]:
    """(the kept rows as hashes, the count of every key by id) from restrict_rows."""
    distinct, slots = table(keys)
    indptr, ids, counts = _vocab.restrict_rows(*flat(rows), slots, n_threads)
    assert indptr.dtype == np.int64 and ids.dtype == np.int32 and counts.dtype == np.int64
    assert counts.shape == distinct.shape
    return unflat(indptr, distinct[ids]), dict(zip(distinct.tolist(), counts.tolist()))


def ref_counts(rows: list, keys: list) -> dict:
    kept = [t for row in ref.restrict_rows(rows, keys) for t in row]
    return {k: kept.count(k) for k in set(keys)}


def flat(rows: list) -> tuple[np.ndarray, np.ndarray]:
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    hashes = np.array([t for r in rows for t in r], dtype=np.uint64)
    return indptr, hashes


def unflat(indptr: np.ndarray, hashes: np.ndarray) -> list:
    return [hashes[indptr[i]:indptr[i + 1]].tolist() for i in range(indptr.shape[0] - 1)]


@given(rows=st.lists(st.lists(token, max_size=12), max_size=30),
       keys=st.lists(token, max_size=20), n_threads=st.integers(1, 4))
def test_equals_the_definition(rows, keys, n_threads):
    # empty rows, rows with no kept token, repeats in rows and keys, no keys
    got, counts = restricted(rows, keys, n_threads)
    assert got == ref.restrict_rows(rows, keys)
    assert counts == ref_counts(rows, keys)


@pytest.mark.parametrize("keep", [0.0, 0.3, 1.0])
def test_parallel_blocks_give_the_serial_rows(rng, keep):
    # enough tokens for the threaded path; rows of 0..60 tokens, some all foreign
    rows = [rng.integers(0, 5000, rng.integers(0, 61)).tolist() for _ in range(4000)]
    keys = [k for k in range(5000) if rng.random() < keep]
    assert sum(map(len, rows)) >= 65536
    want = ref.restrict_rows(rows, keys)
    want_counts = ref_counts(rows, keys)
    for nt in (1, 2, 3, 8):
        got, counts = restricted(rows, keys, nt)
        assert got == want, nt
        assert counts == want_counts, nt


def test_inputs_are_not_modified(rng):
    rows = [rng.integers(0, 50, 30).tolist() for _ in range(3000)]
    indptr, hashes = flat(rows)
    _, slots = table(list(range(0, 50, 3)))
    before = (indptr.copy(), hashes.copy(), slots.copy())
    _vocab.restrict_rows(indptr, hashes, slots, 2)
    for a, b in zip((indptr, hashes, slots), before):
        np.testing.assert_array_equal(a, b)


def test_bad_input_is_refused():
    indptr, hashes = flat([[1, 2], [3]])
    _, slots = table([1])
    with pytest.raises(ValueError, match="does not cover"):
        _vocab.restrict_rows(np.array([0, 2, 4], dtype=np.int64), hashes, slots)
    with pytest.raises(ValueError, match="not sorted"):
        _vocab.restrict_rows(np.array([0, 3, 2, 3], dtype=np.int64), hashes, slots)
    with pytest.raises(ValueError, match="power of two"):
        _vocab.restrict_rows(indptr, hashes, slots[:6])
    bad = slots.copy()
    bad[1::2][bad[1::2] == 0] = 2**31 - 1
    with pytest.raises(ValueError, match="id out of range"):
        _vocab.restrict_rows(indptr, hashes, bad)
    with pytest.raises(ValueError, match="n_threads"):
        _vocab.restrict_rows(indptr, hashes, slots, 0)
