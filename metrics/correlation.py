"""Pearson, Spearman and Kendall correlation that match ``scipy.stats``.

Each function returns the same statistic and p-value as the corresponding
``scipy.stats`` function (``pearsonr``, ``spearmanr``, ``kendalltau``) on 1-D
float64 input, edge cases included, but computes them with parallel,
cache-friendly kernels:

* Pearson: one pass over memory.  Chunks of 4096 pairs are reduced in
  parallel (two passes over each chunk, from cache), and the chunk co-moments
  are merged in order with Chan's update, so the answer is accurate and the same
  for every thread count.
* Spearman and Kendall on small-integer data (e.g. Likert scales): one counting
  pass builds the contingency table; ranks, ties and concordance come from it.
* Spearman otherwise: average ranks from an LSD radix sort of each variable
  (x and y are sorted at the same time); Kendall tau-b otherwise: x is
  radix-sorted while y becomes dense ranks, and an O(n log n) merge sort of the
  y ranks in (x, y) order counts the discordant pairs.

``grouped`` scores every group and the pooled data in one call, and
``bootstrap_ci`` gives percentile, basic or BCa intervals from a parallel,
seed-deterministic paired bootstrap.
"""

from __future__ import annotations

import math
import warnings
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from scipy import special
from scipy import stats as _sps

from . import _boot, _corr, _rank
from ._compat import betaincc
from ._validation import (
    as_float_vector,
    check_choice,
    check_confidence_level,
    check_positive_int,
    check_same_length,
    check_seed,
    resolve_threads,
)

__all__ = [
    "BootstrapResult",
    "ConfidenceInterval",
    "CorrelationResult",
    "GroupedResult",
    "PearsonResult",
    "bootstrap_ci",
    "grouped",
    "kendall",
    "pearson",
    "spearman",
]

ALTERNATIVES = ("two-sided", "less", "greater")
NAN_POLICIES = ("propagate", "omit", "raise")
METHODS = ("pearson", "spearman", "kendall")

ConstantInputWarning = _sps.ConstantInputWarning
NearConstantInputWarning = _sps.NearConstantInputWarning
try:  # scipy's own class, so filters written for scipy keep working
    from scipy.stats._axis_nan_policy import SmallSampleWarning
except ImportError:  # pragma: no cover - older/newer scipy layouts

    class SmallSampleWarning(RuntimeWarning):
        """Too few observations for the statistic."""


_CONSTANT_MSG = "An input array is constant; the correlation coefficient is not defined."
_NEAR_CONSTANT_MSG = (
    "An input array is nearly constant; the computed correlation coefficient "
    "may be inaccurate."
)
_EPS75 = np.finfo(np.float64).eps ** 0.75

ConfidenceInterval = namedtuple("ConfidenceInterval", ["low", "high"])


# ----------------------------------------------------------------- results


@dataclass(frozen=True)
class CorrelationResult:
    """A correlation coefficient and its p-value.

    Unpacks like scipy's results: ``r, p = metrics.spearman(x, y)``.

    Attributes
    ----------
    statistic : float
        The coefficient (NaN when undefined).
    pvalue : float
        p-value of the test of no association for ``alternative``.
    n : int
        Number of pairs used (after ``nan_policy="omit"``).
    method : str
        ``"pearson"``, ``"spearman"`` or ``"kendall"``.
    alternative : str
        The alternative hypothesis of ``pvalue``.
    """

    statistic: float
    pvalue: float
    n: int
    method: str
    alternative: str = "two-sided"

    @property
    def correlation(self) -> float:
        """Alias of ``statistic``."""
        return self.statistic

    def __iter__(self):
        yield self.statistic
        yield self.pvalue

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i):
        return (self.statistic, self.pvalue)[i]


@dataclass(frozen=True)
class PearsonResult(CorrelationResult):
    """Pearson's r with ``confidence_interval`` (Fisher's z, as scipy)."""

    def confidence_interval(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Fisher-transformation confidence interval for r.

        ``atanh(r) ± z * 1/sqrt(n - 3)`` mapped back with ``tanh``; one-sided
        for a one-sided ``alternative``; ``(-1, 1)`` when ``n <= 3`` (exactly as
        ``scipy.stats.pearsonr(...).confidence_interval()``).
        """
        cl = check_confidence_level(confidence_level)
        r, n = self.statistic, float(self.n)
        with np.errstate(divide="ignore", invalid="ignore"):
            zr = np.arctanh(np.float64(r))
            se = np.sqrt(1 / (np.float64(n) - 3))
            if self.alternative == "two-sided":
                h = special.ndtri(0.5 + cl / 2)
                lo, hi = np.tanh(zr - h * se), np.tanh(zr + h * se)
            elif self.alternative == "less":
                h = special.ndtri(cl)
                lo, hi = np.float64(-1.0), np.tanh(zr + h * se)
            else:
                h = special.ndtri(cl)
                lo, hi = np.tanh(zr - h * se), np.float64(1.0)
        if n <= 3:
            lo, hi = -1.0, 1.0
        return ConfidenceInterval(float(lo), float(hi))


# ----------------------------------------------------------------- helpers


def _prepare(x, y, alternative, nan_policy):
    x = as_float_vector(x, "x")
    y = as_float_vector(y, "y")
    check_same_length(x, y, "x", "y")
    check_choice(alternative, "alternative", ALTERNATIVES)
    check_choice(nan_policy, "nan_policy", NAN_POLICIES)
    return x, y


def _has_nan(x, y) -> bool:
    # np.isnan(x.sum()) is a fast screen; inf - inf also gives NaN, so confirm
    # (and do not let that inf - inf raise a RuntimeWarning of its own).
    with np.errstate(invalid="ignore", over="ignore"):
        s = x.sum() + y.sum()
    if not np.isnan(s):
        return False
    return bool(np.isnan(x).any() or np.isnan(y).any())


def _is_constant(v) -> bool:
    return v.shape[0] > 0 and bool(np.all(v == v[0]))


def _pow2_scale(v) -> np.ndarray:
    """v times a power of two that brings max|v| near 1 (exact, keeps ratios)."""
    m = np.max(np.abs(v))
    if not np.isfinite(m) or m == 0:
        return v
    return np.ldexp(v, -int(np.frexp(m)[1]))


def _r_from_moments(sxx, syy, sxy) -> float:
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.float64(sxy) / (np.sqrt(np.float64(sxx)) * np.sqrt(np.float64(syy)))
    return float(np.clip(r, -1.0, 1.0))


# Up to this many pairs the statistic is computed with the same sequence of
# numpy operations as scipy, so it agrees to the last bit: near |r| = 1 with
# tiny n the p-value amplifies a 1-ulp difference in r far beyond 1e-12.
SMALL_N = 2048


def _refined_deviations(v, vmean):
    """``v - vmean``, re-centred when ``vmean`` is off by enough to matter.

    scipy subtracts ``np.mean(v)``, which is only good to a few ulps of the
    mean: with a large common offset (values near 1e9 with spread 1e-3, say)
    that error is a visible fraction of the spread and biases r.  The
    deviations are then exact differences, so their own mean is the error;
    it is subtracted only when it could move r (its square relative to the
    variance above ~1e-17), which leaves scipy's arithmetic -- and its last bit
    -- untouched on ordinary data.
    """
    dev = v - vmean
    shift = np.mean(dev)
    if shift != 0 and abs(shift) * math.sqrt(v.shape[0]) > 3e-9 * np.linalg.norm(dev):
        dev = dev - shift
    return dev


def _pearson_small(x, y, warn_stacklevel) -> float:
    if _is_constant(x) or _is_constant(y):
        warnings.warn(ConstantInputWarning(_CONSTANT_MSG), stacklevel=warn_stacklevel + 1)
        return math.nan
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        xmean = np.mean(x, keepdims=True)
        ymean = np.mean(y, keepdims=True)
        xm = _refined_deviations(x, xmean)
        ym = _refined_deviations(y, ymean)
        xmax = np.max(np.abs(xm), keepdims=True)
        ymax = np.max(np.abs(ym), keepdims=True)
        normxm = xmax * np.linalg.norm(xm / xmax, ord=2, axis=-1, keepdims=True)
        normym = ymax * np.linalg.norm(ym / ymax, ord=2, axis=-1, keepdims=True)
        if (normxm < _EPS75 * np.abs(xmean)).any() or (normym < _EPS75 * np.abs(ymean)).any():
            warnings.warn(NearConstantInputWarning(_NEAR_CONSTANT_MSG),
                          stacklevel=warn_stacklevel + 1)
        r = np.dot(xm / normxm, ym / normym)
    return float(np.clip(r, -1.0, 1.0))


def _moments_usable(sxx, syy, sxy) -> bool:
    """The one conditioning test for co-moments from the kernels.

    True when r can be taken from them as they are: all finite and the sums of
    squares far from overflow and underflow.  (The kernels are accurate under
    any common offset, see _moments.pxd; what remains is the range of double.)
    Otherwise the caller rescales or checks for constant input.
    """
    return (math.isfinite(sxy) and 1e-280 < sxx < 1e280 and 1e-280 < syy < 1e280)


def _near_constant(sxx, syy, mx, my) -> bool:
    """scipy's rule: ||x - mean|| < eps**0.75 * |mean| for x or y."""
    return math.sqrt(sxx) < _EPS75 * abs(mx) or math.sqrt(syy) < _EPS75 * abs(my)


def _pearson_statistic(x, y, nt, warn_stacklevel=3) -> float:
    """Pearson r with scipy's warnings and NaN rules (inputs without NaN handling)."""
    if x.shape[0] <= SMALL_N:
        return _pearson_small(x, y, warn_stacklevel)
    n, mx, my, sxx, syy, sxy = _corr.comoments(x, y, _work_threads(nt, x.shape[0]))
    if _moments_usable(sxx, syy, sxy):
        if _near_constant(sxx, syy, mx, my):
            warnings.warn(NearConstantInputWarning(_NEAR_CONSTANT_MSG),
                          stacklevel=warn_stacklevel)
        return _r_from_moments(sxx, syy, sxy)
    const_x, const_y = _is_constant(x), _is_constant(y)
    if const_x or const_y:
        warnings.warn(ConstantInputWarning(_CONSTANT_MSG), stacklevel=warn_stacklevel)
        return math.nan
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return math.nan
    xs, ys = _pow2_scale(x), _pow2_scale(y)
    n, mxs, mys, sxx, syy, sxy = _corr.comoments(xs, ys, _work_threads(nt, x.shape[0]))
    if _near_constant(sxx, syy, mxs, mys):
        warnings.warn(NearConstantInputWarning(_NEAR_CONSTANT_MSG), stacklevel=warn_stacklevel)
    if sxx == 0 or syy == 0:
        return math.nan
    return _r_from_moments(sxx, syy, sxy)


# A parallel region waits for its slowest thread to start; on a busy machine
# that can be a whole scheduler time slice (~4 ms), longer than one thread
# needs for a million pairs.  Threads are added only for this much work each.
MIN_PAIRS_PER_THREAD = 1 << 21


def _work_threads(nt: int, n: int, per_thread: int = MIN_PAIRS_PER_THREAD) -> int:
    return max(1, min(nt, n // per_thread))


def _pearson_pvalue(r: float, n: int, alternative: str) -> float:
    if n == 2:
        return math.nan if math.isnan(r) else 1.0
    ab = n / 2 - 1
    r = np.float64(r)
    if alternative == "less":
        p = special.betainc(ab, ab, (r + 1) / 2)
    elif alternative == "greater":
        p = betaincc(ab, ab, (r + 1) / 2)
    else:
        p = 2 * betaincc(ab, ab, (np.abs(r) + 1) / 2)
    return float(p)


def _t_pvalue(rs: float, n: int, alternative: str) -> float:
    """scipy.stats.spearmanr's p-value: t = r sqrt(dof / ((1 + r)(1 - r)))."""
    dof = np.float64(n - 2)
    rs = np.float64(rs)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = rs * np.sqrt(np.clip(dof / ((rs + 1.0) * (1.0 - rs)), 0, None))
        if alternative == "less":
            p = special.stdtr(dof, t)
        elif alternative == "greater":
            p = special.stdtr(dof, -t)
        else:
            p = 2 * special.stdtr(dof, -np.abs(t))
    return float(p)


# From this many pairs on, ranks and Kendall counts come from the radix-sort
# kernels of _rank (below it numpy's argsort is as fast).  The kernels index
# with uint32, hence the upper limit.
RADIX_MIN_N = 4096
RADIX_MAX_N = 2**32 - 1


def _use_radix(n: int) -> bool:
    return RADIX_MIN_N <= n <= RADIX_MAX_N


def _average_ranks(v: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    ranks = np.empty(v.shape[0], dtype=np.float64)
    if order is None and _use_radix(v.shape[0]):
        _rank.average_ranks(v, ranks)
        return ranks
    if order is None:
        order = np.argsort(v)
    _corr.average_ranks_sorted(v, order, ranks)
    return ranks


def _argsorts(x, y, nt):
    """argsort of x and y; concurrently when two threads are allowed (numpy's
    sort releases the GIL)."""
    if nt >= 2 and x.shape[0] >= 50_000:
        with ThreadPoolExecutor(max_workers=2) as pool:
            fx = pool.submit(np.argsort, x)
            fy = pool.submit(np.argsort, y)
            return fx.result(), fy.result()
    return np.argsort(x), np.argsort(y)


def _small_int_table(x, y, nt):
    """(table, row_counts, col_counts) trimmed to occupied levels, or None."""
    if x.shape[0] < 64:
        return None
    table = np.zeros((64, 64), dtype=np.int64)
    if _corr.small_int_table(x, y, table, _work_threads(nt, x.shape[0])) is None:
        return None
    rows = table.sum(axis=1)
    cols = table.sum(axis=0)
    table = table[rows > 0][:, cols > 0]
    return np.ascontiguousarray(table), rows[rows > 0], cols[cols > 0]


def _table_avg_ranks(counts: np.ndarray) -> np.ndarray:
    before = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return before + 0.5 * (counts + 1)


# ----------------------------------------------------------------- Pearson


def pearson(x, y, *, alternative: str = "two-sided", nan_policy: str = "propagate",
            n_threads: int | None = None) -> PearsonResult:
    """Pearson's product-moment correlation and the p-value for no correlation.

    Same statistic and p-value as ``scipy.stats.pearsonr`` (beta distribution
    on (-1, 1) with a = b = n/2 - 1), computed in one parallel pass.

    Parameters
    ----------
    x, y : array_like, 1-D, same length
        Numbers (cast to float64; the inputs are never modified).
    alternative : {"two-sided", "less", "greater"}
        Alternative hypothesis of the p-value.
    nan_policy : {"propagate", "omit", "raise"}
        ``"propagate"``: NaN anywhere gives NaN; ``"omit"``: drop pairs with a
        NaN; ``"raise"``: ValueError when there is a NaN.
    n_threads : int or None
        Threads for the kernel (None = all cores).  Same result for every value.

    Returns
    -------
    PearsonResult
        ``statistic``, ``pvalue``, ``n`` and ``confidence_interval()``.

    Raises
    ------
    ValueError
        Fewer than 2 pairs (after omitting NaN), length mismatch, bad option.

    Warns
    -----
    ConstantInputWarning
        An input is constant (statistic and p-value are NaN).
    NearConstantInputWarning
        An input is nearly constant (as scipy).
    """
    x, y = _prepare(x, y, alternative, nan_policy)
    nt = resolve_threads(n_threads)
    if nan_policy != "propagate" and _has_nan(x, y):
        if nan_policy == "raise":
            raise ValueError("x or y contains NaN (nan_policy='raise')")
        keep = ~(np.isnan(x) | np.isnan(y))
        x, y = np.ascontiguousarray(x[keep]), np.ascontiguousarray(y[keep])
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"x and y must have length at least 2, got {n}")
    r = _pearson_statistic(x, y, nt)
    p = _pearson_pvalue(r, n, alternative)
    if n == 2 and not math.isnan(r):
        r = float(np.round(r))
    return PearsonResult(r, p, n, "pearson", alternative)


# ----------------------------------------------------------------- Spearman


def _spearman_core(x, y, nt, alternative, tab=None, warn_stacklevel=4):
    """rho and p for data without NaN (inf allowed), n >= 2."""
    n = x.shape[0]
    if tab is not None and n <= SMALL_N:
        if tab[1].shape[0] == 1 or tab[2].shape[0] == 1:
            warnings.warn(ConstantInputWarning(_CONSTANT_MSG), stacklevel=warn_stacklevel)
            return math.nan, math.nan
        tab = None  # small: the exact-arithmetic rank path below
    if tab is not None:
        table, rows, cols = tab
        if rows.shape[0] == 1 or cols.shape[0] == 1:
            warnings.warn(ConstantInputWarning(_CONSTANT_MSG), stacklevel=warn_stacklevel)
            return math.nan, math.nan
        m = 0.5 * (n + 1)
        dx = _table_avg_ranks(rows) - m
        dy = _table_avg_ranks(cols) - m
        sxx = float(np.dot(rows, dx * dx))
        syy = float(np.dot(cols, dy * dy))
        sxy = float(dx @ (table @ dy))
        rs = _r_from_moments(sxx, syy, sxy)
    else:
        if _is_constant(x) or _is_constant(y):
            warnings.warn(ConstantInputWarning(_CONSTANT_MSG), stacklevel=warn_stacklevel)
            return math.nan, math.nan
        if _use_radix(n):  # two radix sorts, side by side
            rx = np.empty(n, dtype=np.float64)
            ry = np.empty(n, dtype=np.float64)
            _rank.average_ranks2(x, y, rx, ry, nt)
        else:
            ox, oy = _argsorts(x, y, nt)
            rx = _average_ranks(x, ox)
            ry = _average_ranks(y, oy)
        if n <= SMALL_N:  # scipy's own arithmetic (see SMALL_N)
            with np.errstate(invalid="ignore", divide="ignore"):
                rs = float(np.corrcoef(np.column_stack((rx, ry)), rowvar=False)[1, 0])
        else:
            _, _, _, sxx, syy, sxy = _corr.comoments(rx, ry, nt)
            rs = _r_from_moments(sxx, syy, sxy)
    return rs, _t_pvalue(rs, n, alternative)


def spearman(x, y, *, alternative: str = "two-sided", nan_policy: str = "propagate",
             n_threads: int | None = None) -> CorrelationResult:
    """Spearman's rank correlation (average ranks for ties) and its p-value.

    Same statistic and p-value as ``scipy.stats.spearmanr`` (Student's t with
    n - 2 degrees of freedom), including its edge cases: fewer than 2 pairs or a
    NaN under ``"propagate"`` give NaN; a constant input gives NaN with a
    ``ConstantInputWarning``.  Like scipy, ``nan_policy="omit"`` drops the pairs
    with a NaN *or an infinity* when the data contain a NaN, and raises
    ValueError when exactly one pair is left.

    Parameters
    ----------
    x, y : array_like, 1-D, same length
    alternative : {"two-sided", "less", "greater"}
    nan_policy : {"propagate", "omit", "raise"}
    n_threads : int or None
        Threads for counting and ranking (None = all cores).

    Returns
    -------
    CorrelationResult
    """
    x, y = _prepare(x, y, alternative, nan_policy)
    nt = resolve_threads(n_threads)
    n = x.shape[0]
    if n <= 1:
        return CorrelationResult(math.nan, math.nan, n, "spearman", alternative)
    # scipy checks constancy on the raw input, before any NaN handling; the
    # table path below detects it itself, so only screen cheaply here.
    if x[0] == x[-1] and _is_constant(x) or y[0] == y[-1] and _is_constant(y):
        warnings.warn(ConstantInputWarning(_CONSTANT_MSG), stacklevel=2)
        return CorrelationResult(math.nan, math.nan, n, "spearman", alternative)
    tab = _small_int_table(x, y, nt)  # succeeds only without NaN
    if tab is None and _has_nan(x, y):
        if nan_policy == "raise":
            raise ValueError("x or y contains NaN (nan_policy='raise')")
        if nan_policy == "propagate":
            return CorrelationResult(math.nan, math.nan, n, "spearman", alternative)
        keep = np.isfinite(x) & np.isfinite(y)
        x, y = np.ascontiguousarray(x[keep]), np.ascontiguousarray(y[keep])
        n = x.shape[0]
        if n == 0:
            return CorrelationResult(math.nan, math.nan, 0, "spearman", alternative)
        if n == 1:
            raise ValueError(
                "spearman: only 1 pair left after omitting NaN/inf; need at least 2"
            )
        tab = _small_int_table(x, y, nt)
    rs, p = _spearman_core(x, y, nt, alternative, tab, warn_stacklevel=3)
    return CorrelationResult(rs, p, n, "spearman", alternative)


# ----------------------------------------------------------------- Kendall


def _mahonian_prefix(n: int, c: int) -> tuple[int, int]:
    """(number of permutations of n with <= c inversions, number with exactly c)."""
    row = [1] + [0] * c  # permutations of 1 element
    for j in range(2, n + 1):
        prefix = [0] * (c + 2)
        for k in range(c + 1):
            prefix[k + 1] = prefix[k] + row[k]
        row = [prefix[k + 1] - prefix[max(0, k - j + 1)] for k in range(c + 1)]
    return sum(row), row[c]


def _kendall_exact_pvalue(n: int, concordant: int, alternative: str) -> float:
    """Exact p-value of Kendall's test without ties (permutation distribution)."""
    half = n * (n - 1) // 2
    in_right_tail = concordant >= half - concordant
    c = min(concordant, half - concordant)
    if n <= 2:
        prob, mass = 1.0, (1.0 if n == 1 else 0.5)
    elif 4 * c == n * (n - 1) and alternative == "two-sided":
        prob, mass = 1.0, 0.0
    else:
        below, at = _mahonian_prefix(n, c)
        fact = math.factorial(n)
        prob = float(Fraction(2 * below, fact))
        mass = float(Fraction(at, fact))
    if alternative != "two-sided":
        if in_right_tail == (alternative == "greater"):
            prob /= 2
        else:
            prob = 1 - prob / 2 + mass
    return float(np.clip(prob, 0, 1))


def _tie_stats(counts: np.ndarray):
    cnt = counts[counts > 1].astype(np.int64)
    return (
        int((cnt * (cnt - 1) // 2).sum()),
        float((cnt * (cnt - 1.0) * (cnt - 2)).sum()),
        float((cnt * (cnt - 1.0) * (2 * cnt + 5)).sum()),
    )


def _kendall_counts(x, y, nt, tab=None):
    """(dis, xtie, ytie, ntie, x0, x1, y0, y1) for data without NaN."""
    if tab is not None:
        table, rows, cols = tab
        _, dis = _corr.table_kendall_counts(table)
        xtie, x0, x1 = _tie_stats(rows)
        ytie, y0, y1 = _tie_stats(cols)
        cells = table.ravel()
        ntie = int((cells * (cells - 1) // 2).sum())
        return int(dis), xtie, ytie, ntie, x0, x1, y0, y1
    if _use_radix(x.shape[0]):
        counts = _rank.kendall_counts(x, y, nt)
    else:
        counts = _corr.kendall_general(x, y, np.argsort(x), nt)
    dis, xtie, ytie, ntie, x0, x1, y0, y1 = counts
    return int(dis), int(xtie), int(ytie), int(ntie), x0, x1, y0, y1


def _kendall_core(x, y, nt, alternative, method="auto", tab=None):
    n = x.shape[0]
    dis, xtie, ytie, ntie, x0, x1, y0, y1 = _kendall_counts(x, y, nt, tab)
    tot = n * (n - 1) // 2
    if xtie == tot or ytie == tot:
        return math.nan, math.nan
    con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
    tau = con_minus_dis / np.sqrt(np.float64(tot - xtie)) / np.sqrt(np.float64(tot - ytie))
    tau = float(np.clip(tau, -1.0, 1.0))
    if method == "exact" and (xtie != 0 or ytie != 0):
        raise ValueError("method='exact' cannot be used: x or y has ties")
    if method == "auto":
        exact = xtie == 0 and ytie == 0 and (n <= 33 or min(dis, tot - dis) <= 1)
        method = "exact" if exact else "asymptotic"
    if method == "exact":
        p = _kendall_exact_pvalue(n, tot - dis, alternative)
    else:
        m = n * (n - 1.0)
        var = ((m * (2 * n + 5) - x1 - y1) / 18
               + (2 * xtie * ytie) / m + x0 * y0 / (9 * m * (n - 2)))
        z = np.float64(con_minus_dis) / np.sqrt(np.float64(var))
        if alternative == "less":
            p = special.ndtr(z)
        elif alternative == "greater":
            p = special.ndtr(-z)
        else:
            p = 2 * special.ndtr(-np.abs(z))
        p = float(p)
    return tau, p


def kendall(x, y, *, alternative: str = "two-sided", nan_policy: str = "propagate",
            method: str = "auto", n_threads: int | None = None) -> CorrelationResult:
    """Kendall's tau-b and its p-value, as ``scipy.stats.kendalltau``.

    The p-value is exact (permutation distribution) when there are no ties and
    n <= 33 or the data are (almost) perfectly ordered, asymptotic (normal,
    with scipy's tie-corrected variance) otherwise; ``method`` forces one.
    Fewer than 2 pairs give NaN with a ``SmallSampleWarning``; a constant input
    gives NaN.

    Parameters
    ----------
    x, y : array_like, 1-D, same length
    alternative : {"two-sided", "less", "greater"}
    nan_policy : {"propagate", "omit", "raise"}
        ``"omit"`` drops the pairs with a NaN (infinities are ordinary values).
    method : {"auto", "exact", "asymptotic"}
    n_threads : int or None

    Returns
    -------
    CorrelationResult
    """
    x, y = _prepare(x, y, alternative, nan_policy)
    check_choice(method, "method", ("auto", "exact", "asymptotic"))
    nt = resolve_threads(n_threads)
    tab = _small_int_table(x, y, nt)  # succeeds only without NaN
    if tab is None and _has_nan(x, y):
        if nan_policy == "raise":
            raise ValueError("x or y contains NaN (nan_policy='raise')")
        if nan_policy == "propagate":
            return CorrelationResult(math.nan, math.nan, x.shape[0], "kendall", alternative)
        keep = ~(np.isnan(x) | np.isnan(y))
        x, y = np.ascontiguousarray(x[keep]), np.ascontiguousarray(y[keep])
        tab = _small_int_table(x, y, nt)
    n = x.shape[0]
    if n <= 1:
        warnings.warn(
            SmallSampleWarning("One or more sample arguments is too small; all returned "
                               "values will be NaN."),
            stacklevel=2,
        )
        return CorrelationResult(math.nan, math.nan, n, "kendall", alternative)
    tau, p = _kendall_core(x, y, nt, alternative, method, tab)
    return CorrelationResult(tau, p, n, "kendall", alternative)


_FUNCS = {"pearson": pearson, "spearman": spearman, "kendall": kendall}


# ----------------------------------------------------------------- grouped


@dataclass(frozen=True)
class GroupedResult:
    """Per-group results and the pooled (overall) result of ``grouped``.

    Attributes
    ----------
    groups : dict
        Group label -> result (in sorted label order).
    overall : CorrelationResult
        The same statistic over all rows.
    method : str
    """

    groups: dict
    overall: CorrelationResult
    method: str
    sizes: dict = field(default_factory=dict)

    def __getitem__(self, label):
        return self.groups[label]

    def __iter__(self):
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    def table(self) -> list[tuple]:
        """Rows ``(label, n, statistic, pvalue)``, the overall row last."""
        rows = [(g, r.n, r.statistic, r.pvalue) for g, r in self.groups.items()]
        rows.append(("overall", self.overall.n, self.overall.statistic, self.overall.pvalue))
        return rows


def _factorize(groups, n):
    """(codes int64, base, labels, n_slots): slot of row i = codes[i] - base."""
    if groups is None or isinstance(groups, (str, bytes, dict)):
        raise TypeError(f"groups must be a 1-D array-like of labels, got {type(groups).__name__}")
    g = np.asarray(groups)
    if g.ndim != 1:
        raise ValueError(f"groups must be 1-D, got shape {g.shape}")
    if g.shape[0] != n:
        raise ValueError(f"groups must have the same length as x, got {g.shape[0]} and {n}")
    if n == 0:
        raise ValueError("x, y and groups must not be empty")
    wide_unsigned = g.dtype.kind == "u" and g.dtype.itemsize >= 8 and int(g.max()) >= 2**63
    if g.dtype.kind in "iub" and not wide_unsigned:  # else int64 codes would wrap
        codes = np.ascontiguousarray(g, dtype=np.int64)
        lo, hi = int(codes.min()), int(codes.max())  # numpy's SIMD min/max
        if hi - lo < max(4 * n, 1024):
            return codes, int(lo), None, int(hi - lo + 1)
    if g.dtype.kind == "f" and np.isnan(g).any():
        raise ValueError("groups must not contain NaN")
    try:
        labels, inverse = np.unique(g, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"groups labels must be sortable ({exc})") from None
    return np.ascontiguousarray(inverse, dtype=np.int64), 0, labels, labels.shape[0]


def _grouped_pearson_moments(x, y, codes, base, n_slots, nt):
    """Per-slot blocks of moments (rows of _corr.N_MOMENT_FIELDS, see _moments.pxd)."""
    n = x.shape[0]
    n_chunks = (n + 4095) // 4096
    out = np.zeros((n_slots, _corr.N_MOMENT_FIELDS), dtype=np.float64)
    if n_chunks * n_slots <= (1 << 19):
        parts = np.zeros((n_chunks, n_slots, _corr.N_MOMENT_FIELDS), dtype=np.float64)
        _corr.grouped_chunk_moments(x, y, codes, base, n_slots, parts,
                                    _work_threads(nt, n, MIN_PAIRS_PER_THREAD // 2))
        _corr.merge_chunk_moments(parts, out)
    else:
        xs = np.empty(n)
        ys = np.empty(n)
        offsets = np.empty(n_slots + 1, dtype=np.intp)
        _corr.group_gather(codes - base if base else codes, n_slots, x, y, xs, ys, offsets)
        _corr.grouped_comoments(xs, ys, offsets, out, nt)
    return out


def _group_rows(codes):
    """(order, starts, ends): rows of each group, in slot order, stably."""
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [codes.shape[0]]))
    return order, sorted_codes, starts, ends


def grouped(x, y, groups, *, method: str = "pearson", alternative: str = "two-sided",
            nan_policy: str = "propagate", n_threads: int | None = None) -> GroupedResult:
    """Correlation within every group and over all rows, in one call.

    For SemEval-style scoring: ``groups`` holds each row's language, and the
    result has one entry per language plus the pooled ``overall``.  Each
    group's result equals ``method(x[groups == g], y[groups == g])``: Pearson's
    per-group co-moments come from one parallel pass over integer group codes
    (groups of at most ``SMALL_N`` rows take the same scipy-arithmetic route as
    ``pearson`` does, so their p-values agree to the last bit); Spearman and
    Kendall run per group.

    Groups with fewer than 2 rows get NaN with a ``SmallSampleWarning``
    instead of an error.  Labels come back as given (same type and value).

    Parameters
    ----------
    x, y : array_like, 1-D, same length
    groups : array_like, 1-D, same length
        Hashable, sortable labels (strings, integers, ...).
    method : {"pearson", "spearman", "kendall"}
    alternative, nan_policy, n_threads
        As for the single-sample functions.

    Returns
    -------
    GroupedResult
    """
    x, y = _prepare(x, y, alternative, nan_policy)
    check_choice(method, "method", METHODS)
    nt = resolve_threads(n_threads)
    codes, base, labels, n_slots = _factorize(groups, x.shape[0])
    if nan_policy == "raise" and _has_nan(x, y):
        raise ValueError("x or y contains NaN (nan_policy='raise')")
    func = _FUNCS[method]
    kw = {"alternative": alternative, "nan_policy": nan_policy, "n_threads": nt}

    as_bool = np.asarray(groups).dtype.kind == "b"

    def label_of(slot):  # labels come back as given: bool stays bool
        if labels is None:
            return bool(slot + base) if as_bool else int(slot + base)
        lab = labels[slot]
        return lab.item() if hasattr(lab, "item") else lab

    results, sizes = {}, {}
    easy = False
    if method == "pearson":
        mom = _grouped_pearson_moments(x, y, codes, base, n_slots, nt)
        present = np.flatnonzero(mom[:, 0] > 0)
        cnt, sxx, syy, sxy = mom[present, 0], mom[present, 5], mom[present, 6], mom[present, 7]
        with np.errstate(invalid="ignore", over="ignore"):
            means_x = mom[present, 1] + mom[present, 3]
            means_y = mom[present, 2] + mom[present, 4]
            easy = bool(np.all(cnt >= 3) and np.all(np.isfinite(sxy))
                        and np.all((sxx > 1e-280) & (sxx < 1e280))
                        and np.all((syy > 1e-280) & (syy < 1e280))
                        and not np.any((np.sqrt(sxx) < _EPS75 * np.abs(means_x))
                                       | (np.sqrt(syy) < _EPS75 * np.abs(means_y))))
        if easy:
            small = cnt <= SMALL_N
            if small.any():
                order, sorted_codes, starts, ends = _group_rows(codes)
                bounds = dict(zip((sorted_codes[starts] - base).tolist(),
                                  zip(starts.tolist(), ends.tolist())))
            for k, s in enumerate(present.tolist()):
                c = int(cnt[k])
                if small[k]:  # the same route as pearson() on these rows
                    a, b = bounds[s]
                    idx = order[a:b]
                    r = _pearson_small(x[idx], y[idx], 2)
                else:
                    r = _r_from_moments(sxx[k], syy[k], sxy[k])
                lab = label_of(s)
                results[lab] = PearsonResult(
                    r, _pearson_pvalue(r, c, alternative), c, "pearson", alternative)
                sizes[lab] = c
    if not results:
        order, sorted_codes, starts, ends = _group_rows(codes)
        for a, b in zip(starts, ends):
            idx = order[a:b]
            lab = label_of(int(sorted_codes[a] - base))
            sizes[lab] = int(b - a)
            if b - a < 2:
                warnings.warn(
                    SmallSampleWarning(f"group {lab!r} has {b - a} row(s); its result is NaN"),
                    stacklevel=2,
                )
                cls = PearsonResult if method == "pearson" else CorrelationResult
                results[lab] = cls(math.nan, math.nan, int(b - a), method, alternative)
                continue
            results[lab] = func(x[idx], y[idx], **kw)
    overall = None
    if method == "pearson" and results and easy and x.shape[0] > SMALL_N:
        overall = _pooled_pearson(mom[present], alternative)
    if overall is None:
        overall = func(x, y, **kw)
    return GroupedResult(results, overall, method, sizes)


def _pooled_pearson(mom, alternative):
    """Pearson over all rows from the groups' co-moments (Chan's merge), or None.

    Saves a second pass over the data; None when the pooled moments do not pass
    the same conditioning test as a single call's.
    """
    n, mx, my, sxx, syy, sxy = _corr.merge_moment_rows(np.ascontiguousarray(mom))
    if not _moments_usable(sxx, syy, sxy) or _near_constant(sxx, syy, mx, my):
        return None
    n = int(n)
    r = _r_from_moments(sxx, syy, sxy)
    return PearsonResult(r, _pearson_pvalue(r, n, alternative), n, "pearson", alternative)


# ----------------------------------------------------------------- bootstrap


@dataclass(frozen=True)
class BootstrapResult:
    """Result of ``bootstrap_ci``.

    Attributes
    ----------
    statistic : float
        The statistic on the original data.
    confidence_interval : ConfidenceInterval
    bootstrap_distribution : numpy.ndarray
        The statistic of every resample (length ``n_resamples``).
    standard_error : float
        Sample standard deviation (ddof=1) of the bootstrap distribution.
    method, ci : str
    """

    statistic: float
    confidence_interval: ConfidenceInterval
    bootstrap_distribution: np.ndarray
    standard_error: float
    method: str
    ci: str


def _bootstrap_distribution(method, x, y, seed, n_resamples, nt):
    out = np.empty(n_resamples, dtype=np.float64)
    n = x.shape[0]
    if method == "pearson":
        _boot.boot_pearson(_centred(x), _centred(y), seed, out, nt)
    elif method == "spearman":
        ox = np.argsort(x, kind="stable")
        oy = np.argsort(y, kind="stable")
        _boot.boot_spearman(ox, _run_ends(x[ox]), oy, _run_ends(y[oy]), seed, out, nt)
    else:
        order = np.lexsort((y, x))
        xs, ys = x[order], y[order]
        _, ycode = np.unique(ys, return_inverse=True)
        xrun = _run_ends(xs).astype(np.intc)
        same_xy = np.concatenate(((xs[1:] == xs[:-1]) & (ys[1:] == ys[:-1]), [False]))
        xyrun = _run_ends_from_flags(same_xy, n).astype(np.intc)
        _boot.boot_kendall(np.ascontiguousarray(order, dtype=np.intp),
                           np.ascontiguousarray(ycode, dtype=np.intc), xrun, xyrun,
                           int(ycode.max()) + 1, seed, out, nt)
    return out


def _centred(v: np.ndarray) -> np.ndarray:
    """v minus its mean, re-centred once: under a large common offset the mean
    is off by ulps of the offset, the deviations are exact differences, and
    their mean is that error."""
    dev = v - v.mean()
    dev -= dev.mean()
    return dev


def _run_ends_from_flags(same_next: np.ndarray, n: int) -> np.ndarray:
    """end[k] = end (exclusive) of the run containing k, given same_next[k] =
    (element k+1 belongs to k's run)."""
    breaks = np.flatnonzero(~same_next) + 1  # run ends
    run_id = np.concatenate(([0], np.cumsum(~same_next[:-1])))
    return np.ascontiguousarray(breaks[run_id], dtype=np.intp)


def _run_ends(sorted_values: np.ndarray) -> np.ndarray:
    n = sorted_values.shape[0]
    same_next = np.concatenate((sorted_values[1:] == sorted_values[:-1], [False]))
    return _run_ends_from_flags(same_next, n)


def _statistic(method, x, y, nt) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _FUNCS[method](x, y, n_threads=nt).statistic


def _jackknife(method, x, y, nt) -> np.ndarray:
    out = np.empty(x.shape[0], dtype=np.float64)
    if method == "pearson":
        _boot.jack_pearson(_centred(x), _centred(y), out)
    elif method == "spearman":
        _boot.jack_spearman(x, y, _average_ranks(x), _average_ranks(y), out, nt)
    else:
        _boot.jack_kendall(x, y, out, nt)
    return out


def bootstrap_ci(x, y, *, method: str = "pearson", n_resamples: int = 9999,
                 confidence_level: float = 0.95, ci: str = "bca", seed: int | None = None,
                 n_threads: int | None = None) -> BootstrapResult:
    """Paired bootstrap confidence interval of a correlation coefficient.

    Resample b draws n pair indices with replacement from a counter-based
    generator keyed by (seed, b) (splitmix64), so the same seed gives the same
    interval for every ``n_threads``.  A resample is held as n
    multiplicities, never as a copy of the data: memory is O(n_resamples + n)
    plus O(n) scratch per thread.  Resamples run in parallel.

    Intervals (as ``scipy.stats.bootstrap``): ``"percentile"``, ``"basic"``
    and ``"bca"`` (bias-corrected and accelerated; the acceleration comes from
    the jackknife, O(n) for Pearson via leave-one-out moment updates, O(n^2)
    but parallel for Spearman and Kendall).  Quantiles use linear
    interpolation.  Degenerate resamples (a constant resample) give NaN
    statistics; if any occur the interval is NaN, with a warning, as scipy.

    Parameters
    ----------
    x, y : array_like, 1-D, same length, without NaN, n >= 2
    method : {"pearson", "spearman", "kendall"}
    n_resamples : int >= 1
    confidence_level : float in (0, 1)
    ci : {"bca", "percentile", "basic"}
    seed : int in [0, 2**64) or None (fresh entropy)
    n_threads : int or None

    Returns
    -------
    BootstrapResult
    """
    x = as_float_vector(x, "x")
    y = as_float_vector(y, "y")
    check_same_length(x, y, "x", "y")
    check_choice(method, "method", METHODS)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    cl = check_confidence_level(confidence_level)
    check_choice(ci, "ci", ("bca", "percentile", "basic"))
    seed = check_seed(seed)
    nt = resolve_threads(n_threads)
    if x.shape[0] < 2:
        raise ValueError(f"x and y must have length at least 2, got {x.shape[0]}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite for bootstrap_ci (drop NaN/inf first)")
    theta = _statistic(method, x, y, nt)
    dist = _bootstrap_distribution(method, x, y, seed, n_resamples, nt)
    alpha = (1 - cl) / 2
    if ci == "bca":
        pct = (np.count_nonzero(dist < theta) + np.count_nonzero(dist <= theta)) / (
            2 * n_resamples)
        z0 = special.ndtri(pct)
        jk = _jackknife(method, x, y, nt)
        u = (x.shape[0] - 1) * (jk.mean() - jk)
        with np.errstate(invalid="ignore", divide="ignore"):
            a_hat = (np.sum(u**3) / x.shape[0] ** 3) / 6 / (np.sum(u**2) / x.shape[0] ** 2) ** 1.5
            z_a = special.ndtri(alpha)
            lo_p = special.ndtr(z0 + (z0 + z_a) / (1 - a_hat * (z0 + z_a)))
            hi_p = special.ndtr(z0 + (z0 - z_a) / (1 - a_hat * (z0 - z_a)))
        probs = np.array([lo_p, hi_p])
    else:
        probs = np.array([alpha, 1 - alpha])
    if np.isnan(dist).any() or np.isnan(probs).any():
        warnings.warn(
            RuntimeWarning("The bootstrap confidence interval cannot be calculated: some "
                           "resamples (or the jackknife) are degenerate."),
            stacklevel=2,
        )
        low = high = math.nan
    else:
        low, high = np.quantile(dist, probs)
        if ci == "basic":
            low, high = 2 * theta - high, 2 * theta - low
    se = float(np.std(dist, ddof=1)) if n_resamples > 1 else math.nan
    return BootstrapResult(theta, ConfidenceInterval(float(low), float(high)), dist, se,
                           method, ci)
