# The one parallel loop of both kernels (run_queries) and the protocol a
# kernel plugs into it (Hooks); the postings kernel's per-thread scratch, its
# pool and the checks of a call; the writes of one query's results.

from libc.stdint cimport uint64_t, int64_t, uint32_t, int32_t, uint8_t
from libc.stdlib cimport realloc

from overlap._kernels._types cimport Coll

ctypedef struct PairBuf:
    int64_t* i
    int64_t* j
    double* s
    int64_t n
    int64_t cap
    int failed

ctypedef struct TopK:
    # the running top-k of one thread: every kernel's scratch starts with one
    double* ks           # scores and reference ids, best first
    int64_t* ki
    int nk
    int64_t prev_q       # the previous query this thread handled, and its best match
    int64_t prev_best

# A kernel's side of run_queries: nogil hooks on its call (``ctx``) and on one
# thread's scratch (which starts with a TopK).
ctypedef void* (*scratch_new_fn)(const void* ctx) noexcept nogil
ctypedef void (*scratch_free_fn)(void* s) noexcept nogil
ctypedef void (*search_one_fn)(const void* ctx, int64_t qi, void* s,
                               PairBuf* pairs) noexcept nogil
ctypedef void (*take_stats_fn)(void* s, int64_t* row) noexcept nogil

ctypedef struct Hooks:
    scratch_new_fn scratch_new     # one thread's scratch for the call, NULL when out of memory
    scratch_free_fn scratch_free
    search_one_fn search_one       # one query: s's TopK (top-k) or pairs (join)
    take_stats_fn take_stats       # add s's counters to row (n_stats of them), zero them
    int n_stats
    int chunk                      # queries a thread takes at a time

ctypedef struct Scratch:
    # the postings kernel's, per thread, allocated by scratch_new and freed by scratch_free
    TopK top             # the running top-k
    uint32_t* state      # per reference: count (low COUNT_BITS bits), flag (top 2 bits)
    int32_t* bound       # per candidate reference: most its intersection can still be
    uint8_t* fields_hit  # per candidate reference: other fields whose scan admits it
    int32_t* touched     # references touched by the query (touched order)
    int32_t* tz          # their driver-field sizes
    int32_t* exact       # candidates' counts (touched order)
    int32_t* ubound      # candidates' intersection bounds (touched order)
    int32_t* sorted      # candidates by bound, descending, with their bound,
    int32_t* sorted_u    # count and size
    int32_t* sorted_c
    int32_t* sorted_z
    int64_t* bucket      # counting-sort buckets, max query size + 1
    int64_t* post_start  # per driver token of the query: its posting,
    int64_t* post_end
    int32_t* post_maxe   # the largest suffix mass in that posting,
    int64_t* post_vid    # its vocabulary id,
    uint32_t* qcount     # its count in the query
    uint64_t* order      # and the scan order (rank << QUERY_TOKEN_BITS | token)
    int64_t seg          # the slots of one field (max_row): field f's slots start at f*seg
    int64_t* post_start_all   # the allocations the slots above point into
    int64_t* post_end_all
    int32_t* post_maxe_all
    int64_t* post_vid_all
    uint32_t* qcount_all
    uint64_t* order_all
    int64_t n_post       # postings read
    int64_t n_touch      # candidates admitted
    int64_t n_verify     # exact verifications


cdef class ScratchPool:
    cdef Scratch** s
    cdef readonly int n_threads
    cdef readonly int64_t n_refs, max_row, max_mass
    cdef readonly int n_fields, k


cdef Scratch* scratch_new(int64_t n_refs, int64_t max_row, int n_fields, int64_t max_mass,
                          int k) noexcept nogil
cdef void scratch_free(Scratch* s) noexcept nogil
cdef int check_call(const Coll* Q, const Coll* R, int64_t start, int64_t stop,
                    int64_t max_row, int64_t max_mass) except -1
cdef Scratch** pool_for(ScratchPool pool, const Coll* Q, const Coll* R, int64_t max_row,
                        int64_t max_mass, int k, int* size) except? NULL
cdef int run_queries(const Hooks* H, const void* ctx, const Coll* Q, int64_t start,
                     int64_t stop, int k, int n_threads, double* out_s, int64_t* out_i,
                     PairBuf* bufs, int64_t* stats, void** pool,
                     int pool_size) noexcept nogil

# a join's pairs, the per-thread buffers laid end to end (MemoryError naming
# ``what`` when a buffer could not grow), and the buffers freed
cdef tuple gather_pairs(PairBuf* bufs, int n_buffers, str what)
cdef void free_pairs(PairBuf* bufs, int n_buffers) noexcept nogil


cdef inline double current_threshold(Scratch* s, int k, double floor_score) noexcept nogil:
    if s.top.nk < k:
        return floor_score
    return s.top.ks[k - 1]


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



cdef inline void write_top_k(const TopK* s, int64_t qi, int k, double* out_s,
                             int64_t* out_i) noexcept nogil:
    cdef int e
    for e in range(k):
        if e < s.nk:
            out_s[qi * k + e] = s.ks[e]
            out_i[qi * k + e] = s.ki[e]
        else:
            out_s[qi * k + e] = 0.0
            out_i[qi * k + e] = -1
