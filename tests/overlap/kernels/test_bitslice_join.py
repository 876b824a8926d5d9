"""The bit-sliced threshold join against the plain-Python join and the postings join.

``OverlapIndex.join`` takes the bit-sliced kernel for small reference sets
(``overlap._dispatch.use_bitslice_join``); both kernels must list the same
pairs with the same float64 scores, sorted the same way, for every measure,
field count, CPU level and thread count.  The path is forced through
``overlap._dispatch.FORCE_PATH``.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from overlap import OverlapIndex, TokenSets
from overlap import _bitslice_index, _dispatch, _index
from overlap._validation import MEASURES
from overlap.stream import StreamMerger
from reference import overlap as ref
from reference.helpers import build, chunked, collections, make_corpus, ref_units
from reference.levels import BITSLICE_LEVELS, cpu_level, forced_path


@contextlib.contextmanager
def join_min_df(min_df: int):
    """Build the join's bit-sliced indexes with bitmaps from ``min_df`` on."""
    prev = _bitslice_index.JOIN_MIN_DF
    _bitslice_index.JOIN_MIN_DF = min_df
    try:
        yield
    finally:
        _bitslice_index.JOIN_MIN_DF = prev


def as_triples(res) -> list:
    return list(zip(res.left.tolist(), res.right.tolist(), res.score.tolist()))


def boundary_thresholds(want: list, extra: float) -> list:
    """Thresholds its scores hit exactly, the next float above one, and ``extra``."""
    scores = sorted({s for _, _, s in want if s > 0.0})
    picks = {extra}
    if scores:
        picks.add(scores[len(scores) // 2])
        picks.add(scores[-1])
        picks.add(float(np.nextafter(scores[0], 2.0)))
    return sorted(t for t in picks if 0.0 < t <= 1.0)


@given(q=collections(), r_data=st.data(), measure=st.sampled_from(MEASURES),
       extra=st.sampled_from([1e-9, 0.2, 0.5, 2 / 3, 0.8, 1.0]),
       level=st.sampled_from(BITSLICE_LEVELS), n_threads=st.sampled_from([1, 2]),
       min_df=st.sampled_from([1, 2, 32]))
def test_join_matches_the_reference_and_the_postings_join(q, r_data, measure, extra, level,
                                                          n_threads, min_df):
    r = r_data.draw(collections(n_fields=len(q)))
    qf, rf = build(q, False), build(r, False)
    want_all = ref.join(ref_units(q, False), ref_units(r, False), 1e-300, measure)
    for t in boundary_thresholds(want_all, extra):
        want = [(i, j, s) for i, j, s in want_all if s >= t]
        with join_min_df(min_df), cpu_level(level):
            with forced_path("bitslice"):
                got = OverlapIndex(rf, n_threads=1).join(qf, threshold=t, measure=measure,
                                                         n_threads=n_threads)
            with forced_path("postings"):
                post = OverlapIndex(rf, n_threads=1).join(qf, threshold=t, measure=measure,
                                                          n_threads=n_threads)
        assert as_triples(got) == want, f"threshold={t!r}"
        assert as_triples(post) == want, f"threshold={t!r}"


@given(u=collections(), measure=st.sampled_from([m for m in MEASURES if m != "containment"]),
       t=st.sampled_from([1e-9, 0.3, 0.5, 2 / 3, 1.0]), level=st.sampled_from(BITSLICE_LEVELS),
       n_threads=st.sampled_from([1, 2]))
def test_self_join_lists_each_pair_once_as_the_reference_does(u, measure, t, level, n_threads):
    fields = build(u, False)
    want = ref.join(ref_units(u, False), None, t, measure)
    with cpu_level(level), forced_path("bitslice"):
        got = OverlapIndex(fields, n_threads=1).join(threshold=t, measure=measure,
                                                     n_threads=n_threads)
    assert as_triples(got) == want


@pytest.mark.parametrize("level", BITSLICE_LEVELS)
@pytest.mark.parametrize("n_fields", [1, 2])
def test_equals_postings_on_larger_zipf_corpora_for_every_thread_count(rng, level, n_fields):
    # several blocks of 512 references, bitmaps and postings both in use
    refs = [TokenSets.from_ids(make_corpus(rng, 1500)) for _ in range(n_fields)]
    queries = [TokenSets.from_ids(make_corpus(rng, 700)) for _ in range(n_fields)]
    with cpu_level(level):
        index = OverlapIndex(refs, n_threads=1)
        for measure in MEASURES:
            for t in (0.25, 0.5, 0.8, 1.0):
                with forced_path("postings"):
                    want = index.join(queries, threshold=t, measure=measure, n_threads=1)
                with forced_path("bitslice"):
                    for nt in (1, 2, 3):
                        got = index.join(queries, threshold=t, measure=measure, n_threads=nt)
                        np.testing.assert_array_equal(got.left, want.left)
                        np.testing.assert_array_equal(got.right, want.right)
                        np.testing.assert_array_equal(got.score, want.score)
    assert index._bitslice.join_index.n_rows > 0  # frequent tokens had bitmaps


def test_empty_rows_and_empty_sides():
    rows_ = [[], [1, 2], [], [1, 2]]
    a = TokenSets.from_ids(rows_)
    units = [(ref.bag(x),) for x in rows_]
    empty = TokenSets.from_ids([])
    with forced_path("bitslice"):
        got = as_triples(OverlapIndex(a).join(a, threshold=0.5))
        assert got == ref.join(units, units, 0.5)
        assert len(got) == 4
        assert len(OverlapIndex(a).join(empty, threshold=0.5)) == 0
        assert len(OverlapIndex(empty).join(a, threshold=0.5)) == 0


def test_multisets_fall_back_to_the_postings_join():
    rows_ = [[1, 1, 2], [1, 2, 2], [3], [1, 1, 2]]
    bags = TokenSets.from_ids(rows_, multiset=True)
    units = [(ref.bag(x, 1, True),) for x in rows_]
    with forced_path("bitslice"):
        index = OverlapIndex(bags)
        got = index.join(bags, threshold=0.5)
    assert as_triples(got) == ref.join(units, units, 0.5)
    assert index._bitslice._join_index is None  # never built


def test_the_dispatch_rule_picks_small_reference_sets_of_sets():
    small = (TokenSets.from_ids([[i, i + 1] for i in range(_dispatch.JOIN_MAX_REFS)]),)
    large = (TokenSets.from_ids([[i, i + 1] for i in range(_dispatch.JOIN_MAX_REFS + 1)]),)
    bags = (TokenSets.from_ids([[1, 1]], multiset=True),)
    assert _dispatch.use_bitslice_join(small, 10)
    assert not _dispatch.use_bitslice_join(large, 10)
    assert not _dispatch.use_bitslice_join(small, 0)
    assert not _dispatch.use_bitslice_join(bags, 10)
    with forced_path("bitslice"):
        assert _dispatch.use_bitslice_join(large, 10)
        assert not _dispatch.use_bitslice_join(bags, 10)
    with forced_path("postings"):
        assert not _dispatch.use_bitslice_join(small, 10)


def test_join_builds_the_bit_sliced_index_only_where_the_rule_picks_it():
    refs = TokenSets.from_ids([[1, 2, 3], [2, 3, 4]])
    index = OverlapIndex(refs)
    with forced_path("postings"):
        index.join(refs, threshold=0.5)
    assert index._bitslice._join_index is None
    index.join(refs, threshold=0.5)
    assert index._bitslice._join_index is not None


def _kernel_call(**kw):
    refs = (TokenSets.from_ids([[1, 2], [2, 3]]),)
    bx = _bitslice_index.build(refs, 1, 1)
    args = dict(queries=_index.collection(refs), start=0, stop=2, threshold=0.5,
                upper_only=False, max_row=2, n_threads=1, measure=0)
    args.update(kw)
    return bx.join(args.pop("queries"), *args.values())


def test_the_kernel_checks_its_arguments():
    left, right, score = _kernel_call()
    assert sorted(zip(left.tolist(), right.tolist())) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for bad in (0.0, -0.5, 1.5, float("nan")):
        with pytest.raises(ValueError, match="threshold"):
            _kernel_call(threshold=bad)
    with pytest.raises(ValueError, match="inconsistent"):
        _kernel_call(stop=3)
    with pytest.raises(ValueError, match="inconsistent"):
        _kernel_call(start=2, stop=1)
    with pytest.raises(ValueError, match="measure"):
        _kernel_call(measure=len(MEASURES))
    with pytest.raises(ValueError, match="max_row"):
        _kernel_call(max_row=1)
    with pytest.raises(ValueError, match="upper_only"):
        _kernel_call(queries=_index.collection((TokenSets.from_ids([[1]]),)), stop=1,
                     upper_only=True)
    with pytest.raises(ValueError, match="must be sets"):
        _kernel_call(queries=_index.collection((TokenSets.from_ids([[1, 1]], multiset=True),)),
                     stop=1)
    with pytest.raises(ValueError, match="same fields"):
        two = (TokenSets.from_ids([[1]]), TokenSets.from_ids([[1]]))
        _kernel_call(queries=_index.collection(two), stop=1)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_stream_scan_with_the_query_index_is_the_same_on_both_joins(rng, n_threads):
    queries = TokenSets.from_ids(make_corpus(rng, 300))
    refs = TokenSets.from_ids(make_corpus(rng, 2000))
    results = {}
    for path in ("postings", "bitslice"):
        with forced_path(path):
            m = StreamMerger(queries, top_k=2, min_score=0.5, index="queries",
                             n_threads=n_threads)
            for part in chunked((refs,), [700, 300]):
                m.add(part)
            results[path] = m.result()
    assert m.chunks["queries"] > 0
    np.testing.assert_array_equal(results["bitslice"].score, results["postings"].score)
    np.testing.assert_array_equal(results["bitslice"].index, results["postings"].index)
    assert (results["bitslice"].index >= 0).any()


@pytest.mark.parametrize("measure", MEASURES)
def test_probe_rows_on_the_size_bound_are_kept_and_those_past_it_dropped(measure):
    """A probe row is dropped on its size alone only where no indexed size can
    let it reach the threshold: rows holding every token of an indexed row,
    plus extra tokens up to and past the size where the score falls under it."""
    indexed = [list(range(10)), list(range(100, 104))]
    probes = [list(range(10)) + list(range(1000, 1000 + extra)) for extra in range(0, 40)]
    probes += [[], list(range(100, 104)), [100]]
    ru = [(ref.bag(r),) for r in indexed]
    pu = [(ref.bag(p),) for p in probes]
    for t in sorted({s for *_, s in ref.join(pu, ru, 0.01, measure)}):
        want = ref.join(pu, ru, t, measure)
        with forced_path("bitslice"), join_min_df(2):
            got = OverlapIndex(TokenSets.from_ids(indexed)).join(
                TokenSets.from_ids(probes), threshold=t, measure=measure)
        assert as_triples(got) == want, f"threshold={t!r}"
