# Sorting and searching helpers of the kernels: small in-place sorts, a
# counting sort of sizes, binary search and the offsets of chunked fills.

from libc.stdint cimport uint64_t, int64_t
from libc.stdlib cimport calloc, free, qsort

cdef inline int cmp_u64(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t*>a)[0], y = (<const uint64_t*>b)[0]
    return (x > y) - (x < y)


cdef inline void sort_u64(uint64_t* a, int64_t n) noexcept nogil:
    """Sort ascending, in place: insertion sort for short arrays (rows), a shell
    sort (gaps 3h + 1) up to 4096 (libc's qsort spent most of its time calling
    the comparison there), qsort beyond."""
    cdef int64_t i, j, h = 1
    cdef uint64_t v
    if n > 4096:
        qsort(a, n, sizeof(uint64_t), cmp_u64)
        return
    if n > 32:
        while h < n // 3:
            h = 3 * h + 1
    while h >= 1:
        for i in range(h, n):
            v = a[i]
            j = i
            while j >= h and a[j - h] > v:
                a[j] = a[j - h]
                j -= h
            a[j] = v
        h = h // 3


cdef inline void chunk_first_slots(int64_t* counts, int64_t n_chunks, int64_t V, int64_t v,
                                   int64_t start) noexcept nogil:
    """Turn the chunks' counts of posting v (counts[c * V + v]) into each chunk's
    first slot, the chunks one after the other from ``start`` on."""
    cdef int64_t c, w, acc = start
    for c in range(n_chunks):
        w = counts[c * V + v]
        counts[c * V + v] = acc
        acc = acc + w


cdef inline int64_t lower_bound_u64(const uint64_t* a, int64_t lo, int64_t hi,
                                    uint64_t key) noexcept nogil:
    cdef int64_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo



cdef inline bint counting_sort_sizes(const int64_t* sz, int64_t n, int64_t* out) noexcept:
    """out = the stable argsort of sz[0:n] by a counting sort; False (out untouched)
    when a size is negative or the sizes span more than 4 * n + 1024 values."""
    cdef int64_t i, top = 0, acc, w
    cdef int64_t* bucket
    for i in range(n):
        if sz[i] < 0:
            return False
        if sz[i] > top:
            top = sz[i]
    if top > 4 * n + 1024:
        return False
    bucket = <int64_t*>calloc(top + 1, sizeof(int64_t))
    if bucket == NULL:
        return False
    with nogil:
        for i in range(n):
            bucket[sz[i]] += 1
        acc = 0
        for i in range(top + 1):
            w = bucket[i]
            bucket[i] = acc
            acc += w
        for i in range(n):
            out[bucket[sz[i]]] = i
            bucket[sz[i]] += 1
    free(bucket)
    return True
