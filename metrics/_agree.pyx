# Per-item summaries of a raters x items ratings matrix (NaN = missing),
# for metrics.agreement.  Each item writes its own output slot, so the result
# never depends on the thread count.

from cython.parallel cimport prange
from libc.math cimport isnan
from libc.stdlib cimport malloc, free


def item_moments(const double[:, ::1] r, double[::1] count, double[::1] mean,
                 double[::1] ss, int n_threads):
    """Per item (column): number of ratings, their mean and sum of squared deviations."""
    cdef Py_ssize_t R = r.shape[0], N = r.shape[1], i, u
    cdef double c, s, d, mu, v
    with nogil:
        for u in prange(N, num_threads=n_threads, schedule='static'):
            c = 0
            s = 0
            for i in range(R):
                v = r[i, u]
                if not isnan(v):
                    c = c + 1
                    s = s + v
            if c > 0:
                mu = s / c
            else:
                mu = 0
            d = 0
            for i in range(R):
                v = r[i, u]
                if not isnan(v):
                    d = d + (v - mu) * (v - mu)
            count[u] = c
            mean[u] = mu
            ss[u] = d


cdef void _sort_small(double* a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef double v
    for i in range(1, n):
        v = a[i]
        j = i
        while j > 0 and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
        a[j] = v


def item_matches(const double[:, ::1] r, double[::1] count, double[::1] same,
                 int n_threads):
    """Per item: number of ratings and the number of ordered pairs of equal ratings.

    ``same[u]`` = sum over values c of n_uc * (n_uc - 1).
    """
    cdef Py_ssize_t R = r.shape[0], N = r.shape[1], i, j, k, u
    cdef double* buf
    cdef double v, tot
    cdef int failed = 0
    cdef int* failp = &failed
    with nogil:
        for u in prange(N, num_threads=n_threads, schedule='static'):
            buf = <double*> malloc(R * sizeof(double))
            if buf == NULL:
                failp[0] = 1
                count[u] = 0
                same[u] = 0
            else:
                k = 0
                for i in range(R):
                    v = r[i, u]
                    if not isnan(v):
                        buf[k] = v
                        k = k + 1
                _sort_small(buf, k)
                tot = 0
                i = 0
                while i < k:
                    j = i + 1
                    while j < k and buf[j] == buf[i]:
                        j = j + 1
                    tot = tot + <double>(j - i) * (j - i - 1)
                    i = j
                count[u] = k
                same[u] = tot
                free(buf)
    if failed:
        raise MemoryError("krippendorff_alpha: out of memory")
