"""p-values of the correlation tests (the null distributions, as scipy.stats)."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ._compat import betaincc


def pearson_pvalue(r: float, n: int, alternative: str) -> float:
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


def t_pvalue(rs: float, n: int, alternative: str) -> float:
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
