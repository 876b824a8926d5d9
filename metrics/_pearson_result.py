"""``PearsonResult``: Pearson's r with Fisher's or a bootstrap confidence interval.

Kept apart from ``_results`` because its bootstrap interval reaches up to
``metrics.bootstrap`` (through ``_resampling``), which itself builds on the
statistics and the result types below it; here it closes no import cycle.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ._resampling import bootstrap_interval, is_bootstrap_method
from ._results import ConfidenceInterval, CorrelationResult, _scalar
from ._validation import check_confidence_level

__all__ = ["PearsonResult"]


class PearsonResult(CorrelationResult):
    """Pearson's r with ``confidence_interval`` (Fisher's z or a bootstrap).

    ``x`` and ``y`` keep the data (observations along the last axis) for a
    bootstrap interval.
    """

    _extra = ("x", "y")

    def confidence_interval(self, confidence_level: float = 0.95,
                            method=None) -> ConfidenceInterval:
        """Confidence interval for r.

        Without ``method``: Fisher's transformation, ``atanh(r) ± z /
        sqrt(n - 3)`` mapped back with ``tanh``; one-sided for a one-sided
        ``alternative``; ``(-1, 1)`` when ``n <= 3`` (exactly as
        ``scipy.stats.pearsonr(...).confidence_interval()``).  With a
        ``scipy.stats.BootstrapMethod`` (or an object with its attributes
        ``n_resamples``, ``method``, ``rng``): a paired bootstrap interval
        from ``metrics.bootstrap_ci`` seeded from that generator.
        """
        cl = check_confidence_level(confidence_level)
        if method is not None:
            return self._bootstrap_interval(cl, method)
        r, n = self.statistic, float(self.n)
        with np.errstate(divide="ignore", invalid="ignore"):
            zr = np.arctanh(np.asarray(r, dtype=np.float64))
            se = np.sqrt(1 / (np.float64(n) - 3))
            if self.alternative == "two-sided":
                h = special.ndtri(0.5 + cl / 2)
                lo, hi = np.tanh(zr - h * se), np.tanh(zr + h * se)
            elif self.alternative == "less":
                h = special.ndtri(cl)
                lo, hi = np.full_like(zr, -1.0), np.tanh(zr + h * se)
            else:
                h = special.ndtri(cl)
                lo, hi = np.tanh(zr - h * se), np.full_like(zr, 1.0)
        if n <= 3:
            lo, hi = np.full_like(zr, -1.0), np.full_like(zr, 1.0)
        return ConfidenceInterval(_scalar(lo), _scalar(hi))

    def _bootstrap_interval(self, cl: float, method) -> ConfidenceInterval:
        if not is_bootstrap_method(method):
            raise ValueError("`method` must be an instance of BootstrapMethod (or an "
                             f"equivalent), or None; got {method!r}")
        if self.x is None:
            raise ValueError("this result keeps no data; a bootstrap interval needs "
                             "the result of metrics.pearson")
        x = np.asarray(self.x, dtype=np.float64)
        y = np.asarray(self.y, dtype=np.float64)
        shape = np.shape(self.statistic)
        lo, hi = np.empty(shape), np.empty(shape)
        xs = x.reshape(-1, x.shape[-1])
        ys = y.reshape(-1, y.shape[-1])
        for k in range(xs.shape[0]):
            lo.flat[k], hi.flat[k] = bootstrap_interval(xs[k], ys[k], cl, self.alternative,
                                                        method)
        return ConfidenceInterval(_scalar(lo), _scalar(hi))
