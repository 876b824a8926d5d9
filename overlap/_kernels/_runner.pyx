# cython: freethreading_compatible=True
"""The one parallel loop of both kernels, and the postings kernel's scratch.

run_queries runs queries[start:stop] of any kernel that plugs its hooks in
(Hooks, _runner.pxd): one scratch a thread, the queries in dynamic chunks,
each handled by one thread from start to end (so results do not depend on
the thread count), the top-k written at the query's row id, errors counted
and reported once.
"""

import numpy as np

from cython.parallel cimport prange, parallel
from libc.stdint cimport uint64_t, int64_t, uint32_t, int32_t, uint8_t
from libc.stdlib cimport malloc, calloc, free

from overlap._openmp cimport omp_get_thread_num
from overlap._kernels cimport _limits
from overlap._kernels._types cimport Coll, row_id


cdef int run_queries(const Hooks* H, const void* ctx, const Coll* Q, int64_t start,
                     int64_t stop, int k, int n_threads, double* out_s, int64_t* out_i,
                     PairBuf* bufs, int64_t* stats, void** pool,
                     int pool_size) noexcept nogil:
    """Run queries[start:stop] on n_threads; 0 on success, 1 if scratch allocation failed.

    ``bufs`` (one a thread) receives a join's pairs; without it every query's
    top-k is written to ``out_s``/``out_i`` (k a row) at its row id.  Thread t
    adds its scratch's counters to ``stats[t * H.n_stats:]``.  It takes its
    scratch from pool[t] (made there on first use and kept) when t <
    pool_size, else makes one for this call; a scratch is clean after every
    query, so a pool serves one caller's consecutive calls.
    """
    cdef int64_t qi
    cdef int tid = 0, failed = 0
    cdef bint pooled = False
    cdef void* s = NULL
    cdef TopK* top
    with parallel(num_threads=n_threads):
        tid = omp_get_thread_num()
        pooled = tid < pool_size
        s = pool[tid] if pooled else NULL
        if s == NULL:
            s = H.scratch_new(ctx)
            if pooled:
                pool[tid] = s
        if s != NULL:
            H.take_stats(s, NULL)
        top = <TopK*>s
        try:
            for qi in prange(start, stop, schedule="dynamic", chunksize=H.chunk):
                if s == NULL:
                    failed += 1
                    continue
                H.search_one(ctx, qi, s, &bufs[tid] if bufs != NULL else NULL)
                top.prev_q = qi
                top.prev_best = top.ki[0] if top.nk > 0 else -1
                if bufs == NULL:
                    write_top_k(top, row_id(Q, qi), k, out_s, out_i)
        finally:
            if s != NULL:
                H.take_stats(s, stats + H.n_stats * tid)
            if not pooled:
                H.scratch_free(s)
    return 1 if failed else 0


cdef Scratch* scratch_new(int64_t n_refs, int64_t max_row, int n_fields, int64_t max_mass,
                          int k) noexcept nogil:
    """One thread's scratch, or NULL when memory runs out (nothing leaks)."""
    cdef Scratch* s = <Scratch*>calloc(1, sizeof(Scratch))
    if s == NULL:
        return NULL
    cdef int64_t max_query
    n_refs = n_refs if n_refs > 0 else 1
    max_mass = max_mass if max_mass > 0 else 1
    s.state = <uint32_t*>calloc(n_refs, sizeof(uint32_t))
    s.bound = <int32_t*>malloc(n_refs * sizeof(int32_t))
    s.fields_hit = <uint8_t*>calloc(n_refs, sizeof(uint8_t))
    s.touched = <int32_t*>malloc(n_refs * sizeof(int32_t))
    s.tz = <int32_t*>malloc(n_refs * sizeof(int32_t))
    s.exact = <int32_t*>malloc(n_refs * sizeof(int32_t))
    s.ubound = <int32_t*>malloc(n_refs * sizeof(int32_t))
    s.sorted = <int32_t*>malloc(n_refs * sizeof(int32_t))
    s.sorted_u = <int32_t*>malloc(n_refs * sizeof(int32_t))
    s.sorted_c = <int32_t*>malloc(n_refs * sizeof(int32_t))
    s.sorted_z = <int32_t*>malloc(n_refs * sizeof(int32_t))
    s.bucket = <int64_t*>malloc((max_mass + 2) * sizeof(int64_t))
    s.seg = max_row if max_row > 0 else 1
    max_query = s.seg * n_fields
    s.post_start = s.post_start_all = <int64_t*>malloc(max_query * sizeof(int64_t))
    s.post_end = s.post_end_all = <int64_t*>malloc(max_query * sizeof(int64_t))
    s.post_maxe = s.post_maxe_all = <int32_t*>malloc(max_query * sizeof(int32_t))
    s.post_vid = s.post_vid_all = <int64_t*>malloc(max_query * sizeof(int64_t))
    s.qcount = s.qcount_all = <uint32_t*>malloc(max_query * sizeof(uint32_t))
    s.order = s.order_all = <uint64_t*>malloc(max_query * sizeof(uint64_t))
    s.top.ks = <double*>malloc(k * sizeof(double))
    s.top.ki = <int64_t*>malloc(k * sizeof(int64_t))
    s.top.prev_q = -2
    s.top.prev_best = -1
    if (s.state == NULL or s.bound == NULL or s.fields_hit == NULL or s.touched == NULL or s.tz == NULL
            or s.exact == NULL or s.ubound == NULL or s.sorted == NULL or s.sorted_u == NULL
            or s.sorted_c == NULL or s.sorted_z == NULL or s.bucket == NULL
            or s.post_start_all == NULL or s.post_end_all == NULL or s.post_maxe_all == NULL
            or s.post_vid_all == NULL or s.qcount_all == NULL or s.order_all == NULL
            or s.top.ks == NULL or s.top.ki == NULL):
        scratch_free(s)
        return NULL
    return s


cdef void scratch_free(Scratch* s) noexcept nogil:
    if s == NULL:
        return
    free(s.state)
    free(s.bound)
    free(s.fields_hit)
    free(s.touched)
    free(s.tz)
    free(s.exact)
    free(s.ubound)
    free(s.sorted)
    free(s.sorted_u)
    free(s.sorted_c)
    free(s.sorted_z)
    free(s.bucket)
    free(s.post_start_all)
    free(s.post_end_all)
    free(s.post_maxe_all)
    free(s.post_vid_all)
    free(s.qcount_all)
    free(s.order_all)
    free(s.top.ks)
    free(s.top.ki)
    free(s)


cdef class ScratchPool:
    """The per-thread scratch of one caller's consecutive top_k or join calls.

    Each kernel call would otherwise allocate, fault in and free a scratch
    per thread (about 45 bytes per reference each); a pool keeps them from
    one call to the next.  Made for one shape of call: ``n_refs``
    references, rows up to ``max_row`` tokens and ``max_mass`` mass,
    ``n_fields`` fields and ``k`` matches kept; calls with more threads than
    ``n_threads`` make the rest per call.  Not for two calls at once.
    """

    def __cinit__(self, int n_threads, int64_t n_refs, int64_t max_row, int n_fields,
                  int64_t max_mass, int k):
        if n_threads < 1 or n_refs < 0 or max_row < 0 or max_mass < 0 or k < 1 or not (
                1 <= n_fields <= _limits.MAX_FIELDS):
            raise ValueError("ScratchPool: a shape out of range")
        self.s = <Scratch**>calloc(n_threads, sizeof(Scratch*))
        if self.s == NULL:
            raise MemoryError("ScratchPool: out of memory")
        self.n_threads = n_threads
        self.n_refs = n_refs
        self.max_row = max_row
        self.n_fields = n_fields
        self.max_mass = max_mass
        self.k = k

    def __dealloc__(self):
        cdef int t
        if self.s != NULL:
            for t in range(self.n_threads):
                scratch_free(self.s[t])
            free(self.s)

    @property
    def allocated(self):
        """How many threads' scratch the pool holds."""
        return sum(1 for t in range(self.n_threads) if self.s[t] != NULL)


cdef int check_call(const Coll* Q, const Coll* R, int64_t start, int64_t stop,
                    int64_t max_row, int64_t max_mass) except -1:
    """Raise ValueError unless queries[start:stop] fit a call of this shape.

    The scratch holds ``max_row`` tokens a field and bounds up to
    ``max_mass`` (scratch_new): every query run must fit them, and both
    sides must have the same fields.  (A Collection's row bounds and sizes
    were checked when it was made.)
    """
    cdef int64_t i, a, b, bad = -1
    cdef int f
    if Q.F != R.F:
        raise ValueError(f"overlap search: queries have {Q.F} field(s), references {R.F}")
    if not 0 <= start <= stop <= Q.n:
        raise ValueError(f"overlap search: queries {start}:{stop} out of range for {Q.n} queries")
    for f in range(Q.F):
        for i in range(start, stop):
            a = Q.ip[f * (Q.n + 1) + i]
            b = Q.ip[f * (Q.n + 1) + i + 1]
            if b - a > max_row or Q.sz[f * Q.n + i] > max_mass:
                bad = i
                break
        if bad >= 0:
            raise ValueError(f"overlap search: query {bad} does not fit rows of {max_row} "
                             f"tokens and mass {max_mass}")
    return 0


cdef Scratch** pool_for(ScratchPool pool, const Coll* Q, const Coll* R, int64_t max_row,
                        int64_t max_mass, int k, int* size) except? NULL:
    """pool's slots for a call of this shape (size 0 and NULL without a pool)."""
    size[0] = 0
    if pool is None:
        return NULL
    if (pool.n_refs != R.n or pool.n_fields != Q.F or pool.k != k or max_row > pool.max_row
            or max_mass > pool.max_mass):
        raise ValueError("overlap search: a scratch pool made for another shape of call")
    size[0] = pool.n_threads
    return pool.s


cdef tuple gather_pairs(PairBuf* bufs, int n_buffers, str what):
    cdef int t
    cdef int64_t total = 0, pos = 0, n
    for t in range(n_buffers):
        if bufs[t].failed:
            raise MemoryError(f"{what}: out of memory for the result pairs")
        total += bufs[t].n
    left = np.empty(total, dtype=np.int64)
    right = np.empty(total, dtype=np.int64)
    score = np.empty(total, dtype=np.float64)
    for t in range(n_buffers):
        n = bufs[t].n
        if n:
            left[pos:pos + n] = <int64_t[:n]>bufs[t].i
            right[pos:pos + n] = <int64_t[:n]>bufs[t].j
            score[pos:pos + n] = <double[:n]>bufs[t].s
            pos += n
    return left, right, score


cdef void free_pairs(PairBuf* bufs, int n_buffers) noexcept nogil:
    cdef int t
    if bufs == NULL:
        return
    for t in range(n_buffers):
        free(bufs[t].i)
        free(bufs[t].j)
        free(bufs[t].s)
    free(bufs)
