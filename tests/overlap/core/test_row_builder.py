"""``RowBuilder`` (the blocks of ``TokenSets.from_texts`` appended into one
set of arrays) equals the concatenation of the blocks, whatever their sizes:
blocks denser than the first (the arrays regrow), empty blocks, blocks of no
rows, one block."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap._row_builder import RowBuilder

row = st.lists(st.integers(0, 2**64 - 1), max_size=40)
block = st.lists(row, max_size=8)


def _block(rows, multiset):
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    hashes = np.array([h for r in rows for h in r], dtype=np.uint64)
    counts = (np.arange(1, len(hashes) + 1, dtype=np.uint32) if multiset else None)
    return indptr, hashes, counts


@settings(max_examples=150, deadline=None)
@given(st.lists(block, min_size=1, max_size=8), st.booleans())
def test_rows_equal_the_blocks_concatenated(blocks, multiset):
    parts = [_block(b, multiset) for b in blocks]
    out = RowBuilder(sum(len(b) for b in blocks), multiset)
    for p in parts:
        out.add(*p)
    indptr, hashes, counts = out.result()
    want_rows = [r for b in blocks for r in b]
    assert indptr.dtype == np.int64 and hashes.dtype == np.uint64
    assert indptr.tolist() == [0, *np.cumsum([len(r) for r in want_rows]).tolist()]
    assert hashes.tolist() == [h for r in want_rows for h in r]
    if multiset:
        assert counts.tolist() == [c for p in parts for c in p[2].tolist()]
    else:
        assert counts is None


def test_a_denser_block_regrows_the_arrays():
    out = RowBuilder(4, False)
    out.add(*_block([[1], [2]], False))  # one hash a row: room for about two more
    out.add(*_block([list(range(100)), list(range(50))], False))
    indptr, hashes, _ = out.result()
    assert indptr.tolist() == [0, 1, 2, 102, 152]
    assert hashes.tolist() == [1, 2, *range(100), *range(50)]


def test_row_counts_are_checked():
    out = RowBuilder(1, False)
    with pytest.raises(ValueError, match="2 rows added, 1 expected"):
        out.add(*_block([[1], [2]], False))
    out = RowBuilder(3, False)
    out.add(*_block([[1]], False))
    with pytest.raises(ValueError, match="1 rows added, 3 expected"):
        out.result()
