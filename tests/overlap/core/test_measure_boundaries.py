"""Every measure at thresholds that its scores hit exactly, on both kernels,
every CPU level and one or two threads.

A bound one unit off loses exactly the pairs whose score equals the
threshold (Jaccard 2/3, cosine 3/sqrt(4*9) = 1/2 ...).  Here every pair of
sizes up to :data:`MAX_SIZE` and every overlap is planted once, each pair on
tokens of its own, so each query has exactly one possible match; every
distinct score of a measure is then used as a threshold (and the next float
above it), and the search and the join must return precisely the pairs
whose score, by the plain-Python definition, is ``>=`` it.
"""

from __future__ import annotations

import numpy as np
import pytest

from overlap import OverlapIndex, TokenSets
from overlap._validation import MEASURES
from reference import overlap as ref
from reference.levels import ALL_LEVELS, cpu_level, forced_path

MAX_SIZE = 7


def _sized_pairs():
    """(query ids, reference ids) for every |q|, |r| <= MAX_SIZE and overlap >= 1."""
    pairs, base = [], 0
    for a in range(1, MAX_SIZE + 1):
        for b in range(1, MAX_SIZE + 1):
            for i in range(1, min(a, b) + 1):
                pairs.append((list(range(base, base + a)),
                              list(range(base + a - i, base + a - i + b))))
                base += a + b
    return pairs


def _bag_pairs():
    """Multisets: ``m`` copies of a shared token (``n`` in the reference) plus
    ``p`` (``k``) tokens of their own; the overlap is min(m, n)."""
    pairs, base = [], 0
    for m in range(1, 5):
        for n in range(1, 5):
            for p in range(0, 3):
                for k in range(0, 3):
                    pairs.append(([base] * m + list(range(base + 1, base + 1 + p)),
                                  [base] * n + list(range(base + 10, base + 10 + k))))
                    base += 20
    return pairs


def _case(pairs, multiset, n_fields):
    """Query and reference fields (the second field pairs the rows in reverse
    order: another pair's sizes), and every row's score under each measure."""
    rows_q = [[q for q, _ in pairs]]
    rows_r = [[r for _, r in pairs]]
    if n_fields == 2:
        rev = pairs[::-1]
        shift = 10 ** 6  # the second field's tokens are its own
        rows_q.append([[t + shift for t in q] for q, _ in rev])
        rows_r.append([[t + shift for t in r] for _, r in rev])
    queries = [TokenSets.from_ids(col, multiset=multiset) for col in rows_q]
    refs = [TokenSets.from_ids(col, multiset=multiset) for col in rows_r]
    scores = {}
    for m in MEASURES:
        per_field = [[ref.measure_score(m, ref.bag(q, 1, multiset), ref.bag(r, 1, multiset))
                      for q, r in zip(cq, cr)] for cq, cr in zip(rows_q, rows_r)]
        scores[m] = np.min(np.array(per_field), axis=0)
    return queries, refs, scores


def _thresholds(scores: np.ndarray) -> list[float]:
    """Every distinct score and the next float above it (those of them <= 1)."""
    exact = np.unique(scores)
    above = np.nextafter(exact, 2.0)
    return sorted(set(exact.tolist()) | {float(x) for x in above if x <= 1.0})


CASES = {
    "sets, one field": (_sized_pairs, False, 1),
    "sets, two fields": (_sized_pairs, False, 2),
    "multisets, one field": (_bag_pairs, True, 1),
    "multisets, two fields": (_bag_pairs, True, 2),
}


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    make, multiset, n_fields = CASES[request.param]
    return _case(make(), multiset, n_fields)


@pytest.mark.parametrize("make", [_sized_pairs, _bag_pairs])
def test_the_planted_scores_hit_the_boundaries_in_question(make):
    _, _, scores = _case(make(), make is _bag_pairs, 1)
    assert (scores["jaccard"] == 2 / 3).any()
    assert (scores["cosine"] == 0.5).any()  # 3 / sqrt(4 * 9), 1 / sqrt(1 * 4)
    assert (scores["containment"] == 0.75).any()
    assert (scores["overlap"] == 0.5).any()
    assert (scores["dice"] == 0.8).any()
    for m in MEASURES:
        assert len(np.unique(scores[m])) > 5


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("level", ALL_LEVELS)
@pytest.mark.parametrize("path", ["postings", "bitslice"])
@pytest.mark.parametrize("measure", MEASURES)
def test_search_keeps_every_score_at_the_threshold(case, measure, path, level, n_threads):
    queries, refs, scores = case
    want_all = scores[measure]
    rows = np.arange(want_all.shape[0])
    with forced_path(path), cpu_level(level):
        index = OverlapIndex(refs, n_threads=n_threads)
        for t in _thresholds(want_all):
            got = index.max_overlap(queries, min_score=t, measure=measure, n_threads=n_threads)
            hit = want_all >= t
            np.testing.assert_array_equal(got.score, np.where(hit, want_all, 0.0),
                                          err_msg=f"min_score={t!r}")
            np.testing.assert_array_equal(got.index, np.where(hit, rows, -1),
                                          err_msg=f"min_score={t!r}")


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("level", ALL_LEVELS)
@pytest.mark.parametrize("path", ["postings", "bitslice"])
@pytest.mark.parametrize("measure", MEASURES)
def test_join_keeps_every_score_at_the_threshold(case, measure, path, level, n_threads):
    queries, refs, scores = case
    want_all = scores[measure]
    with forced_path(path), cpu_level(level):
        index = OverlapIndex(refs, n_threads=n_threads)
        for t in _thresholds(want_all):
            got = index.join(queries, threshold=t, measure=measure, n_threads=n_threads)
            rows = np.flatnonzero(want_all >= t)
            assert got.left.tolist() == rows.tolist(), f"threshold={t!r}"
            assert got.right.tolist() == rows.tolist(), f"threshold={t!r}"
            np.testing.assert_array_equal(got.score, want_all[rows])
