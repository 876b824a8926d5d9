"""Extreme scales and long calls: magnitudes near the float limits, integers
beyond 2**53 ranked as integers, Ctrl-C in bootstrap_ci, and the confidence
intervals of the rank correlations."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import types
import warnings

import numpy as np
import pytest
import scipy.stats as ss

import metrics

# where the imported package lives (the source tree after an in-place build,
# site-packages after `pip install .`): children import the same one
PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(metrics.__file__)))


# ------------------------------------------------------------ Ctrl-C in bootstrap_ci

LONG_CALLS = {
    # minutes of work in one call: before the fix one kernel call ran every
    # resample (or every row of the V x V ratio sum) and the signal was seen
    # only after it
    "bootstrap pearson": """
        x = rng.normal(size=100_000); y = x + rng.normal(size=100_000)
        metrics.bootstrap_ci(x, y, n_resamples=10**6, seed=1, ci="percentile")
    """,
    "bootstrap kendall": """
        x = rng.normal(size=100_000); y = x + rng.normal(size=100_000)
        metrics.bootstrap_ci(x, y, method="kendall", n_resamples=10**6, seed=1,
                             ci="percentile")
    """,
    "alpha ratio, 400,000 distinct values": """
        metrics.krippendorff_alpha(rng.uniform(1, 8, (2, 200_000)), level="ratio")
    """,
}


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery differs on Windows")
@pytest.mark.parametrize("call", sorted(LONG_CALLS))
def test_ctrl_c_stops_a_long_metrics_call_soon_and_the_process_stays_usable(
        call, sigint_reaches_children, tmp_path):
    body = textwrap.indent(textwrap.dedent(LONG_CALLS[call]).strip(), " " * 4)
    code = f"""
import numpy as np, metrics
rng = np.random.default_rng(0)
print("running", flush=True)
try:
{body}
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
b = metrics.bootstrap_ci([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], n_resamples=50, seed=0)
print("usable", len(b.bootstrap_distribution), flush=True)
"""
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    p = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "running"
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{call} did not stop within 30 s of Ctrl-C")
        latency = time.monotonic() - sent
        out, err = p.communicate()
    finally:
        p.kill()
    assert out.split("\n")[:2] == ["interrupted", "usable 50"], (out, err)
    # one kernel call aims at 0.5 s (metrics/_chunks.py); the bound is loose
    # for a loaded machine
    assert latency < 10.0, latency


def test_bootstrap_chunks_do_not_change_the_distribution(monkeypatch):
    from metrics import bootstrap

    rng = np.random.default_rng(3)
    x = rng.normal(size=300)
    y = x + rng.normal(size=300)
    for method in ("pearson", "spearman", "kendall"):
        whole = metrics.bootstrap_ci(x, y, method=method, n_resamples=301, seed=9)
        calls = []
        real = bootstrap._run_chunks

        def tiny(run, total, nt, **kw):
            calls.append(total)
            return real(run, total, nt, seconds=1e-9)

        monkeypatch.setattr(bootstrap, "_run_chunks", tiny)
        parts = metrics.bootstrap_ci(x, y, method=method, n_resamples=301, seed=9,
                                     n_threads=2)
        monkeypatch.setattr(bootstrap, "_run_chunks", real)
        assert calls == [301]
        np.testing.assert_array_equal(whole.bootstrap_distribution,
                                      parts.bootstrap_distribution)
        assert whole.confidence_interval == parts.confidence_interval


# ------------------------------------------------------------ extreme magnitudes

SCALES = [1e160, 1e-200, 1e300, 1e-300, 2.0**1000, 2.0**-1000]


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("ci", ["bca", "percentile"])
def test_bootstrap_ci_is_finite_at_extreme_magnitudes(scale, ci):
    rng = np.random.default_rng(5)
    x = rng.normal(size=150)
    y = 0.6 * x + rng.normal(size=150)
    ref = metrics.bootstrap_ci(x, y, n_resamples=199, seed=4, ci=ci)
    for xs, ys in ((x * scale, y), (x, y * scale), (x * scale, y * scale)):
        b = metrics.bootstrap_ci(xs, ys, n_resamples=199, seed=4, ci=ci)
        assert np.isfinite(b.bootstrap_distribution).all()
        np.testing.assert_allclose(b.bootstrap_distribution, ref.bootstrap_distribution,
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.confidence_interval, ref.confidence_interval,
                                   rtol=0, atol=1e-12)
        assert b.statistic == pytest.approx(ss.pearsonr(xs, ys)[0], abs=1e-12)


def test_bootstrap_ci_power_of_two_scale_changes_no_bit():
    rng = np.random.default_rng(6)
    x = rng.normal(size=500) * 3.7 + 12
    y = x + rng.normal(size=500)
    a = metrics.bootstrap_ci(x, y, n_resamples=300, seed=2)
    b = metrics.bootstrap_ci(x * 2.0**-600, y * 2.0**600, n_resamples=300, seed=2)
    np.testing.assert_array_equal(a.bootstrap_distribution, b.bootstrap_distribution)
    assert a.confidence_interval == b.confidence_interval


def test_bootstrap_distribution_has_no_drift_under_an_exact_offset():
    # Issue 31 reported a 7e-9 drift at an offset of 1e9.  That came from the
    # data: x + 1e9 rounds every value to a multiple of 2**-23 (1.2e-7), which
    # moves r by ~1e-8 before any resampling.  With data that the offset moves
    # exactly (multiples of 2**-20), the distribution is the same to 1e-15:
    # the resample sums run over data centred (and re-centred) on the mean.
    rng = np.random.default_rng(7)
    noise = np.round(rng.normal(size=20_000) * 1000) * 2.0**-20
    y = noise + rng.normal(size=20_000) * 1e-3
    assert ((noise + 1e9) - 1e9 == noise).all()
    a = metrics.bootstrap_ci(noise, y, n_resamples=200, seed=1)
    b = metrics.bootstrap_ci(noise + 1e9, y, n_resamples=200, seed=1)
    np.testing.assert_allclose(a.bootstrap_distribution, b.bootstrap_distribution,
                               rtol=0, atol=1e-15)
    np.testing.assert_allclose(a.confidence_interval, b.confidence_interval, rtol=0,
                               atol=1e-13)


KRIPP = np.array([[1, 2, 3, 3, np.nan, 2.5], [1, 2.5, 3, 4, 4, 1],
                  [np.nan, 3, 3, 4, 5, 2]])


@pytest.mark.parametrize("scale", [1e-170, 1e200, 1e-300, 1e300, 2.0**-1020])
def test_krippendorff_interval_alpha_at_extreme_magnitudes(scale):
    ref = metrics.krippendorff_alpha(KRIPP)
    dom = np.unique(KRIPP[~np.isnan(KRIPP)])
    assert metrics.krippendorff_alpha(KRIPP * scale) == pytest.approx(ref, abs=1e-12)
    assert metrics.krippendorff_alpha(KRIPP * scale, value_domain=dom * scale) == \
        pytest.approx(ref, abs=1e-12)
    counts = [[3, 0, 0], [0, 2, 1], [1, 1, 1]]
    ref_counts = metrics.krippendorff_alpha(value_counts=counts, value_domain=[1, 2, 3])
    assert metrics.krippendorff_alpha(value_counts=counts,
                                      value_domain=[scale, 2 * scale, 3 * scale]) == \
        pytest.approx(ref_counts, abs=1e-12)


def test_krippendorff_interval_alpha_matches_the_package_on_ordinary_data():
    krippendorff = pytest.importorskip("krippendorff")
    for scale in (1.0, 1e-3, 1e5):
        ours = metrics.krippendorff_alpha(KRIPP * scale)
        theirs = krippendorff.alpha(KRIPP * scale, level_of_measurement="interval")
        assert ours == pytest.approx(theirs, abs=1e-12)


# ------------------------------------------------------------ integers beyond 2**53

def _big_int_cases():
    rng = np.random.default_rng(11)
    ts = np.int64(1733300000123456789) + rng.integers(0, 50, 5000)  # ns timestamps, ties
    return {
        "int64 2**60 + k": (np.int64(2**60) + np.arange(5), np.array([1, 2, 3, 5, 4])),
        "ns timestamps, perfectly ordered": (
            np.int64(1733300000123456789) + 7 * np.arange(8), -np.arange(8)),
        "int64 near its limits": (
            np.array([2**63 - 1, 2**63 - 2, -2**63, -2**63 + 1, 0, 2**63 - 1, 3], np.int64),
            np.array([1, 2, 3, 5, 4, 7, 6])),
        "uint64 above 2**63": (
            np.array([2**63 + 1, 2**63 + 2, 2**64 - 1, 2**63, 5, 2**64 - 2, 2**63 + 1],
                     np.uint64),
            np.array([1, 2, 3, 5, 4, 7, 6], np.uint64)),
        "timestamps, n = 5000 (radix path)": (ts, rng.integers(0, 1000, 5000) + 2**62),
        "timestamps against floats": (ts[:300], rng.normal(size=300)),
    }


BIG_INTS = _big_int_cases()


def _exact_reference(func, x, y):
    # scipy.stats.rankdata sorts integers exactly; both statistics depend
    # only on the ranks (and scipy's own spearmanr/kendalltau convert mixed
    # int/float input to float64 first)
    return func(ss.rankdata(x), ss.rankdata(y))


@pytest.mark.parametrize("case", sorted(BIG_INTS))
@pytest.mark.parametrize("ours, theirs", [(metrics.spearman, ss.spearmanr),
                                          (metrics.kendall, ss.kendalltau)])
def test_rank_correlations_rank_integers_as_integers(case, ours, theirs):
    x, y = BIG_INTS[case]
    ref = _exact_reference(theirs, x, y)
    for a, b in ((x, y), (y, x)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = ours(a, b)
        # scipy's results are (statistic, pvalue) tuples at every supported version
        assert res.statistic == pytest.approx(float(ref[0]), abs=1e-12)
        assert res.pvalue == pytest.approx(float(ref[1]), abs=1e-12)
    if x.dtype == y.dtype:  # scipy's own functions are exact here
        direct = theirs(x, y)
        assert res.statistic == pytest.approx(float(direct[0]), abs=1e-12)
        assert res.pvalue == pytest.approx(float(direct[1]), abs=1e-12)


def test_issue_examples_for_big_integers():
    x = np.int64(2**60) + np.arange(5)
    res = metrics.kendall(x, [1, 2, 3, 5, 4])
    assert res.statistic == pytest.approx(0.8, abs=1e-12)
    ts = np.int64(1733300000123456789) + 7 * np.arange(8)
    assert metrics.spearman(ts, -np.arange(8)).statistic == -1.0


def test_grouped_bootstrap_and_matrix_rank_integers_as_integers():
    x, y = BIG_INTS["timestamps, n = 5000 (radix path)"]
    xr = ss.rankdata(x)
    g = np.arange(x.shape[0]) % 3
    for method in ("spearman", "kendall"):
        a = metrics.grouped(x, y, g, method=method)
        b = metrics.grouped(xr, y, g, method=method)
        assert tuple(a.overall) == tuple(b.overall)
        for k in a.groups:
            assert tuple(a.groups[k]) == tuple(b.groups[k])
        ba = metrics.bootstrap_ci(x[:400], y[:400], method=method, n_resamples=60, seed=3)
        bb = metrics.bootstrap_ci(xr[:400], y[:400], method=method, n_resamples=60, seed=3)
        np.testing.assert_array_equal(ba.bootstrap_distribution, bb.bootstrap_distribution)
    m = np.column_stack((x[:50], y[:50], x[50:100]))
    res = metrics.spearman(m)
    ref = ss.spearmanr(np.column_stack([ss.rankdata(c) for c in m.T]))
    np.testing.assert_allclose(res.statistic, ref[0], rtol=0, atol=1e-12)



# ------------------------------------------------------------ rank-correlation intervals

def _fisher(r, se, cl=0.95):
    z = ss.norm.ppf(0.5 + cl / 2)
    return np.tanh(np.arctanh(r) - z * se), np.tanh(np.arctanh(r) + z * se)


def test_rank_correlation_confidence_interval_is_fisher_z_with_bonett_wright_errors():
    rng = np.random.default_rng(12)
    x = rng.normal(size=80)
    y = 0.4 * x + rng.normal(size=80)
    rho = metrics.spearman(x, y)
    lo, hi = rho.confidence_interval()
    ref = _fisher(rho.statistic, np.sqrt((1 + rho.statistic**2 / 2) / 77))
    assert (lo, hi) == pytest.approx(ref, abs=1e-14)
    tau = metrics.kendall(x, y)
    lo, hi = tau.confidence_interval(0.9)
    assert (lo, hi) == pytest.approx(_fisher(tau.statistic, np.sqrt(0.437 / 76), 0.9),
                                     abs=1e-14)
    # one-sided alternatives, as Pearson's
    less = metrics.spearman(x, y, alternative="less").confidence_interval()
    assert less[0] == -1.0
    assert less[1] == pytest.approx(
        np.tanh(np.arctanh(rho.statistic) + ss.norm.ppf(0.95)
                * np.sqrt((1 + rho.statistic**2 / 2) / 77)), abs=1e-14)
    greater = metrics.kendall(x, y, alternative="greater").confidence_interval()
    assert greater[1] == 1.0 and greater[0] < tau.statistic
    # too few pairs: the whole range; undefined statistic: NaN
    assert tuple(metrics.kendall([1, 2, 3, 4], [1, 3, 2, 4]).confidence_interval()) == (-1, 1)
    assert tuple(metrics.spearman([1, 2, 3], [1, 3, 2]).confidence_interval()) == (-1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nan_ci = metrics.spearman([1, 1, 1, 1, 1], [1, 2, 3, 4, 5]).confidence_interval()
    assert np.isnan(nan_ci).all()


def test_rank_correlation_interval_covers_the_population_value():
    # bivariate normal, rho = 0.5: Spearman's population value is
    # (6/pi) asin(rho/2), Kendall's (2/pi) asin(rho)
    rng = np.random.default_rng(13)
    rho, n, reps = 0.5, 60, 400
    targets = {"spearman": 6 / np.pi * np.arcsin(rho / 2),
               "kendall": 2 / np.pi * np.arcsin(rho)}
    hits = {"spearman": 0, "kendall": 0}
    for _ in range(reps):
        x = rng.normal(size=n)
        y = rho * x + np.sqrt(1 - rho**2) * rng.normal(size=n)
        for name, f in (("spearman", metrics.spearman), ("kendall", metrics.kendall)):
            lo, hi = f(x, y).confidence_interval()
            hits[name] += lo <= targets[name] <= hi
    for name in hits:
        assert 0.92 <= hits[name] / reps <= 0.98, (name, hits[name] / reps)


@pytest.mark.parametrize("func", [metrics.spearman, metrics.kendall])
def test_rank_correlation_bootstrap_interval_uses_bootstrap_ci(func):
    rng = np.random.default_rng(14)
    x = rng.normal(size=120)
    y = x + rng.normal(size=120)
    res = func(x, y)
    try:
        bm = ss.BootstrapMethod(n_resamples=499, method="percentile",
                                rng=np.random.default_rng(5))
    except (AttributeError, TypeError):  # scipy < 1.15 (the floor has no BootstrapMethod)
        bm = types.SimpleNamespace(n_resamples=499, method="percentile",
                                   rng=np.random.default_rng(5))
    lo, hi = res.confidence_interval(method=bm)
    seed = int(np.random.default_rng(5).integers(0, 2**63))
    ref = metrics.bootstrap_ci(x, y, method=res.method, n_resamples=499, ci="percentile",
                               seed=seed)
    assert (lo, hi) == tuple(ref.confidence_interval)
    with pytest.raises(ValueError, match="method"):
        res.confidence_interval(method="bca")


def test_rank_interval_edge_cases_name_the_problem():
    x, y = [1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5]
    with pytest.raises(ValueError, match="tau-c"):
        metrics.kendall(x, y, variant="c").confidence_interval()
    with pytest.raises(ValueError, match="confidence_level"):
        metrics.spearman(x, y).confidence_interval(1.5)
    g = metrics.grouped(np.arange(40.0), np.arange(40.0) % 7, np.arange(40) % 2,
                        method="spearman")
    for r in (*g.groups.values(), g.overall):
        lo, hi = r.confidence_interval()
        assert -1 <= lo <= r.statistic <= hi <= 1


@pytest.mark.parametrize("scale", [1.0, 1e200])
def test_krippendorff_interval_value_domain_is_still_checked(scale):
    with pytest.raises(ValueError, match="not in value_domain"):
        metrics.krippendorff_alpha(np.array([[1, 2], [4, 2]]) * scale,
                                   value_domain=np.array([1, 2, 3]) * scale)


def test_ratio_alpha_in_short_calls_is_unchanged(monkeypatch):
    from metrics import _chunks, agreement

    rng = np.random.default_rng(15)
    m = np.round(rng.uniform(0, 50, (4, 3000)), 2)
    whole = metrics.krippendorff_alpha(m, level="ratio")
    sizes = []
    real = _chunks.run_chunks

    def tiny(run, total, least, **kw):
        def logged(first, stop):
            sizes.append(stop - first)
            run(first, stop)
        return real(logged, total, 1, seconds=1e-9)

    monkeypatch.setattr(agreement, "run_chunks", tiny)
    assert metrics.krippendorff_alpha(m, level="ratio") == whole
    assert len(sizes) > 3
