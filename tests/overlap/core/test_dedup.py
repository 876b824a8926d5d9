"""dedup and exact_duplicates against the literal plain-Python method (SPEC §5)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference import overlap as ref
from overlap import TokenSets, dedup, exact_duplicates, ratio
from reference.helpers import build, collections, make_corpus, ref_units

thresholds = st.sampled_from([0.0, 0.3, 0.5, 2 / 3, 0.8, 0.99, 1.0])


@given(st.data(), st.booleans(), thresholds)
def test_dedup_matches_the_literal_method(data, multiset, threshold):
    nf = data.draw(st.integers(1, 2))
    u = data.draw(collections(nf, max_rows=30))
    got = dedup(build(u, multiset), threshold=threshold, n_threads=2)
    present, kept_for, passes, cluster = ref.dedup(ref_units(u, multiset), threshold)
    assert got.keep.tolist() == present
    assert got.kept_for.tolist() == kept_for
    assert got.passes == passes
    assert got.cluster.tolist() == cluster


def all_pairs_ratio(ts: TokenSets) -> np.ndarray:
    n = len(ts)
    i, j = np.triu_indices(n, 1)
    m = np.zeros((n, n))
    m[i, j] = m[j, i] = ratio(ts.take(i), ts.take(j))
    return m


@given(st.lists(st.lists(st.integers(0, 7), max_size=6), max_size=40), thresholds)
def test_dedup_guarantees(rows_, threshold):
    ts = TokenSets.from_ids(rows_)
    res = dedup(ts, threshold=threshold)
    n = len(ts)
    m = all_pairs_ratio(ts)
    kept = np.flatnonzero(res.keep)
    # 1. no two kept units have R > t
    assert not (m[np.ix_(kept, kept)] > threshold).any()
    # 2. every connected group keeps at least one unit
    for label in np.unique(res.cluster):
        assert res.keep[res.cluster == label].any()
    # 3. kept_for chains end at a kept unit (and stay inside the cluster)
    rep = res.representative()
    assert res.keep[rep].all()
    assert (res.cluster[rep] == res.cluster).all()
    assert (res.kept_for[res.keep] == -1).all()
    assert (res.kept_for[~res.keep] >= 0).all()
    # cluster labels are the smallest member of each component
    for label in np.unique(res.cluster):
        assert label == np.flatnonzero(res.cluster == label).min()
    assert res.n_removed == n - kept.shape[0]


@pytest.mark.parametrize("n_threads", [1, 2, 4])
def test_dedup_independent_of_thread_count(rng, n_threads):
    ts = TokenSets.from_ids(make_corpus(rng, 5000))
    base = dedup(ts, threshold=0.6, n_threads=1)
    other = dedup(ts, threshold=0.6, n_threads=n_threads)
    np.testing.assert_array_equal(base.keep, other.keep)
    np.testing.assert_array_equal(base.kept_for, other.kept_for)
    np.testing.assert_array_equal(base.cluster, other.cluster)
    assert base.passes == other.passes and base.n_removed > 0


def test_protection_and_chains_on_a_handmade_case():
    # 0~1 and 1~2 are near-duplicates, 0 and 2 are not.
    ts = TokenSets.from_ids([[1, 2, 3, 4, 5], [1, 2, 3, 4, 6], [1, 2, 3, 7, 6]])
    res = dedup(ts, threshold=0.7)
    # pass 1: 0 is removed for 1, which becomes protected; 1 is skipped (without
    # protection it would go for 2); 2 is removed for 1.  Pass 2 removes nothing.
    assert res.keep.tolist() == [False, True, False]
    assert res.kept_for.tolist() == [1, -1, 1]
    assert res.passes == 2
    assert res.cluster.tolist() == [0, 0, 0]
    assert res.representative().tolist() == [1, 1, 1]


@given(st.data(), st.booleans())
def test_exact_duplicates_matches_reference(data, multiset):
    nf = data.draw(st.integers(1, 2))
    u = data.draw(collections(nf, max_rows=30))
    got = exact_duplicates(build(u, multiset))
    assert got.tolist() == ref.exact_duplicates(ref_units(u, multiset))


def test_exact_duplicates_on_texts():
    ts = TokenSets.from_texts(["Hello there!", "hello THERE", "bye", "", "", "bye ."])
    assert exact_duplicates(ts).tolist() == [0, 0, 2, 3, 3, 2]


@pytest.mark.parametrize(
    "kwargs, exc, message",
    [
        ({"threshold": 1.2}, ValueError, "threshold"),
        ({"threshold": None}, TypeError, "threshold"),
        ({"n_threads": 0}, ValueError, "n_threads"),
    ],
)
def test_dedup_bad_input(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        dedup(TokenSets.from_ids([[1], [1]]), **kwargs)
    with pytest.raises(TypeError, match="units"):
        exact_duplicates([[1, 2]])


def test_dedup_small_inputs():
    assert dedup(TokenSets.from_ids([])).keep.shape == (0,)
    one = dedup(TokenSets.from_ids([[1]]))
    assert one.keep.tolist() == [True] and one.passes == 1
