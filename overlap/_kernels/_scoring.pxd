# Exact and bounded scores of one (query, reference) pair: sorted merges,
# stopped early once the pair surely falls below a cut.

from libc.stdint cimport uint64_t, int64_t, uint32_t

from overlap._kernels._bounds cimport loose_need, score
from overlap._kernels._setops cimport intersect_bags, intersect_sets
from overlap._kernels._signatures cimport can_reach
from overlap._kernels._types cimport Coll, Index, REC, SIGW

cdef inline bint signatures_reach(int m, const Index* X, int64_t r, int F, const int64_t* qsz,
                                  const uint64_t* qsig, double cut) noexcept nogil:
    """can_reach for every field of reference r (its records are contiguous)."""
    cdef const int64_t* rec = X.rrec + REC * F * r
    cdef int f
    for f in range(F):
        if not can_reach(m, qsz[f], qsig + SIGW * f, rec[REC * f],
                         <const uint64_t*>(rec + REC * f + 3), cut):
            return False
    return True



cdef inline int64_t field_inter(const Coll* Q, int64_t qi, const Coll* R, int64_t ri,
                                int f) noexcept nogil:
    cdef int64_t a0 = Q.ip[f * (Q.n + 1) + qi], a1 = Q.ip[f * (Q.n + 1) + qi + 1]
    cdef int64_t b0 = R.ip[f * (R.n + 1) + ri], b1 = R.ip[f * (R.n + 1) + ri + 1]
    if Q.c != NULL:
        return intersect_bags(Q.h + a0, Q.c + a0, a1 - a0, R.h + b0, R.c + b0, b1 - b0)
    return intersect_sets(Q.h + a0, a1 - a0, R.h + b0, b1 - b0)


cdef inline double exact_score(int m, const Coll* Q, int64_t qi, const Coll* R, int64_t ri,
                               int skip_field, int64_t skip_inter) noexcept nogil:
    """min over fields of Dice; field ``skip_field`` uses the known ``skip_inter``."""
    cdef double s = 2.0, d
    cdef int f
    cdef int64_t inter
    for f in range(Q.F):
        if f == skip_field:
            inter = skip_inter
        else:
            inter = field_inter(Q, qi, R, ri, f)
        d = score(m, inter, Q.sz[f * Q.n + qi], R.sz[f * R.n + ri])
        if d < s:
            s = d
        if s == 0.0:
            break
    return s


cdef inline int64_t bounded_inter(const uint64_t* a, const uint32_t* ca, int64_t na,
                                  const uint64_t* b, const uint32_t* cb, int64_t nb,
                                  int64_t need, int64_t mass_a, int64_t mass_b) noexcept nogil:
    """|a ∩ b| (multiset-aware), or -1 as soon as it surely stays below ``need``.

    ``mass_a``/``mass_b`` are the total masses (sizes); the unmatched rest of
    each side bounds what is still to come.
    """
    cdef int64_t i = 0, j = 0, c = 0, ra = mass_a, rb = mass_b, w
    cdef uint64_t x, y
    while i < na and j < nb:
        if c + (ra if ra < rb else rb) < need:
            return -1
        x = a[i]
        y = b[j]
        if x == y:
            if ca != NULL:
                w = ca[i] if ca[i] < cb[j] else cb[j]
                ra -= ca[i]
                rb -= cb[j]
            else:
                w = 1
                ra -= 1
                rb -= 1
            c += w
            i += 1
            j += 1
        elif x < y:
            ra -= ca[i] if ca != NULL else 1
            i += 1
        else:
            rb -= cb[j] if cb != NULL else 1
            j += 1
    return c


cdef inline int64_t bounded_inter_sets(const uint64_t* a, int64_t na, const uint64_t* b,
                                       int64_t nb, int64_t need) noexcept nogil:
    """|a ∩ b| of two ascending sets, or -1 once it surely stays below ``need``.

    Branch-free steps (the comparisons feed the counters directly), so the
    merge costs no mispredictions; the early exit is checked every 8 steps.
    """
    cdef int64_t i = 0, j = 0, c = 0, step = 0, ra, rb
    cdef uint64_t x, y
    while i < na and j < nb:
        if (step & 7) == 0:
            ra = na - i
            rb = nb - j
            if c + (ra if ra < rb else rb) < need:
                return -1
        step += 1
        x = a[i]
        y = b[j]
        c += x == y
        i += x <= y
        j += y <= x
    return c


cdef inline double bounded_score(int m, const Coll* Q, int64_t qi, const Coll* R, const Index* X,
                                 int64_t ri, double cut, int known_field,
                                 int64_t known_inter) noexcept nogil:
    """min over fields of Dice, or 0.0 once some field surely falls below ``cut``.

    Field ``known_field`` (if >= 0) uses the intersection ``known_inter``.
    Reference facts come from the index's per-reference records.
    """
    cdef double s = 2.0, dd
    cdef int f
    cdef int64_t a0, a1, b0, b1, qs, rs, need, inter
    cdef const int64_t* rec = X.rrec + REC * Q.F * ri
    for f in range(Q.F):
        a0 = Q.ip[f * (Q.n + 1) + qi]
        a1 = Q.ip[f * (Q.n + 1) + qi + 1]
        rs = rec[REC * f]
        b0 = rec[REC * f + 1]
        b1 = rec[REC * f + 2]
        qs = Q.sz[f * Q.n + qi]
        # no more than the smallest count that reaches the cut
        need = loose_need(m, cut, qs, rs)
        if f == known_field:
            inter = known_inter
        elif Q.c != NULL:
            inter = bounded_inter(Q.h + a0, Q.c + a0, a1 - a0, R.h + b0, R.c + b0, b1 - b0,
                                  need, qs, rs)
        else:
            inter = bounded_inter_sets(Q.h + a0, a1 - a0, R.h + b0, b1 - b0, need)
        if inter < 0:
            return 0.0
        dd = score(m, inter, qs, rs)
        if dd < s:
            s = dd
        if s == 0.0:
            break
    return s


cdef inline bint rows_identical(const Coll* Q, int64_t qi, const Coll* R,
                                int64_t ri) noexcept nogil:
    cdef int f
    cdef int64_t a0, a1, b0, b1, t
    for f in range(Q.F):
        a0 = Q.ip[f * (Q.n + 1) + qi]
        a1 = Q.ip[f * (Q.n + 1) + qi + 1]
        b0 = R.ip[f * (R.n + 1) + ri]
        b1 = R.ip[f * (R.n + 1) + ri + 1]
        if a1 - a0 != b1 - b0:
            return False
        for t in range(a1 - a0):
            if Q.h[a0 + t] != R.h[b0 + t]:
                return False
            if Q.c != NULL and Q.c[a0 + t] != R.c[b0 + t]:
                return False
    return True
