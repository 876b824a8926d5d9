# Paired bootstrap and jackknife kernels for metrics.correlation.bootstrap_ci.
#
# A resample is represented by multiplicities w[i] (how often pair i was
# drawn), so no resampled copy of the data is ever built.  Draws come from a
# counter-based generator: draw k of resample b is splitmix64's output
# function applied to key(seed, b) + (k + 1) * golden-gamma, so each resample's
# indices depend only on (seed, b) and never on which thread ran it.

from cython.parallel cimport prange, parallel
from libc.math cimport sqrt, NAN
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset
from libc.stdint cimport int64_t, uint64_t
from metrics._sortcount cimport sort_count
from metrics._checks cimport check_indices, check_run_ends

import numpy as np

cdef extern from *:
    """
    static inline unsigned long long overlap_mix64(unsigned long long z) {
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    /* Unbiased-enough bounded integer: high 64 bits of a 64x64 product. */
    static inline unsigned long long overlap_bounded(unsigned long long z,
                                                     unsigned long long n) {
    #if defined(__SIZEOF_INT128__)
        return (unsigned long long)(((unsigned __int128)z * n) >> 64);
    #else
        return z % n;
    #endif
    }
    """
    uint64_t overlap_mix64(uint64_t z) noexcept nogil
    uint64_t overlap_bounded(uint64_t z, uint64_t n) noexcept nogil

cdef uint64_t GAMMA = 0x9E3779B97F4A7C15ULL


cdef inline uint64_t _key(uint64_t seed, uint64_t b) noexcept nogil:
    return overlap_mix64(overlap_mix64(seed ^ 0x6A09E667F3BCC909ULL) + (b + 1) * GAMMA)


cdef inline void _draw_counts(int* w, Py_ssize_t n, uint64_t key) noexcept nogil:
    cdef Py_ssize_t k
    memset(w, 0, n * sizeof(int))
    for k in range(n):
        w[overlap_bounded(overlap_mix64(key + (<uint64_t>k + 1) * GAMMA), <uint64_t>n)] += 1


def resample_indices(uint64_t seed, Py_ssize_t b, Py_ssize_t n):
    """The multiplicities of resample ``b`` (for tests and generic statistics)."""
    import numpy as np
    w_arr = np.zeros(n, dtype=np.intc)
    cdef int[::1] w = w_arr
    with nogil:
        _draw_counts(&w[0], n, _key(seed, <uint64_t>b))
    return w_arr


cdef inline double _weighted_r(const int* w, const double* xc, const double* yc,
                               Py_ssize_t n) noexcept nogil:
    cdef double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, wi, a, b
    cdef Py_ssize_t i
    for i in range(n):
        if w[i] != 0:
            wi = w[i]
            a = xc[i]
            b = yc[i]
            sx += wi * a
            sy += wi * b
            sxx += wi * a * a
            syy += wi * b * b
            sxy += wi * a * b
    cdef double vx = sxx - sx * sx / n
    cdef double vy = syy - sy * sy / n
    if vx <= 0 or vy <= 0:
        return NAN
    cdef double r = (sxy - sx * sy / n) / (sqrt(vx) * sqrt(vy))
    if r > 1:
        r = 1
    elif r < -1:
        r = -1
    return r


def boot_pearson(const double[::1] xc, const double[::1] yc, uint64_t seed,
                 double[::1] out, int n_threads, Py_ssize_t first=0):
    """Pearson r of resamples ``first .. first + len(out) - 1`` into ``out``;
    xc, yc centred on the full-sample means."""
    cdef Py_ssize_t n = xc.shape[0], B = out.shape[0], b
    if yc.shape[0] != n:
        raise ValueError(f"boot_pearson: {n} x values against {yc.shape[0]} y values")
    if first < 0:
        raise ValueError(f"boot_pearson: first must be >= 0, got {first}")
    cdef int* w
    cdef int failed = 0
    cdef int* failp = &failed
    with nogil, parallel(num_threads=n_threads):
        w = <int*> malloc(n * sizeof(int))
        if w == NULL:
            failp[0] = 1
        for b in prange(B, schedule='dynamic', chunksize=16):
            if w != NULL:
                _draw_counts(w, n, _key(seed, <uint64_t>(first + b)))
                out[b] = _weighted_r(w, &xc[0], &yc[0], n)
        free(w)
    if failed:
        raise MemoryError("bootstrap: could not allocate per-thread scratch")


cdef inline void _weighted_ranks(const int* w, const Py_ssize_t* order,
                                 const Py_ssize_t* run_end, Py_ssize_t n,
                                 double* ranks) noexcept nogil:
    """Average ranks of a weighted sample, from a fixed sorted order.

    ``run_end[k]`` is the end (exclusive) of the tie run that starts at k.
    """
    cdef Py_ssize_t k = 0, e, t
    cdef int64_t cum = 0, wr
    cdef double r
    while k < n:
        e = run_end[k]
        wr = 0
        for t in range(k, e):
            wr += w[order[t]]
        r = cum + 0.5 * (wr + 1)
        for t in range(k, e):
            ranks[order[t]] = r
        cum += wr
        k = e


cdef inline double _weighted_rank_r(const int* w, const double* rx, const double* ry,
                                    Py_ssize_t n) noexcept nogil:
    cdef double m = 0.5 * (n + 1), sxx = 0, syy = 0, sxy = 0, a, b, wi
    cdef Py_ssize_t i
    for i in range(n):
        if w[i] != 0:
            wi = w[i]
            a = rx[i] - m
            b = ry[i] - m
            sxx += wi * a * a
            syy += wi * b * b
            sxy += wi * a * b
    if sxx <= 0 or syy <= 0:
        return NAN
    cdef double r = sxy / (sqrt(sxx) * sqrt(syy))
    if r > 1:
        r = 1
    elif r < -1:
        r = -1
    return r


def boot_spearman(const Py_ssize_t[::1] ox, const Py_ssize_t[::1] ex,
                  const Py_ssize_t[::1] oy, const Py_ssize_t[::1] ey,
                  uint64_t seed, double[::1] out, int n_threads, Py_ssize_t first=0):
    """Spearman rho of resamples ``first ..`` (one per slot of ``out``) from
    the sorted orders of x and y."""
    cdef Py_ssize_t n = ox.shape[0], B = out.shape[0], b
    check_indices(ox, n, n, "boot_spearman: ox")
    check_indices(oy, n, n, "boot_spearman: oy")
    check_run_ends(ex, n, "boot_spearman: ex")
    check_run_ends(ey, n, "boot_spearman: ey")
    if first < 0:
        raise ValueError(f"boot_spearman: first must be >= 0, got {first}")
    cdef int* w
    cdef double* rx
    cdef double* ry
    cdef int failed = 0
    cdef int* failp = &failed
    with nogil, parallel(num_threads=n_threads):
        w = <int*> malloc(n * sizeof(int))
        rx = <double*> malloc(n * sizeof(double))
        ry = <double*> malloc(n * sizeof(double))
        if w == NULL or rx == NULL or ry == NULL:
            failp[0] = 1
        for b in prange(B, schedule='dynamic', chunksize=8):
            if w != NULL and rx != NULL and ry != NULL:
                _draw_counts(w, n, _key(seed, <uint64_t>(first + b)))
                _weighted_ranks(w, &ox[0], &ex[0], n, rx)
                _weighted_ranks(w, &oy[0], &ey[0], n, ry)
                out[b] = _weighted_rank_r(w, rx, ry, n)
        free(w)
        free(rx)
        free(ry)
    if failed:
        raise MemoryError("bootstrap: could not allocate per-thread scratch")


cdef inline double _weighted_tau(const int* w, const Py_ssize_t* order,
                                 const int* ycode, const int* xrun_end,
                                 const int* xyrun_end, Py_ssize_t n, int n_ycodes,
                                 int* seq, int* buf, int64_t* ycount) noexcept nogil:
    """Kendall tau-b of a weighted sample; position k of the (x, y)-sorted
    arrays is original point order[k], whose multiplicity is w[order[k]]."""
    cdef Py_ssize_t i, k, e, t
    cdef int64_t W, tot, xtie = 0, ytie = 0, ntie = 0, dis
    cdef int c
    # expand: the lexicographic order of the points is kept
    k = 0
    for i in range(n):
        for t in range(w[order[i]]):
            seq[k] = ycode[i]
            k += 1
    i = 0
    while i < n:
        e = xrun_end[i]
        W = 0
        for t in range(i, e):
            W += w[order[t]]
        xtie += W * (W - 1) // 2
        i = e
    i = 0
    while i < n:
        e = xyrun_end[i]
        W = 0
        for t in range(i, e):
            W += w[order[t]]
        ntie += W * (W - 1) // 2
        i = e
    memset(ycount, 0, n_ycodes * sizeof(int64_t))
    for i in range(n):
        ycount[ycode[i]] += w[order[i]]
    for c in range(n_ycodes):
        ytie += ycount[c] * (ycount[c] - 1) // 2
    dis = sort_count(seq, buf, n)
    tot = (<int64_t>n) * (n - 1) // 2
    if xtie == tot or ytie == tot:
        return NAN
    cdef double cmd = <double>(tot - xtie - ytie + ntie - 2 * dis)
    cdef double tau = cmd / sqrt(<double>(tot - xtie)) / sqrt(<double>(tot - ytie))
    if tau > 1:
        tau = 1
    elif tau < -1:
        tau = -1
    return tau


def boot_kendall(const Py_ssize_t[::1] order, const int[::1] ycode, const int[::1] xrun_end,
                 const int[::1] xyrun_end, int n_ycodes, uint64_t seed,
                 double[::1] out, int n_threads, Py_ssize_t first=0):
    """Kendall tau-b of resamples ``first ..`` (one per slot of ``out``);
    points pre-sorted by (x, y).

    ``ycode`` are dense codes of y; ``xrun_end[k]`` / ``xyrun_end[k]`` give the
    end of the run of equal x / equal (x, y) that starts at k.
    """
    cdef Py_ssize_t n = ycode.shape[0], B = out.shape[0], b
    check_indices(order, n, n, "boot_kendall: order")
    check_indices(ycode, n, n_ycodes, "boot_kendall: ycode")
    check_run_ends(xrun_end, n, "boot_kendall: xrun_end")
    check_run_ends(xyrun_end, n, "boot_kendall: xyrun_end")
    if first < 0:
        raise ValueError(f"boot_kendall: first must be >= 0, got {first}")
    cdef int* w
    cdef int* seq
    cdef int* buf
    cdef int64_t* ycount
    cdef int failed = 0
    cdef int* failp = &failed
    with nogil, parallel(num_threads=n_threads):
        w = <int*> malloc(n * sizeof(int))
        seq = <int*> malloc(n * sizeof(int))
        buf = <int*> malloc(n * sizeof(int))
        ycount = <int64_t*> malloc(n_ycodes * sizeof(int64_t))
        if w == NULL or seq == NULL or buf == NULL or ycount == NULL:
            failp[0] = 1
        for b in prange(B, schedule='dynamic', chunksize=4):
            if w != NULL and seq != NULL and buf != NULL and ycount != NULL:
                _draw_counts(w, n, _key(seed, <uint64_t>(first + b)))
                out[b] = _weighted_tau(w, &order[0], &ycode[0], &xrun_end[0], &xyrun_end[0],
                                       n, n_ycodes, seq, buf, ycount)
        free(w)
        free(seq)
        free(buf)
        free(ycount)
    if failed:
        raise MemoryError("bootstrap: could not allocate per-thread scratch")


# ---------------------------------------------------------------- jackknife

def jack_pearson(const double[::1] xc, const double[::1] yc, double[::1] out):
    """Leave-one-out Pearson r in O(n) by removing one point's moments."""
    cdef Py_ssize_t n = xc.shape[0], i
    cdef double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0
    cdef double m = n - 1, a, b, vx, vy, r
    if yc.shape[0] != n or out.shape[0] != n:
        raise ValueError("jack_pearson: xc, yc and out differ in length")
    with nogil:
        for i in range(n):
            sx += xc[i]; sy += yc[i]
            sxx += xc[i] * xc[i]; syy += yc[i] * yc[i]; sxy += xc[i] * yc[i]
        for i in range(n):
            a = sx - xc[i]
            b = sy - yc[i]
            vx = (sxx - xc[i] * xc[i]) - a * a / m
            vy = (syy - yc[i] * yc[i]) - b * b / m
            if vx <= 0 or vy <= 0:
                out[i] = NAN
            else:
                r = ((sxy - xc[i] * yc[i]) - a * b / m) / (sqrt(vx) * sqrt(vy))
                out[i] = 1.0 if r > 1 else (-1.0 if r < -1 else r)


# ---------------------------------------------------------------- O(n log n) jackknife

def below_counts(const Py_ssize_t[::1] order, const int64_t[::1] xr, const int64_t[::1] yr,
                 Py_ssize_t n_y, int64_t[::1] lt, int64_t[::1] le):
    """For every point i: lt[i] = #{j: x_j < x_i, y_j < y_i} and
    le[i] = #{j: x_j < x_i, y_j <= y_i}.

    ``xr``/``yr`` are dense ranks (0-based) and ``order`` sorts the points by
    x.  One sweep over x groups with a Fenwick tree over the y ranks: each
    group is queried before it is inserted.  O(n log n), integer counts.
    """
    cdef Py_ssize_t n = order.shape[0], g0 = 0, g1, k, i, q
    cdef int64_t s
    check_indices(order, n, n, "below_counts: order")
    if xr.shape[0] != n or yr.shape[0] != n or lt.shape[0] != n or le.shape[0] != n or n_y < 0:
        raise ValueError("below_counts: arrays of different lengths")
    for k in range(n):
        if yr[k] < 0 or yr[k] >= n_y:
            raise ValueError(f"below_counts: a y rank out of range [0, {n_y})")
    tree_arr = np.zeros(n_y + 1, dtype=np.int64)
    cdef int64_t[::1] tree = tree_arr
    with nogil:
        while g0 < n:
            g1 = g0 + 1
            while g1 < n and xr[order[g1]] == xr[order[g0]]:
                g1 += 1
            for k in range(g0, g1):
                i = order[k]
                s = 0
                q = yr[i]          # prefix of ranks < yr[i]: tree positions 1..yr[i]
                while q > 0:
                    s += tree[q]
                    q -= q & (-q)
                lt[i] = s
                q = yr[i] + 1      # ranks <= yr[i]
                s = 0
                while q > 0:
                    s += tree[q]
                    q -= q & (-q)
                le[i] = s
            for k in range(g0, g1):
                q = yr[order[k]] + 1
                while q <= n_y:
                    tree[q] += 1
                    q += q & (-q)
            g0 = g1
