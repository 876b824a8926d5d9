# Merge step of the merge-sort inversion count (Kendall's discordant pairs),
# shared by the correlation and bootstrap kernels.

from libc.stdint cimport int64_t

ctypedef fused real_or_int:
    double
    int


cdef inline int64_t merge_count(real_or_int* src, real_or_int* dst, Py_ssize_t lo,
                                Py_ssize_t mid, Py_ssize_t hi) noexcept nogil:
    """Merge src[lo:mid] and src[mid:hi] into dst; return strict inversions."""
    cdef Py_ssize_t i = lo, j = mid, k = lo
    cdef int64_t inv = 0
    while i < mid and j < hi:
        if src[j] < src[i]:
            dst[k] = src[j]
            inv += mid - i
            j += 1
        else:
            dst[k] = src[i]
            i += 1
        k += 1
    while i < mid:
        dst[k] = src[i]
        i += 1
        k += 1
    while j < hi:
        dst[k] = src[j]
        j += 1
        k += 1
    return inv
