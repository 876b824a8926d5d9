# Sorting kernels for rank statistics: an LSD radix argsort of float64 values
# (average ranks for Spearman, dense ranks and (x, y) order for Kendall) and a
# blocked merge sort that counts inversions.
#
# Floats are sorted through their bit patterns: the map
#   non-negative v -> bits(v) | 2^63,   negative v -> ~bits(v)
# sends float order to unsigned-integer order (-0.0 is first turned into
# +0.0, so equal floats get equal keys).  NaN never reaches these kernels.
#
# Each sort runs on one thread, and the two sorts of a call (x and y) run side
# by side; the inversion count sorts independent pieces in parallel and then
# merges them.  Parallel regions are few and coarse: on a busy machine every
# barrier costs a spinning thread.  Every result is an integer count or an
# exact average rank, so it is the same for every thread count.

from cython.parallel cimport prange, parallel
from libc.stdlib cimport malloc, free, qsort
from libc.string cimport memcpy, memset
from libc.stdint cimport int64_t, uint64_t, uint32_t

from metrics._sortcount cimport insertion_count, parallel_sort_count

import numpy as np

cdef enum:
    DIGIT_BITS = 11
    N_BUCKETS = 2048          # 2 ** DIGIT_BITS
    N_DIGITS = 6              # ceil(63 / DIGIT_BITS): at most 63 prefix bits
    SMALL_RUN = 24            # tie runs up to this long use insertion sort

cdef uint64_t DIGIT_MASK = N_BUCKETS - 1


# ---------------------------------------------------------------- radix argsort

cdef inline uint64_t _key(double v) noexcept nogil:
    """Order-preserving map of a (non-NaN) double to uint64."""
    cdef uint64_t u
    if v == 0.0:
        v = 0.0  # -0.0 == 0.0, so both get the key of +0.0
    memcpy(&u, &v, sizeof(double))
    if u >> 63:
        return ~u
    return u | (<uint64_t>1 << 63)


cdef inline int _index_bits(Py_ssize_t n) noexcept nogil:
    """Bits needed to store the indices 0..n-1 (at least 1)."""
    cdef int b = 1
    while b < 64 and ((<uint64_t>1) << b) < <uint64_t>n:
        b += 1
    return b


cdef struct KeyedIndex:
    double value
    uint64_t word


cdef int _cmp_keyed(const void* a, const void* b) noexcept nogil:
    cdef double u = (<const KeyedIndex*>a).value, w = (<const KeyedIndex*>b).value
    return (u > w) - (u < w)


cdef int _fix_run(const double* v, uint64_t* w, Py_ssize_t m, uint64_t low) noexcept nogil:
    """Order a run of words that share their key prefix by the full value."""
    cdef Py_ssize_t k
    cdef double first = v[w[0] & low]
    cdef KeyedIndex* tmp
    for k in range(1, m):
        if v[w[k] & low] != first:
            break
    else:
        return 0  # all equal: nothing to do
    tmp = <KeyedIndex*> malloc(m * sizeof(KeyedIndex))
    if tmp == NULL:
        return -1
    for k in range(m):
        tmp[k].value = v[w[k] & low]
        tmp[k].word = w[k]
    qsort(tmp, m, sizeof(KeyedIndex), _cmp_keyed)
    for k in range(m):
        w[k] = tmp[k].word
    free(tmp)
    return 0


cdef uint64_t* _pack_sort(const double* v, Py_ssize_t n, int b, uint64_t* w,
                          uint64_t* buf, uint32_t* hist) noexcept nogil:
    """Sort v[0:n] as packed words: (key prefix) << b | index.

    The low b bits of a word hold the element's index; the high 64 - b bits
    hold the top of its order-preserving key.  An LSD radix sort with 11-bit
    digits orders the prefixes (digits shared by every word are skipped); a
    run of words with equal prefixes whose values are not all equal is then
    sorted by value.  Returns the buffer (``w`` or ``buf``) that holds the
    sorted words, or NULL if memory ran out.  ``hist`` holds N_DIGITS *
    N_BUCKETS counters.
    """
    cdef uint64_t low = ((<uint64_t>1) << b) - 1
    cdef int n_pass = (64 - b + DIGIT_BITS - 1) // DIGIT_BITS
    cdef Py_ssize_t i, j, bk
    cdef int d, shift
    cdef uint64_t word, pre
    cdef uint32_t c, total, pos
    cdef uint32_t* h
    cdef uint64_t* src = w
    cdef uint64_t* dst = buf
    cdef uint64_t* tmp
    memset(hist, 0, N_DIGITS * N_BUCKETS * sizeof(uint32_t))
    for i in range(n):
        word = (_key(v[i]) & ~low) | <uint64_t>i
        w[i] = word
        for d in range(n_pass):
            hist[d * N_BUCKETS + ((word >> (b + d * DIGIT_BITS)) & DIGIT_MASK)] += 1
    for d in range(n_pass):
        shift = b + d * DIGIT_BITS
        h = hist + d * N_BUCKETS
        if h[(src[0] >> shift) & DIGIT_MASK] == <uint32_t>n:
            continue  # every word has this digit
        total = 0
        for bk in range(N_BUCKETS):
            c = h[bk]
            h[bk] = total
            total += c
        for i in range(n):
            word = src[i]
            bk = <Py_ssize_t>((word >> shift) & DIGIT_MASK)
            pos = h[bk]
            h[bk] = pos + 1
            dst[pos] = word
        tmp = src; src = dst; dst = tmp
    i = 0
    while i < n:
        pre = src[i] >> b
        j = i + 1
        while j < n and (src[j] >> b) == pre:
            j += 1
        if j - i > 1 and _fix_run(v, src + i, j - i, low) != 0:
            return NULL
        i = j
    return src


cdef inline Py_ssize_t _run_end(const double* v, const uint64_t* w, Py_ssize_t i,
                                Py_ssize_t n, int b) noexcept nogil:
    """End of the run of equal values that starts at sorted position i."""
    cdef uint64_t low = ((<uint64_t>1) << b) - 1
    cdef uint64_t pre = w[i] >> b
    cdef double first
    cdef Py_ssize_t j = i + 1
    if j < n and (w[j] >> b) == pre:
        first = v[w[i] & low]
        while j < n and (w[j] >> b) == pre and v[w[j] & low] == first:
            j += 1
    return j


cdef struct SortBuffers:
    uint64_t* w
    uint64_t* buf
    uint32_t* hist


cdef int _alloc_sort(SortBuffers* s, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t m = n if n > 0 else 1
    s.w = <uint64_t*> malloc(m * sizeof(uint64_t))
    s.buf = <uint64_t*> malloc(m * sizeof(uint64_t))
    s.hist = <uint32_t*> malloc(N_DIGITS * N_BUCKETS * sizeof(uint32_t))
    if s.w == NULL or s.buf == NULL or s.hist == NULL:
        return -1
    return 0


cdef void _free_sort(SortBuffers* s) noexcept nogil:
    free(s.w); free(s.buf); free(s.hist)
    s.w = NULL; s.buf = NULL; s.hist = NULL


cdef int _average_ranks(const double* v, Py_ssize_t n, double* ranks) noexcept nogil:
    """ranks[i] = 1-based average rank of v[i]; -1 if memory ran out."""
    cdef SortBuffers s
    cdef Py_ssize_t i = 0, j, k
    cdef int b = _index_bits(n)
    cdef uint64_t low = ((<uint64_t>1) << b) - 1
    cdef uint64_t* w
    cdef double r
    if _alloc_sort(&s, n) != 0:
        _free_sort(&s)
        return -1
    w = _pack_sort(v, n, b, s.w, s.buf, s.hist)
    if w == NULL:
        _free_sort(&s)
        return -1
    while i < n:
        j = _run_end(v, w, i, n, b)
        r = 0.5 * (i + 1 + j)
        for k in range(i, j):
            ranks[w[k] & low] = r
        i = j
    _free_sort(&s)
    return 0


def average_ranks(const double[::1] v, double[::1] ranks):
    """Average (1-based) ranks of v (no NaN, fewer than 2**32 values) into ranks."""
    cdef Py_ssize_t n = v.shape[0]
    cdef int status = 0
    if ranks.shape[0] != n:
        raise ValueError(f"average_ranks: {ranks.shape[0]} ranks for {n} values")
    if n == 0:
        return
    with nogil:
        status = _average_ranks(&v[0], n, &ranks[0])
    if status != 0:
        raise MemoryError()


def average_ranks2(const double[::1] x, const double[::1] y, double[::1] rx,
                   double[::1] ry, int n_threads):
    """Average (1-based) ranks of x into rx and of y into ry.

    The two radix sorts run at the same time when n_threads >= 2.  x and y
    must hold no NaN and fewer than 2**32 values.
    """
    cdef Py_ssize_t n = x.shape[0], t
    cdef int status[2]
    cdef int nt = 2 if n_threads >= 2 else 1
    if y.shape[0] != n or rx.shape[0] != n or ry.shape[0] != n:
        raise ValueError("average_ranks2: x, y, rx and ry differ in length")
    status[0] = 0
    status[1] = 0
    if n == 0:
        return
    with nogil:
        for t in prange(2, num_threads=nt, schedule='dynamic', chunksize=1):
            if t == 0:
                status[0] = _average_ranks(&x[0], n, &rx[0])
            else:
                status[1] = _average_ranks(&y[0], n, &ry[0])
    if status[0] != 0 or status[1] != 0:
        raise MemoryError()


# ---------------------------------------------------------------- inversions

def count_inversions(uint32_t[::1] a, int n_threads):
    """Sort ``a`` in place and return the number of pairs i < j with a[i] > a[j]."""
    cdef Py_ssize_t n = a.shape[0]
    cdef int64_t inv
    if n < 2:
        return 0
    buf = np.empty(n, dtype=np.uint32)
    cdef uint32_t[::1] b = buf
    with nogil:
        inv = parallel_sort_count(&a[0], &b[0], n, n_threads)
    return inv


# ---------------------------------------------------------------- Kendall

cdef int _cmp_u32(const void* a, const void* b) noexcept nogil:
    cdef uint32_t u = (<const uint32_t*>a)[0], w = (<const uint32_t*>b)[0]
    return (u > w) - (u < w)


cdef void _sort_small_u32(uint32_t* a, Py_ssize_t n) noexcept nogil:
    if n > SMALL_RUN:
        qsort(a, n, sizeof(uint32_t), _cmp_u32)
    else:
        insertion_count(a, n)


cdef inline void _add_run(Py_ssize_t c, int64_t* pairs, double* s0, double* s1) noexcept nogil:
    cdef double d = <double>c
    pairs[0] += (<int64_t>c) * (c - 1) // 2
    s0[0] += d * (d - 1.0) * (d - 2.0)
    s1[0] += d * (d - 1.0) * (2.0 * d + 5.0)


cdef int _dense_ranks(const double* v, Py_ssize_t n, uint32_t* dense, int64_t* pairs,
                      double* s0, double* s1) noexcept nogil:
    """dense[i] = number of distinct values below v[i]; tie sums of v's runs."""
    cdef SortBuffers s
    cdef Py_ssize_t i = 0, j, k
    cdef int b = _index_bits(n)
    cdef uint64_t low = ((<uint64_t>1) << b) - 1
    cdef uint64_t* w
    cdef uint32_t r = 0
    pairs[0] = 0; s0[0] = 0; s1[0] = 0
    if _alloc_sort(&s, n) != 0:
        _free_sort(&s)
        return -1
    w = _pack_sort(v, n, b, s.w, s.buf, s.hist)
    if w == NULL:
        _free_sort(&s)
        return -1
    while i < n:
        j = _run_end(v, w, i, n, b)
        if j - i > 1:
            _add_run(j - i, pairs, s0, s1)
        for k in range(i, j):
            dense[w[k] & low] = r
        r += 1
        i = j
    _free_sort(&s)
    return 0


cdef int _x_order(const double* v, Py_ssize_t n, uint64_t* w, uint64_t* buf,
                  uint64_t** out) noexcept nogil:
    """Sorted words of v (see _pack_sort) into w or buf; out[0] says which."""
    cdef uint32_t* hist = <uint32_t*> malloc(N_DIGITS * N_BUCKETS * sizeof(uint32_t))
    if hist == NULL:
        return -1
    out[0] = _pack_sort(v, n, _index_bits(n), w, buf, hist)
    free(hist)
    return 0 if out[0] != NULL else -1


def kendall_counts(const double[::1] x, const double[::1] y, int n_threads):
    """Kendall counts for data without NaN (fewer than 2**32 pairs).

    Returns (dis, xtie, ytie, ntie, x0, x1, y0, y1) as
    ``_corr.kendall_general``: discordant pairs, pairs tied in x, in y and in
    both, and the tie sums of scipy.stats.kendalltau's variance.

    x is radix-sorted while y is turned into dense ranks on another thread;
    the dense y ranks in (x, y) order are then merge-sorted, and their
    inversions are the discordant pairs.
    """
    cdef Py_ssize_t n = x.shape[0], t, i, j, k
    cdef int status[2]
    cdef int64_t dis = 0, xtie = 0, ytie = 0, ntie = 0
    cdef double x0 = 0, x1 = 0, y0 = 0, y1 = 0
    cdef int nt = n_threads if n_threads > 0 else 1
    cdef int b = _index_bits(n)
    cdef uint64_t low = ((<uint64_t>1) << b) - 1
    if y.shape[0] != n:
        raise ValueError(f"kendall_counts: {n} x values against {y.shape[0]} y values")
    if n < 2:
        return 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0
    w_arr = np.empty(n, dtype=np.uint64)
    buf_arr = np.empty(n, dtype=np.uint64)
    ry_arr = np.empty(n, dtype=np.uint32)
    p_arr = np.empty(n, dtype=np.uint32)
    cdef uint64_t[::1] w_mv = w_arr, buf_mv = buf_arr
    cdef uint32_t[::1] ry = ry_arr, p_mv = p_arr
    cdef uint64_t* wx = NULL
    cdef uint32_t* p = &p_mv[0]
    status[0] = 0
    status[1] = 0
    with nogil:
        for t in prange(2, num_threads=2 if nt >= 2 else 1, schedule='dynamic',
                        chunksize=1):
            if t == 0:
                status[0] = _x_order(&x[0], n, &w_mv[0], &buf_mv[0], &wx)
            else:
                status[1] = _dense_ranks(&y[0], n, &ry[0], &ytie, &y0, &y1)
    if status[0] != 0 or status[1] != 0:
        raise MemoryError()
    with nogil:
        # the y ranks in x order ...
        for k in range(n):
            p[k] = ry[wx[k] & low]
        # ... with y ascending within runs of tied x
        i = 0
        while i < n:
            j = _run_end(&x[0], wx, i, n, b)
            if j - i > 1:
                _add_run(j - i, &xtie, &x0, &x1)
                _sort_small_u32(p + i, j - i)
                k = i
                while k < j:
                    t = k + 1
                    while t < j and p[t] == p[k]:
                        t += 1
                    ntie += (<int64_t>(t - k)) * (t - k - 1) // 2
                    k = t
            i = j
        dis = parallel_sort_count(p, &ry[0], n, nt)
    return dis, xtie, ytie, ntie, x0, x1, y0, y1
