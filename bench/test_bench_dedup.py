"""Dialogue-level dedup on W: ours vs the scipy brute force and SetSimilaritySearch.

Units are the 13,118 dialogues of train+validation+test (in that order), each
dialogue's whole text (utterances joined by a space) one wordpunct token set.

Timed regions
-------------
* "all-vs-rest + dedup": ours runs ``max_overlap(units)`` (all against the
  rest) and ``dedup(units, threshold=0.8)`` from the TokenSets (both build
  their index inside); the scipy peer builds its binary matrix, runs the
  all-vs-rest top-1 and the ``R > 0.8`` edges by blocked ``U @ U.T``, then the
  published passes over the edges (:func:`dedup_from_edges`) — all inside;
* "dedup only": ours ``dedup(units)``; SetSimilaritySearch ``all_pairs``
  finds the edges (timed), the same passes then run untimed (they take
  milliseconds).  (The scipy brute force is not repeated here: its edges
  cost nearly as much as its all-vs-rest run in the other group.)

Every peer must give our ``keep``, ``kept_for``, ``passes`` and ``cluster``.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import overlap

from ._peers import (
    SetSimSearchPeer,
    SparseBruteForce,
    dedup_from_edges,
    exact_pairs,
    pair_intersections,
)
from .conftest import THREADS, describe, run_once

T = 0.8
G_BOTH = "dedup: 13,118 dialogues, all-vs-rest + dedup at 0.8"
G_DEDUP = "dedup: 13,118 dialogues, dedup only at 0.8"


@pytest.fixture(scope="module")
def units(workload):
    return workload.dialogue_units


@pytest.fixture(scope="module")
def expected(units):
    return overlap.max_overlap(units, n_threads=1), overlap.dedup(units, threshold=T, n_threads=1)


def _same_dedup(got, exp):
    keep, kept_for, passes, cluster = got
    assert_array_equal(keep, exp.keep)
    assert_array_equal(kept_for, exp.kept_for)
    assert passes == exp.passes
    assert_array_equal(cluster, exp.cluster)


def _ours(units, n_threads):
    return (overlap.max_overlap(units, n_threads=n_threads),
            overlap.dedup(units, threshold=T, n_threads=n_threads))


def _info(benchmark, workload, units, exp, **kw):
    d = exp[1]
    describe(benchmark, workload, units=len(units), threshold=T, removed=d.n_removed,
             passes=d.passes, edges=d.n_edges, **kw)


@pytest.mark.parametrize("n_threads", THREADS)
def test_ours_all_vs_rest_and_dedup(benchmark, workload, units, expected, n_threads):
    benchmark.group = G_BOTH
    best, d = benchmark(_ours, units, n_threads)
    assert_array_equal(best.score, expected[0].score)
    assert_array_equal(best.index, expected[0].index)
    _same_dedup((d.keep, d.kept_for, d.passes, d.cluster), expected[1])
    _info(benchmark, workload, units, expected, side="ours",
          timed="max_overlap(units) + dedup(units), index builds included",
          n_threads=n_threads or overlap.effective_n_threads(None))


def test_scipy_all_vs_rest_and_dedup(benchmark, workload, units, expected):
    benchmark.group = G_BOTH

    def run():
        peer = SparseBruteForce(units)
        score, index = peer.top1()
        left, right, sc = peer.join(T)
        return score, index, dedup_from_edges(len(units), left, right, sc, T)

    score, index, d = run_once(benchmark, run)
    assert_array_equal(score, expected[0].score)
    assert_array_equal(index, expected[0].index)
    _same_dedup(d, expected[1])
    _info(benchmark, workload, units, expected, side="peer", peer="scipy sparse brute force",
          exact=True, timed="matrix build + all-vs-rest top-1 + edges + Python passes",
          n_threads=1)


@pytest.mark.parametrize("n_threads", THREADS)
def test_ours_dedup(benchmark, workload, units, expected, n_threads):
    benchmark.group = G_DEDUP
    d = benchmark(overlap.dedup, units, threshold=T, n_threads=n_threads)
    _same_dedup((d.keep, d.kept_for, d.passes, d.cluster), expected[1])
    _info(benchmark, workload, units, expected, side="ours", timed="dedup(units)",
          n_threads=n_threads or overlap.effective_n_threads(None))


def test_setsimilaritysearch_dedup(benchmark, workload, units, expected):
    pytest.importorskip("SetSimilaritySearch", reason="optional bench extra: SetSimilaritySearch")
    benchmark.group = G_DEDUP

    def run():
        left, right = SetSimSearchPeer.self_join(units, T)
        return left, right

    left, right = run_once(benchmark, run)
    # settle candidates exactly, then run the same passes on the edges it found
    pairs = sorted(exact_pairs(units, units, left, right, T))
    a = np.asarray([p[0] for p in pairs], dtype=np.int64)
    b = np.asarray([p[1] for p in pairs], dtype=np.int64)
    inter = pair_intersections(units, units, a, b)
    score = 2.0 * inter / (units.sizes[a] + units.sizes[b])
    _same_dedup(dedup_from_edges(len(units), a, b, score, T), expected[1])
    _info(benchmark, workload, units, expected, side="peer", peer="SetSimilaritySearch",
          exact=True, candidates=int(left.shape[0]),
          timed="all_pairs(units) only (passes run untimed afterwards)", n_threads=1)
