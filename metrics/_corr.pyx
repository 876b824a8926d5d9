# Kernels for metrics.correlation: co-moments, ranks, Kendall counts, grouping.
#
# Every function takes typed memoryviews, scalars and output buffers only;
# validation, coercion and thread-count resolution happen in correlation.py.
# Floating-point reductions are done over fixed-size chunks whose partial
# results are merged in chunk order, so the answer never depends on how many
# threads ran.

from cython.parallel cimport prange, parallel
from libc.math cimport sqrt, floor, isnan
from libc.stdlib cimport malloc, free, qsort
from libc.string cimport memset, memcpy
from libc.stdint cimport int64_t, uint64_t
from metrics._sortcount cimport parallel_sort_count, sort_count
from metrics._checks cimport check_indices, check_segments
from metrics._moments cimport (MOMENT_FIELDS, block_moments, block_moments_plain,
                               merge_moments, zero_moments)

from metrics._openmp cimport omp_get_thread_num

import numpy as np

N_MOMENT_FIELDS = MOMENT_FIELDS  # for the Python layer

cdef enum:
    CHUNK = 4096        # doubles per co-moment chunk (x and y fit in L1/L2)
    TABLE_SIDE = 64     # levels per axis in the small-integer fast path
    TABLE_HALF = 31     # the first value sits at this offset of the table


# ---------------------------------------------------------------- co-moments
# (block layout and accuracy argument: metrics/_moments.pxd)

cdef void _segment_moments(const double* x, const double* y, Py_ssize_t n,
                           double* acc) noexcept nogil:
    """Serial chunked moments of one segment (same chunking as the parallel path)."""
    cdef double part[MOMENT_FIELDS]
    cdef Py_ssize_t start, m
    zero_moments(acc)
    start = 0
    while start < n:
        m = n - start
        if m > CHUNK:
            m = CHUNK
        block_moments(x + start, y + start, m, part)
        merge_moments(acc, part)
        start += m


def comoments(const double[::1] x, const double[::1] y, int n_threads, bint anchored=True):
    """Return (n, mean_x, mean_y, Sxx, Syy, Sxy) of paired data.

    Chunks of CHUNK pairs are reduced in parallel (two passes over each chunk,
    from cache), then merged left to right, so the result is the same for
    every thread count.  ``anchored`` selects the corrected two-pass blocks
    that stay exact under a large common offset; without it the faster plain
    blocks are used (exact only when the mean is not large against the
    spread -- the caller checks, see _statistics._pearson_statistic).  The chunk index is handed out
    dynamically: on a busy machine the free threads take the work of a
    descheduled one.
    """
    cdef Py_ssize_t n = x.shape[0]
    cdef Py_ssize_t n_chunks = (n + CHUNK - 1) // CHUNK
    cdef Py_ssize_t c, start, m
    cdef double acc[MOMENT_FIELDS]
    if y.shape[0] != n:
        raise ValueError(f"comoments: {n} x values against {y.shape[0]} y values")
    if n == 0:
        return (0.0, np.nan, np.nan, np.nan, np.nan, np.nan)
    parts_arr = np.empty((n_chunks, MOMENT_FIELDS), dtype=np.float64)
    cdef double[:, ::1] parts = parts_arr
    with nogil:
        if n_threads <= 1 or n_chunks == 1:
            for c in range(n_chunks):
                start = c * CHUNK
                m = n - start
                if m > CHUNK:
                    m = CHUNK
                if anchored:
                    block_moments(&x[start], &y[start], m, &parts[c, 0])
                else:
                    block_moments_plain(&x[start], &y[start], m, &parts[c, 0])
        else:
            for c in prange(n_chunks, num_threads=n_threads, schedule='dynamic',
                            chunksize=4):
                start = c * CHUNK
                m = n - start
                if m > CHUNK:
                    m = CHUNK
                if anchored:
                    block_moments(&x[start], &y[start], m, &parts[c, 0])
                else:
                    block_moments_plain(&x[start], &y[start], m, &parts[c, 0])
        zero_moments(acc)
        for c in range(n_chunks):
            merge_moments(acc, &parts[c, 0])
    return (acc[0], acc[1] + acc[3], acc[2] + acc[4], acc[5], acc[6], acc[7])


def merge_moment_rows(const double[:, ::1] rows):
    """Fold blocks of moments (rows of MOMENT_FIELDS) in order; return the
    pooled (n, mean_x, mean_y, Sxx, Syy, Sxy)."""
    cdef double acc[MOMENT_FIELDS]
    cdef Py_ssize_t r
    if rows.shape[0] and rows.shape[1] < MOMENT_FIELDS:
        raise ValueError(f"merge_moment_rows: rows of {rows.shape[1]} < {MOMENT_FIELDS} fields")
    zero_moments(acc)
    for r in range(rows.shape[0]):
        merge_moments(acc, &rows[r, 0])
    if acc[0] == 0:
        return (0.0, np.nan, np.nan, np.nan, np.nan, np.nan)
    return (acc[0], acc[1] + acc[3], acc[2] + acc[4], acc[5], acc[6], acc[7])


# ---------------------------------------------------------------- grouping

def group_gather(const int64_t[::1] codes, Py_ssize_t n_groups,
                 const double[::1] x, const double[::1] y,
                 double[::1] xs, double[::1] ys, Py_ssize_t[::1] offsets):
    """Stable counting sort of (x, y) by group code into xs, ys.

    ``offsets`` (length n_groups + 1) receives the segment bounds.
    """
    cdef Py_ssize_t n = x.shape[0], i, g, pos
    cdef Py_ssize_t* fill
    if (n_groups < 0 or codes.shape[0] != n or y.shape[0] != n or xs.shape[0] != n
            or ys.shape[0] != n or offsets.shape[0] != n_groups + 1):
        raise ValueError("group_gather: arrays of inconsistent lengths")
    for i in range(n):
        if codes[i] < 0 or codes[i] >= n_groups:
            raise ValueError(f"group_gather: a code out of range for {n_groups} groups")
    with nogil:
        for g in range(n_groups + 1):
            offsets[g] = 0
        for i in range(n):
            offsets[codes[i] + 1] += 1
        for g in range(n_groups):
            offsets[g + 1] += offsets[g]
        fill = <Py_ssize_t*> malloc((n_groups + 1) * sizeof(Py_ssize_t))
        if fill != NULL:
            for g in range(n_groups):
                fill[g] = offsets[g]
            for i in range(n):
                g = codes[i]
                pos = fill[g]
                xs[pos] = x[i]
                ys[pos] = y[i]
                fill[g] = pos + 1
            free(fill)
    if fill == NULL:
        raise MemoryError()


def grouped_comoments(const double[::1] xs, const double[::1] ys,
                      const Py_ssize_t[::1] offsets, double[:, ::1] out,
                      int n_threads):
    """Per-segment blocks of moments (see _moments.pxd) into out[g, :]."""
    cdef Py_ssize_t G = offsets.shape[0] - 1, g
    check_segments(offsets, xs.shape[0], "grouped_comoments")
    if ys.shape[0] != xs.shape[0] or out.shape[0] < G or (G and out.shape[1] < MOMENT_FIELDS):
        raise ValueError("grouped_comoments: arrays of inconsistent shapes")
    with nogil:
        for g in prange(G, num_threads=n_threads, schedule='dynamic'):
            _segment_moments(&xs[offsets[g]], &ys[offsets[g]],
                             offsets[g + 1] - offsets[g], &out[g, 0])


# ---------------------------------------------------------------- small-integer tables

def small_int_table(const double[::1] x, const double[::1] y, int64_t[:, ::1] table,
                    int n_threads):
    """Count (x, y) pairs in a TABLE_SIDE x TABLE_SIDE table.

    Succeeds (returns (x_base, y_base)) only when every value is an integer
    within TABLE_HALF levels below ... TABLE_SIDE - TABLE_HALF - 1 levels above
    the first element of its array; returns None otherwise (the caller then
    takes the general path).  Per-thread tables are summed in thread order;
    integer sums make the result independent of the thread count.
    """
    cdef Py_ssize_t n = x.shape[0], i, k
    if y.shape[0] != n or table.shape[0] != TABLE_SIDE or table.shape[1] != TABLE_SIDE:
        raise ValueError(f"small_int_table: x and y of one length and a {TABLE_SIDE} x "
                         f"{TABLE_SIDE} table needed")
    if n == 0:
        return None
    cdef double xb = x[0] - TABLE_HALF, yb = y[0] - TABLE_HALF
    if not (xb == floor(xb) and yb == floor(yb)):
        return None
    cdef int nt = n_threads if n_threads > 0 else 1
    cdef Py_ssize_t cells = TABLE_SIDE * TABLE_SIDE
    locals_arr = np.zeros((nt, cells), dtype=np.int64)
    cdef int64_t[:, ::1] loc = locals_arr
    bad_arr = np.zeros(nt, dtype=np.int64)
    cdef int64_t[::1] bad = bad_arr
    cdef int tid
    cdef double a, b
    cdef int ia, ib
    with nogil, parallel(num_threads=nt):
        tid = omp_get_thread_num()
        for i in prange(n, schedule='dynamic', chunksize=16384):
            a = x[i] - xb
            b = y[i] - yb
            # NaN fails both comparisons, so it is rejected here too.
            if a >= 0 and a < TABLE_SIDE and b >= 0 and b < TABLE_SIDE:
                ia = <int>a
                ib = <int>b
                if ia == a and ib == b:
                    loc[tid, ia * TABLE_SIDE + ib] += 1
                else:
                    bad[tid] += 1
            else:
                bad[tid] += 1
    if bad_arr.sum() != 0:
        return None
    t = locals_arr.sum(axis=0).reshape(TABLE_SIDE, TABLE_SIDE)
    for i in range(TABLE_SIDE):
        for k in range(TABLE_SIDE):
            table[i, k] = t[i, k]
    return (xb, yb)


def table_kendall_counts(const int64_t[:, ::1] t):
    """Concordant and discordant pair counts of a contingency table (levels sorted)."""
    cdef Py_ssize_t K = t.shape[0], L = t.shape[1], a, b
    # below[a, b] = sum of t[a', b'] with a' > a and b' < b  (discordant partners)
    # above[a, b] = sum of t[a', b'] with a' > a and b' > b  (concordant partners)
    cdef int64_t con = 0, dis = 0, run
    rows_after = np.zeros(L, dtype=np.int64)   # column sums over rows a' > a
    cdef int64_t[::1] ra = rows_after
    with nogil:
        a = K - 1
        while a >= 0:
            # prefix over b of ra: discordant partners have b' < b
            run = 0
            for b in range(L):
                dis += t[a, b] * run
                run += ra[b]
            run = 0
            b = L - 1
            while b >= 0:
                con += t[a, b] * run
                run += ra[b]
                b -= 1
            for b in range(L):
                ra[b] += t[a, b]
            a -= 1
    return con, dis


# ---------------------------------------------------------------- ranks

def average_ranks_sorted(const double[::1] v, const Py_ssize_t[::1] order,
                         double[::1] ranks):
    """Average (1-based) ranks of v given an ascending argsort ``order``."""
    cdef Py_ssize_t n = v.shape[0], i = 0, j, k
    cdef double r
    if ranks.shape[0] != n:
        raise ValueError(f"average_ranks_sorted: {ranks.shape[0]} ranks for {n} values")
    check_indices(order, n, n, "average_ranks_sorted: order")
    with nogil:
        while i < n:
            j = i + 1
            while j < n and v[order[j]] == v[order[i]]:
                j += 1
            r = 0.5 * (i + 1 + j)
            for k in range(i, j):
                ranks[order[k]] = r
            i = j


# ---------------------------------------------------------------- Kendall

cdef int _cmp_double(const void* a, const void* b) noexcept nogil:
    cdef double u = (<const double*>a)[0], w = (<const double*>b)[0]
    return (u > w) - (u < w)


cdef inline void _tie_sums(const double* v, Py_ssize_t n, int64_t* pairs,
                           double* s0, double* s1) noexcept nogil:
    """For runs of equal values in sorted v: sum C(c,2), c(c-1)(c-2), c(c-1)(2c+5)."""
    cdef Py_ssize_t i = 0, j
    cdef double c
    pairs[0] = 0; s0[0] = 0; s1[0] = 0
    while i < n:
        j = i + 1
        while j < n and v[j] == v[i]:
            j += 1
        if j - i > 1:
            c = <double>(j - i)
            pairs[0] += (<int64_t>(j - i)) * (j - i - 1) // 2
            s0[0] += c * (c - 1.0) * (c - 2.0)
            s1[0] += c * (c - 1.0) * (2.0 * c + 5.0)
        i = j


def kendall_general(const double[::1] x, const double[::1] y,
                    const Py_ssize_t[::1] order, int n_threads):
    """Kendall counts for data without NaN, given an argsort ``order`` of x.

    Returns (dis, xtie, ytie, ntie, x0, x1, y0, y1) where the tie sums follow
    scipy.stats.kendalltau's variance formula.
    """
    cdef Py_ssize_t n = x.shape[0], i, j
    if y.shape[0] != n:
        raise ValueError(f"kendall_general: {n} x values against {y.shape[0]} y values")
    check_indices(order, n, n, "kendall_general: order")
    xs_arr = np.empty(n, dtype=np.float64)
    ys_arr = np.empty(n, dtype=np.float64)
    buf_arr = np.empty(n, dtype=np.float64)
    cdef double[::1] xs = xs_arr, ys = ys_arr, buf = buf_arr
    cdef int64_t dis, xtie, ytie, ntie
    cdef double x0, x1, y0, y1
    with nogil:
        for i in range(n):
            xs[i] = x[order[i]]
            ys[i] = y[order[i]]
        # within runs of equal x, order y ascending (pairs tied in x are
        # neither concordant nor discordant, so they must not count as inversions)
        i = 0
        while i < n:
            j = i + 1
            while j < n and xs[j] == xs[i]:
                j += 1
            if j - i > 1:
                qsort(&ys[i], j - i, sizeof(double), _cmp_double)
            i = j
        _tie_sums(&xs[0], n, &xtie, &x0, &x1)
        # joint ties: runs of equal (x, y) in this order
        ntie = 0
        i = 0
        while i < n:
            j = i + 1
            while j < n and xs[j] == xs[i] and ys[j] == ys[i]:
                j += 1
            ntie += (<int64_t>(j - i)) * (j - i - 1) // 2
            i = j
        dis = parallel_sort_count(&ys[0], &buf[0], n, n_threads)
        _tie_sums(&ys[0], n, &ytie, &y0, &y1)
    return dis, xtie, ytie, ntie, x0, x1, y0, y1


def grouped_chunk_moments(const double[::1] x, const double[::1] y,
                          const int64_t[::1] codes, int64_t base, Py_ssize_t n_slots,
                          double[:, :, ::1] parts, int n_threads):
    """Per chunk and per group slot (code - base): a block of moments.

    ``parts`` has shape (n_chunks, n_slots, MOMENT_FIELDS) and must be
    zeroed.  Each chunk of CHUNK rows is reduced by one thread with two passes
    from cache, anchored at the slot's first value in the chunk; the caller
    merges the chunks of every slot in chunk order.
    """
    cdef Py_ssize_t n = x.shape[0], n_chunks = parts.shape[0], c, i, lo, hi, s
    cdef double dx, dy, cnt
    cdef double* p
    if (y.shape[0] != n or codes.shape[0] != n or n_chunks != (n + CHUNK - 1) // CHUNK
            or parts.shape[1] != n_slots or (n and parts.shape[2] < MOMENT_FIELDS)):
        raise ValueError("grouped_chunk_moments: arrays of inconsistent shapes")
    for i in range(n):
        if codes[i] - base < 0 or codes[i] - base >= n_slots:
            raise ValueError(f"grouped_chunk_moments: a code outside [{base}, {base + n_slots})")
    with nogil:
        for c in prange(n_chunks, num_threads=n_threads, schedule='dynamic', chunksize=4):
            lo = c * CHUNK
            hi = lo + CHUNK
            if hi > n:
                hi = n
            for i in range(lo, hi):
                p = &parts[c, <Py_ssize_t>(codes[i] - base), 0]
                if p[0] == 0:
                    p[1] = x[i]
                    p[2] = y[i]
                p[0] += 1
                p[3] += x[i] - p[1]
                p[4] += y[i] - p[2]
            for s in range(n_slots):
                cnt = parts[c, s, 0]
                if cnt > 0:
                    parts[c, s, 3] = parts[c, s, 3] / cnt
                    parts[c, s, 4] = parts[c, s, 4] / cnt
            for i in range(lo, hi):
                p = &parts[c, <Py_ssize_t>(codes[i] - base), 0]
                dx = (x[i] - p[1]) - p[3]
                dy = (y[i] - p[2]) - p[4]
                p[5] += dx * dx
                p[6] += dy * dy
                p[7] += dx * dy


def merge_chunk_moments(const double[:, :, ::1] parts, double[:, ::1] out):
    """Fold parts[:, s, :] over chunks in order into out[s, :]."""
    cdef Py_ssize_t n_chunks = parts.shape[0], n_slots = parts.shape[1], c, s
    if n_slots and (out.shape[0] < n_slots or out.shape[1] < MOMENT_FIELDS
                    or parts.shape[2] < MOMENT_FIELDS):
        raise ValueError("merge_chunk_moments: arrays of inconsistent shapes")
    with nogil:
        for s in range(n_slots):
            zero_moments(&out[s, 0])
            for c in range(n_chunks):
                merge_moments(&out[s, 0], &parts[c, s, 0])


# ---------------------------------------------------------------- grouped Kendall

def segment_inversions(int[::1] a, const Py_ssize_t[::1] offsets, int64_t[::1] out,
                       int n_threads):
    """out[g] = strict inversions of a[offsets[g]:offsets[g + 1]] (each segment
    is sorted in place).  Segments are handed out dynamically to the threads;
    integer counts, so the thread count cannot change the result."""
    cdef Py_ssize_t G = offsets.shape[0] - 1, g, n = a.shape[0]
    check_segments(offsets, n, "segment_inversions")
    if out.shape[0] < G:
        raise ValueError(f"segment_inversions: {out.shape[0]} outputs for {G} segments")
    if n == 0:
        for g in range(G):
            out[g] = 0
        return
    buf_arr = np.empty(n, dtype=np.intc)
    cdef int[::1] buf = buf_arr
    with nogil:
        for g in prange(G, num_threads=n_threads, schedule='dynamic', chunksize=1):
            if offsets[g + 1] > offsets[g]:
                out[g] = sort_count(&a[offsets[g]], &buf[offsets[g]],
                                    offsets[g + 1] - offsets[g])
            else:
                out[g] = 0
