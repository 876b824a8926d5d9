"""Inter-annotator agreement and rating aggregation.

Every function takes a ``ratings`` matrix of shape (raters, items) -- one row
per annotator, one column per item -- with NaN marking a missing label.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from . import _agree
from ._validation import as_ratings, check_choice, check_positive_int, check_seed, resolve_threads

__all__ = ["SplitHalfResult", "krippendorff_alpha", "split_half", "trimmed_mean"]

LEVELS = ("interval", "nominal")


def krippendorff_alpha(ratings, *, level: str = "interval",
                       n_threads: int | None = None) -> float:
    """Krippendorff's alpha for a raters x items matrix (NaN = missing).

    Only pairable values count: items with at least two ratings.  With n
    pairable values, m_u ratings in item u,

    * interval: ``alpha = 1 - (n - 1) / n * sum_u m_u SS_u / (m_u - 1) / SS``
      where SS_u is the sum of squared deviations from item u's mean and SS the
      one over all pairable values -- the coincidence-matrix definition with
      the squared-difference metric, rewritten with per-item sums, so memory is
      O(items) whatever the number of distinct values;
    * nominal: ``alpha = 1 - D_o / D_e`` with
      ``D_o = (1/n) sum_u (m_u^2 - sum_c n_uc^2) / (m_u - 1)`` and
      ``D_e = (n^2 - sum_c n_c^2) / (n (n - 1))``.

    Parameters
    ----------
    ratings : array_like, shape (raters, items)
        Numbers, NaN for a missing label (no infinities).
    level : {"interval", "nominal"}
        Level of measurement (the difference metric).
    n_threads : int or None
        Threads for the per-item pass (None = all cores).

    Returns
    -------
    float
        Alpha; NaN with a RuntimeWarning when undefined (fewer than two
        pairable values, or no variation among them).
    """
    r = as_ratings(ratings)
    check_choice(level, "level", LEVELS)
    nt = resolve_threads(n_threads)
    N = r.shape[1]
    count = np.empty(N)
    if level == "interval":
        mean = np.empty(N)
        ss = np.empty(N)
        _agree.item_moments(r, count, mean, ss, nt)
        keep = count >= 2
        m, mu, s = count[keep], mean[keep], ss[keep]
        n = float(m.sum())
        if n < 2:
            return _undefined("fewer than two pairable values")
        grand = float(np.dot(m, mu)) / n
        ss_total = float(s.sum() + np.dot(m, (mu - grand) ** 2))
        if ss_total == 0:
            return _undefined("all pairable values are equal")
        within = float(np.sum(m * s / (m - 1)))
        return 1.0 - (n - 1) / n * within / ss_total
    same = np.empty(N)
    _agree.item_matches(r, count, same, nt)
    keep = count >= 2
    m = count[keep]
    n = float(m.sum())
    if n < 2:
        return _undefined("fewer than two pairable values")
    values = r[:, keep]
    values = values[~np.isnan(values)]
    _, n_c = np.unique(values, return_counts=True)
    n_c = n_c.astype(np.float64)
    d_e = (n * n - float(np.dot(n_c, n_c))) / (n * (n - 1))
    if d_e == 0:
        return _undefined("all pairable values are equal")
    d_o = float(np.sum((m * (m - 1) - same[keep]) / (m - 1))) / n
    return 1.0 - d_o / d_e


def _undefined(why: str) -> float:
    warnings.warn(RuntimeWarning(f"Krippendorff's alpha is undefined: {why}"), stacklevel=3)
    return math.nan


@dataclass(frozen=True)
class SplitHalfResult:
    """Result of ``split_half``.

    Attributes
    ----------
    statistic : float
        Mean over the splits of the (Spearman-Brown corrected) correlation.
    splits : numpy.ndarray
        The coefficient of every split.
    n_items : int
        Items used (those with at least two labels).
    spearman_brown : bool
    """

    statistic: float
    splits: np.ndarray
    n_items: int
    spearman_brown: bool


def split_half(ratings, *, n_splits: int = 100, seed: int | None = None,
               spearman_brown: bool = True) -> SplitHalfResult:
    """Split-half reliability of per-item mean ratings.

    Procedure, for each of ``n_splits`` splits (one ``numpy.random.Generator``
    seeded with ``seed`` drives all of them, so a seed fixes the result):

    1. keep the items with at least two labels;
    2. shuffle each item's labels (a uniformly random order of its non-missing
       labels); the first ``m // 2`` go to half A, the other ``m - m // 2`` to
       half B (so an odd label lands in B);
    3. average each half per item and take Pearson's r between the A means and
       the B means over the items;
    4. if ``spearman_brown``, correct to full length: ``2 r / (1 + r)``.

    The statistic is the mean of the per-split coefficients (splits where r
    is undefined are NaN and make the mean NaN).

    Parameters
    ----------
    ratings : array_like, shape (raters, items)
    n_splits : int >= 1
    seed : int or None
    spearman_brown : bool

    Returns
    -------
    SplitHalfResult
    """
    r = as_ratings(ratings)
    n_splits = check_positive_int(n_splits, "n_splits")
    seed = check_seed(seed)
    if not isinstance(spearman_brown, (bool, np.bool_)):
        raise TypeError(f"spearman_brown must be a bool, got {type(spearman_brown).__name__}")
    valid = ~np.isnan(r)
    m = valid.sum(axis=0)
    keep = m >= 2
    r, valid, m = r[:, keep], valid[:, keep], m[keep]
    n_items = int(keep.sum())
    if n_items < 2:
        raise ValueError(
            f"ratings must have at least 2 items with two or more labels, got {n_items}")
    half = m // 2
    filled = np.where(valid, r, 0.0)
    rng = np.random.default_rng(seed)
    out = np.empty(n_splits)
    for s in range(n_splits):
        keys = rng.random(r.shape)
        keys[~valid] = np.inf  # missing labels sort last
        pos = np.argsort(np.argsort(keys, axis=0, kind="stable"), axis=0, kind="stable")
        in_a = valid & (pos < half)
        in_b = valid & ~in_a
        mean_a = (filled * in_a).sum(axis=0) / half
        mean_b = (filled * in_b).sum(axis=0) / (m - half)
        with np.errstate(invalid="ignore", divide="ignore"):
            rab = _plain_pearson(mean_a, mean_b)
            if spearman_brown:
                rab = 2 * rab / (1 + rab)
        out[s] = rab
    return SplitHalfResult(float(np.mean(out)), out, n_items, bool(spearman_brown))


def _plain_pearson(a: np.ndarray, b: np.ndarray) -> float:
    da = a - a.mean()
    db = b - b.mean()
    den = math.sqrt(float(np.dot(da, da))) * math.sqrt(float(np.dot(db, db)))
    if den == 0:
        return math.nan
    return max(-1.0, min(1.0, float(np.dot(da, db)) / den))


def trimmed_mean(ratings) -> np.ndarray:
    """Per-item mean label, dropping one highest and one lowest label of every
    item with at least five labels.

    Parameters
    ----------
    ratings : array_like, shape (raters, items)
        NaN marks a missing label.

    Returns
    -------
    numpy.ndarray, shape (items,)
        NaN for an item without labels.
    """
    r = as_ratings(ratings)
    valid = ~np.isnan(r)
    m = valid.sum(axis=0)
    # sort each item's labels (NaN last) and average the kept slice
    s = np.sort(r, axis=0)
    idx = np.arange(r.shape[0])[:, None]
    trim = m >= 5
    lo = np.where(trim, 1, 0)
    hi = np.where(trim, m - 1, m)
    kept = (idx >= lo) & (idx < hi)
    total = np.where(kept, s, 0.0).sum(axis=0)
    cnt = hi - lo
    out = np.full(r.shape[1], np.nan)
    nz = cnt > 0
    out[nz] = total[nz] / cnt[nz]
    return out
