"""The statistics themselves: Pearson's r, Spearman's rho, Kendall's tau counts.

Inputs here are validated float64 vectors without NaN (infinities allowed);
warnings follow scipy's rules.  Kernels: _corr (co-moments, tables, ranks),
_rank (radix sorts and inversion counts), _kendall_exact (Kendall's exact null
distribution).
"""

from __future__ import annotations

import math
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import special

from . import _corr, _rank
from ._kendall_exact import kendall_exact_pvalue
from ._pvalues import t_pvalue
from ._results import (
    CONSTANT_MSG,
    EPS75,
    NEAR_CONSTANT_MSG,
    ConstantInputWarning,
    NearConstantInputWarning,
)

def has_nan(x, y) -> bool:
    # np.isnan(x.sum()) is a fast screen; inf - inf also gives NaN, so confirm
    # (and do not let that inf - inf raise a RuntimeWarning of its own).
    with np.errstate(invalid="ignore", over="ignore"):
        s = x.sum() + y.sum()
    if not np.isnan(s):
        return False
    return bool(np.isnan(x).any() or np.isnan(y).any())


def is_constant(v) -> bool:
    return v.shape[0] > 0 and bool(np.all(v == v[0]))


def _pow2_scale(v) -> np.ndarray:
    """v times a power of two that brings max|v| near 1 (exact, keeps ratios)."""
    m = np.max(np.abs(v))
    if not np.isfinite(m) or m == 0:
        return v
    return np.ldexp(v, -int(np.frexp(m)[1]))


def r_from_moments(sxx, syy, sxy) -> float:
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


def pearson_small(x, y, warn_stacklevel) -> float:
    if is_constant(x) or is_constant(y):
        warnings.warn(ConstantInputWarning(CONSTANT_MSG), stacklevel=warn_stacklevel + 1)
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
        if (normxm < EPS75 * np.abs(xmean)).any() or (normym < EPS75 * np.abs(ymean)).any():
            warnings.warn(NearConstantInputWarning(NEAR_CONSTANT_MSG),
                          stacklevel=warn_stacklevel + 1)
        r = np.dot(xm / normxm, ym / normym)
    return float(np.clip(r, -1.0, 1.0))


def moments_usable(sxx, syy, sxy) -> bool:
    """The one conditioning test for co-moments from the kernels.

    True when r can be taken from them as they are: all finite and the sums of
    squares far from overflow and underflow.  (The kernels are accurate under
    any common offset, see _moments.pxd; what remains is the range of double.)
    Otherwise the caller rescales or checks for constant input.
    """
    return (math.isfinite(sxy) and 1e-280 < sxx < 1e280 and 1e-280 < syy < 1e280)


def near_constant(sxx, syy, mx, my) -> bool:
    """scipy's rule: ||x - mean|| < eps**0.75 * |mean| for x or y."""
    return math.sqrt(sxx) < EPS75 * abs(mx) or math.sqrt(syy) < EPS75 * abs(my)


# The plain co-moment blocks lose about 30 eps * |mean| / spread of r (chunk
# means stored as doubles); up to this ratio that is below 1e-13, beyond it
# the anchored blocks are used (metrics/_moments.pxd).
OFFSET_RATIO = 4.0


def _offset_dominates(n, mx, my, sxx, syy) -> bool:
    with np.errstate(invalid="ignore", divide="ignore"):
        return not (abs(mx) <= OFFSET_RATIO * math.sqrt(sxx / n)
                    and abs(my) <= OFFSET_RATIO * math.sqrt(syy / n))


def _comoments(x, y, nt):
    """(n, mean_x, mean_y, Sxx, Syy, Sxy), exact to ~1e-13 under any offset.

    A probe of the first 4096 pairs picks the kernel; the plain one's answer
    is checked and redone anchored when the offset turns out to dominate.
    """
    threads = work_threads(nt, x.shape[0])
    head_x, head_y = x[:4096], y[:4096]
    with np.errstate(invalid="ignore", over="ignore"):
        probe = _offset_dominates(head_x.shape[0], float(head_x.mean()), float(head_y.mean()),
                                  float(head_x.var()) * head_x.shape[0],
                                  float(head_y.var()) * head_y.shape[0])
    res = _corr.comoments(x, y, threads, probe)
    n, mx, my, sxx, syy, _ = res
    if not probe and all(map(math.isfinite, res)) and _offset_dominates(n, mx, my, sxx, syy):
        res = _corr.comoments(x, y, threads, True)
    return res


def pearson_statistic(x, y, nt, warn_stacklevel=3) -> float:
    """Pearson r with scipy's warnings and NaN rules (inputs without NaN handling)."""
    if x.shape[0] <= SMALL_N:
        return pearson_small(x, y, warn_stacklevel)
    n, mx, my, sxx, syy, sxy = _comoments(x, y, nt)
    if moments_usable(sxx, syy, sxy):
        if near_constant(sxx, syy, mx, my):
            warnings.warn(NearConstantInputWarning(NEAR_CONSTANT_MSG),
                          stacklevel=warn_stacklevel)
        return r_from_moments(sxx, syy, sxy)
    const_x, const_y = is_constant(x), is_constant(y)
    if const_x or const_y:
        warnings.warn(ConstantInputWarning(CONSTANT_MSG), stacklevel=warn_stacklevel)
        return math.nan
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return math.nan
    xs, ys = _pow2_scale(x), _pow2_scale(y)
    n, mxs, mys, sxx, syy, sxy = _comoments(xs, ys, nt)
    if near_constant(sxx, syy, mxs, mys):
        warnings.warn(NearConstantInputWarning(NEAR_CONSTANT_MSG), stacklevel=warn_stacklevel)
    if sxx == 0 or syy == 0:
        return math.nan
    return r_from_moments(sxx, syy, sxy)


# A parallel region waits for its slowest thread to start; on a busy machine
# that can be a whole scheduler time slice (~4 ms), longer than one thread
# needs for a million pairs.  Threads are added only for this much work each.
MIN_PAIRS_PER_THREAD = 1 << 21


def work_threads(nt: int, n: int, per_thread: int = MIN_PAIRS_PER_THREAD) -> int:
    return max(1, min(nt, n // per_thread))


# From this many pairs on, ranks and Kendall counts come from the radix-sort
# kernels of _rank (below it numpy's argsort is as fast).  The kernels index
# with uint32, hence the upper limit.
RADIX_MIN_N = 4096
RADIX_MAX_N = 2**32 - 1


def _use_radix(n: int) -> bool:
    return RADIX_MIN_N <= n <= RADIX_MAX_N


def average_ranks(v: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
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


def small_int_table(x, y, nt):
    """(table, row_counts, col_counts) trimmed to occupied levels, or None."""
    if x.shape[0] < 64:
        return None
    table = np.zeros((64, 64), dtype=np.int64)
    if _corr.small_int_table(x, y, table, work_threads(nt, x.shape[0])) is None:
        return None
    rows = table.sum(axis=1)
    cols = table.sum(axis=0)
    table = table[rows > 0][:, cols > 0]
    return np.ascontiguousarray(table), rows[rows > 0], cols[cols > 0]


def _table_avg_ranks(counts: np.ndarray) -> np.ndarray:
    before = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return before + 0.5 * (counts + 1)


def spearman_core(x, y, nt, alternative, tab=None, warn_stacklevel=4):
    """rho and p for data without NaN (inf allowed), n >= 2."""
    n = x.shape[0]
    if tab is not None and n <= SMALL_N:
        if tab[1].shape[0] == 1 or tab[2].shape[0] == 1:
            warnings.warn(ConstantInputWarning(CONSTANT_MSG), stacklevel=warn_stacklevel)
            return math.nan, math.nan
        tab = None  # small: the exact-arithmetic rank path below
    if tab is not None:
        table, rows, cols = tab
        if rows.shape[0] == 1 or cols.shape[0] == 1:
            warnings.warn(ConstantInputWarning(CONSTANT_MSG), stacklevel=warn_stacklevel)
            return math.nan, math.nan
        m = 0.5 * (n + 1)
        dx = _table_avg_ranks(rows) - m
        dy = _table_avg_ranks(cols) - m
        sxx = float(np.dot(rows, dx * dx))
        syy = float(np.dot(cols, dy * dy))
        sxy = float(dx @ (table @ dy))
        rs = r_from_moments(sxx, syy, sxy)
    else:
        if is_constant(x) or is_constant(y):
            warnings.warn(ConstantInputWarning(CONSTANT_MSG), stacklevel=warn_stacklevel)
            return math.nan, math.nan
        if _use_radix(n):  # two radix sorts, side by side
            rx = np.empty(n, dtype=np.float64)
            ry = np.empty(n, dtype=np.float64)
            _rank.average_ranks2(x, y, rx, ry, nt)
        else:
            ox, oy = _argsorts(x, y, nt)
            rx = average_ranks(x, ox)
            ry = average_ranks(y, oy)
        if n <= SMALL_N:  # scipy's own arithmetic (see SMALL_N)
            with np.errstate(invalid="ignore", divide="ignore"):
                rs = float(np.corrcoef(np.column_stack((rx, ry)), rowvar=False)[1, 0])
        else:
            _, _, _, sxx, syy, sxy = _corr.comoments(rx, ry, nt)
            rs = r_from_moments(sxx, syy, sxy)
    return rs, t_pvalue(rs, n, alternative)


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


def _n_distinct(v, tab, axis):
    if tab is not None:
        return tab[1 + axis].shape[0]
    return np.unique(v).shape[0]


def kendall_core(x, y, nt, alternative, method="auto", tab=None, variant="b"):
    """tau (variant "b" or "c") and its p-value for data without NaN, n >= 2."""
    counts = _kendall_counts(x, y, nt, tab)
    n_distinct = None
    if variant == "c":
        n_distinct = min(_n_distinct(x, tab, 0), _n_distinct(y, tab, 1))
    return kendall_from_counts(x.shape[0], *counts, alternative, method, n_distinct)


def kendall_from_counts(n, dis, xtie, ytie, ntie, x0, x1, y0, y1, alternative,
                         method="auto", n_distinct=None):
    """tau and p from the pair counts (scipy.stats.kendalltau's formulas).

    ``n_distinct`` (min of the distinct x and y values) selects tau-c.
    """
    tot = n * (n - 1) // 2
    if xtie == tot or ytie == tot:
        return math.nan, math.nan
    con_minus_dis = tot - xtie - ytie + ntie - 2 * dis
    if n_distinct is None:
        tau = con_minus_dis / np.sqrt(np.float64(tot - xtie)) / np.sqrt(np.float64(tot - ytie))
    else:  # Stuart's tau-c: 2 (C - D) / (n^2 (m - 1) / m), m = min(distinct x, distinct y)
        m = n_distinct
        tau = 2 * con_minus_dis / (n**2 * (m - 1) / m)
    tau = float(np.clip(tau, -1.0, 1.0))
    if method == "exact" and (xtie != 0 or ytie != 0):
        raise ValueError("method='exact' cannot be used: x or y has ties")
    if method == "auto":
        exact = xtie == 0 and ytie == 0 and (n <= 33 or min(dis, tot - dis) <= 1)
        method = "exact" if exact else "asymptotic"
    if method == "exact":
        # scipy's convention: the concordant count, O(n * min(c, tot - c)) compiled
        p = kendall_exact_pvalue(n, tot - dis, alternative)
    else:
        m = n * (n - 1.0)
        var = (m * (2 * n + 5) - x1 - y1) / 18 + (2 * xtie * ytie) / m
        if n > 2:  # x0 = y0 = 0 at n = 2 (sums of t(t-1)(t-2)); scipy divides 0 by 0 there
            var += x0 * y0 / (9 * m * (n - 2))
        z = np.float64(con_minus_dis) / np.sqrt(np.float64(var))
        if alternative == "less":
            p = special.ndtr(z)
        elif alternative == "greater":
            p = special.ndtr(-z)
        else:
            p = 2 * special.ndtr(-np.abs(z))
        p = float(p)
    return tau, p


def finite_statistic(method: str, x, y, nt) -> float:
    """The statistic ``metrics.pearson``/``spearman``/``kendall`` return for
    finite 1-D float64 vectors of n >= 2 pairs, by the same route (so the same
    bits), without warnings: NaN for a constant input.

    For ``metrics.bootstrap``, which may not import ``metrics.correlation``
    (that would close an import cycle through ``PearsonResult``).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "pearson":
            r = pearson_statistic(x, y, nt)
            return float(np.round(r)) if x.shape[0] == 2 and not math.isnan(r) else r
        if is_constant(x) or is_constant(y):
            return math.nan
        tab = small_int_table(x, y, nt)
        if method == "spearman":
            return spearman_core(x, y, nt, "two-sided", tab)[0]
        return kendall_core(x, y, nt, "two-sided", "auto", tab)[0]
