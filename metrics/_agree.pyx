# Kernels of Krippendorff's alpha (metrics.agreement).
#
# alpha = 1 - (n - 1) * sum_u D_u / E, where, over the pairable units (two or
# more values) and their n values,
#
#   D_u = sum over ordered pairs i != j of unit u's values of delta(v_i, v_j),
#         divided by (m_u - 1);
#   E   = sum over ordered pairs of distinct values c, k of n_c n_k delta(c, k).
#
# No values x values matrix is ever built.  A unit is reduced to its distinct
# values with their counts (a handful of entries), so D_u costs O(d_u) for
# the nominal and squared-difference metrics and O(d_u^2) for the ratio
# metric.  The ordinal metric is the squared difference of mid-ranks
# (sum of the counts of the values below plus half the count of the value
# itself), so it shares the squared-difference code.  Squared differences are
# taken about an anchor inside the unit (its first value), which keeps them
# exact for data sitting on a large offset.
#
# Every unit writes its own output slot and every sum is left to the caller,
# so results are identical for every thread count.

from cython.parallel cimport prange, parallel
from libc.math cimport isnan
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, realloc, free, qsort
from libc.string cimport memcpy

import numpy as np

cdef enum:
    NOMINAL = 0
    SQUARED = 1      # interval (on the values) and ordinal (on mid-ranks)
    RATIO = 2
    SMALL_SORT = 32  # units with more values than this use qsort
    SMALL_UNIT = 16  # units with up to this many values skip the sort
    CHUNK = 1024     # units per dynamically scheduled task

LEVEL_CODES = {"nominal": NOMINAL, "ordinal": SQUARED, "interval": SQUARED, "ratio": RATIO}


# ---------------------------------------------------------------- interval, raw values

cdef int check_codes(const int32_t[:, ::1] codes, const int32_t[::1] remap, Py_ssize_t top,
                     str what) except -1:
    """ValueError unless every code (>= 0; -1 is missing) indexes ``remap`` and
    every entry of ``remap`` lies in [0, top)."""
    cdef Py_ssize_t i, u
    cdef int32_t c
    for i in range(remap.shape[0]):
        if remap[i] < 0 or remap[i] >= top:
            raise ValueError(f"{what}: a remapped code out of range [0, {top})")
    for i in range(codes.shape[0]):
        for u in range(codes.shape[1]):
            c = codes[i, u]
            if c < -1 or c >= remap.shape[0]:
                raise ValueError(f"{what}: a code out of range [-1, {remap.shape[0]})")
    return 0


def item_moments(const double[:, ::1] r, double[::1] count, double[::1] anchor,
                 double[::1] dev_mean, double[::1] ss, int n_threads):
    """Per item (column) of a raters x items matrix (NaN = missing):

    ``count`` ratings; ``anchor`` = the first rating; ``dev_mean`` = mean of
    (rating - anchor); ``ss`` = sum of squared deviations from the mean,
    computed about the anchor (two passes).
    """
    cdef Py_ssize_t R = r.shape[0], N = r.shape[1], i, u
    cdef double c, s, d, a, mu, v
    if count.shape[0] != N or anchor.shape[0] != N or dev_mean.shape[0] != N or ss.shape[0] != N:
        raise ValueError(f"item_moments: outputs of {N} items needed")
    with nogil:
        for u in prange(N, num_threads=n_threads, schedule='dynamic', chunksize=CHUNK):
            c = 0
            s = 0
            a = 0
            for i in range(R):
                v = r[i, u]
                if not isnan(v):
                    if c == 0:
                        a = v
                    c = c + 1
                    s = s + (v - a)
            if c > 0:
                mu = s / c
            else:
                mu = 0
            d = 0
            for i in range(R):
                v = r[i, u]
                if not isnan(v):
                    d = d + ((v - a) - mu) * ((v - a) - mu)
            count[u] = c
            anchor[u] = a
            dev_mean[u] = mu
            ss[u] = d


# ---------------------------------------------------------------- value codes

cdef inline uint64_t _mix(uint64_t k) noexcept nogil:
    k ^= k >> 33
    k *= <uint64_t>0xff51afd7ed558ccd
    k ^= k >> 33
    k *= <uint64_t>0xc4ceb9fe1a85ec53
    k ^= k >> 33
    return k


cdef struct ValueTable:
    uint64_t* keys      # bit patterns of the values; slot empty when code < 0
    int32_t* slot_code
    double* values      # distinct values in first-seen order
    Py_ssize_t n_values
    Py_ssize_t cap_values
    Py_ssize_t mask     # table size - 1 (a power of two minus one)


cdef int _table_init(ValueTable* t, Py_ssize_t size) noexcept nogil:
    cdef Py_ssize_t i
    t.keys = <uint64_t*> malloc(size * sizeof(uint64_t))
    t.slot_code = <int32_t*> malloc(size * sizeof(int32_t))
    t.values = <double*> malloc((size // 2) * sizeof(double))
    t.n_values = 0
    t.cap_values = size // 2
    t.mask = size - 1
    if t.keys == NULL or t.slot_code == NULL or t.values == NULL:
        return -1
    for i in range(size):
        t.slot_code[i] = -1
    return 0


cdef void _table_free(ValueTable* t) noexcept nogil:
    free(t.keys)
    free(t.slot_code)
    free(t.values)


cdef int _table_grow(ValueTable* t) noexcept nogil:
    """Double the table (keeps the load factor at most 1/2)."""
    cdef Py_ssize_t size = 2 * (t.mask + 1), i, h
    cdef uint64_t* keys = <uint64_t*> malloc(size * sizeof(uint64_t))
    cdef int32_t* codes = <int32_t*> malloc(size * sizeof(int32_t))
    cdef double* values = <double*> realloc(t.values, (size // 2) * sizeof(double))
    if values != NULL:
        t.values = values
    if keys == NULL or codes == NULL or values == NULL:
        free(keys)
        free(codes)
        return -1
    for i in range(size):
        codes[i] = -1
    for i in range(t.mask + 1):
        if t.slot_code[i] >= 0:
            h = <Py_ssize_t>(_mix(t.keys[i]) & <uint64_t>(size - 1))
            while codes[h] >= 0:
                h = (h + 1) & (size - 1)
            keys[h] = t.keys[i]
            codes[h] = t.slot_code[i]
    free(t.keys)
    free(t.slot_code)
    t.keys = keys
    t.slot_code = codes
    t.mask = size - 1
    t.cap_values = size // 2
    return 0


cdef inline int32_t _table_code(ValueTable* t, double v) noexcept nogil:
    """Code of value v (inserted when new); -2 when out of memory."""
    cdef uint64_t k
    cdef Py_ssize_t h
    if v == 0.0:
        v = 0.0  # -0.0 == 0.0: one code for both
    memcpy(&k, &v, sizeof(double))
    h = <Py_ssize_t>(_mix(k) & <uint64_t>t.mask)
    while t.slot_code[h] >= 0:
        if t.keys[h] == k:
            return t.slot_code[h]
        h = (h + 1) & t.mask
    if t.n_values + 1 > t.cap_values:
        if _table_grow(t) != 0:
            return -2
        return _table_code(t, v)
    t.keys[h] = k
    t.slot_code[h] = <int32_t>t.n_values
    t.values[t.n_values] = v
    t.n_values += 1
    return t.slot_code[h]


def encode_values(const double[:, ::1] r, int32_t[:, ::1] codes, Py_ssize_t max_distinct):
    """Code every cell by its value (-1 for NaN): codes index the returned
    array of distinct values, in first-seen (row-major) order.  Returns None
    as soon as there are more than ``max_distinct`` values (a sort is then
    faster than a table that no longer fits in cache)."""
    cdef Py_ssize_t R = r.shape[0], N = r.shape[1], i, u
    cdef ValueTable t
    cdef int32_t code
    cdef int failed = 0, too_many = 0
    cdef double v
    if codes.shape[0] != R or codes.shape[1] != N:
        raise ValueError("encode_values: codes and ratings differ in shape")
    with nogil:
        if _table_init(&t, 1024) != 0:
            failed = 1
        else:
            for i in range(R):
                for u in range(N):
                    v = r[i, u]
                    if isnan(v):
                        codes[i, u] = -1
                    else:
                        code = _table_code(&t, v)
                        if code < 0:
                            failed = 1
                            break
                        if code >= max_distinct:
                            too_many = 1
                            break
                        codes[i, u] = code
                if failed or too_many:
                    break
    cdef double[::1] ov
    try:
        if failed:
            raise MemoryError("krippendorff_alpha: out of memory while collecting the values")
        if too_many:
            return None
        out = np.empty(t.n_values, dtype=np.float64)
        ov = out
        for i in range(t.n_values):
            ov[i] = t.values[i]
        return out
    finally:
        _table_free(&t)


def value_totals(const int32_t[:, ::1] codes, const int32_t[::1] remap,
                 const double[::1] count, int64_t[::1] totals):
    """totals[remap[code]] += 1 for every coded cell of a pairable unit (count >= 2)."""
    cdef Py_ssize_t R = codes.shape[0], N = codes.shape[1], i, u
    cdef int32_t code
    if count.shape[0] != N:
        raise ValueError(f"value_totals: {count.shape[0]} counts for {N} units")
    check_codes(codes, remap, totals.shape[0], "value_totals")
    with nogil:
        for i in range(R):
            for u in range(N):
                code = codes[i, u]
                if code >= 0 and count[u] >= 2:
                    totals[remap[code]] += 1


# ---------------------------------------------------------------- one unit

cdef double _unit_term(const int32_t* code, const double* w, Py_ssize_t d, double m,
                       const double* t, int level) noexcept nogil:
    """D_u of one unit given as d distinct value codes with counts w (total m >= 2)."""
    cdef Py_ssize_t a, b
    cdef double s, s2, anchor, mu, diff, xa, xb, q, tot
    if level == NOMINAL:
        s2 = 0
        for a in range(d):
            s2 = s2 + w[a] * w[a]
        return (m * m - s2) / (m - 1)
    if level == SQUARED:
        anchor = t[code[0]]
        s = 0
        for a in range(d):
            s = s + w[a] * (t[code[a]] - anchor)
        mu = s / m
        s2 = 0
        for a in range(d):
            diff = (t[code[a]] - anchor) - mu
            s2 = s2 + w[a] * diff * diff
        return 2 * m * s2 / (m - 1)
    tot = 0
    for a in range(d):
        xa = t[code[a]]
        for b in range(a + 1, d):
            xb = t[code[b]]
            if xa + xb != 0:
                q = (xa - xb) / (xa + xb)
                tot = tot + w[a] * w[b] * q * q
    return 2 * tot / (m - 1)


cdef double _unit_term_raw(const int32_t* code, Py_ssize_t m, const double* t,
                           int level) noexcept nogil:
    """D_u of one unit given as its m >= 2 value codes (repeats allowed, any order);
    O(m^2), for small units: no sort, no branches on the data."""
    cdef Py_ssize_t a, b
    cdef double s, s2, anchor, mu, diff, xa, xb, q, tot, dm = <double>m
    cdef Py_ssize_t equal
    if level == NOMINAL:
        equal = 0
        for a in range(m):
            for b in range(a + 1, m):
                equal = equal + (code[a] == code[b])
        return (dm * (dm - 1) - 2.0 * equal) / (dm - 1)
    if level == SQUARED:
        anchor = t[code[0]]
        s = 0
        for a in range(m):
            s = s + (t[code[a]] - anchor)
        mu = s / dm
        s2 = 0
        for a in range(m):
            diff = (t[code[a]] - anchor) - mu
            s2 = s2 + diff * diff
        return 2 * dm * s2 / (dm - 1)
    tot = 0
    for a in range(m):
        xa = t[code[a]]
        for b in range(a + 1, m):
            xb = t[code[b]]
            if xa + xb != 0:
                q = (xa - xb) / (xa + xb)
                tot = tot + q * q
    return 2 * tot / (dm - 1)


cdef int _cmp_int32(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0], y = (<const int32_t*>b)[0]
    return (x > y) - (x < y)


cdef void _sort_codes(int32_t* a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef int32_t v
    if n > SMALL_SORT:
        qsort(a, n, sizeof(int32_t), _cmp_int32)
        return
    for i in range(1, n):
        v = a[i]
        j = i
        while j > 0 and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
        a[j] = v


cdef Py_ssize_t _collapse(int32_t* a, Py_ssize_t n, double* w) noexcept nogil:
    """Sorted codes -> distinct codes (in place) with their counts; returns how many."""
    cdef Py_ssize_t i = 0, j, d = 0
    while i < n:
        j = i + 1
        while j < n and a[j] == a[i]:
            j += 1
        a[d] = a[i]
        w[d] = j - i
        d += 1
        i = j
    return d


# ---------------------------------------------------------------- all units

def unit_disagreement_codes(const int32_t[:, ::1] codes, const int32_t[::1] remap,
                            const double[::1] t, int level, double[::1] count,
                            double[::1] out, int n_threads):
    """Per unit (column of a raters x units code matrix, -1 = missing): the
    number of values ``count[u]`` and ``out[u]`` = D_u (0 when count < 2).
    A cell's value code is ``remap[codes[i, u]]``; ``t`` maps value codes to
    the numbers the metric uses."""
    cdef Py_ssize_t R = codes.shape[0], N = codes.shape[1], i, u, k, d
    cdef int32_t* buf
    cdef double* w
    cdef int32_t c
    cdef int failed = 0
    cdef int* failp = &failed
    if count.shape[0] != N or out.shape[0] != N:
        raise ValueError(f"unit_disagreement_codes: outputs of {N} units needed")
    check_codes(codes, remap, t.shape[0], "unit_disagreement_codes")
    with nogil, parallel(num_threads=n_threads):
        buf = <int32_t*> malloc((R + 1) * sizeof(int32_t))
        w = <double*> malloc((R + 1) * sizeof(double))
        try:
            if buf == NULL or w == NULL:
                failp[0] = 1
            else:
                for u in prange(N, schedule='dynamic', chunksize=CHUNK):
                    k = 0
                    for i in range(R):
                        c = codes[i, u]
                        if c >= 0:
                            buf[k] = remap[c]
                            k = k + 1
                    count[u] = k
                    if k < 2:
                        out[u] = 0
                    elif k <= SMALL_UNIT:
                        out[u] = _unit_term_raw(buf, k, &t[0], level)
                    else:
                        _sort_codes(buf, k)
                        d = _collapse(buf, k, w)
                        out[u] = _unit_term(buf, w, d, <double>k, &t[0], level)
        finally:
            free(buf)
            free(w)
    if failed:
        raise MemoryError("krippendorff_alpha: out of memory")


def unit_disagreement_counts(const double[:, ::1] counts, const double[::1] t, int level,
                             double[::1] total, double[::1] out, int n_threads):
    """As ``unit_disagreement_codes`` for units given as a units x values matrix
    of counts: ``total[u]`` = the unit's number of values, ``out[u]`` = D_u."""
    cdef Py_ssize_t N = counts.shape[0], V = counts.shape[1], u, c, d
    cdef int32_t* buf
    cdef double* w
    cdef double m, x
    cdef int failed = 0
    cdef int* failp = &failed
    if total.shape[0] != N or out.shape[0] != N or t.shape[0] < V:
        raise ValueError(f"unit_disagreement_counts: outputs of {N} units and {V} values needed")
    with nogil, parallel(num_threads=n_threads):
        buf = <int32_t*> malloc((V + 1) * sizeof(int32_t))
        w = <double*> malloc((V + 1) * sizeof(double))
        try:
            if buf == NULL or w == NULL:
                failp[0] = 1
            else:
                for u in prange(N, schedule='dynamic', chunksize=CHUNK):
                    d = 0
                    m = 0
                    for c in range(V):
                        x = counts[u, c]
                        if x != 0:
                            buf[d] = <int32_t>c
                            w[d] = x
                            d = d + 1
                            m = m + x
                    total[u] = m
                    if m < 2:
                        out[u] = 0
                    else:
                        out[u] = _unit_term(buf, w, d, m, &t[0], level)
        finally:
            free(buf)
            free(w)
    if failed:
        raise MemoryError("krippendorff_alpha: out of memory")


# ---------------------------------------------------------------- expected, ratio

def ratio_expected(const double[::1] x, const double[::1] n, double[::1] row, int n_threads,
                   Py_ssize_t first=0):
    """row[c] = sum_k n[k] ((x[first + c] - x[k]) / (x[first + c] + x[k]))^2 (0 where
    the sum is 0) for c < len(row): rows ``first ..`` of the V x V sum, O(len(row) V)
    time, so a caller can split the O(V^2) work into short calls."""
    cdef Py_ssize_t V = x.shape[0], m = row.shape[0], c, k
    cdef double s, q, xc
    if n.shape[0] != V:
        raise ValueError("ratio_expected: x and n differ in length")
    if first < 0 or m > V - first:
        raise ValueError(f"ratio_expected: rows {first}..{first + m} outside 0..{V}")
    with nogil:
        for c in prange(m, num_threads=n_threads, schedule='dynamic', chunksize=64):
            s = 0
            xc = x[first + c]
            for k in range(V):
                if xc + x[k] != 0:
                    q = (xc - x[k]) / (xc + x[k])
                    s = s + n[k] * q * q
            row[c] = s
