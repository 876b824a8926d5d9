"""Paired bootstrap confidence intervals of a correlation (``metrics.bootstrap_ci``)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special

from . import _boot
from ._chunks import CHUNK_SECONDS, run_chunks
from ._results import METHODS, ConfidenceInterval
from ._statistics import finite_statistic
from ._validation import (
    as_float_vector,
    check_choice,
    check_confidence_level,
    check_positive_int,
    check_same_length,
    check_seed,
    resolve_threads,
)

__all__ = ["BootstrapResult", "bootstrap_ci"]

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


def _run_chunks(run, total: int, nt: int, *, seconds: float = CHUNK_SECONDS) -> None:
    """Resamples ``0 .. total`` in calls of about ``seconds`` (4 resamples per
    thread at first), so Ctrl-C stops a long bootstrap; resample b depends
    only on (seed, b), so the chunking never changes the result."""
    run_chunks(run, total, 4 * max(1, nt), seconds=seconds)


def _bootstrap_distribution(method, x, y, seed, n_resamples, nt):
    out = np.empty(n_resamples, dtype=np.float64)
    n = x.shape[0]
    if method == "pearson":
        xc, yc = _centred(x), _centred(y)

        def run(first, stop):
            _boot.boot_pearson(xc, yc, seed, out[first:stop], nt, first)
    elif method == "spearman":
        ox = np.argsort(x, kind="stable")
        oy = np.argsort(y, kind="stable")
        ex, ey = _run_ends(x[ox]), _run_ends(y[oy])

        def run(first, stop):
            _boot.boot_spearman(ox, ex, oy, ey, seed, out[first:stop], nt, first)
    else:
        order = np.lexsort((y, x))
        xs, ys = x[order], y[order]
        _, ycode = np.unique(ys, return_inverse=True)
        xrun = _run_ends(xs).astype(np.intc)
        same_xy = np.concatenate(((xs[1:] == xs[:-1]) & (ys[1:] == ys[:-1]), [False]))
        xyrun = _run_ends_from_flags(same_xy, n).astype(np.intc)
        order = np.ascontiguousarray(order, dtype=np.intp)
        ycode = np.ascontiguousarray(ycode, dtype=np.intc)
        n_ycodes = int(ycode.max()) + 1

        def run(first, stop):
            _boot.boot_kendall(order, ycode, xrun, xyrun, n_ycodes, seed, out[first:stop],
                               nt, first)
    _run_chunks(run, n_resamples, nt)
    return out


def _scaled(v: np.ndarray) -> np.ndarray:
    """v times a power of two that brings max|v| near 1.

    Exact (only the exponent changes, unless a value falls below the normal
    range, where its share of any sum is below rounding anyway), so Pearson's
    r is unchanged, but squares and co-moments stay inside the range of
    float64 for |v| up to 1.8e308 and down to the subnormals.
    """
    m = float(np.max(np.abs(v))) if v.shape[0] else 0.0
    if m == 0 or not math.isfinite(m):
        return v
    return np.ldexp(v, -math.frexp(m)[1])


def _centred(v: np.ndarray) -> np.ndarray:
    """v minus its mean, re-centred once, scaled by a power of two.

    Under a large common offset the mean is off by ulps of the offset, the
    deviations are exact differences, and their mean is that error.  The data
    are scaled before (so the mean cannot overflow) and the deviations after
    (so their squares neither overflow nor underflow); both are exact.
    """
    v = _scaled(v)
    dev = v - v.mean()
    dev -= dev.mean()
    return _scaled(dev)


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
    """The statistic of ``metrics.<method>(x, y)`` (x, y finite, n >= 2)."""
    return finite_statistic(method, x, y, nt)


def _jackknife(method, x, y, nt) -> np.ndarray:
    """Leave-one-out statistics: O(n) for Pearson, O(n log n) for the ranks."""
    out = np.empty(x.shape[0], dtype=np.float64)
    if method == "pearson":
        _boot.jack_pearson(_centred(x), _centred(y), out)
        return out
    cells = _LeaveOneOutCells(x, y)
    return cells.spearman() if method == "spearman" else cells.kendall()


class _LeaveOneOutCells:
    """For every point i, how the other points lie around it.

    ``c[a][b][i]`` counts the points j != i with x_j (<, =, >)[a] x_i and
    y_j (<, =, >)[b] y_i.  Two cells come from one Fenwick-tree sweep
    (``_boot.below_counts``), one from the runs of equal (x, y) within an x
    group; the rest follow from the row and column totals.  Integer counts.
    """

    def __init__(self, x, y):
        n = x.shape[0]
        self.n = n
        _, xr = np.unique(x, return_inverse=True)
        _, yr = np.unique(y, return_inverse=True)
        xr = np.ascontiguousarray(xr.ravel(), dtype=np.int64)
        yr = np.ascontiguousarray(yr.ravel(), dtype=np.int64)
        self.xr, self.yr = xr, yr
        order = np.ascontiguousarray(np.lexsort((yr, xr)), dtype=np.intp)
        lt = np.empty(n, dtype=np.int64)
        le = np.empty(n, dtype=np.int64)
        _boot.below_counts(order, xr, yr, int(yr.max()) + 1, lt, le)
        xcount = np.bincount(xr)
        ycount = np.bincount(yr)
        x_less = (np.cumsum(xcount) - xcount)[xr]
        y_less = (np.cumsum(ycount) - ycount)[yr]
        x_eq = xcount[xr] - 1
        y_eq = ycount[yr] - 1
        # within x groups (sorted by (x, y)): points with the same x and smaller y,
        # and with the same (x, y)
        xs, ys = xr[order], yr[order]
        new_x = np.r_[True, xs[1:] != xs[:-1]]
        new_xy = new_x | np.r_[True, ys[1:] != ys[:-1]]
        pos = np.arange(n)
        x_start = np.maximum.accumulate(np.where(new_x, pos, 0))
        xy_start = np.maximum.accumulate(np.where(new_xy, pos, 0))
        run_id = np.cumsum(new_xy) - 1
        run_len = np.bincount(run_id)
        eq_less = np.empty(n, dtype=np.int64)
        eq_eq = np.empty(n, dtype=np.int64)
        eq_less[order] = xy_start - x_start
        eq_eq[order] = run_len[run_id] - 1
        ll, le_ = lt, le - lt                       # (<, <), (<, =)
        lg = x_less - le                            # (<, >)
        el, ee = eq_less, eq_eq                     # (=, <), (=, =)
        eg = x_eq - el - ee                         # (=, >)
        gl = y_less - ll - el                       # (>, <)
        ge = y_eq - le_ - ee                        # (>, =)
        x_more = n - 1 - x_less - x_eq
        gg = x_more - gl - ge                       # (>, >)
        self.c = ((ll, le_, lg), (el, ee, eg), (gl, ge, gg))
        self.x_eq, self.y_eq, self.x_more, self.y_more = x_eq, y_eq, x_more, (
            n - 1 - y_less - y_eq)

    def kendall(self) -> np.ndarray:
        (ll, _, lg), _, (gl, _, gg) = self.c
        n = self.n
        s = (ll + gg) - (lg + gl)                   # concordant - discordant with i
        cmd_total = int(s.sum()) // 2
        tx_total = int(self.x_eq.sum()) // 2
        ty_total = int(self.y_eq.sum()) // 2
        tot_m = (n - 1) * (n - 2) // 2
        cmd = cmd_total - s
        ax = tot_m - (tx_total - self.x_eq)
        ay = tot_m - (ty_total - self.y_eq)
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = cmd / np.sqrt(ax.astype(np.float64)) / np.sqrt(ay.astype(np.float64))
        tau[(ax == 0) | (ay == 0)] = np.nan
        return np.clip(tau, -1.0, 1.0)

    def spearman(self) -> np.ndarray:
        """Leaving i out lowers the rank of every point above it by 1 and of
        every point tied with it by 1/2; the sums below expand
        sum_j (rx_j - dx_ij - n/2)(ry_j - dy_ij - n/2) over j != i."""
        n = self.n
        xr, yr = self.xr, self.yr
        xcount = np.bincount(xr)
        ycount = np.bincount(yr)
        rx = ((np.cumsum(xcount) - xcount) + 0.5 * (xcount + 1))[xr] - 0.5 * n
        ry = ((np.cumsum(ycount) - ycount) + 0.5 * (ycount + 1))[yr] - 0.5 * n

        def shifted_sum(rank_code, weights):
            """sum over j != i of d_ij * w_j, d = 1 above i, 1/2 tied with i."""
            k = int(rank_code.max()) + 1
            per = np.bincount(rank_code, weights=weights, minlength=k)
            above = per.sum() - np.cumsum(per)
            return above[rank_code] + 0.5 * (per[rank_code] - weights)

        (_, _, _), (_, ee, eg), (_, ge, gg) = self.c
        dxdy = gg + 0.5 * (ge + eg) + 0.25 * ee
        sxy = (np.dot(rx, ry) - rx * ry) - shifted_sum(xr, ry) - shifted_sum(yr, rx) + dxdy
        sxx = (np.dot(rx, rx) - rx * rx) - 2 * shifted_sum(xr, rx) + (
            self.x_more + 0.25 * self.x_eq)
        syy = (np.dot(ry, ry) - ry * ry) - 2 * shifted_sum(yr, ry) + (
            self.y_more + 0.25 * self.y_eq)
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = sxy / (np.sqrt(sxx) * np.sqrt(syy))
        rho[(sxx <= 0) | (syy <= 0)] = np.nan
        return np.clip(rho, -1.0, 1.0)


def bootstrap_ci(x, y, *, method: str = "pearson", n_resamples: int = 9999,
                 confidence_level: float = 0.95, ci: str = "bca", seed: int | None = None,
                 n_threads: int | None = None) -> BootstrapResult:
    """Paired bootstrap confidence interval of a correlation coefficient.

    Resample b draws n pair indices with replacement from a counter-based
    generator keyed by (seed, b) (splitmix64), so the same seed gives the same
    interval for every ``n_threads``.  A resample is held as n
    multiplicities, never as a copy of the data: memory is O(n_resamples + n)
    plus O(n) scratch per thread.  Resamples run in parallel, in kernel calls
    of about 0.5 s each, so Ctrl-C (KeyboardInterrupt) stops a long call
    within about that long; the chunking never changes the result.
    Pearson's resamples use the data centred on the sample mean and scaled by
    a power of two (exact), so a large common offset costs no accuracy and
    magnitudes from about 1e-300 to 1e300 give finite results.

    Intervals (as ``scipy.stats.bootstrap``): ``"percentile"``, ``"basic"``
    and ``"bca"`` (bias-corrected and accelerated; the acceleration comes from
    the jackknife, O(n) for Pearson via leave-one-out moment updates,
    O(n log n) for Spearman and Kendall via dominance counts).  Quantiles use linear
    interpolation.  Degenerate resamples (a constant resample) give NaN
    statistics; if any occur the interval is NaN, with a warning, as scipy.

    Parameters
    ----------
    x, y : array_like, 1-D, same length, without NaN, n >= 2
    method : {"pearson", "spearman", "kendall"}
        The rank methods rank integer input beyond +-2**53 by its exact order.
    n_resamples : int >= 1
    confidence_level : float in (0, 1)
    ci : {"bca", "percentile", "basic"}
    seed : int in [0, 2**64) or None (fresh entropy)
    n_threads : int or None

    Returns
    -------
    BootstrapResult
    """
    check_choice(method, "method", METHODS)
    # the rank methods see integers beyond 2**53 as their exact order
    x = as_float_vector(x, "x", method != "pearson")
    y = as_float_vector(y, "y", method != "pearson")
    check_same_length(x, y, "x", "y")
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

