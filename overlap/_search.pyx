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
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.math cimport floor

from overlap._openmp cimport omp_get_thread_num
from overlap._sets cimport dice, intersect_sets, intersect_bags, fmix64

cnp.import_array()

cdef enum:
    MODE_TOPK = 0
    MODE_JOIN = 1

ctypedef struct Coll:
    int F
    int64_t n
    const int64_t* ip        # F * (n + 1) row boundaries into h / c
    const uint64_t* h
    const uint32_t* c        # NULL for sets
    const int64_t* sz        # F * n sizes
    const uint64_t* fp       # n row fingerprints

ctypedef struct Index:
    const uint64_t* vocab    # per field, sorted unique reference hashes
    const int64_t* voff      # F + 1 offsets into vocab
    const int64_t* pptr      # V + 1 posting boundaries
    const int32_t* pref      # posting reference ids
    const int32_t* psize     # posting reference sizes (ascending within a token)
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
    int32_t* acc
    uint8_t* flag
    int32_t* touched
    int64_t* ps
    int64_t* pe
    uint32_t* qc
    int64_t* order
    double* ks
    int64_t* ki
    int nk


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


cdef class ReferenceIndex:
    """Inverted index over a reference Collection."""
    cdef Index x
    cdef object _keep
    cdef readonly Collection refs

    def __init__(self, Collection refs, const uint64_t[::1] vocab, const int64_t[::1] voff,
                 const int64_t[::1] pptr, const int32_t[::1] pref, const int32_t[::1] psize,
                 const uint32_t[::1] pcnt, const uint64_t[::1] fps, const int64_t[::1] fpi):
        self.refs = refs
        self._keep = (vocab, voff, pptr, pref, psize, pcnt, fps, fpi)
        self.x.vocab = &vocab[0] if vocab.shape[0] else NULL
        self.x.voff = &voff[0]
        self.x.pptr = &pptr[0]
        self.x.pref = &pref[0] if pref.shape[0] else NULL
        self.x.psize = &psize[0] if psize.shape[0] else NULL
        self.x.pcnt = (&pcnt[0] if pcnt.shape[0] else NULL) if refs.c.c != NULL else NULL
        self.x.fps = &fps[0] if fps.shape[0] else NULL
        self.x.fpi = &fpi[0] if fpi.shape[0] else NULL
        self.x.nfp = fps.shape[0]

    def top_k(self, Collection queries, int64_t start, int64_t stop, int k, double min_score,
              bint exclude_self, int64_t max_row, int n_threads,
              double[:, ::1] out_score, int64_t[:, ::1] out_index):
        """Top-k search for queries[start:stop] into out_*[start:stop]."""
        cdef int ok = run_queries(&queries.c, &self.refs.c, &self.x, start, stop, MODE_TOPK,
                                  k, min_score, exclude_self, max_row, n_threads,
                                  &out_score[0, 0], &out_index[0, 0], NULL)
        if ok != 0:
            raise MemoryError("overlap search: out of memory for per-thread scratch")

    def join(self, Collection queries, int64_t start, int64_t stop, double threshold,
             bint upper_only, int64_t max_row, int n_threads):
        """Pairs (i, j, score) with score >= threshold for queries[start:stop] (unsorted).

        With ``upper_only`` only references j > i are considered (self-join).
        """
        cdef int nt = max(1, n_threads), t
        cdef PairBuf* bufs = <PairBuf*>calloc(nt, sizeof(PairBuf))
        if bufs == NULL:
            raise MemoryError("overlap join: out of memory")
        cdef int ok
        cdef int64_t total = 0, pos = 0
        try:
            ok = run_queries(&queries.c, &self.refs.c, &self.x, start, stop, MODE_JOIN,
                             1, threshold, upper_only, max_row, nt, NULL, NULL, bufs)
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


cdef void size_window(double thr, int64_t qsize, int64_t* slo, int64_t* shi) noexcept nogil:
    """Reference sizes s that can satisfy 2*min(q,s)/(q+s) >= thr (widened)."""
    cdef double lo, hi
    if thr <= 0.0:
        slo[0] = 0
        shi[0] = 2147483647
        return
    lo = thr * <double>qsize / (2.0 - thr)
    hi = (2.0 - thr) * <double>qsize / thr
    slo[0] = <int64_t>floor(lo * (1.0 - 1e-9))
    if hi > 2147483000.0:
        shi[0] = 2147483647
    else:
        shi[0] = <int64_t>floor(hi * (1.0 + 1e-9)) + 1


cdef void search_one(const Coll* Q, int64_t qi, const Coll* R, const Index* X, int mode,
                     int k, double floor_score, bint exclude, Scratch* s,
                     PairBuf* pairs) noexcept nogil:
    """Handle one query: fills s.ks/s.ki (top-k) or appends to ``pairs`` (join).

    ``exclude`` skips reference qi (top-k, all-vs-rest) or every reference <= qi
    (join, self-join upper triangle).
    """
    cdef int F = Q.F, f, d = 0
    cdef int64_t t, m, ntok, p, lo, hi, j, r, nt = 0, cost, best_cost = -1
    cdef int64_t qsize, rem, slo, shi, c, rs, qa, qb, v0, v1, pos, ptmp
    cdef int64_t best_partial = -1, best_partial_c = 0
    cdef uint32_t qcount, add
    cdef double thr, ub, sc, bound
    cdef uint64_t key
    s.nk = 0
    # an empty field gives R = 0 against everything
    for f in range(F):
        if Q.sz[f * Q.n + qi] == 0:
            return
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
                if 1.0 >= floor_score:
                    s.ks[0] = 1.0
                    s.ki[0] = r
                    s.nk = 1
                return
    # 2. driver field: the one whose query tokens have the shortest postings
    for f in range(F):
        qa = Q.ip[f * (Q.n + 1) + qi]
        qb = Q.ip[f * (Q.n + 1) + qi + 1]
        v0 = X.voff[f]
        v1 = X.voff[f + 1]
        cost = 0
        for t in range(qa, qb):
            pos = lower_bound_u64(X.vocab, v0, v1, Q.h[t])
            if pos < v1 and X.vocab[pos] == Q.h[t]:
                cost += X.pptr[pos + 1] - X.pptr[pos]
        if cost == 0:
            return  # no reference shares a token in this field: every score is 0
        if best_cost < 0 or cost < best_cost:
            best_cost = cost
            d = f
    qa = Q.ip[d * (Q.n + 1) + qi]
    qb = Q.ip[d * (Q.n + 1) + qi + 1]
    v0 = X.voff[d]
    v1 = X.voff[d + 1]
    ntok = 0
    rem = 0
    for t in range(qa, qb):
        pos = lower_bound_u64(X.vocab, v0, v1, Q.h[t])
        if pos < v1 and X.vocab[pos] == Q.h[t]:
            s.ps[ntok] = X.pptr[pos]
            s.pe[ntok] = X.pptr[pos + 1]
            s.qc[ntok] = Q.c[t] if Q.c != NULL else 1
            rem += s.qc[ntok]
            s.order[ntok] = ntok
            ntok += 1
    # rarest first (insertion sort: rows are short; ties keep query order)
    for t in range(1, ntok):
        ptmp = s.order[t]
        j = t - 1
        while j >= 0 and (s.pe[s.order[j]] - s.ps[s.order[j]]) > (s.pe[ptmp] - s.ps[ptmp]):
            s.order[j + 1] = s.order[j]
            j -= 1
        s.order[j + 1] = ptmp
    qsize = Q.sz[d * Q.n + qi]
    # 3. accumulate partial intersections, rarest token first
    for m in range(ntok):
        thr = current_threshold(s, k, floor_score)
        if thr > 0.0 and dice(rem, qsize, rem) < thr:
            break  # no reference not yet seen can reach the running best
        t = s.order[m]
        qcount = s.qc[t]
        size_window(thr, qsize, &slo, &shi)
        lo = lower_bound_i32(X.psize, s.ps[t], s.pe[t], slo)
        hi = lower_bound_i32(X.psize, lo, s.pe[t], shi + 1)
        for p in range(lo, hi):
            r = X.pref[p]
            if exclude and (r == qi if mode == MODE_TOPK else r <= qi):
                continue
            if s.flag[r] == 0:
                s.flag[r] = 1
                s.touched[nt] = <int32_t>r
                nt += 1
            if X.pcnt != NULL:
                add = X.pcnt[p] if X.pcnt[p] < qcount else qcount
            else:
                add = 1
            s.acc[r] += add
            if s.acc[r] > best_partial_c:
                best_partial_c = s.acc[r]
                best_partial = r
        rem -= qcount
        if mode == MODE_TOPK and best_partial >= 0 and s.flag[best_partial] == 1:
            s.flag[best_partial] = 2
            sc = exact_score(Q, qi, R, best_partial, -1, 0)
            if sc > 0.0 and sc >= floor_score:
                topk_insert(s, k, sc, best_partial)
    # 4. bound, verify and reset the candidates
    for j in range(nt):
        r = s.touched[j]
        c = s.acc[r]
        s.acc[r] = 0
        if s.flag[r] == 2:
            s.flag[r] = 0
            continue
        s.flag[r] = 0
        thr = current_threshold(s, k, floor_score)
        rs = R.sz[d * R.n + r]
        bound = <double>(c + rem)
        if bound > rs:
            bound = rs
        if bound > qsize:
            bound = qsize
        ub = dice(<int64_t>bound, qsize, rs)
        if ub < thr:
            continue
        for f in range(F):
            if f != d and length_bound(Q.sz[f * Q.n + qi], R.sz[f * R.n + r]) < ub:
                ub = length_bound(Q.sz[f * Q.n + qi], R.sz[f * R.n + r])
        if ub < thr:
            continue
        if rem == 0:
            sc = exact_score(Q, qi, R, r, d, c)
        else:
            sc = exact_score(Q, qi, R, r, -1, 0)
        if sc <= 0.0 or sc < floor_score:
            continue
        if mode == MODE_TOPK:
            topk_insert(s, k, sc, r)
        elif push_pair(pairs, qi, r, sc) != 0:
            pairs.failed = 1


cdef int run_queries(const Coll* Q, const Coll* R, const Index* X, int64_t start,
                     int64_t stop, int mode, int k, double floor_score, bint exclude,
                     int64_t max_row, int n_threads, double* out_s, int64_t* out_i,
                     PairBuf* bufs) noexcept nogil:
    """Run queries[start:stop] on n_threads; 0 on success, 1 if scratch allocation failed."""
    cdef int64_t qi, e
    cdef int tid, failed = 0
    cdef Scratch* s
    cdef int64_t nref = R.n if R.n > 0 else 1
    cdef int64_t rowcap = max_row if max_row > 0 else 1
    s = NULL
    tid = 0
    with parallel(num_threads=n_threads):
        s = <Scratch*>calloc(1, sizeof(Scratch))
        if s != NULL:
            s.acc = <int32_t*>calloc(nref, sizeof(int32_t))
            s.flag = <uint8_t*>calloc(nref, sizeof(uint8_t))
            s.touched = <int32_t*>malloc(nref * sizeof(int32_t))
            s.ps = <int64_t*>malloc(rowcap * sizeof(int64_t))
            s.pe = <int64_t*>malloc(rowcap * sizeof(int64_t))
            s.qc = <uint32_t*>malloc(rowcap * sizeof(uint32_t))
            s.order = <int64_t*>malloc(rowcap * sizeof(int64_t))
            s.ks = <double*>malloc(k * sizeof(double))
            s.ki = <int64_t*>malloc(k * sizeof(int64_t))
        tid = omp_get_thread_num()
        try:
            for qi in prange(start, stop, schedule="dynamic", chunksize=16):
                if (s == NULL or s.acc == NULL or s.flag == NULL or s.touched == NULL
                        or s.ps == NULL or s.pe == NULL or s.qc == NULL or s.order == NULL
                        or s.ks == NULL or s.ki == NULL):
                    failed += 1
                    continue
                search_one(Q, qi, R, X, mode, k, floor_score, exclude, s,
                           &bufs[tid] if mode == MODE_JOIN else NULL)
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
                free(s.acc)
                free(s.flag)
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
        for i in prange(n, num_threads=n_threads, schedule="static"):
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
