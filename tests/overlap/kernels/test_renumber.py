"""References renumbered by size inside the postings index: the same results.

Large reference sets are stored in size order (``_index.renumbers_by_size``): the
kernels search the renumbered rows and report the caller's ids.  Here the
renumbering is forced on small sets (``RENUMBER_MIN_ROWS = 0``) and the
postings kernel forced for the top-k (the bit-sliced kernel keeps its own
order), then every search is compared with the plain-Python definitions, with
the same search not renumbered, and across thread counts.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference import overlap as ref
from overlap import OverlapIndex, TokenSets, _dispatch, _index, dedup
from overlap._kernels import _collection
from overlap import max_overlap, overlap_join
from reference.helpers import as_arrays, build, collections, ref_units


@contextlib.contextmanager
def renumbering(on: bool = True):
    """Renumber every reference set (on) or none (off); postings kernel for top-k."""
    saved = _index.RENUMBER_MIN_ROWS, _dispatch.FORCE_PATH
    _index.RENUMBER_MIN_ROWS = 0 if on else 1 << 62
    _dispatch.FORCE_PATH = "postings"
    try:
        yield
    finally:
        _index.RENUMBER_MIN_ROWS, _dispatch.FORCE_PATH = saved


def same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@given(st.data(), st.booleans(), st.integers(1, 4),
       st.sampled_from([0.0, 0.2, 0.5, 2 / 3, 1.0]))
def test_top_k_of_renumbered_references_is_the_plain_search(data, multiset, top_k, min_score):
    nf = data.draw(st.integers(1, 3))
    q = build(data.draw(collections(nf)), multiset)
    r = build(data.draw(collections(nf)), multiset)
    with renumbering(False):
        plain = max_overlap(q, r, top_k=top_k, min_score=min_score, n_threads=1)
    with renumbering():
        for nt in (1, 2):
            got = max_overlap(q, r, top_k=top_k, min_score=min_score, n_threads=nt)
            same(got, plain)


@given(st.data(), st.booleans(), st.integers(1, 4),
       st.sampled_from([0.0, 0.2, 0.5, 2 / 3, 1.0]))
def test_top_k_against_renumbered_references_matches_brute_force(data, multiset, top_k,
                                                                 min_score):
    nf = data.draw(st.integers(1, 3))
    q, r = data.draw(collections(nf)), data.draw(collections(nf))
    want = ref.max_overlap(ref_units(q, multiset), ref_units(r, multiset), top_k, min_score)
    ws, wi = as_arrays(want, top_k)
    with renumbering():
        for nt in (1, 2):
            res = max_overlap(build(q, multiset), build(r, multiset), top_k=top_k,
                              min_score=min_score, n_threads=nt)
            np.testing.assert_array_equal(res.score.reshape(-1, top_k), ws)
            np.testing.assert_array_equal(res.index.reshape(-1, top_k), wi)


@given(st.data(), st.booleans(), st.integers(1, 3), st.sampled_from([0.0, 0.5, 0.9]))
def test_all_against_rest_of_renumbered_references(data, multiset, top_k, min_score):
    nf = data.draw(st.integers(1, 2))
    u = data.draw(collections(nf))
    want = ref.max_overlap(ref_units(u, multiset), None, top_k, min_score)
    ws, wi = as_arrays(want, top_k)
    with renumbering():
        for nt in (1, 2):
            res = OverlapIndex(build(u, multiset)).max_overlap(
                None, top_k=top_k, min_score=min_score, n_threads=nt)
            np.testing.assert_array_equal(res.score.reshape(-1, top_k), ws)
            np.testing.assert_array_equal(res.index.reshape(-1, top_k), wi)


@given(st.data(), st.booleans(), st.sampled_from([0.1, 0.25, 0.5, 2 / 3, 0.8, 1.0]))
def test_joins_of_renumbered_references_match_brute_force(data, multiset, threshold):
    nf = data.draw(st.integers(1, 2))
    a, b = data.draw(collections(nf)), data.draw(collections(nf))
    want = ref.join(ref_units(a, multiset), ref_units(b, multiset), threshold)
    self_want = ref.join(ref_units(a, multiset), None, threshold)
    with renumbering():
        for nt in (1, 2):
            got = overlap_join(build(a, multiset), build(b, multiset), threshold=threshold,
                               n_threads=nt)
            assert list(zip(got.left.tolist(), got.right.tolist(), got.score.tolist())) == want
            got = overlap_join(build(a, multiset), threshold=threshold, n_threads=nt)
            assert list(zip(got.left.tolist(), got.right.tolist(),
                            got.score.tolist())) == self_want


@given(st.data(), st.booleans(), st.sampled_from([0.0, 0.5, 2 / 3, 0.8, 1.0]))
def test_dedup_of_renumbered_units_is_the_literal_method(data, multiset, threshold):
    u = data.draw(collections(data.draw(st.integers(1, 2)), max_rows=30))
    present, kept_for, passes, cluster = ref.dedup(ref_units(u, multiset), threshold)
    with renumbering():
        got = dedup(build(u, multiset), threshold=threshold, n_threads=2)
    assert got.keep.tolist() == present
    assert got.kept_for.tolist() == kept_for
    assert got.passes == passes
    assert got.cluster.tolist() == cluster


def test_ties_across_sizes_go_to_the_lowest_original_index():
    # reference 0 (12 tokens) and reference 1 (4 tokens) score 0.5 against the
    # query; in size order reference 1 comes first, and must still lose the tie
    q = TokenSets.from_ids([[1, 2, 3, 4]])
    r = TokenSets.from_ids([[1, 2, 3, 4] + list(range(100, 108)), [1, 2, 50, 51], [60]])
    with renumbering():
        idx = OverlapIndex(r)
        assert idx._coll.ids.tolist() == [2, 1, 0]  # renumbered indeed
        res = idx.max_overlap(q, top_k=2)
        assert res.index.tolist() == [[0, 1]] and res.score.tolist() == [[0.5, 0.5]]
        assert idx.max_overlap(q).index.tolist() == [0]


def test_exact_duplicates_answer_the_lowest_original_index():
    rows = [[5, 6, 7], [1, 2], [9], [1, 2], [5, 6, 7]]
    r = TokenSets.from_ids(rows)
    q = TokenSets.from_ids([[1, 2], [5, 6, 7]])
    with renumbering():
        idx = OverlapIndex(r)
        assert idx._coll.ids is not None
        res = idx.max_overlap(q)
        assert res.index.tolist() == [1, 0] and res.score.tolist() == [1.0, 1.0]
        rest = idx.max_overlap(None)
        assert rest.index.tolist() == [4, 3, -1, 1, 0]


def test_queries_against_renumbered_references_are_renumbered_too():
    r = TokenSets.from_ids([[1, 2, 3], [1], [1, 2]])
    with renumbering():
        idx = OverlapIndex(r)
        qcoll = idx._prepare(r, "queries", "references")[0]
        assert qcoll.ids.tolist() == [1, 2, 0]
    with renumbering(False):
        assert OverlapIndex(r)._coll.ids is None


@given(st.integers(0, 60), st.integers(0, 2 ** 32))
def test_size_order_is_a_stable_lexsort_by_field_sizes(n, seed):
    rng = np.random.default_rng(seed)
    for nf in (1, 2, 3):
        sz = rng.integers(0, 5, size=nf * n).astype(np.int64)
        want = np.lexsort(tuple(sz[f * n:(f + 1) * n] for f in reversed(range(nf))))
        np.testing.assert_array_equal(_collection.size_order(sz, nf, n), want)
    # sizes spanning more than a counting sort takes: the argsort fallback
    sz = np.array([10 ** 12, 3, 10 ** 12, 0] * max(1, n // 4), dtype=np.int64)
    m = sz.shape[0]
    np.testing.assert_array_equal(_collection.size_order(sz, 1, m), np.argsort(sz, kind="stable"))


@given(st.lists(st.lists(st.integers(0, 50), max_size=9), max_size=30), st.booleans(),
       st.integers(1, 3))
def test_gather_field_copies_the_rows_in_order(rows_, multiset, n_threads):
    ts = TokenSets.from_ids(rows_, multiset=multiset)
    order = np.random.default_rng(len(rows_)).permutation(len(ts)).astype(np.int64)
    h = np.zeros(ts.nnz + 5, dtype=np.uint64)
    c = np.zeros(ts.nnz + 5 if multiset else 0, dtype=np.uint32)
    before = ts.hashes.copy()
    ip = _collection.gather_field(ts.indptr, ts.hashes,
                              ts.counts if multiset else np.zeros(0, np.uint32), order, h, c, 5,
                              n_threads)
    np.testing.assert_array_equal(ts.hashes, before)
    assert ip[0] == 5 and ip[-1] == ts.nnz + 5
    for k, r in enumerate(order):
        a, b = ts.indptr[r], ts.indptr[r + 1]
        np.testing.assert_array_equal(h[ip[k]:ip[k + 1]], ts.hashes[a:b])
        if multiset:
            np.testing.assert_array_equal(c[ip[k]:ip[k + 1]], ts.counts[a:b])


def test_collection_ids_are_a_private_read_only_copy():
    ids = np.array([1, 0], dtype=np.int64)
    i64 = lambda a: np.asarray(a, dtype=np.int64)  # noqa: E731
    coll = _collection.Collection(i64([0, 1, 2]), np.array([3, 4], dtype=np.uint64),
                              np.zeros(0, np.uint32), i64([1, 1]), 1, 2, False, ids=ids)
    ids[0] = 7
    assert coll.ids.tolist() == [1, 0]
    with pytest.raises(ValueError):
        coll.ids[0] = 1
