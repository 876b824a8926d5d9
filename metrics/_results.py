"""Result types and warnings of the correlation functions (scipy-compatible)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from scipy import special
from scipy import stats as _sps

from ._validation import check_confidence_level

ALTERNATIVES = ("two-sided", "less", "greater")
NAN_POLICIES = ("propagate", "omit", "raise")
METHODS = ("pearson", "spearman", "kendall")

ConstantInputWarning = _sps.ConstantInputWarning
NearConstantInputWarning = _sps.NearConstantInputWarning
try:  # scipy's own class, so filters written for scipy keep working
    from scipy.stats._axis_nan_policy import SmallSampleWarning
except ImportError:  # pragma: no cover - older/newer scipy layouts

    class SmallSampleWarning(RuntimeWarning):
        """Too few observations for the statistic."""


_CONSTANT_MSG = "An input array is constant; the correlation coefficient is not defined."
_NEAR_CONSTANT_MSG = (
    "An input array is nearly constant; the computed correlation coefficient "
    "may be inaccurate."
)
# scipy's wording first, so that code matching scipy's messages keeps working
_NAN_RAISE_MSG = "The input contains nan values: x or y has NaN (nan_policy='raise')"
_EPS75 = np.finfo(np.float64).eps ** 0.75

ConfidenceInterval = namedtuple("ConfidenceInterval", ["low", "high"])


# ----------------------------------------------------------------- results


class CorrelationResult(tuple):
    """A correlation coefficient and its p-value.

    A tuple ``(statistic, pvalue)``, as scipy's results are, so that
    ``r, p = metrics.spearman(x, y)``, ``res[0]``, ``np.asarray(res)`` and
    comparisons with tuples behave as with ``scipy.stats``; the other fields
    are read-only attributes.

    Attributes
    ----------
    statistic : float or numpy.ndarray
        The coefficient (NaN when undefined); an array for N-D input.
    pvalue : float or numpy.ndarray
        p-value of the test of no association for ``alternative``.
    n : int
        Number of pairs used (after ``nan_policy="omit"``).
    method : str
        ``"pearson"``, ``"spearman"`` or ``"kendall"``.
    alternative : str
        The alternative hypothesis of ``pvalue``.
    """

    _extra: tuple = ()

    def __new__(cls, statistic, pvalue, n, method, alternative="two-sided", **extra):
        self = tuple.__new__(cls, (statistic, pvalue))
        unknown = set(extra) - set(cls._extra)
        if unknown:
            raise TypeError(f"unexpected fields {sorted(unknown)}")
        d = self.__dict__
        d["n"], d["method"], d["alternative"] = n, method, alternative
        for k in cls._extra:
            d[k] = extra.get(k)
        return self

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __getnewargs_ex__(self):
        extra = {k: self.__dict__[k] for k in self._extra}
        return (self[0], self[1], self.n, self.method, self.alternative), extra

    @property
    def statistic(self):
        return self[0]

    @property
    def pvalue(self):
        return self[1]

    @property
    def correlation(self):
        """Alias of ``statistic``."""
        return self[0]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(statistic={self[0]!r}, pvalue={self[1]!r}, "
                f"n={self.n!r}, method={self.method!r}, alternative={self.alternative!r})")


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
        from ._resampling import bootstrap_interval, is_bootstrap_method

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


def _scalar(v):
    """A 0-d array as a float, an array as it is."""
    v = np.asarray(v, dtype=np.float64)
    return float(v) if v.ndim == 0 else v
