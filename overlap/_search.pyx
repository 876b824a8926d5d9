# cython: freethreading_compatible=True
"""Exact overlap kernels: pruned inverted-index search, threshold join, ratios.

Everything here takes flat, validated arrays prepared by ``overlap._index``;
nothing converts or validates Python objects.  One query is handled by one
thread from start to end and writes only its own output slots, so results do not
depend on the thread count.

Search outline (one query, driver field d chosen per query):

1. exact-duplicate shortcut (top-1 only): a row fingerprint lookup, verified
   token by token, gives score 1.0 at the lowest identical index;
2. the query's driver tokens are visited rarest first; a reference first seen
   when ``rem`` query tokens are left can reach at most ``2*rem/(|q|+rem)``,
   so admission stops once that bound falls below the running k-th best score;
   postings are sorted by reference size, so only references whose size can
   still reach the running best are read (length filter);
3. after each token the candidate with the largest partial count is verified
   exactly, which raises the running best early;
4. the remaining candidates are bounded by their partial counts and the other
   fields' length bounds, and only those that can still reach the running best
   are verified by sorted-merge intersection of every field.

Bounds and scores are computed with the same expression ``2.0*x/(a+b)``; float
division rounds monotonically, so a bound below the running best in floating
point is below it in exact arithmetic too: pruning never changes a result.
"""

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange, parallel
from libc.stdint cimport uint64_t, int64_t, uint32_t, int32_t, uint8_t
from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.math cimport floor

from overlap._openmp cimport omp_get_thread_num
from overlap._sets cimport dice, intersect_sets, intersect_bags, fmix64, sort_u64

cnp.import_array()

cdef enum:
    # 64-bit words per token signature (256 bits: nearly collision-free on short rows)
    SIGW = 4

cdef enum:
    MODE_TOPK = 0
    MODE_JOIN = 1

cdef enum:
    # int64 slots per reference and field in Index.rrec: size, start, end, signature
    REC = 3 + SIGW

cdef enum:
    # candidates verified before a long posting is scanned
    TOP_PARTIALS = 4

cdef enum:
    COUNT_MASK = 0x3FFFFFFF
    FLAG_CANDIDATE = 0x40000000
    FLAG_DONE = 0x80000000
    FLAG_HOPELESS = 0xC0000000

ctypedef struct Coll:
    int F
    int64_t n
    const int64_t* ip        # F * (n + 1) row boundaries into h / c
    const uint64_t* h
    const uint32_t* c        # NULL for sets
    const int64_t* sz        # F * n sizes
    const uint64_t* fp       # n row fingerprints

ctypedef struct Index:
    const uint64_t* tkeys    # per field, open-addressing table of reference hashes
    const int64_t* tids      # their vocabulary ids (-1: empty slot)
    const int64_t* toff      # F + 1 table offsets (each table a power of two)
    const int64_t* pptr      # V + 1 posting boundaries
    const int64_t* rank      # V scan ranks within each field
    const int32_t* maxe      # V largest suffix mass in each posting
    const int64_t* rrec      # per reference and field: (size, 64-bit token signature)
    const int32_t* pref      # posting reference ids
    const int32_t* psize     # posting reference sizes
    const int32_t* psuf      # reference mass from the token on (descending within a token)
    const uint32_t* pcnt     # posting counts (NULL for sets)
    const uint64_t* fps      # reference fingerprints, ascending
    const int64_t* fpi       # their reference ids (ascending within equal fps)
    int64_t nfp

ctypedef struct PairBuf:
    int64_t* i
    int64_t* j
    double* s
    int64_t n
    int64_t cap
    int failed

ctypedef struct Scratch:
    uint32_t* state      # n_refs words: count (low 30 bits), flag (top 2 bits)
    int32_t* touched
    int32_t* exact       # candidates' counts (touched order)
    int32_t* tz          # candidates' driver-field sizes (touched order)
    int32_t* sorted_z
    int32_t* sorted_c
    int32_t* ubound      # candidates' intersection bounds (touched order)
    int32_t* sorted      # candidates by bound, descending
    int32_t* sorted_u
    int64_t* bucket      # counting-sort buckets, max query size + 1
    int64_t* ps
    int64_t* pe
    uint32_t* qc
    int32_t* fld
    int32_t* me          # largest suffix mass of each query token's posting
    uint64_t* order
    double* ks
    int64_t* ki
    int nk
    int64_t prev_q       # the previous query this thread handled, and its best match
    int64_t prev_best
    int64_t n_post       # postings read
    int64_t n_touch      # candidates admitted
    int64_t n_verify     # exact verifications


cdef class Collection:
    """Flat view of one or more aligned fields (kept alive while kernels run)."""
    cdef Coll c
    cdef object _keep
    cdef readonly object fingerprints

    def __init__(self, const int64_t[::1] ip, const uint64_t[::1] h, const uint32_t[::1] cnt,
                 const int64_t[::1] sz, const uint64_t[::1] fp, int n_fields, int64_t n,
                 bint multiset):
        self._keep = (ip, h, cnt, sz, fp)
        self.fingerprints = np.asarray(fp)
        self.c.F = n_fields
        self.c.n = n
        self.c.ip = &ip[0]
        self.c.h = &h[0] if h.shape[0] else NULL
        self.c.c = (&cnt[0] if cnt.shape[0] else NULL) if multiset else NULL
        self.c.sz = &sz[0] if sz.shape[0] else NULL
        self.c.fp = &fp[0] if fp.shape[0] else NULL

    def records(self, int n_threads):
        """Per row and field: size, row bounds and token signature (see can_reach)."""
        ip, h, cnt, sz, fp = self._keep
        return reference_records(ip, h, sz, self.c.F, self.c.n, n_threads)


cdef class ReferenceIndex:
    """Inverted index over a reference Collection."""
    cdef Index x
    cdef object _keep
    cdef readonly Collection refs
    cdef readonly object last_stats

    def __init__(self, Collection refs, const uint64_t[::1] tkeys, const int64_t[::1] tids,
                 const int64_t[::1] toff, const int64_t[::1] pptr, const int32_t[::1] pref,
                 const int32_t[::1] psize, const int32_t[::1] psuf, const uint32_t[::1] pcnt,
                 const uint64_t[::1] fps, const int64_t[::1] fpi, const int64_t[::1] rank,
                 const int32_t[::1] maxe, const int64_t[::1] rrec):
        self.refs = refs
        self._keep = (tkeys, tids, toff, pptr, pref, psize, psuf, pcnt, fps, fpi, rank, maxe,
                      rrec)
        self.x.rrec = &rrec[0] if rrec.shape[0] else NULL
        self.x.rank = &rank[0] if rank.shape[0] else NULL
        self.x.maxe = &maxe[0] if maxe.shape[0] else NULL
        self.x.tkeys = &tkeys[0] if tkeys.shape[0] else NULL
        self.x.tids = &tids[0] if tids.shape[0] else NULL
        self.x.toff = &toff[0]
        self.x.pptr = &pptr[0]
        self.x.pref = &pref[0] if pref.shape[0] else NULL
        self.x.psize = &psize[0] if psize.shape[0] else NULL
        self.x.psuf = &psuf[0] if psuf.shape[0] else NULL
        self.x.pcnt = (&pcnt[0] if pcnt.shape[0] else NULL) if refs.c.c != NULL else NULL
        self.x.fps = &fps[0] if fps.shape[0] else NULL
        self.x.fpi = &fpi[0] if fpi.shape[0] else NULL
        self.x.nfp = fps.shape[0]

    def top_k(self, Collection queries, int64_t start, int64_t stop, int k, double min_score,
              bint exclude_self, int64_t max_row, int64_t max_mass, int n_threads,
              double[:, ::1] out_score, int64_t[:, ::1] out_index):
        """Top-k search for queries[start:stop] into out_*[start:stop]."""
        stats = np.zeros((max(1, n_threads), 3), dtype=np.int64)
        cdef int64_t[:, ::1] sv = stats
        cdef int ok = run_queries(&queries.c, &self.refs.c, &self.x, start, stop, MODE_TOPK,
                                  k, min_score, exclude_self, max_row, max_mass, n_threads,
                                  &out_score[0, 0], &out_index[0, 0], NULL, &sv[0, 0])
        self.last_stats = stats.sum(axis=0)
        if ok != 0:
            raise MemoryError("overlap search: out of memory for per-thread scratch")

    def join(self, Collection queries, int64_t start, int64_t stop, double threshold,
             bint upper_only, int64_t max_row, int64_t max_mass, int n_threads):
        """Pairs (i, j, score) with score >= threshold for queries[start:stop] (unsorted).

        With ``upper_only`` only references j > i are considered (self-join).
        """
        cdef int nt = max(1, n_threads), t
        cdef PairBuf* bufs = <PairBuf*>calloc(nt, sizeof(PairBuf))
        if bufs == NULL:
            raise MemoryError("overlap join: out of memory")
        cdef int ok
        cdef int64_t total = 0, pos = 0
        stats = np.zeros((nt, 3), dtype=np.int64)
        cdef int64_t[:, ::1] sv = stats
        try:
            ok = run_queries(&queries.c, &self.refs.c, &self.x, start, stop, MODE_JOIN,
                             1, threshold, upper_only, max_row, max_mass, nt, NULL, NULL, bufs,
                             &sv[0, 0])
            self.last_stats = stats.sum(axis=0)
            for t in range(nt):
                if bufs[t].failed:
                    ok = 1
                total += bufs[t].n
            if ok != 0:
                raise MemoryError("overlap join: out of memory for the result pairs")
            left = np.empty(total, dtype=np.int64)
            right = np.empty(total, dtype=np.int64)
            score = np.empty(total, dtype=np.float64)
            for t in range(nt):
                if bufs[t].n:
                    left[pos:pos + bufs[t].n] = <int64_t[:bufs[t].n]>bufs[t].i
                    right[pos:pos + bufs[t].n] = <int64_t[:bufs[t].n]>bufs[t].j
                    score[pos:pos + bufs[t].n] = <double[:bufs[t].n]>bufs[t].s
                    pos += bufs[t].n
            return left, right, score
        finally:
            for t in range(nt):
                free(bufs[t].i)
                free(bufs[t].j)
                free(bufs[t].s)
            free(bufs)


# ---------------------------------------------------------------- helpers

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


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define overlap_prefetch(p) __builtin_prefetch(p)
    #else
    #define overlap_prefetch(p) ((void)0)
    #endif
    """
    void overlap_prefetch(const void* p) noexcept nogil


cdef inline int popcount64(uint64_t x) noexcept nogil:
    """Set bits of x (SWAR: no libgcc call and no -mpopcnt needed)."""
    x = x - ((x >> 1) & <uint64_t>0x5555555555555555ULL)
    x = (x & <uint64_t>0x3333333333333333ULL) + ((x >> 2) & <uint64_t>0x3333333333333333ULL)
    x = (x + (x >> 4)) & <uint64_t>0x0F0F0F0F0F0F0F0FULL
    return <int>((x * <uint64_t>0x0101010101010101ULL) >> 56)


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


cdef inline bint can_reach(int64_t qs, const uint64_t* qsig, int64_t rs, const uint64_t* rsig,
                           double cut) noexcept nogil:
    """False when the Dice ratio of the two rows is surely below ``cut``.

    A bit set on one side only stands for at least one token of that side
    missing on the other, so 2*inter <= qs + rs - popcount(qsig ^ rsig); the
    length filter 2*inter <= 2*min(qs, rs) is folded in.
    """
    cdef int64_t ub2 = qs + rs
    cdef int w
    for w in range(SIGW):
        ub2 -= popcount64(qsig[w] ^ rsig[w])
    cdef int64_t m2 = 2 * (qs if qs < rs else rs)
    if m2 < ub2:
        ub2 = m2
    return <double>ub2 >= cut * <double>(qs + rs)


cdef inline bint signatures_reach(const Index* X, int64_t r, int F, const int64_t* qsz,
                                  const uint64_t* qsig, double cut) noexcept nogil:
    """can_reach for every field of reference r (its records are contiguous)."""
    cdef const int64_t* rec = X.rrec + REC * F * r
    cdef int f
    for f in range(F):
        if not can_reach(qsz[f], qsig + SIGW * f, rec[REC * f],
                         <const uint64_t*>(rec + REC * f + 3), cut):
            return False
    return True


cdef inline int64_t vocab_lookup(const Index* X, int f, uint64_t key) noexcept nogil:
    """Vocabulary id of ``key`` in field ``f``, or -1 when no reference holds it."""
    cdef int64_t a = X.toff[f], size = X.toff[f + 1] - a, slot, vid
    if size == 0:
        return -1
    slot = <int64_t>(fmix64(key) & <uint64_t>(size - 1))
    while True:
        vid = X.tids[a + slot]
        if vid < 0:
            return -1
        if X.tkeys[a + slot] == key:
            return vid
        slot = (slot + 1) & (size - 1)


cdef inline int64_t field_inter(const Coll* Q, int64_t qi, const Coll* R, int64_t ri,
                                int f) noexcept nogil:
    cdef int64_t a0 = Q.ip[f * (Q.n + 1) + qi], a1 = Q.ip[f * (Q.n + 1) + qi + 1]
    cdef int64_t b0 = R.ip[f * (R.n + 1) + ri], b1 = R.ip[f * (R.n + 1) + ri + 1]
    if Q.c != NULL:
        return intersect_bags(Q.h + a0, Q.c + a0, a1 - a0, R.h + b0, R.c + b0, b1 - b0)
    return intersect_sets(Q.h + a0, a1 - a0, R.h + b0, b1 - b0)


cdef inline double exact_score(const Coll* Q, int64_t qi, const Coll* R, int64_t ri,
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
        d = dice(inter, Q.sz[f * Q.n + qi], R.sz[f * R.n + ri])
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


cdef inline double bounded_score(const Coll* Q, int64_t qi, const Coll* R, const Index* X,
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
        # the smallest count that is not surely below the cut
        need = <int64_t>(cut * <double>(qs + rs) * 0.5)
        if need > 0:
            need -= 1
        if f == known_field:
            inter = known_inter
        elif Q.c != NULL:
            inter = bounded_inter(Q.h + a0, Q.c + a0, a1 - a0, R.h + b0, R.c + b0, b1 - b0,
                                  need, qs, rs)
        else:
            inter = bounded_inter_sets(Q.h + a0, a1 - a0, R.h + b0, b1 - b0, need)
        if inter < 0:
            return 0.0
        dd = dice(inter, qs, rs)
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


cdef inline double length_bound(int64_t a, int64_t b) noexcept nogil:
    return dice(a if a < b else b, a, b)


cdef inline double current_threshold(Scratch* s, int k, double floor_score) noexcept nogil:
    if s.nk < k:
        return floor_score
    return s.ks[k - 1]


cdef inline void topk_insert(Scratch* s, int k, double sc, int64_t idx) noexcept nogil:
    cdef int pos
    if s.nk == k:
        if sc < s.ks[k - 1] or (sc == s.ks[k - 1] and idx > s.ki[k - 1]):
            return
        pos = k - 1
    else:
        pos = s.nk
        s.nk += 1
    while pos > 0 and (s.ks[pos - 1] < sc or (s.ks[pos - 1] == sc and s.ki[pos - 1] > idx)):
        s.ks[pos] = s.ks[pos - 1]
        s.ki[pos] = s.ki[pos - 1]
        pos -= 1
    s.ks[pos] = sc
    s.ki[pos] = idx


cdef inline int push_pair(PairBuf* b, int64_t i, int64_t j, double sc) noexcept nogil:
    cdef int64_t cap
    cdef int64_t* ni
    cdef int64_t* nj
    cdef double* ns
    if b.n == b.cap:
        cap = 1024 if b.cap == 0 else b.cap * 2
        ni = <int64_t*>realloc(b.i, cap * sizeof(int64_t))
        if ni == NULL:
            return -1
        b.i = ni
        nj = <int64_t*>realloc(b.j, cap * sizeof(int64_t))
        if nj == NULL:
            return -1
        b.j = nj
        ns = <double*>realloc(b.s, cap * sizeof(double))
        if ns == NULL:
            return -1
        b.s = ns
        b.cap = cap
    b.i[b.n] = i
    b.j[b.n] = j
    b.s[b.n] = sc
    b.n += 1
    return 0


cdef inline int64_t lower_bound_i32(const int32_t* a, int64_t lo, int64_t hi,
                                    int64_t key) noexcept nogil:
    cdef int64_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef void verify_top_partials(const Coll* Q, int64_t qi, const Coll* R, Scratch* s,
                              int64_t nt, int k, double floor_score) noexcept nogil:
    """Verify the (up to) TOP_PARTIALS candidates with the highest partial counts."""
    cdef int64_t best[TOP_PARTIALS]
    cdef uint32_t bc[TOP_PARTIALS]
    cdef int nb = 0, i, pos
    cdef int64_t j, r
    cdef uint32_t w, c
    cdef double sc
    for j in range(nt):
        r = s.touched[j]
        w = s.state[r]
        if (w >> 30) != 1:
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
        r = best[i]
        s.state[r] = FLAG_DONE
        s.n_verify += 1
        sc = exact_score(Q, qi, R, r, -1, 0)
        if sc > 0.0 and sc >= floor_score:
            topk_insert(s, k, sc, r)


cdef void search_one(const Coll* Q, int64_t qi, const Coll* R, const Index* X, int mode,
                     int k, double floor_score, bint exclude, Scratch* s,
                     PairBuf* pairs) noexcept nogil:
    """Handle one query: fills s.ks/s.ki (top-k) or appends to ``pairs`` (join).

    ``exclude`` skips reference qi (top-k, all-vs-rest) or every reference <= qi
    (join, self-join upper triangle).

    Candidates come from one driver field d, whose query tokens are visited in
    the index's rank order (rarest first).  Every posting entry of a current
    candidate is counted, so counts are exact for the tokens visited.  A new
    reference is admitted only where it can still reach the running threshold:
    with ``rem`` query mass left (this token included) and ``e`` mass of the
    reference from this token on, it gains at most ``min(rem, e)`` (prefix and
    positional filters, plus the other fields' length filter).  The visit stops
    when no reference could be admitted any more; the unvisited mass then
    bounds what the candidates can still gain.

    Per-reference state is one uint32: the count in the low 30 bits and a flag
    in the top two (0 unseen, 1 candidate, 2 done, 3 hopeless).
    """
    cdef int F = Q.F, f, g, d = 0
    cdef int64_t t, m, ntok, p, p0, j, r, nt = 0, nc, cost, best_cost = -1
    cdef int64_t q, rem, c, z, e, qa, qb, pos, x, rz, best_c = 0, best_r = -1, unc = 0
    cdef int64_t qsz[8]
    cdef uint64_t qsig[8 * SIGW]
    cdef const int64_t* rec
    cdef uint32_t* state = s.state
    cdef uint32_t w, fl
    cdef const int32_t* pref = X.pref
    cdef const int32_t* psize = X.psize
    cdef const int32_t* psuf = X.psuf
    cdef const uint32_t* pcnt = X.pcnt
    cdef int32_t* touched = s.touched
    cdef int32_t* tz = s.tz
    cdef int64_t pend
    cdef bint upper = exclude and mode == MODE_JOIN
    cdef bint ok
    cdef uint32_t qcount, add
    cdef double thr, sc, cut
    cdef uint64_t key
    s.nk = 0
    # an empty field gives R = 0 against everything
    for f in range(F):
        qsz[f] = Q.sz[f * Q.n + qi]
        if qsz[f] == 0:
            return
        qa = Q.ip[f * (Q.n + 1) + qi]
        row_signature(Q.h + qa, Q.ip[f * (Q.n + 1) + qi + 1] - qa, qsig + SIGW * f)
    # 1. exact duplicate: score 1.0 at the lowest identical reference
    if mode == MODE_TOPK and k == 1 and X.nfp > 0:
        key = Q.fp[qi]
        p = lower_bound_u64(X.fps, 0, X.nfp, key)
        while p < X.nfp and X.fps[p] == key:
            r = X.fpi[p]
            p += 1
            if exclude and r == qi:
                continue
            if rows_identical(Q, qi, R, r):
                s.ks[0] = 1.0
                s.ki[0] = r
                s.nk = 1
                return
    # 2. driver field: the one whose query tokens have the shortest postings
    for f in range(F):
        qa = Q.ip[f * (Q.n + 1) + qi]
        qb = Q.ip[f * (Q.n + 1) + qi + 1]
        cost = 0
        for t in range(qa, qb):
            pos = vocab_lookup(X, f, Q.h[t])
            if pos >= 0:
                cost += X.pptr[pos + 1] - X.pptr[pos]
        if cost == 0:
            return  # no reference shares a token in this field: every score is 0
        if best_cost < 0 or cost < best_cost:
            best_cost = cost
            d = f
    qa = Q.ip[d * (Q.n + 1) + qi]
    qb = Q.ip[d * (Q.n + 1) + qi + 1]
    ntok = 0
    rem = 0
    for t in range(qa, qb):
        pos = vocab_lookup(X, d, Q.h[t])
        if pos >= 0:
            s.ps[ntok] = X.pptr[pos]
            s.pe[ntok] = X.pptr[pos + 1]
            s.qc[ntok] = Q.c[t] if Q.c != NULL else 1
            s.me[ntok] = X.maxe[pos]
            rem += s.qc[ntok]
            # the index's rank order (document frequency, then hash)
            s.order[ntok] = (<uint64_t>X.rank[pos] << 24) | <uint64_t>ntok
            ntok += 1
    sort_u64(s.order, ntok)
    q = qsz[d]
    if exclude and mode == MODE_TOPK and qi < R.n:
        # the query itself is never a candidate (marked done, reset with the rest)
        state[qi] = FLAG_DONE
        s.touched[nt] = <int32_t>qi
        s.tz[nt] = 0
        nt += 1
    # a hint: consecutive queries are often consecutive samples of one dialogue,
    # whose best matches are consecutive references too; verifying the
    # reference after the previous query's best match first can only raise the
    # threshold early (it never changes a result)
    if mode == MODE_TOPK and s.prev_q == qi - 1 and s.prev_best >= 0:
        r = s.prev_best + 1
        if r < R.n and state[r] == 0 and not (exclude and r == qi):
            state[r] = FLAG_DONE
            s.touched[nt] = <int32_t>r
            s.tz[nt] = 0
            nt += 1
            s.n_verify += 1
            sc = exact_score(Q, qi, R, r, -1, 0)
            if sc > 0.0 and sc >= floor_score:
                topk_insert(s, k, sc, r)
    # 3. count every candidate's entries; admit new references where they can win
    for m in range(ntok):
        thr = current_threshold(s, k, floor_score)
        if thr > 0.0 and dice(rem, q, rem) < thr:
            break  # query prefix exhausted: no new reference can reach the threshold
        cut = thr * (1.0 - 1e-12)
        t = <int64_t>(s.order[m] & 0xFFFFFF)
        qcount = s.qc[t]
        x = s.me[t] if s.me[t] < rem else rem
        if 2.0 * <double>x < cut * <double>(q + x):
            # no entry of this posting can be admitted: leave it uncounted and
            # let its mass widen every candidate's bound instead
            unc += qcount
            rem -= qcount
            continue
        if mode == MODE_TOPK and s.pe[t] - s.ps[t] > 2 * (nt + 64):
            # a long posting comes: verify the best few partial matches first,
            # so the threshold that filters its admissions is as high as it can be
            verify_top_partials(Q, qi, R, s, nt, k, floor_score)
            thr = current_threshold(s, k, floor_score)
            if thr > 0.0 and dice(rem, q, rem) < thr:
                break
            cut = thr * (1.0 - 1e-12)
        p0 = s.ps[t]
        if upper:
            p0 = lower_bound_i32(pref, p0, s.pe[t], qi + 1)
        s.n_post += s.pe[t] - p0
        pend = s.pe[t]
        if pcnt == NULL:
            # sets: every entry adds 1 (the hot loop; pointers held in locals)
            for p in range(p0, pend):
                r = pref[p]
                w = state[r]
                if (w >> 30) == 1:
                    w += 1
                    state[r] = w
                    if <int64_t>(w & COUNT_MASK) > best_c:
                        best_c = w & COUNT_MASK
                        best_r = r
                    continue
                if w != 0:
                    continue
                e = psuf[p]
                z = psize[p]
                x = e if e < rem else rem
                if 2.0 * <double>x < cut * <double>(q + z):
                    continue
                touched[nt] = <int32_t>r
                tz[nt] = <int32_t>z
                nt += 1
                state[r] = FLAG_CANDIDATE | 1
                if best_c < 1:
                    best_c = 1
                    best_r = r
        else:
            for p in range(p0, pend):
                r = pref[p]
                w = state[r]
                add = pcnt[p] if pcnt[p] < qcount else qcount
                if (w >> 30) == 1:
                    w += add
                    state[r] = w
                    if <int64_t>(w & COUNT_MASK) > best_c:
                        best_c = w & COUNT_MASK
                        best_r = r
                    continue
                if w != 0:
                    continue
                e = psuf[p]
                z = psize[p]
                x = e if e < rem else rem
                if 2.0 * <double>x < cut * <double>(q + z):
                    continue
                touched[nt] = <int32_t>r
                tz[nt] = <int32_t>z
                nt += 1
                state[r] = FLAG_CANDIDATE | add
                if add > best_c:
                    best_c = add
                    best_r = r
        rem -= qcount
        if mode == MODE_TOPK and best_r >= 0 and (state[best_r] >> 30) == 1:
            # verify the best partial match now: raises the threshold early
            state[best_r] = FLAG_DONE
            best_c = 0
            s.n_verify += 1
            sc = exact_score(Q, qi, R, best_r, -1, 0)
            if sc > 0.0 and sc >= floor_score:
                topk_insert(s, k, sc, best_r)
    # 4. bound, verify and reset the candidates, best bound first: candidates
    #    are bucketed by their intersection bound u, so the running threshold
    #    rises early and whole buckets below it are never looked at
    s.n_touch += nt
    for x in range(q + 1):
        s.bucket[x] = 0
    nc = 0
    thr = current_threshold(s, k, floor_score)
    cut = thr * (1.0 - 1e-12)
    for j in range(nt):
        r = s.touched[j]
        w = state[r]
        state[r] = 0
        if (w >> 30) == 1:
            c = (w & COUNT_MASK) + rem + unc
            z = s.tz[j]
            if c > z:
                c = z
            if c > q:
                c = q
            if 2.0 * <double>c < cut * <double>(q + z):
                continue  # cannot reach the threshold any more
            s.tz[nc] = <int32_t>z
            s.touched[nc] = <int32_t>r
            s.ubound[nc] = <int32_t>c
            s.bucket[c] += 1
            s.exact[nc] = <int32_t>(w & COUNT_MASK)
            nc += 1
    pos = 0
    for x in range(q, -1, -1):
        c = s.bucket[x]
        s.bucket[x] = pos
        pos += c
    for j in range(nc):
        c = s.ubound[j]
        s.sorted[s.bucket[c]] = s.touched[j]
        s.sorted_u[s.bucket[c]] = <int32_t>c
        s.sorted_c[s.bucket[c]] = s.exact[j]
        s.sorted_z[s.bucket[c]] = s.tz[j]
        s.bucket[c] += 1
    thr = current_threshold(s, k, floor_score)
    cut = thr * (1.0 - 1e-12)
    for j in range(nc):
        # the records and rows of the next candidates are random reads: ask
        # for them ahead of time
        if j + 16 < nc:
            overlap_prefetch(X.rrec + REC * F * s.sorted[j + 16])
        if j + 8 < nc:
            rec = X.rrec + REC * F * s.sorted[j + 8]
            for f in range(F):
                overlap_prefetch(R.h + rec[REC * f + 1])
        r = s.sorted[j]
        c = s.sorted_u[j]
        if 2.0 * <double>c < cut * <double>(q + c):
            break  # every later candidate has a bound <= c
        z = s.sorted_z[j]
        if 2.0 * <double>c < cut * <double>(q + z):
            continue
        if not signatures_reach(X, r, F, qsz, qsig, cut):
            continue
        s.n_verify += 1
        if rem == 0 and unc == 0:
            sc = bounded_score(Q, qi, R, X, r, cut, d, s.sorted_c[j])
        else:
            sc = bounded_score(Q, qi, R, X, r, cut, -1, 0)
        if sc <= 0.0 or sc < floor_score:
            continue
        if mode == MODE_TOPK:
            topk_insert(s, k, sc, r)
            thr = current_threshold(s, k, floor_score)
            cut = thr * (1.0 - 1e-12)
        elif push_pair(pairs, qi, r, sc) != 0:
            pairs.failed = 1


cdef int run_queries(const Coll* Q, const Coll* R, const Index* X, int64_t start,
                     int64_t stop, int mode, int k, double floor_score, bint exclude,
                     int64_t max_row, int64_t max_mass, int n_threads, double* out_s,
                     int64_t* out_i, PairBuf* bufs, int64_t* stats) noexcept nogil:
    """Run queries[start:stop] on n_threads; 0 on success, 1 if scratch allocation failed."""
    cdef int64_t qi, e
    cdef int tid, failed = 0
    cdef Scratch* s
    cdef int64_t nref = R.n if R.n > 0 else 1
    cdef int64_t rowcap = (max_row if max_row > 0 else 1) * Q.F
    cdef int64_t maxmass = max_mass if max_mass > 0 else 1
    s = NULL
    tid = 0
    with parallel(num_threads=n_threads):
        s = <Scratch*>calloc(1, sizeof(Scratch))
        if s != NULL:
            s.state = <uint32_t*>calloc(nref, sizeof(uint32_t))
            s.exact = <int32_t*>malloc(nref * sizeof(int32_t))
            s.tz = <int32_t*>malloc(nref * sizeof(int32_t))
            s.sorted_z = <int32_t*>malloc(nref * sizeof(int32_t))
            s.sorted_c = <int32_t*>malloc(nref * sizeof(int32_t))
            s.fld = <int32_t*>malloc(rowcap * sizeof(int32_t))
            s.me = <int32_t*>malloc(rowcap * sizeof(int32_t))
            s.touched = <int32_t*>malloc(nref * sizeof(int32_t))
            s.ubound = <int32_t*>malloc(nref * sizeof(int32_t))
            s.sorted = <int32_t*>malloc(nref * sizeof(int32_t))
            s.sorted_u = <int32_t*>malloc(nref * sizeof(int32_t))
            s.bucket = <int64_t*>malloc((maxmass + 2) * sizeof(int64_t))
            s.ps = <int64_t*>malloc(rowcap * sizeof(int64_t))
            s.pe = <int64_t*>malloc(rowcap * sizeof(int64_t))
            s.qc = <uint32_t*>malloc(rowcap * sizeof(uint32_t))
            s.order = <uint64_t*>malloc(rowcap * sizeof(uint64_t))
            s.ks = <double*>malloc(k * sizeof(double))
            s.ki = <int64_t*>malloc(k * sizeof(int64_t))
            s.prev_q = -2
            s.prev_best = -1
        tid = omp_get_thread_num()
        try:
            for qi in prange(start, stop, schedule="dynamic", chunksize=16):
                if (s == NULL or s.state == NULL or s.touched == NULL or s.fld == NULL
                        or s.me == NULL
                        or s.ubound == NULL or s.sorted == NULL or s.sorted_u == NULL
                        or s.bucket == NULL or s.exact == NULL or s.sorted_c == NULL
                        or s.tz == NULL or s.sorted_z == NULL
                        or s.ps == NULL or s.pe == NULL or s.qc == NULL or s.order == NULL
                        or s.ks == NULL or s.ki == NULL):
                    failed += 1
                    continue
                search_one(Q, qi, R, X, mode, k, floor_score, exclude, s,
                           &bufs[tid] if mode == MODE_JOIN else NULL)
                s.prev_q = qi
                s.prev_best = s.ki[0] if s.nk > 0 else -1
                if mode == MODE_TOPK:
                    for e in range(k):
                        if e < s.nk:
                            out_s[qi * k + e] = s.ks[e]
                            out_i[qi * k + e] = s.ki[e]
                        else:
                            out_s[qi * k + e] = 0.0
                            out_i[qi * k + e] = -1
        finally:
            if s != NULL:
                stats[3 * tid] += s.n_post
                stats[3 * tid + 1] += s.n_touch
                stats[3 * tid + 2] += s.n_verify
                free(s.state)
                free(s.fld)
                free(s.me)
                free(s.ubound)
                free(s.sorted)
                free(s.sorted_u)
                free(s.bucket)
                free(s.exact)
                free(s.sorted_c)
                free(s.tz)
                free(s.sorted_z)
                free(s.touched)
                free(s.ps)
                free(s.pe)
                free(s.qc)
                free(s.order)
                free(s.ks)
                free(s.ki)
                free(s)
    return 1 if failed else 0


# ---------------------------------------------------------------- ratios and fingerprints

def pair_ratios(Collection a, Collection b, int n_threads):
    """min over fields of Dice(a[i], b[i]) for aligned rows."""
    cdef int64_t n = a.c.n, i
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] ov = out
    cdef const Coll* A = &a.c
    cdef const Coll* B = &b.c
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=256):
            ov[i] = exact_score_aligned(A, B, i)
    return out


cdef inline double exact_score_aligned(const Coll* A, const Coll* B, int64_t i) noexcept nogil:
    cdef double s = 2.0, d
    cdef int f
    for f in range(A.F):
        d = dice(field_inter(A, i, B, i, f), A.sz[f * A.n + i], B.sz[f * B.n + i])
        if d < s:
            s = d
    return s


def row_fingerprints(const int64_t[::1] ip, const uint64_t[::1] h, const uint32_t[::1] cnt,
                     int n_fields, int64_t n, bint multiset, int n_threads):
    """A 64-bit fingerprint of every row over all fields (equal rows, equal prints)."""
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    cdef int64_t i, t, a0, a1
    cdef int f
    cdef uint64_t g
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=4096):
            g = <uint64_t>0x2545f4914f6cdd1dULL
            for f in range(n_fields):
                a0 = ip[f * (n + 1) + i]
                a1 = ip[f * (n + 1) + i + 1]
                g = fmix64(g ^ (<uint64_t>(a1 - a0) + <uint64_t>0x9e3779b97f4a7c15ULL * (f + 1)))
                for t in range(a0, a1):
                    g = fmix64(g ^ h[t])
                    if multiset:
                        g = fmix64(g + cnt[t])
            ov[i] = g
    return out


ctypedef struct RankedEntry:
    int64_t rank
    int64_t pos


cdef int cmp_ranked_desc(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const RankedEntry*>a).rank, y = (<const RankedEntry*>b).rank
    return (x < y) - (x > y)


def build_postings(const int64_t[::1] indptr, const int64_t[::1] inverse,
                   const int64_t[::1] rank, const uint32_t[::1] counts, bint multiset,
                   const int64_t[::1] sizes, const int64_t[::1] ptr, int64_t max_row,
                   int n_threads):
    """Fill one field's postings in (token, reference) order.

    ``inverse`` maps every stored token to its vocabulary id, ``rank`` gives each
    vocabulary id its place in the scan order and ``ptr`` (V + 1) the posting
    boundaries.  Returns ``(pref, psize, psuf, pcnt)``, where ``psuf`` is the
    reference's mass from the entry's token on in rank order (token included).
    """
    cdef int64_t n = indptr.shape[0] - 1, nnz = inverse.shape[0], i, a, b, t, u, v
    cdef int64_t V = ptr.shape[0] - 1
    suffix = np.empty(nnz, dtype=np.int64)
    cdef int64_t[::1] suf = suffix
    cdef RankedEntry* buf
    cdef int64_t acc, w, m
    cdef int failed = 0
    # suffix mass of every entry within its row, in rank order
    with nogil, parallel(num_threads=n_threads):
        buf = <RankedEntry*>malloc(sizeof(RankedEntry) * (max_row if max_row > 0 else 1))
        try:
            for i in prange(n, schedule="dynamic", chunksize=512):
                if buf == NULL:
                    failed += 1
                    continue
                a = indptr[i]
                b = indptr[i + 1]
                for t in range(a, b):
                    buf[t - a].rank = rank[inverse[t]]
                    buf[t - a].pos = t
                qsort(buf, b - a, sizeof(RankedEntry), cmp_ranked_desc)
                acc = 0
                for m in range(b - a):
                    acc = acc + (counts[buf[m].pos] if multiset else 1)
                    suf[buf[m].pos] = acc
        finally:
            free(buf)
    if failed:
        raise MemoryError("overlap index: out of memory")
    fill = np.array(ptr[:V], dtype=np.int64, copy=True)
    cdef int64_t[::1] fv = fill
    pref = np.empty(nnz, dtype=np.int32)
    psize = np.empty(nnz, dtype=np.int32)
    psuf = np.empty(nnz, dtype=np.int32)
    pcnt = np.empty(nnz if multiset else 0, dtype=np.uint32)
    cdef int32_t[::1] pr = pref
    cdef int32_t[::1] pz = psize
    cdef int32_t[::1] ps = psuf
    cdef uint32_t[::1] pc = pcnt
    cdef int64_t lim = 2147483647
    with nogil:
        # a stable counting sort by token: entries come in row order already
        for i in range(n):
            w = sizes[i] if sizes[i] < lim else lim
            for t in range(indptr[i], indptr[i + 1]):
                v = inverse[t]
                u = fv[v]
                fv[v] += 1
                pr[u] = <int32_t>i
                pz[u] = <int32_t>w
                ps[u] = <int32_t>(suf[t] if suf[t] < lim else lim)
                if multiset:
                    pc[u] = counts[t]
    return pref, psize, psuf, pcnt


def vocab_table(const uint64_t[::1] hashes):
    """Distinct hashes in first-seen order, and an open-addressing table of them.

    Returns ``(keys, inverse, tkeys, tids)``: ``keys[v]`` is vocabulary id ``v``'s
    hash, ``inverse`` the id of every input hash; the table (a power of two,
    at most half full) maps a hash to its id by linear probing.
    """
    cdef int64_t nnz = hashes.shape[0], cap = 16, i, slot, vid, nv = 0, j
    while cap < nnz // 2 + 16:
        cap <<= 1
    cdef uint64_t key
    tkeys = np.zeros(cap, dtype=np.uint64)
    tids = np.full(cap, -1, dtype=np.int64)
    inverse = np.empty(nnz, dtype=np.int64)
    keys = np.empty(max(nnz, 1), dtype=np.uint64)
    cdef uint64_t[::1] tk = tkeys
    cdef int64_t[::1] ti = tids
    cdef int64_t[::1] inv = inverse
    cdef uint64_t[::1] kv = keys
    cdef uint64_t[::1] tk2
    cdef int64_t[::1] ti2
    for i in range(nnz):
        key = hashes[i]
        slot = <int64_t>(fmix64(key) & <uint64_t>(cap - 1))
        while True:
            vid = ti[slot]
            if vid < 0:
                ti[slot] = nv
                tk[slot] = key
                kv[nv] = key
                inv[i] = nv
                nv += 1
                break
            if tk[slot] == key:
                inv[i] = vid
                break
            slot = (slot + 1) & (cap - 1)
        if 2 * nv > cap:
            # grow and re-insert: keep the table at most half full
            cap <<= 1
            tkeys = np.zeros(cap, dtype=np.uint64)
            tids = np.full(cap, -1, dtype=np.int64)
            tk2 = tkeys
            ti2 = tids
            for j in range(nv):
                slot = <int64_t>(fmix64(kv[j]) & <uint64_t>(cap - 1))
                while ti2[slot] >= 0:
                    slot = (slot + 1) & (cap - 1)
                ti2[slot] = j
                tk2[slot] = kv[j]
            tk = tkeys
            ti = tids
    return keys[:nv].copy(), inverse, tkeys, tids


def reference_records(const int64_t[::1] ip, const uint64_t[::1] h, const int64_t[::1] sz,
                      int n_fields, int64_t n, int n_threads):
    """Per reference and field: (size, row start, row end, token signature words).

    Reference-major, so everything a verification needs about one reference
    (but its tokens) sits in one or two cache lines.
    """
    out = np.empty(REC * n_fields * n, dtype=np.int64)
    cdef int64_t[::1] ov = out
    cdef int64_t r, a, o
    cdef int f
    with nogil:
        for r in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=4096):
            for f in range(n_fields):
                a = ip[f * (n + 1) + r]
                o = REC * (n_fields * r + f)
                ov[o] = sz[f * n + r]
                ov[o + 1] = a
                ov[o + 2] = ip[f * (n + 1) + r + 1]
                row_signature(&h[0] + a if h.shape[0] else NULL, ip[f * (n + 1) + r + 1] - a,
                              <uint64_t*>&ov[o + 3])
    return out
