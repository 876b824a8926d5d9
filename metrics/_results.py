"""Result types and warnings of the correlation functions (scipy-compatible).

``PearsonResult`` (which adds confidence intervals) is in ``_pearson_result``.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from scipy import stats as _sps


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


CONSTANT_MSG = "An input array is constant; the correlation coefficient is not defined."
NEAR_CONSTANT_MSG = (
    "An input array is nearly constant; the computed correlation coefficient "
    "may be inaccurate."
)
# scipy's wording first, so that code matching scipy's messages keeps working
NAN_RAISE_MSG = "The input contains nan values: x or y has NaN (nan_policy='raise')"
EPS75 = np.finfo(np.float64).eps ** 0.75

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


def as_scalar(v):
    """A 0-d array as a float, an array as it is."""
    v = np.asarray(v, dtype=np.float64)
    return float(v) if v.ndim == 0 else v
