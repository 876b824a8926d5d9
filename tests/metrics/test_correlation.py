"""metrics.pearson / spearman / kendall / grouped / bootstrap_ci.

Compared with scipy.stats from the declared floor (1.9.3) on: scipy's results
are read as ``res[0]`` and ``res.pvalue`` (``.statistic`` on spearmanr's and
kendalltau's results is new in scipy 1.10), and where an older scipy's
function differs from today's (the definition compared with) on some input,
that comparison is left out there (``reference.helpers.old_scipy_differs``).
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
import scipy.stats as ss
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import metrics
from metrics import _boot
from reference import metrics as ref
from reference.helpers import old_scipy_differs

ALTS = ("two-sided", "less", "greater")
#: scipy.stats.bootstrap takes ``rng=`` from scipy 1.15 on, ``random_state=``
#: before: the same Generator either way
_SCIPY_RNG = "rng" in inspect.signature(ss.bootstrap).parameters
PAIRS = [(metrics.pearson, ss.pearsonr), (metrics.spearman, ss.spearmanr),
         (metrics.kendall, ss.kendalltau)]


@pytest.fixture
def rng():
    return np.random.default_rng(20240229)


def _both(ours, theirs, x, y, **kw):
    """Run both with warnings recorded; return results and warning categories."""
    with warnings.catch_warnings(record=True) as w1:
        warnings.simplefilter("always")
        a = ours(x, y, **kw)
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        b = theirs(x, y, **kw)
    return a, b, {w.category for w in w1}, {w.category for w in w2}


def _close(a, b, tol=1e-12):
    if math.isnan(b):
        return math.isnan(a)
    return abs(a - b) <= tol


def _assert_matches(ours, theirs, x, y, **kw):
    if old_scipy_differs(theirs, x, y, kw.get("alternative", "two-sided")):
        return
    a, b, wa, wb = _both(ours, theirs, x, y, **kw)
    assert _close(a.statistic, float(b[0])), (a, b)
    assert _close(a.pvalue, float(b.pvalue)), (a, b)
    for cat in (ss.ConstantInputWarning, ss.NearConstantInputWarning):
        assert (cat in wa) == (cat in wb), (cat, wa, wb)


# ----------------------------------------------------------------- vs scipy

values = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False),
    st.sampled_from([0.0, 1.0, 2.0, 3.0, -1.0, 0.5]),  # ties
)


@st.composite
def paired(draw, min_n=2, max_n=40):
    n = draw(st.integers(min_n, max_n))
    x = draw(st.lists(values, min_size=n, max_size=n))
    y = draw(st.lists(values, min_size=n, max_size=n))
    return np.array(x), np.array(y)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(xy=paired(), alt=st.sampled_from(ALTS), which=st.integers(0, 2))
def test_matches_scipy_random(xy, alt, which):
    x, y = xy
    ours, theirs = PAIRS[which]
    assume(not old_scipy_differs(theirs, x, y, alt))
    a, b, wa, wb = _both(ours, theirs, x, y, alternative=alt)
    # scipy's own result is unreliable when it warns of near-constant input;
    # identical arithmetic is used for small n, so even then they must agree.
    assert _close(a.statistic, float(b[0])), (a, b)
    assert _close(a.pvalue, float(b.pvalue)), (a, b)
    assert (ss.ConstantInputWarning in wa) == (ss.ConstantInputWarning in wb)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 30), levels=st.integers(1, 6), seed=st.integers(0, 2**32 - 1),
       alt=st.sampled_from(ALTS))
def test_matches_scipy_likert(n, levels, seed, alt):
    r = np.random.default_rng(seed)
    x = r.integers(1, levels + 1, n).astype(float)
    y = r.integers(1, levels + 1, n).astype(float)
    for ours, theirs in PAIRS:
        _assert_matches(ours, theirs, x, y, alternative=alt)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("alt", ALTS)
def test_tiny_samples(n, alt):
    for x, y in [(np.arange(n, dtype=float), np.arange(n, dtype=float)),
                 (np.arange(n, dtype=float), -np.arange(n, dtype=float)),
                 (np.array([1.0, 5.0, 2.0][:n]), np.array([3.0, 1.0, 2.0][:n]))]:
        for ours, theirs in PAIRS:
            _assert_matches(ours, theirs, x, y, alternative=alt)


@pytest.mark.parametrize("n", [100, 3000, 20000])
@pytest.mark.parametrize("kind", ["continuous", "likert", "wide_ints", "ties"])
def test_large_vs_scipy(rng, n, kind):
    if kind == "continuous":
        x = rng.normal(size=n)
        y = 0.3 * x + rng.normal(size=n)
    elif kind == "likert":
        x = rng.integers(1, 6, n).astype(float)
        y = np.clip(x + rng.integers(-2, 3, n), 1, 5)
    elif kind == "wide_ints":  # integers but too wide for the table path
        x = rng.integers(0, 1000, n).astype(float)
        y = x + rng.integers(-300, 300, n)
    else:
        x = np.round(rng.normal(size=n), 1) + 1e3
        y = np.round(x + rng.normal(size=n), 1)
    for alt in ALTS:
        for ours, theirs in PAIRS:
            if old_scipy_differs(theirs, x, y, alt):
                continue
            a, b, _, _ = _both(ours, theirs, x, y, alternative=alt)
            assert abs(a.statistic - b[0]) <= 1e-12
            # p-values below ~1e-300 are numerically 0 in both
            assert abs(a.pvalue - b.pvalue) <= 1e-12 * max(1.0, abs(b.pvalue))


def test_matches_plain_reference(rng):
    for _ in range(20):
        n = int(rng.integers(3, 25))
        x = rng.choice([0.0, 1.0, 2.0, 2.5, 7.0], n) + (rng.random() < 0.5) * rng.normal(size=n)
        y = rng.choice([0.0, 1.0, 3.0], n) + (rng.random() < 0.5) * rng.normal(size=n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for got, want in [(metrics.pearson(x, y).statistic, ref.pearson(x.tolist(), y.tolist())),
                              (metrics.spearman(x, y).statistic, ref.spearman(x.tolist(), y.tolist())),
                              (metrics.kendall(x, y).statistic,
                               ref.kendall_tau_b(x.tolist(), y.tolist()))]:
                assert _close(got, want, 1e-12), (got, want)


def test_kendall_exact_pvalue_reference(rng):
    for n in (3, 5, 8, 12):
        x = rng.permutation(n).astype(float)
        y = rng.permutation(n).astype(float)
        got = metrics.kendall(x, y).pvalue
        assert abs(got - ref.kendall_exact_two_sided(x.tolist(), y.tolist())) <= 1e-12


def test_kendall_exact_near_sorted_large_n():
    # n > 33, no ties, one discordant pair: scipy switches to the exact method
    x = np.arange(60, dtype=float)
    y = x.copy()
    y[[10, 11]] = y[[11, 10]]
    for alt in ALTS:
        _assert_matches(metrics.kendall, ss.kendalltau, x, y, alternative=alt)
    with pytest.raises(ValueError, match="ties"):
        metrics.kendall([1, 1, 2, 3], [1, 2, 3, 4], method="exact")
    a = metrics.kendall(x, y, method="asymptotic")
    b = ss.kendalltau(x, y, method="asymptotic")
    assert abs(a.pvalue - b.pvalue) <= 1e-12


# ----------------------------------------------------------------- edge cases


@pytest.mark.parametrize("x,y", [
    ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]),
    ([2.0, 2.0, 2.0, 2.0], [5.0, 5.0, 5.0, 5.0]),
    ([1.0, np.nan, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0]),
    ([1.0, 2.0, np.inf, 4.0], [1.0, 2.0, 3.0, 5.0]),
    ([1.0, 2.0, 3.0, 4.0], [np.inf, -np.inf, np.inf, 0.0]),
    ([np.inf, np.inf, np.inf], [1.0, 2.0, 3.0]),
    ([1e-300, 2e-300, 3e-300], [1.0, 2.0, 4.0]),
    ([1e200, -1e200, 3e200, 5e199], [1.0, 2.0, 4.0, 3.0]),
])
def test_edge_cases_match_scipy(x, y):
    x, y = np.array(x), np.array(y)
    for ours, theirs in PAIRS:
        for alt in ALTS:
            _assert_matches(ours, theirs, x, y, alternative=alt)


def test_near_constant_offset_is_exact_and_warns_as_scipy():
    # scipy subtracts a mean that is off by ulps of 1e9 and gets 0.43015; the
    # exact r of these floats is 0.4304189619966244 (tests/reference/metrics.py).
    from reference.metrics import exact_pearson

    x = np.array([1e9 + 1e-6, 1e9, 1e9 + 2e-6, 1e9])
    y = np.array([1.0, 2.0, 4.0, 3.0])
    a, b, wa, wb = _both(metrics.pearson, ss.pearsonr, x, y)
    assert abs(a.statistic - exact_pearson(x, y)) <= 1e-15
    assert abs(a.statistic - b[0]) < 1e-3  # scipy: right to 3 digits only
    assert (ss.NearConstantInputWarning in wa) and (ss.NearConstantInputWarning in wb)
    for ours, theirs in PAIRS[1:]:
        _assert_matches(ours, theirs, x, y)


def test_large_edge_cases_match_scipy(rng):
    n = 5000
    base = rng.normal(size=n)
    cases = [
        (np.full(n, 3.0), base),
        (base * 1e-290, base + rng.normal(size=n)),
        (base * 1e250, base + rng.normal(size=n)),
        (np.where(np.arange(n) == 7, np.nan, base), base),
        (np.where(np.arange(n) == 7, np.inf, base), base),
    ]
    for x, y in cases:
        for ours, theirs in PAIRS:
            if old_scipy_differs(theirs, x, y):
                continue
            a, b, wa, wb = _both(ours, theirs, x, y)
            assert _close(a.statistic, float(b[0]), 1e-12), (ours, a, b)
            assert _close(a.pvalue, float(b.pvalue), 1e-12), (ours, a, b)
            assert (ss.ConstantInputWarning in wa) == (ss.ConstantInputWarning in wb)


def test_nan_policies(rng):
    x = rng.normal(size=50)
    y = x + rng.normal(size=50)
    x[[3, 17]] = np.nan
    y[40] = np.nan
    keep = ~(np.isnan(x) | np.isnan(y))
    for ours, theirs in PAIRS:
        assert math.isnan(ours(x, y).statistic)
        with pytest.raises(ValueError, match="NaN"):
            ours(x, y, nan_policy="raise")
        got = ours(x, y, nan_policy="omit")
        want = theirs(x[keep], y[keep])
        assert abs(got.statistic - want[0]) <= 1e-12
        assert abs(got.pvalue - want.pvalue) <= 1e-12
        assert got.n == keep.sum()
    # scipy's own omit paths, where they exist
    for ours, theirs in PAIRS[1:]:
        got = ours(x, y, nan_policy="omit")
        want = theirs(x, y, nan_policy="omit")
        assert abs(got.statistic - want[0]) <= 1e-12
        assert abs(got.pvalue - want.pvalue) <= 1e-12


def test_spearman_omit_drops_infinities_like_scipy():
    x = np.array([1.0, np.nan, 3.0, 4.0, np.inf, 2.0, 7.0])
    y = np.array([1.0, 2.0, 3.0, 5.0, 4.0, 2.5, 0.0])
    got = metrics.spearman(x, y, nan_policy="omit")
    want = ss.spearmanr(x, y, nan_policy="omit")
    assert abs(got.statistic - want[0]) <= 1e-12
    assert abs(got.pvalue - want.pvalue) <= 1e-12


def test_small_samples():
    with pytest.raises(ValueError, match="at least 2"):
        metrics.pearson([1.0], [2.0])
    assert math.isnan(metrics.spearman([1.0], [2.0]).statistic)
    assert math.isnan(metrics.spearman([], []).statistic)
    with pytest.warns(RuntimeWarning):
        assert math.isnan(metrics.kendall([1.0], [2.0]).statistic)


def test_pearson_confidence_interval_matches_scipy(rng):
    for n in (3, 4, 10, 500):
        x = rng.normal(size=n)
        y = x + rng.normal(size=n)
        for alt in ALTS:
            ours = metrics.pearson(x, y, alternative=alt)
            theirs = ss.pearsonr(x, y, alternative=alt)
            for cl in (0.5, 0.9, 0.95):
                a = ours.confidence_interval(cl)
                b = theirs.confidence_interval(cl)
                assert abs(a.low - b.low) <= 1e-12 and abs(a.high - b.high) <= 1e-12
    with pytest.raises(ValueError, match="confidence_level"):
        ours.confidence_interval(1.0)


def test_result_unpacks(rng):
    x = np.sort(rng.normal(size=20))
    r, p = metrics.spearman(x, x[::-1])
    assert r == pytest.approx(-1.0) and 0 <= p <= 1


# ----------------------------------------------------------------- threads


@pytest.mark.parametrize("kind", ["continuous", "likert", "wide_ints"])
def test_thread_invariance(rng, kind):
    n = 60_000
    if kind == "continuous":
        x = rng.normal(size=n)
        y = x + rng.normal(size=n)
    elif kind == "likert":
        x = rng.integers(1, 8, n).astype(float)
        y = np.clip(x + rng.integers(-2, 3, n), 1, 7)
    else:
        x = rng.integers(0, 500, n).astype(float)
        y = x + rng.integers(0, 500, n)
    for f in (metrics.pearson, metrics.spearman, metrics.kendall):
        res = [f(x, y, n_threads=t) for t in (1, 2, 4)]
        assert res[0] == res[1] == res[2], (f, res)


# ----------------------------------------------------------------- grouped


def test_grouped_matches_per_group(rng):
    n = 3000
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    langs = np.array(["en", "es", "pt", "zh"])[rng.integers(0, 4, n)]
    for method, theirs in (("pearson", ss.pearsonr), ("spearman", ss.spearmanr),
                           ("kendall", ss.kendalltau)):
        res = metrics.grouped(x, y, langs, method=method)
        assert list(res.groups) == ["en", "es", "pt", "zh"]
        for g, r in res.groups.items():
            m = langs == g
            want = theirs(x[m], y[m])
            assert abs(r.statistic - want[0]) <= 1e-12
            assert abs(r.pvalue - want.pvalue) <= 1e-12
            assert r.n == m.sum()
        want = theirs(x, y)
        assert abs(res.overall.statistic - want[0]) <= 1e-12
        assert res.table()[-1][0] == "overall"


@pytest.mark.parametrize("shift, scale", [(0.0, 1.0), (3e9, 1e6), (-7.5, 1e-3)])
def test_grouped_pooled_pearson_matches_scipy(rng, shift, scale):
    # n above the small-sample path: the overall comes from merged group moments
    n = 20_000
    x = rng.normal(size=n) * scale + shift
    y = 0.3 * x + rng.normal(size=n) * scale
    groups = rng.integers(0, 7, n)
    res = metrics.grouped(x, y, groups)
    want = ss.pearsonr(x, y)
    assert abs(res.overall.statistic - want.statistic) <= 1e-12
    assert abs(res.overall.pvalue - want.pvalue) <= 1e-12
    assert res.overall.n == n


def test_grouped_large_int_codes_and_threads(rng):
    n = 200_000
    x = rng.normal(size=n) + 5
    y = 0.5 * x + rng.normal(size=n)
    g = rng.integers(100, 110, n)
    res = [metrics.grouped(x, y, g, n_threads=t) for t in (1, 2, 4)]
    assert res[0].groups == res[1].groups == res[2].groups
    for label, r in res[0].groups.items():
        m = g == label
        want = ss.pearsonr(x[m], y[m])
        assert abs(r.statistic - want.statistic) <= 1e-12
        assert abs(r.pvalue - want.pvalue) <= 1e-12


def test_grouped_many_groups_uses_gather(rng):
    n = 50_000
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    g = rng.integers(0, 2000, n) * 7919  # sparse codes -> np.unique path
    res = metrics.grouped(x, y, g)
    for label in list(res.groups)[:20]:
        m = g == label
        assert abs(res[label].statistic - ss.pearsonr(x[m], y[m]).statistic) <= 1e-12


def test_grouped_small_group_and_bad_input(rng):
    x = rng.normal(size=10)
    with pytest.warns(RuntimeWarning, match="group 'b'"):
        res = metrics.grouped(x, x + 1, ["a"] * 9 + ["b"])
    assert math.isnan(res["b"].statistic)
    with pytest.raises(ValueError, match="groups"):
        metrics.grouped(x, x, ["a"] * 9)
    with pytest.raises(ValueError, match="method"):
        metrics.grouped(x, x, ["a"] * 10, method="cosine")
    with pytest.raises(TypeError, match="groups"):
        metrics.grouped(x, x, "abcdefghij")


# ----------------------------------------------------------------- bootstrap


def test_bootstrap_thread_and_seed_determinism(rng):
    x = rng.normal(size=300)
    y = x + rng.normal(size=300)
    for method in ("pearson", "spearman", "kendall"):
        runs = [metrics.bootstrap_ci(x, y, method=method, n_resamples=300, seed=7,
                                     n_threads=t) for t in (1, 2, 4)]
        assert runs[0].confidence_interval == runs[1].confidence_interval \
            == runs[2].confidence_interval
        np.testing.assert_array_equal(runs[0].bootstrap_distribution,
                                      runs[2].bootstrap_distribution)
        other = metrics.bootstrap_ci(x, y, method=method, n_resamples=300, seed=8)
        assert other.confidence_interval != runs[0].confidence_interval


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_bootstrap_resample_statistics_are_exact(rng, method):
    """Each bootstrap value equals the statistic of the explicit resample."""
    n = 60
    x = np.round(rng.normal(size=n), 1)
    y = np.round(x + rng.normal(size=n), 1)
    res = metrics.bootstrap_ci(x, y, method=method, n_resamples=20, seed=123)
    f = getattr(metrics, method)
    for b in range(20):
        w = _boot.resample_indices(_seed_of(123), b, n)
        idx = np.repeat(np.arange(n), w)
        want = f(x[idx], y[idx]).statistic
        assert abs(res.bootstrap_distribution[b] - want) <= 1e-12


def _seed_of(seed):
    return seed  # check_seed passes ints through unchanged


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_jackknife_is_leave_one_out(rng, method):
    from metrics.bootstrap import _jackknife
    n = 40
    x = np.round(rng.normal(size=n), 1)
    y = np.round(x + rng.normal(size=n), 1)
    got = _jackknife(method, x, y, 2)
    f = getattr(metrics, method)
    for i in range(n):
        m = np.arange(n) != i
        assert abs(got[i] - f(x[m], y[m]).statistic) <= 1e-10


def _seeded(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"rng": rng} if _SCIPY_RNG else {"random_state": rng}


@pytest.mark.parametrize("method,ci", [("pearson", "bca"), ("pearson", "percentile"),
                                       ("spearman", "bca"), ("kendall", "basic")])
def test_bootstrap_agrees_with_scipy(rng, method, ci):
    n = 150
    x = rng.normal(size=n)
    y = 0.6 * x + rng.normal(size=n)
    f = {"pearson": ss.pearsonr, "spearman": ss.spearmanr, "kendall": ss.kendalltau}[method]
    ours = metrics.bootstrap_ci(x, y, method=method, n_resamples=3000, ci=ci, seed=1)

    def stat(a, b):
        return f(a, b)[0]

    theirs = ss.bootstrap((x, y), stat, paired=True, vectorized=False, n_resamples=3000,
                          method="BCa" if ci == "bca" else ci, **_seeded(2))
    # Monte-Carlo error of a 95% endpoint with 3000 resamples is ~0.01 here
    assert abs(ours.confidence_interval.low - theirs.confidence_interval.low) < 0.04
    assert abs(ours.confidence_interval.high - theirs.confidence_interval.high) < 0.04
    assert abs(ours.standard_error - theirs.standard_error) < 0.2 * theirs.standard_error


def test_bootstrap_bad_input(rng):
    x = rng.normal(size=10)
    with pytest.raises(ValueError, match="n_resamples"):
        metrics.bootstrap_ci(x, x, n_resamples=0)
    with pytest.raises(ValueError, match="confidence_level"):
        metrics.bootstrap_ci(x, x, confidence_level=0)
    with pytest.raises(ValueError, match="ci"):
        metrics.bootstrap_ci(x, x, ci="student")
    with pytest.raises(ValueError, match="n_threads"):
        metrics.bootstrap_ci(x, x, n_threads=0)
    with pytest.raises(TypeError, match="seed"):
        metrics.bootstrap_ci(x, x, seed="1")
    with pytest.raises(ValueError, match="finite"):
        metrics.bootstrap_ci(np.r_[x[:-1], np.nan], x)


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize("f", [metrics.pearson, metrics.spearman, metrics.kendall])
def test_bad_input(f):
    with pytest.raises(ValueError, match="same length"):
        f([1, 2, 3], [1, 2])
    with pytest.raises(TypeError, match="x"):
        f("abc", [1, 2, 3])
    with pytest.raises(ValueError, match="y"):  # complex: scipy's ValueError
        f([1, 2, 3], [1 + 1j, 2, 3])
    with pytest.raises(ValueError, match="alternative"):
        f([1, 2, 3], [1, 2, 3], alternative="both")
    with pytest.raises(ValueError, match="nan_policy"):
        f([1, 2, 3], [1, 2, 3], nan_policy="drop")
    with pytest.raises(ValueError, match="n_threads"):
        f([1, 2, 3], [1, 2, 3], n_threads=0)
    with pytest.raises(TypeError, match="n_threads"):
        f([1, 2, 3], [1, 2, 3], n_threads=1.5)


def test_read_only_and_unmodified(rng):
    x = rng.normal(size=5000)
    y = x + rng.normal(size=5000)
    xc, yc = x.copy(), y.copy()
    x.setflags(write=False)
    y.setflags(write=False)
    for f in (metrics.pearson, metrics.spearman, metrics.kendall):
        f(x, y)
    metrics.bootstrap_ci(x[:200], y[:200], n_resamples=50, seed=0)
    metrics.grouped(x, y, np.arange(5000) % 3)
    np.testing.assert_array_equal(x, xc)
    np.testing.assert_array_equal(y, yc)
    # integer and list input
    assert metrics.pearson([1, 2, 3, 5], [2, 1, 4, 4]).statistic == pytest.approx(
        ss.pearsonr([1, 2, 3, 5], [2, 1, 4, 4])[0], abs=1e-12)


# ----------------------------------------------------------------- rank kernels


def _rank_cases(rng, n):
    """Inputs that stress the radix kernels: ties, signed zeros, infinities,
    subnormals, and values that differ only in their lowest bits (so their
    packed key prefixes collide)."""
    base = np.nextafter(1.0, 2.0, dtype=np.float64)
    return [
        rng.normal(size=n),
        np.round(rng.normal(size=n), 1),
        rng.choice([-0.0, 0.0, 1.0, -np.inf, np.inf, -2.5, 5e-324, -5e-324], n),
        1.0 + rng.integers(0, 50, n) * (base - 1.0),
        np.full(n, 3.0),
        rng.integers(0, 3, n) * 1e300,
    ]


@pytest.mark.parametrize("n", [1, 2, 5, 4096, 70_000])
def test_radix_average_ranks_match_rankdata(rng, n):
    from metrics import _rank
    cases = _rank_cases(rng, n)
    for x in cases:
        ranks = np.empty(n)
        _rank.average_ranks(x, ranks)
        np.testing.assert_array_equal(ranks, ss.rankdata(x))
    rx, ry = np.empty(n), np.empty(n)
    _rank.average_ranks2(cases[0], cases[3], rx, ry, 2)
    np.testing.assert_array_equal(rx, ss.rankdata(cases[0]))
    np.testing.assert_array_equal(ry, ss.rankdata(cases[3]))


@pytest.mark.parametrize("n", [2, 3, 33, 5000, 70_000])
def test_radix_kendall_counts_match_merge_counts(rng, n):
    from metrics import _corr, _rank
    cases = _rank_cases(rng, n)
    for x in cases:
        for y in (cases[0], cases[1], cases[3], x[::-1].copy()):
            want = _corr.kendall_general(x, y, np.argsort(x), 1)
            assert _rank.kendall_counts(x, y, 1) == want
            assert _rank.kendall_counts(x, y, 3) == want


def test_count_inversions_brute_force(rng):
    from metrics import _rank
    for n in (0, 1, 2, 3, 16, 17, 100, 1000):
        for hi in (2, 10, 2**32 - 1):
            a = rng.integers(0, hi, n, dtype=np.uint64).astype(np.uint32)
            want = sum(int((a[i] > a[i + 1:]).sum()) for i in range(n))
            b = a.copy()
            assert _rank.count_inversions(b, 2) == want
            np.testing.assert_array_equal(b, np.sort(a))


def test_count_inversions_parallel_pieces(rng):
    """Above 4 blocks the pieces are sorted in parallel and merged: compare
    with a Fenwick-tree count and across thread counts."""
    from metrics import _rank
    n = 300_001
    a = rng.integers(0, 5000, n).astype(np.uint32)
    tree = np.zeros(5001, dtype=np.int64)
    want = 0
    # count pairs i < j with a[i] > a[j], scanning from the right
    for v in a[::-1].tolist():
        k = v  # sum of counts of values < v
        s = 0
        while k > 0:
            s += int(tree[k])
            k -= k & -k
        want += s
        k = v + 1
        while k <= 5000:
            tree[k] += 1
            k += k & -k
    got = []
    for t in (1, 2, 3, 8):
        b = a.copy()
        got.append(_rank.count_inversions(b, t))
        np.testing.assert_array_equal(b, np.sort(a))
    assert got == [want] * 4


def test_large_kendall_thread_invariance_and_scipy(rng):
    n = 300_000  # large enough for the parallel inversion count
    x = np.round(rng.normal(size=n), 2)
    y = x + rng.normal(size=n)
    res = [metrics.kendall(x, y, n_threads=t) for t in (1, 2, 4)]
    assert res[0] == res[1] == res[2]
    want = ss.kendalltau(x, y)
    assert abs(res[0].statistic - want[0]) <= 1e-12
    assert abs(res[0].pvalue - want.pvalue) <= 1e-12 * max(1.0, want.pvalue)
    res = [metrics.spearman(x, y, n_threads=t) for t in (1, 2)]
    assert res[0] == res[1]
    assert abs(res[0].statistic - ss.spearmanr(x, y)[0]) <= 1e-12


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
@pytest.mark.parametrize("case", ["n2", "small", "ties", "large", "offset", "constant"])
def test_bootstrap_statistic_is_the_public_functions_bit_for_bit(method, case):
    # bootstrap_ci computes its observed statistic below metrics.correlation
    # (no import cycle); it must still be exactly what the public function returns
    rng = np.random.default_rng(5)
    n = {"n2": 2, "small": 30, "ties": 500, "large": 5000, "offset": 5000, "constant": 40}[case]
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    if case == "ties":
        x, y = np.round(x), np.round(y * 2)
    if case == "offset":
        x, y = x + 1e9, y - 3e8
    if case == "constant":
        x = np.full(n, 2.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = getattr(metrics, method)(x, y).statistic
        got = metrics.bootstrap_ci(x, y, method=method, n_resamples=20, seed=1,
                                   ci="percentile").statistic
    assert (math.isnan(got) and math.isnan(want)) or got == want
