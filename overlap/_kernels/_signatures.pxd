# Token signatures: bit sketches of a row that bound an intersection from
# above without reading the rows (see can_reach, sig_admits).

from libc.stdint cimport uint64_t, int64_t, int32_t

from overlap._kernels._bounds cimport differing_may_reach
from overlap._kernels._hash cimport fmix64
from overlap._kernels._types cimport Coll, SIGW

cdef extern from "_sigscan.h" nogil:
    ctypedef int (*sig_scan_fn)(const uint64_t* sig, int64_t* p, int64_t end, uint64_t qsig,
                                int F, int b, uint64_t mask, const int* allowed,
                                int64_t* out, int room) noexcept nogil
    sig_scan_fn sig_scan_for(int level) noexcept
    # set bits of x (SWAR: no libgcc call and no -mpopcnt needed)
    int popcount64 "sig_popcount_swar"(uint64_t x) noexcept


cdef inline void row_signature(const uint64_t* h, int64_t n, uint64_t* sig) noexcept nogil:
    """One bit per token out of SIGW*64: 2|x ∩ y| <= |x| + |y| - popcount(sig_x ^ sig_y)."""
    cdef int64_t i
    cdef uint64_t g
    cdef int w
    for w in range(SIGW):
        sig[w] = 0
    for i in range(n):
        g = fmix64(h[i])
        sig[g >> 62] |= (<uint64_t>1) << ((g >> 56) & 63)


cdef inline bint can_reach(int m, int64_t qs, const uint64_t* qsig, int64_t rs, const uint64_t* rsig,
                           double cut) noexcept nogil:
    """False when the score of the two rows is surely below ``cut``: their
    signatures differ in d bits, so they share at most (qs + rs - d) / 2
    tokens (differing_may_reach)."""
    cdef int64_t d = 0
    cdef int w
    for w in range(SIGW):
        d += popcount64(qsig[w] ^ rsig[w])
    return differing_may_reach(m, qs, rs, d, cut)


cdef inline uint64_t row_sig64(const Coll* C, int64_t i) noexcept nogil:
    """Row i's 64-bit signature: 64 // F bits per field, one set per distinct token.

    Kept for every posting entry (Index.psig) so that a scan can
    rule a reference out without a random read (see sig_admits).  Field f
    owns bits [f*b, (f+1)*b) with b = 64 // F; a token sets bit
    f*b + ((mix(hash) mod 2**32) mod b).
    """
    cdef int F = C.F, f
    cdef uint64_t b = <uint64_t>(64 // F), sig = 0
    cdef int64_t t, a0, a1
    for f in range(F):
        a0 = C.ip[f * (C.n + 1) + i]
        a1 = C.ip[f * (C.n + 1) + i + 1]
        for t in range(a0, a1):
            sig |= (<uint64_t>1) << (<uint64_t>f * b
                                     + ((fmix64(C.h[t]) & <uint64_t>0xFFFFFFFFULL) % b))
    return sig
