"""Max-overlap search on W: ours vs the scipy sparse brute force and sparse_dot_topn.

Groups: top-1 test vs train (two fields, context only), test+valid vs train,
top-5 test vs train, and all-vs-rest over the 13,118 dialogues as units.

Timed regions
-------------
* ours: ``OverlapIndex.max_overlap(queries)`` on an index built beforehand
  (the ``*_end_to_end`` variants time ``max_overlap(queries, references)``,
  index build included).  ``ours[bitslice-...]`` is the path the cost model
  picks (the bit-sliced kernel on W; its bitmaps are built by the untimed
  first call), ``ours[postings-...]`` forces the postings kernel
  (``overlap._dispatch.FORCE_PATH = "postings"``), so both kernels
  appear side by side in one run;
* scipy brute force: ``top1()`` on binary CSR matrices built beforehand (their
  build time is in ``extra_info["build_seconds"]``);
* sparse_dot_topn: ``sp_matmul_topn`` on the same prebuilt matrices.

Every exact peer must return our scores and indices bit for bit.

Other measures (``measure=``): ``ours-measure[...]`` in the top-1 groups (two
fields, context only) time the prebuilt search with Jaccard, cosine, the
overlap coefficient and containment next to the Dice runs; each must equal the
postings kernel's one-thread answer (the cost model picks the bit-sliced one).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import overlap

from overlap import _dispatch
from overlap._kernels import _bitslice, _cpu

from ._peers import SparseBruteForce, topn_dot
from .conftest import THREADS, describe, run_once

G_2F = "search: top-1, test vs train, 2 fields"
G_TV = "search: top-1, test+valid vs train, 2 fields"
G_CTX = "search: top-1, test vs train, context only"
G_TOP5 = "search: top-5, test vs train, 2 fields"
G_UNITS = "search: all-vs-rest, 13,118 dialogues as units"

#: which kernel ours runs: the cost model's choice, or the postings kernel forced
PATHS = [pytest.param(None, id="bitslice"), pytest.param("postings", id="postings")]


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
def index_units(workload):
    return overlap.OverlapIndex(workload.dialogue_units)


@pytest.fixture(scope="module")
def queries(workload):
    return {
        G_2F: workload.sets["test"],
        G_TV: workload.queries_test_valid,
        G_CTX: workload.sets["test"][0],
        G_TOP5: workload.sets["test"],
        G_UNITS: None,
    }


@pytest.fixture(scope="module")
def expected(index_2f, index_ctx, index_units, queries):
    """Our answers with one thread: every other run must equal them.

    These first calls also build the bit-sliced side of each index.
    """
    return {
        G_2F: index_2f.max_overlap(queries[G_2F], n_threads=1),
        G_TV: index_2f.max_overlap(queries[G_TV], n_threads=1),
        G_CTX: index_ctx.max_overlap(queries[G_CTX], n_threads=1),
        G_TOP5: index_2f.max_overlap(queries[G_TOP5], top_k=5, n_threads=1),
        G_UNITS: index_units.max_overlap(None, n_threads=1),
    }


@pytest.fixture
def force_path(request):
    """Set FORCE_PATH for one benchmark, restore it afterwards."""
    def set_path(path):
        prev = _dispatch.FORCE_PATH
        _dispatch.FORCE_PATH = path
        request.addfinalizer(lambda: setattr(_dispatch, "FORCE_PATH", prev))
    return set_path


def _check(res, exp):
    assert_array_equal(res.score, exp.score)
    assert_array_equal(res.index, exp.index)


def _info(benchmark, workload, q, r, **kw):
    fields = 1 if isinstance(q, overlap.TokenSets) else len(q)
    nq = len(q) if fields == 1 else len(q[0])
    nr = len(r) if isinstance(r, overlap.TokenSets) else len(r[0])
    describe(benchmark, workload, n_queries=nq, n_references=nr, fields=fields, **kw)


# ------------------------------------------------------------------ ours
GROUP_IDS = {G_2F: "2f", G_TV: "test+valid", G_CTX: "ctx", G_TOP5: "top5", G_UNITS: "units"}


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("group", list(GROUP_IDS), ids=list(GROUP_IDS.values()))
def test_ours_prebuilt_index(benchmark, workload, train, index_2f, index_ctx, index_units,
                             queries, expected, force_path, group, path, n_threads):
    benchmark.group = group
    idx = {G_CTX: index_ctx, G_UNITS: index_units}.get(group, index_2f)
    q = queries[group]
    top_k = 5 if group == G_TOP5 else 1
    force_path(path)
    res = benchmark(idx.max_overlap, q, top_k=top_k, n_threads=n_threads)
    _check(res, expected[group])
    nq = len(idx) if q is None else (len(q) if isinstance(q, overlap.TokenSets) else len(q[0]))
    kernel = _dispatch.choose_path(idx._fields, nq, 0.0)
    describe(benchmark, workload, n_queries=nq, n_references=len(idx), fields=idx.n_fields,
             top_k=top_k, side="ours", kernel=kernel,
             timed="max_overlap on prebuilt index" + (" (all vs rest)" if q is None else ""),
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


# ------------------------------------------------------------------ other measures
OTHER_MEASURES = ("jaccard", "cosine", "overlap", "containment")


@pytest.fixture(scope="module")
def expected_measures(index_2f, index_ctx, queries):
    """Each measure's answer by the postings kernel on one thread."""
    prev = _dispatch.FORCE_PATH
    _dispatch.FORCE_PATH = "postings"
    try:
        return {(g, m): idx.max_overlap(queries[g], measure=m, n_threads=1)
                for g, idx in ((G_2F, index_2f), (G_CTX, index_ctx)) for m in OTHER_MEASURES}
    finally:
        _dispatch.FORCE_PATH = prev


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("measure", OTHER_MEASURES)
@pytest.mark.parametrize("group", [G_2F, G_CTX], ids=["2f", "ctx"])
def test_ours_measure(benchmark, workload, index_2f, index_ctx, queries, expected,
                      expected_measures, group, measure, n_threads):
    benchmark.group = group
    idx = index_ctx if group == G_CTX else index_2f
    q = queries[group]
    res = benchmark(idx.max_overlap, q, measure=measure, n_threads=n_threads)
    _check(res, expected_measures[group, measure])
    nq = len(q) if isinstance(q, overlap.TokenSets) else len(q[0])
    describe(benchmark, workload, n_queries=nq, n_references=len(idx), fields=idx.n_fields,
             top_k=1, side="ours", measure=measure,
             kernel=_dispatch.choose_path(idx._fields, nq, 0.0),
             timed=f"max_overlap(measure={measure!r}) on prebuilt index",
             n_threads=n_threads or overlap.effective_n_threads(None))


# ------------------------------------------------------------------ scipy brute force
@pytest.mark.parametrize("group", list(GROUP_IDS), ids=list(GROUP_IDS.values()))
def test_scipy_brute_force(benchmark, workload, train, queries, expected, group):
    benchmark.group = group
    if group == G_UNITS:
        refs = q = workload.dialogue_units
    else:
        refs = train[0] if group == G_CTX else train
        q = queries[group]
    t0 = time.perf_counter()
    peer = SparseBruteForce(q) if group == G_UNITS else SparseBruteForce(q, refs)
    build = time.perf_counter() - t0
    if group == G_TOP5:
        score, index = run_once(benchmark, peer.topk, 5)
        how = "blocked Q @ R.T, Dice, min over fields, top-5 by (score, index)"
    else:
        score, index = run_once(benchmark, peer.top1)
        how = "blocked Q @ R.T, Dice, min over fields, argmax"
    exp = expected[group]
    assert_array_equal(score, exp.score)  # bit for bit: same float64 expression
    assert_array_equal(index, exp.index)  # lowest index on ties, -1 when nothing overlaps
    _info(benchmark, workload, q, refs, side="peer", peer="scipy sparse brute force",
          exact=True, build_seconds=round(build, 3), block=peer.block,
          timed=how + " (matrices prebuilt)", n_threads=1)


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


# ------------------------------------------------------------------ SIMD levels
G_SIMD = "search: top-1, test vs train, 2 fields, one thread, by SIMD level"


@pytest.fixture
def simd_level(request):
    """Set the bit-sliced kernel's SIMD level for one benchmark, restore it afterwards."""
    def set_level(level):
        prev = _cpu.set_simd_level(level)
        request.addfinalizer(lambda: _cpu.set_simd_level(prev))
    return set_level


@pytest.mark.parametrize("level", range(len(_cpu.LEVEL_NAMES)),
                         ids=list(_cpu.LEVEL_NAMES))
def test_ours_by_simd_level(benchmark, workload, index_2f, queries, expected, simd_level,
                            level):
    """Every SIMD variant this CPU runs, side by side, on one thread."""
    if level > _cpu.cpu_level():
        pytest.skip(f"this CPU does not run {_cpu.LEVEL_NAMES[level]}")
    benchmark.group = G_SIMD
    simd_level(level)
    res = benchmark(index_2f.max_overlap, queries[G_2F], n_threads=1)
    _check(res, expected[G_2F])
    describe(benchmark, workload, n_queries=len(queries[G_2F][0]), n_references=len(index_2f),
             fields=2, side="ours", simd=_cpu.LEVEL_NAMES[level], n_threads=1,
             timed="max_overlap on prebuilt index, bit-sliced path")
