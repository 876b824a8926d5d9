"""Paired bootstrap confidence intervals of a correlation (``metrics.bootstrap_ci``)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special

from . import _boot
from ._results import METHODS, ConfidenceInterval
from ._statistics import _average_ranks
from ._validation import (
    as_float_vector,
    check_choice,
    check_confidence_level,
    check_positive_int,
    check_same_length,
    check_seed,
    resolve_threads,
)
from . import correlation as _correlation

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
        return _correlation._FUNCS[method](x, y, n_threads=nt).statistic


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

