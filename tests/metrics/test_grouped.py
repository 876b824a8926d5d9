"""grouped Spearman/Kendall over many groups: ranked in one sort of all rows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import metrics


def _data(rng, kind, n):
    if kind == "continuous":
        x = rng.normal(size=n)
        return x, x + rng.normal(size=n)
    if kind == "ties":
        x = np.round(rng.normal(size=n), 1)
        return x, np.round(x + rng.normal(size=n))
    if kind == "likert":
        x = rng.integers(1, 6, n).astype(float)
        return x, np.clip(x + rng.integers(-1, 2, n), 1, 5).astype(float)
    x = rng.normal(size=n)  # infinities are ordinary values for ranks
    x[::17] = np.inf
    y = x + rng.normal(size=n)
    y[::23] = -np.inf
    return x, y


@pytest.mark.parametrize("kind", ["continuous", "ties", "likert", "inf"])
@pytest.mark.parametrize("method", ["spearman", "kendall"])
@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_many_groups_match_one_call_per_group(kind, method, alternative):
    rng = np.random.default_rng(hash((kind, method, alternative)) % 2**32)
    n = 6000
    x, y = _data(rng, kind, n)
    g = rng.integers(0, 300, n)  # ~20 rows a group: exact Kendall p-values too
    g[:50] = 1000                # and one bigger group
    res = metrics.grouped(x, y, g, method=method, alternative=alternative)
    f = getattr(metrics, method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lab in np.unique(g).tolist():
            m = g == lab
            want = f(x[m], y[m], alternative=alternative)
            got = res[lab]
            assert got.n == m.sum()
            np.testing.assert_allclose(got.statistic, want.statistic, rtol=0, atol=1e-15,
                                       equal_nan=True)
            np.testing.assert_allclose(got.pvalue, want.pvalue, rtol=1e-12, atol=1e-300,
                                       equal_nan=True)


@pytest.mark.parametrize("method", ["spearman", "kendall"])
def test_many_groups_thread_count_invariant(method):
    rng = np.random.default_rng(1)
    x, y = _data(rng, "ties", 20_000)
    g = rng.integers(0, 500, 20_000)
    a = metrics.grouped(x, y, g, method=method, n_threads=1)
    b = metrics.grouped(x, y, g, method=method, n_threads=3)
    np.testing.assert_array_equal(np.array(a.table())[:, 1:].astype(float),
                                  np.array(b.table())[:, 1:].astype(float))


def test_small_and_constant_groups_keep_their_warnings():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    y = np.array([2.0, 1.0, 4.0, 3.0, 5.0, 5.0, 5.0, 9.0])
    g = np.array([0, 0, 0, 0, 1, 1, 1, 2])
    with pytest.warns(metrics.correlation.SmallSampleWarning):
        res = metrics.grouped(x, y, g, method="kendall")
    assert np.isnan(res[2].statistic)
    with pytest.warns(metrics.correlation.ConstantInputWarning):
        metrics.grouped(x[:7], y[:7], g[:7], method="spearman")
