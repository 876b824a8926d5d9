"""``measure=``: every set measure, on both kernels, against the plain-Python definitions.

The kernels prune with the bounds of ``overlap/_kernels/_bounds.pxd`` (checked
on their own in tests/overlap/kernels/test_bounds.py); here the whole search,
join, dedup and ``ratio`` with each measure are compared with a brute-force
evaluation of the specification (tests/reference/overlap.py), bit for bit,
ties to the lowest index, on both kernels and several thread counts.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from overlap import TokenSets, dedup, max_overlap, overlap_join, ratio
from overlap._kernels import _bounds_arrays
from overlap._validation import MEASURES
from reference import overlap as ref
from reference.helpers import as_arrays, build, collections, make_corpus, ref_units
from reference.levels import forced_path

SYMMETRIC = [m for m in MEASURES if m != "containment"]
PATHS = ["postings", "bitslice"]
THRESHOLDS = [0.1, 0.25, 0.5, 0.6, 2 / 3, 0.75, 0.8, 1.0]


def test_measure_names_follow_the_kernels_enum():
    assert MEASURES == _bounds_arrays.MEASURES


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("measure", MEASURES)
@settings(max_examples=40, deadline=None)
@given(st.data(), st.booleans(), st.integers(1, 3), st.sampled_from([0.0, 0.2, 0.5, 2 / 3, 1.0]))
def test_max_overlap_matches_brute_force(path, measure, data, multiset, top_k, min_score):
    with forced_path(path):
        qf = data.draw(collections())
        rf = data.draw(collections(n_fields=len(qf)))
        got = max_overlap(build(qf, multiset), build(rf, multiset), top_k=top_k,
                          min_score=min_score, measure=measure, n_threads=2)
        want = ref.max_overlap(ref_units(qf, multiset), ref_units(rf, multiset), top_k,
                               min_score, measure)
        score, index = as_arrays(want, top_k)
        assert_array_equal(np.asarray(got.score).reshape(-1, top_k), score)
        assert_array_equal(np.asarray(got.index).reshape(-1, top_k), index)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("measure", MEASURES)
@settings(max_examples=30, deadline=None)
@given(st.data(), st.booleans(), st.integers(1, 3), st.sampled_from([0.0, 0.5, 0.9]))
def test_all_against_rest_matches_brute_force(path, measure, data, multiset, top_k, min_score):
    with forced_path(path):
        f = data.draw(collections())
        got = max_overlap(build(f, multiset), top_k=top_k, min_score=min_score, measure=measure)
        want = ref.max_overlap(ref_units(f, multiset), None, top_k, min_score, measure)
        score, index = as_arrays(want, top_k)
        assert_array_equal(np.asarray(got.score).reshape(-1, top_k), score)
        assert_array_equal(np.asarray(got.index).reshape(-1, top_k), index)


def _pairs(res):
    return list(zip(res.left.tolist(), res.right.tolist(), res.score.tolist()))


@pytest.mark.parametrize("measure", MEASURES)
@settings(max_examples=40, deadline=None)
@given(st.data(), st.booleans(), st.sampled_from(THRESHOLDS))
def test_join_matches_brute_force(measure, data, multiset, threshold):
    lf = data.draw(collections())
    rf = data.draw(collections(n_fields=len(lf)))
    got = overlap_join(build(lf, multiset), build(rf, multiset), threshold=threshold,
                       measure=measure, n_threads=2)
    assert _pairs(got) == ref.join(ref_units(lf, multiset), ref_units(rf, multiset),
                                   threshold, measure)
    if measure in SYMMETRIC:
        got = overlap_join(build(lf, multiset), threshold=threshold, measure=measure)
        assert _pairs(got) == ref.join(ref_units(lf, multiset), None, threshold, measure)


@pytest.mark.parametrize("measure", SYMMETRIC)
@settings(max_examples=30, deadline=None)
@given(st.data(), st.booleans(), st.sampled_from([0.0, 0.3, 0.5, 0.8, 0.99]))
def test_dedup_matches_the_published_method(measure, data, multiset, threshold):
    f = data.draw(collections(max_rows=20))
    got = dedup(build(f, multiset), threshold=threshold, measure=measure)
    present, kept_for, passes, cluster = ref.dedup(ref_units(f, multiset), threshold, measure)
    assert got.keep.tolist() == present
    assert got.kept_for.tolist() == kept_for
    assert got.cluster.tolist() == cluster


@pytest.mark.parametrize("measure", MEASURES)
@settings(max_examples=30, deadline=None)
@given(st.data(), st.booleans())
def test_ratio_matches_the_definition(measure, data, multiset):
    a = data.draw(collections(min_rows=1))
    b = data.draw(collections(n_fields=len(a), min_rows=len(a[0]), max_rows=len(a[0])))
    got = ratio(build(a, multiset), build(b, multiset), measure=measure)
    ua, ub = ref_units(a, multiset), ref_units(b, multiset)
    assert got.tolist() == [ref.sample_ratio(x, y, measure) for x, y in zip(ua, ub)]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("measure", MEASURES)
def test_larger_corpus_against_brute_force_for_every_thread_count(path, measure, n_threads):
    with forced_path(path):
        rng = np.random.default_rng(20261204)
        rows = make_corpus(rng, 260)
        refs, queries = TokenSets.from_ids(rows[:200]), TokenSets.from_ids(rows[200:])
        got = max_overlap(queries, refs, top_k=2, measure=measure, n_threads=n_threads)
        want = ref.max_overlap([(ref.bag(r),) for r in rows[200:]],
                               [(ref.bag(r),) for r in rows[:200]], 2, 0.0, measure)
        score, index = as_arrays(want, 2)
        assert_array_equal(got.score, score)
        assert_array_equal(got.index, index)
        pairs = overlap_join(queries, refs, threshold=0.5, measure=measure, n_threads=n_threads)
        assert _pairs(pairs) == ref.join([(ref.bag(r),) for r in rows[200:]],
                                         [(ref.bag(r),) for r in rows[:200]], 0.5, measure)


@pytest.mark.parametrize("path", PATHS)
def test_containment_is_directional_and_ties_go_to_the_lowest_index(path):
    with forced_path(path):
        # the query {1, 2} lies wholly inside references 0 and 2; 1 is identical
        queries = TokenSets.from_ids([[1, 2]])
        refs = TokenSets.from_ids([[1, 2, 3, 4], [1, 2], [1, 2, 9]])
        got = max_overlap(queries, refs, top_k=3, measure="containment")
        assert got.score.tolist() == [[1.0, 1.0, 1.0]]
        assert got.index.tolist() == [[0, 1, 2]]
        # the other way round: reference 0 is half inside the query
        back = max_overlap(refs, queries, measure="containment")
        assert back.score.tolist() == [0.5, 1.0, 2 / 3]
        top1 = max_overlap(queries, refs, measure="overlap")
        assert (top1.score.tolist(), top1.index.tolist()) == ([1.0], [0])


def test_a_row_inside_a_larger_one_is_a_duplicate_under_overlap():
    units = TokenSets.from_ids([[1, 2, 3, 4, 5, 6], [1, 2, 3], [7, 8]])
    assert dedup(units, threshold=0.9).keep.tolist() == [True, True, True]
    res = dedup(units, threshold=0.9, measure="overlap")
    assert res.keep.tolist() == [False, True, True]
    assert res.kept_for.tolist() == [1, -1, -1]


@pytest.mark.parametrize("call", [
    lambda ts: overlap_join(ts, threshold=0.5, measure="containment"),
    lambda ts: dedup(ts, measure="containment"),
])
def test_asymmetric_containment_is_refused_where_pairs_are_listed_once(call):
    ts = TokenSets.from_ids([[1, 2], [2, 3]])
    with pytest.raises(ValueError, match="containment.*asymmetric.*'overlap'"):
        call(ts)


@pytest.mark.parametrize("bad", ["Dice", "tversky", "", None, 1])
def test_unknown_measures_are_named(bad):
    ts = TokenSets.from_ids([[1, 2], [2, 3]])
    for call in (lambda: max_overlap(ts, ts, measure=bad),
                 lambda: overlap_join(ts, ts, threshold=0.5, measure=bad),
                 lambda: ratio(ts, ts, measure=bad),
                 lambda: dedup(ts, measure=bad)):
        with pytest.raises(ValueError, match="measure must be one of"):
            call()
