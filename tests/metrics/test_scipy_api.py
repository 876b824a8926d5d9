"""scipy.stats call shapes: unpacking, axis, 2-D spearman, tau-c, resampling, CIs.

Runs from the declared floor (scipy 1.9.3) on: scipy's results are read as
``res[0]`` and ``res[1]``, axis= of scipy functions that have none yet is
scipy on each slice, resampling methods are scipy's objects or, before scipy
1.11, objects with their attributes (``reference.helpers``).
"""

from __future__ import annotations

import math
import warnings
from itertools import permutations

import numpy as np
import pytest
import scipy.stats as ss

import metrics
from reference.helpers import scipy_along_axis, scipy_has_method, scipy_method


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def test_results_unpack_and_index_like_scipy(rng):
    x, y = rng.normal(size=(2, 50))
    for f in (metrics.pearson, metrics.spearman, metrics.kendall):
        res = f(x, y)
        r, p = res
        assert (r, p) == (res[0], res[1]) == (res.statistic, res.pvalue)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_pearson_and_kendall_along_an_axis(rng, axis):
    x, y = rng.normal(size=(2, 7, 9))
    for ours, theirs in ((metrics.pearson, ss.pearsonr), (metrics.kendall, ss.kendalltau)):
        a, (stat, pvalue) = ours(x, y, axis=axis), scipy_along_axis(theirs, x, y, axis)
        np.testing.assert_allclose(a.statistic, stat, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.pvalue, pvalue, rtol=1e-10, atol=1e-14)


def test_pearson_axis_broadcasts_as_scipy(rng):
    x = rng.normal(size=(4, 1, 10))
    y = rng.normal(size=(3, 10))
    a, (stat, _) = metrics.pearson(x, y, axis=-1), scipy_along_axis(ss.pearsonr, x, y, -1)
    assert a.statistic.shape == stat.shape == (4, 3)
    np.testing.assert_allclose(a.statistic, stat, atol=1e-12)


def test_axis_none_flattens(rng):
    x, y = rng.normal(size=(2, 3, 5))
    assert metrics.pearson(x, y, axis=None).statistic == pytest.approx(
        ss.pearsonr(x.ravel(), y.ravel())[0], abs=1e-14)
    assert metrics.kendall(x, y).statistic == pytest.approx(
        ss.kendalltau(x.ravel(), y.ravel())[0], abs=1e-14)


@pytest.mark.parametrize("axis", [0, 1])
def test_spearman_matrix_of_2d_input(rng, axis):
    data = rng.normal(size=(30, 4))
    data[:, 1] = np.round(data[:, 1])  # ties
    if axis == 1:
        data = data.T
    a, b = metrics.spearman(data, axis=axis), ss.spearmanr(data, axis=axis)
    assert a.statistic.shape == (4, 4)
    np.testing.assert_allclose(a.statistic, b[0], atol=1e-12)
    np.testing.assert_allclose(a.pvalue, b[1], rtol=1e-10, atol=1e-14)


def test_spearman_two_2d_inputs_and_nan_variables(rng):
    a, b = rng.normal(size=(2, 20, 2))
    a[3, 1] = np.nan
    ours, theirs = metrics.spearman(a, b), ss.spearmanr(a, b)
    np.testing.assert_allclose(ours.statistic, theirs[0], atol=1e-12)
    assert np.isnan(ours.statistic[1]).all() and np.isnan(ours.statistic[:, 1]).all()


def test_spearman_needs_two_variables():
    with pytest.raises(ValueError, match="2 variables"):
        metrics.spearman([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="axis"):
        metrics.spearman(np.ones((3, 3)), axis=2)


@pytest.mark.parametrize("n", [5, 40, 300])
def test_kendall_tau_c(rng, n):
    x = rng.integers(0, 4, n).astype(float)
    y = rng.integers(0, 6, n).astype(float) + x
    a, b = metrics.kendall(x, y, variant="c"), ss.kendalltau(x, y, variant="c")
    assert a.statistic == pytest.approx(b[0], abs=1e-12)
    assert a.pvalue == pytest.approx(b.pvalue, rel=1e-10)
    with pytest.raises(ValueError, match="variant"):
        metrics.kendall(x, y, variant="a")


def _brute_force_permutation_p(x, y, alternative):
    r = ss.pearsonr(x, y)[0]
    null = np.array([ss.pearsonr(x, y[list(p)])[0] for p in permutations(range(len(x)))])
    tol = 1e-14 * abs(r)
    less = np.mean(null <= r + tol)
    greater = np.mean(null >= r - tol)
    return {"less": less, "greater": greater,
            "two-sided": min(1.0, 2 * min(less, greater))}[alternative]


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_exact_permutation_pvalue(alternative):
    x = np.array([1.0, 2.5, 3.0, 4.5, 7.0, 6.0])
    y = np.array([2.0, 1.0, 4.0, 3.0, 6.5, 5.0])
    method = scipy_method("PermutationMethod", n_resamples=np.inf)
    p = metrics.pearson(x, y, alternative=alternative, method=method).pvalue
    assert p == pytest.approx(_brute_force_permutation_p(x, y, alternative), abs=1e-15)
    if scipy_has_method(ss.pearsonr):  # scipy >= 1.11
        assert p == pytest.approx(ss.pearsonr(x, y, alternative=alternative,
                                              method=method).pvalue, abs=1e-15)


def test_random_permutation_and_monte_carlo_are_seeded(rng):
    x, y = rng.normal(size=(2, 60))
    y += 0.3 * x
    ref = ss.pearsonr(x, y).pvalue
    for make in (lambda: scipy_method("PermutationMethod", n_resamples=4000, rng=5),
                 lambda: scipy_method("MonteCarloMethod", n_resamples=4000, rng=5)):
        p1 = metrics.pearson(x, y, method=make(), n_threads=1).pvalue
        p2 = metrics.pearson(x, y, method=make(), n_threads=2).pvalue
        assert p1 == p2
        assert p1 == pytest.approx(ref, abs=0.02)


def test_bad_method_is_value_error():
    with pytest.raises(ValueError, match="method"):
        metrics.pearson([1.0, 2.0, 3.0], [1.0, 3.0, 2.0], method="permutation")


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_bootstrap_confidence_interval(rng, alternative):
    x = rng.normal(size=200)
    y = 0.5 * x + rng.normal(size=200)
    res = metrics.pearson(x, y, alternative=alternative)
    ci1 = res.confidence_interval(
        method=scipy_method("BootstrapMethod", rng=np.random.default_rng(3)))
    ci2 = res.confidence_interval(
        method=scipy_method("BootstrapMethod", rng=np.random.default_rng(3)))
    fisher = res.confidence_interval()
    assert ci1 == ci2
    np.testing.assert_allclose(ci1, fisher, atol=0.05)
    if alternative == "less":
        assert ci1.low == -1.0
    if alternative == "greater":
        assert ci1.high == 1.0


def test_empty_and_tiny_inputs_match_scipy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f, g in ((metrics.spearman, ss.spearmanr), (metrics.kendall, ss.kendalltau)):
            a, b = f([], []), g([], [])
            assert math.isnan(a.statistic) and math.isnan(float(b[0]))
    with pytest.raises(ValueError):
        metrics.pearson([1.0], [2.0])
