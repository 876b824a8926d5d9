"""Threshold join (Dice >= 0.8) on W's contexts: ours vs SetSimilaritySearch, scipy, datasketch.

Timed regions
-------------
* ours, "prebuilt": ``OverlapIndex.join(...)`` on an index built beforehand;
  "end_to_end": ``overlap_join(...)``, index build included;
* SetSimilaritySearch, test vs train: ``SearchIndex.query`` of every test
  context, the index over train built beforehand; self-join:
  ``all_pairs(...)`` (its index is built inside, as in our end-to-end run);
* scipy brute force: ``join()`` on prebuilt binary CSR matrices;
* datasketch, test vs train: MinHash of every test context + LSH query, the
  LSH over train built beforehand; self-join: MinHash + insert + query of
  every train context.

Python lists of the hashes (the peers' input format) are made outside the
timed region.  The exact peers must list exactly our pairs: pair sets are
compared after settling every candidate with the integer test
``2*inter*5 >= 4*(|a|+|b|)`` (Dice 0.8 = Jaccard 2/3), so no pair on the
threshold is decided by float rounding.

Other measures (``measure=``): groups ``join: ... every measure >= 0.5`` and
``>= 0.8`` put ours (``overlap_join`` end to end, and on the prebuilt index)
for Dice, Jaccard, cosine and containment next to SetSimilaritySearch with the
same measure (its ``containment`` is ours: how much of the query lies inside
the train context).  The queries are the first 1,000 test contexts (all
6,740 with ``OVERLAP_BENCH_SLOW=1``: the peer's cosine takes about 20 minutes
there); its candidates are settled with the integer test of each measure
(:func:`bench._peers.passes_measure`) and must be exactly our pairs.

Small indexed side: group ``join: train contexts vs 1,000 indexed test
contexts`` times ``OverlapIndex.join`` over an index of 1,000 test contexts
probed by every train context (a contamination scan's query index), on the
postings kernel and on the bit-sliced one (``overlap._dispatch.FORCE_PATH``);
both must list the same pairs.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import overlap
from overlap import _dispatch

from ._peers import (
    MinHashLSHPeer,
    SetSimSearchPeer,
    SparseBruteForce,
    exact_measure_pairs,
    exact_pairs,
    pair_intersections,
    passes_measure,
    passes_threshold,
    python_sets,
    recall_precision,
)
from .conftest import SLOW_ENV, THREADS, describe, env_flag, run_once

T = 0.8
G_RS = "join: test vs train contexts, Dice >= 0.8"
G_SELF = "join: train contexts self-join, Dice >= 0.8"


@pytest.fixture(scope="module")
def ctx(workload):
    return workload.sets["train"][0], workload.sets["test"][0]


@pytest.fixture(scope="module")
def index(ctx):
    return overlap.OverlapIndex(ctx[0])


@pytest.fixture(scope="module")
def expected(index, ctx):
    """Our pairs with one thread, checked against the integer definition once."""
    train, test = ctx
    rs = index.join(test, threshold=T, n_threads=1)
    self_ = index.join(None, threshold=T, n_threads=1)
    for res, left, right in ((rs, test, train), (self_, train, train)):
        inter = pair_intersections(left, right, res.left, res.right)
        a, b = left.sizes[res.left], right.sizes[res.right]
        assert passes_threshold(inter, a, b, T).all()
        assert_array_equal(res.score, 2.0 * inter / (a + b))
    return {G_RS: rs, G_SELF: self_}


def _pairs(res) -> set:
    return set(zip(res.left.tolist(), res.right.tolist()))


def _same(res, exp):
    assert_array_equal(res.left, exp.left)
    assert_array_equal(res.right, exp.right)
    assert_array_equal(res.score, exp.score)


def _info(benchmark, workload, nl, nr, exp, **kw):
    describe(benchmark, workload, n_left=nl, n_right=nr, threshold=T, pairs=len(exp), **kw)


# ------------------------------------------------------------------ ours
@pytest.mark.parametrize("n_threads", THREADS)
def test_ours_rs_prebuilt(benchmark, workload, ctx, index, expected, n_threads):
    benchmark.group = G_RS
    res = benchmark(index.join, ctx[1], threshold=T, n_threads=n_threads)
    _same(res, expected[G_RS])
    _info(benchmark, workload, len(ctx[1]), len(ctx[0]), res, side="ours",
          timed="OverlapIndex.join on prebuilt index",
          n_threads=n_threads or overlap.effective_n_threads(None))


@pytest.mark.parametrize("n_threads", THREADS)
def test_ours_rs_end_to_end(benchmark, workload, ctx, expected, n_threads):
    benchmark.group = G_RS
    res = benchmark(overlap.overlap_join, ctx[1], ctx[0], threshold=T, n_threads=n_threads)
    _same(res, expected[G_RS])
    _info(benchmark, workload, len(ctx[1]), len(ctx[0]), res, side="ours",
          timed="overlap_join(test, train): index build included",
          n_threads=n_threads or overlap.effective_n_threads(None))


@pytest.mark.parametrize("n_threads", THREADS)
def test_ours_self_prebuilt(benchmark, workload, ctx, index, expected, n_threads):
    benchmark.group = G_SELF
    res = benchmark(index.join, None, threshold=T, n_threads=n_threads)
    _same(res, expected[G_SELF])
    _info(benchmark, workload, len(ctx[0]), len(ctx[0]), res, side="ours",
          timed="OverlapIndex.join(None) on prebuilt index",
          n_threads=n_threads or overlap.effective_n_threads(None))


@pytest.mark.parametrize("n_threads", THREADS)
def test_ours_self_end_to_end(benchmark, workload, ctx, expected, n_threads):
    benchmark.group = G_SELF
    res = benchmark(overlap.overlap_join, ctx[0], threshold=T, n_threads=n_threads)
    _same(res, expected[G_SELF])
    _info(benchmark, workload, len(ctx[0]), len(ctx[0]), res, side="ours",
          timed="overlap_join(train): index build included",
          n_threads=n_threads or overlap.effective_n_threads(None))


# ------------------------------------------------------------------ SetSimilaritySearch
def test_setsimilaritysearch_rs(benchmark, workload, ctx, expected):
    pytest.importorskip("SetSimilaritySearch", reason="optional bench extra: SetSimilaritySearch")
    benchmark.group = G_RS
    train, test = ctx
    t0 = time.perf_counter()
    peer = SetSimSearchPeer(train, T)
    build = time.perf_counter() - t0
    qsets = python_sets(test)
    left, right = run_once(benchmark, peer.query_all, qsets)
    found = exact_pairs(test, train, left, right, T)
    assert found == _pairs(expected[G_RS])
    _info(benchmark, workload, len(test), len(train), expected[G_RS], side="peer",
          peer="SetSimilaritySearch", exact=True, jaccard_threshold=peer.jaccard,
          candidates=int(left.shape[0]), build_seconds=round(build, 3),
          timed="SearchIndex.query of every test context (index prebuilt)", n_threads=1)


def test_setsimilaritysearch_self(benchmark, workload, ctx, expected):
    pytest.importorskip("SetSimilaritySearch", reason="optional bench extra: SetSimilaritySearch")
    benchmark.group = G_SELF
    train = ctx[0]
    left, right = run_once(benchmark, SetSimSearchPeer.self_join, train, T)
    found = exact_pairs(train, train, left, right, T)
    assert found == _pairs(expected[G_SELF])
    _info(benchmark, workload, len(train), len(train), expected[G_SELF], side="peer",
          peer="SetSimilaritySearch", exact=True, candidates=int(left.shape[0]),
          timed="all_pairs(train contexts), its index build included", n_threads=1)


# ------------------------------------------------------------------ scipy brute force
def test_scipy_brute_force_rs(benchmark, workload, ctx, expected):
    benchmark.group = G_RS
    train, test = ctx
    t0 = time.perf_counter()
    peer = SparseBruteForce(test, train)
    build = time.perf_counter() - t0
    left, right, score = run_once(benchmark, peer.join, T)
    exp = expected[G_RS]
    assert_array_equal(left, exp.left)
    assert_array_equal(right, exp.right)
    assert_array_equal(score, exp.score)
    _info(benchmark, workload, len(test), len(train), exp, side="peer",
          peer="scipy sparse brute force", exact=True, build_seconds=round(build, 3),
          timed="blocked Q @ R.T, Dice >= t (matrices prebuilt)", n_threads=1)


@pytest.mark.skipif(not env_flag(SLOW_ENV),
                    reason=f"76k x 76k brute force takes minutes; set {SLOW_ENV}=1")
def test_scipy_brute_force_self(benchmark, workload, ctx, expected):
    benchmark.group = G_SELF
    train = ctx[0]
    t0 = time.perf_counter()
    peer = SparseBruteForce(train)
    build = time.perf_counter() - t0
    left, right, score = run_once(benchmark, peer.join, T)
    exp = expected[G_SELF]
    assert_array_equal(left, exp.left)
    assert_array_equal(right, exp.right)
    assert_array_equal(score, exp.score)
    _info(benchmark, workload, len(train), len(train), exp, side="peer",
          peer="scipy sparse brute force", exact=True, build_seconds=round(build, 3),
          timed="blocked Q @ Q.T, Dice >= t, j > i (matrix prebuilt)", n_threads=1)


# ------------------------------------------------------------------ datasketch
def test_datasketch_lsh_rs(benchmark, workload, ctx, expected):
    pytest.importorskip("datasketch", reason="optional bench extra: datasketch")
    benchmark.group = G_RS
    train, test = ctx
    t0 = time.perf_counter()
    peer = MinHashLSHPeer(train, T)
    build = time.perf_counter() - t0
    qsets = python_sets(test)
    found = run_once(benchmark, peer.query_all, qsets)
    recall, precision = recall_precision(found, _pairs(expected[G_RS]))
    _info(benchmark, workload, len(test), len(train), expected[G_RS], side="peer",
          peer="datasketch MinHashLSH", exact=False, num_perm=peer.num_perm,
          candidates=len(found), recall=round(recall, 4), precision=round(precision, 4),
          build_seconds=round(build, 3),
          timed="MinHash of every test context + LSH query (LSH over train prebuilt)",
          n_threads=1)


def test_datasketch_lsh_self(benchmark, workload, ctx, expected):
    pytest.importorskip("datasketch", reason="optional bench extra: datasketch")
    benchmark.group = G_SELF
    train = ctx[0]

    def run():
        return MinHashLSHPeer(train, T).self_pairs()

    found = run_once(benchmark, run)
    recall, precision = recall_precision(found, _pairs(expected[G_SELF]))
    _info(benchmark, workload, len(train), len(train), expected[G_SELF], side="peer",
          peer="datasketch MinHashLSH", exact=False, num_perm=128,
          candidates=len(found), recall=round(recall, 4), precision=round(precision, 4),
          timed="MinHash + LSH insert + query of every train context", n_threads=1)



# ------------------------------------------------------------------ other measures
MEASURE_THRESHOLDS = (0.5, 0.8)
#: the measures SetSimilaritySearch has too (Dice through its Jaccard)
PEER_MEASURES = ("dice", "jaccard", "cosine", "containment")
#: test contexts of the measure groups (all of them with OVERLAP_BENCH_SLOW=1)
MEASURE_QUERIES = 1000


def _measure_group(t: float, nq: int) -> str:
    return f"join: {nq:,} test vs train contexts, every measure >= {t:g}"


def _float_score(measure, i, a, b):
    """The specification's float64 expression (SPEC §2)."""
    i, a, b = (np.asarray(x, dtype=np.float64) for x in (i, a, b))
    return {"dice": lambda: 2.0 * i / (a + b), "jaccard": lambda: i / (a + b - i),
            "cosine": lambda: i / np.sqrt(a * b), "containment": lambda: i / a}[measure]()


@pytest.fixture(scope="module")
def measure_queries(ctx):
    test = ctx[1]
    if env_flag(SLOW_ENV):
        return test
    return test.take(np.arange(min(MEASURE_QUERIES, len(test)), dtype=np.int64))


@pytest.fixture(scope="module")
def measure_expected(index, ctx, measure_queries):
    """Our pairs per (measure, threshold), one thread, checked against the
    integer test and the float64 expression of each measure."""
    train = ctx[0]
    out = {}
    for t in MEASURE_THRESHOLDS:
        for m in PEER_MEASURES:
            res = index.join(measure_queries, threshold=t, measure=m, n_threads=1)
            inter = pair_intersections(measure_queries, train, res.left, res.right)
            a, b = measure_queries.sizes[res.left], train.sizes[res.right]
            assert passes_measure(m, inter, a, b, t).all()
            assert_array_equal(res.score, _float_score(m, inter, a, b))
            out[m, t] = res
    return out


MEASURE_CASES = [pytest.param(m, t, id=f"{m}-{t:g}")
                 for t in MEASURE_THRESHOLDS for m in PEER_MEASURES]


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("measure,t", MEASURE_CASES)
def test_ours_measure_end_to_end(benchmark, workload, ctx, measure_queries, measure_expected,
                                 measure, t, n_threads):
    q = measure_queries
    benchmark.group = _measure_group(t, len(q))
    res = benchmark(overlap.overlap_join, q, ctx[0], threshold=t, measure=measure,
                    n_threads=n_threads)
    _same(res, measure_expected[measure, t])
    describe(benchmark, workload, n_left=len(q), n_right=len(ctx[0]), threshold=t,
             measure=measure, pairs=len(res), side="ours",
             timed="overlap_join(test, train, measure=...): index build included",
             n_threads=n_threads or overlap.effective_n_threads(None))


@pytest.mark.parametrize("measure,t", MEASURE_CASES)
def test_ours_measure_prebuilt(benchmark, workload, ctx, index, measure_queries,
                               measure_expected, measure, t):
    q = measure_queries
    benchmark.group = _measure_group(t, len(q))
    res = benchmark(index.join, q, threshold=t, measure=measure)
    _same(res, measure_expected[measure, t])
    describe(benchmark, workload, n_left=len(q), n_right=len(ctx[0]), threshold=t,
             measure=measure, pairs=len(res), side="ours",
             timed="OverlapIndex.join(test, measure=...) on prebuilt index",
             n_threads=overlap.effective_n_threads(None))


@pytest.mark.parametrize("measure,t", MEASURE_CASES)
def test_setsimilaritysearch_measure(benchmark, workload, ctx, measure_queries,
                                     measure_expected, measure, t):
    pytest.importorskip("SetSimilaritySearch", reason="optional bench extra: SetSimilaritySearch")
    train, q = ctx[0], measure_queries
    benchmark.group = _measure_group(t, len(q))
    t0 = time.perf_counter()
    peer = SetSimSearchPeer(train, t, measure)
    build = time.perf_counter() - t0
    left, right = run_once(benchmark, peer.query_all, python_sets(q))
    exp = measure_expected[measure, t]
    found = exact_measure_pairs(q, train, left, right, t, measure)
    assert found == _pairs(exp)
    describe(benchmark, workload, n_left=len(q), n_right=len(train), threshold=t,
             measure=measure, pairs=len(exp), side="peer", peer="SetSimilaritySearch",
             exact=True, peer_threshold=peer.peer_threshold, candidates=int(left.shape[0]),
             build_seconds=round(build, 3),
             timed="SearchIndex.query of every test context (index prebuilt)", n_threads=1)


# ------------------------------------------------------------------ small indexed side
#: the eval side of a contamination scan: this many test contexts indexed, the
#: train contexts probing them (what StreamMerger's ``index="queries"`` does per chunk)
SMALL_INDEX_ROWS = 1000
SMALL_T = 0.5


@contextlib.contextmanager
def forced_path(path: str):
    """Run the block on one join kernel (``overlap._dispatch.FORCE_PATH``)."""
    prev = _dispatch.FORCE_PATH
    _dispatch.FORCE_PATH = path
    try:
        yield
    finally:
        _dispatch.FORCE_PATH = prev

G_SMALL = (f"join: train contexts vs {SMALL_INDEX_ROWS:,} indexed test contexts, "
           f"Dice >= {SMALL_T:g}, postings vs bit-sliced kernel")


@pytest.fixture(scope="module")
def small_index(ctx):
    test = ctx[1]
    return overlap.OverlapIndex(test.take(np.arange(min(SMALL_INDEX_ROWS, len(test)),
                                                    dtype=np.int64)))


@pytest.fixture(scope="module")
def small_expected(small_index, ctx):
    """The postings kernel's pairs, one thread, checked against the integer test."""
    assert len(small_index) <= _dispatch.JOIN_MAX_REFS  # the bit-sliced kernel's default range
    train = ctx[0]
    with forced_path("postings"):
        res = small_index.join(train, threshold=SMALL_T, n_threads=1)
    inter = pair_intersections(train, small_index._fields[0], res.left, res.right)
    a, b = train.sizes[res.left], small_index._fields[0].sizes[res.right]
    assert passes_measure("dice", inter, a, b, SMALL_T).all()
    return res


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("path", ["postings", "bitslice"])
def test_ours_small_index_join(benchmark, workload, ctx, small_index, small_expected, path,
                               n_threads):
    benchmark.group = G_SMALL
    with forced_path(path):
        small_index.join(ctx[0].take(np.arange(1)), threshold=SMALL_T)  # its index, built once
        res = benchmark(small_index.join, ctx[0], threshold=SMALL_T, n_threads=n_threads)
    _same(res, small_expected)
    describe(benchmark, workload, n_left=len(ctx[0]), n_right=len(small_index),
             threshold=SMALL_T, pairs=len(res), side="ours", kernel=path,
             timed="OverlapIndex.join(train) on a prebuilt index over test contexts",
             n_threads=n_threads or overlap.effective_n_threads(None))
