"""metrics._kendall_exact: the exact null distribution of Kendall's statistic.

Checked against exact rational arithmetic (Mahonian numbers in Python ints)
and against ``scipy.stats.kendalltau(method="exact")`` on real data (its
results read as ``res[0]``: ``.statistic`` is new in scipy 1.10, the floor is 1.9.3).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats as ss

from metrics._kendall_exact import kendall_exact_pvalue

ALTS = ("two-sided", "less", "greater")


def mahonian_row(n: int, upto: int | None = None) -> list[int]:
    """Number of permutations of n with k inversions, k = 0..upto (all by default)."""
    top = n * (n - 1) // 2 if upto is None else upto
    row = [1] + [0] * top
    for j in range(2, n + 1):
        prefix = [0]
        for v in row:
            prefix.append(prefix[-1] + v)
        row = [prefix[k + 1] - prefix[max(0, k + 1 - j)] for k in range(top + 1)]
    return row


def exact_pvalue(row: list[int], n: int, c: int, alternative: str) -> Fraction:
    """The p-value by its definition (scipy's convention), in rationals.

    K = discordant pairs of a random permutation; c concordant pairs were
    observed, i.e. tot - c discordant.  'greater' (positive association) is
    P(C >= c) = P(K <= tot - c); 'less' is P(C <= c) = P(K <= c).
    """
    tot = n * (n - 1) // 2
    fact = math.factorial(n)
    if n == 1:  # scipy's convention for the one-point distribution
        return {"two-sided": Fraction(1), "greater": Fraction(1, 2), "less": Fraction(1)}[
            alternative]
    def cdf(k):
        return Fraction(sum(row[: k + 1]), fact)
    if alternative == "greater":
        return cdf(tot - c)
    if alternative == "less":
        return cdf(c)
    return min(Fraction(1), 2 * cdf(min(c, tot - c)))


def _rel(a: float, b: Fraction) -> float:
    return abs(Fraction(a) - b) / b if b else abs(a)


@pytest.mark.parametrize("n", range(1, 61))
def test_every_c_matches_exact_rationals(n):
    tot = n * (n - 1) // 2
    row = mahonian_row(n)
    cs = range(tot + 1) if tot <= 200 else sorted(
        set(range(0, 40)) | set(range(tot - 40, tot + 1)) | set(range(0, tot + 1, 7))
        | {tot // 2, (tot + 1) // 2, tot // 2 - 1})
    for c in cs:
        for alt in ALTS:
            got = kendall_exact_pvalue(n, c, alt)
            want = exact_pvalue(row, n, c, alt)
            assert _rel(got, want) <= 1e-12, (n, c, alt, got, float(want))


@pytest.mark.parametrize("n,c", [(100, 2393), (101, 2436), (150, 5000), (170, 0), (171, 1)])
def test_medium_n_matches_exact_rationals(n, c):
    tot = n * (n - 1) // 2
    m = min(c, tot - c)
    row = mahonian_row(n, upto=m)
    fact = math.factorial(n)
    below = Fraction(sum(row[: m + 1]), fact)
    want2 = min(Fraction(1), 2 * below)
    assert _rel(kendall_exact_pvalue(n, c), want2) <= 1e-12
    # one-sided: c is in the left tail here, so 'less' is the tail itself
    assert _rel(kendall_exact_pvalue(n, c, "less"), below) <= 1e-12
    at = Fraction(row[m], fact)
    assert _rel(kendall_exact_pvalue(n, c, "greater"), 1 - below + at) <= 1e-12


def _pair_with_concordant(rng, n):
    x = rng.permutation(n).astype(float)
    y = rng.permutation(n).astype(float)
    return x, y


@pytest.mark.parametrize("n", list(range(2, 61)) + [80, 120, 200, 333, 500, 800])
def test_matches_scipy_kendalltau_exact(n):
    rng = np.random.default_rng(n)
    trials = 4 if n <= 60 else 1
    tot = n * (n - 1) // 2
    for t in range(trials):
        x, y = _pair_with_concordant(rng, n)
        if t == 1:
            y = x.copy()  # all concordant
        elif t == 2:
            y = -x  # all discordant
        tau = ss.kendalltau(x, y)[0]
        conc = int(round((tau * tot + tot) / 2))
        for alt in ALTS if n <= 200 else ("two-sided",):
            want = ss.kendalltau(x, y, method="exact", alternative=alt).pvalue
            got = kendall_exact_pvalue(n, conc, alt)
            if want < 1e-300:  # scipy rounds these to 0; ours may keep a subnormal
                assert got < 1e-300
            else:
                assert got == pytest.approx(want, rel=1e-12, abs=0), (n, conc, alt)


def test_n_one_and_two_follow_scipy():
    assert kendall_exact_pvalue(1, 0) == 1.0
    assert kendall_exact_pvalue(1, 0, "greater") == 0.5
    assert kendall_exact_pvalue(1, 0, "less") == 1.0
    assert kendall_exact_pvalue(2, 0) == 1.0
    assert kendall_exact_pvalue(2, 1, "greater") == 0.5
    assert kendall_exact_pvalue(2, 0, "greater") == 1.0


def test_symmetry():
    n = 37
    tot = n * (n - 1) // 2
    for c in range(0, tot + 1, 13):
        assert kendall_exact_pvalue(n, c) == kendall_exact_pvalue(n, tot - c)
        assert kendall_exact_pvalue(n, c, "less") == kendall_exact_pvalue(n, tot - c, "greater")


def test_bad_input():
    with pytest.raises(ValueError, match="n must be >= 1"):
        kendall_exact_pvalue(0, 0)
    with pytest.raises(ValueError, match=r"c must be in \[0, n\(n-1\)/2\] = \[0, 3\]"):
        kendall_exact_pvalue(3, 4)
    with pytest.raises(ValueError, match="c must be in"):
        kendall_exact_pvalue(3, -1)
    with pytest.raises(TypeError, match="n must be an int"):
        kendall_exact_pvalue(3.0, 1)
    with pytest.raises(TypeError, match="c must be an int"):
        kendall_exact_pvalue(3, True)
    with pytest.raises(ValueError, match="alternative"):
        kendall_exact_pvalue(3, 1, "two_sided")
    assert kendall_exact_pvalue(np.int64(5), np.int32(3)) == kendall_exact_pvalue(5, 3)


# --- the public functions use the compiled distribution -------------------------

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import metrics  # noqa: E402

_METRICS_DIR = str(Path(metrics.__file__).resolve().parent)


def _python_lines_in_metrics(budget: int):
    """A tracer that counts lines executed in metrics' .py files and raises past ``budget``.

    Raising from the trace function stops a pure-Python O(n^3) loop at once, so
    a regression fails fast instead of running for minutes.
    """
    seen = [0]

    def local(frame, event, arg):
        if event == "line":
            seen[0] += 1
            if seen[0] > budget:
                raise AssertionError(f"more than {budget} Python lines run in metrics/")
        return local

    def tracer(frame, event, arg):
        if str(Path(frame.f_code.co_filename).resolve()).startswith(_METRICS_DIR):
            return local
        return None

    return tracer, seen


@pytest.mark.parametrize("n", [3, 10, 33, 34, 100, 257, 500, 800])
def test_public_kendall_exact_matches_scipy(n):
    rng = np.random.default_rng(1000 + n)
    cases = [(rng.permutation(n).astype(float), rng.permutation(n).astype(float))]
    x = rng.standard_normal(n)
    y = x + 0.8 * rng.standard_normal(n)  # correlated: p far from 1
    cases.append((x, y))
    for x, y in cases:
        for alt in ALTS:
            got = metrics.kendall(x, y, method="exact", alternative=alt)
            want = ss.kendalltau(x, y, method="exact", alternative=alt)
            assert got.statistic == pytest.approx(want[0], rel=1e-12, abs=1e-15)
            if want.pvalue < 1e-300:  # scipy rounds these to 0; ours may keep a subnormal
                assert got.pvalue < 1e-300
            else:
                assert got.pvalue == pytest.approx(want.pvalue, rel=1e-12, abs=0), (n, alt)


def test_public_kendall_exact_is_not_pure_python():
    # n = 800 with c near tot / 2: the former pure-Python Mahonian recurrence
    # ran ~1e8 Python-level steps here (80 s); the compiled one runs none.
    rng = np.random.default_rng(7)
    x, y = rng.permutation(800).astype(float), rng.permutation(800).astype(float)
    tracer, seen = _python_lines_in_metrics(budget=2000)
    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        res = metrics.kendall(x, y, method="exact")
    finally:
        sys.settrace(old)
    assert seen[0] > 0  # the tracer did see metrics' Python layer
    want = ss.kendalltau(x, y, method="exact").pvalue
    assert res.pvalue == pytest.approx(want, rel=1e-12, abs=0)


def test_grouped_kendall_small_groups_use_the_exact_distribution():
    # groups of <= 33 untied pairs take the exact p-value (scipy's 'auto' rule)
    rng = np.random.default_rng(11)
    sizes = [3, 5, 12, 33, 33]
    groups = np.repeat(np.arange(len(sizes)), sizes)
    x = rng.standard_normal(groups.size)
    y = x + rng.standard_normal(groups.size)
    res = metrics.grouped(x, y, groups, method="kendall")
    for g, size in enumerate(sizes):
        m = groups == g
        want = ss.kendalltau(x[m], y[m], method="exact").pvalue
        assert res[g].pvalue == pytest.approx(want, rel=1e-12, abs=0), (g, size)
    tracer, seen = _python_lines_in_metrics(budget=20000)
    # 200 groups of 30: one exact p-value each, ~35 Python lines per group
    # (the former pure-Python recurrence ran thousands per group)
    many = np.repeat(np.arange(200), 30)
    xm = rng.standard_normal(many.size)
    ym = xm + rng.standard_normal(many.size)
    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        res = metrics.grouped(xm, ym, many, method="kendall")
    finally:
        sys.settrace(old)
    g = 123
    m = many == g
    assert res[g].pvalue == pytest.approx(ss.kendalltau(xm[m], ym[m]).pvalue, rel=1e-12, abs=0)
