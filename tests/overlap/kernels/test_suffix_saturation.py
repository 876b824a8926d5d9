"""Suffix masses past 16 bits (issue 29).

The index stores every posting entry's suffix mass (the reference's mass
from the entry's token on) in 16 bits: up to 65,534 as it is, and 65,535
(``SUF_SAT``) for "that or more", which the scans read as the entry's size
(the reference's whole mass in the field, never below its suffix mass).
These corpora put suffix masses on both sides of that line: bags with counts
near 65,535 and a token in most rows (long postings, walked by size group),
and sets with rows of about 65,535 tokens.  Joins, self-joins and top-k are
compared with the plain-Python definitions, on one and two threads.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap import TokenSets, _dispatch, _index, max_overlap, overlap_join
from overlap._fields import Handover
from overlap._kernels import _postings
from overlap.search import build_index
from reference import overlap as ref

SAT = 65535
COUNTS = [1, 2, 3, SAT - 2, SAT - 1, SAT, SAT + 1, 70000]


@pytest.fixture(autouse=True)
def postings_path(monkeypatch):
    """The postings kernel (the one that stores suffix masses) on every search."""
    monkeypatch.setattr(_dispatch, "FORCE_PATH", "postings")


def _bags(rows: list[dict]) -> TokenSets:
    indptr = np.cumsum([0] + [len(r) for r in rows])
    hashes = np.array([t for r in rows for t in sorted(r)], dtype=np.uint64)
    counts = np.array([r[t] for r in rows for t in sorted(r)], dtype=np.uint32)
    return TokenSets.from_csr(indptr, hashes, counts)


def _sets(rows: list[range]) -> TokenSets:
    indptr = np.cumsum([0] + [len(r) for r in rows])
    hashes = np.concatenate([np.arange(r.start, r.stop, dtype=np.uint64) for r in rows])
    return TokenSets.from_csr(indptr, hashes)


@st.composite
def heavy_bags(draw):
    """Rows of a few tokens with counts on both sides of SAT; token 0 in most
    rows (a posting of more than 32 entries), sizes that repeat."""
    n = draw(st.integers(34, 50))
    rows = []
    for _ in range(n):
        toks = draw(st.lists(st.integers(1, 6), max_size=3, unique=True))
        if draw(st.integers(0, 9)):
            toks = [0] + toks
        rows.append({t: draw(st.sampled_from(COUNTS)) for t in toks})
    return rows


def _saturates(monkeypatch) -> list:
    """Spy on the postings build: records whether any stored mass saturated."""
    seen: list = []
    real = _postings.build_postings

    def spy(*args):
        out = real(*args)
        seen.append(bool((out[1] == SAT).any()))
        return out

    monkeypatch.setattr(_postings, "build_postings", spy)
    return seen


def _pairs(res) -> list:
    return [(int(i), int(j), float(s)) for i, j, s in zip(res.left, res.right, res.score)]


@given(rows=heavy_bags(), threshold=st.sampled_from([0.3, 0.6, 0.9, 1.0]),
       measure=st.sampled_from(["dice", "jaccard"]))
@settings(max_examples=40, deadline=None)
def test_bags_with_heavy_counts_join_as_the_definition(rows, threshold, measure):
    ts = _bags(rows)
    units = [(Counter(r),) for r in rows]
    want = ref.join(units, None, threshold, measure)
    for nt in (1, 2):
        got = overlap_join(ts, None, threshold=threshold, measure=measure, n_threads=nt)
        assert _pairs(got) == want


@given(rows=heavy_bags(), measure=st.sampled_from(["dice", "jaccard"]))
@settings(max_examples=30, deadline=None)
def test_bags_with_heavy_counts_top_k_as_the_definition(rows, measure):
    ts = _bags(rows)
    units = [(Counter(r),) for r in rows]
    half = len(rows) // 2
    want = ref.max_overlap(units[:half], units[half:], 2, 0.0, measure)
    for nt in (1, 2):
        got = max_overlap(_bags(rows[:half]), _bags(rows[half:]), top_k=2, measure=measure,
                          n_threads=nt)
        assert got.score.tolist() == [[s for s, _ in w] for w in want]
        assert got.index.tolist() == [[j for _, j in w] for w in want]
    want_self = ref.max_overlap(units, None, 1, 0.0, measure)
    got = max_overlap(ts, None, measure=measure)
    assert got.score.tolist() == [w[0][0] for w in want_self]
    assert got.index.tolist() == [w[0][1] for w in want_self]


@given(rows=heavy_bags(), threshold=st.sampled_from([0.3, 0.6, 0.9]))
@settings(max_examples=20, deadline=None)
def test_a_handed_over_index_of_heavy_bags_joins_as_the_definition(rows, threshold):
    """The self-only index (renumbered, tokens of one row left out)."""
    saved = _index.RENUMBER_MIN_ROWS
    try:
        _index.RENUMBER_MIN_ROWS = 0
        index = build_index(Handover((_bags(rows),), lean=True), "units", 2, as_queries=True)
        got = index.join(None, threshold=threshold, n_threads=2)
    finally:
        _index.RENUMBER_MIN_ROWS = saved
    assert _pairs(got) == ref.join([(Counter(r),) for r in rows], None, threshold)


def test_the_corpora_saturate(monkeypatch):
    """The bags above do store SUF_SAT (else these tests would test nothing new)."""
    seen = _saturates(monkeypatch)
    rows = [{0: SAT + 1, 1: 5}, {0: 3, 1: SAT}, {0: 2}] * 12
    overlap_join(_bags(rows), None, threshold=0.5)
    assert seen == [True]


@pytest.mark.parametrize("threshold", [0.5, 0.99, 0.9999, 1.0])
def test_rows_of_about_65535_tokens_as_the_definition(monkeypatch, threshold):
    """Sets whose rows hold about SAT tokens: the rarest tokens' suffix masses
    are SAT or more, stored saturated; sizes tie within a few tokens."""
    seen = _saturates(monkeypatch)
    rows = [range(0, SAT + 3), range(1, SAT + 3), range(0, SAT - 1), range(2, SAT + 2),
            range(0, SAT + 3), range(100, SAT + 400), range(5, 9)]
    units = [(Counter({t: 1 for t in r}),) for r in rows]
    ts = _sets(rows)
    want = ref.join(units, None, threshold)
    for nt in (1, 2):
        assert _pairs(overlap_join(ts, None, threshold=threshold, n_threads=nt)) == want
    top = ref.max_overlap(units, None, 2)
    got = max_overlap(ts, None, top_k=2)
    assert got.score.tolist() == [[s for s, _ in w] for w in top]
    assert got.index.tolist() == [[j for _, j in w] for w in top]
    assert seen and all(seen)
