"""Plain-Python definitions of every metric, written for clarity, not speed.

The tests compare the library against these (and against scipy).
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np


# ----------------------------------------------------------------- correlation


def pearson(x, y) -> float:
    """Pearson r by its definition (two-pass, fsum); NaN when undefined."""
    n = len(x)
    mx = math.fsum(x) / n
    my = math.fsum(y) / n
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = math.fsum((a - mx) ** 2 for a in x)
    syy = math.fsum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return math.nan
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def _as_integers(v: np.ndarray) -> list[int]:
    """Integers X with v = X * 2**e for one common e (exact)."""
    mant, expo = np.frexp(v)
    m = (mant * 2.0**53).astype(np.int64)  # exact: |mant| < 1
    e = expo.astype(np.int64) - 53
    emin = int(e.min())
    shift = (e - emin).tolist()
    return [int(a) << s for a, s in zip(m.tolist(), shift)]


def exact_pearson(x, y) -> float:
    """Pearson r of float data from exact integer sums (one final rounding)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = x.shape[0]
    xi, yi = _as_integers(x), _as_integers(y)
    sx, sy = sum(xi), sum(yi)
    sxx = n * sum(a * a for a in xi) - sx * sx
    syy = n * sum(b * b for b in yi) - sy * sy
    sxy = n * sum(a * b for a, b in zip(xi, yi)) - sx * sy
    if sxx == 0 or syy == 0:
        return math.nan
    r2 = Fraction(sxy * sxy, sxx * syy)
    return math.copysign(math.sqrt(r2), sxy) if r2 < 1 else math.copysign(1.0, sxy)


def average_ranks(v) -> list[float]:
    """1-based ranks; tied values share the mean of the ranks they span."""
    out = []
    for a in v:
        below = sum(1 for b in v if b < a)
        equal = sum(1 for b in v if b == a)
        out.append(below + (equal + 1) / 2)
    return out


def spearman(x, y) -> float:
    return pearson(average_ranks(x), average_ranks(y))


def kendall_tau_b(x, y) -> float:
    """tau-b = (C - D) / sqrt((n0 - n1)(n0 - n2)) over all pairs."""
    c = d = tx = ty = 0
    for i, j in combinations(range(len(x)), 2):
        sx = (x[i] > x[j]) - (x[i] < x[j])
        sy = (y[i] > y[j]) - (y[i] < y[j])
        if sx == 0:
            tx += 1
        if sy == 0:
            ty += 1
        if sx * sy > 0:
            c += 1
        elif sx * sy < 0:
            d += 1
    n0 = len(x) * (len(x) - 1) // 2
    if n0 == tx or n0 == ty:
        return math.nan
    return (c - d) / math.sqrt((n0 - tx) * (n0 - ty))


def kendall_exact_two_sided(x, y) -> float:
    """Exact two-sided p-value without ties, by enumerating all permutations' inversion
    counts with a dynamic program (the null distribution of the number of discordant
    pairs)."""
    n = len(x)
    order = sorted(range(n), key=lambda i: x[i])
    ys = [y[i] for i in order]
    dis = sum(1 for i, j in combinations(range(n), 2) if ys[i] > ys[j])
    # counts[k] = permutations of n with k inversions
    counts = [1]
    for m in range(2, n + 1):
        new = [0] * (len(counts) + m - 1)
        for k, c in enumerate(counts):
            for extra in range(m):
                new[k + extra] += c
        counts = new
    total = math.factorial(n)
    tot = n * (n - 1) // 2
    lo = min(dis, tot - dis)
    tail = Fraction(sum(counts[: lo + 1]), total)
    return float(min(Fraction(1), 2 * tail))


# ----------------------------------------------------------------- relation F1


def relation_scores(gold: dict, pred: dict, subset=None, na: int = 0):
    """(precision, recall, f1, n_sys, n_r, n_std) by the CCKS definition."""
    items = list(gold) if subset is None else list(dict.fromkeys(subset))
    n_sys = n_r = n_std = 0
    for item in items:
        g = {r for r in gold[item] if r != na}
        p = {r for r in pred.get(item, ()) if r != na}
        n_sys += len(p)
        n_std += len(g)
        n_r += len(p & g)
    prec = n_r / n_sys if n_sys else 0.0
    rec = n_r / n_std if n_std else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return prec, rec, f1, n_sys, n_r, n_std


def per_relation_counts(gold: dict, pred: dict, na: int = 0) -> dict:
    out = {}
    for item in gold:
        g = {r for r in gold[item] if r != na}
        p = {r for r in pred.get(item, ()) if r != na}
        for r in g | p:
            s, c, t = out.get(r, (0, 0, 0))
            out[r] = (s + (r in p), c + (r in p and r in g), t + (r in g))
    return out


def upper_bound_choices(gold: dict, preds: list, na: int = 0) -> dict:
    """item -> chosen prediction set (most correct, then fewest labels, then first)."""
    chosen = {}
    for item, g in gold.items():
        g = {r for r in g if r != na}
        best = None
        for p in preds:
            s = {r for r in p.get(item, ()) if r != na}
            key = (-len(s & g), len(s))
            if best is None or key < best[0]:
                best = (key, s)
        chosen[item] = best[1]
    return chosen


def read_two_column(path) -> dict:
    """Plain reader of ``id<TAB>relationIDs`` files."""
    out = {}
    with open(path, encoding="utf-8-sig") as fh:
        for line in fh:
            line = line.strip()
            if line:
                item, rels = line.split("\t")
                out[item] = [int(v) for v in rels.split()]
    return out


def read_bag_file(path) -> dict:
    out = {}
    with open(path, encoding="utf-8-sig") as fh:
        for line in fh:
            line = line.strip()
            if line:
                parts = line.split("\t")
                out[parts[0]] = [int(v) for v in parts[4].split()]
    return out


# ----------------------------------------------------------------- agreement


def krippendorff_alpha(ratings, level: str = "interval") -> float:
    """Alpha from the coincidence matrix (raters x items, None/NaN = missing)."""
    units = []
    for col in zip(*ratings):
        vals = [v for v in col if v is not None and not (isinstance(v, float) and math.isnan(v))]
        if len(vals) >= 2:
            units.append(vals)
    values = sorted({v for u in units for v in u})
    o = {(c, k): 0.0 for c in values for k in values}
    for u in units:
        m = len(u)
        for i in range(m):
            for j in range(m):
                if i != j:
                    o[(u[i], u[j])] += 1.0 / (m - 1)
    n_c = {c: sum(o[(c, k)] for k in values) for c in values}
    n = sum(n_c.values())

    def delta(c, k):
        if level == "nominal":
            return 0.0 if c == k else 1.0
        return (c - k) ** 2

    d_o = sum(o[(c, k)] * delta(c, k) for c in values for k in values) / n
    d_e = sum(n_c[c] * n_c[k] * delta(c, k) for c in values for k in values) / (n * (n - 1))
    return 1.0 - d_o / d_e


def trimmed_mean(ratings) -> list[float]:
    out = []
    for col in zip(*ratings):
        vals = sorted(v for v in col if not math.isnan(v))
        if len(vals) >= 5:
            vals = vals[1:-1]
        out.append(math.fsum(vals) / len(vals) if vals else math.nan)
    return out
