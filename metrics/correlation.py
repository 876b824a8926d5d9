"""Pearson, Spearman and Kendall correlation, drop-in for ``scipy.stats``.

``pearson``, ``spearman`` and ``kendall`` take the arguments of
``scipy.stats.pearsonr``, ``spearmanr`` and ``kendalltau`` (``axis``,
``alternative``, ``nan_policy``, ``method``, ``variant``) and return results
that unpack like scipy's (``r, p = pearson(x, y)``).  On 1-D input they give
scipy's statistic and p-value to 1e-12, edge cases included, computed by
parallel kernels (see ``_statistics``); along an axis they apply the same 1-D
computation to every slice; ``spearman`` of a 2-D array gives the correlation
and p-value matrices, as ``spearmanr`` does.

``grouped`` (per group + overall) lives in ``metrics.grouped`` and
``bootstrap_ci`` in ``metrics.bootstrap``; both are re-exported here.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ._pvalues import pearson_pvalue, t_pvalue
from ._results import (
    ALTERNATIVES,
    CONSTANT_MSG,
    NAN_POLICIES,
    NAN_RAISE_MSG,
    ConfidenceInterval,
    ConstantInputWarning,
    CorrelationResult,
    SmallSampleWarning,
)
from ._pearson_result import PearsonResult, RankCorrelationResult
from ._statistics import (
    average_ranks,
    has_nan,
    is_constant,
    kendall_core,
    pearson_statistic,
    small_int_table,
    spearman_core,
)
from ._validation import (
    as_float_vector,
    as_real_array,
    check_choice,
    check_same_length,
    resolve_threads,
)

__all__ = [
    "ConfidenceInterval",
    "CorrelationResult",
    "PearsonResult",
    "RankCorrelationResult",
    "kendall",
    "pearson",
    "spearman",
]


def _check_options(alternative, nan_policy):
    if not isinstance(alternative, str) or alternative not in ALTERNATIVES:
        raise ValueError("`alternative` must be 'less', 'greater', or 'two-sided', got "
                         f"{alternative!r}")
    check_choice(nan_policy, "nan_policy", NAN_POLICIES)


def _check_axis(axis):
    if axis is None:
        return None
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        if isinstance(axis, float) and math.isfinite(axis) and axis == int(axis):
            return int(axis)
        raise ValueError(f"`axis` must be an integer (or None), got {axis!r}")
    return int(axis)


def _paired_slices(x, y, axis, name_x="x", name_y="y"):
    """x and y broadcast against each other (scipy's rule: dimensions are
    matched first), with ``axis`` moved last.  Returns (xb, yb)."""
    ndim = max(x.ndim, y.ndim)
    if ndim == 0:  # scipy.stats.pearsonr raises IndexError here; ours names the inputs
        raise ValueError(f"`{name_x}` and `{name_y}` are 0-d (scalars); they must have at "
                         "least one dimension, the observations along `axis`")
    x = x.reshape((1,) * (ndim - x.ndim) + x.shape)
    y = y.reshape((1,) * (ndim - y.ndim) + y.shape)
    try:  # scipy's order of checks: broadcastable first, then the axis length
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise ValueError(f"`{name_x}` and `{name_y}` must be broadcastable (the same length "
                         f"along `axis`), got shapes {x.shape} and {y.shape}") from None
    if not -ndim <= axis < ndim:
        prefix = f"`{name_x}` and `{name_y}`"  # scipy's type; the message names the inputs
        raise np.exceptions.AxisError(axis, ndim, prefix) if hasattr(np, "exceptions") else \
            ValueError(f"{prefix}: axis {axis} is out of bounds for arrays of dimension {ndim}")
    if x.shape[axis] != y.shape[axis]:
        raise ValueError(f"`{name_x}` and `{name_y}` must have the same length along `axis`, "
                         f"got {x.shape[axis]} and {y.shape[axis]}")
    x = np.moveaxis(x, axis, -1)
    y = np.moveaxis(y, axis, -1)
    try:
        shape = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
    except ValueError:
        raise ValueError(f"{name_x} and {name_y} must be broadcastable, got shapes "
                         f"{x.shape} and {y.shape}") from None
    n = x.shape[-1]
    return (np.broadcast_to(x, shape + (n,)), np.broadcast_to(y, shape + (n,)))


def _along_axis(one, xb, yb, result_cls, method_name, alternative, **extra):
    """Apply the 1-D function ``one`` to every slice; arrays of results."""
    shape = xb.shape[:-1]
    n = xb.shape[-1]
    stat = np.empty(shape)
    pval = np.empty(shape)
    for idx in np.ndindex(*shape):
        res = one(np.ascontiguousarray(xb[idx]), np.ascontiguousarray(yb[idx]))
        stat[idx], pval[idx] = res.statistic, res.pvalue
    return result_cls(stat[()], pval[()], n, method_name, alternative, **extra)


# ----------------------------------------------------------------- Pearson


def pearson(x, y, *, alternative: str = "two-sided", method=None, axis: int | None = 0,
            nan_policy: str = "propagate", n_threads: int | None = None) -> PearsonResult:
    """Pearson's product-moment correlation and the p-value for no correlation.

    Same statistic and p-value as ``scipy.stats.pearsonr`` (beta distribution
    on (-1, 1) with a = b = n/2 - 1), computed in one parallel pass whose
    co-moments are exact to 1e-12 under any common offset.

    Parameters
    ----------
    x, y : array_like
        Numbers (cast to float64; the inputs are never modified).  1-D, or
        N-D arrays broadcastable against each other except along ``axis``.
    alternative : {"two-sided", "less", "greater"}
        Alternative hypothesis of the p-value.
    method : None, PermutationMethod or MonteCarloMethod
        ``None``: the exact null distribution under normality.  A
        ``scipy.stats.PermutationMethod`` (every permutation when
        ``n! <= n_resamples``, random ones otherwise) or ``MonteCarloMethod``
        (x and y drawn from ``rvs``, normal by default), or objects with the
        same attributes: see ``metrics._resampling``.
    axis : int or None
        Axis of the observations for N-D input (None: flatten both).
    nan_policy : {"propagate", "omit", "raise"}
        ``"propagate"``: NaN anywhere gives NaN; ``"omit"``: drop pairs with a
        NaN; ``"raise"``: ValueError when there is a NaN.
    n_threads : int or None
        Threads for the kernel (None = all cores).  Same result for every value.

    Returns
    -------
    PearsonResult
        ``statistic``, ``pvalue``, ``n`` and ``confidence_interval()``
        (Fisher's z, or a bootstrap with ``method=BootstrapMethod(...)``).

    Raises
    ------
    ValueError
        Fewer than 2 pairs (after omitting NaN), length mismatch, complex
        input, bad option.

    Warns
    -----
    ConstantInputWarning
        An input is constant (statistic and p-value are NaN).
    NearConstantInputWarning
        An input is nearly constant (as scipy).
    """
    _check_options(alternative, nan_policy)
    if method is not None:
        from ._resampling import check_method

        check_method(method)
    axis = _check_axis(axis)
    nt = resolve_threads(n_threads)
    xa, ya = as_real_array(x, "x"), as_real_array(y, "y")
    if axis is None or (xa.ndim <= 1 and ya.ndim <= 1):
        if axis is not None:
            _paired_slices(xa, ya, axis)  # scipy's errors for a bad axis or length
        return _pearson_1d(xa.ravel(), ya.ravel(), alternative, method, nan_policy, nt)
    xb, yb = _paired_slices(xa, ya, axis)
    if xb.shape[-1] < 2:
        raise ValueError("`x` and `y` must have length at least 2 along `axis`, got "
                         f"{xb.shape[-1]}")

    def one(xs, ys):
        return _pearson_1d(xs, ys, alternative, method, nan_policy, nt)

    return _along_axis(one, xb, yb, PearsonResult, "pearson", alternative, x=xb, y=yb)


def _pearson_1d(x, y, alternative, method, nan_policy, nt) -> PearsonResult:
    x = as_float_vector(x, "x")
    y = as_float_vector(y, "y")
    check_same_length(x, y, "x", "y")
    if nan_policy != "propagate" and has_nan(x, y):
        if nan_policy == "raise":
            raise ValueError(NAN_RAISE_MSG)
        keep = ~(np.isnan(x) | np.isnan(y))
        x, y = np.ascontiguousarray(x[keep]), np.ascontiguousarray(y[keep])
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"`x` and `y` must have length at least 2, got {n}")
    r = pearson_statistic(x, y, nt, warn_stacklevel=5)
    if method is None:
        p = pearson_pvalue(r, n, alternative)
    else:
        from ._resampling import resampling_pvalue

        p = resampling_pvalue(x, y, r, alternative, method)
    if n == 2 and not math.isnan(r):
        r = float(np.round(r))
    return PearsonResult(r, p, n, "pearson", alternative, x=x, y=y)


# ----------------------------------------------------------------- Spearman


def spearman(x, y=None, axis: int | None = 0, nan_policy: str = "propagate",
             alternative: str = "two-sided", *,
             n_threads: int | None = None) -> CorrelationResult:
    """Spearman's rank correlation (average ranks for ties) and its p-value.

    Same statistic and p-value as ``scipy.stats.spearmanr`` (Student's t with
    n - 2 degrees of freedom), including its edge cases: fewer than 2 pairs or a
    NaN under ``"propagate"`` give NaN; a constant input gives NaN with a
    ``ConstantInputWarning``.  Like scipy, ``nan_policy="omit"`` drops the pairs
    with a NaN *or an infinity* when the data contain a NaN, and raises
    ValueError when exactly one pair is left.

    With 2-D input (``x`` alone, or ``x`` and ``y`` together) the columns
    (``axis=0``) or rows (``axis=1``) are the variables, and the result holds
    the matrix of correlations and the matrix of p-values -- a scalar pair when
    there are exactly two variables -- as ``spearmanr`` returns.

    Integers are ranked by their exact values, also beyond 2**53 where
    float64 would merge neighbours (nanosecond timestamps, uint64 ids).

    Parameters
    ----------
    x, y : array_like
        1-D of the same length, or 1-D/2-D holding the variables.
    axis : {0, 1, None}
        Axis of the observations for 2-D input (None: flatten both).
    alternative : {"two-sided", "less", "greater"}
    nan_policy : {"propagate", "omit", "raise"}
    n_threads : int or None
        Threads for counting and ranking (None = all cores).

    Returns
    -------
    RankCorrelationResult
        ``(statistic, pvalue)`` with ``confidence_interval()`` (Fisher's z
        with Bonett and Wright's standard error, or a bootstrap).
    """
    _check_options(alternative, nan_policy)
    axis = _check_axis(axis)
    nt = resolve_threads(n_threads)
    xa = as_real_array(x, "x", order_only=True)
    ya = None if y is None else as_real_array(y, "y", order_only=True)
    if axis is not None and axis not in (0, 1, -1):
        raise ValueError(f"spearman handles 1-D or 2-D arrays: axis must be 0, 1 or None, "
                         f"got {axis}")
    if ya is not None and axis is None:
        xa, ya = xa.ravel(), ya.ravel()
    if xa.ndim > 2 or (ya is not None and ya.ndim > 2):
        raise ValueError("spearman handles 1-D or 2-D arrays only")
    if ya is not None and xa.ndim <= 1 and ya.ndim <= 1:
        x = as_float_vector(xa.ravel(), "x")
        y = as_float_vector(ya.ravel(), "y")
        check_same_length(x, y, "x", "y")
        return _spearman_1d(x, y, alternative, nan_policy, nt)
    return _spearman_matrix(xa, ya, axis, alternative, nan_policy, nt)


def _spearman_1d(x, y, alternative, nan_policy, nt):
    n = x.shape[0]
    if n <= 1:
        return RankCorrelationResult(math.nan, math.nan, n, "spearman", alternative)
    # scipy checks constancy on the raw input, before any NaN handling; the
    # table path below detects it itself, so only screen cheaply here.
    if x[0] == x[-1] and is_constant(x) or y[0] == y[-1] and is_constant(y):
        warnings.warn(ConstantInputWarning(CONSTANT_MSG), stacklevel=2)
        return RankCorrelationResult(math.nan, math.nan, n, "spearman", alternative)
    tab = small_int_table(x, y, nt)  # succeeds only without NaN
    if tab is None and has_nan(x, y):
        if nan_policy == "raise":
            raise ValueError(NAN_RAISE_MSG)
        if nan_policy == "propagate":
            return RankCorrelationResult(math.nan, math.nan, n, "spearman", alternative)
        keep = np.isfinite(x) & np.isfinite(y)
        x, y = np.ascontiguousarray(x[keep]), np.ascontiguousarray(y[keep])
        n = x.shape[0]
        if n == 0:
            return RankCorrelationResult(math.nan, math.nan, 0, "spearman", alternative)
        if n == 1:
            raise ValueError(
                "spearman: only 1 pair left after omitting NaN/inf; need at least 2"
            )
        tab = small_int_table(x, y, nt)
    rs, p = spearman_core(x, y, nt, alternative, tab, warn_stacklevel=3)
    return RankCorrelationResult(rs, p, n, "spearman", alternative, x=x, y=y)




def _spearman_matrix(a, b, axis, alternative, nan_policy, nt):
    """scipy.stats.spearmanr on 2-D input: variables are columns (axis 0) or rows."""
    if axis is not None and axis > 1:
        raise ValueError(f"spearman handles 1-D or 2-D arrays: axis must be 0, 1 or None, "
                         f"got {axis}")
    if axis is None:
        a = a.ravel()
        b = None if b is None else b.ravel()
        axis = 0
    elif axis == -1:
        axis = 1
    if a.ndim > 2 or (b is not None and b.ndim > 2):
        raise ValueError("spearman handles 1-D or 2-D arrays only")
    if b is None:
        if a.ndim < 2:
            raise ValueError("spearman needs at least 2 variables to compare: give y, "
                             "or a 2-D x with axis 0 or 1 (axis=None flattens x)")
        data = a
    else:
        try:
            data = np.column_stack((a, b)) if axis == 0 else np.vstack((a, b))
        except ValueError as exc:
            raise ValueError(f"x and y must have the same number of observations ({exc})") \
                from None
    if axis == 1:
        data = data.T
    data = np.asarray(data, dtype=np.float64)
    n_obs, n_vars = data.shape
    if n_obs <= 1:
        return RankCorrelationResult(math.nan, math.nan, n_obs, "spearman", alternative)
    if is_constant(data[:, 0]) or is_constant(data[:, 1]):  # scipy's rule
        warnings.warn(ConstantInputWarning(CONSTANT_MSG), stacklevel=3)
        return RankCorrelationResult(math.nan, math.nan, n_obs, "spearman", alternative)
    nan_rows = np.isnan(data).any(axis=1)
    has_nan_var = np.zeros(n_vars, dtype=bool)
    if nan_rows.any():
        if nan_policy == "raise":
            raise ValueError(NAN_RAISE_MSG)
        if nan_policy == "omit":
            if n_vars == 2:
                return _spearman_1d(np.ascontiguousarray(data[:, 0]),
                                    np.ascontiguousarray(data[:, 1]),
                                    alternative, nan_policy, nt)
            return _spearman_pairwise(data, alternative, nt)
        elif n_vars <= 2:
            return RankCorrelationResult(math.nan, math.nan, n_obs, "spearman", alternative)
        else:
            has_nan_var = np.isnan(data).any(axis=0)
    if n_vars == 2:
        return _spearman_1d(np.ascontiguousarray(data[:, 0]), np.ascontiguousarray(data[:, 1]),
                            alternative, nan_policy, nt)
    ranks = np.empty_like(data)
    for j in range(n_vars):
        col = np.ascontiguousarray(data[:, j])
        ranks[:, j] = np.nan if has_nan_var[j] else average_ranks(col)
    with np.errstate(invalid="ignore", divide="ignore"):
        rs = np.corrcoef(ranks, rowvar=False)
    p = t_pvalue(rs, n_obs, alternative)
    rs[has_nan_var, :] = np.nan
    rs[:, has_nan_var] = np.nan
    return RankCorrelationResult(rs, p, n_obs, "spearman", alternative)


def _spearman_pairwise(data, alternative, nt):
    """nan_policy="omit" on more than two variables: every pair on the rows
    where both are present (pairwise complete), as scipy's masked path."""
    n_vars = data.shape[1]
    rs = np.eye(n_vars)
    p = np.zeros((n_vars, n_vars))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantInputWarning)
        for i in range(n_vars):
            for j in range(i + 1, n_vars):
                keep = ~(np.isnan(data[:, i]) | np.isnan(data[:, j]))
                if np.count_nonzero(keep) < 2:
                    r_ij = p_ij = math.nan
                else:
                    r_ij, p_ij = _spearman_1d(np.ascontiguousarray(data[keep, i]),
                                              np.ascontiguousarray(data[keep, j]),
                                              alternative, "omit", nt)
                rs[i, j] = rs[j, i] = r_ij
                p[i, j] = p[j, i] = p_ij
    return RankCorrelationResult(rs, p, data.shape[0], "spearman", alternative)


# ----------------------------------------------------------------- Kendall


def kendall(x, y, *, alternative: str = "two-sided", nan_policy: str = "propagate",
            method: str = "auto", variant: str = "b", axis: int | None = None,
            n_threads: int | None = None) -> CorrelationResult:
    """Kendall's tau (tau-b or tau-c) and its p-value, as ``scipy.stats.kendalltau``.

    The p-value is exact (permutation distribution) when there are no ties and
    n <= 33 or the data are (almost) perfectly ordered, asymptotic (normal,
    with scipy's tie-corrected variance) otherwise; ``method`` forces one.
    Fewer than 2 pairs give NaN with a ``SmallSampleWarning``; a constant input
    gives NaN.  Integers are ranked by their exact values, also beyond 2**53.

    Parameters
    ----------
    x, y : array_like
        Same size; flattened unless ``axis`` is given (as scipy).
    alternative : {"two-sided", "less", "greater"}
    nan_policy : {"propagate", "omit", "raise"}
        ``"omit"`` drops the pairs with a NaN (infinities are ordinary values).
    method : {"auto", "exact", "asymptotic"}
    variant : {"b", "c"}
        tau-b (ties corrected) or Stuart's tau-c; the p-value is the same.
    axis : int or None
        Axis of the observations for N-D input (None: flatten both).
    n_threads : int or None

    Returns
    -------
    RankCorrelationResult
        ``(statistic, pvalue)`` with ``confidence_interval()`` (tau-b: Fisher's
        z with the Fieller standard error, or a bootstrap).
    """
    _check_options(alternative, nan_policy)
    check_choice(method, "method", ("auto", "exact", "asymptotic"))
    check_choice(variant, "variant", ("b", "c"))
    axis = _check_axis(axis)
    nt = resolve_threads(n_threads)
    xa, ya = as_real_array(x, "x", order_only=True), as_real_array(y, "y", order_only=True)
    if axis is None or (xa.ndim <= 1 and ya.ndim <= 1):
        if xa.size != ya.size:
            raise ValueError(f"x and y must have the same length (size), got {xa.size} and {ya.size}")
        return _kendall_1d(np.ascontiguousarray(xa.ravel()), np.ascontiguousarray(ya.ravel()),
                           alternative, nan_policy, method, variant, nt)
    xb, yb = _paired_slices(xa, ya, axis)

    def one(xs, ys):
        return _kendall_1d(xs, ys, alternative, nan_policy, method, variant, nt)

    return _along_axis(one, xb, yb, RankCorrelationResult, "kendall", alternative,
                       variant=variant)


def _kendall_1d(x, y, alternative, nan_policy, method, variant, nt):
    tab = small_int_table(x, y, nt)  # succeeds only without NaN
    if tab is None and has_nan(x, y):
        if nan_policy == "raise":
            raise ValueError(NAN_RAISE_MSG)
        if nan_policy == "propagate":
            return RankCorrelationResult(math.nan, math.nan, x.shape[0], "kendall", alternative,
                                         variant=variant)
        keep = ~(np.isnan(x) | np.isnan(y))
        x, y = np.ascontiguousarray(x[keep]), np.ascontiguousarray(y[keep])
        tab = small_int_table(x, y, nt)
    n = x.shape[0]
    if n <= 1:
        warnings.warn(
            SmallSampleWarning("One or more sample arguments is too small; all returned "
                               "values will be NaN."),
            stacklevel=2,
        )
        return RankCorrelationResult(math.nan, math.nan, n, "kendall", alternative, variant=variant)
    tau, p = kendall_core(x, y, nt, alternative, method, tab, variant)
    return RankCorrelationResult(tau, p, n, "kendall", alternative, x=x, y=y, variant=variant)
