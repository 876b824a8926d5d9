"""Permutation and Monte-Carlo p-values, and a bootstrap interval for Pearson's r.

``method=`` of ``metrics.pearson`` accepts scipy's ``PermutationMethod`` and
``MonteCarloMethod`` objects (or anything with the same attributes:
``n_resamples``, ``batch``, ``rng``/``random_state``, and ``rvs`` for Monte
Carlo), and ``PearsonResult.confidence_interval(method=...)`` accepts
``BootstrapMethod`` (``n_resamples``, ``method``, ``rng``/``random_state``).

The resampled statistics are computed from centred, normalised data in batches
of matrix products; every random number comes from the generator the method
names, drawn in a fixed order, so a seed gives the same p-value for every
thread count.  The p-values follow ``scipy.stats.permutation_test`` and
``monte_carlo_test``: ``(count + 1) / (n_resamples + 1)`` for random resamples,
``count / n_perms`` when every permutation is enumerated, twice the smaller
tail (at most 1) for a two-sided test, and comparisons relative to the
observed value within 1e-14 so that rounding cannot move a tie.
"""

from __future__ import annotations

import math
from itertools import permutations

import numpy as np

__all__ = ["bootstrap_interval", "is_bootstrap_method", "resampling_pvalue"]

_REL_TOL = 1e-14
_MAX_BATCH_ELEMENTS = 1 << 22  # resample values held at once (32 MiB of float64)


def _generator(method):
    rng = getattr(method, "rng", None)
    if rng is None:
        rng = getattr(method, "random_state", None)
    if isinstance(rng, np.random.RandomState):
        return rng
    return np.random.default_rng(rng)


def _kind(method) -> str:
    name = type(method).__name__
    if name == "PermutationMethod" or (hasattr(method, "n_resamples")
                                       and not hasattr(method, "rvs")
                                       and not hasattr(method, "method")):
        return "permutation"
    if name == "MonteCarloMethod" or hasattr(method, "rvs"):
        return "monte_carlo"
    return "unknown"


def check_method(method) -> str:
    """'permutation' or 'monte_carlo'; ValueError (scipy's type) otherwise."""
    kind = _kind(method) if method is not None else "unknown"
    if kind == "unknown":
        raise ValueError("`method` must be an instance of PermutationMethod or "
                         "MonteCarloMethod (scipy.stats objects or equivalents), or None; "
                         f"got {method!r}")
    return kind


def _unit(v: np.ndarray) -> np.ndarray:
    """(v - mean) / ||v - mean|| along the last axis (re-centred once, see
    _statistics._refined_deviations)."""
    d = v - v.mean(axis=-1, keepdims=True)
    d -= d.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return d / np.linalg.norm(d, axis=-1, keepdims=True)


def _tail_pvalue(null: np.ndarray, observed: float, alternative: str, exact: bool) -> float:
    adj = 0 if exact else 1
    tol = _REL_TOL * abs(observed)
    total = null.shape[0] + adj
    less = (np.count_nonzero(null <= observed + tol) + adj) / total
    greater = (np.count_nonzero(null >= observed - tol) + adj) / total
    if alternative == "less":
        return float(less)
    if alternative == "greater":
        return float(greater)
    return float(min(1.0, 2 * min(less, greater)))


def _batches(n_resamples: int, n: int, batch):
    size = int(batch) if batch else max(1, _MAX_BATCH_ELEMENTS // max(n, 1))
    done = 0
    while done < n_resamples:
        b = min(size, n_resamples - done)
        yield b
        done += b


def resampling_pvalue(x: np.ndarray, y: np.ndarray, r: float, alternative: str,
                      method) -> float:
    """p-value of Pearson's r under a permutation or Monte-Carlo null.

    ``x`` and ``y`` are 1-D float64 without NaN, n >= 2; ``r`` is their
    statistic as computed by ``pearson``.
    """
    kind = check_method(method)
    n = x.shape[0]
    if math.isnan(r):
        return math.nan
    n_resamples = getattr(method, "n_resamples", 9999)
    batch = getattr(method, "batch", None)
    if kind == "permutation":
        ux, uy = _unit(x), _unit(y)
        if math.isinf(n_resamples) or math.factorial(n) <= n_resamples:
            perms = np.array(list(permutations(range(n))), dtype=np.intp)
            null = uy[perms] @ ux
            return _tail_pvalue(np.clip(null, -1, 1), r, alternative, exact=True)
        rng = _generator(method)
        n_resamples = int(n_resamples)
        parts = []
        for b in _batches(n_resamples, n, batch):
            idx = rng.permuted(np.tile(np.arange(n), (b, 1)), axis=1)
            parts.append(uy[idx] @ ux)
        return _tail_pvalue(np.clip(np.concatenate(parts), -1, 1), r, alternative,
                            exact=False)
    # Monte Carlo: x and y drawn independently from rvs (default: standard normal)
    rvs = getattr(method, "rvs", None)
    if rvs is None:
        rng = _generator(method)
        rvs = (rng.standard_normal, rng.standard_normal)
    elif callable(rvs):
        rvs = (rvs, rvs)
    n_resamples = int(n_resamples)
    parts = []
    for b in _batches(n_resamples, n, batch):
        ux = _unit(np.asarray(rvs[0](size=(b, n)), dtype=np.float64))
        uy = _unit(np.asarray(rvs[1](size=(b, n)), dtype=np.float64))
        parts.append(np.einsum("ij,ij->i", ux, uy))
    return _tail_pvalue(np.clip(np.concatenate(parts), -1, 1), r, alternative, exact=False)


def is_bootstrap_method(method) -> bool:
    return type(method).__name__ == "BootstrapMethod" or (
        hasattr(method, "n_resamples") and hasattr(method, "method"))


def bootstrap_interval(x: np.ndarray, y: np.ndarray, confidence_level: float,
                       alternative: str, method, n_threads=None,
                       statistic: str = "pearson") -> tuple[float, float]:
    """Paired-bootstrap interval of Pearson's r, Spearman's rho or Kendall's
    tau-b (``statistic``), from ``metrics.bootstrap_ci``.

    One-sided alternatives give ``(-1, high)`` or ``(low, 1)`` where the
    finite end is that of the two-sided interval at level ``2 cl - 1``.
    """
    from .bootstrap import bootstrap_ci

    ci = str(getattr(method, "method", "BCa")).lower()
    if ci not in ("bca", "percentile", "basic"):
        raise ValueError(f"method.method must be 'BCa', 'percentile' or 'basic', got {ci!r}")
    seed = int(_generator(method).integers(0, 2**63))
    level = confidence_level if alternative == "two-sided" else 2 * confidence_level - 1
    res = bootstrap_ci(x, y, method=statistic, n_resamples=int(getattr(method, "n_resamples", 9999)),
                       confidence_level=level, ci=ci, seed=seed, n_threads=n_threads)
    low, high = res.confidence_interval
    if alternative == "less":
        return -1.0, float(high)
    if alternative == "greater":
        return float(low), 1.0
    return float(low), float(high)
