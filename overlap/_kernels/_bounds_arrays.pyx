"""Array entry points to the bounds of ``_bounds.pxd``, for tests and tools.

The kernels cimport the inline functions of ``_bounds.pxd``; this module only
evaluates them elementwise over int64/float64 arrays so that the test suite can
compare every bound with a plain-Python evaluation of its definition.  Inputs
are trusted to be 1-D arrays of one length (the tests build them).
"""

import numpy as np

from libc.stdint cimport int64_t

from overlap._kernels._bounds cimport (
    N_MEASURES, NO_SIZE_LIMIT, NEVER, score as c_score, need_count as c_need_count,
    loose_need as c_loose_need, size_window as c_size_window,
    rest_caps_window as c_rest_caps_window, max_differing_bits as c_max_differing_bits,
    peak_rest_score as c_peak_rest_score, may_reach as c_may_reach, reach_count as c_reach_count,
    differing_may_reach as c_differing_may_reach, reaching_bits as c_reaching_bits, prune_cut as c_prune_cut, window_differing_bits as c_window_differing_bits,
)

#: The measures, in the order of the ``Measure`` enum of ``_bounds.pxd``.
MEASURES = ("dice", "jaccard", "cosine", "overlap", "containment")
NO_LIMIT = NO_SIZE_LIMIT
IMPOSSIBLE = NEVER
assert len(MEASURES) == N_MEASURES


cdef int measure_code(object measure) except -1:
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")
    return MEASURES.index(measure)


def score(measure, const int64_t[::1] i, const int64_t[::1] a, const int64_t[::1] b):
    """The measure's float64 score for each (i, a, b)."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = i.shape[0]
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    with nogil:
        for k in range(n):
            o[k] = c_score(m, i[k], a[k], b[k])
    return out


def need_count(measure, const double[::1] cut, const int64_t[::1] a, const int64_t[::1] b):
    """``need_count`` for each (cut, a, b)."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = cut.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for k in range(n):
            o[k] = c_need_count(m, cut[k], a[k], b[k])
    return out


def loose_need(measure, const double[::1] cut, const int64_t[::1] a, const int64_t[::1] b):
    """``loose_need`` for each (cut, a, b)."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = cut.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for k in range(n):
            o[k] = c_loose_need(m, cut[k], a[k], b[k])
    return out


def size_window(measure, const int64_t[::1] q, const double[::1] cut):
    """``size_window`` for each (q, cut): arrays (lo, hi)."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = q.shape[0]
    lo = np.empty(n, dtype=np.int64)
    hi = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] lo_v = lo, hi_v = hi
    with nogil:
        for k in range(n):
            c_size_window(m, q[k], cut[k], &lo_v[k], &hi_v[k])
    return lo, hi


def rest_caps_window(measure, const int64_t[::1] q, const int64_t[::1] rest,
                     const double[::1] cut, const int64_t[::1] zhi):
    """``rest_caps_window`` for each (q, rest, cut, zhi): arrays (new zhi, moved)."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = q.shape[0]
    out = np.array(zhi, dtype=np.int64)
    moved = np.zeros(n, dtype=np.bool_)
    cdef int64_t[::1] o = out
    cdef unsigned char[::1] mv = moved.view(np.uint8)
    with nogil:
        for k in range(n):
            mv[k] = c_rest_caps_window(m, q[k], rest[k], cut[k], &o[k])
    return out, moved


def peak_rest_score(measure, const int64_t[::1] q, const int64_t[::1] rest):
    """``peak_rest_score`` for each (q, rest)."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = q.shape[0]
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    with nogil:
        for k in range(n):
            o[k] = c_peak_rest_score(m, q[k], rest[k])
    return out


def max_differing_bits(measure, const int64_t[::1] q, const int64_t[::1] z,
                       const double[::1] cut, int bits):
    """``max_differing_bits`` for each (q, z, cut) with ``bits`` signature bits."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = q.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for k in range(n):
            o[k] = c_max_differing_bits(m, q[k], z[k], cut[k], bits)
    return out


def window_differing_bits(measure, const int64_t[::1] q,
                          const int64_t[::1] zhi, const double[::1] cut, int bits):
    """``window_differing_bits`` for each (q, zhi, cut)."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = q.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for k in range(n):
            o[k] = c_window_differing_bits(m, q[k], zhi[k], cut[k], bits)
    return out


def prune_cut(const double[::1] threshold):
    """``prune_cut`` of each threshold."""
    cdef Py_ssize_t k, n = threshold.shape[0]
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    for k in range(n):
        o[k] = c_prune_cut(threshold[k])
    return out


def may_reach(measure, const int64_t[::1] c, const int64_t[::1] a, const int64_t[::1] b,
              const double[::1] cut):
    """``may_reach`` for each (c, a, b, cut)."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = c.shape[0]
    out = np.zeros(n, dtype=np.bool_)
    cdef unsigned char[::1] o = out.view(np.uint8)
    with nogil:
        for k in range(n):
            o[k] = c_may_reach(m, c[k], a[k], b[k], cut[k])
    return out


def reach_count(measure, const int64_t[::1] a, const int64_t[::1] b, const double[::1] cut):
    """``reach_count`` for each (a, b, cut)."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = a.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for k in range(n):
            o[k] = c_reach_count(m, a[k], b[k], cut[k])
    return out


def differing_may_reach(measure, const int64_t[::1] a, const int64_t[::1] b,
                        const int64_t[::1] d, const double[::1] cut):
    """``differing_may_reach`` for each (a, b, d, cut)."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = a.shape[0]
    out = np.zeros(n, dtype=np.bool_)
    cdef unsigned char[::1] o = out.view(np.uint8)
    with nogil:
        for k in range(n):
            o[k] = c_differing_may_reach(m, a[k], b[k], d[k], cut[k])
    return out


def reaching_bits(measure, const int64_t[::1] a, const int64_t[::1] b,
                  const double[::1] cut, int bits):
    """``reaching_bits`` for each (a, b, cut)."""
    cdef int m = measure_code(measure)
    cdef Py_ssize_t k, n = a.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for k in range(n):
            o[k] = c_reaching_bits(m, a[k], b[k], cut[k], bits)
    return out
