"""Krippendorff's alpha by its coincidence-matrix definition, in exact rationals.

Written for clarity, not speed: O(values^2) memory.  Every float input is
turned into the Fraction it exactly represents, so the result is the exact
alpha of the data as stored; tests compare the library's float against it.
"""

from __future__ import annotations

import math
from fractions import Fraction


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def units_from_ratings(ratings) -> list[list]:
    """Columns of a raters x units nested list, without missing values."""
    return [[v for v in col if not _missing(v)] for col in zip(*ratings)]


def units_from_counts(value_counts, domain) -> list[list]:
    return [[domain[c] for c, k in enumerate(row) for _ in range(int(k))]
            for row in value_counts]


def alpha(units, level: str, order=None) -> Fraction | None:
    """Exact alpha of units (lists of values); None when undefined.

    ``order`` lists the values in ordinal order (default: sorted).
    """
    pairable = [u for u in units if len(u) >= 2]
    key = (lambda v: v) if level in ("nominal", "ordinal") else (lambda v: Fraction(v))
    values = sorted({key(v) for u in pairable for v in u}, key=(
        (lambda v: order.index(v)) if order is not None else None))
    if level == "ordinal" and order is not None:
        values = [v for v in order if v in set(values)]
    # coincidence matrix o[c][k] = sum_u (number of ordered pairs (c, k) in u) / (m_u - 1)
    o = {(c, k): Fraction(0) for c in values for k in values}
    for u in pairable:
        m = len(u)
        vals = [key(v) for v in u]
        for i in range(m):
            for j in range(m):
                if i != j:
                    o[(vals[i], vals[j])] += Fraction(1, m - 1)
    n_c = {c: sum(o[(c, k)] for k in values) for c in values}
    n = sum(n_c.values())
    if n < 2:
        return None

    def delta(c, k):
        if level == "nominal":
            return Fraction(0 if c == k else 1)
        if level == "interval":
            return (c - k) ** 2
        if level == "ratio":
            return Fraction(0) if c + k == 0 else ((c - k) / (c + k)) ** 2
        lo, hi = sorted((values.index(c), values.index(k)))
        between = sum(n_c[values[g]] for g in range(lo, hi + 1))
        return (between - (n_c[c] + n_c[k]) / 2) ** 2

    d_o = sum(o[(c, k)] * delta(c, k) for c in values for k in values)
    d_e = sum(n_c[c] * n_c[k] * delta(c, k) for c in values for k in values)
    if d_e == 0:
        return None
    return 1 - (n - 1) * d_o / d_e


def interval_alpha_moments(units) -> Fraction | None:
    """Exact interval alpha through per-unit sums of squares (the same
    definition, rewritten; O(values) so it scales to thousands of units):
    ``1 - (n - 1) / n * sum_u m_u SS_u / (m_u - 1) / SS``."""
    pairable = [[Fraction(v) for v in u] for u in units if len(u) >= 2]
    n = sum(len(u) for u in pairable)
    if n < 2:
        return None
    allv = [v for u in pairable for v in u]
    grand = sum(allv) / n
    ss = sum((v - grand) ** 2 for v in allv)
    if ss == 0:
        return None
    within = Fraction(0)
    for u in pairable:
        mu = sum(u) / len(u)
        within += len(u) * sum((v - mu) ** 2 for v in u) / (len(u) - 1)
    return 1 - Fraction(n - 1, n) * within / ss
