# Sorting and searching helpers of the kernels: small in-place sorts, a
# counting sort of sizes, binary search and the offsets of chunked fills.

from libc.stdint cimport uint64_t, int64_t, int32_t
from libc.stdlib cimport calloc, free, qsort

cdef inline int cmp_u64(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t*>a)[0], y = (<const uint64_t*>b)[0]
    return (x > y) - (x < y)


cdef enum:
    # rows up to this long are merge-sorted through a buffer on the stack
    MERGE_SORT_MAX = 512


cdef inline void sort4_u64(uint64_t* a) noexcept nogil:
    """Four values in order by a five-comparator network (no branches)."""
    cdef uint64_t p, q
    p = a[0]; q = a[1]; a[0] = p if p < q else q; a[1] = q if p < q else p
    p = a[2]; q = a[3]; a[2] = p if p < q else q; a[3] = q if p < q else p
    p = a[0]; q = a[2]; a[0] = p if p < q else q; a[2] = q if p < q else p
    p = a[1]; q = a[3]; a[1] = p if p < q else q; a[3] = q if p < q else p
    p = a[1]; q = a[2]; a[1] = p if p < q else q; a[2] = q if p < q else p


cdef inline void merge_u64(const uint64_t* a, int64_t na, const uint64_t* b, int64_t nb,
                           uint64_t* out) noexcept nogil:
    """Two ascending runs into ``out``; the choice of each step is data, not a
    branch (random hashes would mispredict half of them)."""
    cdef int64_t i = 0, j = 0, k = 0
    cdef uint64_t x, y
    cdef bint t
    while i < na and j < nb:
        x = a[i]
        y = b[j]
        t = y < x
        out[k] = y if t else x
        k += 1
        j += t
        i += 1 - t
    while i < na:
        out[k] = a[i]
        k += 1
        i += 1
    while j < nb:
        out[k] = b[j]
        k += 1
        j += 1


cdef inline void merge_sort_u64(uint64_t* a, int64_t n, uint64_t* tmp) noexcept nogil:
    """Bottom-up merge sort of ``a`` (runs of four sorted by a network),
    ``tmp`` holding ``n`` values."""
    cdef int64_t i = 0, w = 4, s, m, e
    cdef uint64_t* src = a
    cdef uint64_t* dst = tmp
    cdef uint64_t* t
    while i + 4 <= n:
        sort4_u64(a + i)
        i += 4
    if i < n:
        insertion_sort_u64(a + i, n - i)
    while w < n:
        s = 0
        while s < n:
            m = s + w if s + w < n else n
            e = s + 2 * w if s + 2 * w < n else n
            merge_u64(src + s, m - s, src + m, e - m, dst + s)
            s += 2 * w
        t = src
        src = dst
        dst = t
        w *= 2
    if src != a:
        for i in range(n):
            a[i] = src[i]


cdef inline void sort_u64(uint64_t* a, int64_t n) noexcept nogil:
    """Sort ascending, in place: insertion sort up to 16 values, a branch-free
    merge sort up to MERGE_SORT_MAX (a row's tokens: twice the shell sort used
    before it on 24-64 random hashes), a shell sort (gaps 3h + 1) up to 4096
    (libc's qsort spent most of its time calling the comparison there), qsort
    beyond."""
    cdef int64_t i, j, h = 1
    cdef uint64_t v
    cdef uint64_t tmp[MERGE_SORT_MAX]
    if n <= 16:
        insertion_sort_u64(a, n)
        return
    if n <= MERGE_SORT_MAX:
        merge_sort_u64(a, n, tmp)
        return
    if n > 4096:
        qsort(a, n, sizeof(uint64_t), cmp_u64)
        return
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


cdef enum:
    # the hash sort's insertion pass gives up (and the row is merge-sorted) once
    # it has shifted more than this many values for each value of the row
    HASH_SHIFTS_PER_VALUE = 4
    # rows up to this long are sorted by sort_u64 (insertion): the hash sort's
    # buckets pay from 9 values on (a tenth faster on rows of about 10 tokens)
    HASH_SORT_MIN = 8


cdef inline bint insertion_sort_into_bounded(const uint64_t* src, uint64_t* dst, int64_t n,
                                             int64_t budget) noexcept nogil:
    """``dst[:n]`` = ``src[:n]`` in order, by insertion (``src`` may be ``dst``:
    each value is read before a shift can reach it), giving up once it has
    shifted more than ``budget`` values: False, and ``dst`` holds part of
    the values."""
    cdef int64_t i, j, moved = 0
    cdef uint64_t v
    if n <= 0:
        return True
    dst[0] = src[0]
    for i in range(1, n):
        v = src[i]
        j = i
        while j >= 1 and dst[j - 1] > v:
            dst[j] = dst[j - 1]
            j -= 1
        dst[j] = v
        moved += i - j
        if moved > budget:
            return False
    return True


cdef inline void insertion_sort_u64(uint64_t* a, int64_t n) noexcept nogil:
    """``a[:n]`` in order, by insertion (no bound on the shifts)."""
    insertion_sort_into_bounded(a, a, n, <int64_t>0x7FFFFFFFFFFFFFFF)


cdef inline void sort_hashes(uint64_t* a, int64_t n) noexcept nogil:
    """Sort the hashes of a row ascending, in place: the order of :func:`sort_u64`.

    Rows of HASH_SORT_MIN + 1 to MERGE_SORT_MAX values are scattered by their top bits into
    a power of two of buckets, at least as many as the values (hashes spread
    evenly, so most hold one value), then moved into place by an insertion
    sort, which finds every value within its bucket: about 5 n steps, against
    6 passes of merging for a 35-value row.  Copies of one value share a bucket
    but cost the insertion nothing among themselves (a text's frequent words:
    a bound on the values in a bucket sent such rows to the merge sort).  An
    insertion that has shifted more than HASH_SHIFTS_PER_VALUE values a value
    (values that are not evenly spread, such as hashes chosen to collide)
    stops, and the row is merge-sorted instead, so no input costs more than
    sort_u64, a bucket scan and that many shifts.
    """
    cdef int64_t i
    cdef int bits = 5, shift, b, nb
    cdef int32_t start[MERGE_SORT_MAX + 1]
    cdef uint64_t tmp[MERGE_SORT_MAX]
    cdef uint64_t v
    if n <= HASH_SORT_MIN or n > MERGE_SORT_MAX:
        sort_u64(a, n)
        return
    while (<int64_t>1 << bits) < n:
        bits += 1
    nb = 1 << bits
    shift = 64 - bits
    for b in range(nb + 1):
        start[b] = 0
    for i in range(n):
        start[(a[i] >> shift) + 1] += 1
    for b in range(1, nb + 1):
        start[b] += start[b - 1]
    for i in range(n):
        v = a[i]
        b = <int>(v >> shift)
        tmp[start[b]] = v
        start[b] += 1
    if not insertion_sort_into_bounded(tmp, a, n, HASH_SHIFTS_PER_VALUE * n):
        for i in range(n):
            a[i] = tmp[i]
        merge_sort_u64(a, n, tmp)


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
