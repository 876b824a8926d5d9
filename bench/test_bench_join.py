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
"""

from __future__ import annotations

import time

import pytest
from numpy.testing import assert_array_equal

import overlap

from ._peers import (
    MinHashLSHPeer,
    SetSimSearchPeer,
    SparseBruteForce,
    exact_pairs,
    pair_intersections,
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

