"""Correlation per group and over all rows in one call (``metrics.grouped``)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from . import _corr
from ._pvalues import pearson_pvalue, t_pvalue
from ._results import (
    ALTERNATIVES,
    EPS75,
    METHODS,
    NAN_POLICIES,
    NAN_RAISE_MSG,
    CorrelationResult,
    SmallSampleWarning,
)
from ._pearson_result import PearsonResult, RankCorrelationResult
from ._statistics import (
    MIN_PAIRS_PER_THREAD,
    SMALL_N,
    has_nan,
    kendall_from_counts,
    moments_usable,
    near_constant,
    pearson_small,
    r_from_moments,
    work_threads,
)
from ._validation import (
    as_array,
    as_float_vector,
    check_choice,
    check_same_length,
    resolve_threads,
)
from .correlation import kendall, pearson, spearman

__all__ = ["GroupedResult", "grouped"]

# ----------------------------------------------------------------- grouped

_FUNCS = {"pearson": pearson, "spearman": spearman, "kendall": kendall}


def _prepare(x, y, alternative, nan_policy, order_only=False):
    x = as_float_vector(x, "x", order_only)
    y = as_float_vector(y, "y", order_only)
    check_same_length(x, y, "x", "y")
    check_choice(alternative, "alternative", ALTERNATIVES)
    check_choice(nan_policy, "nan_policy", NAN_POLICIES)
    return x, y


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
    g = as_array(groups, "groups")
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
                                    work_threads(nt, n, MIN_PAIRS_PER_THREAD // 2))
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
    ``pearson`` does, so their p-values agree to the last bit).  Spearman and
    Kendall over many small groups are ranked in one sort of all rows; a few
    big groups are scored one call each.

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
    check_choice(method, "method", METHODS)
    # the rank methods see integers beyond 2**53 as their exact order
    x, y = _prepare(x, y, alternative, nan_policy, method != "pearson")
    nt = resolve_threads(n_threads)
    codes, base, labels, n_slots = _factorize(groups, x.shape[0])
    if nan_policy == "raise" and has_nan(x, y):
        raise ValueError(NAN_RAISE_MSG)
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
                        and not np.any((np.sqrt(sxx) < EPS75 * np.abs(means_x))
                                       | (np.sqrt(syy) < EPS75 * np.abs(means_y))))
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
                    r = pearson_small(x[idx], y[idx], 2)
                else:
                    r = r_from_moments(sxx[k], syy[k], sxy[k])
                lab = label_of(s)
                results[lab] = PearsonResult(
                    r, pearson_pvalue(r, c, alternative), c, "pearson", alternative)
                sizes[lab] = c
    elif x.shape[0] <= RANKED_TOGETHER_MAX_MEAN * n_slots and not has_nan(x, y):
        ranked = _grouped_ranked(method, x, y, codes - base if base else codes, n_slots,
                                 alternative, nt)
        if ranked is not None:
            for s, (c, stat, p) in ranked.items():
                lab = label_of(s)
                results[lab] = RankCorrelationResult(
                    stat, p, c, method, alternative,
                    variant="b" if method == "kendall" else None)
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
                if method == "pearson":
                    results[lab] = PearsonResult(math.nan, math.nan, int(b - a), method,
                                                 alternative)
                else:
                    results[lab] = RankCorrelationResult(
                        math.nan, math.nan, int(b - a), method, alternative,
                        variant="b" if method == "kendall" else None)
                continue
            results[lab] = func(x[idx], y[idx], **kw)
    overall = None
    if method == "pearson" and results and easy and x.shape[0] > SMALL_N:
        overall = _pooled_pearson(mom[present], alternative)
    if overall is None:
        overall = func(x, y, **kw)
    return GroupedResult(results, overall, method, sizes)


# Spearman/Kendall: groups averaging at most this many rows are ranked in one
# sort of all rows (no per-group work in Python); bigger groups go one call
# each, where the radix and contingency-table kernels of a single call win.
RANKED_TOGETHER_MAX_MEAN = 4096


def _runs(*keys):
    """(run_starts, run_lengths) of equal consecutive tuples of ``keys``."""
    n = keys[0].shape[0]
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for k in keys:
        new[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(new)
    return starts, np.diff(np.append(starts, n))


def _tie_sums_by_slot(slot_of_run, lengths, n_slots):
    """Per slot: sum C(c, 2) (int), sum c(c-1)(c-2), sum c(c-1)(2c+5) over runs."""
    c = lengths.astype(np.float64)
    pairs = np.bincount(slot_of_run, weights=c * (c - 1) / 2, minlength=n_slots)
    s0 = np.bincount(slot_of_run, weights=c * (c - 1.0) * (c - 2), minlength=n_slots)
    s1 = np.bincount(slot_of_run, weights=c * (c - 1.0) * (2 * c + 5), minlength=n_slots)
    return np.rint(pairs).astype(np.int64), s0, s1


def _average_ranks_by_slot(v, slot, seg_start):
    """Average ranks (1-based) of v within each slot, in one sort of all rows."""
    order = np.lexsort((v, slot))
    vs, ss = v[order], slot[order]
    starts, lengths = _runs(ss, vs)
    rank = (starts - seg_start[ss[starts]]) + 0.5 * (lengths + 1)
    out = np.empty(v.shape[0])
    out[order] = np.repeat(rank, lengths)
    return out


def _grouped_ranked(method, x, y, slot, n_slots, alternative, nt):
    """Spearman or Kendall of every group from sorts of all rows at once.

    Returns {slot: (n, statistic, pvalue)}, or None for the cases left to the
    per-group calls (a group under 3 rows, a constant group for Spearman),
    whose warnings are those of the single-sample function.
    """
    counts = np.bincount(slot, minlength=n_slots)
    present = np.flatnonzero(counts)
    if counts[present].min() < 3:
        return None
    seg_start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    n = counts.astype(np.float64)
    if method == "spearman":
        rx = _average_ranks_by_slot(x, slot, seg_start)
        ry = _average_ranks_by_slot(y, slot, seg_start)
        mid = 0.5 * (n + 1)
        dx, dy = rx - mid[slot], ry - mid[slot]   # exact half-integers
        sxx = np.bincount(slot, weights=dx * dx, minlength=n_slots)[present]
        syy = np.bincount(slot, weights=dy * dy, minlength=n_slots)[present]
        sxy = np.bincount(slot, weights=dx * dy, minlength=n_slots)[present]
        if np.any(sxx == 0) or np.any(syy == 0):
            return None
        m = n[present]
        small = m <= SMALL_N
        with np.errstate(invalid="ignore", divide="ignore"):
            f = 1.0 / (m - 1)
            # np.corrcoef's operations (as spearman() on <= SMALL_N rows): the
            # sums of products of half-integer ranks are exact, so the result
            # is the same to the last bit
            r_small = (sxy * f / np.sqrt(sxx * f)) / np.sqrt(syy * f)
            r_large = sxy / (np.sqrt(sxx) * np.sqrt(syy))
        r = np.clip(np.where(small, r_small, r_large), -1.0, 1.0)
        p = np.array([t_pvalue(rv, int(c), alternative) for rv, c in zip(r, m)])
        return {int(s): (int(c), float(rv), float(pv))
                for s, c, rv, pv in zip(present, m, r, p)}
    # Kendall: dense ranks over all rows keep every within-group comparison
    xr = np.unique(x, return_inverse=True)[1].ravel()
    yr = np.unique(y, return_inverse=True)[1].ravel()
    order = np.lexsort((yr, xr, slot))
    ss, xs, ys = slot[order], xr[order], yr[order]
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.intp)
    dis = np.empty(n_slots, dtype=np.int64)
    _corr.segment_inversions(np.ascontiguousarray(ys, dtype=np.intc), offsets, dis, nt)
    st, ln = _runs(ss, xs)
    xtie, x0, x1 = _tie_sums_by_slot(ss[st], ln, n_slots)
    st, ln = _runs(ss, xs, ys)
    ntie = _tie_sums_by_slot(ss[st], ln, n_slots)[0]
    oy = np.lexsort((yr, slot))
    st, ln = _runs(slot[oy], yr[oy])
    ytie, y0, y1 = _tie_sums_by_slot(slot[oy][st], ln, n_slots)
    out = {}
    for s in present.tolist():
        c = int(counts[s])
        tau, p = kendall_from_counts(c, int(dis[s]), int(xtie[s]), int(ytie[s]),
                                      int(ntie[s]), x0[s], x1[s], y0[s], y1[s], alternative)
        out[s] = (c, tau, p)
    return out


def _pooled_pearson(mom, alternative):
    """Pearson over all rows from the groups' co-moments (Chan's merge), or None.

    Saves a second pass over the data; None when the pooled moments do not pass
    the same conditioning test as a single call's.
    """
    n, mx, my, sxx, syy, sxy = _corr.merge_moment_rows(np.ascontiguousarray(mom))
    if not moments_usable(sxx, syy, sxy) or near_constant(sxx, syy, mx, my):
        return None
    n = int(n)
    r = r_from_moments(sxx, syy, sxy)
    return PearsonResult(r, pearson_pvalue(r, n, alternative), n, "pearson", alternative)


