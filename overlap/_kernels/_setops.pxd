# Set operations on sorted hash rows: sorted-merge intersections, the Dice
# ratio from integer counts and the running top-k.

from libc.stdint cimport uint64_t, int64_t, uint32_t

cdef inline double dice(int64_t inter, int64_t size_a, int64_t size_b) noexcept nogil:
    """Dice ratio 2*inter/(a+b), 0 when both sets are empty."""
    if size_a + size_b == 0:
        return 0.0
    return 2.0 * <double>inter / <double>(size_a + size_b)

cdef inline int64_t intersect_sets(const uint64_t* a, int64_t na,
                                   const uint64_t* b, int64_t nb) noexcept nogil:
    """|a ∩ b| for two ascending, duplicate-free arrays (branch-free steps)."""
    cdef int64_t i = 0, j = 0, c = 0
    cdef uint64_t x, y
    while i < na and j < nb:
        x = a[i]
        y = b[j]
        c += x == y
        i += x <= y
        j += y <= x
    return c

cdef inline int64_t intersect_bags(const uint64_t* a, const uint32_t* ca, int64_t na,
                                   const uint64_t* b, const uint32_t* cb,
                                   int64_t nb) noexcept nogil:
    """Σ min(count_a, count_b) over the shared keys of two ascending arrays."""
    cdef int64_t i = 0, j = 0, c = 0
    cdef uint64_t x, y
    while i < na and j < nb:
        x = a[i]
        y = b[j]
        if x == y:
            c += ca[i] if ca[i] < cb[j] else cb[j]
            i += 1
            j += 1
        elif x < y:
            i += 1
        else:
            j += 1
    return c



cdef inline void topk_insert(double* ks, int64_t* ki, int* nk, int k, double sc,
                             int64_t idx) noexcept nogil:
    """Insert (sc, idx) into the running top-k ``ks``/``ki`` of ``nk[0]`` entries.

    Kept sorted by score descending, then index ascending (the tie rule);
    an entry no better than the k-th is dropped.
    """
    cdef int pos
    if nk[0] == k:
        if sc < ks[k - 1] or (sc == ks[k - 1] and idx > ki[k - 1]):
            return
        pos = k - 1
    else:
        pos = nk[0]
        nk[0] += 1
    while pos > 0 and (ks[pos - 1] < sc or (ks[pos - 1] == sc and ki[pos - 1] > idx)):
        ks[pos] = ks[pos - 1]
        ki[pos] = ki[pos - 1]
        pos -= 1
    ks[pos] = sc
    ki[pos] = idx
