# cython: freethreading_compatible=True
"""The join's pair order: pairs sorted by (left, right), stably, on several threads."""

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange, parallel
from libc.stdint cimport uint64_t, int64_t
from libc.stdlib cimport malloc, calloc, free

from overlap._kernels._sort cimport sort_u64

cnp.import_array()


ctypedef struct PairCols:
    # one part of a join's pairs: three columns of n entries
    const int64_t* a
    const int64_t* b
    const double* s
    int64_t n


cdef int place_range(const PairCols* parts, int64_t lo, int64_t hi,
                     int64_t* hist, int64_t n_left, int64_t n_right, int64_t* out_left,
                     int64_t* out_right, double* out_score) noexcept nogil:
    """One range ``[lo, hi)`` of the pairs (the parts, none empty, laid end to
    end), in order: without outputs, count every left into ``hist`` and
    return 1 at a pair outside [0, n_left) x [0, n_right); with them, put
    every pair at ``hist[left]`` (its next slot) and raise that."""
    cdef int64_t part = 0, off = lo, p, k, u
    for p in range(lo, hi):
        while off >= parts[part].n:  # a pair is left, so a part holds it
            off -= parts[part].n
            part += 1
        k = parts[part].a[off]
        if out_left == NULL:
            if k < 0 or k >= n_left or parts[part].b[off] < 0 or parts[part].b[off] >= n_right:
                return 1
            hist[k] += 1
        else:
            u = hist[k]
            hist[k] = u + 1
            out_left[u] = k
            out_right[u] = parts[part].b[off]
            out_score[u] = parts[part].s[off]
        off += 1
    return 0


cdef inline void sort_group_by_right(int64_t* right, double* score, int64_t n, uint64_t* keys,
                                     double* tmp) noexcept nogil:
    """One left's pairs by right, stably (``keys``, ``tmp``: room for n).

    (right, position) keys are unique, so sorting them is stable."""
    cdef int64_t a
    for a in range(n):
        keys[a] = (<uint64_t>right[a] << 32) | <uint64_t>a
    sort_u64(keys, n)
    for a in range(n):
        tmp[a] = score[keys[a] & <uint64_t>0xFFFFFFFFULL]
    for a in range(n):
        right[a] = <int64_t>(keys[a] >> 32)
        score[a] = tmp[a]


def sorted_pairs(parts, int64_t n_left, int64_t n_right, int n_threads=1):
    """The pairs of ``parts`` (``(left, right, score)`` triples of arrays) as
    one ``(left, right, score)`` sorted by (left, right), stably.

    ``left`` is in ``[0, n_left)``, ``right`` in ``[0, n_right)``
    (``n_right`` < 2**31).  A stable counting sort by ``left`` (the pairs cut
    into one range a thread, each from its own histogram) and a sort of each
    left's pairs by ``right`` give the order without a sort of all the pairs,
    on up to ``n_threads`` threads with the same result.  Memory: the result
    and one histogram a thread.  (Two counting sorts, right then left, would
    write twice the memory, and that memory is new inside a join.)
    """
    cdef list keep = []
    cdef int64_t total = 0, k, u, run, gmax = 0, a, b
    cdef int n_parts, j, g, bad = 0, failed = 0
    cdef const int64_t[::1] li
    cdef const int64_t[::1] ri
    cdef const double[::1] si
    if n_left < 0 or n_right < 0 or n_right > 2147483647:
        raise ValueError(f"sorted_pairs: n_left must be >= 0 and n_right in [0, 2**31), "
                         f"got {n_left}, {n_right}")
    for part_cols in parts:
        li, ri, si = part_cols
        if ri.shape[0] != li.shape[0] or si.shape[0] != li.shape[0]:
            raise ValueError("sorted_pairs: the columns of a part differ in length")
        if li.shape[0]:
            keep.append((li, ri, si))
            total += li.shape[0]
    n_parts = len(keep)
    cdef int n_seg = max(1, min(n_threads, total // 65536))
    left = np.empty(total, dtype=np.int64)
    right = np.empty(total, dtype=np.int64)
    score = np.empty(total, dtype=np.float64)
    if total == 0:
        return left, right, score
    hist = np.zeros(n_seg * (n_left + 1), dtype=np.int64)
    cdef int64_t* H = <int64_t*>cnp.PyArray_DATA(hist)
    cdef int64_t* lv = <int64_t*>cnp.PyArray_DATA(left)
    cdef int64_t* rv = <int64_t*>cnp.PyArray_DATA(right)
    cdef double* sv = <double*>cnp.PyArray_DATA(score)
    cdef uint64_t* keys
    cdef double* tmp
    cdef PairCols* cols = <PairCols*>calloc(n_parts, sizeof(PairCols))  # total > 0: n_parts >= 1
    if cols == NULL:
        raise MemoryError("overlap join: out of memory ordering the result pairs")
    try:
        for j in range(n_parts):
            li, ri, si = keep[j]
            cols[j].a = &li[0]
            cols[j].b = &ri[0]
            cols[j].s = &si[0]
            cols[j].n = li.shape[0]
        with nogil:
            # count every range's lefts (and check both indices)
            for g in prange(n_seg, num_threads=n_seg, schedule="dynamic", chunksize=1):
                bad += place_range(cols, total * g // n_seg, total * (g + 1) // n_seg,
                                   H + g * (n_left + 1), n_left, n_right, NULL, NULL, NULL)
        if bad:
            raise ValueError(f"sorted_pairs: a pair is outside [0, {n_left}) x [0, {n_right})")
        with nogil:
            # left k of range g starts after every smaller left and after left k of ranges < g
            run = 0
            for k in range(n_left):
                u = run
                for g in range(n_seg):
                    a = H[g * (n_left + 1) + k]
                    H[g * (n_left + 1) + k] = run
                    run += a
                if run - u > gmax:
                    gmax = run - u
            for g in prange(n_seg, num_threads=n_seg, schedule="dynamic", chunksize=1):
                place_range(cols, total * g // n_seg, total * (g + 1) // n_seg,
                            H + g * (n_left + 1), n_left, n_right, lv, rv, sv)
            # left k's pairs now end at H[(n_seg - 1) * (n_left + 1) + k]
            with parallel(num_threads=n_threads):
                keys = <uint64_t*>malloc(gmax * sizeof(uint64_t))
                tmp = <double*>malloc(gmax * sizeof(double))
                for k in prange(n_left, schedule="dynamic", chunksize=4096):
                    a = H[(n_seg - 1) * (n_left + 1) + k - 1] if k else 0
                    b = H[(n_seg - 1) * (n_left + 1) + k]
                    if b - a > 1 and (keys == NULL or tmp == NULL):
                        failed += 1
                    elif b - a > 1:
                        sort_group_by_right(rv + a, sv + a, b - a, keys, tmp)
                free(keys)
                free(tmp)
        if failed:
            raise MemoryError("overlap join: out of memory ordering the result pairs")
        return left, right, score
    finally:
        free(cols)
