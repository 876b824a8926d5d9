"""Inter-annotator agreement and rating aggregation.

Every function takes a ``ratings`` matrix of shape (raters, items) -- one row
per annotator, one column per item -- with NaN marking a missing label;
``krippendorff_alpha`` also takes the same data as a units x values matrix of
counts (``value_counts``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from . import _agree
from ._chunks import run_chunks
from ._validation import as_array, as_ratings, check_choice, check_positive_int, check_seed, resolve_threads

__all__ = ["SplitHalfResult", "krippendorff_alpha", "split_half", "trimmed_mean"]

LEVELS = ("nominal", "ordinal", "interval", "ratio")


def krippendorff_alpha(ratings=None, *, value_counts=None, level: str = "interval",
                       value_domain=None, n_threads: int | None = None) -> float:
    """Krippendorff's alpha for reliability data with missing values.

    Give either ``ratings`` (raters x units, NaN = missing) or ``value_counts``
    (units x values: how many raters gave unit u the value c), as the
    ``krippendorff`` package accepts them.  Only pairable values count (units
    with at least two values).  With n pairable values, m_u of them in unit u,
    n_c of them equal to value c, and the metric delta of the level,

    ``alpha = 1 - (n - 1) * sum_u D_u / sum_{c,k} n_c n_k delta(c, k)``,
    ``D_u = sum_{i != j in u} delta(v_i, v_j) / (m_u - 1)``

    -- the coincidence-matrix definition, computed from per-unit sums so that
    memory is O(units + distinct values), never values x values:

    * nominal: ``delta = 0`` for equal values, 1 otherwise;
    * ordinal: ``delta(c, k) = (M_c - M_k)**2`` with the mid-rank
      ``M_c = sum_{g < c} n_g + n_c / 2`` in the order of the values (of
      ``value_domain`` when given);
    * interval: ``delta = (c - k)**2``;
    * ratio: ``delta = ((c - k) / (c + k))**2`` (values must be >= 0; 0 when
      both are 0).  Its denominator costs O(V**2) time for V distinct values.

    Parameters
    ----------
    ratings : array_like, shape (raters, units), optional
        Numbers with NaN (or None) for a missing value.  For the nominal and
        ordinal levels the values may also be labels (str or other hashable
        objects; None, NaN and -- as numpy turns NaN into it in string
        arrays -- the string ``"nan"`` mark a missing value).
    value_counts : array_like, shape (units, values), optional
        Non-negative integer counts; column c counts value ``value_domain[c]``
        (default: ``0, 1, ..., values - 1``).
    level : {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement (the difference metric).
    value_domain : sequence, optional
        The possible values, in order: every value in ``ratings`` must be one
        of them (ValueError otherwise).  It sets the order of the ordinal
        level (required there for labels); with ``value_counts`` it names the
        columns.
    n_threads : int or None
        Threads for the per-unit pass (None = all cores).  The result is the
        same for every thread count.

    Returns
    -------
    float
        Alpha; NaN with a RuntimeWarning when undefined (fewer than two
        pairable values, or no disagreement possible among them).
    """
    check_choice(level, "level", LEVELS)
    nt = resolve_threads(n_threads)
    try:
        return _alpha(ratings, value_counts, level, value_domain, nt)
    except _Undefined as why:
        warnings.warn(RuntimeWarning(f"Krippendorff's alpha is undefined: {why}"), stacklevel=2)
        return math.nan


class _Undefined(Exception):
    """Alpha has no value for these data (the message says why)."""


def _alpha(ratings, value_counts, level, value_domain, nt) -> float:
    if (ratings is None) == (value_counts is None):
        raise ValueError("give exactly one of ratings and value_counts")
    if value_counts is not None:
        counts = _as_value_counts(value_counts)
        domain = _domain_for_counts(value_domain, counts.shape[1], level)
        if level == "interval" and domain is not None:
            e = _scale_exponent(domain)
            domain = np.ldexp(domain, -e) if e else domain
        return _alpha_from_counts(counts, domain, level, nt)
    labels = _label_matrix(ratings)
    if labels is not None:
        codes, domain = _label_codes(labels, value_domain, level)
        remap = np.arange(max(len(domain), 1), dtype=np.int32)
        return _alpha_from_codes(codes, remap, None, len(domain), level, nt)
    r = as_ratings(ratings)
    domain = None if value_domain is None else _numeric_domain(value_domain)
    if level == "ratio":
        for what, v in (("ratings", r), ("value_domain", domain)):
            negative = None if v is None else v[v < 0]  # NaN compares False
            if negative is not None and negative.size:
                raise ValueError(f"{what} must be >= 0 for the ratio level, got "
                                 f"{float(negative.min())!r}")
    if level == "interval":
        # alpha is the same for any scale; a power of two (exact) keeps the
        # squared differences inside float64 for values from ~1e-300 to 1e308
        e = _scale_exponent(r, domain)
        r = np.ldexp(r, -e) if e else r
        domain = np.ldexp(domain, -e) if e and domain is not None else domain
    if level == "interval" and domain is None:
        return _interval_alpha(r, nt)
    codes, distinct, ordered = _value_codes(r)
    if domain is None:
        order = np.arange(len(distinct)) if ordered else np.argsort(distinct)
        remap = np.empty(max(len(distinct), 1), dtype=np.int32)
        remap[order] = np.arange(len(distinct), dtype=np.int32)
        x = distinct[order]
    else:
        x = domain
        remap = _domain_positions(distinct, x)
    return _alpha_from_codes(codes, remap, x, len(x), level, nt)


def _scale_exponent(*arrays) -> int:
    """e such that 2**-e * max|v| over the arrays (NaN skipped) is in [0.5, 1),
    or 0 when max|v| is in [2**-400, 2**400] (squares and their sums are safe
    there, and ordinary data are then neither copied nor touched) or when the
    arrays are all zero, empty or NaN."""
    m = 0.0
    for a in arrays:
        if a is not None and a.size:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN
                v = max(float(np.nanmax(a)), -float(np.nanmin(a)))  # no |a| copy
            if v > m:
                m = v
    if not (m > 0 and math.isfinite(m)) or 2.0**-400 <= m <= 2.0**400:
        return 0
    return math.frexp(m)[1]


# ----------------------------------------------------------------- routes

HASH_LIMIT = 1 << 16  # distinct values coded through a hash table; more: sorted


def _value_codes(r: np.ndarray):
    """(raters x units int32 codes, distinct values, whether they are sorted).

    Few distinct values (Likert scales, scores in steps): one pass through a
    small hash table.  Many: a sort of the values (``numpy.unique``).
    """
    codes = np.empty(r.shape, dtype=np.int32)
    distinct = _agree.encode_values(r, codes, HASH_LIMIT)
    if distinct is not None:
        return codes, distinct, False
    present = ~np.isnan(r)
    distinct, inverse = np.unique(r[present], return_inverse=True)
    codes.fill(-1)
    codes[present] = inverse
    return codes, distinct, True



def _interval_alpha(r: np.ndarray, nt: int) -> float:
    """Interval alpha from per-unit moments (no value codes needed).

    Every unit's mean and sum of squares are taken about one of its own
    values, and the between-unit spread about the rough grand mean, so that
    values on a large common offset keep all their significant digits.
    """
    N = r.shape[1]
    count = np.empty(N)
    anchor = np.empty(N)
    dev = np.empty(N)
    ss = np.empty(N)
    _agree.item_moments(r, count, anchor, dev, ss, nt)
    keep = count >= 2
    m, a, d, s = count[keep], anchor[keep], dev[keep], ss[keep]
    n = float(m.sum())
    if n < 2:
        return _undefined("fewer than two pairable values")
    center = _dot(m, a) / n + _dot(m, d) / n
    e = (a - center) + d          # unit means, relative to the rough center
    grand = _dot(m, e) / n
    ss_total = float(s.sum() + _dot(m, (e - grand) ** 2))
    if ss_total == 0:
        return _undefined("all pairable values are equal")
    within = float(np.sum(m * s / (m - 1)))
    return 1.0 - (n - 1) / n * within / ss_total


def _alpha_from_codes(codes, remap, x, n_values, level, nt) -> float:
    """Alpha from a raters x units matrix of value codes (-1 = missing)."""
    N = codes.shape[1]
    if n_values == 0:
        return _undefined("fewer than two pairable values")
    count = (codes >= 0).sum(axis=0).astype(np.float64)
    totals = np.zeros(n_values, dtype=np.int64)
    _agree.value_totals(codes, remap, count, totals)
    t = _metric_values(totals, x, level)
    if t is None:
        return _undefined_for(totals)
    per_unit = np.empty(N)
    _agree.unit_disagreement_codes(codes, remap, t, _agree.LEVEL_CODES[level], count,
                                   per_unit, nt)
    return _combine(per_unit, totals, t, level, nt)


def _alpha_from_counts(counts, domain, level, nt) -> float:
    N, V = counts.shape
    total = counts.sum(axis=1)
    totals = counts[total >= 2].sum(axis=0).astype(np.int64)
    x = None if level in ("nominal", "ordinal") else domain
    t = _metric_values(totals, x, level)
    if t is None:
        return _undefined_for(totals)
    per_unit = np.empty(N)
    _agree.unit_disagreement_counts(counts, t, _agree.LEVEL_CODES[level], total, per_unit, nt)
    return _combine(per_unit, totals, t, level, nt)


def _metric_values(totals, x, level):
    """The numbers the metric works on, per value code: mid-ranks for the
    ordinal level, the values for interval and ratio (None when alpha is
    undefined)."""
    n = int(totals.sum())
    if n < 2 or np.count_nonzero(totals) < 2:
        return None
    if level == "ordinal":
        below = np.cumsum(totals) - totals
        return below + totals / 2.0  # exact: integers and halves
    if level == "nominal":
        return np.zeros(len(totals))
    return np.ascontiguousarray(x, dtype=np.float64)


def _combine(per_unit, totals, t, level, nt) -> float:
    """alpha = 1 - (n - 1) * sum_u D_u / E."""
    n = int(totals.sum())
    used = totals > 0
    nc = totals[used].astype(np.float64)
    tc = t[used]
    if level == "nominal":
        expected = float(n * n - int(np.sum(totals * totals)))
    elif level == "ratio":
        row = np.empty(len(tc))
        # V^2 work: a parallel region pays off only for thousands of values;
        # rows go in short calls so that Ctrl-C stops a long one
        threads = nt if len(tc) >= 2048 else 1

        def run(first, stop):
            _agree.ratio_expected(tc, nc, row[first:stop], threads, first)

        run_chunks(run, len(tc), 64 * threads)
        expected = _dot(nc, row)
    else:
        # 2 n sum_c n_c (t_c - mean)^2, about a value near the center
        anchor = tc[np.searchsorted(np.cumsum(nc), n / 2.0)] if level == "interval" else 0.0
        dev = tc - anchor
        mean = _dot(nc, dev) / n
        expected = 2.0 * n * _dot(nc, (dev - mean) ** 2)
    if expected == 0:
        return _undefined("no disagreement is possible among the pairable values")
    return 1.0 - (n - 1) * float(np.sum(per_unit)) / expected


def _dot(a, b) -> float:
    """sum(a * b) with numpy's pairwise summation (BLAS dot may split the sum
    over its own threads, so its rounding could vary from run to run)."""
    return float(np.sum(np.multiply(a, b, dtype=np.float64)))


def _undefined_for(totals) -> float:
    if int(totals.sum()) < 2:
        return _undefined("fewer than two pairable values")
    return _undefined("all pairable values are equal")


def _undefined(why: str) -> float:
    raise _Undefined(why)


# ----------------------------------------------------------------- input


def _as_value_counts(value_counts) -> np.ndarray:
    name = "value_counts"
    if isinstance(value_counts, (str, bytes, dict, set)):
        raise TypeError(f"{name} must be a 2-D array (units x values) of counts, got "
                        f"{type(value_counts).__name__}")
    try:
        arr = np.asarray(value_counts)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 2-D array of counts ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (units x values), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (counts), found NaN or infinity")
    if (arr < 0).any():
        raise ValueError(f"{name} must be non-negative counts, found {arr.min()!r}")
    if (arr != np.floor(arr)).any() or arr.max() >= 2.0**53:
        raise ValueError(f"{name} must hold whole numbers (counts)")
    return arr


def _check_unique(domain, name="value_domain"):
    try:
        distinct = len(set(domain.tolist()))
    except TypeError:
        raise TypeError(f"{name} must hold hashable values") from None
    if distinct != len(domain):
        raise ValueError(f"{name} must not repeat a value")


def _numeric_domain(value_domain) -> np.ndarray:
    if isinstance(value_domain, (str, bytes)):
        raise TypeError("value_domain must be a sequence of values, got "
                        f"{type(value_domain).__name__}")
    arr = as_array(value_domain, "value_domain")
    if arr.ndim != 1:
        raise ValueError(f"value_domain must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise ValueError("value_domain must hold numbers for numeric ratings, got dtype "
                         f"{arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        raise ValueError("value_domain must hold finite numbers")
    arr = np.where(arr == 0, 0.0, arr)  # -0.0 is 0.0
    _check_unique(arr)
    return arr


def _domain_positions(distinct: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """remap[code of a distinct value] = its position in the domain."""
    remap = np.zeros(max(len(distinct), 1), dtype=np.int32)
    if len(distinct) == 0:
        return remap
    if len(domain) == 0:
        raise ValueError(f"ratings contain {float(distinct[0])!r}, which is not in value_domain")
    order = np.argsort(domain)
    sorted_domain = domain[order]
    pos = np.minimum(np.searchsorted(sorted_domain, distinct), len(domain) - 1)
    outside = sorted_domain[pos] != distinct
    if outside.any():
        raise ValueError(f"ratings contain {float(distinct[np.argmax(outside)])!r}, which is "
                         "not in value_domain")
    remap[: len(distinct)] = order[pos]
    return remap


def _domain_for_counts(value_domain, n_columns: int, level: str) -> np.ndarray | None:
    if value_domain is None:
        return np.arange(n_columns, dtype=np.float64)
    if isinstance(value_domain, (str, bytes)):
        raise TypeError("value_domain must be a sequence of values, got "
                        f"{type(value_domain).__name__}")
    arr = as_array(value_domain, "value_domain",
                   dtype=object if level in ("nominal", "ordinal") else None)
    if arr.ndim != 1 or len(arr) != n_columns:
        raise ValueError(f"value_domain must have one value per column of value_counts "
                         f"({n_columns}), got shape {arr.shape}")
    if level in ("nominal", "ordinal"):
        _check_unique(arr)
        return None
    dom = _numeric_domain(arr)
    if level == "ratio" and dom.min() < 0:
        raise ValueError(f"value_domain must be >= 0 for the ratio level, got {dom.min()!r}")
    return dom


def _label_matrix(ratings):
    """The ratings as an object/str array when they are labels, else None
    (numbers, or anything ``as_ratings`` should judge)."""
    if ratings is None or isinstance(ratings, (str, bytes, dict, set, frozenset)):
        return None
    try:
        arr = np.asarray(ratings)
    except (TypeError, ValueError):  # ragged nested lists: as_ratings reports them
        return None
    if arr.dtype.kind in "US":
        return arr
    if arr.dtype == object and any(isinstance(v, (str, bytes)) for v in arr.ravel()):
        return arr
    return None


def _is_missing_label(v, strings: bool) -> bool:
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return strings and v == "nan"


def _label_codes(labels: np.ndarray, value_domain, level: str):
    """(raters x units int32 codes, domain list) for ratings given as labels."""
    if labels.ndim != 2:
        raise ValueError(f"ratings must be 2-D (raters x units), got shape {labels.shape}")
    if labels.shape[0] == 0 or labels.shape[1] == 0:
        raise ValueError(f"ratings must not be empty, got shape {labels.shape}")
    if level in ("interval", "ratio"):
        raise TypeError(f"the {level} level needs numeric ratings, got labels such as "
                        f"{next(v for v in labels.ravel() if isinstance(v, (str, bytes)))!r}")
    strings = labels.dtype.kind in "US"
    flat = labels.ravel().tolist()  # Python objects (str, not numpy.str_)
    present = [not _is_missing_label(v, strings) for v in flat]
    if value_domain is None:
        if level == "ordinal":
            raise ValueError("the ordinal level on labels needs value_domain (their order)")
        seen: dict = {}
        for v, ok in zip(flat, present):
            if ok:
                seen.setdefault(v, len(seen))
        domain = list(seen)
    else:
        if isinstance(value_domain, (str, bytes)):
            raise TypeError("value_domain must be a sequence of values, got "
                            f"{type(value_domain).__name__}")
        domain = list(value_domain)
        if len(set(domain)) != len(domain):
            raise ValueError("value_domain must not repeat a value")
    position = {v: k for k, v in enumerate(domain)}
    codes = np.full(len(flat), -1, dtype=np.int32)
    for k, (v, ok) in enumerate(zip(flat, present)):
        if ok:
            p = position.get(v)
            if p is None:
                raise ValueError(f"ratings contain {v!r}, which is not in value_domain")
            codes[k] = p
    return codes.reshape(labels.shape), domain


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
    is undefined, or where r = -1 and the Spearman-Brown correction is, are
    NaN and make the mean NaN).

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
            if spearman_brown:  # undefined (a pole) at r = -1
                rab = 2 * rab / (1 + rab) if rab != -1 else math.nan
        out[s] = rab
    return SplitHalfResult(float(np.mean(out)), out, n_items, bool(spearman_brown))


def _plain_pearson(a: np.ndarray, b: np.ndarray) -> float:
    da = a - a.mean()
    db = b - b.mean()
    den = math.sqrt(_dot(da, da)) * math.sqrt(_dot(db, db))
    if den == 0:
        return math.nan
    return max(-1.0, min(1.0, _dot(da, db) / den))


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
