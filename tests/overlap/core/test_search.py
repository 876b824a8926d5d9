"""max_overlap, overlap_join and ratio against the plain-Python definitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference import overlap as ref
from reference.helpers import as_arrays, build, collections, make_corpus, ref_units, row
from overlap import OverlapIndex, TokenSets, max_overlap, overlap_join, ratio

@given(st.data(), st.booleans(), st.integers(1, 4), st.sampled_from([0.0, 0.2, 0.5, 2 / 3, 1.0]),
       st.integers(1, 2))
def test_max_overlap_matches_brute_force(data, multiset, top_k, min_score, ngram):
    nf = data.draw(st.integers(1, 3))
    q = data.draw(collections(nf))
    r = data.draw(collections(nf))
    res = max_overlap(build(q, multiset, ngram), build(r, multiset, ngram),
                      top_k=top_k, min_score=min_score, n_threads=2)
    want = ref.max_overlap(ref_units(q, multiset, ngram), ref_units(r, multiset, ngram),
                           top_k, min_score)
    ws, wi = as_arrays(want, top_k)
    np.testing.assert_array_equal(res.score.reshape(-1, top_k), ws)
    np.testing.assert_array_equal(res.index.reshape(-1, top_k), wi)


@given(st.data(), st.booleans(), st.integers(1, 3), st.sampled_from([0.0, 0.5, 0.9]))
def test_all_against_rest_excludes_self(data, multiset, top_k, min_score):
    nf = data.draw(st.integers(1, 2))
    u = data.draw(collections(nf))
    res = max_overlap(build(u, multiset), None, top_k=top_k, min_score=min_score)
    want = ref.max_overlap(ref_units(u, multiset), None, top_k, min_score)
    ws, wi = as_arrays(want, top_k)
    np.testing.assert_array_equal(res.score.reshape(-1, top_k), ws)
    np.testing.assert_array_equal(res.index.reshape(-1, top_k), wi)
    assert not (res.index.reshape(-1, top_k) == np.arange(len(u[0]))[:, None]).any()


@given(st.data(), st.booleans(), st.sampled_from([0.1, 0.25, 0.5, 0.6, 2 / 3, 0.75, 0.8, 1.0]))
def test_join_matches_brute_force(data, multiset, threshold):
    nf = data.draw(st.integers(1, 2))
    a = data.draw(collections(nf))
    b = data.draw(collections(nf))
    got = overlap_join(build(a, multiset), build(b, multiset), threshold=threshold)
    want = ref.join(ref_units(a, multiset), ref_units(b, multiset), threshold)
    assert list(zip(got.left.tolist(), got.right.tolist(), got.score.tolist())) == want
    self_got = overlap_join(build(a, multiset), threshold=threshold)
    self_want = ref.join(ref_units(a, multiset), None, threshold)
    assert list(zip(self_got.left.tolist(), self_got.right.tolist(),
                    self_got.score.tolist())) == self_want


@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), min_size=1, max_size=30),
       st.integers(1, 9), st.integers(1, 10))
def test_join_threshold_is_the_exact_decimal(sizes, p, q):
    """A pair is kept iff 2*inter*den >= num*(a+b) for the threshold num/den."""
    if p > q:
        p, q = q, p
    threshold = p / q
    left, right, inters = [], [], []
    for a, b in sizes:
        inter = min(a, b) // 2 + 1 if min(a, b) > 1 else 1
        inter = min(inter, a, b)
        left.append(list(range(a)))
        right.append(list(range(a - inter, a - inter + b)))
        inters.append(inter)
    got = overlap_join(TokenSets.from_ids(left), TokenSets.from_ids(right), threshold=threshold)
    kept = {(i, j) for i, j in zip(got.left.tolist(), got.right.tolist())}
    for i, ((a, b), inter) in enumerate(zip(sizes, inters)):
        exact = 2 * inter * q >= p * (a + b)
        assert ((i, i) in kept) == exact, (a, b, inter, threshold)


def test_join_keeps_pairs_exactly_on_the_threshold():
    # (0,0): 2*4/(5+5) = 0.8 exactly; (1,1): 2*2/(3+3) = 2/3 exactly; (1,0): 0.75
    a = TokenSets.from_ids([[1, 2, 3, 4, 5], [1, 2, 3]])
    b = TokenSets.from_ids([[1, 2, 3, 4, 6], [1, 2, 7]])
    assert len(overlap_join(a, b, threshold=0.8)) == 1
    got = overlap_join(a, b, threshold=2 / 3)
    assert list(zip(got.left.tolist(), got.right.tolist())) == [(0, 0), (1, 0), (1, 1)]
    assert len(overlap_join(a, b, threshold=np.nextafter(0.8, 1.0))) == 0


@given(st.data(), st.booleans())
def test_ratio_matches_reference(data, multiset):
    nf = data.draw(st.integers(1, 3))
    a = data.draw(collections(nf, min_rows=0, max_rows=15))
    b = [[data.draw(row) for _ in col] for col in a]
    got = ratio(build(a, multiset), build(b, multiset))
    want = [ref.sample_ratio(x, y) for x, y in zip(ref_units(a, multiset), ref_units(b, multiset))]
    np.testing.assert_array_equal(got, np.asarray(want, dtype=float))


def test_ratio_edge_cases():
    ts = TokenSets.from_ids([[], [1], [1, 2], []])
    other = TokenSets.from_ids([[], [1], [3], [4]])
    np.testing.assert_array_equal(ratio(ts, other), [0.0, 1.0, 0.0, 0.0])


def test_ties_go_to_lowest_index_and_no_overlap_gives_minus_one():
    refs = TokenSets.from_ids([[9], [1, 2, 3], [1, 2, 4], [1, 2, 3]])
    qs = TokenSets.from_ids([[1, 2, 5], [7], [], [1, 2, 3]])
    res = max_overlap(qs, refs)
    assert res.index.tolist() == [1, -1, -1, 1]
    assert res.score.tolist() == [2 / 3, 0.0, 0.0, 1.0]
    top = max_overlap(qs, refs, top_k=3)
    assert top.index[0].tolist() == [1, 2, 3]
    assert top.index[1].tolist() == [-1, -1, -1]


def test_top1_answers_exact_duplicates_from_the_fingerprint_order(monkeypatch):
    """Identical rows are found by fingerprint, without reading a posting.

    The fingerprint order is sorted on the first top-1 search (a join never
    needs it); it must be numpy's stable argsort of the fingerprints.
    """
    from overlap import _dispatch

    monkeypatch.setattr(_dispatch, "FORCE_PATH", "postings")
    refs = TokenSets.from_ids([[5, 6], [1, 2, 3], [4], [3, 2, 1], [1, 2, 3], [4]])
    idx = OverlapIndex(refs)
    idx.join(refs, threshold=0.5)
    qs = TokenSets.from_ids([[2, 3, 1], [4], [6, 5]])
    res = idx.max_overlap(qs)
    assert res.index.tolist() == [1, 2, 0] and res.score.tolist() == [1.0] * 3
    assert idx._index.last_stats[0] == 0  # no posting read: every query had a twin
    rest = idx.max_overlap(None)  # all vs rest: the twin is another row
    assert rest.index.tolist() == [-1, 3, 5, 1, 1, 2]
    fps, fpi = idx._index.fingerprint_order
    fp = idx._index.refs.fingerprints
    np.testing.assert_array_equal(fpi, np.argsort(fp, kind="stable"))
    np.testing.assert_array_equal(fps, fp[fpi])
    empty = OverlapIndex(TokenSets.from_ids([]))
    assert empty._index.fingerprint_order is None


def test_fingerprints_are_made_by_the_first_top1_search_only(monkeypatch):
    """A join or a top-3 search leaves both sides' fingerprints unmade; the
    first top-1 search makes them, the same for any thread count, and the
    exact-duplicate shortcut then answers from them."""
    from concurrent.futures import ThreadPoolExecutor

    from overlap import _dispatch, _index
    from overlap._kernels._collection import row_fingerprints

    monkeypatch.setattr(_dispatch, "FORCE_PATH", "postings")
    rows = [[5, 6], [1, 2, 3], [4], [3, 2, 1], [1, 2, 3], [4], []]
    refs = TokenSets.from_ids(rows)
    qs = TokenSets.from_ids([[2, 3, 1], [9], [6, 5]])
    idx = OverlapIndex(refs)
    coll = idx._coll
    idx.join(refs, threshold=0.5)
    idx.join(None, threshold=0.5)
    idx.max_overlap(qs, top_k=3)
    assert not coll.has_fingerprints
    res = idx.max_overlap(qs)
    assert coll.has_fingerprints
    assert res.index.tolist() == [1, -1, 0] and res.score.tolist() == [1.0, 0.0, 1.0]
    ip = np.ascontiguousarray(refs.indptr, dtype=np.int64)
    h = np.ascontiguousarray(refs.hashes, dtype=np.uint64)
    want = row_fingerprints(ip, h, np.zeros(0, dtype=np.uint32), 1, len(refs), False, 1)
    np.testing.assert_array_equal(coll.fingerprints, want)
    for nt in (1, 2, 3):
        fresh = _index.collection((refs,))
        np.testing.assert_array_equal(fresh.need_fingerprints(nt), want)
        assert fresh.need_fingerprints(1) is fresh.fingerprints  # made once
    shared = _index.collection((refs,))
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda nt: shared.need_fingerprints(nt), [1, 2, 3, 4] * 4))
    assert all(g is got[0] for g in got)
    np.testing.assert_array_equal(got[0], want)


def test_multi_field_takes_the_minimum():
    ctx = TokenSets.from_texts(["hello there friend", "hello there friend"])
    rsp = TokenSets.from_texts(["hi", "completely different words"])
    q_ctx = TokenSets.from_texts(["hello there friend"])
    q_rsp = TokenSets.from_texts(["completely different words"])
    res = max_overlap([q_ctx, q_rsp], [ctx, rsp])
    assert res.index.tolist() == [1] and res.score.tolist() == [1.0]
    ctx_only = max_overlap(q_ctx, ctx)
    assert ctx_only.index.tolist() == [0]


def test_min_score_hides_weaker_matches():
    refs = TokenSets.from_ids([[1, 2, 3, 4], [1, 9]])
    qs = TokenSets.from_ids([[1, 2, 3, 5], [1, 8]])
    res = max_overlap(qs, refs, min_score=0.6)
    assert res.index.tolist() == [0, -1]
    assert res.score.tolist() == [0.75, 0.0]


def test_index_reuse_matches_function():
    rng = np.random.default_rng(3)
    refs = TokenSets.from_ids([rng.integers(0, 50, rng.integers(0, 12)) for _ in range(300)])
    qs = TokenSets.from_ids([rng.integers(0, 50, rng.integers(0, 12)) for _ in range(100)])
    idx = OverlapIndex(refs)
    a, b = idx.max_overlap(qs), max_overlap(qs, refs)
    np.testing.assert_array_equal(a.score, b.score)
    np.testing.assert_array_equal(a.index, b.index)
    assert len(idx) == 300 and idx.n_fields == 1


@pytest.mark.parametrize("n_threads", [2, 3, 4])
def test_results_identical_for_every_thread_count(rng, n_threads):
    ctx = make_corpus(rng, 6000)
    rsp = make_corpus(rng, 6000)
    fields = [TokenSets.from_ids(ctx), TokenSets.from_ids(rsp)]
    queries = [f.take(np.arange(0, 6000, 2)) for f in fields]
    refs = [f.take(np.arange(1, 6000, 2)) for f in fields]
    # chunks of 2048*n_threads queries: several chunks and several threads run
    one = max_overlap(queries, refs, top_k=3, n_threads=1)
    many = max_overlap(queries, refs, top_k=3, n_threads=n_threads)
    np.testing.assert_array_equal(one.score, many.score)
    np.testing.assert_array_equal(one.index, many.index)
    s1 = max_overlap(fields, None, n_threads=1)
    sn = max_overlap(fields, None, n_threads=n_threads)
    np.testing.assert_array_equal(s1.index, sn.index)
    np.testing.assert_array_equal(s1.score, sn.score)
    j1 = overlap_join(fields[0], threshold=0.5, n_threads=1)
    jn = overlap_join(fields[0], threshold=0.5, n_threads=n_threads)
    for x, y in zip(j1, jn):
        np.testing.assert_array_equal(x, y)
    assert len(j1) > 100  # the corpus really has near-duplicates


def test_larger_random_corpus_against_brute_force(rng):
    ctx = make_corpus(rng, 400)
    units = ref_units([ctx], False)
    ts = TokenSets.from_ids(ctx)
    res = max_overlap(ts, None, top_k=2)
    ws, wi = as_arrays(ref.max_overlap(units, None, 2), 2)
    np.testing.assert_array_equal(res.score, ws)
    np.testing.assert_array_equal(res.index, wi)


def test_progress_callback_and_empty_inputs():
    seen = []
    refs = TokenSets.from_ids([[1, 2], [2, 3]])
    max_overlap(refs, refs, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (2, 2)
    empty = TokenSets.from_ids([])
    res = max_overlap(empty, refs)
    assert res.score.shape == (0,) and res.index.dtype == np.int64
    res = max_overlap(refs, empty, top_k=2)
    assert res.index.tolist() == [[-1, -1], [-1, -1]]
    assert len(overlap_join(empty, refs, threshold=0.5)) == 0
    assert len(overlap_join(empty, threshold=0.5)) == 0
    assert ratio(empty, empty).shape == (0,)


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda a, b: max_overlap(a, b, top_k=0), ValueError, "top_k"),
        (lambda a, b: max_overlap(a, b, top_k=1.0), TypeError, "top_k"),
        (lambda a, b: max_overlap(a, b, min_score=1.5), ValueError, "min_score"),
        (lambda a, b: max_overlap(a, b, min_score=float("nan")), ValueError, "min_score"),
        (lambda a, b: max_overlap(a, b, n_threads=0), ValueError, "n_threads"),
        (lambda a, b: max_overlap(a, b, n_threads="2"), TypeError, "n_threads"),
        (lambda a, b: max_overlap([a, b], [a]), ValueError, "field"),
        (lambda a, b: max_overlap([a, a.take([0])], [a, a]), ValueError, "same number of rows"),
        (lambda a, b: max_overlap("text", b), TypeError, "queries"),
        (lambda a, b: max_overlap([a, "x"], b), TypeError, r"queries\[1\]"),
        (lambda a, b: max_overlap(a, []), ValueError, "references"),
        (lambda a, b: max_overlap(a, b, progress="yes"), TypeError, "progress"),
        (lambda a, b: overlap_join(a, b, threshold=0.0), ValueError, "threshold"),
        (lambda a, b: overlap_join(a, b, threshold=-0.1), ValueError, "threshold"),
        (lambda a, b: overlap_join(a, b, threshold="0.5"), TypeError, "threshold"),
        (lambda a, b: overlap_join(a, b), TypeError, "threshold"),
        (lambda a, b: ratio(a, b.take([0])), ValueError, "same length"),
        (lambda a, b: ratio(a, TokenSets.from_ids([[1], [2]], multiset=True)), ValueError,
         "multisets"),
    ],
)
def test_bad_input_is_named(call, exc, message):
    a = TokenSets.from_ids([[1, 2], [3]])
    b = TokenSets.from_ids([[1], [2, 3]])
    with pytest.raises(exc, match=message):
        call(a, b)
