# The last phases of one query of the postings kernel (see _postings_search):
# candidates bounded, bucketed by bound and verified best first, and the
# early verifications that raise the threshold.  cdef inline: the phases run
# once a query, in the module that holds search_one.

from libc.stdint cimport uint64_t, int64_t, uint32_t, int32_t, uint8_t

from overlap._kernels._bounds cimport MeasureArg, may_reach, measure_of
from overlap._kernels._limits cimport COUNT_BITS
from overlap._kernels._query cimport Query, Task, running_cut
from overlap._kernels._runner cimport PairBuf, Scratch, current_threshold, push_pair
from overlap._kernels._scoring cimport bounded_score, exact_score, signatures_reach
from overlap._kernels._setops cimport topk_insert
from overlap._kernels._types cimport (
    COUNT_MASK, FLAG_DONE, MODE_TOPK, REC, Index, overlap_prefetch, row_id,
)

cdef enum:
    # candidates verified before a long posting is scanned
    TOP_PARTIALS = 4
    # candidates whose records bucket_candidates asks for
    PREFETCH_RECORDS = 8


cdef inline void verify_now(const Task* T, Query* u, Scratch* s, int64_t r, MeasureArg mk) noexcept nogil:
    """Top-k: score reference r exactly now (it is done for this query)."""
    cdef double sc
    s.state[r] = FLAG_DONE
    s.n_verify += 1
    sc = exact_score(measure_of(mk), T.Q, u.qi, T.R, r, -1, 0)
    if sc > 0.0 and sc >= T.floor_score:
        topk_insert(s.top.ks, s.top.ki, &s.top.nk, T.k, sc, row_id(T.R, r))


cdef inline void verify_top_partials(const Task* T, Query* u, Scratch* s, MeasureArg mk) noexcept nogil:
    """Verify the (up to) TOP_PARTIALS candidates with the highest partial counts."""
    cdef int64_t best[TOP_PARTIALS]
    cdef uint32_t bc[TOP_PARTIALS]
    cdef int nb = 0, i, pos
    cdef int64_t j, r
    cdef uint32_t w, c
    cdef double sc
    for j in range(u.n_touched):
        r = s.touched[j]
        w = s.state[r]
        if (w >> COUNT_BITS) != 1:
            continue
        c = w & COUNT_MASK
        if nb == TOP_PARTIALS and c <= bc[nb - 1]:
            continue
        pos = nb if nb < TOP_PARTIALS else TOP_PARTIALS - 1
        if nb < TOP_PARTIALS:
            nb += 1
        while pos > 0 and bc[pos - 1] < c:
            bc[pos] = bc[pos - 1]
            best[pos] = best[pos - 1]
            pos -= 1
        bc[pos] = c
        best[pos] = r
    for i in range(nb):
        verify_now(T, u, s, best[i], mk)


cdef inline void mark_done(Query* u, Scratch* s, int64_t r) noexcept nogil:
    s.state[r] = FLAG_DONE
    s.touched[u.n_touched] = <int32_t>r
    s.tz[u.n_touched] = 0
    u.n_touched += 1


cdef inline int64_t bucket_candidates(const Task* T, Query* u, Scratch* s, MeasureArg mk) noexcept nogil:
    """Bound every candidate, drop the hopeless, sort the rest by bound (descending).

    A candidate's intersection is at most its stored bound, and at most its
    count plus every query mass it may have missed (tokens not visited,
    skipped whole, or read in part).  Counting sort by bound into
    s.sorted*; every touched reference's state is reset here.
    """
    cdef uint32_t* state = s.state
    cdef int64_t q = u.size, missed = u.rest + u.skipped + u.partial
    cdef int64_t j, r, c, z, x, pos, n = 0
    cdef uint32_t w
    cdef uint8_t hit
    cdef double cut = running_cut(s, T)
    s.n_touch += u.n_touched
    for x in range(q + 1):
        s.bucket[x] = 0
    for j in range(u.n_touched):
        r = s.touched[j]
        w = state[r]
        state[r] = 0
        hit = s.fields_hit[r]
        s.fields_hit[r] = 0
        if (w >> COUNT_BITS) != 1 or hit != u.n_filters:
            continue
        c = (w & COUNT_MASK) + missed
        if c > s.bound[r]:
            c = s.bound[r]
        z = s.tz[j]
        if c > z:
            c = z
        if c > q:
            c = q
        if not may_reach(measure_of(mk), c, q, z, cut):
            continue  # cannot reach the threshold any more
        if n < PREFETCH_RECORDS:
            # verification reads the records of the best candidates first:
            # ask for the first few now (most queries have only a few)
            overlap_prefetch(T.X.rrec + REC * T.Q.F * r)
            overlap_prefetch(T.X.rrec + REC * T.Q.F * (r + 1) - 1)
        s.tz[n] = <int32_t>z
        s.touched[n] = <int32_t>r
        s.ubound[n] = <int32_t>c
        s.exact[n] = <int32_t>(w & COUNT_MASK)
        s.bucket[c] += 1
        n += 1
    pos = 0
    for x in range(q, -1, -1):
        c = s.bucket[x]
        s.bucket[x] = pos
        pos += c
    for j in range(n):
        c = s.ubound[j]
        pos = s.bucket[c]
        s.sorted[pos] = s.touched[j]
        s.sorted_u[pos] = <int32_t>c
        s.sorted_c[pos] = s.exact[j]
        s.sorted_z[pos] = s.tz[j]
        s.bucket[c] += 1
    return n


cdef inline void verify_candidates(const Task* T, Query* u, Scratch* s, int64_t n,
                                   PairBuf* pairs, MeasureArg mk) noexcept nogil:
    """Verify the bucketed candidates, best bound first, until no bound can reach."""
    cdef const Index* X = T.X
    cdef const int64_t* rec
    cdef int F = T.Q.F, f
    cdef int64_t j, r, c, z, a, b, q = u.size
    cdef double cut = running_cut(s, T), sc
    # the driver field's count is exact when every posting was read whole
    cdef bint counts_exact = u.rest == 0 and u.skipped == 0 and u.partial == 0
    for j in range(n):
        # the records of the next candidates are random reads: ask for them
        # ahead of time (most candidates stop at their records' signatures,
        # so their rows are not fetched)
        if j + 8 < n:
            rec = X.rrec + REC * F * s.sorted[j + 8]
            overlap_prefetch(rec)
            overlap_prefetch(rec + REC * F - 1)
        r = s.sorted[j]
        c = s.sorted_u[j]
        if not may_reach(measure_of(mk), c, q, c, cut):
            break  # every later candidate has a bound <= c
        z = s.sorted_z[j]
        if not may_reach(measure_of(mk), c, q, z, cut):
            continue
        if not signatures_reach(measure_of(mk), X, r, F, u.sizes, u.sigs, cut):
            continue
        s.n_verify += 1
        if counts_exact:
            sc = bounded_score(measure_of(mk), T.Q, u.qi, T.R, X, r, cut, u.driver, s.sorted_c[j])
        else:
            sc = bounded_score(measure_of(mk), T.Q, u.qi, T.R, X, r, cut, -1, 0)
        if sc <= 0.0 or sc < T.floor_score:
            continue
        if T.mode == MODE_TOPK:
            topk_insert(s.top.ks, s.top.ki, &s.top.nk, T.k, sc, row_id(T.R, r))
            cut = running_cut(s, T)
        else:
            a = row_id(T.Q, u.qi)
            b = row_id(T.R, r)
            if push_pair(pairs, a if not T.upper_only or a < b else b,
                         b if not T.upper_only or a < b else a, sc) != 0:
                pairs.failed = 1
