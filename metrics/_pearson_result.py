"""``PearsonResult`` and ``RankCorrelationResult``: correlations with Fisher's
or a bootstrap confidence interval.

Kept apart from ``_results`` because its bootstrap interval reaches up to
``metrics.bootstrap`` (through ``_resampling``), which itself builds on the
statistics and the result types below it; here it closes no import cycle.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ._resampling import bootstrap_interval, is_bootstrap_method
from ._results import ConfidenceInterval, CorrelationResult, as_scalar
from ._validation import check_confidence_level

__all__ = ["PearsonResult", "RankCorrelationResult"]


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
            return _bootstrap(self, cl, method)
        return _fisher_interval(self.statistic, self.n, self.alternative, cl,
                                lambda r, n: 1 / (n - 3), 3)


def _bootstrap(res, cl: float, method) -> ConfidenceInterval:
    """The bootstrap interval of ``res``, a result that keeps x and y."""
    if not is_bootstrap_method(method):
        raise ValueError("`method` must be an instance of BootstrapMethod (or an "
                         f"equivalent), or None; got {method!r}")
    if res.x is None:
        raise ValueError("this result keeps no data; a bootstrap interval needs "
                         f"the result of metrics.{res.method} on 1-D data")
    x = np.asarray(res.x, dtype=np.float64)
    y = np.asarray(res.y, dtype=np.float64)
    shape = np.shape(res.statistic)
    lo, hi = np.empty(shape), np.empty(shape)
    xs = x.reshape(-1, x.shape[-1])
    ys = y.reshape(-1, y.shape[-1])
    for k in range(xs.shape[0]):
        lo.flat[k], hi.flat[k] = bootstrap_interval(xs[k], ys[k], cl, res.alternative,
                                                    method, statistic=res.method)
    return ConfidenceInterval(as_scalar(lo), as_scalar(hi))


def _fisher_interval(r, n, alternative: str, cl: float, variance, min_n: int
                     ) -> ConfidenceInterval:
    """``tanh(atanh(r) -+ z sqrt(variance(r, n)))``; one-sided for a one-sided
    ``alternative``; ``(-1, 1)`` when ``n <= min_n``; NaN for a NaN ``r``."""
    n = float(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        rr = np.asarray(r, dtype=np.float64)
        zr = np.arctanh(rr)
        se = np.sqrt(variance(rr, np.float64(n)))
        if alternative == "two-sided":
            h = special.ndtri(0.5 + cl / 2)
            lo, hi = np.tanh(zr - h * se), np.tanh(zr + h * se)
        elif alternative == "less":
            h = special.ndtri(cl)
            lo, hi = np.full_like(zr, -1.0), np.tanh(zr + h * se)
        else:
            h = special.ndtri(cl)
            lo, hi = np.tanh(zr - h * se), np.full_like(zr, 1.0)
    if n <= min_n:
        lo, hi = np.full_like(zr, -1.0), np.full_like(zr, 1.0)
    return ConfidenceInterval(as_scalar(lo), as_scalar(hi))


def _spearman_variance(r, n):
    """Bonett & Wright (2000): var(atanh(rho)) ~ (1 + rho**2 / 2) / (n - 3)."""
    return (1 + r * r / 2) / (n - 3)


def _kendall_variance(r, n):
    """Fieller, Hartley & Pearson (1957): var(atanh(tau)) ~ 0.437 / (n - 4)."""
    return 0.437 / (n - 4) * np.ones_like(r)


class RankCorrelationResult(CorrelationResult):
    """Spearman's rho or Kendall's tau with ``confidence_interval``.

    A ``CorrelationResult`` (a tuple ``(statistic, pvalue)``; scipy's
    ``spearmanr``/``kendalltau`` results have no interval).  ``x`` and ``y``
    keep the data for a bootstrap interval (None for results that keep none,
    such as grouped fast paths and the matrix form); ``variant`` is Kendall's
    ``"b"`` or ``"c"`` (None for Spearman).
    """

    _extra = ("x", "y", "variant")

    def confidence_interval(self, confidence_level: float = 0.95,
                            method=None) -> ConfidenceInterval:
        """Confidence interval for Spearman's rho or Kendall's tau-b.

        Parameters
        ----------
        confidence_level : float in (0, 1)
        method : None or scipy.stats.BootstrapMethod
            ``None``: Fisher's transformation with the standard errors that
            Bonett & Wright (2000) recommend: ``atanh(r) -+ z * se`` mapped
            back with ``tanh``, where ``se = sqrt((1 + rho**2 / 2) / (n - 3))``
            for Spearman and ``se = sqrt(0.437 / (n - 4))`` for Kendall
            (Fieller, Hartley & Pearson 1957); ``(-1, 1)`` when ``n <= 3``
            (Spearman) or ``n <= 4`` (Kendall).  A ``BootstrapMethod`` (or an
            object with its attributes ``n_resamples``, ``method``, ``rng``):
            a paired bootstrap interval of the same statistic from
            ``metrics.bootstrap_ci``, seeded from that generator.  One-sided
            ``alternative`` results give ``(-1, high)`` or ``(low, 1)``.

        Returns
        -------
        ConfidenceInterval
            ``(low, high)``; NaN when the statistic is NaN.

        Raises
        ------
        ValueError
            Kendall's tau-c (no interval is defined for it here), a bad
            ``method``, or a bootstrap of a result that keeps no data.
        """
        cl = check_confidence_level(confidence_level)
        if self.method == "kendall" and self.variant == "c":
            raise ValueError("confidence_interval is defined for Kendall's tau-b only, "
                             "this result is tau-c (variant='c')")
        if method is not None:
            return _bootstrap(self, cl, method)
        if self.method == "spearman":
            return _fisher_interval(self.statistic, self.n, self.alternative, cl,
                                    _spearman_variance, 3)
        return _fisher_interval(self.statistic, self.n, self.alternative, cl,
                                _kendall_variance, 4)
