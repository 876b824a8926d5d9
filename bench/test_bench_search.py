"""Top-1 max-overlap search on W: ours vs the scipy sparse brute force and sparse_dot_topn.

Timed regions
-------------
* ours: ``OverlapIndex.max_overlap(queries)`` on an index built beforehand
  (the ``*_end_to_end`` variants time ``max_overlap(queries, references)``,
  index build included);
* scipy brute force: ``top1()`` on binary CSR matrices built beforehand (their
  build time is in ``extra_info["build_seconds"]``);
* sparse_dot_topn: ``sp_matmul_topn`` on the same prebuilt matrices.

Every exact peer must return our scores and indices bit for bit.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import overlap

from ._peers import SparseBruteForce, topn_dot
from .conftest import THREADS, describe, run_once

G_2F = "search: top-1, test vs train, 2 fields"
G_TV = "search: top-1, test+valid vs train, 2 fields"
G_CTX = "search: top-1, test vs train, context only"


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def train(workload):
    return workload.sets["train"]


@pytest.fixture(scope="module")
def index_2f(train):
    return overlap.OverlapIndex(train)


@pytest.fixture(scope="module")
def index_ctx(train):
    return overlap.OverlapIndex(train[0])


@pytest.fixture(scope="module")
def queries(workload):
    return {
        G_2F: workload.sets["test"],
        G_TV: workload.queries_test_valid,
        G_CTX: workload.sets["test"][0],
    }


@pytest.fixture(scope="module")
def expected(index_2f, index_ctx, queries):
    """Our answers with one thread: every other run must equal them."""
    return {
        G_2F: index_2f.max_overlap(queries[G_2F], n_threads=1),
        G_TV: index_2f.max_overlap(queries[G_TV], n_threads=1),
        G_CTX: index_ctx.max_overlap(queries[G_CTX], n_threads=1),
    }


def _check(res, exp):
    assert_array_equal(res.score, exp.score)
    assert_array_equal(res.index, exp.index)


def _info(benchmark, workload, q, r, **kw):
    fields = 1 if isinstance(q, overlap.TokenSets) else len(q)
    nq = len(q) if fields == 1 else len(q[0])
    nr = len(r) if isinstance(r, overlap.TokenSets) else len(r[0])
    describe(benchmark, workload, n_queries=nq, n_references=nr, fields=fields, **kw)


# ------------------------------------------------------------------ ours
@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("group", [G_2F, G_TV, G_CTX], ids=["2f", "test+valid", "ctx"])
def test_ours_prebuilt_index(benchmark, workload, train, index_2f, index_ctx, queries,
                             expected, group, n_threads):
    benchmark.group = group
    idx = index_ctx if group == G_CTX else index_2f
    q = queries[group]
    res = benchmark(idx.max_overlap, q, n_threads=n_threads)
    _check(res, expected[group])
    _info(benchmark, workload, q, train, side="ours", timed="max_overlap on prebuilt index",
          n_threads=n_threads or overlap.effective_n_threads(None))


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("group", [G_2F, G_CTX], ids=["2f", "ctx"])
def test_ours_end_to_end(benchmark, workload, train, queries, expected, group, n_threads):
    benchmark.group = group
    refs = train[0] if group == G_CTX else train
    q = queries[group]
    res = benchmark(overlap.max_overlap, q, refs, n_threads=n_threads)
    _check(res, expected[group])
    _info(benchmark, workload, q, refs, side="ours",
          timed="max_overlap(queries, references): index build included",
          n_threads=n_threads or overlap.effective_n_threads(None))


# ------------------------------------------------------------------ scipy brute force
@pytest.mark.parametrize("group", [G_2F, G_TV, G_CTX], ids=["2f", "test+valid", "ctx"])
def test_scipy_brute_force(benchmark, workload, train, queries, expected, group):
    benchmark.group = group
    refs = train[0] if group == G_CTX else train
    q = queries[group]
    t0 = time.perf_counter()
    peer = SparseBruteForce(q, refs)
    build = time.perf_counter() - t0
    score, index = run_once(benchmark, peer.top1)
    exp = expected[group]
    assert_array_equal(score, exp.score)  # bit for bit: same float64 expression
    assert_array_equal(index, exp.index)  # lowest index on ties, -1 when nothing overlaps
    _info(benchmark, workload, q, refs, side="peer", peer="scipy sparse brute force",
          exact=True, build_seconds=round(build, 3), block=peer.block,
          timed="blocked Q @ R.T, Dice, min over fields, argmax (matrices prebuilt)",
          n_threads=1)


# ------------------------------------------------------------------ sparse_dot_topn
@pytest.mark.parametrize("n_threads", THREADS)
def test_sparse_dot_topn(benchmark, workload, train, queries, expected, n_threads):
    pytest.importorskip("sparse_dot_topn", reason="optional bench extra: sparse_dot_topn")
    benchmark.group = G_CTX
    q = queries[G_CTX]
    peer = SparseBruteForce(q, train[0])
    (Q, RT), = peer.matrices()
    nt = n_threads or overlap.effective_n_threads(None)
    dot, index = benchmark.pedantic(topn_dot, args=(Q, RT, nt), rounds=3, iterations=1,
                                    warmup_rounds=0)
    exp = expected[G_CTX]
    # a different objective (dot product, not Dice): report how often it agrees
    has = index >= 0
    same_score = np.zeros_like(has)
    r = overlap.ratio(q.take(np.flatnonzero(has)), train[0].take(index[has]))
    same_score[has] = r == exp.score[has]
    _info(benchmark, workload, q, train[0], side="peer", peer="sparse_dot_topn",
          exact=False, objective="dot product",
          same_index_as_dice_top1=round(float((index == exp.index).mean()), 4),
          reaches_best_dice=round(float(same_score.mean()), 4),
          timed="sp_matmul_topn(Q, R.T, top_n=1) on prebuilt matrices", n_threads=nt)
