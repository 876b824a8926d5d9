"""p-values of the correlation tests (the null distributions, as scipy.stats)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy import special

from ._compat import betaincc


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
    rs = np.asarray(rs, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = rs * np.sqrt(np.clip(dof / ((rs + 1.0) * (1.0 - rs)), 0, None))
        if alternative == "less":
            p = special.stdtr(dof, t)
        elif alternative == "greater":
            p = special.stdtr(dof, -t)
        else:
            p = 2 * special.stdtr(dof, -np.abs(t))
    return float(p) if p.ndim == 0 else p


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


