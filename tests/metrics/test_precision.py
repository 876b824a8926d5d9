"""Accuracy of the correlation functions under a large common offset.

Every float64 is an integer times a power of two, so Pearson's r of float
data has an exact rational square: the reference (``exact_pearson`` in
tests/reference/metrics.py) computes the sums in Python integers (no rounding
at all) and rounds only the final ratio.  The library must agree with it to 1e-12 for offsets up to 1e12 and spreads down
to 1e-6 (issue 11, section 1), where one-pass or chunk-mean formulas lose
everything.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metrics
from reference.metrics import exact_pearson

TOL = 1e-12


def _close(r: float, exact: float) -> bool:
    return abs(r - exact) <= TOL * max(abs(exact), 1e-3)


def _offset_data(rng, n, offset, spread, slope=0.5):
    x = offset + spread * rng.standard_normal(n)
    y = -0.3 * offset + slope * (x - offset) + spread * rng.standard_normal(n)
    return x, y


def test_exact_reference_on_a_known_case():
    # r of (1, 2, 3) and (1, 2, 4) is 3 / sqrt(2 * 14 / 3) / ... -- by hand:
    # centred x = (-1, 0, 1), y = (-4/3, -1/3, 5/3): sxy = 3, sxx = 2, syy = 14/3
    assert exact_pearson([1, 2, 3], [1, 2, 4]) == pytest.approx(3 / math.sqrt(2 * 14 / 3),
                                                                rel=1e-15)


def test_issue_reproduction_offset_1e9_n8192():
    rng = np.random.default_rng(0)
    x = 1e9 + rng.standard_normal(8192)
    y = -3e8 + 0.5 * (x - 1e9) + rng.standard_normal(8192)
    exact = exact_pearson(x, y)
    r = metrics.pearson(x, y).statistic
    assert _close(r, exact), (r, exact)


@pytest.mark.parametrize("n", [3, 10, 100, 2048, 2049, 4097, 8192, 50_000])
@pytest.mark.parametrize("offset,spread", [(1e6, 1e-6), (1e9, 1.0), (1e9, 1e-3),
                                           (1e12, 1.0), (1e12, 1e-2), (-1e12, 3.0),
                                           (0.0, 1e-6)])
def test_pearson_offsets(n, offset, spread):
    rng = np.random.default_rng(n)
    x, y = _offset_data(rng, n, offset, spread)
    exact = exact_pearson(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # near-constant warnings are scipy's rule
        r = metrics.pearson(x, y).statistic
    assert _close(r, exact), (r, exact)


@pytest.mark.slow
def test_pearson_offset_n_1e6():
    rng = np.random.default_rng(5)
    x, y = _offset_data(rng, 1_000_000, 1e9, 1.0)
    assert _close(metrics.pearson(x, y).statistic, exact_pearson(x, y))


def test_pearson_offset_same_for_every_thread_count():
    rng = np.random.default_rng(6)
    x, y = _offset_data(rng, 300_000, 1e12, 1.0)
    rs = {metrics.pearson(x, y, n_threads=t).statistic for t in (1, 2, 3)}
    assert len(rs) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(3, 6000), offset_exp=st.integers(-3, 12),
       spread_exp=st.integers(-6, 3), sign=st.sampled_from([-1.0, 1.0]),
       slope=st.floats(-2, 2), seed=st.integers(0, 2**32 - 1))
def test_pearson_offsets_property(n, offset_exp, spread_exp, sign, slope, seed):
    offset, spread = sign * 10.0**offset_exp, 10.0**spread_exp
    if abs(offset) / spread > 1e14:  # spread below the spacing of doubles there
        spread = abs(offset) * 1e-14
    rng = np.random.default_rng(seed)
    x, y = _offset_data(rng, n, offset, spread, slope)
    exact = exact_pearson(x, y)
    if math.isnan(exact):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = metrics.pearson(x, y).statistic
    assert _close(r, exact), (r, exact)


@pytest.mark.parametrize("offset", [1e6, 1e9, 1e12])
def test_grouped_offsets(offset):
    rng = np.random.default_rng(7)
    n = 40_000
    x, y = _offset_data(rng, n, offset, 1.0)
    g = rng.integers(0, 5, n)
    g[:3] = 9  # one group of exactly 3 rows (the scipy-arithmetic route)
    res = metrics.grouped(x, y, g)
    for lab in np.unique(g).tolist():
        m = g == lab
        assert _close(res[lab].statistic, exact_pearson(x[m], y[m])), lab
    assert _close(res.overall.statistic, exact_pearson(x, y))


def test_grouped_matches_pearson_on_small_groups_to_the_bit():
    rng = np.random.default_rng(8)
    n = 3 * 500
    x = rng.standard_normal(n)
    y = x + 1e-7 * rng.standard_normal(n)  # |r| near 1: p amplifies 1-ulp changes
    g = np.repeat(np.arange(500), 3)
    res = metrics.grouped(x, y, g)
    for lab in range(0, 500, 7):
        m = g == lab
        single = metrics.pearson(x[m], y[m])
        assert res[lab].statistic == single.statistic
        assert res[lab].pvalue == single.pvalue


@pytest.mark.parametrize("offset", [1e9, 1e12])
def test_bootstrap_resample_statistics_offsets(offset):
    rng = np.random.default_rng(9)
    n = 3000
    x, y = _offset_data(rng, n, offset, 1.0)
    res = metrics.bootstrap_ci(x, y, n_resamples=5, seed=3, ci="percentile")
    from metrics import _boot

    for b in range(5):
        w = _boot.resample_indices(3, b, n)
        idx = np.repeat(np.arange(n), w)
        assert _close(res.bootstrap_distribution[b], exact_pearson(x[idx], y[idx]))
    assert _close(res.statistic, exact_pearson(x, y))
