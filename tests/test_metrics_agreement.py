"""metrics.krippendorff_alpha / split_half / trimmed_mean."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import _reference_metrics as ref
import metrics


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@st.composite
def rating_matrices(draw):
    raters = draw(st.integers(2, 5))
    items = draw(st.integers(2, 8))
    cells = draw(st.lists(
        st.one_of(st.none(), st.sampled_from([1.0, 2.0, 3.0, 4.5, 5.0])),
        min_size=raters * items, max_size=raters * items))
    m = np.array([np.nan if c is None else c for c in cells]).reshape(raters, items)
    return m


@settings(max_examples=120, deadline=None)
@given(m=rating_matrices(), level=st.sampled_from(["interval", "nominal"]))
def test_alpha_matches_coincidence_definition(m, level):
    pairable = [col[~np.isnan(col)] for col in m.T if (~np.isnan(col)).sum() >= 2]
    vals = np.concatenate(pairable) if pairable else np.array([])
    if vals.size < 2 or np.unique(vals).size < 2:
        with pytest.warns(RuntimeWarning, match="undefined"):
            assert math.isnan(metrics.krippendorff_alpha(m, level=level))
        return
    got = metrics.krippendorff_alpha(m, level=level)
    want = ref.krippendorff_alpha(m.tolist(), level)
    assert got == pytest.approx(want, abs=1e-12)


def test_alpha_known_properties(rng):
    truth = rng.normal(size=200)
    perfect = np.tile(truth, (4, 1))
    assert metrics.krippendorff_alpha(perfect) == pytest.approx(1.0, abs=1e-12)
    noise = rng.normal(size=(4, 200))
    assert abs(metrics.krippendorff_alpha(noise)) < 0.1


def test_alpha_vs_krippendorff_package(rng):
    kp = pytest.importorskip("krippendorff")
    m = np.round(rng.uniform(1, 5, (5, 300)) * 10) / 10
    m[rng.random(m.shape) < 0.3] = np.nan
    for level in ("interval", "nominal"):
        want = kp.alpha(reliability_data=m, level_of_measurement=level)
        assert metrics.krippendorff_alpha(m, level=level) == pytest.approx(want, abs=1e-9)


def test_alpha_threads_and_memory_free_of_values(rng):
    m = rng.normal(size=(7, 50_000))  # every value distinct: a values^2 array would be huge
    m[rng.random(m.shape) < 0.2] = np.nan
    res = [metrics.krippendorff_alpha(m, n_threads=t) for t in (1, 2, 4)]
    assert res[0] == res[1] == res[2]


def test_alpha_bad_input():
    with pytest.raises(ValueError, match="level"):
        metrics.krippendorff_alpha([[1, 2], [1, 2]], level="ordinal-ish")
    with pytest.raises(ValueError, match="2-D"):
        metrics.krippendorff_alpha([1, 2, 3])
    with pytest.raises(ValueError, match="empty"):
        metrics.krippendorff_alpha(np.empty((0, 3)))
    with pytest.raises(TypeError, match="ratings"):
        metrics.krippendorff_alpha("ratings")
    with pytest.raises(ValueError, match="infinite"):
        metrics.krippendorff_alpha([[1, np.inf], [1, 2]])


@settings(max_examples=60, deadline=None)
@given(m=rating_matrices())
def test_trimmed_mean_matches_reference(m):
    got = metrics.trimmed_mean(m)
    want = ref.trimmed_mean(m.tolist())
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_trimmed_mean_drops_extremes_only_from_five_labels():
    m = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0], [10.0, np.nan]])
    np.testing.assert_allclose(metrics.trimmed_mean(m), [3.0, 2.5])
    m0 = np.array([[1.0, 1.0], [2.0, 2.0]])
    m0c = m0.copy()
    metrics.trimmed_mean(m0)
    np.testing.assert_array_equal(m0, m0c)


def test_split_half(rng):
    truth = rng.normal(size=300)
    m = truth + 0.5 * rng.normal(size=(6, 300))
    m[rng.random(m.shape) < 0.2] = np.nan
    a = metrics.split_half(m, n_splits=30, seed=3)
    b = metrics.split_half(m, n_splits=30, seed=3)
    np.testing.assert_array_equal(a.splits, b.splits)
    assert 0.5 < a.statistic < 1
    raw = metrics.split_half(m, n_splits=30, seed=3, spearman_brown=False)
    np.testing.assert_allclose(a.splits, 2 * raw.splits / (1 + raw.splits), atol=1e-12)
    perfect = np.tile(truth, (4, 1))
    assert metrics.split_half(perfect, n_splits=5, seed=1).statistic == pytest.approx(1.0)
    noise = rng.normal(size=(6, 2000))
    assert abs(metrics.split_half(noise, n_splits=10, seed=1, spearman_brown=False).statistic) < 0.1


def test_split_half_halves_are_disjoint_label_sets():
    # two labels per item: each split sends one label of every item to each half,
    # so every split's r must be the r of one of the 2**5 ways to orient the items
    import itertools
    m = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 2.0, 4.0, 3.0, 5.0]])
    res = metrics.split_half(m, n_splits=40, seed=0, spearman_brown=False)
    possible = []
    for flips in itertools.product([False, True], repeat=5):
        a = np.where(flips, m[1], m[0])
        b = np.where(flips, m[0], m[1])
        possible.append(np.corrcoef(a, b)[0, 1])
    possible = np.array(possible)
    for r in res.splits:
        assert np.min(np.abs(possible - r)) < 1e-12
    assert len(set(np.round(res.splits, 12))) > 1  # the splits really vary


def test_split_half_bad_input():
    with pytest.raises(ValueError, match="n_splits"):
        metrics.split_half([[1, 2], [1, 2]], n_splits=0)
    with pytest.raises(ValueError, match="at least 2 items"):
        metrics.split_half([[1, np.nan], [1, 2]])
    with pytest.raises(TypeError, match="spearman_brown"):
        metrics.split_half([[1, 2], [1, 2]], spearman_brown="yes")
