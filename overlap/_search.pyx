# cython: freethreading_compatible=True
"""Exact overlap kernels: pruned inverted-index search, threshold join, ratios.

Everything here takes flat arrays prepared by ``overlap._index`` and converts
no Python objects; each entry point still checks the shapes and bounds its
loops rely on (check_flat, check_call) before it runs.  One query is handled by one
thread from start to end and writes only its own output slots, so results do not
depend on the thread count.

Search outline: search_one runs these phases for one query, each a
``cdef inline ... noexcept nogil`` function below:

1. prepare_query: sizes and token signatures of every field;
2. exact_duplicate (top-1 only): a row fingerprint lookup, verified token by
   token, gives score 1.0 at the lowest identical index;
3. choose_driver: the field whose scan reads the fewest posting entries;
4. seed_candidates (top-k): the query itself is ruled out, the previous
   query's neighbour verified first;
5. count_postings: the driver's tokens rarest first while a new reference can
   still reach the running threshold (prefix filter); per token, scan_posting
   reads only the sizes that pass the length filter and, once the threshold
   is high, only the entries that pass the positional filter;
6. filter_by_other_fields: cheap scans of the other fields drop candidates
   that cannot pass them;
7. bucket_candidates: every candidate bounded, the hopeless dropped, the
   rest sorted by bound;
8. verify_candidates: best bound first, signatures, then sorted merges.

Bounds and scores are computed with the same expression ``2.0*x/(a+b)``; float
division rounds monotonically, so a bound below the running best in floating
point is below it in exact arithmetic too: pruning never changes a result.
"""

import threading

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange, parallel
from libc.stdint cimport uint64_t, int64_t, uint32_t, int32_t, uint8_t
from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.string cimport memcpy
from libc.math cimport ceil

from overlap._openmp cimport omp_get_thread_num
from overlap._sets cimport chunk_first_slots, dice, intersect_sets, intersect_bags, fmix64, sort_u64, topk_insert
from overlap._limits cimport QUERY_TOKEN_BITS, COUNT_BITS
from overlap cimport _limits
from overlap._checks cimport check_flat

cnp.import_array()

#: Most fields a sample may have.
MAX_FIELDS = _limits.MAX_FIELDS
#: Most tokens one query row may hold, over all its fields.
MAX_QUERY_TOKENS = (1 << QUERY_TOKEN_BITS) - 1
#: Largest mass (size; the sum of counts for multisets) of one row.
MAX_ROW_MASS = (1 << COUNT_BITS) - 1

#: One posting entry (the Entry struct) and one size group (Group), as numpy sees them.
ENTRY_DTYPE = np.dtype([("ref", np.int32), ("size", np.int32)])
GROUP_DTYPE = np.dtype([("size", np.int32), ("top", np.int32), ("start", np.int64)])

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
    # entries whose reference state a scan asks for before it counts them
    STATE_BATCH = 16

cdef enum:
    # postings at least this long are sorted one per grab (sort_postings)
    SORT_LONG_POSTING = 2048

cdef enum:
    # size groups of a posting whose first entries a walk asks for up front
    PREFETCH_GROUPS = 16
    # the group whose entries (up to this many) a walk asks for in full when
    # it opens a group, so many groups on
    GROUPS_AHEAD = 2
    PREFETCH_GROUP_ENTRIES = 64
    # candidates whose records bucket_candidates asks for
    PREFETCH_RECORDS = 8

cdef enum:
    # candidates verified before a long posting is scanned
    TOP_PARTIALS = 4

cdef enum:
    # postings longer than this get a directory of their size groups
    GROUPED_POSTING = 32

# from this running threshold on, a top-k scan reads only the entries that
# pass the positional filter (below it, counting whole windows is cheaper)
cdef double POSITIONAL_CUT = 0.5

cdef enum:
    # another field's scan filters the candidates when it reads at most this
    # many entries per candidate (an entry read is sequential, a candidate
    # verified is a random read of its records)
    FILTER_ENTRIES_PER_CANDIDATE = 64

cdef enum:
    # per-reference state word: a count below, a flag in the top two bits
    COUNT_MASK = (1 << COUNT_BITS) - 1
    FLAG_CANDIDATE = 1 << COUNT_BITS
    FLAG_DONE = 2 << COUNT_BITS

ctypedef struct Coll:
    int F
    int64_t n
    const int64_t* ip        # F * (n + 1) row boundaries into h / c
    const uint64_t* h
    const uint32_t* c        # NULL for sets
    const int64_t* sz        # F * n sizes
    const uint64_t* fp       # n row fingerprints
    const int64_t* id        # n: the id each row stands for in results (NULL: its index;
                             # a renumbered collection, see Collection)

ctypedef struct VocabSlot:
    # one slot of a field's open-addressing table: a reference hash and its id
    uint64_t key
    int64_t vid              # -1: empty slot

ctypedef struct TokenInfo:
    # what a query needs about one vocabulary id, in one place (one cache line)
    int64_t start            # its posting: entries [start, end)
    int64_t end
    int64_t rank             # its place in the scan order (rarest first)
    int64_t g0               # its first size group (long postings; see size_groups)
    int32_t ng               # and how many (0: a short posting, read entry by entry)
    int32_t maxe             # the largest suffix mass in the posting
    int32_t z0               # the size of its first group (long postings)
    int32_t unused

ctypedef struct Entry:
    # one posting entry: what a scan reads about the reference once the
    # positional filter (on Index.psuf) and the signature test (on
    # Index.psig) have passed it; those two are columns of their own, which
    # the walks read entry after entry
    int32_t ref              # the reference id
    int32_t size             # its size in the field

ctypedef struct Group:
    # one size group of a long posting (see size_groups)
    int32_t size             # the references' size
    int32_t top              # the group's largest suffix mass (its first entry's)
    int64_t start            # its first entry

ctypedef struct Index:
    const VocabSlot* vocab   # per field, a table of the reference hashes (a power of two,
    const int64_t* voff      # at most half full); F + 1 table offsets
    const TokenInfo* tinfo   # V: per vocabulary id
    const int64_t* rrec      # per reference and field: (size, 64-bit token signature)
    const Entry* ent         # the posting entries, token by token
    const uint64_t* psig     # and each one's reference row signature (row_sig64)
    const int32_t* psuf      # and each one's reference mass from the token on
                             # (descending within a size)
    const int32_t* pref      # their references alone (NULL until top_k needs them)
    bint has_sig             # psig is there (any entry at all)
    int sig_bits             # bits of that signature per field (64 // F)
    const uint32_t* pcnt     # posting counts (NULL for sets)
    const uint64_t* fps      # reference fingerprints, ascending
    const int64_t* fpi       # their reference ids (ascending within equal fps)
    int64_t nfp
    const Group* grp         # the size groups of the long postings

if ENTRY_DTYPE.itemsize != sizeof(Entry) or GROUP_DTYPE.itemsize != sizeof(Group):
    raise ImportError("overlap._search: the entry and group dtypes do not match their structs")

ctypedef struct PairBuf:
    int64_t* i
    int64_t* j
    double* s
    int64_t n
    int64_t cap
    int failed

ctypedef struct Scratch:
    # per thread, allocated by scratch_new and freed by scratch_free
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
    double* ks           # the running top-k: scores and reference indices
    int64_t* ki
    int nk
    int64_t prev_q       # the previous query this thread handled, and its best match
    int64_t prev_best
    int64_t n_post       # postings read
    int64_t n_touch      # candidates admitted
    int64_t n_verify     # exact verifications


cdef const int64_t[::1] check_permutation(object ids, int64_t n, str what) except *:
    """``ids`` as a memoryview, after checking it holds each of 0..n-1 once (else ValueError)."""
    cdef int64_t i, v
    if not isinstance(ids, np.ndarray) or ids.dtype != np.int64 or ids.ndim != 1:
        raise ValueError(f"{what}: a 1-d int64 array is needed")
    if ids.shape[0] != n:
        raise ValueError(f"{what}: {ids.shape[0]} ids for {n} rows")
    cdef const int64_t[::1] iv = np.ascontiguousarray(ids)
    seen = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] sv = seen
    for i in range(n):
        v = iv[i]
        if v < 0 or v >= n or sv[v]:
            raise ValueError(f"{what}: not a permutation of 0..{n - 1}")
        sv[v] = 1
    return iv


cdef class Collection:
    """Flat view of one or more aligned fields (kept alive while kernels run).

    The rows' fingerprints are made on first use (need_fingerprints): only
    the top-1 exact-duplicate shortcut and dedup's identical-unit labels
    read them, so a join never pays for them.

    ``ids`` (int64, a permutation of ``0..n-1``, or None) renumbers the rows:
    row ``i`` holds the caller's row ``ids[i]`` (see gather_rows), and the
    search kernels report that id wherever they report a row (pairs, top-k
    indices, the tie rule of the top-k).  None: row ``i`` is row ``i``.
    """
    cdef Coll c
    cdef object _keep
    cdef object _ids
    cdef object _fp
    cdef object _lock

    def __init__(self, const int64_t[::1] ip, const uint64_t[::1] h, const uint32_t[::1] cnt,
                 const int64_t[::1] sz, int n_fields, int64_t n, bint multiset, ids=None):
        cdef int64_t i
        cdef const int64_t[::1] iv
        check_flat(ip, h.shape[0], n_fields, n, "Collection")
        if sz.shape[0] != <int64_t>n_fields * n:
            raise ValueError(f"Collection: {sz.shape[0]} sizes for {n_fields} field(s) of {n} rows")
        for i in range(sz.shape[0]):
            if sz[i] < 0:
                raise ValueError("Collection: a negative row size")
        if multiset and cnt.shape[0] != h.shape[0]:
            raise ValueError("Collection: counts and hashes differ in length")
        self.c.id = NULL
        self._ids = None
        if ids is not None:
            check_permutation(ids, n, "Collection: ids")
            # a private, read-only copy: the kernels write results at these ids
            ids = np.array(ids, dtype=np.int64, order="C")
            ids.flags.writeable = False
            iv = ids
            self._ids = ids
            self.c.id = &iv[0] if n else NULL
        self._keep = (ip, h, cnt, sz)
        self._fp = None
        self._lock = threading.Lock()
        self.c.F = n_fields
        self.c.n = n
        self.c.ip = &ip[0]
        self.c.h = &h[0] if h.shape[0] else NULL
        self.c.c = (&cnt[0] if cnt.shape[0] else NULL) if multiset else NULL
        self.c.sz = &sz[0] if sz.shape[0] else NULL
        self.c.fp = NULL

    @property
    def ids(self):
        """The caller's id of every row (a permutation), or None when row i is row i."""
        return self._ids

    @property
    def n_rows(self):
        return self.c.n

    @property
    def n_fields(self):
        return self.c.F

    @property
    def arrays(self):
        """(ip, h, cnt, sz): the flat arrays the collection reads."""
        return self._keep

    def need_fingerprints(self, int n_threads=1):
        """Every row's fingerprint (row_fingerprints), made once on n_threads.

        Kept while the collection lives; made under a lock, so concurrent
        callers share one array (the same for any n_threads).
        """
        cdef const uint64_t[::1] fv
        if self._fp is not None:
            return self._fp
        with self._lock:
            if self._fp is None:
                ip, h, cnt, sz = self._keep
                fp = row_fingerprints(ip, h, cnt, self.c.F, self.c.n, self.c.c != NULL,
                                      n_threads)
                fp.flags.writeable = False
                fv = fp
                self.c.fp = &fv[0] if fp.shape[0] else NULL
                self._fp = fp
        return self._fp

    @property
    def fingerprints(self):
        """Every row's fingerprint (made on first use, see need_fingerprints)."""
        return self.need_fingerprints(1)

    @property
    def has_fingerprints(self):
        """Whether the fingerprints have been made."""
        return self._fp is not None

    def records(self, int n_threads):
        """Per row and field: size, row bounds and token signature (see can_reach)."""
        ip, h, cnt, sz = self._keep
        return reference_records(ip, h, sz, self.c.F, self.c.n, n_threads)


cdef class ReferenceIndex:
    """Inverted index over a reference Collection."""
    cdef Index x
    cdef object _keep
    cdef object _psig                       # the entries' signatures (sign_entries)
    cdef readonly object groups     # (gptr, size, start, top): see size_groups, group_records
    cdef readonly object entries    # the posting entries (ENTRY_DTYPE): see build_postings, sign_entries
    cdef object _tables                     # the query-side tables (compact_vocabulary, token_info)
    cdef object _ref_column                 # entries["ref"], compact (see top_k)
    cdef object _fp_order                   # (fps, fpi), made on first top-1 (see top_k)
    cdef object _lock
    cdef readonly Collection refs
    cdef readonly object last_stats

    def __init__(self, Collection refs, const uint64_t[::1] tkeys, const int64_t[::1] tids,
                 const int64_t[::1] toff, const int64_t[::1] pptr, entries,
                 const int32_t[::1] psuf, const uint32_t[::1] pcnt,
                 const int64_t[::1] rank, const int32_t[::1] maxe, const int64_t[::1] rrec,
                 int n_threads=1):
        self.refs = refs
        self._lock = threading.Lock()
        self._ref_column = None
        self._fp_order = None
        self.x.pref = NULL
        self.x.fps = NULL
        self.x.fpi = NULL
        self.x.nfp = 0
        # the entries' signatures are made here (sign_entries), which also
        # checks the dtype and every reference id
        psig = sign_entries(refs, entries, n_threads)
        cdef const uint64_t[::1] sv = psig
        cdef int64_t m = entries.shape[0]
        if m and (refs.c.n < 1 or refs.c.F < 1 or refs.c.F > _limits.MAX_FIELDS):
            raise ValueError("overlap index: postings without references")
        if psuf.shape[0] != m:
            raise ValueError("overlap index: posting columns of different lengths")
        if pptr.shape[0] < 1 or pptr[pptr.shape[0] - 1] != m:
            raise ValueError("overlap index: posting boundaries do not cover the entries")
        # the scans read the entries, fingerprints and records; the vocabulary
        # and per-token tables are rebuilt compactly below (vocab, tinfo), so
        # the build's own arrays are not kept
        self.entries = entries
        self._keep = (entries, psuf, pcnt, rrec)
        self._psig = psig
        self.x.ent = <const Entry*>cnp.PyArray_DATA(entries) if m else NULL
        self.x.psig = &sv[0] if m else NULL
        self.x.psuf = &psuf[0] if psuf.shape[0] else NULL
        self.x.has_sig = m > 0
        self.x.sig_bits = 64 // (refs.c.F if refs.c.F > 0 else 1)
        self.x.rrec = &rrec[0] if rrec.shape[0] else NULL
        self.x.pcnt = (&pcnt[0] if pcnt.shape[0] else NULL) if refs.c.c != NULL else NULL
        gptr, gsize, gstart = size_groups(pptr, entries["size"], GROUPED_POSTING, n_threads)
        grp = group_records(gsize, gstart, psuf)
        self.groups = (gptr, grp["size"], grp["start"], grp["top"])
        self.x.grp = <const Group*>cnp.PyArray_DATA(grp) if grp.shape[0] else NULL
        vocab, voff = compact_vocabulary(tkeys, tids, toff)
        tinfo = token_info(pptr, rank, maxe, gptr, gsize)
        cdef const uint64_t[::1] vv = vocab
        cdef const int64_t[::1] vo = voff
        cdef const uint8_t[::1] tv = tinfo
        self._tables = (vocab, voff, tinfo, grp)
        self.x.vocab = <const VocabSlot*>&vv[0]
        self.x.voff = &vo[0]
        self.x.tinfo = <const TokenInfo*>&tv[0] if tv.shape[0] else NULL

    def _check_renumbered(self, Collection queries, bint against_self):
        """A search of the references against themselves (exclude_self, the
        self-join) compares query and reference indices: with renumbered rows
        (Collection ids) both sides must be the index's own collection."""
        if against_self and queries is not self.refs and (
                queries.c.id != NULL or self.refs.c.id != NULL):
            raise ValueError("overlap search: a renumbered collection is searched against "
                             "itself only as the index's own references")

    def _need_ref_column(self):
        """Make the compact reference column once (kept until the index goes).

        Below POSITIONAL_CUT a top-k scan reads every entry's reference in
        its size window; reading them from a 4-byte column instead of the
        8-byte entries halves the bytes that scan reads.  Made on first
        use, under a lock (concurrent callers share one column), so that a
        join never pays its memory.
        """
        cdef const int32_t[::1] col
        if self.x.pref != NULL or self.entries.shape[0] == 0:
            return
        with self._lock:
            if self._ref_column is None:
                column = np.ascontiguousarray(self.entries["ref"])
                col = column
                self._ref_column = column
                self.x.pref = &col[0]

    def _need_fingerprint_order(self, int n_threads=1):
        """Sort the references' fingerprints once (kept until the index goes).

        Only the top-1 search reads them (its exact-duplicate shortcut,
        ``exact_duplicate``): a join never pays the sort, which is serial
        (``stable_argsort_u64``), nor the fingerprints themselves.
        Made on first use, under a lock (concurrent callers share one).
        """
        cdef const uint64_t[::1] fv
        cdef const int64_t[::1] iv
        if self.x.nfp != 0 or self.refs.c.n == 0:
            return
        with self._lock:
            if self._fp_order is None:
                fp = self.refs.need_fingerprints(n_threads)
                fpi = stable_argsort_u64(fp)
                fps = np.ascontiguousarray(fp[fpi])
                fv = fps
                iv = fpi
                self._fp_order = (fps, fpi)
                self.x.fps = &fv[0]
                self.x.fpi = &iv[0]
                self.x.nfp = fps.shape[0]

    @property
    def fingerprint_order(self):
        """(fingerprints ascending, their reference ids): the top-1 shortcut's table."""
        self._need_fingerprint_order()
        return self._fp_order

    @property
    def entry_signatures(self):
        """The row signature (row_sig64) of every posting entry's reference."""
        return self._psig.copy()

    def top_k(self, Collection queries, int64_t start, int64_t stop, int k, double min_score,
              bint exclude_self, int64_t max_row, int64_t max_mass, int n_threads,
              double[:, ::1] out_score, int64_t[:, ::1] out_index, ScratchPool pool=None):
        """Top-k search for queries[start:stop] into out_*[start:stop] (scratch from pool)."""
        cdef int pool_size
        check_call(&queries.c, &self.refs.c, start, stop, max_row, max_mass)
        self._check_renumbered(queries, exclude_self)
        # a renumbered query i writes row ids[i]: any row of the outputs
        cdef int64_t rows = stop if queries.c.id == NULL else queries.c.n
        if k < 1 or out_score.shape[1] != k or out_index.shape[1] != k or (
                out_score.shape[0] < rows or out_index.shape[0] < rows):
            raise ValueError(f"overlap search: outputs of shape (>= {rows}, {k}) needed")
        cdef Scratch** slots = pool_for(pool, &queries.c, &self.refs.c, max_row, max_mass, k,
                                        &pool_size)
        if min_score < POSITIONAL_CUT:
            self._need_ref_column()
        if k == 1:
            # the exact-duplicate shortcut reads both sides' fingerprints
            queries.need_fingerprints(n_threads)
            self._need_fingerprint_order(n_threads)
        stats = np.zeros((max(1, n_threads), 3), dtype=np.int64)
        cdef int64_t[:, ::1] sv = stats
        cdef int ok = run_queries(&queries.c, &self.refs.c, &self.x, start, stop, MODE_TOPK,
                                  k, min_score, exclude_self, max_row, max_mass, n_threads,
                                  &out_score[0, 0], &out_index[0, 0], NULL, &sv[0, 0],
                                  slots, pool_size)
        self.last_stats = stats.sum(axis=0)
        if ok != 0:
            raise MemoryError("overlap search: out of memory for per-thread scratch")

    def join(self, Collection queries, int64_t start, int64_t stop, double threshold,
             bint upper_only, int64_t max_row, int64_t max_mass, int n_threads,
             ScratchPool pool=None):
        """Pairs (i, j, score) with score >= threshold for queries[start:stop] (unsorted).

        With ``upper_only`` only references j > i are considered (self-join).
        Scratch comes from ``pool`` (made with k = 1) when given.
        """
        cdef int pool_size
        check_call(&queries.c, &self.refs.c, start, stop, max_row, max_mass)
        self._check_renumbered(queries, upper_only)
        cdef Scratch** slots = pool_for(pool, &queries.c, &self.refs.c, max_row, max_mass, 1,
                                        &pool_size)
        cdef int n_buffers = max(1, n_threads), t
        cdef PairBuf* bufs = <PairBuf*>calloc(n_buffers, sizeof(PairBuf))
        if bufs == NULL:
            raise MemoryError("overlap join: out of memory")
        cdef int ok
        cdef int64_t total = 0, pos = 0
        stats = np.zeros((n_buffers, 3), dtype=np.int64)
        cdef int64_t[:, ::1] sv = stats
        try:
            ok = run_queries(&queries.c, &self.refs.c, &self.x, start, stop, MODE_JOIN,
                             1, threshold, upper_only, max_row, max_mass, n_buffers, NULL, NULL, bufs,
                             &sv[0, 0], slots, pool_size)
            self.last_stats = stats.sum(axis=0)
            for t in range(n_buffers):
                if bufs[t].failed:
                    ok = 1
                total += bufs[t].n
            if ok != 0:
                raise MemoryError("overlap join: out of memory for the result pairs")
            left = np.empty(total, dtype=np.int64)
            right = np.empty(total, dtype=np.int64)
            score = np.empty(total, dtype=np.float64)
            for t in range(n_buffers):
                if bufs[t].n:
                    left[pos:pos + bufs[t].n] = <int64_t[:bufs[t].n]>bufs[t].i
                    right[pos:pos + bufs[t].n] = <int64_t[:bufs[t].n]>bufs[t].j
                    score[pos:pos + bufs[t].n] = <double[:bufs[t].n]>bufs[t].s
                    pos += bufs[t].n
            return left, right, score
        finally:
            for t in range(n_buffers):
                free(bufs[t].i)
                free(bufs[t].j)
                free(bufs[t].s)
            free(bufs)


ctypedef struct PairCols:
    # one part of a join's pairs: three columns of n entries
    const int64_t* a
    const int64_t* b
    const double* s
    int64_t n


cdef int place_range(const PairCols* parts, int64_t lo, int64_t hi,
                     int64_t* hist, int64_t n_left, int64_t n_right, int64_t* out_left,
                     int64_t* out_right, double* out_score) noexcept nogil:
    """One range ``[lo, hi)`` of the pairs (the parts, none empty, laid end to
    end), in order: without outputs, count every left into ``hist`` and
    return 1 at a pair outside [0, n_left) x [0, n_right); with them, put
    every pair at ``hist[left]`` (its next slot) and raise that."""
    cdef int64_t part = 0, off = lo, p, k, u
    for p in range(lo, hi):
        while off >= parts[part].n:  # a pair is left, so a part holds it
            off -= parts[part].n
            part += 1
        k = parts[part].a[off]
        if out_left == NULL:
            if k < 0 or k >= n_left or parts[part].b[off] < 0 or parts[part].b[off] >= n_right:
                return 1
            hist[k] += 1
        else:
            u = hist[k]
            hist[k] = u + 1
            out_left[u] = k
            out_right[u] = parts[part].b[off]
            out_score[u] = parts[part].s[off]
        off += 1
    return 0


cdef inline void sort_group_by_right(int64_t* right, double* score, int64_t n, uint64_t* keys,
                                     double* tmp) noexcept nogil:
    """One left's pairs by right, stably (``keys``, ``tmp``: room for n).

    (right, position) keys are unique, so sorting them is stable."""
    cdef int64_t a
    for a in range(n):
        keys[a] = (<uint64_t>right[a] << 32) | <uint64_t>a
    sort_u64(keys, n)
    for a in range(n):
        tmp[a] = score[keys[a] & <uint64_t>0xFFFFFFFFULL]
    for a in range(n):
        right[a] = <int64_t>(keys[a] >> 32)
        score[a] = tmp[a]


def sorted_pairs(parts, int64_t n_left, int64_t n_right, int n_threads=1):
    """The pairs of ``parts`` (``(left, right, score)`` triples of arrays) as
    one ``(left, right, score)`` sorted by (left, right), stably.

    ``left`` is in ``[0, n_left)``, ``right`` in ``[0, n_right)``
    (``n_right`` < 2**31).  A stable counting sort by ``left`` (the pairs cut
    into one range a thread, each from its own histogram) and a sort of each
    left's pairs by ``right`` give the order without a sort of all the pairs,
    on up to ``n_threads`` threads with the same result.  Memory: the result
    and one histogram a thread.  (W's train-context self-join, 178k pairs
    whose near-duplicate hubs pair with up to 210 others: 3.0 ms on one
    thread, 1.9 on two, against 3.8 for pair_order and the takes; a first
    version by two counting sorts, right then left, wrote twice the memory
    and took 5.5 ms inside the join, where that memory is new.)
    """
    cdef list keep = []
    cdef int64_t total = 0, k, u, run, gmax = 0, a, b
    cdef int n_parts, j, g, bad = 0, failed = 0
    cdef const int64_t[::1] li
    cdef const int64_t[::1] ri
    cdef const double[::1] si
    if n_left < 0 or n_right < 0 or n_right > 2147483647:
        raise ValueError(f"sorted_pairs: n_left must be >= 0 and n_right in [0, 2**31), "
                         f"got {n_left}, {n_right}")
    for part_cols in parts:
        li, ri, si = part_cols
        if ri.shape[0] != li.shape[0] or si.shape[0] != li.shape[0]:
            raise ValueError("sorted_pairs: the columns of a part differ in length")
        if li.shape[0]:
            keep.append((li, ri, si))
            total += li.shape[0]
    n_parts = len(keep)
    cdef int n_seg = max(1, min(n_threads, total // 65536))
    left = np.empty(total, dtype=np.int64)
    right = np.empty(total, dtype=np.int64)
    score = np.empty(total, dtype=np.float64)
    if total == 0:
        return left, right, score
    hist = np.zeros(n_seg * (n_left + 1), dtype=np.int64)
    cdef int64_t* H = <int64_t*>cnp.PyArray_DATA(hist)
    cdef int64_t* lv = <int64_t*>cnp.PyArray_DATA(left)
    cdef int64_t* rv = <int64_t*>cnp.PyArray_DATA(right)
    cdef double* sv = <double*>cnp.PyArray_DATA(score)
    cdef uint64_t* keys
    cdef double* tmp
    cdef PairCols* cols = <PairCols*>calloc(n_parts, sizeof(PairCols))  # total > 0: n_parts >= 1
    if cols == NULL:
        raise MemoryError("overlap join: out of memory ordering the result pairs")
    try:
        for j in range(n_parts):
            li, ri, si = keep[j]
            cols[j].a = &li[0]
            cols[j].b = &ri[0]
            cols[j].s = &si[0]
            cols[j].n = li.shape[0]
        with nogil:
            # count every range's lefts (and check both indices)
            for g in prange(n_seg, num_threads=n_seg, schedule="dynamic", chunksize=1):
                bad += place_range(cols, total * g // n_seg, total * (g + 1) // n_seg,
                                   H + g * (n_left + 1), n_left, n_right, NULL, NULL, NULL)
        if bad:
            raise ValueError(f"sorted_pairs: a pair is outside [0, {n_left}) x [0, {n_right})")
        with nogil:
            # left k of range g starts after every smaller left and after left k of ranges < g
            run = 0
            for k in range(n_left):
                u = run
                for g in range(n_seg):
                    a = H[g * (n_left + 1) + k]
                    H[g * (n_left + 1) + k] = run
                    run += a
                if run - u > gmax:
                    gmax = run - u
            for g in prange(n_seg, num_threads=n_seg, schedule="dynamic", chunksize=1):
                place_range(cols, total * g // n_seg, total * (g + 1) // n_seg,
                            H + g * (n_left + 1), n_left, n_right, lv, rv, sv)
            # left k's pairs now end at H[(n_seg - 1) * (n_left + 1) + k]
            with parallel(num_threads=n_threads):
                keys = <uint64_t*>malloc(gmax * sizeof(uint64_t))
                tmp = <double*>malloc(gmax * sizeof(double))
                for k in prange(n_left, schedule="dynamic", chunksize=4096):
                    a = H[(n_seg - 1) * (n_left + 1) + k - 1] if k else 0
                    b = H[(n_seg - 1) * (n_left + 1) + k]
                    if b - a > 1 and (keys == NULL or tmp == NULL):
                        failed += 1
                    elif b - a > 1:
                        sort_group_by_right(rv + a, sv + a, b - a, keys, tmp)
                free(keys)
                free(tmp)
        if failed:
            raise MemoryError("overlap join: out of memory ordering the result pairs")
        return left, right, score
    finally:
        free(cols)


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


cdef extern from "_sigscan.h" nogil:
    ctypedef int (*sig_scan_fn)(const uint64_t* sig, int64_t* p, int64_t end, uint64_t qsig,
                                int F, int b, uint64_t mask, const int* allowed,
                                int64_t* out, int room) noexcept nogil
    int sig_cpu_level() noexcept
    sig_scan_fn sig_scan_for(int level) noexcept
    # set bits of x (SWAR: no libgcc call and no -mpopcnt needed)
    int popcount64 "sig_popcount_swar"(uint64_t x) noexcept

# the group signature test of the join's walk (walk_fill): the popcnt
# instruction where the CPU has it, chosen once at import
cdef int _sig_cpu_level = sig_cpu_level()
cdef int _sig_level = _sig_cpu_level
cdef sig_scan_fn _sig_scan = sig_scan_for(_sig_level)


def popcount_cpu_level():
    """Highest population-count level this CPU runs: 0 portable, 1 popcnt."""
    return _sig_cpu_level


def popcount_level():
    """The population-count level the join's signature test uses now."""
    return _sig_level


def set_popcount_level(int level):
    """Use population-count level ``level`` (<= popcount_cpu_level()); returns the previous one.

    Every level computes the same integers; tests run each one.  Not for use
    while another thread runs a join.
    """
    global _sig_level, _sig_scan
    if level < 0 or level > _sig_cpu_level:
        raise ValueError(f"level must be in [0, {_sig_cpu_level}] on this CPU, got {level}")
    prev = _sig_level
    _sig_level = level
    _sig_scan = sig_scan_for(level)
    return prev


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


cdef int fill_signatures(const Coll* C, const int32_t* pref, int64_t ref_stride, int64_t m,
                         uint64_t* out, int n_threads) except -1:
    """out[i] = row_sig64 of entry i's reference pref[i*ref_stride] (i < m);
    ValueError if one is out of range."""
    cdef int64_t n = C.n, i, r
    rows = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] rv = rows
    cdef int bad = 0
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=4096):
            rv[i] = row_sig64(C, i)
        for i in prange(m, num_threads=n_threads, schedule="dynamic", chunksize=65536):
            r = pref[i * ref_stride]
            if r < 0 or r >= n:
                bad += 1
            else:
                out[i] = rv[r]
    if bad:
        raise ValueError("overlap index: a posting names a reference out of range")
    return 0


def entry_signatures(Collection refs, const int32_t[::1] pref, int n_threads):
    """The row signature (row_sig64) of every posting entry's reference."""
    out = np.empty(pref.shape[0], dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    fill_signatures(&refs.c, &pref[0] if pref.shape[0] else NULL, 1, pref.shape[0],
                    &ov[0] if ov.shape[0] else NULL, n_threads)
    return out


cdef sign_entries(Collection refs, entries, int n_threads):
    """The signatures of the Entry records' (ENTRY_DTYPE) references, one a record.

    The walks test them in a column of their own, eight bytes an entry,
    before they read the entry itself.  ValueError if the array is not a
    contiguous ENTRY_DTYPE array or names a reference out of range.
    """
    if (not isinstance(entries, np.ndarray) or entries.dtype != ENTRY_DTYPE
            or entries.ndim != 1 or not entries.flags.c_contiguous):
        raise ValueError("overlap index: the entries must be a contiguous ENTRY_DTYPE array")
    cdef int64_t m = entries.shape[0]
    out = np.empty(m, dtype=np.uint64)
    if m == 0:
        return out
    cdef uint64_t[::1] ov = out
    cdef const Entry* e = <const Entry*>cnp.PyArray_DATA(entries)
    fill_signatures(&refs.c, &e[0].ref, sizeof(Entry) // sizeof(int32_t), m, &ov[0],
                    n_threads)
    return out


def group_records(const int32_t[::1] gsize, const int64_t[::1] gstart, const int32_t[::1] psuf):
    """The size groups (see size_groups) as Group records (GROUP_DTYPE): size, top, start."""
    cdef int64_t g, n = gsize.shape[0], m = psuf.shape[0]
    if gstart.shape[0] != n:
        raise ValueError("overlap index: size group columns of different lengths")
    out = np.empty(n, dtype=GROUP_DTYPE)
    if n == 0:
        return out
    cdef Group* gr = <Group*>cnp.PyArray_DATA(out)
    for g in range(n):
        if gstart[g] < 0 or gstart[g] >= m:
            raise ValueError("overlap index: a size group starts out of range")
        gr[g].size = gsize[g]
        gr[g].start = gstart[g]
        gr[g].top = psuf[gstart[g]]
    return out


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
    cdef int64_t a = X.voff[f], size = X.voff[f + 1] - a, slot
    cdef const VocabSlot* v
    if size == 0:
        return -1
    slot = <int64_t>(fmix64(key) & <uint64_t>(size - 1))
    while True:
        v = &X.vocab[a + slot]
        if v.vid < 0:
            return -1
        if v.key == key:
            return v.vid
        slot = (slot + 1) & (size - 1)


def compact_vocabulary(const uint64_t[::1] tkeys, const int64_t[::1] tids,
                       const int64_t[::1] toff):
    """Rebuild every field's hash table at most half full, key and id side by side.

    ``vocab_table`` sizes its table by the tokens it reads; a query only needs
    the distinct ones, and one slot read per probe.  Returns ``(slots, voff)``:
    ``slots`` is uint64 pairs (key, id as int64; -1 empty), field ``f`` owns
    pairs ``voff[f]:voff[f+1]`` (a power of two).
    """
    cdef int64_t F = toff.shape[0] - 1, f, a, i, nv, cap, slot, total = 0
    cdef int64_t[::1] caps = np.zeros(F, dtype=np.int64)
    for f in range(F):
        nv = 0
        for i in range(toff[f], toff[f + 1]):
            nv += tids[i] >= 0
        cap = 16
        while cap < 2 * nv:
            cap <<= 1
        caps[f] = cap
        total += cap
    voff = np.zeros(F + 1, dtype=np.int64)
    voff[1:] = np.cumsum(caps)
    slots = np.zeros(2 * total, dtype=np.uint64)
    cdef uint64_t[::1] sv = slots
    cdef int64_t[::1] vo = voff
    with nogil:
        for i in range(total):
            sv[2 * i + 1] = <uint64_t>(-1)
        for f in range(F):
            a = vo[f]
            cap = vo[f + 1] - a
            for i in range(toff[f], toff[f + 1]):
                if tids[i] < 0:
                    continue
                slot = <int64_t>(fmix64(tkeys[i]) & <uint64_t>(cap - 1))
                while <int64_t>sv[2 * (a + slot) + 1] >= 0:
                    slot = (slot + 1) & (cap - 1)
                sv[2 * (a + slot)] = tkeys[i]
                sv[2 * (a + slot) + 1] = <uint64_t>tids[i]
    return slots, voff


def token_info(const int64_t[::1] pptr, const int64_t[::1] rank, const int32_t[::1] maxe,
               const int64_t[::1] gptr, const int32_t[::1] gsize):
    """One TokenInfo per vocabulary id, as raw bytes (see the struct)."""
    cdef int64_t V = pptr.shape[0] - 1, v
    if rank.shape[0] != V or maxe.shape[0] != V or gptr.shape[0] != V + 1:
        raise ValueError("overlap index: token tables of different lengths")
    if V and (gptr[0] != 0 or gptr[V] != gsize.shape[0]):
        raise ValueError("overlap index: size groups do not match their directory")
    out = np.zeros(V * sizeof(TokenInfo), dtype=np.uint8)
    cdef uint8_t[::1] ov = out
    cdef TokenInfo* ti = <TokenInfo*>&ov[0] if V else NULL
    with nogil:
        for v in range(V):
            ti[v].start = pptr[v]
            ti[v].end = pptr[v + 1]
            ti[v].rank = rank[v]
            ti[v].g0 = gptr[v]
            ti[v].ng = <int32_t>(gptr[v + 1] - gptr[v])
            ti[v].maxe = maxe[v]
            ti[v].z0 = gsize[gptr[v]] if gptr[v + 1] > gptr[v] else 0
    return out


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


cdef inline double current_threshold(Scratch* s, int k, double floor_score) noexcept nogil:
    if s.nk < k:
        return floor_score
    return s.ks[k - 1]


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


cdef inline int64_t row_id(const Coll* C, int64_t i) noexcept nogil:
    """The id row i of C stands for in results (see Collection's ids)."""
    return C.id[i] if C.id != NULL else i


cdef inline int64_t lower_bound_group(const Group* g, int64_t lo, int64_t hi, int64_t size,
                                      int64_t first) noexcept nogil:
    """The first group in [lo, hi) whose size is >= ``size`` (hi if none).

    ``first`` is g[lo].size (kept in the token's TokenInfo, so it costs no
    read here).  Sizes are distinct and ascending, and mostly consecutive:
    the group ``size - first`` places on is tried first (one read, where a
    binary search would make several dependent ones), then a binary search.
    """
    cdef int64_t mid, guess
    if lo >= hi or first >= size:
        return lo
    guess = lo + (size - first)
    if guess < hi:
        # sizes rise by at least one a group, so g[guess].size >= size
        if g[guess].size == size:
            return guess
        hi = guess
    while lo < hi:
        mid = (lo + hi) >> 1
        if g[mid].size < size:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline int64_t lower_bound_entry(const Entry* e, int64_t lo, int64_t hi,
                                      int64_t size) noexcept nogil:
    """The first entry in [lo, hi) whose reference size is >= ``size`` (hi if none)."""
    cdef int64_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if e[mid].size < size:
            lo = mid + 1
        else:
            hi = mid
    return lo


# ---------------------------------------------------------------- one query, in phases
#
# search_one runs the phases below in order; each reads the call's constants
# from a Task and the query's running state from a Query.  Scratch (per
# thread) holds the arrays, allocated and freed in one place (scratch_new,
# scratch_free).

ctypedef struct Task:
    # what one kernel call does; the same for every query of the call
    const Coll* Q
    const Coll* R
    const Index* X
    int mode             # MODE_TOPK or MODE_JOIN
    int k                # matches kept per query (top-k)
    double floor_score   # min_score (top-k) or threshold (join)
    bint exclude         # top-k: skip reference qi; join: the self-join (see key_above)


ctypedef struct Query:
    # the running state of the query being searched
    int64_t qi
    int64_t sizes[_limits.MAX_FIELDS]              # the query's size in every field
    uint64_t sigs[_limits.MAX_FIELDS * SIGW]       # and its token signature in every field
    int driver                             # the field whose postings are scanned
    int64_t size                           # the query's size in the driver field
    int64_t n_tokens     # driver tokens some reference holds (s.post_* slots)
    int64_t rest         # query mass of the driver tokens not visited yet
    int64_t skipped      # mass of visited tokens whose postings were skipped whole
    int64_t partial      # mass of visited tokens whose postings were read in part
    int64_t n_touched    # references in s.touched
    int64_t best_count   # the largest partial count seen, and its reference
    int64_t best_ref
    int64_t costs[_limits.MAX_FIELDS]      # entries each field's scan would read
    int n_filters        # other fields whose scan filtered the candidates
    uint64_t sig64       # its 64-bit row signature (row_sig64)
    int loaded           # fields whose tokens load_tokens has looked up (bit f)
    int64_t nt_f[_limits.MAX_FIELDS]       # and their n_tokens and rest as loaded
    int64_t rest_f[_limits.MAX_FIELDS]


ctypedef struct SigFilter:
    # a scan's test of the entries' row signatures (see sig_prepare, sig_admits)
    bint active
    uint64_t qsig        # the query's row signature
    uint64_t mask        # one field's bits, shifted down
    int F
    int b                # bits per field
    int driver           # the scanned field: the entry gives the reference's size in it
    int64_t q            # the query's size in the scanned field
    double cut           # the scan's cut, lowered by a relative 1e-9
    int allowed[_limits.MAX_FIELDS]   # other fields: most differing bits a match can show


cdef inline double running_cut(Scratch* s, const Task* T) noexcept nogil:
    """The running threshold, lowered by a relative 1e-12 so ties are never pruned."""
    return current_threshold(s, T.k, T.floor_score) * (1.0 - 1e-12)


cdef inline bint passes_length(int64_t a, int64_t b, double cut) noexcept nogil:
    """The length filter: 2*min(a, b) >= cut*(a + b), in the bounds' own arithmetic."""
    return 2.0 * <double>(a if a < b else b) >= cut * <double>(a + b)


cdef inline void size_window(int64_t q, double cut, int64_t* lo, int64_t* hi) noexcept nogil:
    """Reference sizes [lo, hi] that pass the length filter against a query of size q.

    Closed-form guesses, then corrected by the filter's own float test, so the
    window is exactly the set of sizes passes_length accepts.
    """
    cdef double guess
    cdef int64_t top = 2147483647
    if cut <= 0.0:
        lo[0] = 0
        hi[0] = top
        return
    lo[0] = <int64_t>(cut * <double>q / (2.0 - cut))
    while lo[0] > 0 and passes_length(q, lo[0] - 1, cut):
        lo[0] -= 1
    while lo[0] < q and not passes_length(q, lo[0], cut):
        lo[0] += 1
    guess = (2.0 - cut) * <double>q / cut
    hi[0] = top if guess >= <double>top else <int64_t>guess
    while hi[0] > q and not passes_length(q, hi[0], cut):
        hi[0] -= 1
    while hi[0] < top and passes_length(q, hi[0] + 1, cut):
        hi[0] += 1


cdef void verify_top_partials(const Task* T, Query* u, Scratch* s) noexcept nogil:
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
        verify_now(T, u, s, best[i])


cdef inline void verify_now(const Task* T, Query* u, Scratch* s, int64_t r) noexcept nogil:
    """Top-k: score reference r exactly now (it is done for this query)."""
    cdef double sc
    s.state[r] = FLAG_DONE
    s.n_verify += 1
    sc = exact_score(T.Q, u.qi, T.R, r, -1, 0)
    if sc > 0.0 and sc >= T.floor_score:
        topk_insert(s.ks, s.ki, &s.nk, T.k, sc, row_id(T.R, r))


cdef inline bint prepare_query(const Task* T, int64_t qi, Query* u) noexcept nogil:
    """Sizes and signatures of every field; False when a field is empty (every R is 0)."""
    cdef const Coll* Q = T.Q
    cdef int f
    cdef int64_t a
    u.qi = qi
    u.loaded = 0
    u.n_touched = 0
    u.n_filters = 0
    u.skipped = 0
    u.partial = 0
    u.best_count = 0
    u.best_ref = -1
    for f in range(Q.F):
        u.sizes[f] = Q.sz[f * Q.n + qi]
        if u.sizes[f] == 0:
            return False
        a = Q.ip[f * (Q.n + 1) + qi]
        row_signature(Q.h + a, Q.ip[f * (Q.n + 1) + qi + 1] - a, u.sigs + SIGW * f)
    u.sig64 = row_sig64(Q, qi)
    return True


cdef inline void sig_prepare(const Task* T, const Query* u, int driver, int64_t q, double cut,
                             SigFilter* sf) noexcept nogil:
    """Set up sig_admits for a scan of field ``driver`` (query size q) at ``cut``.

    A bit set on one side only stands for a token of that side missing on the
    other, so 2*|x ∩ y| <= |x| + |y| - d, d the differing bits of the field.
    A match needs 2*|x ∩ y| >= cut*(|x| + |y|): in the scanned field the entry
    gives |y|; in another field |y| is at most the top of its size window, and
    (1 - cut)*(|x| + |y|) grows with |y|, so a reference showing more
    differing bits than that top allows cannot match.  The cut is lowered by
    a relative 1e-9 so that rounding never prunes a match.
    """
    cdef int g
    cdef int64_t lo, hi, size
    cdef double limit
    cdef int a
    sf.active = cut > 0.0 and T.X.has_sig
    if not sf.active:
        return
    sf.qsig = u.sig64
    sf.F = T.Q.F
    sf.b = T.X.sig_bits
    sf.mask = <uint64_t>0xFFFFFFFFFFFFFFFFULL if sf.b >= 64 else ((<uint64_t>1 << sf.b) - 1)
    sf.driver = driver
    sf.q = q
    sf.cut = cut * (1.0 - 1e-9)
    for g in range(sf.F):
        if g == driver:
            sf.allowed[g] = sf.b
            continue
        size_window(u.sizes[g], sf.cut, &lo, &hi)
        if hi >= 2147483647:
            sf.allowed[g] = sf.b   # no finite window: no test
            continue
        size = u.sizes[g] + hi
        limit = sf.cut * <double>size
        a = 0
        while a < sf.b and <double>(size - a - 1) >= limit:
            a += 1
        sf.allowed[g] = a


cdef inline bint sig_admits(const SigFilter* sf, uint64_t rsig, int64_t z) noexcept nogil:
    """False when the reference with row signature rsig (size z in the scanned field)
    surely cannot match (see sig_prepare)."""
    cdef uint64_t x = sf.qsig ^ rsig
    cdef int g, d
    for g in range(sf.F):
        d = popcount64((x >> (g * sf.b)) & sf.mask)
        if g == sf.driver:
            if <double>(sf.q + z - d) < sf.cut * <double>(sf.q + z):
                return False
        elif d > sf.allowed[g]:
            return False
    return True


cdef inline bint exact_duplicate(const Task* T, const Query* u, Scratch* s) noexcept nogil:
    """Top-1: score 1.0 at the lowest reference identical to the query, if any.

    Lowest by id (row_id): in a renumbered collection every identical
    reference of the fingerprint's run is looked at.
    """
    cdef const Index* X = T.X
    cdef uint64_t key = T.Q.fp[u.qi]
    cdef int64_t p = lower_bound_u64(X.fps, 0, X.nfp, key), r, best = -1
    while p < X.nfp and X.fps[p] == key:
        r = X.fpi[p]
        p += 1
        if T.exclude and r == u.qi:
            continue
        if (best < 0 or row_id(T.R, r) < best) and rows_identical(T.Q, u.qi, T.R, r):
            best = row_id(T.R, r)
            if T.R.id == NULL:
                break  # fpi is ascending within a run: the first is the lowest
    if best < 0:
        return False
    s.ks[0] = 1.0
    s.ki[0] = best
    s.nk = 1
    return True


cdef inline void load_tokens(const Task* T, Query* u, Scratch* s, int f) noexcept nogil:
    """Field f's query tokens that some reference holds, in the index's rank order.

    Points the s.post_* slots and s.order (rarest first) at field f's part of
    the scratch and sets u.n_tokens and u.rest.  A field is looked up once
    per query: loading it again only points at what the first load filled.
    """
    cdef const Coll* Q = T.Q
    cdef const Index* X = T.X
    cdef const TokenInfo* ti
    cdef int64_t t, vid, n = 0, rest = 0, base = f * s.seg
    s.post_start = s.post_start_all + base
    s.post_end = s.post_end_all + base
    s.post_maxe = s.post_maxe_all + base
    s.post_vid = s.post_vid_all + base
    s.qcount = s.qcount_all + base
    s.order = s.order_all + base
    if u.loaded & (1 << f):
        u.n_tokens = u.nt_f[f]
        u.rest = u.rest_f[f]
        return
    cdef int64_t t0 = Q.ip[f * (Q.n + 1) + u.qi], t1 = Q.ip[f * (Q.n + 1) + u.qi + 1]
    cdef int64_t va = X.voff[f], vsize = X.voff[f + 1] - X.voff[f]
    if vsize == 0:
        t1 = t0
    # the table slots and token records are random reads: ask for all of a
    # row's first, so that they overlap instead of waiting one after another
    for t in range(t0, t1):
        overlap_prefetch(&X.vocab[va + <int64_t>(fmix64(Q.h[t]) & <uint64_t>(vsize - 1))])
    for t in range(t0, t1):
        vid = vocab_lookup(X, f, Q.h[t])
        s.post_vid[t - t0] = vid
        if vid >= 0:
            overlap_prefetch(&X.tinfo[vid])
    for t in range(t0, t1):
        vid = s.post_vid[t - t0]
        if vid >= 0:
            ti = &X.tinfo[vid]
            s.post_start[n] = ti.start
            s.post_end[n] = ti.end
            s.qcount[n] = Q.c[t] if Q.c != NULL else 1
            s.post_maxe[n] = ti.maxe
            s.post_vid[n] = vid
            rest += s.qcount[n]
            s.order[n] = (<uint64_t>ti.rank << QUERY_TOKEN_BITS) | <uint64_t>n
            n += 1
    sort_u64(s.order, n)
    u.loaded |= 1 << f
    u.nt_f[f] = n
    u.rest_f[f] = rest
    u.n_tokens = n
    u.rest = rest


cdef inline int64_t scan_cost(const Task* T, const Query* u, Scratch* s,
                              int64_t q, int64_t zmin) noexcept nogil:
    """Entries the scan of the loaded field would read at the floor threshold, or more.

    Tokens past the query prefix and sizes outside the length window (or
    below ``zmin``, see walk_start) are not read (see count_postings); with a
    floor of 0 this is every posting entry.  Short postings count whole, so 0
    still means the scan reads nothing.
    """
    cdef double floor = T.floor_score, cut = T.floor_score * (1.0 - 1e-12)
    cdef int64_t rest = u.rest, cost = 0, m, t, x, zlo, zhi
    size_window(q, cut, &zlo, &zhi)
    if zmin > zlo:
        zlo = zmin
    for m in range(u.n_tokens):
        if floor > 0.0 and dice(rest, q, rest) < floor:
            break
        t = <int64_t>(s.order[m] & ((1 << QUERY_TOKEN_BITS) - 1))
        x = s.post_maxe[t] if s.post_maxe[t] < rest else rest
        if 2.0 * <double>x >= cut * <double>(q + x):
            if T.X.tinfo[s.post_vid[t]].ng == 0:
                # a short posting: its length bounds its window (reading its
                # sizes would cost a random read for a few entries)
                cost += s.post_end[t] - s.post_start[t]
            else:
                cost += window_entries(T.X, s.post_vid[t], zlo, zhi)
        rest -= s.qcount[t]
    return cost


cdef inline bint choose_driver(const Task* T, Query* u, Scratch* s) noexcept nogil:
    """Drive with the field whose scan reads the fewest entries; load its tokens.

    False when some field's scan would read nothing: then no reference can
    reach the floor (with a floor of 0: no reference shares a token in it).
    """
    cdef int f, last = T.Q.F - 1
    cdef int64_t cost, best_cost = -1
    # a self-join driven by field 0 reads only sizes >= the query's own there
    # (see scan_posting), which often makes field 0 the cheaper driver
    cdef bint upper = T.exclude and T.mode == MODE_JOIN
    if T.Q.F == 1:
        load_tokens(T, u, s, 0)
        u.driver = 0
        u.size = u.sizes[0]
        return u.n_tokens > 0
    for f in range(T.Q.F):
        load_tokens(T, u, s, f)
        cost = scan_cost(T, u, s, u.sizes[f], u.sizes[0] if upper and f == 0 else 0)
        u.costs[f] = cost
        if cost == 0:
            return False
        if best_cost < 0 or cost < best_cost:
            best_cost = cost
            u.driver = f
    if u.driver != last:
        load_tokens(T, u, s, u.driver)
    u.size = u.sizes[u.driver]
    return True


cdef inline void mark_done(Query* u, Scratch* s, int64_t r) noexcept nogil:
    s.state[r] = FLAG_DONE
    s.touched[u.n_touched] = <int32_t>r
    s.tz[u.n_touched] = 0
    u.n_touched += 1


cdef inline void seed_candidates(const Task* T, Query* u, Scratch* s) noexcept nogil:
    """Top-k: rule the query itself out, and try the previous query's neighbour first.

    Consecutive queries are often consecutive samples of one dialogue, whose
    best matches are consecutive references too; verifying the reference after
    the previous query's best match first can only raise the threshold early
    (it never changes a result).
    """
    cdef int64_t qi = u.qi, r
    if T.mode != MODE_TOPK:
        return
    if T.exclude and qi < T.R.n:
        mark_done(u, s, qi)   # reset with the other touched references
    # (in a renumbered collection neighbours by index are not neighbours in
    # the caller's order, and prev_best is an id: no seed)
    if s.prev_q == qi - 1 and s.prev_best >= 0 and T.R.id == NULL and T.Q.id == NULL:
        r = s.prev_best + 1
        if r < T.R.n and s.state[r] == 0 and not (T.exclude and r == qi):
            mark_done(u, s, r)
            verify_now(T, u, s, r)


ctypedef struct Walk:
    # a cursor over the entries of one posting that pass the size window and
    # the positional filter (see walk_fill)
    const Index* X
    int64_t p            # the next entry to look at
    int64_t end          # the end of its size group (grouped) or of the posting
    int64_t g            # grouped postings: the current size group, and the last + 1
    int64_t g_end
    int64_t post_end
    int64_t zlo          # the size window
    int64_t zhi
    int64_t q            # the query's size and its mass from this token on
    int64_t rest
    double cut
    bint grouped
    bint cut_short       # some entry in the window failed the positional filter
    int64_t n_read       # entries looked at
    int64_t z            # the size of the entry walk_next returned (grouped: of the open group)
    int sig_driver       # walk_fill, grouped: most differing signature bits in
                         # the scanned field for the open group's size (-1: none pass)


cdef inline bint rest_caps_window(int64_t q, int64_t rest, double cut,
                                  int64_t* zhi) noexcept nogil:
    """Lower zhi to the largest size z with 2*rest >= cut*(q + z); True if it moved.

    Every entry of a larger size fails the positional filter
    2*min(e, rest) >= cut*(q + z) whatever its e, so the walk stops there.
    """
    cdef double guess
    cdef int64_t z
    if cut <= 0.0:
        return False
    guess = 2.0 * <double>rest / cut - <double>q
    if guess >= <double>zhi[0]:
        return False
    z = <int64_t>guess if guess > -1.0 else -1
    while z + 1 <= zhi[0] and 2.0 * <double>rest >= cut * <double>(q + z + 1):
        z += 1
    while z >= 0 and 2.0 * <double>rest < cut * <double>(q + z):
        z -= 1
    if z >= zhi[0]:
        return False
    zhi[0] = z
    return True


cdef inline void walk_start(Walk* w, const Index* X, int64_t vid, int64_t q, int64_t rest,
                            double cut, int64_t zmin) noexcept nogil:
    """Start a walk over posting vid for a query of size q with mass rest left;
    sizes below zmin are left out of the window too (0: none)."""
    w.X = X
    w.q = q
    w.rest = rest
    w.cut = cut
    w.cut_short = False
    w.n_read = 0
    cdef const TokenInfo* ti = &X.tinfo[vid]
    w.post_end = ti.end
    size_window(q, cut, &w.zlo, &w.zhi)
    if zmin > w.zlo:
        w.zlo = zmin
    if rest_caps_window(q, rest, cut, &w.zhi):
        w.cut_short = True
    w.g = ti.g0
    w.g_end = ti.g0 + ti.ng
    w.grouped = ti.ng > 0
    cdef int64_t g, e
    cdef const Group* gr
    if w.grouped:
        # start "before" the first group in the window: walk_open_group opens it
        w.g = lower_bound_group(X.grp, w.g, w.g_end, w.zlo, ti.z0) - 1
        w.p = 0
        w.end = 0
        # the first entry of every group the walk will open is a random read:
        # ask for them all now, so that they overlap
        g = w.g + 1
        while g < w.g_end and g <= w.g + PREFETCH_GROUPS:
            gr = &X.grp[g]
            if gr.size > w.zhi:
                break
            e = gr.top if gr.top < rest else rest
            if 2.0 * <double>e >= cut * <double>(q + gr.size):
                overlap_prefetch(&X.psuf[gr.start])
                overlap_prefetch(&X.psig[gr.start])
            g += 1
    else:
        w.p = ti.start
        w.end = w.post_end


cdef inline int64_t walk_next(Walk* w) noexcept nogil:
    """Short postings: the next entry that passes the size window and
    2*min(e, rest) >= cut*(q + z), or -1 (grouped walks: see walk_open_group).

    Entries are sorted by size, then by e descending; a short posting is
    read entry by entry.
    """
    cdef const Entry* ent = w.X.ent
    cdef const int32_t* psuf = w.X.psuf
    cdef int64_t e, z
    while w.p < w.end:
        z = ent[w.p].size
        if z > w.zhi:
            return -1
        w.p += 1
        if z < w.zlo:
            continue
        w.n_read += 1
        e = psuf[w.p - 1]
        if 2.0 * <double>(e if e < w.rest else w.rest) >= w.cut * <double>(w.q + z):
            w.z = z
            return w.p - 1
        w.cut_short = True
    return -1


cdef inline int sig_driver_bits(const SigFilter* sf, int64_t z) noexcept nogil:
    """The most bits the scanned field's signatures may differ by for a
    reference of size z there to pass sig_admits (-1: none passes)."""
    cdef int64_t n = sf.q + z
    cdef double c = sf.cut * <double>n
    cdef int64_t d = <int64_t>(<double>n - c) if <double>n - c > -1.0 else -1
    if d > sf.b:
        d = sf.b
    while d < sf.b and <double>(n - d - 1) >= c:
        d += 1
    while d >= 0 and <double>(n - d) < c:
        d -= 1
    return <int>d


cdef inline void prefetch_group(const Index* X, int64_t g, int64_t end) noexcept nogil:
    """Ask for the suffix masses and signatures of group g's entries (up to
    end, at most PREFETCH_GROUP_ENTRIES of them): groups are too short for
    the hardware's stream prefetch to start in time."""
    cdef int64_t a = X.grp[g].start, p
    if end > a + PREFETCH_GROUP_ENTRIES:
        end = a + PREFETCH_GROUP_ENTRIES
    p = a
    while p < end:
        overlap_prefetch(&X.psuf[p])
        p += 16
    p = a
    while p < end:
        overlap_prefetch(&X.psig[p])
        p += 8


cdef inline bint walk_open_group(Walk* w, const SigFilter* sf) noexcept nogil:
    """Grouped walks: move to the next size group with an entry that passes
    the positional filter and set [p, end) to the entries that pass it (a
    prefix of the group: e descends within it); False when the walk is over."""
    cdef const Group* grp
    cdef const int32_t* psuf = w.X.psuf
    cdef int64_t z, e, p, gend, emin, rest = w.rest
    cdef double need
    while True:
        w.g += 1
        if w.g >= w.g_end:
            return False
        grp = &w.X.grp[w.g]
        z = grp.size
        if z > w.zhi:
            return False
        need = w.cut * <double>(w.q + z)
        e = grp.top
        if 2.0 * <double>(e if e < rest else rest) < need:
            # the group's largest suffix mass fails: skip it unread
            w.cut_short = True
            continue
        gend = grp[1].start if w.g + 1 < w.g_end else w.post_end
        if w.g + GROUPS_AHEAD < w.g_end:
            prefetch_group(w.X, w.g + GROUPS_AHEAD,
                           grp[GROUPS_AHEAD + 1].start if w.g + GROUPS_AHEAD + 1 < w.g_end
                           else w.post_end)
        # an entry passes when 2.0 * min(e, rest) >= need; rest passes (the
        # top did), so exactly when e >= ceil(need / 2): need / 2 is exact in
        # binary floating point, and an integer e is >= x iff it is >= ceil(x)
        emin = <int64_t>ceil(0.5 * need)
        p = grp.start + 1   # its first entry holds the top, which passed
        while p < gend and psuf[p] >= emin:
            p += 1
        w.n_read += p - grp.start
        if p < gend:
            w.n_read += 1
            w.cut_short = True
        w.z = z
        w.p = grp.start
        w.end = p
        if sf.active:
            w.sig_driver = sig_driver_bits(sf, z)
        return True


cdef inline int walk_fill(Walk* w, const SigFilter* sf, int64_t* out_p, int32_t* out_z,
                          int cap) noexcept nogil:
    """The next (at most cap) entries of the walk that pass the positional
    filter and the signature test, with their reference sizes; fewer than
    cap only when the walk is over.

    A long posting is read a size group at a time: the entries that pass
    the positional filter are found on the suffix-mass column alone, then
    their signatures are tested in one tight loop (_sig_scan, _sigscan.h),
    against per-field limits that are integers within the group
    (sig_driver_bits).
    """
    cdef const uint64_t* psig = w.X.psig
    cdef int n = 0, g, j, got, F = sf.F, b = sf.b
    cdef int64_t p, end, z
    cdef uint64_t qsig = sf.qsig, mask = sf.mask
    cdef int allowed[_limits.MAX_FIELDS]
    if not w.grouped:
        while n < cap:
            p = walk_next(w)
            if p < 0:
                break
            if sf.active and not sig_admits(sf, psig[p], w.z):
                continue
            out_p[n] = p
            out_z[n] = <int32_t>w.z
            n += 1
        return n
    if sf.active:
        for g in range(F):
            allowed[g] = sf.allowed[g]
    while n < cap:
        if w.p >= w.end and not walk_open_group(w, sf):
            break
        p = w.p
        end = w.end
        z = w.z
        if not sf.active:
            while p < end and n < cap:
                out_p[n] = p
                out_z[n] = <int32_t>z
                n += 1
                p += 1
        elif w.sig_driver < 0:
            p = end
        else:
            allowed[sf.driver] = w.sig_driver
            got = _sig_scan(psig, &p, end, qsig, F, b, mask, allowed, out_p + n, cap - n)
            for j in range(n, n + got):
                out_z[j] = <int32_t>z
            n += got
        w.p = p
    return n


cdef inline void window_range(const Index* X, int64_t vid, int64_t zlo, int64_t zhi,
                              int64_t* a, int64_t* b) noexcept nogil:
    """The entries [a, b) of posting vid whose reference size lies in [zlo, zhi]."""
    cdef const TokenInfo* ti = &X.tinfo[vid]
    cdef int64_t g0 = ti.g0, g1 = ti.g0 + ti.ng, ga, gb, end = ti.end
    if g1 > g0:
        ga = lower_bound_group(X.grp, g0, g1, zlo, ti.z0)
        gb = lower_bound_group(X.grp, ga, g1, zhi + 1, X.grp[ga].size if ga < g1 else 0)
        a[0] = X.grp[ga].start if ga < g1 else end
        b[0] = X.grp[gb].start if gb < g1 else end
        return
    a[0] = lower_bound_entry(X.ent, ti.start, end, zlo)
    b[0] = lower_bound_entry(X.ent, a[0], end, zhi + 1)


cdef inline int64_t window_entries(const Index* X, int64_t vid, int64_t zlo,
                                   int64_t zhi) noexcept nogil:
    """Entries of posting vid whose reference size lies in [zlo, zhi]."""
    cdef int64_t a, b
    window_range(X, vid, zlo, zhi, &a, &b)
    return b - a


cdef inline bint key_above(int64_t z, int64_t r, int64_t q0, int64_t qi) noexcept nogil:
    """Whether reference r (size z in field 0) comes after query qi (size q0 in
    field 0) in the self-join's order: by size in field 0, then by index."""
    return z > q0 or (z == q0 and r > qi)


cdef inline void scan_posting(const Task* T, Query* u, Scratch* s, int64_t t,
                              double cut) noexcept nogil:
    """Count driver token t's entries that can matter; admit new candidates.

    While the running threshold of a top-k search is below POSITIONAL_CUT
    it reads every entry in the size window: counts stay exact, which keeps
    the bounds tight while most entries would pass anyway.  Otherwise (and
    always in the join) it reads only the entries that pass the positional
    filter too (walk_next).  An entry that fails the positional filter now
    failed it at every later token too (e and rest only shrink, the cut only
    rises), so the entries read for one reference are the first ones it
    shares with the query, and the bound stored when its last entry was read
    covers every later token: count + skipped + min(its mass after the
    token, the query's).
    """
    cdef const Index* X = T.X
    cdef const Entry* ent = X.ent
    cdef const uint32_t* pcnt = X.pcnt
    cdef uint32_t* state = s.state
    cdef int32_t* bound = s.bound
    cdef int32_t* touched = s.touched
    cdef int32_t* tz = s.tz
    cdef int64_t skipped = u.skipped, qi = u.qi, q = u.size, rest = u.rest
    cdef int64_t qcount = s.qcount[t], after = u.rest - s.qcount[t]
    cdef int64_t p, a, b, r, e, count, gain, ref_count
    cdef int64_t n_touched = u.n_touched, best_count = u.best_count, best_ref = u.best_ref
    cdef uint32_t w, add
    cdef int64_t z
    # a self-join finds each pair once, from the query whose key (size in
    # field 0, index) is the smaller: its references all have sizes >= q0
    cdef bint upper = T.exclude and T.mode == MODE_JOIN
    cdef int64_t q0 = u.sizes[0]
    cdef Walk walk
    cdef SigFilter sf
    cdef int64_t batch_p[STATE_BATCH]
    cdef int32_t batch_z[STATE_BATCH]
    cdef int nb, j, got
    cdef int64_t pb
    if T.mode == MODE_TOPK and cut < POSITIONAL_CUT * (1.0 - 1e-12):
        # the whole window: exact counts (a candidate's bound stays the one
        # set when it was admitted, still valid, and looser than its count)
        size_window(q, cut, &a, &b)
        window_range(X, s.post_vid[t], a, b, &a, &b)
        s.n_post += b - a
        for p in range(a, b):
            # every entry's reference is read: from the compact column (a
            # quarter of the bytes), which top_k makes for such scans
            r = X.pref[p] if X.pref != NULL else ent[p].ref
            w = state[r]
            add = <uint32_t>(qcount if pcnt == NULL or pcnt[p] >= qcount else pcnt[p])
            if (w >> COUNT_BITS) == 1:
                w += add
                state[r] = w
                if <int64_t>(w & COUNT_MASK) > best_count:
                    best_count = w & COUNT_MASK
                    best_ref = r
                continue
            if w != 0:
                continue
            e = X.psuf[p]
            z = ent[p].size
            if 2.0 * <double>(e if e < rest else rest) < cut * <double>(q + z):
                continue
            ref_count = pcnt[p] if pcnt != NULL else 1
            gain = e - ref_count
            state[r] = FLAG_CANDIDATE | add
            bound[r] = <int32_t>(add + skipped + (gain if gain < after else after))
            touched[n_touched] = <int32_t>r
            tz[n_touched] = <int32_t>z
            n_touched += 1
            if add > best_count:
                best_count = add
                best_ref = r
    else:
        # only the entries that pass the positional filter and the row
        # signature test too; the signature is read beside the entry, before
        # the random read of the reference's state.  (A candidate that fails
        # it now, after the running threshold rose, cannot reach the
        # threshold any more: leaving its count short only lowers its bound.)
        sig_prepare(T, u, u.driver, q, cut, &sf)
        walk_start(&walk, X, s.post_vid[t], q, rest, cut, q0 if upper and u.driver == 0 else 0)
        while True:
            # gather a batch of the entries that pass, asking for their
            # references' state as they come (random reads that then overlap),
            # then count them in the same order
            got = walk_fill(&walk, &sf, batch_p, batch_z, STATE_BATCH)
            nb = 0
            for j in range(got):
                pb = batch_p[j]
                r = ent[pb].ref
                if upper and u.driver == 0 and batch_z[j] == q0 and r <= qi:
                    continue  # the pair belongs to the reference's query (equal key, lower index)
                if upper and u.driver != 0 and not key_above(T.R.sz[r], r, q0, qi):
                    continue
                overlap_prefetch(&state[r])
                overlap_prefetch(&bound[r])
                batch_p[nb] = pb
                batch_z[nb] = batch_z[j]
                nb += 1
            for j in range(nb):
                pb = batch_p[j]
                r = ent[pb].ref
                w = state[r]
                ref_count = pcnt[pb] if pcnt != NULL else 1
                add = <uint32_t>(ref_count if ref_count < qcount else qcount)
                gain = X.psuf[pb] - ref_count
                if gain > after:
                    gain = after
                if (w >> COUNT_BITS) == 1:
                    w += add
                    state[r] = w
                    count = w & COUNT_MASK
                    bound[r] = <int32_t>(count + skipped + gain)
                    if count > best_count:
                        best_count = count
                        best_ref = r
                elif w == 0:
                    state[r] = FLAG_CANDIDATE | add
                    bound[r] = <int32_t>(add + skipped + gain)
                    touched[n_touched] = <int32_t>r
                    tz[n_touched] = batch_z[j]
                    n_touched += 1
                    if add > best_count:
                        best_count = add
                        best_ref = r
            if got < STATE_BATCH:
                break
        s.n_post += walk.n_read
        if walk.cut_short:
            u.partial += qcount
    u.n_touched = n_touched
    u.best_count = best_count
    u.best_ref = best_ref


cdef inline void prefetch_next_walks(const Task* T, const Query* u, const Scratch* s,
                                     int64_t m, double cut) noexcept nogil:
    """Ask for what the next tokens' walks read first, while this one is walked,
    one stage further each token ahead: the TokenInfo three tokens on; two
    on, the first size group in the window (where lower_bound_group guesses
    it); one on, that group's first entry and suffix mass (for a short
    posting, its first entry)."""
    cdef const Index* X = T.X
    cdef int64_t t, lo, hi, g, step
    cdef const TokenInfo* ti
    size_window(u.size, cut, &lo, &hi)
    if m + 3 < u.n_tokens:
        t = <int64_t>(s.order[m + 3] & ((1 << QUERY_TOKEN_BITS) - 1))
        overlap_prefetch(&X.tinfo[s.post_vid[t]])
    for step in range(2, 0, -1):
        if m + step >= u.n_tokens:
            continue
        t = <int64_t>(s.order[m + step] & ((1 << QUERY_TOKEN_BITS) - 1))
        ti = &X.tinfo[s.post_vid[t]]
        if ti.ng == 0:
            if step == 1:
                overlap_prefetch(&X.ent[ti.start])
                overlap_prefetch(&X.psuf[ti.start])
            continue
        g = ti.g0 + (lo - ti.z0 if lo > ti.z0 else 0)
        if g >= ti.g0 + ti.ng:
            continue
        if step == 2:
            overlap_prefetch(&X.grp[g])
        elif X.grp[g].size >= lo:
            overlap_prefetch(&X.psig[X.grp[g].start])
            overlap_prefetch(&X.psuf[X.grp[g].start])


cdef inline void count_postings(const Task* T, Query* u, Scratch* s) noexcept nogil:
    """Visit the driver tokens rarest first while a new reference can still win."""
    cdef int64_t m, t, x, qcount
    cdef double thr, cut
    for m in range(u.n_tokens):
        thr = current_threshold(s, T.k, T.floor_score)
        if thr > 0.0 and dice(u.rest, u.size, u.rest) < thr:
            break  # query prefix exhausted: no new reference can reach the threshold
        if (T.mode == MODE_JOIN and T.exclude and u.driver == 0
                and dice(u.rest, u.size, u.size) < thr):
            break  # the same for a self-join's references, none smaller than the query
        cut = thr * (1.0 - 1e-12)
        t = <int64_t>(s.order[m] & ((1 << QUERY_TOKEN_BITS) - 1))
        qcount = s.qcount[t]
        x = s.post_maxe[t] if s.post_maxe[t] < u.rest else u.rest
        if 2.0 * <double>x < cut * <double>(u.size + x):
            # no entry of this posting can be admitted: leave it unread and
            # let its mass widen every candidate's bound instead
            u.skipped += qcount
            u.rest -= qcount
            continue
        if T.mode == MODE_TOPK and s.post_end[t] - s.post_start[t] > 2 * (u.n_touched + 64):
            # a long posting comes: verify the best few partial matches first,
            # so the threshold that filters its admissions is as high as it can be
            verify_top_partials(T, u, s)
            thr = current_threshold(s, T.k, T.floor_score)
            if thr > 0.0 and dice(u.rest, u.size, u.rest) < thr:
                break
            cut = thr * (1.0 - 1e-12)
        prefetch_next_walks(T, u, s, m, cut)
        scan_posting(T, u, s, t, cut)
        u.rest -= qcount
        if (T.mode == MODE_TOPK and u.best_ref >= 0
                and (s.state[u.best_ref] >> COUNT_BITS) == 1):
            # verify the best partial match now: raises the threshold early
            verify_now(T, u, s, u.best_ref)
            u.best_count = 0


cdef inline void mark_admitted(const Task* T, Query* v, Scratch* s, int64_t q,
                               uint8_t stage) noexcept nogil:
    """Advance the candidates that the loaded field's scan admits from stage to stage + 1.

    The same walk as count_postings and scan_posting (query prefix, size
    window, positional filter), reading only: a reference whose Dice ratio in
    this field can reach the cut has an entry that passes every filter (the
    first token it shares with the query), so a candidate the walk never
    meets cannot reach the threshold and is dropped.
    """
    cdef const Entry* ent = T.X.ent
    cdef const uint32_t* state = s.state
    cdef uint8_t* fields_hit = s.fields_hit
    cdef double thr = current_threshold(s, T.k, T.floor_score)
    cdef double cut = thr * (1.0 - 1e-12)
    cdef int64_t rest = v.rest, m, t, x, r
    cdef Walk walk
    cdef SigFilter sf
    cdef int64_t batch_p[STATE_BATCH]
    cdef int32_t batch_z[STATE_BATCH]
    cdef int j, got
    sig_prepare(T, v, v.driver, q, cut, &sf)
    for m in range(v.n_tokens):
        if thr > 0.0 and dice(rest, q, rest) < thr:
            break
        t = <int64_t>(s.order[m] & ((1 << QUERY_TOKEN_BITS) - 1))
        x = s.post_maxe[t] if s.post_maxe[t] < rest else rest
        if 2.0 * <double>x >= cut * <double>(q + x):
            walk_start(&walk, T.X, s.post_vid[t], q, rest, cut, 0)
            while True:
                got = walk_fill(&walk, &sf, batch_p, batch_z, STATE_BATCH)
                for j in range(got):
                    r = ent[batch_p[j]].ref
                    if (state[r] >> COUNT_BITS) == 1 and fields_hit[r] == stage:
                        fields_hit[r] = stage + 1
                if got < STATE_BATCH:
                    break
            s.n_post += walk.n_read
        rest -= s.qcount[t]


cdef inline void filter_by_other_fields(const Task* T, Query* u, Scratch* s) noexcept nogil:
    """Drop the candidates that another field's scan would not admit.

    The ratio is the minimum over fields, so a match passes every field's
    filters.  Reading a field's prefix postings costs a few nanoseconds an
    entry; a candidate that goes on to verification costs a random read of
    its records, so a field is used when its scan is short against the
    candidates it can rule out.
    """
    cdef Query v
    cdef int f
    if T.Q.F == 1 or u.n_touched == 0:
        return
    if T.mode == MODE_TOPK and running_cut(s, T) < POSITIONAL_CUT * (1.0 - 1e-12):
        return  # low thresholds: most candidates pass every field's filters
    for f in range(T.Q.F):
        if f == u.driver or u.costs[f] > FILTER_ENTRIES_PER_CANDIDATE * u.n_touched:
            continue
        v = u[0]
        v.driver = f
        load_tokens(T, &v, s, f)
        mark_admitted(T, &v, s, u.sizes[f], <uint8_t>u.n_filters)
        u.n_filters += 1


cdef inline int64_t bucket_candidates(const Task* T, Query* u, Scratch* s) noexcept nogil:
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
        if 2.0 * <double>c < cut * <double>(q + z):
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
                                   PairBuf* pairs) noexcept nogil:
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
        if 2.0 * <double>c < cut * <double>(q + c):
            break  # every later candidate has a bound <= c
        z = s.sorted_z[j]
        if 2.0 * <double>c < cut * <double>(q + z):
            continue
        if not signatures_reach(X, r, F, u.sizes, u.sigs, cut):
            continue
        s.n_verify += 1
        if counts_exact:
            sc = bounded_score(T.Q, u.qi, T.R, X, r, cut, u.driver, s.sorted_c[j])
        else:
            sc = bounded_score(T.Q, u.qi, T.R, X, r, cut, -1, 0)
        if sc <= 0.0 or sc < T.floor_score:
            continue
        if T.mode == MODE_TOPK:
            topk_insert(s.ks, s.ki, &s.nk, T.k, sc, row_id(T.R, r))
            cut = running_cut(s, T)
        else:
            a = row_id(T.Q, u.qi)
            b = row_id(T.R, r)
            if push_pair(pairs, a if not T.exclude or a < b else b,
                         b if not T.exclude or a < b else a, sc) != 0:
                pairs.failed = 1


cdef void search_one(const Task* T, int64_t qi, Scratch* s, PairBuf* pairs) noexcept nogil:
    """Handle one query: fills s.ks/s.ki (top-k) or appends to ``pairs`` (join).

    ``T.exclude`` skips reference qi (top-k, all-vs-rest), or makes the join
    a self-join: query qi pairs only with the references after it by (size in
    field 0, index), see key_above, and reports each pair as (lower, higher index).  Per-reference state is one
    uint32: the count in the low COUNT_BITS bits and a flag in the top two
    (0 unseen, 1 candidate, 2 done).
    """
    cdef Query u
    cdef int64_t n
    s.nk = 0
    if not prepare_query(T, qi, &u):
        return
    if (T.mode == MODE_TOPK and T.k == 1 and T.X.nfp > 0 and T.Q.fp != NULL
            and exact_duplicate(T, &u, s)):
        return
    if not choose_driver(T, &u, s):
        return
    seed_candidates(T, &u, s)
    count_postings(T, &u, s)
    filter_by_other_fields(T, &u, s)
    n = bucket_candidates(T, &u, s)
    verify_candidates(T, &u, s, n, pairs)


# ---------------------------------------------------------------- scratch and the parallel loop

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
    s.ks = <double*>malloc(k * sizeof(double))
    s.ki = <int64_t*>malloc(k * sizeof(int64_t))
    s.prev_q = -2
    s.prev_best = -1
    if (s.state == NULL or s.bound == NULL or s.fields_hit == NULL or s.touched == NULL or s.tz == NULL
            or s.exact == NULL or s.ubound == NULL or s.sorted == NULL or s.sorted_u == NULL
            or s.sorted_c == NULL or s.sorted_z == NULL or s.bucket == NULL
            or s.post_start_all == NULL or s.post_end_all == NULL or s.post_maxe_all == NULL
            or s.post_vid_all == NULL or s.qcount_all == NULL or s.order_all == NULL
            or s.ks == NULL or s.ki == NULL):
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
    free(s.ks)
    free(s.ki)
    free(s)


cdef inline void write_top_k(Scratch* s, int64_t qi, int k, double* out_s,
                             int64_t* out_i) noexcept nogil:
    cdef int e
    for e in range(k):
        if e < s.nk:
            out_s[qi * k + e] = s.ks[e]
            out_i[qi * k + e] = s.ki[e]
        else:
            out_s[qi * k + e] = 0.0
            out_i[qi * k + e] = -1


cdef int run_queries(const Coll* Q, const Coll* R, const Index* X, int64_t start,
                     int64_t stop, int mode, int k, double floor_score, bint exclude,
                     int64_t max_row, int64_t max_mass, int n_threads, double* out_s,
                     int64_t* out_i, PairBuf* bufs, int64_t* stats,
                     Scratch** pool, int pool_size) noexcept nogil:
    """Run queries[start:stop] on n_threads; 0 on success, 1 if scratch allocation failed.

    Thread t takes its scratch from pool[t] (made there on first use and
    kept) when t < pool_size, else makes one for this call; a scratch is
    clean after every query, so a pool serves one caller's consecutive calls.
    """
    cdef Task T
    cdef int64_t qi
    cdef int tid = 0, failed = 0
    cdef bint pooled = False
    cdef Scratch* s = NULL
    T.Q = Q
    T.R = R
    T.X = X
    T.mode = mode
    T.k = k
    T.floor_score = floor_score
    T.exclude = exclude
    with parallel(num_threads=n_threads):
        tid = omp_get_thread_num()
        pooled = tid < pool_size
        s = pool[tid] if pooled else NULL
        if s == NULL:
            s = scratch_new(R.n, max_row, Q.F, max_mass, k)
            if pooled:
                pool[tid] = s
        if s != NULL:
            s.n_post = 0
            s.n_touch = 0
            s.n_verify = 0
        try:
            for qi in prange(start, stop, schedule="dynamic", chunksize=16):
                if s == NULL:
                    failed += 1
                    continue
                search_one(&T, qi, s, &bufs[tid] if mode == MODE_JOIN else NULL)
                s.prev_q = qi
                s.prev_best = s.ki[0] if s.nk > 0 else -1
                if mode == MODE_TOPK:
                    write_top_k(s, row_id(Q, qi), k, out_s, out_i)
        finally:
            if s != NULL:
                stats[3 * tid] += s.n_post
                stats[3 * tid + 1] += s.n_touch
                stats[3 * tid + 2] += s.n_verify
            if not pooled:
                scratch_free(s)
    return 1 if failed else 0


cdef class ScratchPool:
    """The per-thread scratch of one caller's consecutive top_k or join calls.

    Each kernel call would otherwise allocate, fault in and free a scratch
    per thread (about 45 bytes per reference each); a pool keeps them from
    one call to the next.  Made for one shape of call: ``n_refs``
    references, rows up to ``max_row`` tokens and ``max_mass`` mass,
    ``n_fields`` fields and ``k`` matches kept; calls with more threads than
    ``n_threads`` make the rest per call.  Not for two calls at once.
    """
    cdef Scratch** s
    cdef readonly int n_threads
    cdef readonly int64_t n_refs, max_row, max_mass
    cdef readonly int n_fields, k

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


# ---------------------------------------------------------------- renumbering rows by size

def stable_argsort_u64(keys):
    """``np.argsort(keys, kind="stable")`` as int64, by numpy's faster default sort.

    Plain numpy, kept here because the index sorts its fingerprints with it
    (``fingerprint_order``) and a kernel imports no Python module of the
    package; ``overlap._order`` re-exports it.

    numpy's default sort of 64-bit integers (SIMD where the CPU has it) is not
    stable, so the runs of equal keys (here: duplicate rows) are put back in
    index order afterwards, by a second default sort of only their elements on
    a key unique to each: (run number, index).
    """
    order = np.argsort(keys).astype(np.int64, copy=False)
    n = order.shape[0]
    if n < 2:
        return order
    sk = keys[order]
    tie = sk[1:] == sk[:-1]
    if tie.any():
        run = np.concatenate(([0], np.cumsum(~tie)))  # run number of each sorted position
        pos = np.flatnonzero(np.concatenate(([False], tie)) | np.concatenate((tie, [False])))
        sub = order[pos]
        order[pos] = sub[np.argsort(run[pos] * n + sub)]
    return order


def size_order(const int64_t[::1] sz, int n_fields, int64_t n):
    """The rows by size in field 0, then in field 1, and so on, then by index.

    ``sz`` holds ``n_fields * n`` non-negative sizes, field after field (a
    Collection's).  Returns an int64 permutation: one stable counting sort a
    field, from the last to the first (a stable argsort when a field's sizes
    span more than counting_sort_sizes takes).  Rows of the same size in
    every field keep their order: identical rows stay in index order.
    """
    cdef int64_t i, f
    if n_fields < 1 or n < 0 or sz.shape[0] != <int64_t>n_fields * n:
        raise ValueError(f"size_order: {sz.shape[0]} sizes for {n_fields} field(s) of {n} rows")
    for i in range(sz.shape[0]):
        if sz[i] < 0:
            raise ValueError("size_order: a negative size")
    order = np.arange(n, dtype=np.int64)
    if n < 2:
        return order
    keys = np.empty(n, dtype=np.int64)
    step = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o
    cdef int64_t[::1] kv = keys
    cdef int64_t[::1] sv = step
    for f in range(n_fields - 1, -1, -1):
        o = order
        for i in range(n):
            kv[i] = sz[f * n + o[i]]
        if not counting_sort_sizes(&kv[0], n, &sv[0]):
            step[:] = np.argsort(keys, kind="stable")
        order = order[step]
    return order


def gather_field(const int64_t[::1] ip, const uint64_t[::1] h, const uint32_t[::1] cnt,
                 order, uint64_t[::1] out_h, uint32_t[::1] out_c, int64_t base,
                 int n_threads=1):
    """Copy the rows ``order[0], order[1], ...`` of one field into ``out_h[base:]``.

    The field is ``n = len(ip) - 1`` rows, row ``i`` being ``h[ip[i]:ip[i+1]]``
    (and ``cnt[...]``, its counts, when ``out_c`` is not empty: then ``cnt``
    must be as long as ``h``); ``order`` (int64) must hold each of ``0..n-1``
    once.  Returns the new row bounds (n + 1, from ``base`` on); the rows are
    copied on up to ``n_threads`` threads (the result does not depend on it).
    With the fields copied one after the other, ``Collection(..., ids=order)``
    is the collection renumbered by ``order``.
    """
    cdef int64_t n = ip.shape[0] - 1, k, r, a, m, pos = base
    if n < 0:
        raise ValueError("gather_field: no row bounds")
    check_flat(ip, h.shape[0], 1, n, "gather_field")
    cdef const int64_t[::1] ov = check_permutation(order, n, "gather_field: order")
    cdef bint counts = out_c.shape[0] > 0
    if counts and cnt.shape[0] != h.shape[0]:
        raise ValueError("gather_field: counts and hashes differ in length")
    if n_threads < 1:
        raise ValueError(f"gather_field: n_threads must be at least 1, got {n_threads}")
    new_ip = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] nip = new_ip
    nip[0] = base
    for k in range(n):
        r = ov[k]
        pos += ip[r + 1] - ip[r]
        nip[k + 1] = pos
    if base < 0 or pos > out_h.shape[0] or (counts and pos > out_c.shape[0]):
        raise ValueError(f"gather_field: the output holds no {pos - base} tokens from {base} on")
    cdef uint64_t* hp = &out_h[0] if pos > base else NULL
    cdef uint32_t* cp = &out_c[0] if counts and pos > base else NULL
    cdef const uint64_t* hs = &h[0] if h.shape[0] else NULL
    cdef const uint32_t* cs = &cnt[0] if counts and cnt.shape[0] else NULL
    with nogil:
        for k in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=4096):
            r = ov[k]
            a = ip[r]
            m = ip[r + 1] - a
            if m > 0:
                memcpy(hp + nip[k], hs + a, m * sizeof(uint64_t))
                if cp != NULL:
                    memcpy(cp + nip[k], cs + a, m * sizeof(uint32_t))
    return new_ip


# ---------------------------------------------------------------- ratios and fingerprints

def pair_ratios(Collection a, Collection b, int n_threads):
    """min over fields of Dice(a[i], b[i]) for aligned rows."""
    cdef int64_t n = a.c.n, i
    if a.c.n != b.c.n or a.c.F != b.c.F:
        raise ValueError(f"pair_ratios: {a.c.n} rows of {a.c.F} field(s) against "
                         f"{b.c.n} rows of {b.c.F}")
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
    check_flat(ip, h.shape[0], n_fields, n, "row_fingerprints")
    if multiset and cnt.shape[0] != h.shape[0]:
        raise ValueError("row_fingerprints: counts and hashes differ in length")
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


cdef enum:
    # rows up to this long get their suffix masses by counting, not sorting
    SHORT_ROW = 32
    # size groups whose suffix masses are all at most this are ordered by a counting sort
    SMALL_SUFFIX = 64
    # rows ahead whose tokens a walk in size order prefetches
    ROW_AHEAD = 8
    # row chunks per thread of a threaded scatter
    SCATTER_CHUNKS = 4
    # stored tokens below which the scatter runs serially
    SCATTER_MIN_TOKENS = 65536
    # hashes below which vocab_table numbers them on one thread
    PARALLEL_VOCAB_TOKENS = 65536
    # distinct hashes a vocabulary numbers: its ids are int32
    VOCAB_MAX_IDS = 2147483647


cdef inline void row_suffixes(const int32_t* inv, const int64_t* rank, const uint32_t* cnt,
                              int64_t L, int32_t* suf, uint64_t* buf) noexcept nogil:
    """Suffix mass of every token of one row, capped at 2**31 - 1.

    A token's suffix mass is the mass (count, or 1 for sets) of the row's
    tokens ranked at or after it.  The ranks of one row are distinct (its
    tokens are) and below 2**31 (build_postings checks), the row shorter
    than 2**32.  Short rows count, in L * L steps on 32-bit ranks (SIMD
    compares on any x86-64); longer ones sort (rank, position) keys
    (``buf``: room for ``L`` keys).  ``cnt`` is NULL for sets.
    """
    cdef int32_t rk[SHORT_ROW]
    cdef int64_t m, j, acc
    cdef int32_t x
    if L <= SHORT_ROW:
        for m in range(L):
            rk[m] = <int32_t>rank[inv[m]]
        for m in range(L):
            acc = 0
            x = rk[m]
            if cnt == NULL:
                for j in range(L):
                    acc += rk[j] >= x
            else:
                for j in range(L):
                    acc += <int64_t>cnt[j] if rk[j] >= x else 0
            suf[m] = <int32_t>(acc if acc < 2147483647 else 2147483647)
        return
    # complemented (rank, position) keys: ascending is rank descending
    for m in range(L):
        buf[m] = ~((<uint64_t>rank[inv[m]] << 32) | <uint64_t>m)
    sort_u64(buf, L)
    acc = 0
    for m in range(L):
        j = <int64_t>(~buf[m] & <uint64_t>0xFFFFFFFFULL)
        acc = acc + (cnt[j] if cnt != NULL else 1)
        suf[j] = <int32_t>(acc if acc < 2147483647 else 2147483647)


ctypedef struct GroupEntry:
    # one posting entry while its size group is reordered
    uint64_t key   # (2**31 - 1 - suffix mass) << 32 | reference: ascending is the scan order
    uint32_t c     # the reference's count of the token (bags)


cdef int cmp_group_entries(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const GroupEntry*>a).key, y = (<const GroupEntry*>b).key
    return (x > y) - (x < y)


cdef inline int scatter_row(const int32_t* inv, const uint32_t* cnt, int64_t L, int32_t r,
                            int32_t z, const int64_t* rank, const int64_t* ptr, int64_t V,
                            int64_t* fill, Entry* ent, int32_t* psuf,
                            uint32_t* pcnt, int64_t room, uint64_t* rbuf,
                            int32_t* sbuf) noexcept nogil:
    """Append the entries of reference ``r`` (its ``L`` tokens) to their postings.

    ``fill[v]`` is the next free slot of posting ``v``.  Returns 0, 1 for a
    vocabulary id out of range or a posting overfull (the tables disagree),
    2 for a row longer than SHORT_ROW without buffers of ``room`` entries.
    """
    cdef int32_t sloc[SHORT_ROW]
    cdef int32_t* sf = sloc
    cdef int64_t m, v, u
    for m in range(L):
        if inv[m] < 0 or inv[m] >= V:
            return 1
    if L > SHORT_ROW:
        if rbuf == NULL or sbuf == NULL or L > room:
            return 2
        sf = sbuf
    row_suffixes(inv, rank, cnt, L, sf, rbuf)
    for m in range(L):
        v = inv[m]
        u = fill[v]
        if u >= ptr[v + 1]:
            return 1
        fill[v] = u + 1
        ent[u].ref = r
        ent[u].size = z
        psuf[u] = sf[m]
        if pcnt != NULL:
            pcnt[u] = cnt[m]
    return 0


cdef inline void sort_size_group(Entry* ent, int32_t* psuf, uint32_t* pcnt, int64_t a,
                                 int64_t b, int32_t top, GroupEntry* buf) noexcept nogil:
    """Order entries a..b (one size, references ascending) by suffix mass descending.

    Ties keep the reference order.  A stable counting sort when the largest
    suffix mass, ``top``, is at most SMALL_SUFFIX, else a sort of packed keys;
    ``buf`` has room for ``b - a`` entries.
    """
    cdef int64_t bucket[SMALL_SUFFIX + 1]
    cdef int64_t i, u, acc, w, n = b - a
    cdef int32_t e
    for i in range(n):
        buf[i].key = ((<uint64_t>(0x7FFFFFFF - psuf[a + i])) << 32) | <uint64_t>(<uint32_t>ent[a + i].ref)
        buf[i].c = pcnt[a + i] if pcnt != NULL else 0
    if top <= SMALL_SUFFIX:
        for i in range(top + 1):
            bucket[i] = 0
        for i in range(a, b):
            bucket[psuf[i]] += 1
        acc = a
        for i in range(top, -1, -1):
            w = bucket[i]
            bucket[i] = acc
            acc += w
        for i in range(n):
            e = <int32_t>(0x7FFFFFFF - <int64_t>(buf[i].key >> 32))
            u = bucket[e]
            bucket[e] = u + 1
            psuf[u] = e
            ent[u].ref = <int32_t>(buf[i].key & <uint64_t>0xFFFFFFFFULL)
            if pcnt != NULL:
                pcnt[u] = buf[i].c
        return
    qsort(buf, n, sizeof(GroupEntry), cmp_group_entries)
    for i in range(n):
        psuf[a + i] = <int32_t>(0x7FFFFFFF - <int64_t>(buf[i].key >> 32))
        ent[a + i].ref = <int32_t>(buf[i].key & <uint64_t>0xFFFFFFFFULL)
        if pcnt != NULL:
            pcnt[a + i] = buf[i].c


def build_postings(Collection refs, const int32_t[::1] inverse, const int64_t[::1] rank,
                   const int64_t[::1] ptr, int64_t max_row, int n_threads):
    """Fill the postings of every field in the scan order.

    ``inverse`` maps every stored token of ``refs`` to its vocabulary id (the
    fields' vocabularies numbered one after the other), ``rank`` gives each
    id its place in its field's scan order and ``ptr`` (V + 1) the posting
    boundaries; ``max_row`` is the longest row.  Each posting is ordered by
    (size ascending, suffix mass descending, reference), where the suffix mass
    is the reference's mass from the entry's token on in rank order (token
    included).  Returns ``(entries, psuf, pcnt, maxe)``: the Entry records
    (ENTRY_DTYPE: reference id and size filled, signatures left for
    ReferenceIndex), suffix masses and counts (bags only; empty for sets) of
    every entry, sizes and masses capped at 2**31 - 1, and every posting's
    largest suffix mass.  The result does not depend on ``n_threads``.
    """
    cdef const Coll* C = &refs.c
    cdef int F = C.F, f
    cdef int64_t n = C.n, N = <int64_t>F * n, V = ptr.shape[0] - 1
    cdef int64_t nnz = inverse.shape[0], i, k, r, t, v, a, b, lim = 2147483647
    if nnz != (C.ip[F * (n + 1) - 1] if F else 0) or rank.shape[0] != V or (
            V and ptr[V] != nnz):
        raise ValueError("overlap index: token tables of different lengths")
    # the suffix masses compare ranks as 32-bit integers (row_suffixes)
    if V > lim:
        raise ValueError(f"overlap index: at most {lim} distinct tokens are supported, got {V}")
    if max_row < 0 or max_row > lim:
        raise ValueError(f"overlap index: rows of at most {lim} tokens are supported")
    for v in range(V):
        if rank[v] < 0 or rank[v] >= V:
            raise ValueError("overlap index: a token's rank is out of range")
    cdef bint bags = C.c != NULL
    cdef const int64_t* ip = C.ip
    cdef const uint32_t* cnt = C.c
    cdef const int64_t* sz = C.sz
    cdef const int32_t* inv = &inverse[0] if nnz else NULL
    cdef const int64_t* rk = &rank[0] if V else NULL
    entries = np.empty(nnz, dtype=ENTRY_DTYPE)
    psuf = np.empty(nnz, dtype=np.int32)
    pcnt = np.empty(nnz if bags else 0, dtype=np.uint32)
    cdef int32_t[::1] ps = psuf
    cdef uint32_t[::1] pc = pcnt
    cdef Entry* ent_p = <Entry*>cnp.PyArray_DATA(entries) if nnz else NULL
    cdef int32_t* suf_p = &ps[0] if nnz else NULL
    cdef uint32_t* cnt_p = &pc[0] if bags and nnz else NULL
    # rows of each field in size order: the stable counting sort by token
    # below leaves every posting sorted by (size, reference)
    by_size = np.empty(N, dtype=np.int64)
    cdef int64_t[::1] bs = by_size
    sizes = np.asarray(<const int64_t[:N]>sz) if N else np.zeros(0, dtype=np.int64)
    for f in range(F):
        if not counting_sort_sizes(sz + f * n, n, &bs[f * n] if n else NULL):
            by_size[f * n:(f + 1) * n] = np.argsort(sizes[f * n:(f + 1) * n], kind="stable")
    cdef const int64_t[::1] order = by_size
    # several chunks per thread, so a thread that loses its core holds up little
    # (chunked by stored tokens, not rows: 13k dialogues of 60 tokens are
    # worth splitting; each chunk costs V offsets, so not when V is large)
    cdef int n_chunks = (SCATTER_CHUNKS * n_threads
                         if n_threads > 1 and nnz >= SCATTER_MIN_TOKENS
                         and SCATTER_CHUNKS * n_threads * V <= 4 * nnz else 1), c, st
    # chunk c scatters the rows order[cut[c]:cut[c + 1]] from fill[c * V + v] on
    cuts = np.zeros(n_chunks + 1, dtype=np.int64)
    cdef int64_t[::1] cut = cuts
    fill = np.empty(n_chunks * V, dtype=np.int64)
    cdef int64_t[::1] fv = fill
    cdef int64_t* fp = &fv[0] if V else NULL
    cdef int64_t acc, w, seen
    cdef uint64_t* rbuf
    cdef int32_t* sbuf
    cdef int bad = 0, failed = 0
    with nogil:
        # a stable counting sort by token, the suffix masses computed row by
        # row on the way: serial with one chunk, else chunks of about equal
        # entries, each from its own offsets (the same result for any number
        # of chunks)
        if n_chunks == 1:
            cut[1] = N
            for v in range(V):
                fp[v] = ptr[v]
        else:
            seen = 0
            c = 1
            for k in range(N):
                f = <int>(k // n)
                i = order[k] + f * n
                seen += ip[i + f + 1] - ip[i + f]
                while c < n_chunks and seen * n_chunks >= nnz * c:
                    cut[c] = k + 1
                    c += 1
            while c <= n_chunks:
                cut[c] = N
                c += 1
            for i in range(n_chunks * V):
                fp[i] = 0
            for c in prange(n_chunks, num_threads=n_threads, schedule="dynamic", chunksize=1):
                for k in range(cut[c], cut[c + 1]):
                    # rows in size order are far apart: prefetch the bounds of
                    # the row 2 * ROW_AHEAD on, the tokens of the row ROW_AHEAD on
                    if k + 2 * ROW_AHEAD < cut[c + 1]:
                        f = <int>((k + 2 * ROW_AHEAD) // n)
                        overlap_prefetch(&ip[order[k + 2 * ROW_AHEAD] + f * (n + 1)])
                    if k + ROW_AHEAD < cut[c + 1]:
                        f = <int>((k + ROW_AHEAD) // n)
                        overlap_prefetch(inv + ip[order[k + ROW_AHEAD] + f * (n + 1)])
                    f = <int>(k // n)
                    i = order[k] + f * n
                    for t in range(ip[i + f], ip[i + f + 1]):
                        if inv[t] >= 0 and inv[t] < V:
                            fp[c * V + inv[t]] += 1
            for v in prange(V, num_threads=n_threads, schedule="dynamic", chunksize=4096):
                chunk_first_slots(fp, n_chunks, V, v, ptr[v])
        with parallel(num_threads=n_threads):
            rbuf = NULL
            sbuf = NULL
            if max_row > SHORT_ROW:
                rbuf = <uint64_t*>malloc(sizeof(uint64_t) * max_row)
                sbuf = <int32_t*>malloc(sizeof(int32_t) * max_row)
            try:
                for c in prange(n_chunks, schedule="dynamic", chunksize=1):
                    for k in range(cut[c], cut[c + 1]):
                        # as above, and the row's size and counts
                        if k + 2 * ROW_AHEAD < cut[c + 1]:
                            f = <int>((k + 2 * ROW_AHEAD) // n)
                            i = order[k + 2 * ROW_AHEAD] + f * n
                            overlap_prefetch(&ip[i + f])
                            overlap_prefetch(&sz[i])
                        if k + ROW_AHEAD < cut[c + 1]:
                            f = <int>((k + ROW_AHEAD) // n)
                            a = ip[order[k + ROW_AHEAD] + f * (n + 1)]
                            overlap_prefetch(inv + a)
                            overlap_prefetch(inv + a + 8)
                            if cnt != NULL:
                                overlap_prefetch(cnt + a)
                        f = <int>(k // n)
                        r = order[k]
                        i = r + f * n
                        a = ip[i + f]
                        st = scatter_row(inv + a, cnt + a if cnt != NULL else NULL,
                                         ip[i + f + 1] - a, <int32_t>r,
                                         <int32_t>(sz[i] if sz[i] < lim else lim), rk, &ptr[0],
                                         V, fp + c * V, ent_p, suf_p, cnt_p, max_row,
                                         rbuf, sbuf)
                        if st == 1:
                            bad += 1
                            break
                        if st == 2:
                            failed += 1
                            break
            finally:
                free(rbuf)
                free(sbuf)
    if bad:
        raise ValueError("overlap index: token tables that disagree")
    if failed:
        raise MemoryError("overlap index: out of memory")
    del fill, order, by_size
    maxe = sort_postings(ptr, ent_p, suf_p, cnt_p, n_threads)
    return entries, psuf, pcnt, maxe


cdef bint counting_sort_sizes(const int64_t* sz, int64_t n, int64_t* out) noexcept:
    """out = the stable argsort of sz[0:n] by a counting sort; False (out untouched)
    when a size is negative or the sizes span more than 4 * n + 1024 values."""
    cdef int64_t i, top = 0, acc, w
    cdef int64_t* bucket
    for i in range(n):
        if sz[i] < 0:
            return False
        if sz[i] > top:
            top = sz[i]
    if top > 4 * n + 1024:
        return False
    bucket = <int64_t*>calloc(top + 1, sizeof(int64_t))
    if bucket == NULL:
        return False
    with nogil:
        for i in range(n):
            bucket[sz[i]] += 1
        acc = 0
        for i in range(top + 1):
            w = bucket[i]
            bucket[i] = acc
            acc += w
        for i in range(n):
            out[bucket[sz[i]]] = i
            bucket[sz[i]] += 1
    free(bucket)
    return True


cdef sort_postings(const int64_t[::1] ptr, Entry* ent, int32_t* psuf, uint32_t* pcnt,
                   int n_threads):
    """Order every posting by (size ascending, suffix mass descending, reference).

    Postings arrive sorted by (size, reference): each size group not yet in
    order is reordered by suffix mass (see sort_size_group).  The search reads
    a size range with a binary search and, inside each size, stops at the
    first entry the positional filter rejects (see scan_posting).  Returns
    every posting's largest suffix mass.
    """
    cdef int64_t V = ptr.shape[0] - 1, v, a, b, end, longest = 1
    maxe = np.empty(V, dtype=np.int32)
    cdef int32_t[::1] mx = maxe
    cdef GroupEntry* buf
    cdef int32_t z, top, best
    cdef bint in_order
    cdef int failed = 0
    for v in range(V):
        if ptr[v + 1] - ptr[v] > longest:
            longest = ptr[v + 1] - ptr[v]
    cdef int phase
    with nogil, parallel(num_threads=n_threads):
        # room for the longest posting (its pages are touched only as far as
        # the longest size group that needs reordering)
        buf = <GroupEntry*>malloc(longest * sizeof(GroupEntry))
        try:
            # two passes: the long postings one at a time first, then the rest
            # 256 at a time.  Frequent tokens get low ids (first seen), so in
            # one pass of 256-token chunks the first chunk held most of the
            # work and one thread sorted it alone.
            for phase in range(2):
                for v in prange(V, schedule="dynamic", chunksize=1 if phase == 0 else 256):
                    if (ptr[v + 1] - ptr[v] >= SORT_LONG_POSTING) != (phase == 0):
                        continue
                    a = ptr[v]
                    end = ptr[v + 1]
                    best = 0
                    while a < end:
                        z = ent[a].size
                        top = psuf[a]
                        in_order = True
                        b = a + 1
                        while b < end and ent[b].size == z:
                            if psuf[b] > psuf[b - 1]:
                                in_order = False
                            if psuf[b] > top:
                                top = psuf[b]
                            b = b + 1
                        if top > best:
                            best = top
                        if not in_order:
                            if buf == NULL:
                                failed += 1
                                break
                            sort_size_group(ent, psuf, pcnt, a, b, top, buf)
                        a = b
                    mx[v] = best
        finally:
            free(buf)
    if failed:
        raise MemoryError("overlap index: out of memory")
    return maxe


def size_groups(const int64_t[::1] pptr, const int32_t[:] psize, int64_t min_length,
                int n_threads=1):
    """A directory of the size groups of every posting longer than ``min_length``.

    Postings are sorted by reference size (see sort_postings).  Returns
    ``(gptr, gsize, gstart)``: posting ``v``'s groups are ``gptr[v]:gptr[v+1]``
    (none for short postings), group ``g`` holds the entries of size
    ``gsize[g]`` from ``gstart[g]`` on.  ``psize`` may be strided (the
    ``size`` field of the Entry records).  Postings are counted, then
    filled, on up to ``n_threads`` threads (the same result for any number).
    """
    cdef int64_t V = pptr.shape[0] - 1, v, p, g, acc
    if V < 0 or pptr[0] < 0 or pptr[V] > psize.shape[0]:
        raise ValueError("overlap index: posting boundaries beyond the entries")
    for v in range(V):
        if pptr[v + 1] < pptr[v]:
            raise ValueError("overlap index: posting boundaries out of order")
    gptr = np.zeros(V + 1, dtype=np.int64)
    cdef int64_t[::1] gp = gptr
    with nogil:
        # gp[v + 1]: the number of groups of posting v, then summed
        for v in prange(V, num_threads=n_threads, schedule="dynamic", chunksize=256):
            if pptr[v + 1] - pptr[v] > min_length:
                g = 1
                for p in range(pptr[v] + 1, pptr[v + 1]):
                    g = g + (psize[p] != psize[p - 1])
                gp[v + 1] = g
        acc = 0
        for v in range(V):
            acc = acc + gp[v + 1]
            gp[v + 1] = acc
    gsize = np.empty(acc, dtype=np.int32)
    gstart = np.empty(acc, dtype=np.int64)
    cdef int32_t[::1] gz = gsize
    cdef int64_t[::1] gs = gstart
    with nogil:
        for v in prange(V, num_threads=n_threads, schedule="dynamic", chunksize=256):
            g = gp[v]
            if gp[v + 1] == g:
                continue
            for p in range(pptr[v], pptr[v + 1]):
                if p == pptr[v] or psize[p] != psize[p - 1]:
                    gz[g] = psize[p]
                    gs[g] = p
                    g = g + 1
    return gptr, gsize, gstart


ctypedef struct Vocab:
    # a growing vocabulary: ids in first-seen order, an open-addressing table of
    # them (``cap`` slots, a power of two, at most half full) and their counts
    VocabSlot* table
    int64_t cap
    uint64_t* keys      # keys[id]
    int64_t* counts     # counts[id]: occurrences of the key
    int64_t kcap        # room of keys and counts
    int64_t nv          # ids given
    bint too_many       # a key was refused: ids are int32 (at most VOCAB_MAX_IDS)


cdef int vocab_init(Vocab* V) noexcept nogil:
    """An empty vocabulary of 16 slots; 1 when out of memory (free it with vocab_free)."""
    cdef int64_t j
    V.cap = 16
    V.kcap = 16
    V.nv = 0
    V.too_many = False
    V.table = <VocabSlot*>malloc(V.cap * sizeof(VocabSlot))
    V.keys = <uint64_t*>malloc(V.kcap * sizeof(uint64_t))
    V.counts = <int64_t*>malloc(V.kcap * sizeof(int64_t))
    if V.table == NULL or V.keys == NULL or V.counts == NULL:
        return 1
    for j in range(V.cap):
        V.table[j].vid = -1
    return 0


cdef void vocab_free(Vocab* V) noexcept nogil:
    free(V.table)
    free(V.keys)
    free(V.counts)
    V.table = NULL
    V.keys = NULL
    V.counts = NULL


cdef int vocab_grow(Vocab* V) noexcept nogil:
    """Double the table and re-insert ids 0..nv-1 in id order; 1 when out of memory.

    A table filled in id order holds every key where inserting them one by
    one into a table of its final size would have put them, so the layout
    depends only on the keys' order.
    """
    cdef int64_t c = 2 * V.cap, j, slot
    cdef VocabSlot* t = <VocabSlot*>malloc(c * sizeof(VocabSlot))
    if t == NULL:
        return 1
    for j in range(c):
        t[j].vid = -1
    for j in range(V.nv):
        slot = <int64_t>(fmix64(V.keys[j]) & <uint64_t>(c - 1))
        while t[slot].vid >= 0:
            slot = (slot + 1) & (c - 1)
        t[slot].key = V.keys[j]
        t[slot].vid = j
    free(V.table)
    V.table = t
    V.cap = c
    return 0


cdef int64_t vocab_insert(Vocab* V, int64_t slot, uint64_t key, int64_t count) noexcept nogil:
    """Give ``key`` (absent, ``slot`` its empty probe slot) the next id; -1 when out
    of memory or of ids (then ``V.too_many``)."""
    cdef uint64_t* kv
    cdef int64_t* cv
    cdef int64_t vid = V.nv
    if vid >= VOCAB_MAX_IDS:
        V.too_many = True
        return -1
    if vid == V.kcap:
        kv = <uint64_t*>realloc(V.keys, 2 * V.kcap * sizeof(uint64_t))
        if kv == NULL:
            return -1
        V.keys = kv
        cv = <int64_t*>realloc(V.counts, 2 * V.kcap * sizeof(int64_t))
        if cv == NULL:
            return -1
        V.counts = cv
        V.kcap = 2 * V.kcap
    V.table[slot].key = key
    V.table[slot].vid = vid
    V.keys[vid] = key
    V.counts[vid] = count
    V.nv = vid + 1
    if 2 * V.nv > V.cap and vocab_grow(V):
        return -1
    return vid


cdef int64_t vocab_add(Vocab* V, uint64_t key, int64_t count) noexcept nogil:
    """The id of ``key`` (a new one when first seen), its count raised by ``count``;
    -1 when out of memory."""
    cdef int64_t mask = V.cap - 1, vid
    cdef int64_t slot = <int64_t>(fmix64(key) & <uint64_t>mask)
    while True:
        vid = V.table[slot].vid
        if vid < 0:
            return vocab_insert(V, slot, key, count)
        if V.table[slot].key == key:
            V.counts[vid] += count
            return vid
        slot = (slot + 1) & mask


cdef int vocab_fill(Vocab* V, const uint64_t* hashes, int64_t nnz, int32_t* inv) noexcept nogil:
    """Number ``hashes`` in first-seen order into ``V``; 1 when out of memory.

    ``inv[i]`` gets the id of ``hashes[i]``.  The table is doubled whenever
    it would be more than half full, so it stays small (and in cache) while
    most probes find a key already seen.  (vocab_add, with the table's
    pointers kept in locals between insertions: calling vocab_add for every
    hash took 3.7 ms against 2.5 on W's 845k train-context tokens.)
    """
    cdef int64_t i, slot, vid, mask = V.cap - 1
    cdef uint64_t key
    cdef VocabSlot* t = V.table
    cdef int64_t* cnt = V.counts
    for i in range(nnz):
        key = hashes[i]
        slot = <int64_t>(fmix64(key) & <uint64_t>mask)
        while True:
            vid = t[slot].vid
            if vid < 0:
                vid = vocab_insert(V, slot, key, 1)
                if vid < 0:
                    return 1
                t = V.table
                cnt = V.counts
                mask = V.cap - 1
                break
            if t[slot].key == key:
                cnt[vid] += 1
                break
            slot = (slot + 1) & mask
        inv[i] = <int32_t>vid
    return 0


def vocab_table(const uint64_t[::1] hashes, out=None, int n_threads=1):
    """Distinct hashes in first-seen order, their counts, and a table of them.

    Returns ``(keys, inverse, tkeys, tids, counts)``: ``keys[v]`` is vocabulary
    id ``v``'s hash and ``counts[v]`` how often it occurs, ``inverse`` the id of
    every input hash (int32: at most VOCAB_MAX_IDS distinct hashes, else
    ValueError; written into ``out``, an int32 array as long as ``hashes``,
    when given); the table (``tkeys[s]``, ``tids[s]``; a power of
    two of at least 16 slots, the smallest at most half full; -1 marks an
    empty slot) maps a hash to its id by linear probing.

    With ``n_threads`` > 1 and at least PARALLEL_VOCAB_TOKENS hashes, each
    thread numbers one contiguous chunk, then the chunks' vocabularies are
    merged in chunk order and their ids rewritten: the same ids, table and
    counts as one thread.
    """
    cdef int64_t nnz = hashes.shape[0], j, i, vid
    inverse = np.empty(nnz, dtype=np.int32) if out is None else out
    cdef int32_t[::1] inv = inverse
    if inv.shape[0] != nnz:
        raise ValueError("vocab_table: out must be as long as hashes")
    if n_threads < 1:
        raise ValueError(f"vocab_table: n_threads must be at least 1, got {n_threads}")
    cdef int P = n_threads if nnz >= PARALLEL_VOCAB_TOKENS else 1, c
    cdef int64_t* cut = <int64_t*>calloc(P + 1, sizeof(int64_t))
    cdef Vocab* vs = <Vocab*>calloc(P, sizeof(Vocab))
    cdef int64_t** remap = <int64_t**>calloc(P, sizeof(int64_t*))
    cdef int failed = cut == NULL or vs == NULL or remap == NULL
    cdef const uint64_t* hp = &hashes[0] if nnz else NULL
    cdef int32_t* ip = &inv[0] if nnz else NULL
    cdef Vocab* G
    cdef uint64_t[::1] kout
    cdef uint64_t[::1] tk
    cdef int64_t[::1] ti
    cdef int64_t[::1] co
    try:
        if not failed:
            for c in range(P + 1):
                cut[c] = nnz * c // P
            with nogil:
                # one chunk a thread: more would add their distinct keys to the merge
                for c in prange(P, num_threads=P, schedule="dynamic", chunksize=1):
                    if vocab_init(&vs[c]) or vocab_fill(&vs[c], hp + cut[c],
                                                        cut[c + 1] - cut[c], ip + cut[c]):
                        failed += 1
                # chunk 0's vocabulary becomes the whole one: the keys a later
                # chunk sees first get the next ids, in that chunk's order
                G = &vs[0]
                for c in range(1, P):
                    if failed:
                        break
                    remap[c] = <int64_t*>malloc((vs[c].nv if vs[c].nv else 1) * sizeof(int64_t))
                    if remap[c] == NULL:
                        failed = 1
                        break
                    for j in range(vs[c].nv):
                        vid = vocab_add(G, vs[c].keys[j], vs[c].counts[j])
                        if vid < 0:
                            failed = 1
                            break
                        remap[c][j] = vid
                if not failed and P > 1:
                    with parallel(num_threads=P):
                        for c in range(1, P):
                            for i in prange(cut[c], cut[c + 1], schedule="dynamic",
                                            chunksize=16384):
                                ip[i] = <int32_t>remap[c][ip[i]]
        if failed:
            for c in range(P):
                if vs[c].too_many:
                    raise ValueError(f"overlap index: at most {VOCAB_MAX_IDS} distinct tokens "
                                     "per field are supported")
            raise MemoryError("overlap index: out of memory for the vocabulary")
        G = &vs[0]
        keys = np.empty(G.nv, dtype=np.uint64)
        counts = np.empty(G.nv, dtype=np.int64)
        tkeys = np.empty(G.cap, dtype=np.uint64)
        tids = np.empty(G.cap, dtype=np.int64)
        kout = keys
        co = counts
        tk = tkeys
        ti = tids
        with nogil:
            for j in range(G.nv):
                kout[j] = G.keys[j]
                co[j] = G.counts[j]
            for j in range(G.cap):
                tk[j] = G.table[j].key if G.table[j].vid >= 0 else 0
                ti[j] = G.table[j].vid
        return keys, inverse, tkeys, tids, counts
    finally:
        if vs != NULL:
            for c in range(P):
                vocab_free(&vs[c])
        if remap != NULL:
            for c in range(P):
                free(remap[c])
        free(vs)
        free(remap)
        free(cut)


def count_key_order(const int64_t[::1] counts, const uint64_t[::1] keys):
    """``np.lexsort((keys, counts))`` as int64: by count, ties by key, then by position.

    The vocabulary's scan order (rarest first, ties by hash).  An LSD radix
    sort of the positions by key, a byte a pass (a pass whose byte is the same
    in every key is skipped), then a stable sort by count (counting_sort_sizes,
    or a stable argsort when its range is exceeded).  ValueError
    for a negative count or arrays of different lengths.
    """
    cdef int64_t n = keys.shape[0], i, acc, w
    cdef int b
    cdef uint64_t d
    if counts.shape[0] != n:
        raise ValueError(f"count_key_order: {counts.shape[0]} counts for {n} keys")
    for i in range(n):
        if counts[i] < 0:
            raise ValueError("count_key_order: a negative count")
    order = np.arange(n, dtype=np.int64)
    if n < 2:
        return order
    spare = np.empty(n, dtype=np.int64)
    kcur = np.array(keys, dtype=np.uint64)
    kspare = np.empty(n, dtype=np.uint64)
    cdef int64_t[::1] o = order
    cdef int64_t[::1] o2 = spare
    cdef uint64_t[::1] k = kcur
    cdef uint64_t[::1] k2 = kspare
    cdef int64_t[::1] tmp_o
    cdef uint64_t[::1] tmp_k
    cdef int64_t hist[256]
    cdef bint whole
    for b in range(8):
        for i in range(256):
            hist[i] = 0
        with nogil:
            for i in range(n):
                hist[(k[i] >> (8 * b)) & 255] += 1
        whole = False
        for i in range(256):
            if hist[i] == n:
                whole = True
        if whole:
            continue
        acc = 0
        for i in range(256):
            w = hist[i]
            hist[i] = acc
            acc += w
        with nogil:
            for i in range(n):
                d = (k[i] >> (8 * b)) & 255
                o2[hist[d]] = o[i]
                k2[hist[d]] = k[i]
                hist[d] += 1
        tmp_o = o
        o = o2
        o2 = tmp_o
        tmp_k = k
        k = k2
        k2 = tmp_k
        order, spare = spare, order   # the arrays behind o and o2
    ranked = np.take(np.asarray(counts), order)
    cdef int64_t[::1] rk = ranked
    cdef int64_t[::1] pv = spare
    if counting_sort_sizes(&rk[0], n, &pv[0]):
        return order[spare]
    return order[np.argsort(ranked, kind="stable")]


def reference_records(const int64_t[::1] ip, const uint64_t[::1] h, const int64_t[::1] sz,
                      int n_fields, int64_t n, int n_threads):
    """Per reference and field: (size, row start, row end, token signature words).

    Reference-major, so everything a verification needs about one reference
    (but its tokens) sits in one or two cache lines.
    """
    check_flat(ip, h.shape[0], n_fields, n, "reference_records")
    if sz.shape[0] != <int64_t>n_fields * n:
        raise ValueError(f"reference_records: {sz.shape[0]} sizes for {n_fields} field(s) "
                         f"of {n} rows")
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
