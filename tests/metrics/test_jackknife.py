"""The O(n log n) leave-one-out Spearman and Kendall statistics of the BCa bootstrap."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import metrics
from metrics.bootstrap import _jackknife


def _brute(method, x, y):
    f = getattr(metrics, method)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(x.shape[0]):
            keep = np.arange(x.shape[0]) != i
            out.append(f(x[keep], y[keep]).statistic)
    return np.array(out)


values = st.lists(st.sampled_from([0.0, 1.0, 1.0, 2.0, 3.5, -1.0, 7.0, np.inf, -np.inf]),
                  min_size=3, max_size=30)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_leave_one_out_matches_brute_force_with_ties_and_infinities(data):
    x = np.array(data.draw(values))
    y = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 2.0, 5.0, -3.0]),
                                    min_size=len(x), max_size=len(x))))
    for method in ("spearman", "kendall"):
        got = _jackknife(method, x, y, 1)
        want = _brute(method, x, y)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, equal_nan=True)


def test_leave_one_out_continuous_and_larger():
    rng = np.random.default_rng(4)
    x = rng.normal(size=400)
    y = np.round(x + rng.normal(size=400), 1)
    for method in ("spearman", "kendall"):
        np.testing.assert_allclose(_jackknife(method, x, y, 2), _brute(method, x, y),
                                   rtol=0, atol=1e-12)
