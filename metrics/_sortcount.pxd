# Sorting with inversion counts, shared by the correlation, rank and bootstrap
# kernels (Kendall's discordant pairs are the strict inversions of the y ranks
# in x order).  One fused type; every helper is serial, ``noexcept nogil`` and
# inlined into its caller.
#
#   insertion_count(a, n)             sort a short run in place, count inversions
#   merge_split(A, na, B, nb, k)      how many of the first k merged outputs are A's
#   merge_two(...)                    outputs k0..k2 of a merge as two chains
#   merge_count(src, dst, lo, mid, hi)  merge two sorted runs, count inversions
#   merge_passes(a, buf, n, width)    bottom-up merges of sorted runs of width
#   sort_count(a, buf, n)             insertion runs + bottom-up merges (in place)
#   block_sort_count(a, buf, n)       sort_count of BLOCK-sized blocks, then merges
#   parallel_sort_count(a, buf, n, nt)  the parallel counter: pieces on nt threads

from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint32_t
from libc.string cimport memcpy

ctypedef fused sortable:
    uint32_t
    int
    double

cdef enum:
    INSERTION_RUN = 16        # runs sorted by insertion before merging
    BLOCK = 65536             # elements merge-sorted by one task (fits in L2)


cdef inline int64_t insertion_count(sortable* a, Py_ssize_t n) noexcept nogil:
    """Sort a[0:n] in place by insertion; return its strict inversions."""
    cdef Py_ssize_t i, j
    cdef sortable v
    cdef int64_t inv = 0
    for i in range(1, n):
        v = a[i]
        j = i
        while j > 0 and a[j - 1] > v:
            a[j] = a[j - 1]
            j -= 1
        inv += i - j
        a[j] = v
    return inv


cdef inline int64_t merge_range(const sortable* A, Py_ssize_t na, Py_ssize_t i,
                                 Py_ssize_t i_end, const sortable* B, Py_ssize_t j,
                                 Py_ssize_t j_end, sortable* out) noexcept nogil:
    """Merge A[i:i_end] and B[j:j_end] into out (ties: A first).

    Every element taken from B is smaller than A[i:na] (all of it: elements of
    A beyond i_end come after it in the full merge), so it adds na - i
    inversions.  Branch-free inner loop.
    """
    cdef int64_t inv = 0
    cdef sortable va, vb
    cdef Py_ssize_t t
    while i < i_end and j < j_end:
        va = A[i]
        vb = B[j]
        t = vb < va
        out[0] = vb if t else va
        out += 1
        inv += (na - i) & (-t)
        j += t
        i += 1 - t
    if j < j_end:
        inv += (na - i) * (j_end - j)
        memcpy(out, B + j, (j_end - j) * sizeof(sortable))
    elif i < i_end:
        memcpy(out, A + i, (i_end - i) * sizeof(sortable))
    return inv


cdef inline Py_ssize_t merge_split(const sortable* A, Py_ssize_t na, const sortable* B,
                                    Py_ssize_t nb, Py_ssize_t k) noexcept nogil:
    """How many of the first k outputs of merging A and B (ties: A first) come from A."""
    cdef Py_ssize_t lo = k - nb if k > nb else 0
    cdef Py_ssize_t hi = k if k < na else na
    cdef Py_ssize_t m
    while lo < hi:
        m = (lo + hi) // 2
        if A[m] <= B[k - m - 1]:
            lo = m + 1
        else:
            hi = m
    return lo


cdef inline int64_t merge_two(const sortable* A, Py_ssize_t na, const sortable* B,
                       Py_ssize_t i0, Py_ssize_t i1, Py_ssize_t i2, Py_ssize_t k0,
                       Py_ssize_t k1, Py_ssize_t k2, sortable* out) noexcept nogil:
    """Outputs k0..k2 of the merge of A and B into out[0:k2 - k0], counting
    inversions, as two independent chains (outputs k0..k1 and k1..k2, where
    i_m elements of A come before output k_m) stepped in one loop: the
    comparisons of one chain do not wait for the loads of the other."""
    cdef Py_ssize_t i = i0, j = k0 - i0, ie = i1, je = k1 - i1
    cdef Py_ssize_t u = i1, v = k1 - i1, ue = i2, ve = k2 - i2
    cdef sortable* o = out
    cdef sortable* q = out + (k1 - k0)
    cdef int64_t inv = 0, inv2 = 0
    cdef sortable va, vb, wa, wb
    cdef Py_ssize_t t, s
    while i < ie and j < je and u < ue and v < ve:
        va = A[i]
        vb = B[j]
        wa = A[u]
        wb = B[v]
        t = vb < va
        s = wb < wa
        o[0] = vb if t else va
        q[0] = wb if s else wa
        o += 1
        q += 1
        inv += (na - i) & (-t)
        inv2 += (na - u) & (-s)
        j += t
        i += 1 - t
        v += s
        u += 1 - s
    return (inv + inv2 + merge_range(A, na, i, ie, B, j, je, o)
            + merge_range(A, na, u, ue, B, v, ve, q))



cdef inline int64_t merge_count(sortable* src, sortable* dst, Py_ssize_t lo,
                                Py_ssize_t mid, Py_ssize_t hi) noexcept nogil:
    """Merge sorted src[lo:mid] and src[mid:hi] into dst[lo:hi]; return the
    strict inversions between the two runs."""
    cdef Py_ssize_t km = (hi - lo) // 2
    cdef Py_ssize_t im = merge_split(src + lo, mid - lo, src + mid, hi - mid, km)
    return merge_two(src + lo, mid - lo, src + mid, 0, im, mid - lo, 0, km, hi - lo, dst + lo)


cdef inline int64_t merge_passes(sortable* a, sortable* buf, Py_ssize_t n,
                                 Py_ssize_t width) noexcept nogil:
    """Merge the sorted runs of ``width`` of a[0:n] bottom-up until it is sorted
    (in place; buf: n elements of scratch); return the strict inversions the
    merges count."""
    cdef Py_ssize_t lo, hi, mid
    cdef int64_t inv = 0
    cdef sortable* src = a
    cdef sortable* dst = buf
    cdef sortable* tmp
    while width < n:
        lo = 0
        while lo < n:
            mid = lo + width
            if mid > n:
                mid = n
            hi = lo + 2 * width
            if hi > n:
                hi = n
            inv += merge_count(src, dst, lo, mid, hi)
            lo = hi
        tmp = src; src = dst; dst = tmp
        width *= 2
    if src != a:
        memcpy(a, src, n * sizeof(sortable))
    return inv


cdef inline int64_t sort_count(sortable* a, sortable* buf, Py_ssize_t n) noexcept nogil:
    """Sort a[0:n] in place (buf: n elements of scratch); return its strict
    inversions.  Insertion-sorted runs of INSERTION_RUN, then bottom-up merges."""
    cdef Py_ssize_t lo = 0, hi
    cdef int64_t inv = 0
    while lo < n:
        hi = lo + INSERTION_RUN
        if hi > n:
            hi = n
        inv += insertion_count(a + lo, hi - lo)
        lo = hi
    return inv + merge_passes(a, buf, n, INSERTION_RUN)


cdef inline int64_t block_sort_count(sortable* a, sortable* buf, Py_ssize_t n) noexcept nogil:
    """Serial :func:`sort_count` of a[0:n] for large n: blocks of BLOCK elements
    are sorted one after the other (each in cache), then merged bottom-up."""
    cdef Py_ssize_t lo = 0, hi
    cdef int64_t inv = 0
    while lo < n:
        hi = lo + BLOCK
        if hi > n:
            hi = n
        inv += sort_count(a + lo, buf + lo, hi - lo)
        lo = hi
    return inv + merge_passes(a, buf, n, BLOCK)


cdef inline int64_t parallel_sort_count(sortable* a, sortable* buf, Py_ssize_t n,
                                     int n_threads) noexcept nogil:
    """Sort a[0:n] ascending (in place; buf: n elements of scratch) and return
    its strict inversions, on ``n_threads`` threads.

    a is cut into a power-of-two number of pieces (at least two per thread)
    that are sorted and counted independently, in one parallel region; the
    pieces are then merged serially.  There is a single barrier, so a
    descheduled thread on a busy machine stalls the others at most once.
    Integer counts: the thread count cannot change the result.
    """
    cdef Py_ssize_t pieces = 1, piece, q, lo, hi
    cdef int64_t total = 0
    if n_threads <= 1 or n < 4 * BLOCK:
        return block_sort_count(a, buf, n)
    while pieces < 2 * n_threads:
        pieces *= 2
    piece = (n + pieces - 1) // pieces
    for q in prange(pieces, num_threads=n_threads, schedule='dynamic', chunksize=1):
        lo = q * piece
        hi = lo + piece
        if hi > n:
            hi = n
        if lo < hi:
            total += block_sort_count(a + lo, buf + lo, hi - lo)
    return total + merge_passes(a, buf, n, piece)
