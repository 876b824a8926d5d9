# Exact null distribution of Kendall's statistic without ties.
#
# Under H0 every ranking of y against x is equally likely, so the number of
# discordant pairs K of n untied pairs is the number of inversions of a random
# permutation of n.  Its counts (the Mahonian numbers) obey
#
#     f_j(k) = sum_{i=0}^{j-1} f_{j-1}(k - i)          (insert element j),
#
# a window sum, i.e. the difference of two prefix sums.  We carry the counts
# divided by j!/2 (so nothing overflows for any n) and only the left tail
# k <= c that the p-value needs: O(n * c) time, O(c) memory.  Each step is one
# pass that keeps the running prefix sum and writes the differences, and skips
# the entries beyond j(j-1)/2, which are exactly zero.  The tail is summed with
# a compensated (Neumaier) sum.
#
# Accuracy: float64 throughout, like scipy; against exact rational values the
# relative error is 1.4e-15 at n = 100 and 2.1e-14 at n = 800.  (A long double
# version was exact to 1e-21 but only 1.5x faster than scipy, with no margin
# on a busy machine, so the float64 one stays.)

from libc.math cimport fabs
from libc.stdlib cimport calloc, free
from cpython.exc cimport PyErr_CheckSignals

import numbers

ALTERNATIVES = ("two-sided", "less", "greater")


cdef void _insert_step(double* f, double* prefix, Py_ssize_t j, Py_ssize_t top) noexcept nogil:
    """f_{j-1} -> f_j on 0..top, scaled by 1/j (prefix gets the scaled prefix sums)."""
    cdef Py_ssize_t k
    cdef double s = 0.0, dj = <double>j
    for k in range(min(j, top + 1)):
        s = s + f[k]
        prefix[k] = s / dj
        f[k] = prefix[k]
    for k in range(j, top + 1):
        s = s + f[k]
        prefix[k] = s / dj
        f[k] = prefix[k] - prefix[k - j]


cdef double _compensated_sum(const double* a, Py_ssize_t n) noexcept nogil:
    cdef double s = 0.0, comp = 0.0, t, v
    cdef Py_ssize_t k
    for k in range(n):
        v = a[k]
        t = s + v
        if fabs(s) >= fabs(v):
            comp = comp + ((s - t) + v)
        else:
            comp = comp + ((v - t) + s)
        s = t
    return s + comp


cdef int _left_tail(Py_ssize_t n, Py_ssize_t c, double* twice_cdf, double* mass) except -1:
    """2 P(K <= c) and P(K = c) for the inversions K of a random permutation of n >= 2."""
    cdef double* f = <double*> calloc(c + 1, sizeof(double))
    cdef double* prefix = <double*> calloc(c + 1, sizeof(double))
    cdef Py_ssize_t j, top
    if f == NULL or prefix == NULL:
        free(f)
        free(prefix)
        raise MemoryError(f"kendall_exact_pvalue: cannot allocate 2 x {c + 1} doubles")
    try:
        f[0] = 1.0           # permutations of 2 elements, divided by 2!/2
        if c >= 1:
            f[1] = 1.0
        for j in range(3, n + 1):
            top = min(c, j * (j - 1) // 2)
            with nogil:
                _insert_step(f, prefix, j, top)
            if PyErr_CheckSignals() == -1:
                return -1
        twice_cdf[0] = _compensated_sum(f, c + 1)
        mass[0] = f[c] / 2.0
    finally:
        free(f)
        free(prefix)
    return 0


def kendall_exact_pvalue(n, c, alternative="two-sided"):
    """Exact p-value of Kendall's tau for n untied pairs with c concordant pairs.

    The same quantity, with the same conventions, as the exact branch of
    ``scipy.stats.kendalltau`` (which calls its private helper with the
    concordant count ``n(n-1)/2 - discordant``): the two-sided p-value is
    ``2 P(K <= min(c, tot - c))`` clipped to 1, where K is the number of
    inversions of a uniformly random permutation of n and ``tot = n(n-1)/2``;
    a one-sided p-value is half of that when c lies in the tail the
    alternative points to, and ``1 - P(K <= m) + P(K = m)`` (m = min(c, tot-c))
    otherwise.  As scipy does, n = 1 gives 1 (two-sided), 0.5 ('greater') and
    1 ('less').

    Time O(n * min(c, tot - c)), memory O(min(c, tot - c)); interruptible with
    Ctrl-C.  Below about 1e-308 the p-value is a subnormal float or 0.

    Parameters
    ----------
    n : int >= 1
        Number of pairs.
    c : int in [0, n(n-1)/2]
        Number of concordant pairs.
    alternative : {"two-sided", "less", "greater"}

    Returns
    -------
    float
    """
    cdef double twice_cdf, mass
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if isinstance(c, bool) or not isinstance(c, numbers.Integral):
        raise TypeError(f"c must be an int, got {type(c).__name__}")
    if not isinstance(alternative, str) or alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of 'two-sided', 'less', 'greater', "
                         f"got {alternative!r}")
    n = int(n)
    c = int(c)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    tot = n * (n - 1) // 2
    if not 0 <= c <= tot:
        raise ValueError(f"c must be in [0, n(n-1)/2] = [0, {tot}], got {c}")
    in_right_tail = c >= tot - c
    m = min(c, tot - c)
    if n == 1:
        twice_cdf, mass = 1.0, 1.0
    elif n == 2:
        twice_cdf, mass = 1.0, 0.5
    else:
        _left_tail(n, m, &twice_cdf, &mass)
    if alternative == "two-sided":
        prob = twice_cdf
    elif in_right_tail == (alternative == "greater"):
        prob = twice_cdf / 2.0
    else:
        prob = 1.0 - twice_cdf / 2.0 + mass
    return min(1.0, max(0.0, prob))
