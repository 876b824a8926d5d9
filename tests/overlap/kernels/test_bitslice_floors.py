"""Per-query score floors (``OverlapIndex._max_overlap_above``, the bit-sliced
kernel's ``floors=``): each query's top-k among the references scoring at
least its own floor, as the plain-Python definition says, on both kernels,
every SIMD level and thread count; and the streamed search that uses them.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import overlap
from overlap import OverlapIndex, TokenSets, _bitslice_index
from overlap._validation import MEASURES
from overlap.stream import stream_max_overlap
from reference import overlap as ref
from reference.helpers import as_arrays, build, chunked, collections, make_corpus, ref_units
from reference.levels import BITSLICE_LEVELS, cpu_level, forced_path


@contextlib.contextmanager
def kernel(path, level=None):
    """Run on ``path``; the bit-sliced index gets bitmaps from a document
    frequency of 2, so that small corpora exercise them."""
    saved = _bitslice_index.MIN_DF
    _bitslice_index.MIN_DF = 2
    try:
        with forced_path(path), cpu_level(BITSLICE_LEVELS[-1] if level is None else level):
            yield
    finally:
        _bitslice_index.MIN_DF = saved


@st.composite
def floors_for(draw, qunits, runits, measure):
    """One floor per query: 0, 1, random, or exactly a score the query reaches
    (ties with the floor must be kept)."""
    out = []
    for q in qunits:
        reached = sorted({ref.sample_ratio(q, r, measure) for r in runits})
        choices = [st.just(0.0), st.just(1.0), st.floats(0.0, 1.0)]
        if reached:
            choices.append(st.sampled_from(reached))
        out.append(draw(st.one_of(*choices)))
    return np.array(out, dtype=np.float64)


@pytest.mark.parametrize("path", ["bitslice", "postings"])
@settings(max_examples=60, deadline=None)
@given(data=st.data(), top_k=st.integers(1, 3), measure=st.sampled_from(MEASURES),
       level=st.sampled_from(BITSLICE_LEVELS), n_threads=st.sampled_from([1, 2, 3]))
def test_each_query_is_searched_above_its_own_floor(path, data, top_k, measure, level,
                                                    n_threads):
    qf = data.draw(collections())
    rf = data.draw(collections(n_fields=len(qf), min_rows=1))
    qu, ru = ref_units(qf, False), ref_units(rf, False)
    floors = data.draw(floors_for(qu, ru, measure))
    before = floors.copy()
    with kernel(path, level):
        score, index = OverlapIndex(build(rf, False))._max_overlap_above(
            build(qf, False), floors, top_k=top_k, measure=measure, n_threads=n_threads)
    want_s, want_i = as_arrays(ref.max_overlap_above(qu, ru, floors.tolist(), top_k, measure),
                               top_k)
    np.testing.assert_array_equal(score, want_s)
    np.testing.assert_array_equal(index, want_i)
    np.testing.assert_array_equal(floors, before)  # the caller's array is left alone


def test_same_result_for_every_thread_count_on_a_zipf_corpus():
    rng = np.random.default_rng(29)
    rows = make_corpus(rng, 3000)
    q, r = TokenSets.from_ids(rows[:300]), TokenSets.from_ids(rows[300:])
    floors = rng.choice([0.0, 0.2, 0.4, 0.6, 0.9, 1.0], size=300)
    with kernel("bitslice"):
        index = OverlapIndex(r)
        got = [index._max_overlap_above(q, floors, top_k=2, n_threads=t) for t in (1, 2, 4)]
    for s, i in got[1:]:
        np.testing.assert_array_equal(s, got[0][0])
        np.testing.assert_array_equal(i, got[0][1])
    # floors 0 everywhere is max_overlap itself
    with kernel("bitslice"):
        plain = index.max_overlap(q, top_k=2)
        zero = index._max_overlap_above(q, np.zeros(300), top_k=2)
    np.testing.assert_array_equal(zero[0], plain.score)
    np.testing.assert_array_equal(zero[1], plain.index)


@pytest.mark.parametrize("bad, message", [
    (np.zeros(2), r"shape \(3,\)"),
    (np.zeros(3, dtype=np.float32), "float64"),
    (np.array([0.0, np.nan, 0.5]), r"\[0, 1\]"),
    (np.array([0.0, 1.5, 0.5]), r"\[0, 1\]"),
    (np.array([-0.1, 0.0, 0.5]), r"\[0, 1\]"),
])
@pytest.mark.parametrize("path", ["bitslice", "postings"])
def test_bad_floors_are_refused(bad, message, path):
    q = TokenSets.from_ids([[1, 2], [2, 3], [4]])
    with kernel(path), pytest.raises(ValueError, match=message):
        OverlapIndex(TokenSets.from_ids([[1, 2, 3]] * 5))._max_overlap_above(q, bad)


def test_the_kernel_refuses_floors_it_cannot_use():
    from overlap import _index

    r = (TokenSets.from_ids([[1, 2, 3]] * 5),)
    bx = _bitslice_index.build(r, 1, 2)
    q = _index.collection((TokenSets.from_ids([[1, 2], [2]]),))
    s, i = np.zeros((2, 1)), np.full((2, 1), -1, dtype=np.int64)
    with pytest.raises(ValueError, match="one score per query"):
        bx.top_k(q, 0, 2, 1, 0.0, False, 8, 1, s, i, 0, np.zeros(3))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        bx.top_k(q, 0, 2, 1, 0.0, False, 8, 1, s, i, 0, np.array([0.5, np.nan]))


@pytest.mark.parametrize("measure", MEASURES)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), top_k=st.integers(1, 3),
       min_score=st.sampled_from([0.0, 0.25, 0.5, 1.0]),
       sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4),
       n_threads=st.sampled_from([1, 2]))
def test_streamed_chunks_on_the_bitsliced_kernel_equal_the_definition(
        measure, data, top_k, min_score, sizes, n_threads):
    """Every chunk indexed and searched with the running floors on the
    bit-sliced kernel (the default path from 1,024 rows a chunk on)."""
    qf = data.draw(collections())
    rf = data.draw(collections(n_fields=len(qf), min_rows=1))
    with kernel("bitslice"):
        got = stream_max_overlap(build(qf, False), chunked(build(rf, False), sizes),
                                 top_k=top_k, min_score=min_score, index="chunk",
                                 measure=measure, n_threads=n_threads)
    want = ref.max_overlap(ref_units(qf, False), ref_units(rf, False), top_k, min_score,
                           measure)
    score, idx = as_arrays(want, top_k)
    np.testing.assert_array_equal(np.reshape(got.score, (-1, top_k)), score)
    np.testing.assert_array_equal(np.reshape(got.index, (-1, top_k)), idx)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_streamed_zipf_corpus_in_large_chunks_equals_one_search(n_threads):
    """Chunks above the bit-sliced kernel's size floor, with the default dispatch."""
    rng = np.random.default_rng(2029)
    rows = make_corpus(rng, 6000)
    q, r = TokenSets.from_ids(rows[:400]), TokenSets.from_ids(rows[400:])
    for top_k, min_score in [(1, 0.0), (3, 0.0), (1, 0.4)]:
        got = stream_max_overlap(q, chunked((r,), [2048, 1100]), top_k=top_k,
                                 min_score=min_score, index="chunk", n_threads=n_threads)
        want = overlap.max_overlap(q, r, top_k=top_k, min_score=min_score, n_threads=1)
        np.testing.assert_array_equal(got.score, want.score)
        np.testing.assert_array_equal(got.index, want.index)
