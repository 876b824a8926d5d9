# cython: freethreading_compatible=True
"""The postings kernel: pruned inverted-index top-k search and threshold join.

Everything here takes flat arrays prepared by ``overlap._index`` and converts
no Python objects; each entry point still checks the shapes and bounds its
loops rely on (check_flat, check_call) before it runs.  One query is handled by one
thread from start to end and writes only its own output slots, so results do not
depend on the thread count.

Search outline: search_one runs these phases for one query, each a
``cdef inline ... noexcept nogil`` function (below; the last two, and the
early verifications, in ``_candidates.pxd``; the posting cursor they walk
with in ``_walk.pxd``):

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
from libc.stdint cimport uint64_t, int64_t, uint32_t, int32_t, uint16_t, uint8_t
from libc.stdlib cimport calloc, free

from overlap._kernels cimport _limits
from overlap._kernels._bounds cimport (
    DICE, AnyMeasure, DiceOnly, MeasureArg, measure_of,
    N_MEASURES, may_reach, one_means_identical, peak_rest_score, prune_cut, rest_score, size_window,
    window_differing_bits,
)
from overlap._kernels._candidates cimport (
    bucket_candidates, mark_done, verify_candidates, verify_now, verify_top_partials,
)
from overlap._kernels._collection cimport Collection
from overlap._kernels._collection import stable_argsort_u64
from overlap._kernels._cpu cimport current_level
from overlap._kernels._hash cimport fmix64
from overlap._kernels._limits cimport QUERY_TOKEN_BITS, COUNT_BITS
from overlap._kernels._postings cimport sign_entries
from overlap._kernels._postings import ENTRY_DTYPE as _ENTRY_DTYPE
from overlap._kernels._postings import group_records, size_groups, token_info
from overlap._kernels._query cimport Query, Task, running_cut
from overlap._kernels._runner cimport (
    Hooks, PairBuf, Scratch, ScratchPool, check_call, current_threshold, free_pairs,
    gather_pairs, pool_for, push_pair,
    run_queries, scratch_free, scratch_new,
)
from overlap._kernels._scoring cimport bounded_score, exact_score, rows_identical, signatures_reach
from overlap._kernels._setops cimport topk_insert
from overlap._kernels._signatures cimport (
    row_sig64, row_signature, sig_scan_fn, sig_scan_for,
)
from overlap._kernels._sort cimport lower_bound_u64, sort_u64
from overlap._kernels._types cimport (
    COUNT_MASK, FLAG_CANDIDATE, FLAG_DONE, MODE_JOIN, MODE_TOPK, REC, SIGW, suffix_bound,
    Coll, Entry, Group, Index, TokenInfo, VocabSlot, overlap_prefetch, row_id,
)
from overlap._kernels._vocab cimport vocab_lookup
from overlap._kernels._vocab import check_vocabulary
from overlap._kernels._walk cimport (
    SigFilter, Walk, sig_admits, walk_next, walk_open_group,
    walk_start, window_entries, window_range,
)

cnp.import_array()

cdef enum:
    # entries whose reference state a scan asks for before it counts them
    STATE_BATCH = 16

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

    def __init__(self, Collection refs, vocab, voff, const int64_t[::1] pptr, entries,
                 const uint16_t[::1] psuf, const uint32_t[::1] pcnt,
                 const int64_t[::1] rank, const int32_t[::1] maxe, const int64_t[::1] rrec,
                 int n_threads=1, bint signatures=True):
        """``vocab``/``voff``: every field's vocabulary table
        (``_vocab.compact_vocabulary``), kept as the query side's lookup.

        ``signatures=False`` keeps no signature column (8 bytes an entry
        less): the scans then count every entry the positional filter passes,
        with the same results (the signature test only skips entries that
        cannot reach the running threshold)."""
        self.refs = refs
        self._lock = threading.Lock()
        self._ref_column = None
        self._fp_order = None
        self.x.entry_refs = NULL
        self.x.fps = NULL
        self.x.fpi = NULL
        self.x.nfp = 0
        # the entries' signatures are made here (sign_entries), which also
        # checks the dtype and every reference id (check_entry_refs without them)
        if signatures:
            psig = sign_entries(refs, entries, n_threads)
        else:
            check_entry_refs(refs, entries)
            psig = np.zeros(0, dtype=np.uint64)
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
        self.x.psig = &sv[0] if sv.shape[0] else NULL
        self.x.psuf = &psuf[0] if psuf.shape[0] else NULL
        self.x.has_sig = sv.shape[0] > 0
        self.x.sig_bits = 64 // (refs.c.F if refs.c.F > 0 else 1)
        self.x.rrec = &rrec[0] if rrec.shape[0] else NULL
        self.x.pcnt = (&pcnt[0] if pcnt.shape[0] else NULL) if refs.c.c != NULL else NULL
        gptr, gsize, gstart = size_groups(pptr, entries["size"], GROUPED_POSTING, n_threads)
        grp = group_records(gsize, gstart, psuf)
        self.groups = (gptr, grp["size"], grp["start"], grp["top"])
        self.x.grp = <const Group*>cnp.PyArray_DATA(grp) if grp.shape[0] else NULL
        cdef const uint64_t[::1] vv = vocab
        cdef const int64_t[::1] vo = voff
        if vo.shape[0] != refs.c.F + 1 or vv.shape[0] != 2 * vo[refs.c.F]:
            raise ValueError("overlap index: vocabulary tables of the wrong shape")
        check_vocabulary(vocab, voff, pptr.shape[0] - 1, "overlap index")
        tinfo = token_info(pptr, rank, maxe, gptr, gsize)
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
        if self.x.entry_refs != NULL or self.entries.shape[0] == 0:
            return
        with self._lock:
            if self._ref_column is None:
                column = np.ascontiguousarray(self.entries["ref"])
                col = column
                self._ref_column = column
                self.x.entry_refs = &col[0]

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
        """The row signature (row_sig64) of every posting entry's reference
        (empty for an index made with ``signatures=False``)."""
        return self._psig.copy()

    def top_k(self, Collection queries, int64_t start, int64_t stop, int k, double min_score,
              bint exclude_self, int64_t max_row, int64_t max_mass, int n_threads,
              double[:, ::1] out_score, int64_t[:, ::1] out_index, ScratchPool pool=None,
              int measure=0):
        """Top-k search for queries[start:stop] into out_*[start:stop] (scratch from pool);
        ``measure`` is a ``_bounds.Measure`` (0: dice)."""
        cdef int pool_size
        check_call(&queries.c, &self.refs.c, start, stop, max_row, max_mass)
        if not 0 <= measure < N_MEASURES:
            raise ValueError(f"overlap search: measure {measure} is not a _bounds.Measure")
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
        cdef int ok = run_postings(&queries.c, &self.refs.c, &self.x, start, stop, MODE_TOPK,
                                  k, min_score, exclude_self, max_row, max_mass, n_threads,
                                  &out_score[0, 0], &out_index[0, 0], NULL, &sv[0, 0],
                                  slots, pool_size, measure)
        self.last_stats = stats.sum(axis=0)
        if ok != 0:
            raise MemoryError("overlap search: out of memory for per-thread scratch")

    def join(self, Collection queries, int64_t start, int64_t stop, double threshold,
             bint upper_only, int64_t max_row, int64_t max_mass, int n_threads,
             ScratchPool pool=None, int measure=0):
        """Pairs (i, j, score) with score >= threshold for queries[start:stop] (unsorted).

        With ``upper_only`` only references j > i are considered (self-join).
        Scratch comes from ``pool`` (made with k = 1) when given.
        """
        cdef int pool_size
        check_call(&queries.c, &self.refs.c, start, stop, max_row, max_mass)
        if not 0 <= measure < N_MEASURES:
            raise ValueError(f"overlap search: measure {measure} is not a _bounds.Measure")
        self._check_renumbered(queries, upper_only)
        cdef Scratch** slots = pool_for(pool, &queries.c, &self.refs.c, max_row, max_mass, 1,
                                        &pool_size)
        cdef int n_buffers = max(1, n_threads)
        cdef PairBuf* bufs = <PairBuf*>calloc(n_buffers, sizeof(PairBuf))
        if bufs == NULL:
            raise MemoryError("overlap join: out of memory")
        cdef int ok
        stats = np.zeros((n_buffers, 3), dtype=np.int64)
        cdef int64_t[:, ::1] sv = stats
        try:
            ok = run_postings(&queries.c, &self.refs.c, &self.x, start, stop, MODE_JOIN,
                             1, threshold, upper_only, max_row, max_mass, n_buffers, NULL, NULL, bufs,
                             &sv[0, 0], slots, pool_size, measure)
            self.last_stats = stats.sum(axis=0)
            if ok != 0:
                raise MemoryError("overlap join: out of memory for the result pairs")
            return gather_pairs(bufs, n_buffers, "overlap join")
        finally:
            free_pairs(bufs, n_buffers)


cdef check_entry_refs(Collection refs, entries):
    """ValueError unless ``entries`` is a contiguous ENTRY_DTYPE array (as
    ``sign_entries`` checks) whose every reference id is a row of ``refs``."""
    cdef const Entry* e
    cdef int64_t i, m, n = refs.c.n, bad = 0
    if (not isinstance(entries, np.ndarray) or entries.dtype != _ENTRY_DTYPE
            or entries.ndim != 1 or not entries.flags.c_contiguous):
        raise ValueError("overlap index: the entries must be a contiguous ENTRY_DTYPE array")
    m = entries.shape[0]
    if m == 0:
        return
    e = <const Entry*>cnp.PyArray_DATA(entries)
    with nogil:
        for i in range(m):
            bad += e[i].ref < 0 or e[i].ref >= n
    if bad:
        raise ValueError("overlap index: a posting names a reference out of range")


# ---------------------------------------------------------------- one query, in phases
#
# search_one runs the phases below in order; each reads the call's constants
# from a Task and the query's running state from a Query (both in _query.pxd).
# Scratch (per thread, _runner.pxd) holds the arrays, allocated and freed in
# one place (scratch_new, scratch_free).

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
                             SigFilter* sf, MeasureArg mk) noexcept nogil:
    """Set up sig_admits for a scan of field ``driver`` (query size q) at ``cut``.

    A bit set on one side only stands for a token of that side missing on the
    other, so |x ∩ y| <= (|x| + |y| - d) / 2, d the differing bits of the
    field (differing_may_reach).  In the scanned field the entry gives |y|;
    in another field no size in its window allows more differing bits than
    the window's top (window_differing_bits).
    """
    cdef int g
    cdef int64_t lo, hi
    sf.active = cut > 0.0 and T.X.has_sig
    sf.scan = T.sig_scan
    if not sf.active:
        return
    sf.qsig = u.sig64
    sf.F = T.Q.F
    sf.b = T.X.sig_bits
    sf.mask = <uint64_t>0xFFFFFFFFFFFFFFFFULL if sf.b >= 64 else ((<uint64_t>1 << sf.b) - 1)
    sf.driver = driver
    sf.q = q
    sf.cut = cut
    for g in range(sf.F):
        if g == driver:
            sf.allowed[g] = sf.b
            continue
        size_window(measure_of(mk), u.sizes[g], cut, &lo, &hi)
        sf.allowed[g] = window_differing_bits(measure_of(mk), u.sizes[g], hi, cut, sf.b)



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
        if T.skip_self and r == u.qi:
            continue
        if (best < 0 or row_id(T.R, r) < best) and rows_identical(T.Q, u.qi, T.R, r):
            best = row_id(T.R, r)
            if T.R.id == NULL:
                break  # fpi is ascending within a run: the first is the lowest
    if best < 0:
        return False
    s.top.ks[0] = 1.0
    s.top.ki[0] = best
    s.top.nk = 1
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
        vid = vocab_lookup(X.vocab, X.voff, f, Q.h[t])
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
                              int64_t q, int64_t zmin, MeasureArg mk) noexcept nogil:
    """Entries the scan of the loaded field would read at the floor threshold, or more.

    Tokens past the query prefix and sizes outside the length window (or
    below ``zmin``, see walk_start) are not read (see count_postings); with a
    floor of 0 this is every posting entry.  Short postings count whole, so 0
    still means the scan reads nothing.
    """
    cdef double floor = T.floor_score, cut = prune_cut(T.floor_score)
    cdef int64_t rest = u.rest, cost = 0, m, t, x, zlo, zhi
    size_window(measure_of(mk), q, cut, &zlo, &zhi)
    if zmin > zlo:
        zlo = zmin
    for m in range(u.n_tokens):
        if floor > 0.0 and peak_rest_score(measure_of(mk), q, rest) < floor:
            break
        t = <int64_t>(s.order[m] & ((1 << QUERY_TOKEN_BITS) - 1))
        x = s.post_maxe[t] if s.post_maxe[t] < rest else rest
        if may_reach(measure_of(mk), x, q, x, cut):
            if T.X.tinfo[s.post_vid[t]].ng == 0:
                # a short posting: its length bounds its window (reading its
                # sizes would cost a random read for a few entries)
                cost += s.post_end[t] - s.post_start[t]
            else:
                cost += window_entries(T.X, s.post_vid[t], zlo, zhi)
        rest -= s.qcount[t]
    return cost


cdef inline bint choose_driver(const Task* T, Query* u, Scratch* s, MeasureArg mk) noexcept nogil:
    """Drive with the field whose scan reads the fewest entries; load its tokens.

    False when some field's scan would read nothing: then no reference can
    reach the floor (with a floor of 0: no reference shares a token in it).
    """
    cdef int f, last = T.Q.F - 1
    cdef int64_t cost, best_cost = -1
    # a self-join driven by field 0 reads only sizes >= the query's own there
    # (see scan_posting), which often makes field 0 the cheaper driver
    cdef bint upper = T.upper_only
    if T.Q.F == 1:
        load_tokens(T, u, s, 0)
        u.driver = 0
        u.size = u.sizes[0]
        return u.n_tokens > 0
    for f in range(T.Q.F):
        load_tokens(T, u, s, f)
        cost = scan_cost(T, u, s, u.sizes[f], u.sizes[0] if upper and f == 0 else 0, mk)
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


cdef inline void seed_candidates(const Task* T, Query* u, Scratch* s, MeasureArg mk) noexcept nogil:
    """Top-k: rule the query itself out, and try the previous query's neighbour first.

    Consecutive queries are often consecutive samples of one dialogue, whose
    best matches are consecutive references too; verifying the reference after
    the previous query's best match first can only raise the threshold early
    (it never changes a result).
    """
    cdef int64_t qi = u.qi, r
    if T.mode != MODE_TOPK:
        return
    if T.skip_self and qi < T.R.n:
        mark_done(u, s, qi)   # reset with the other touched references
    # (in a renumbered collection neighbours by index are not neighbours in
    # the caller's order, and prev_best is an id: no seed)
    if s.top.prev_q == qi - 1 and s.top.prev_best >= 0 and T.R.id == NULL and T.Q.id == NULL:
        r = s.top.prev_best + 1
        if r < T.R.n and s.state[r] == 0 and not (T.skip_self and r == qi):
            mark_done(u, s, r)
            verify_now(T, u, s, r, mk)



cdef inline int walk_fill(Walk* w, const SigFilter* sf, int64_t* out_p, int32_t* out_z,
                          int cap, MeasureArg mk) noexcept nogil:
    """The next (at most cap) entries of the walk that pass the positional
    filter and the signature test, with their reference sizes; fewer than
    cap only when the walk is over.

    A long posting is read a size group at a time: the entries that pass
    the positional filter are found on the suffix-mass column alone, then
    their signatures are tested in one tight loop (sf.scan, _sigscan.h),
    against per-field limits that are integers within the group
    (reaching_bits).
    """
    cdef const uint64_t* psig = w.X.psig
    cdef int n = 0, g, j, got, F = sf.F, b = sf.b
    cdef int64_t p, end, z
    cdef uint64_t qsig = sf.qsig, mask = sf.mask
    cdef int allowed[_limits.MAX_FIELDS]
    if not w.grouped:
        while n < cap:
            p = walk_next(w, mk)
            if p < 0:
                break
            if sf.active and not sig_admits(sf, psig[p], w.z, mk):
                continue
            out_p[n] = p
            out_z[n] = <int32_t>w.z
            n += 1
        return n
    if sf.active:
        for g in range(F):
            allowed[g] = sf.allowed[g]
    while n < cap:
        if w.p >= w.end and not walk_open_group(w, sf, mk):
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
            got = sf.scan(psig, &p, end, qsig, F, b, mask, allowed, out_p + n, cap - n)
            for j in range(n, n + got):
                out_z[j] = <int32_t>z
            n += got
        w.p = p
    return n



cdef inline bint key_above(int64_t z, int64_t r, int64_t q0, int64_t qi) noexcept nogil:
    """Whether reference r (size z in field 0) comes after query qi (size q0 in
    field 0) in the self-join's order: by size in field 0, then by index."""
    return z > q0 or (z == q0 and r > qi)


cdef inline void scan_window(const Task* T, Query* u, Scratch* s, int64_t t,
                             double cut, MeasureArg mk) noexcept nogil:
    """scan_posting below POSITIONAL_CUT (top-k): every entry of token t's size window."""
    cdef const Index* X = T.X
    cdef const Entry* ent = X.ent
    cdef const uint32_t* pcnt = X.pcnt
    cdef uint32_t* state = s.state
    cdef int32_t* bound = s.bound
    cdef int32_t* touched = s.touched
    cdef int32_t* tz = s.tz
    cdef int64_t skipped = u.skipped, qi = u.qi, q = u.size, rest = u.rest
    cdef int64_t qcount = s.qcount[t], after = u.rest - s.qcount[t]
    cdef int64_t n_touched = u.n_touched, best_count = u.best_count, best_ref = u.best_ref
    cdef uint32_t w, add
    cdef int64_t p, a, b, r, e, gain, ref_count, z
    # the whole window: exact counts (a candidate's bound stays the one
    # set when it was admitted, still valid, and looser than its count)
    size_window(measure_of(mk), q, cut, &a, &b)
    window_range(X, s.post_vid[t], a, b, &a, &b)
    s.n_post += b - a
    for p in range(a, b):
        # every entry's reference is read: from the compact column (a
        # quarter of the bytes), which top_k makes for such scans
        r = X.entry_refs[p] if X.entry_refs != NULL else ent[p].ref
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
        z = ent[p].size
        e = suffix_bound(X.psuf[p], z)
        if not may_reach(measure_of(mk), e if e < rest else rest, q, z, cut):
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
    u.n_touched = n_touched
    u.best_count = best_count
    u.best_ref = best_ref


cdef inline void scan_walk(const Task* T, Query* u, Scratch* s, int64_t t,
                           double cut, MeasureArg mk) noexcept nogil:
    """scan_posting from POSITIONAL_CUT on, and in the join: the walk's entries only."""
    cdef const Index* X = T.X
    cdef const Entry* ent = X.ent
    cdef const uint32_t* pcnt = X.pcnt
    cdef uint32_t* state = s.state
    cdef int32_t* bound = s.bound
    cdef int32_t* touched = s.touched
    cdef int32_t* tz = s.tz
    cdef int64_t skipped = u.skipped, qi = u.qi, q = u.size, rest = u.rest
    cdef int64_t qcount = s.qcount[t], after = u.rest - s.qcount[t]
    cdef int64_t n_touched = u.n_touched, best_count = u.best_count, best_ref = u.best_ref
    cdef uint32_t w, add
    cdef int64_t r, count, gain, ref_count, pb
    # a self-join finds each pair once, from the query whose key (size in
    # field 0, index) is the smaller: its references all have sizes >= q0
    cdef bint upper = T.upper_only
    cdef int64_t q0 = u.sizes[0]
    cdef Walk walk
    cdef SigFilter sf
    cdef int64_t batch_p[STATE_BATCH]
    cdef int32_t batch_z[STATE_BATCH]
    cdef int nb, j, got
    # only the entries that pass the positional filter and the row
    # signature test too; the signature is read beside the entry, before
    # the random read of the reference's state.  (A candidate that fails
    # it now, after the running threshold rose, cannot reach the
    # threshold any more: leaving its count short only lowers its bound.)
    sig_prepare(T, u, u.driver, q, cut, &sf, mk)
    walk_start(&walk, X, s.post_vid[t], q, rest, cut, q0 if upper and u.driver == 0 else 0, mk)
    while True:
        # gather a batch of the entries that pass, asking for their
        # references' state as they come (random reads that then overlap),
        # then count them in the same order
        got = walk_fill(&walk, &sf, batch_p, batch_z, STATE_BATCH, mk)
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
            gain = suffix_bound(X.psuf[pb], batch_z[j]) - ref_count
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


cdef inline void scan_posting(const Task* T, Query* u, Scratch* s, int64_t t,
                              double cut, MeasureArg mk) noexcept nogil:
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
    if T.mode == MODE_TOPK and cut < prune_cut(POSITIONAL_CUT):
        scan_window(T, u, s, t, cut, mk)
    else:
        scan_walk(T, u, s, t, cut, mk)


cdef inline void prefetch_next_walks(const Task* T, const Query* u, const Scratch* s,
                                     int64_t m, double cut, MeasureArg mk) noexcept nogil:
    """Ask for what the next tokens' walks read first, while this one is walked,
    one stage further each token ahead: the TokenInfo three tokens on; two
    on, the first size group in the window (where lower_bound_group guesses
    it); one on, that group's first entry and suffix mass (for a short
    posting, its first entry)."""
    cdef const Index* X = T.X
    cdef int64_t t, lo, hi, g, step
    cdef const TokenInfo* ti
    size_window(measure_of(mk), u.size, cut, &lo, &hi)
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
            if X.has_sig:
                overlap_prefetch(&X.psig[X.grp[g].start])
            overlap_prefetch(&X.psuf[X.grp[g].start])


cdef inline void count_postings(const Task* T, Query* u, Scratch* s, MeasureArg mk) noexcept nogil:
    """Visit the driver tokens rarest first while a new reference can still win."""
    cdef int64_t m, t, x, qcount
    cdef double thr, cut
    for m in range(u.n_tokens):
        thr = current_threshold(s, T.k, T.floor_score)
        if thr > 0.0 and peak_rest_score(measure_of(mk), u.size, u.rest) < thr:
            break  # query prefix exhausted: no new reference can reach the threshold
        if (T.upper_only and u.driver == 0
                and rest_score(measure_of(mk), u.size, u.rest, u.size) < thr):
            break  # the same for a self-join's references, none smaller than the query
        cut = prune_cut(thr)
        t = <int64_t>(s.order[m] & ((1 << QUERY_TOKEN_BITS) - 1))
        qcount = s.qcount[t]
        x = s.post_maxe[t] if s.post_maxe[t] < u.rest else u.rest
        if not may_reach(measure_of(mk), x, u.size, x, cut):
            # no entry of this posting can be admitted: leave it unread and
            # let its mass widen every candidate's bound instead
            u.skipped += qcount
            u.rest -= qcount
            continue
        if T.mode == MODE_TOPK and s.post_end[t] - s.post_start[t] > 2 * (u.n_touched + 64):
            # a long posting comes: verify the best few partial matches first,
            # so the threshold that filters its admissions is as high as it can be
            verify_top_partials(T, u, s, mk)
            thr = current_threshold(s, T.k, T.floor_score)
            if thr > 0.0 and peak_rest_score(measure_of(mk), u.size, u.rest) < thr:
                break
            cut = prune_cut(thr)
        prefetch_next_walks(T, u, s, m, cut, mk)
        scan_posting(T, u, s, t, cut, mk)
        u.rest -= qcount
        if (T.mode == MODE_TOPK and u.best_ref >= 0
                and (s.state[u.best_ref] >> COUNT_BITS) == 1):
            # verify the best partial match now: raises the threshold early
            verify_now(T, u, s, u.best_ref, mk)
            u.best_count = 0


cdef inline void mark_admitted(const Task* T, Query* v, Scratch* s, int64_t q,
                               uint8_t stage, MeasureArg mk) noexcept nogil:
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
    cdef double cut = prune_cut(thr)
    cdef int64_t rest = v.rest, m, t, x, r
    cdef Walk walk
    cdef SigFilter sf
    cdef int64_t batch_p[STATE_BATCH]
    cdef int32_t batch_z[STATE_BATCH]
    cdef int j, got
    sig_prepare(T, v, v.driver, q, cut, &sf, mk)
    for m in range(v.n_tokens):
        if thr > 0.0 and peak_rest_score(measure_of(mk), q, rest) < thr:
            break
        t = <int64_t>(s.order[m] & ((1 << QUERY_TOKEN_BITS) - 1))
        x = s.post_maxe[t] if s.post_maxe[t] < rest else rest
        if may_reach(measure_of(mk), x, q, x, cut):
            walk_start(&walk, T.X, s.post_vid[t], q, rest, cut, 0, mk)
            while True:
                got = walk_fill(&walk, &sf, batch_p, batch_z, STATE_BATCH, mk)
                for j in range(got):
                    r = ent[batch_p[j]].ref
                    if (state[r] >> COUNT_BITS) == 1 and fields_hit[r] == stage:
                        fields_hit[r] = stage + 1
                if got < STATE_BATCH:
                    break
            s.n_post += walk.n_read
        rest -= s.qcount[t]


cdef inline void filter_by_other_fields(const Task* T, Query* u, Scratch* s, MeasureArg mk) noexcept nogil:
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
    if T.mode == MODE_TOPK and running_cut(s, T) < prune_cut(POSITIONAL_CUT):
        return  # low thresholds: most candidates pass every field's filters
    for f in range(T.Q.F):
        if f == u.driver or u.costs[f] > FILTER_ENTRIES_PER_CANDIDATE * u.n_touched:
            continue
        v = u[0]
        v.driver = f
        load_tokens(T, &v, s, f)
        mark_admitted(T, &v, s, u.sizes[f], <uint8_t>u.n_filters, mk)
        u.n_filters += 1


cdef void search_one(const Task* T, int64_t qi, Scratch* s, PairBuf* pairs, MeasureArg mk) noexcept nogil:
    """Handle one query: fills s.top.ks/s.top.ki (top-k) or appends to ``pairs`` (join).

    ``T.skip_self`` skips reference qi (top-k, all-vs-rest); ``T.upper_only``
    makes the join a self-join: query qi pairs only with the references after it by (size in
    field 0, index), see key_above, and reports each pair as (lower, higher index).  Per-reference state is one
    uint32: the count in the low COUNT_BITS bits and a flag in the top two
    (0 unseen, 1 candidate, 2 done).
    """
    cdef Query u
    cdef int64_t n
    s.top.nk = 0
    if not prepare_query(T, qi, &u):
        return
    if (T.mode == MODE_TOPK and T.k == 1 and T.X.nfp > 0 and T.Q.fp != NULL
            and one_means_identical(measure_of(mk))
            and exact_duplicate(T, &u, s)):
        return
    if not choose_driver(T, &u, s, mk):
        return
    seed_candidates(T, &u, s, mk)
    count_postings(T, &u, s, mk)
    filter_by_other_fields(T, &u, s, mk)
    n = bucket_candidates(T, &u, s, mk)
    verify_candidates(T, &u, s, n, pairs, mk)


cdef void* postings_scratch_new(const void* ctx) noexcept nogil:
    cdef const Task* T = <const Task*>ctx
    return scratch_new(T.R.n, T.max_row, T.Q.F, T.max_mass, T.k)


cdef void postings_scratch_free(void* s) noexcept nogil:
    scratch_free(<Scratch*>s)


cdef void postings_search_one(const void* ctx, int64_t qi, void* s,
                              PairBuf* pairs) noexcept nogil:
    # Dice, the default, runs a copy of the phases compiled for it alone
    # (MeasureArg): the measure's tests fold to today's Dice arithmetic
    cdef const Task* T = <const Task*>ctx
    cdef DiceOnly dice = 0
    cdef AnyMeasure any_measure = T.measure
    if T.measure == DICE:
        search_one(T, qi, <Scratch*>s, pairs, dice)
    else:
        search_one(T, qi, <Scratch*>s, pairs, any_measure)


cdef void postings_take_stats(void* scratch, int64_t* row) noexcept nogil:
    """Postings read, candidates admitted, exact verifications."""
    cdef Scratch* s = <Scratch*>scratch
    if row != NULL:
        row[0] += s.n_post
        row[1] += s.n_touch
        row[2] += s.n_verify
    s.n_post = 0
    s.n_touch = 0
    s.n_verify = 0


# the postings kernel's side of the runner (_runner.run_queries)
cdef Hooks POSTINGS_HOOKS
POSTINGS_HOOKS.scratch_new = postings_scratch_new
POSTINGS_HOOKS.scratch_free = postings_scratch_free
POSTINGS_HOOKS.search_one = postings_search_one
POSTINGS_HOOKS.take_stats = postings_take_stats
POSTINGS_HOOKS.n_stats = 3
POSTINGS_HOOKS.chunk = 16


cdef int run_postings(const Coll* Q, const Coll* R, const Index* X, int64_t start,
                      int64_t stop, int mode, int k, double floor_score, bint exclude,
                      int64_t max_row, int64_t max_mass, int n_threads, double* out_s,
                      int64_t* out_i, PairBuf* bufs, int64_t* stats,
                      Scratch** pool, int pool_size, int measure) noexcept nogil:
    """Run queries[start:stop] on the runner; 0 on success, 1 if scratch allocation failed.

    ``exclude``: skip reference qi (top-k) or the self-join (join); ``bufs``
    only for a join.  Scratch from ``pool`` as run_queries says.
    """
    cdef Task T
    T.Q = Q
    T.R = R
    T.X = X
    T.mode = mode
    T.measure = measure
    T.k = k
    T.floor_score = floor_score
    T.skip_self = exclude and mode == MODE_TOPK
    T.upper_only = exclude and mode == MODE_JOIN
    T.sig_scan = sig_scan_for(current_level())
    T.max_row = max_row
    T.max_mass = max_mass
    return run_queries(&POSTINGS_HOOKS, &T, Q, start, stop, k, n_threads, out_s, out_i,
                       bufs if mode == MODE_JOIN else NULL, stats, <void**>pool, pool_size)
