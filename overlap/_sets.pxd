# Inline nogil helpers shared by the overlap kernels: stable 64-bit hashing,
# sorted-merge intersections and the Dice ratio from integer counts.

from libc.stdint cimport uint64_t, int64_t, uint32_t
from libc.stdlib cimport qsort

# The fixed constants of the hash functions.  Changing any of them changes every
# stored hash, so they are part of the on-disk contract of TokenSets.
cdef enum:
    HASH_VERSION = 1

cdef inline uint64_t fmix64(uint64_t k) noexcept nogil:
    """MurmurHash3's 64-bit finalizer: a bijection with full avalanche."""
    k ^= k >> 33
    k *= <uint64_t>0xff51afd7ed558ccdULL
    k ^= k >> 33
    k *= <uint64_t>0xc4ceb9fe1a85ec53ULL
    k ^= k >> 33
    return k

cdef inline uint64_t seed_basis(uint64_t seed) noexcept nogil:
    # FNV-1a offset basis, moved by the seed.
    return <uint64_t>0xcbf29ce484222325ULL ^ fmix64(seed + <uint64_t>0x9e3779b97f4a7c15ULL)

cdef inline uint64_t fnv_byte(uint64_t h, uint64_t b) noexcept nogil:
    return (h ^ b) * <uint64_t>0x100000001b3ULL

cdef inline uint64_t fnv_codepoint(uint64_t h, uint32_t c) noexcept nogil:
    """Feed the UTF-8 bytes of one code point (surrogates encoded as 3 bytes)."""
    if c < 0x80:
        return fnv_byte(h, c)
    if c < 0x800:
        h = fnv_byte(h, 0xC0 | (c >> 6))
        return fnv_byte(h, 0x80 | (c & 0x3F))
    if c < 0x10000:
        h = fnv_byte(h, 0xE0 | (c >> 12))
        h = fnv_byte(h, 0x80 | ((c >> 6) & 0x3F))
        return fnv_byte(h, 0x80 | (c & 0x3F))
    h = fnv_byte(h, 0xF0 | (c >> 18))
    h = fnv_byte(h, 0x80 | ((c >> 12) & 0x3F))
    h = fnv_byte(h, 0x80 | ((c >> 6) & 0x3F))
    return fnv_byte(h, 0x80 | (c & 0x3F))

cdef inline uint64_t finish_token(uint64_t h, uint64_t nbytes) noexcept nogil:
    return fmix64(h ^ (nbytes * <uint64_t>0x9e3779b97f4a7c15ULL))

cdef inline uint64_t hash_id(uint64_t x, uint64_t seed) noexcept nogil:
    """Hash of an integer token id: a bijection of the id for a fixed seed."""
    return fmix64(x ^ fmix64(seed ^ <uint64_t>0x5bd1e9955bd1e995ULL))

cdef inline uint64_t ngram_step(uint64_t g, uint64_t h) noexcept nogil:
    """Fold the next token hash into an n-gram hash (order-sensitive)."""
    return fmix64((g * <uint64_t>0x9e3779b97f4a7c15ULL) ^ (h + <uint64_t>0x632be59bd9b4e019ULL))

cdef inline double dice(int64_t inter, int64_t size_a, int64_t size_b) noexcept nogil:
    """Dice ratio 2*inter/(a+b), 0 when both sets are empty (SPEC 2)."""
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


cdef inline void chunk_first_slots(int64_t* counts, int64_t n_chunks, int64_t V, int64_t v,
                                   int64_t start) noexcept nogil:
    """Turn the chunks' counts of posting v (counts[c * V + v]) into each chunk's
    first slot, the chunks one after the other from ``start`` on."""
    cdef int64_t c, w, acc = start
    for c in range(n_chunks):
        w = counts[c * V + v]
        counts[c * V + v] = acc
        acc = acc + w
