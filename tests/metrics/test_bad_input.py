"""Bad and awkward input to the correlation functions (issues 9 and 11)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats as ss

import metrics
from reference.helpers import old_scipy_differs

FUNCS = [metrics.pearson, metrics.spearman, metrics.kendall]


@pytest.mark.parametrize("func", [metrics.spearman, metrics.kendall])
@pytest.mark.parametrize("nan_policy", ["propagate", "omit"])
def test_infinities_raise_no_runtime_warning(func, nan_policy):
    x = np.array([1.0, 2.0, np.inf, 4.0, -np.inf, 0.5])
    y = np.array([1.0, 3.0, 2.0, 5.0, 4.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = func(x, y, nan_policy=nan_policy)
    theirs = {metrics.spearman: ss.spearmanr, metrics.kendall: ss.kendalltau}[func]
    if old_scipy_differs(theirs, x, y):
        return  # this scipy gives NaN on infinities; today's, the reference, ranks them
    assert ours.statistic == pytest.approx(float(theirs(x, y)[0]), abs=1e-12)


@pytest.mark.parametrize("func", FUNCS)
def test_complex_input_is_a_value_error_as_in_scipy(func):
    x = np.array([1, 2, 3, 4], dtype=complex)
    with pytest.raises(ValueError, match="x"):
        func(x, [1.0, 2.0, 3.0, 5.0])
    with pytest.raises(ValueError, match="y"):
        func([1.0, 2.0, 3.0, 5.0], [1 + 1j, 2, 3, 4])


def test_grouped_returns_uint64_labels_as_given():
    big = np.array([2**63, 2**63 + 5, 2**64 - 1], dtype=np.uint64)
    g = np.repeat(big, 4)
    rng = np.random.default_rng(0)
    x = rng.normal(size=12)
    y = x + rng.normal(size=12)
    res = metrics.grouped(x, y, g)
    assert list(res) == [2**63, 2**63 + 5, 2**64 - 1]
    for lab in big.tolist():
        m = g == np.uint64(lab)
        assert res[lab].statistic == metrics.pearson(x[m], y[m]).statistic


def test_grouped_returns_bool_labels_as_bools():
    g = np.array([True, False] * 6)
    rng = np.random.default_rng(1)
    x = rng.normal(size=12)
    y = x + rng.normal(size=12)
    res = metrics.grouped(x, y, g)
    assert list(res) == [False, True]
    assert all(type(k) is bool for k in res)
    assert res[True].statistic == metrics.pearson(x[g], y[g]).statistic


def test_default_threads_run_one_thread_for_a_million_pairs(monkeypatch):
    """Issue 9, item 9: a parallel region waits for its slowest thread, which on
    a busy machine costs a time slice (measured: default 36 ms vs 1.2 ms with
    one thread for n = 1e6).  Below 2**21 pairs the kernel gets one thread."""
    from metrics import _corr

    seen = []
    real = _corr.comoments

    def spy(x, y, nt, *rest):
        seen.append(nt)
        return real(x, y, nt, *rest)

    monkeypatch.setattr(_corr, "comoments", spy)
    rng = np.random.default_rng(0)
    x = rng.normal(size=1_000_000)
    metrics.pearson(x, x + rng.normal(size=x.shape[0]), n_threads=2)
    assert seen == [1]
    seen.clear()
    big = rng.normal(size=(1 << 22) + 1)
    metrics.pearson(big, big[::-1].copy(), n_threads=2)
    assert seen == [2]


# --- errors name the argument (issue 9 item 7; found by tests/api/test_argument_fuzz.py)

_RAGGED = [[1, 2], [3]]
_X = np.arange(8.0)
_Y = _X[::-1] ** 2
_GOLD = {"s1": [1], "s2": [0], "s3": [2, 3]}


@pytest.mark.parametrize("call,exc,names", [
    (lambda: metrics.pearson(True, True), ValueError, "`x` and `y`"),
    (lambda: metrics.pearson(np.array(3.0), np.array(3.0)), ValueError, "`x` and `y`"),
    (lambda: metrics.pearson([1.0, 2.0], [2.0, 1.0], axis=1), ValueError, "`x` and `y`"),
    (lambda: metrics.pearson(_RAGGED, _Y), ValueError, "x must"),
    (lambda: metrics.spearman(_X, _RAGGED), ValueError, "y must"),
    (lambda: metrics.kendall(_RAGGED, _Y), ValueError, "x must"),
    (lambda: metrics.kendall(_X, _Y, axis=float("nan")), ValueError, "`axis`"),
    (lambda: metrics.pearson(_X, _Y, axis=float("inf")), ValueError, "`axis`"),
    (lambda: metrics.grouped(_X, _Y, _RAGGED), ValueError, "groups must"),
    (lambda: metrics.bootstrap_ci(_RAGGED, _Y, n_resamples=10), ValueError, "x must"),
    (lambda: metrics.spearman(np.ones((3, 4)), axis=None), ValueError, "axis"),
    (lambda: metrics.krippendorff_alpha([[1, 2], [1, 2]], level="ordinal",
                                        value_domain=_RAGGED), ValueError, "value_domain"),
    (lambda: metrics.relation_f1(_GOLD, {"a": [1]}), ValueError, "pred has"),
    (lambda: metrics.upper_bound(_GOLD, [_GOLD, {"a": [1]}]), ValueError, r"preds\[1\]"),
    (lambda: metrics.relation_f1(_GOLD, _GOLD, subset=[[]]), TypeError, "subset"),
    (lambda: metrics.relation_f1(_GOLD, _GOLD, subset=np.zeros((2, 2))), ValueError, "subset"),
    (lambda: metrics.upper_bound(_GOLD, [_GOLD], subset=np.array(3.0)), ValueError, "subset"),
    (lambda: metrics.upper_bound(_GOLD, np.array(3.0)), TypeError, "preds"),
    (lambda: metrics.relation_f1(_GOLD, _GOLD, relations=np.array(3.0)), ValueError,
     "relations"),
    (lambda: metrics.relation_f1(_GOLD, _GOLD, na=1, relations={"a": 1, "b": 2, "c": 3}),
     ValueError, r"na \(1\)"),
])
def test_bad_input_names_the_argument(call, exc, names):
    with pytest.raises(exc, match=names):
        call()


def test_split_half_with_r_minus_one_is_nan_not_zero_division():
    # two items: every split's r is +1 or -1; Spearman-Brown is undefined at -1
    ratings = np.array([[1.0, 2.0], [3.0, 4.0]])
    before = ratings.copy()
    res = metrics.split_half(ratings, n_splits=50, seed=0)
    np.testing.assert_array_equal(ratings, before)
    raw = metrics.split_half(ratings, n_splits=50, seed=0, spearman_brown=False).splits
    assert (raw == -1.0).any()  # some split drew r = -1 exactly
    np.testing.assert_array_equal(np.isnan(res.splits), raw == -1.0)
    ok = raw != -1.0
    np.testing.assert_allclose(res.splits[ok], 2 * raw[ok] / (1 + raw[ok]), rtol=1e-15)


def test_kendall_asymptotic_with_two_pairs_is_a_number():
    # scipy.stats.kendalltau raises ZeroDivisionError here (0 * 0 / 0 in the tie
    # term, which is 0 for n = 2); the variance without it is the plain one, 1
    res = metrics.kendall([1.0, 2.0], [2.0, 1.0], method="asymptotic")
    assert res.statistic == -1.0
    assert res.pvalue == pytest.approx(2 * ss.norm.cdf(-1.0), rel=1e-15)


# The compiled correlation, resampling and agreement kernels check the arrays they are handed: each case
# read past an array or wrote past an output before (a segfault or garbage),
# so each runs in a subprocess, and now is refused with a ValueError.
HOSTILE_KERNEL_CALLS = {
    "comoments, y shorter than x": "_corr.comoments(f(10), f(2), 1)",
    "average_ranks, a short output": "_rank.average_ranks(f(100_000), np.zeros(2))",
    "average_ranks2, a short output": "_rank.average_ranks2(f(9), f(9), np.zeros(9), np.zeros(2), 2)",
    "kendall_counts, y shorter than x": "_rank.kendall_counts(f(100_000), f(2), 1)",
    "group_gather, a code past the groups": (
        "_corr.group_gather(np.array([0, 10**9]), 2, f(2), f(2), np.zeros(2), np.zeros(2),"
        " np.zeros(3, dtype=np.intp))"),
    "grouped_comoments, offsets past the values": (
        "_corr.grouped_comoments(f(4), f(4), np.array([0, 10**9], dtype=np.intp),"
        " np.zeros((1, 8)), 1)"),
    "small_int_table, a short table": "_corr.small_int_table(f(4), f(4), np.zeros((2, 2), np.int64), 1)",
    "average_ranks_sorted, an index past the values": (
        "_corr.average_ranks_sorted(f(3), np.array([0, 1, 10**9], dtype=np.intp), np.zeros(3))"),
    "kendall_general, an index past the values": (
        "_corr.kendall_general(f(3), f(3), np.array([0, 1, 10**9], dtype=np.intp), 1)"),
    "grouped_chunk_moments, a code past the slots": (
        "_corr.grouped_chunk_moments(f(3), f(3), np.array([0, 0, 10**9]), 0, 1,"
        " np.zeros((1, 1, 8)), 1)"),
    "merge_chunk_moments, a short output": (
        "_corr.merge_chunk_moments(np.zeros((2, 50, 8)), np.zeros((1, 8)))"),
    "boot_pearson, y shorter than x": "_boot.boot_pearson(f(1000), f(2), 1, np.zeros(4), 1)",
    "boot_spearman, an order past the points": (
        "_boot.boot_spearman(ip([0, 10**9, 2]), ip([1, 2, 3]), ip([0, 1, 2]), ip([1, 2, 3]), 1,"
        " np.zeros(4), 1)"),
    "boot_spearman, a run end that does not advance": (
        "_boot.boot_spearman(ip([0, 1, 2]), ip([0, 2, 3]), ip([0, 1, 2]), ip([1, 2, 3]), 1,"
        " np.zeros(4), 1)"),
    "boot_kendall, a y code past its count": (
        "_boot.boot_kendall(ip([0, 1, 2]), ic([0, 1, 10**9]), ic([1, 2, 3]), ic([1, 2, 3]), 2, 1,"
        " np.zeros(4), 1)"),
    "jack_pearson, a short output": "_boot.jack_pearson(f(100_000), f(100_000), np.zeros(2))",
    "below_counts, a y rank past the tree": (
        "_boot.below_counts(ip([0, 1]), np.zeros(2, np.int64), np.array([0, 10**9]), 1,"
        " np.zeros(2, np.int64), np.zeros(2, np.int64))"),
    "item_moments, short outputs": (
        "_agree.item_moments(np.ones((3, 100_000)), *(np.zeros(2) for _ in range(4)), 1)"),
    "encode_values, a short code matrix": (
        "_agree.encode_values(np.ones((300, 300)), np.zeros((1, 1), np.int32), 10)"),
    "value_totals, a code past the remap": (
        "_agree.value_totals(np.array([[0, 10**9]], np.int32), ic32([0]), np.full(2, 3.0),"
        " np.zeros(1, np.int64))"),
    "unit_disagreement_codes, a remap past the values": (
        "_agree.unit_disagreement_codes(np.zeros((2, 2), np.int32), ic32([10**9]), f(1), 0,"
        " np.zeros(2), np.zeros(2), 1)"),
    "unit_disagreement_counts, fewer values than columns": (
        "_agree.unit_disagreement_counts(np.ones((2, 5000)), f(1), 0, np.zeros(2), np.zeros(2), 1)"),
    # a short output is a block of rows (issue 31: the O(V^2) sum runs in short calls)
    "ratio_expected, rows past the values": (
        "_agree.ratio_expected(f(50_000), f(50_000), np.zeros(2), 1, 49_999)"),
    "ratio_expected, a negative first row": (
        "_agree.ratio_expected(f(50_000), f(50_000), np.zeros(2), 1, -1)"),
    "ratio_expected, counts shorter than the values": (
        "_agree.ratio_expected(f(50_000), f(2), np.zeros(2), 1)"),
    "boot_pearson, a negative first resample": (
        "_boot.boot_pearson(f(1000), f(1000), 1, np.zeros(4), 1, -1)"),
    "segment_inversions, offsets past the values": (
        "_corr.segment_inversions(np.zeros(3, dtype=np.intc), np.array([0, 10**9], dtype=np.intp),"
        " np.zeros(1, np.int64), 1)"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_KERNEL_CALLS))
def test_metrics_kernels_refuse_arrays_they_cannot_trust(case):
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    code = textwrap.dedent(f"""
        import numpy as np
        from metrics import _agree, _boot, _corr, _rank
        ic32 = lambda a: np.asarray(a, dtype=np.int32)
        f = lambda n: np.arange(n, dtype=np.float64)
        ip = lambda a: np.asarray(a, dtype=np.intp)
        ic = lambda a: np.asarray(a, dtype=np.intc)
        try:
            {HOSTILE_KERNEL_CALLS[case]}
        except ValueError as e:
            print("refused:", e)
        else:
            print("accepted")
    """)
    # run from where the tested package was imported (an install or the checkout)
    root = Path(metrics.__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.startswith("refused:"), r.stdout
