# cython: freethreading_compatible=True
"""Bit-sliced max-overlap search: frequent tokens as bitmaps, counts as bit-planes.

The scheme of Rinfret, O'Neil & O'Neil (SIGMOD 2001), for the exact top-k Dice
search of ``overlap._search`` (same results, bit for bit).  Everything here
takes flat, validated arrays prepared by ``overlap._bitslice_index``.

Layout (built once per reference collection):

* references are renumbered by their sizes (field 0, then field 1, ...,
  then original index), so a 64-reference word covers a narrow size range;
  ``order`` maps a new number back to the original index;
* a *frequent* token of a field (document frequency >= D) has a bitmap over
  the renumbered references (``nw`` words per row, zero-padded to whole
  blocks); every other token keeps a posting list of renumbered references.

One query (one thread handles it from start to end):

1. **prepare**: every query token is looked up; a frequent token contributes
   its bitmap row, a rare token's postings are counted into a per-reference
   array ``rare_counts`` (and a per-word mask of touched references);
2. **scan**: blocks of ``BS_BLOCK`` words are visited nearest size first
   (outwards from the size with the best length bound), stopping on each side
   once the length bound falls below the running threshold ``thr``.  In a
   block, the frequent rows are added into a vertical counter (bit-planes);
   the smallest count ``need`` a reference of that size needs to reach
   ``thr`` is computed per word from the word's smallest size, and O'Neil's
   bit-sliced comparison keeps the bits whose count is >= need, plus the
   references touched by rare tokens.  The other fields filter the survivors
   the same way;
3. **score**: a survivor's count in every field is read from the planes plus
   ``rare_counts``: it is exact, so its score ``2.0*inter/(|q|+|r|)`` is
   computed directly and kept in the top-k, ties going to the lowest ORIGINAL
   index.

A threshold join (``BitsliceIndex.join``, ``join_one``) runs the same steps
with ``thr`` fixed at the threshold: every block whose length bound reaches it
is counted once, in index order, without the best-first narrowing, and every
survivor whose exact score reaches it is pushed to the thread's pair buffer.

Every filter only over-selects (``need`` is the smallest integer count whose
float score reaches ``thr``, and ``thr`` never exceeds the final k-th score),
and the final decision is the float score and the original index, so the
result does not depend on the visiting order or the thread count.
"""

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange, parallel
from libc.stdint cimport uint64_t, int64_t, int32_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset

from overlap._openmp cimport omp_get_thread_num
from overlap._kernels._hash cimport fmix64
from overlap._kernels._bounds cimport (
    DICE, N_MEASURES, AnyMeasure, DiceOnly, MeasureArg, measure_of, need_count,
    one_means_identical, rest_score, score,
)
from overlap._kernels._setops cimport topk_insert
from overlap._kernels._sort cimport chunk_first_slots
from overlap._kernels._cpu cimport current_level, cpu_detect_level
from overlap._kernels._collection cimport Collection
from overlap._kernels._limits cimport MAX_FIELDS
from overlap._kernels._runner cimport (
    Hooks, PairBuf, TopK, free_pairs, gather_pairs, push_pair, run_queries,
)
from overlap._kernels._types cimport Coll, VocabSlot, row_id
from overlap._kernels._vocab cimport vocab_lookup
from overlap._kernels._vocab import check_vocabulary
from overlap._kernels._checks cimport check_flat, longest_row

cnp.import_array()

cdef extern from "_bitslice_simd.h" nogil:
    enum:
        BS_BLOCK
        BS_MAX_PLANES
    ctypedef void (*bs_add_rows_fn)(const uint64_t** rows, int n, int64_t w0, int b,
                                    uint64_t* P) noexcept nogil
    ctypedef void (*bs_count_ge_fn)(const uint64_t* P, int b, const int64_t* need,
                                    uint64_t* res) noexcept nogil
    bs_add_rows_fn bs_add_rows_for(int level) noexcept
    bs_count_ge_fn bs_count_ge_for(int level) noexcept
    int64_t bs_count_at(const uint64_t* P, int b, int j, int x) noexcept
    int64_t bs_narrow_to_max(const uint64_t* P, int b, uint64_t* mask) noexcept
    int bs_ctz(uint64_t x) noexcept

#: 64-bit words per block (one vertical counter covers 64 * BLOCK_WORDS references)
BLOCK_WORDS = BS_BLOCK
#: bit-planes per counter: at most 2**MAX_PLANES - 1 frequent tokens per field
MAX_PLANES = BS_MAX_PLANES

cdef enum:
    # need() results are cached for sizes below this
    NEED_CACHE = 1024

# a need no count reaches: O'Neil's comparison keeps no bit for it
cdef int64_t IMPOSSIBLE = (<int64_t>1) << 40


ctypedef struct Kernels:
    bs_add_rows_fn add_rows    # frequent rows -> bit-planes of one block
    bs_count_ge_fn count_ge    # bit-planes -> bits whose count >= need, per word

ctypedef struct BIndex:
    int F
    int64_t n                # references
    int64_t nw               # words per bitmap row (a multiple of BS_BLOCK)
    const int64_t* order     # renumbered -> original index
    const int32_t* rank      # original -> renumbered
    const int32_t* zs        # F * n sizes, renumbered order
    const int32_t* wzmin     # F * nw smallest size in each word (padding: INT32 max)
    const VocabSlot* vocab   # per field, a table of the token hashes and their codes
    const int64_t* voff      # (see token_codes: a bitmap row, or n_rows + vocabulary id)
    int64_t n_rows           # bitmap rows (codes below it are rows)
    const int64_t* bitmap_row  # V: bitmap row of a frequent token, -1 for a rare one
    const int64_t* rptr      # V + 1: rare postings
    const int32_t* rref      # renumbered references, ascending within a token
    const uint64_t* bits     # bitmap rows, nw words each


ctypedef struct Scratch:
    TopK top                 # the running top-k (first: see _runner.pxd)
    const uint64_t** rows    # F * rowcap frequent rows of the query
    int64_t rowcap
    int n_frequent[MAX_FIELDS]   # frequent tokens per field
    int n_planes[MAX_FIELDS]     # bit-planes per field
    int64_t m[MAX_FIELDS]    # query tokens present in the references, per field
    int64_t q[MAX_FIELDS]    # query sizes
    int64_t ntouch[MAX_FIELDS]
    int32_t* rare_counts     # F * n rare-token counts
    uint64_t* touched_words  # F * nw masks of references with rare_counts > 0
    int32_t* touched         # F * n
    uint64_t* P              # F * BS_MAX_PLANES * BS_BLOCK planes
    uint64_t cand[BS_BLOCK]
    uint64_t ge[BS_BLOCK]
    int64_t need[BS_BLOCK]
    int32_t* ncache          # F * NEED_CACHE
    int64_t* nstamp          # F * NEED_CACHE
    int64_t epoch
    double thr
    int64_t n_blocks         # blocks counted
    int64_t n_cand           # references scored
    int64_t seed_r           # renumbered reference scored before the scan (-1: none)
    PairBuf* pairs           # a join's pairs (NULL: top-k), and the query's row id
    int64_t qrow
    bint upper               # a self-join: only references above the query's row


cdef class BitsliceIndex:
    """Bitmaps of the frequent tokens and postings of the rare ones (see module doc)."""
    cdef BIndex x
    cdef object _keep
    cdef readonly int64_t n_rows
    cdef readonly int64_t n_words
    cdef readonly object last_stats

    def __init__(self, int n_fields, int64_t n, int64_t nw, const int64_t[::1] order,
                 const int32_t[::1] rank, const int32_t[::1] zs, const int32_t[::1] wzmin,
                 const uint64_t[::1] vocab, const int64_t[::1] voff,
                 const int64_t[::1] bitmap_row, const int64_t[::1] rptr, const int32_t[::1] rref,
                 const uint64_t[::1] bits):
        if n_fields < 1 or n_fields > MAX_FIELDS:
            raise ValueError(f"n_fields must be in [1, {MAX_FIELDS}], got {n_fields}")
        if nw % BS_BLOCK or nw * 64 < n:
            raise ValueError("nw must be a multiple of BLOCK_WORDS covering n references")
        if (order.shape[0] != n or rank.shape[0] != n or zs.shape[0] != n_fields * n
                or wzmin.shape[0] != n_fields * nw or voff.shape[0] != n_fields + 1
                or vocab.shape[0] != 2 * voff[n_fields]
                or rptr.shape[0] != bitmap_row.shape[0] + 1 or bits.shape[0] % max(nw, 1)):
            raise ValueError("BitsliceIndex: inconsistent array shapes")
        check_tables(n, bits.shape[0] // max(nw, 1), bitmap_row, rptr, rref)
        check_vocabulary(vocab, voff, bitmap_row.shape[0], "BitsliceIndex")
        codes = token_codes(vocab, bitmap_row, bits.shape[0] // max(nw, 1))
        self._keep = (order, rank, zs, wzmin, codes, voff, bitmap_row, rptr, rref, bits)
        cdef const uint64_t[::1] cv = codes
        self.n_rows = bits.shape[0] // max(nw, 1)
        self.n_words = nw
        self.x.F = n_fields
        self.x.n = n
        self.x.nw = nw
        self.x.order = &order[0] if n else NULL
        self.x.rank = &rank[0] if n else NULL
        self.x.zs = &zs[0] if zs.shape[0] else NULL
        self.x.wzmin = &wzmin[0] if wzmin.shape[0] else NULL
        self.x.vocab = <const VocabSlot*>&cv[0] if cv.shape[0] else NULL
        self.x.n_rows = self.n_rows
        self.x.voff = &voff[0]
        self.x.bitmap_row = &bitmap_row[0] if bitmap_row.shape[0] else NULL
        self.x.rptr = &rptr[0]
        self.x.rref = &rref[0] if rref.shape[0] else NULL
        self.x.bits = &bits[0] if bits.shape[0] else NULL

    def top_k(self, Collection queries, int64_t start, int64_t stop, int k, double min_score,
              bint exclude_self, int64_t max_row, int n_threads,
              double[:, ::1] out_score, int64_t[:, ::1] out_index, int measure=0,
              floors=None):
        """Top-k of queries[start:stop] into out_*[start:stop]; ``measure`` is a
        ``_bounds.Measure`` (0: dice).

        ``floors`` (float64, one per query row, in [0, 1]): query ``i`` reports
        only scores ``>= max(min_score, floors[i])``, and the search prunes with
        that (e.g. the query's best score so far over earlier references).

        The queries' rows and sizes were checked when the Collection was made;
        a renumbered Collection (ids) is refused: results are written by row.
        """
        cdef const Coll* Q = &queries.c
        if Q.F != self.x.F:
            raise ValueError("queries and references must have the same fields")
        if Q.id != NULL:
            raise ValueError("BitsliceIndex.top_k: the queries must not be renumbered")
        if (not 0 <= start <= stop <= Q.n or k < 1
                or out_score.shape[0] < stop or out_score.shape[1] != k
                or out_index.shape[0] < stop or out_index.shape[1] != k):
            raise ValueError("BitsliceIndex.top_k: inconsistent arguments")
        if not 0 <= measure < N_MEASURES:
            raise ValueError(f"BitsliceIndex.top_k: measure {measure} is not a _bounds.Measure")
        if exclude_self and Q.n != self.x.n:
            raise ValueError("exclude_self needs the references as queries")
        if longest_row(queries.arrays[0], Q.F, Q.n, start, stop) > max_row:
            raise ValueError(f"BitsliceIndex.top_k: a query row is longer than max_row={max_row}")
        cdef const double[::1] fv
        if floors is not None:
            fv = floors
            if fv.shape[0] != Q.n:
                raise ValueError(f"BitsliceIndex.top_k: floors must hold one score per query "
                                 f"({Q.n}), got {fv.shape[0]}")
            if not check_floors(fv):
                raise ValueError("BitsliceIndex.top_k: floors must lie in [0, 1]")
        stats = np.zeros((max(1, n_threads), 2), dtype=np.int64)
        cdef int64_t[:, ::1] sv = stats
        if stop == start:
            self.last_stats = stats.sum(axis=0)
            return
        cdef BTask T
        T.Q = Q
        T.X = &self.x
        T.k = k
        T.floor_score = min_score
        T.floors = &fv[0] if floors is not None and Q.n else NULL
        T.exclude = exclude_self
        T.measure = measure
        T.max_row = max_row
        T.kern = kernels_for(current_level())
        T.join = False
        cdef int ok = run_queries(&BITSLICE_HOOKS, &T, Q, start, stop, k, n_threads,
                                  &out_score[0, 0], &out_index[0, 0], NULL, &sv[0, 0],
                                  NULL, 0)
        self.last_stats = stats.sum(axis=0)
        if ok != 0:
            raise MemoryError("overlap bit-sliced search: out of memory for per-thread scratch")

    def join(self, Collection queries, int64_t start, int64_t stop, double threshold,
             bint upper_only, int64_t max_row, int n_threads, int measure=0):
        """Pairs (query, reference, score) with score >= threshold for
        queries[start:stop], unsorted (``_pairs.sorted_pairs`` orders them);
        ``measure`` is a ``_bounds.Measure`` (0: dice), scored from the query's side.
        ``upper_only`` (a self-join: the references as queries): only the
        pairs whose reference index is above the query's.

        ``threshold`` must lie in (0, 1].  The queries' rows and sizes were
        checked when the Collection was made; its row ids (``ids``) are reported.
        """
        cdef const Coll* Q = &queries.c
        cdef int n_buffers = max(1, n_threads), ok
        if Q.F != self.x.F:
            raise ValueError("queries and references must have the same fields")
        if not 0 <= start <= stop <= Q.n:
            raise ValueError("BitsliceIndex.join: inconsistent arguments")
        if upper_only and Q.n != self.x.n:
            raise ValueError("upper_only needs the references as queries")
        if Q.c != NULL:
            raise ValueError("BitsliceIndex.join: the queries must be sets (the bitmaps hold "
                             "presence, not counts)")
        if not 0.0 < threshold <= 1.0:  # NaN fails too
            raise ValueError(f"BitsliceIndex.join: threshold must be in (0, 1], got {threshold}")
        if not 0 <= measure < N_MEASURES:
            raise ValueError(f"BitsliceIndex.join: measure {measure} is not a _bounds.Measure")
        if longest_row(queries.arrays[0], Q.F, Q.n, start, stop) > max_row:
            raise ValueError(f"BitsliceIndex.join: a query row is longer than max_row={max_row}")
        stats = np.zeros((n_buffers, 2), dtype=np.int64)
        cdef int64_t[:, ::1] sv = stats
        cdef BTask T
        T.Q = Q
        T.X = &self.x
        T.k = 1
        T.floor_score = threshold
        T.floors = NULL
        T.exclude = upper_only
        T.measure = measure
        T.max_row = max_row
        T.kern = kernels_for(current_level())
        T.join = True
        cdef PairBuf* bufs = <PairBuf*>calloc(n_buffers, sizeof(PairBuf))
        if bufs == NULL:
            raise MemoryError("overlap bit-sliced join: out of memory")
        try:
            ok = 0
            if stop > start:
                ok = run_queries(&BITSLICE_HOOKS, &T, Q, start, stop, 1, n_buffers,
                                 NULL, NULL, bufs, &sv[0, 0], NULL, 0)
            self.last_stats = stats.sum(axis=0)
            if ok != 0:
                raise MemoryError("overlap bit-sliced join: out of memory for per-thread scratch")
            return gather_pairs(bufs, n_buffers, "overlap bit-sliced join")
        finally:
            free_pairs(bufs, n_buffers)


cdef bint check_floors(const double[::1] floors) noexcept:
    """Whether every floor lies in [0, 1] (NaN does not)."""
    cdef int64_t i
    for i in range(floors.shape[0]):
        if not 0.0 <= floors[i] <= 1.0:
            return False
    return True


def token_codes(vocab, bitmap_row, int64_t n_rows):
    """A copy of the vocabulary tables whose ids are the query side's codes.

    A frequent token's code is its bitmap row (``< n_rows``), a rare one's
    ``n_rows +`` its vocabulary id; empty slots keep ``-1``.  One read of the
    table then says what the token is (no second read of ``bitmap_row``).
    """
    codes = np.array(vocab, dtype=np.uint64, copy=True)
    if len(bitmap_row) == 0:
        return codes  # no vocabulary: every slot is empty
    ids = codes.view(np.int64)[1::2]
    rows = np.asarray(bitmap_row)[np.maximum(ids, 0)]
    ids[:] = np.where(ids < 0, -1, np.where(rows >= 0, rows, n_rows + ids))
    return codes


cdef check_tables(int64_t n, int64_t n_rows, const int64_t[::1] bitmap_row,
                  const int64_t[::1] rptr, const int32_t[::1] rref):
    """ValueError unless every bitmap row, posting bound and reference is in range."""
    cdef int64_t v, e, V = bitmap_row.shape[0], m = rref.shape[0]
    cdef int bad = 0
    with nogil:
        if rptr[0] != 0 or rptr[V] != m:
            bad = 1
        for v in range(V):
            if bitmap_row[v] < -1 or bitmap_row[v] >= n_rows or rptr[v + 1] < rptr[v]:
                bad = 1
        for e in range(m):
            if rref[e] < 0 or rref[e] >= n:
                bad = 1
    if bad:
        raise ValueError("BitsliceIndex: a bitmap row, posting bound or reference out of range")


def block_counts(const uint64_t[:, ::1] table, const int64_t[::1] pick, int64_t w0,
                 const int64_t[::1] need, int level):
    """One call of the word-parallel kernels of CPU level ``level`` (_cpu.h), for tests.

    Adds the bitmap rows ``table[pick[t]]`` (``pick.shape[0] < 2**MAX_PLANES``
    rows, repeats allowed) over the block of ``BLOCK_WORDS`` words starting at
    word ``w0`` into bit-planes, then compares with ``need`` (one threshold per
    word).  Returns ``(counts, ge)``: the count of each of the block's
    ``64 * BLOCK_WORDS`` bits read back from the planes, and the words of bits
    whose count is ``>= need``.
    """
    cdef int64_t n = pick.shape[0], t, j, x
    cdef int top = cpu_detect_level()
    if level < 0 or level > top:
        raise ValueError(f"level must be in [0, {top}] on this CPU, got {level}")
    if n >= (<int64_t>1) << BS_MAX_PLANES:
        raise ValueError(f"pick: at most {(1 << BS_MAX_PLANES) - 1} rows, got {n}")
    if need.shape[0] != BS_BLOCK:
        raise ValueError(f"need: {BS_BLOCK} thresholds, got {need.shape[0]}")
    if w0 < 0 or w0 + BS_BLOCK > table.shape[1]:
        raise ValueError("w0: the block is not inside the table's rows")
    for t in range(n):
        if pick[t] < 0 or pick[t] >= table.shape[0]:
            raise ValueError(f"pick[{t}] = {pick[t]} is not a row of the table")
    cdef int b = bit_length(n)
    cdef Kernels kern = kernels_for(level)
    cdef const uint64_t** rv = <const uint64_t**>malloc(max(n, 1) * sizeof(uint64_t*))
    if rv == NULL:
        raise MemoryError()
    for t in range(n):
        rv[t] = &table[pick[t], 0]
    planes = np.zeros(BS_MAX_PLANES * BS_BLOCK, dtype=np.uint64)
    ge = np.zeros(BS_BLOCK, dtype=np.uint64)
    counts = np.zeros(64 * BS_BLOCK, dtype=np.int64)
    cdef uint64_t[::1] pv = planes
    cdef uint64_t[::1] gv = ge
    cdef int64_t[::1] cv = counts
    kern.add_rows(rv, <int>n, w0, b, &pv[0])
    free(rv)
    kern.count_ge(&pv[0], b, &need[0], &gv[0])
    for j in range(BS_BLOCK):
        for x in range(64):
            cv[64 * j + x] = bs_count_at(&pv[0], b, <int>j, <int>x)
    return counts, ge


cdef Kernels kernels_for(int level) noexcept:
    cdef Kernels kern
    kern.add_rows = bs_add_rows_for(level)
    kern.count_ge = bs_count_ge_for(level)
    return kern


# ---------------------------------------------------------------- build helper

cdef enum:
    # renumbered-reference chunks per thread of a threaded fill_field
    FILL_CHUNKS = 4
    # stored tokens below which fill_field runs serially
    FILL_MIN_TOKENS = 65536


def fill_field(const int64_t[::1] indptr, const int32_t[::1] inverse,
               const int64_t[::1] order, const int64_t[::1] bitmap_row, int64_t n_rows,
               int64_t nw, int n_threads, out=None):
    """The bitmaps and the rare postings of one field, in the renumbered order.

    Reference ``order[k]`` (original index) is renumbered ``k``; its tokens
    are ``inverse[indptr[order[k]]:indptr[order[k] + 1]]``, vocabulary ids in
    ``[0, V)`` with ``V = bitmap_row.shape[0]``.  Token ``v`` gets bitmap row
    ``bitmap_row[v]`` (``-1``: rare).  Returns ``(bits, rptr, rref)``: ``n_rows * nw``
    bitmap words (bit ``k`` of row ``bitmap_row[v]`` set when reference ``k`` holds
    ``v``), and the rare postings, ``rref[rptr[v]:rptr[v + 1]]`` the renumbered
    references holding ``v``, ascending (empty for frequent tokens).

    Chunks of renumbered references (whole 64-reference words, so no two
    threads write one word) are filled in parallel, each from its own
    offsets: the result does not depend on ``n_threads``.  Each chunk first
    clears its words of every row.  ``out`` (uint64, ``n_rows * nw`` words,
    e.g. one field's part of every field's bitmaps) receives the bitmaps
    instead of a new array; whatever it held is overwritten.  ValueError for
    an id, a row or a reference out of range, or an ``out`` of another length.
    """
    cdef int64_t n = order.shape[0], V = bitmap_row.shape[0], nnz = inverse.shape[0]
    cdef int64_t k, i, t, v, row, c, acc, w, seen, a, b
    check_fill_input(indptr, order, bitmap_row, n_rows, nw, nnz)
    cdef int n_chunks = (FILL_CHUNKS * n_threads
                         if n_threads > 1 and nnz >= FILL_MIN_TOKENS
                         and FILL_CHUNKS * n_threads * V <= 4 * nnz else 1)
    if out is None:
        bits = np.empty(n_rows * nw, dtype=np.uint64)
    else:
        bits = out
    cdef uint64_t[::1] bv = bits
    if bv.shape[0] != n_rows * nw:
        raise ValueError(f"fill_field: out must hold n_rows * nw = {n_rows * nw} words, "
                         f"got {bv.shape[0]}")
    rptr = np.zeros(V + 1, dtype=np.int64)
    cuts = np.zeros(n_chunks + 1, dtype=np.int64)
    fill = np.zeros(<int64_t>n_chunks * V, dtype=np.int64)
    cdef int64_t[::1] rp = rptr
    cdef int64_t[::1] cut = cuts
    cdef int64_t[::1] fv = fill
    cdef uint64_t* bp = &bv[0] if bv.shape[0] else NULL
    cdef int64_t* fp = &fv[0] if fv.shape[0] else NULL
    cdef const int32_t* inv = &inverse[0] if nnz else NULL
    cdef int bad = 0
    with nogil:
        # chunk boundaries: about equal tokens each, on 64-reference words
        cut[n_chunks] = n
        if n_chunks > 1:
            seen = 0
            c = 1
            for k in range(n):
                seen += indptr[order[k] + 1] - indptr[order[k]]
                if (k + 1) % 64 == 0:
                    while c < n_chunks and seen * n_chunks >= nnz * c:
                        cut[c] = k + 1
                        c += 1
            while c < n_chunks:
                cut[c] = n
                c += 1
        # count every chunk's rare tokens
        for c in prange(n_chunks, num_threads=n_threads, schedule="dynamic", chunksize=1):
            for k in range(cut[c], cut[c + 1]):
                i = order[k]
                for t in range(indptr[i], indptr[i + 1]):
                    v = inv[t]
                    if v < 0 or v >= V:
                        bad += 1
                    elif bitmap_row[v] < 0:
                        fp[c * V + v] += 1
        if bad == 0:
            # posting boundaries, and each chunk's first slot in every posting
            for v in range(V):
                acc = 0
                for c in range(n_chunks):
                    acc = acc + fp[c * V + v]
                rp[v + 1] = rp[v] + acc
    if bad:
        raise ValueError("fill_field: a vocabulary id out of range")
    rref = np.empty(rptr[V], dtype=np.int32)
    cdef int32_t[::1] rv = rref
    cdef int32_t* rq = &rv[0] if rv.shape[0] else NULL
    with nogil:
        fill_chunks(&indptr[0], inv, &order[0] if n else NULL,
                    &bitmap_row[0] if V else NULL, V, n_rows, nw, n_chunks, n_threads,
                    &cut[0], &rp[0], fp, bp, rq)
    return bits, rptr, rref


cdef int check_fill_input(const int64_t[::1] indptr, const int64_t[::1] order,
                          const int64_t[::1] bitmap_row, int64_t n_rows, int64_t nw,
                          int64_t nnz) except -1:
    """ValueError unless fill_field's tables cover the references and each other."""
    cdef int64_t n = order.shape[0], V = bitmap_row.shape[0], i, v
    if indptr.shape[0] != n + 1 or (n and (indptr[0] != 0 or indptr[n] != nnz)):
        raise ValueError("fill_field: indptr does not cover the tokens")
    if nw < 0 or nw * 64 < n or n_rows < 0:
        raise ValueError("fill_field: nw words do not cover the references")
    for i in range(n):
        if indptr[i + 1] < indptr[i]:
            raise ValueError("fill_field: indptr is not sorted")
        if order[i] < 0 or order[i] >= n:
            raise ValueError("fill_field: order names a reference out of range")
    for v in range(V):
        if bitmap_row[v] < -1 or bitmap_row[v] >= n_rows:
            raise ValueError("fill_field: a bitmap row out of range")
    return 0


cdef void fill_chunks(const int64_t* indptr, const int32_t* inv, const int64_t* order,
                      const int64_t* bitmap_row, int64_t V, int64_t n_rows, int64_t nw,
                      int n_chunks, int n_threads, const int64_t* cut, const int64_t* rp,
                      int64_t* fp, uint64_t* bp, int32_t* rq) noexcept nogil:
    """Every chunk's bitmap words and rare postings, from the chunk's own first
    slots (``fp``, counts until then; see fill_field)."""
    cdef int64_t k, i, t, v, row, a, b
    cdef int c
    for v in prange(V, num_threads=n_threads, schedule="dynamic", chunksize=4096):
        chunk_first_slots(fp, n_chunks, V, v, rp[v])
    for c in prange(n_chunks, num_threads=n_threads, schedule="dynamic", chunksize=1):
        # the chunk's words of every row (cuts fall on words, but n; the
        # last chunk also clears the padding words up to nw)
        a = (cut[c] + 63) >> 6
        b = nw if c == n_chunks - 1 else (cut[c + 1] + 63) >> 6
        if b > a:
            for row in range(n_rows):
                memset(bp + row * nw + a, 0, <size_t>(b - a) * sizeof(uint64_t))
        for k in range(cut[c], cut[c + 1]):
            i = order[k]
            for t in range(indptr[i], indptr[i + 1]):
                v = inv[t]
                row = bitmap_row[v]
                if row >= 0:
                    bp[row * nw + (k >> 6)] |= (<uint64_t>1) << (k & 63)
                else:
                    a = fp[c * V + v]
                    fp[c * V + v] = a + 1
                    rq[a] = <int32_t>k


# ---------------------------------------------------------------- phases

cdef inline int bit_length(int64_t v) noexcept nogil:
    cdef int b = 0
    while v > 0:
        b += 1
        v >>= 1
    return b


cdef inline int64_t need_for(Scratch* s, int f, int64_t z, MeasureArg mk) noexcept nogil:
    """need_count for field f at size z under the running threshold (cached)."""
    cdef int64_t i
    if z >= NEED_CACHE:
        return need_count(measure_of(mk), s.thr, s.q[f], z)
    i = f * NEED_CACHE + z
    if s.nstamp[i] != s.epoch:
        s.nstamp[i] = s.epoch
        s.ncache[i] = <int32_t>need_count(measure_of(mk), s.thr, s.q[f], z)
    return s.ncache[i]


cdef inline void update_threshold(Scratch* s, int k, double floor_score) noexcept nogil:
    cdef double t = floor_score if s.top.nk < k else s.top.ks[k - 1]
    if t != s.thr:
        s.thr = t
        s.epoch += 1  # cached need counts are stale


cdef bint prepare_query(const Coll* Q, int64_t qi, const BIndex* X,
                        Scratch* s) noexcept nogil:
    """Collect the query's frequent rows and count its rare tokens' postings.

    False when some field of the query shares no token with any reference (or
    is empty): every score is then 0.  Touched references are always recorded,
    so ``reset_query`` cleans up after either outcome.
    """
    cdef int F = X.F, f
    cdef int64_t t, t0, t1, vid, p, r, n_frequent
    cdef int32_t* rare_counts
    cdef int32_t* touched
    cdef uint64_t* touched_words
    for f in range(F):
        s.q[f] = Q.sz[f * Q.n + qi]
        s.n_frequent[f] = 0
        s.m[f] = 0
        s.ntouch[f] = 0
    for f in range(F):
        if s.q[f] == 0:
            return False
    for f in range(F):
        rare_counts = s.rare_counts + f * X.n
        touched = s.touched + f * X.n
        touched_words = s.touched_words + f * X.nw
        t0 = Q.ip[f * (Q.n + 1) + qi]
        t1 = Q.ip[f * (Q.n + 1) + qi + 1]
        n_frequent = 0
        for t in range(t0, t1):
            vid = vocab_lookup(X.vocab, X.voff, f, Q.h[t])  # a code (token_codes)
            if vid < 0:
                continue
            s.m[f] += 1
            if vid < X.n_rows:
                s.rows[f * s.rowcap + n_frequent] = X.bits + vid * X.nw
                n_frequent += 1
                continue
            vid -= X.n_rows
            for p in range(X.rptr[vid], X.rptr[vid + 1]):
                r = X.rref[p]
                if rare_counts[r] == 0:
                    touched[s.ntouch[f]] = <int32_t>r
                    s.ntouch[f] += 1
                    touched_words[r >> 6] |= (<uint64_t>1) << (r & 63)
                rare_counts[r] += 1
        s.n_frequent[f] = <int>n_frequent
        s.n_planes[f] = bit_length(n_frequent)
        if s.m[f] == 0:
            return False
    return True


cdef void reset_query(const BIndex* X, Scratch* s) noexcept nogil:
    cdef int f
    cdef int64_t j, r
    for f in range(X.F):
        for j in range(s.ntouch[f]):
            r = s.touched[f * X.n + j]
            s.rare_counts[f * X.n + r] = 0
            s.touched_words[f * X.nw + (r >> 6)] = 0
        s.ntouch[f] = 0


cdef inline double block_bound(const BIndex* X, const Scratch* s, int64_t blk, MeasureArg mk) noexcept nogil:
    """Largest field-0 length bound 2*min(m, z)/(q + z) over the sizes of block blk.

    m is the number of query tokens the references know; the bound peaks at
    z = m, so it is read at the block's size nearest m.  -1 past either end.
    """
    cdef int64_t i0 = blk * BS_BLOCK * 64, i1, zlo, zhi, z
    if blk < 0 or i0 >= X.n:
        return -1.0
    i1 = i0 + BS_BLOCK * 64
    if i1 > X.n:
        i1 = X.n
    zlo = X.zs[i0]
    zhi = X.zs[i1 - 1]
    z = s.m[0]
    if z < zlo:
        z = zlo
    if z > zhi:
        z = zhi
    return rest_score(measure_of(mk), s.q[0], s.m[0], z)


cdef void scan_block(const BIndex* X, int64_t blk, int k, double floor_score,
                     int64_t self_r, Scratch* s, Kernels kern, MeasureArg mk) noexcept nogil:
    """Count, compare and score the references of one block (see module doc)."""
    cdef int F = X.F, f, j
    cdef int64_t w0 = blk * BS_BLOCK, w, need, min_need = -1, epoch
    cdef uint64_t any_touch = 0, any_cand = 0
    cdef uint64_t* P
    cdef const uint64_t* twf
    # field 0: one need for the block, from its smallest size (references are
    # sorted by field-0 size, so that is its first one)
    twf = s.touched_words
    min_need = need_for(s, 0, X.zs[w0 * 64], mk)
    if min_need > s.m[0]:
        return  # no reference of this block reaches thr in field 0
    for j in range(BS_BLOCK):
        any_touch |= twf[w0 + j]
        s.need[j] = min_need
    if min_need > s.n_frequent[0] and any_touch == 0:
        return
    s.n_blocks += 1
    P = s.P
    if s.n_frequent[0] > 0:
        kern.add_rows(s.rows, s.n_frequent[0], w0, s.n_planes[0], P)
        kern.count_ge(P, s.n_planes[0], s.need, s.cand)
    else:
        for j in range(BS_BLOCK):
            s.cand[j] = 0
    for j in range(BS_BLOCK):
        s.cand[j] |= twf[w0 + j]
        any_cand |= s.cand[j]
    if self_r >= 0 and (self_r >> 6) - w0 >= 0 and (self_r >> 6) - w0 < BS_BLOCK:
        s.cand[(self_r >> 6) - w0] &= ~((<uint64_t>1) << (self_r & 63))
    if s.seed_r >= 0 and (s.seed_r >> 6) - w0 >= 0 and (s.seed_r >> 6) - w0 < BS_BLOCK:
        s.cand[(s.seed_r >> 6) - w0] &= ~((<uint64_t>1) << (s.seed_r & 63))
    # the other fields filter the survivors
    for f in range(1, F):
        if any_cand == 0:
            return
        if s.n_frequent[f] > 0:
            kern.add_rows(s.rows + f * s.rowcap, s.n_frequent[f], w0, s.n_planes[f],
                          s.P + f * BS_MAX_PLANES * BS_BLOCK)
        any_cand = refilter(X, s, f, w0, kern, mk)
    if any_cand == 0:
        return
    if s.n_frequent[0] > 0 and s.pairs == NULL:
        # best first: the survivors with the block's largest field-0 count are
        # scored before the others, which raises thr and thins the rest
        epoch = s.epoch
        for j in range(BS_BLOCK):
            s.ge[j] = s.cand[j]
        bs_narrow_to_max(s.P, s.n_planes[0], s.ge)
        for j in range(BS_BLOCK):
            s.cand[j] &= ~s.ge[j]
            score_bits(X, s, w0, j, s.ge[j], k, floor_score, mk)
        if s.epoch != epoch:
            for f in range(F):
                if not refilter(X, s, f, w0, kern, mk):
                    return
    for j in range(BS_BLOCK):
        score_bits(X, s, w0, j, s.cand[j], k, floor_score, mk)


cdef inline void score_bits(const BIndex* X, Scratch* s, int64_t w0, int j, uint64_t m, int k,
                            double floor_score, MeasureArg mk) noexcept nogil:
    """Score the references of bits m of word w0 + j exactly: planes + rare counts."""
    cdef int f, x
    cdef int64_t r, c
    cdef double sc, d
    while m:
        x = bs_ctz(m)
        m &= m - 1
        r = (w0 + j) * 64 + x
        s.n_cand += 1
        sc = 2.0
        for f in range(X.F):
            c = 0
            if (s.touched_words[f * X.nw + w0 + j] >> x) & 1:
                c = s.rare_counts[f * X.n + r]  # read only where a rare token touched r
            if s.n_frequent[f] > 0:
                c += bs_count_at(s.P + f * BS_MAX_PLANES * BS_BLOCK, s.n_planes[f], j, x)
            d = score(measure_of(mk), c, s.q[f], X.zs[f * X.n + r])
            if d < sc:
                sc = d
        if sc > 0.0 and sc >= s.thr:
            if s.pairs != NULL:
                # a join: thr is the fixed threshold
                if ((not s.upper or X.order[r] > s.qrow)
                        and push_pair(s.pairs, s.qrow, X.order[r], sc) != 0):
                    s.pairs.failed = 1
            else:
                topk_insert(s.top.ks, s.top.ki, &s.top.nk, k, sc, X.order[r])
                update_threshold(s, k, floor_score)


cdef void score_one(const BIndex* X, Scratch* s, int64_t r, int k,
                    double floor_score, MeasureArg mk) noexcept nogil:
    """Score renumbered reference r exactly from the query's rows and rare counts."""
    cdef int f, t
    cdef int64_t c
    cdef double sc = 2.0, d
    cdef const uint64_t* row
    for f in range(X.F):
        c = s.rare_counts[f * X.n + r]
        for t in range(s.n_frequent[f]):
            row = s.rows[f * s.rowcap + t]
            c += (row[r >> 6] >> (r & 63)) & 1
        d = score(measure_of(mk), c, s.q[f], X.zs[f * X.n + r])
        if d < sc:
            sc = d
    s.n_cand += 1
    if sc > 0.0 and sc >= s.thr:
        topk_insert(s.top.ks, s.top.ki, &s.top.nk, k, sc, X.order[r])
        update_threshold(s, k, floor_score)


cdef inline bint seed_kept(const BIndex* X, const Scratch* s) noexcept nogil:
    """Whether the seed reference is among the current top-k."""
    cdef int e
    if s.seed_r < 0:
        return False
    for e in range(s.top.nk):
        if s.top.ki[e] == X.order[s.seed_r]:
            return True
    return False


cdef bint refilter(const BIndex* X, Scratch* s, int f, int64_t w0, Kernels kern, MeasureArg mk) noexcept nogil:
    """Drop the candidates of block w0 that field f's count rules out under the new thr.

    The field's planes are those of this block.  False when no candidate is left.
    """
    cdef int j
    cdef int64_t need
    cdef uint64_t any_cand = 0
    cdef const uint64_t* twf = s.touched_words + f * X.nw
    for j in range(BS_BLOCK):
        need = IMPOSSIBLE
        if s.cand[j] != 0:
            need = need_for(s, f, X.wzmin[f * X.nw + w0 + j], mk)
            if need > s.m[f]:
                need = IMPOSSIBLE
        s.need[j] = need
    if s.n_frequent[f] > 0:
        kern.count_ge(s.P + f * BS_MAX_PLANES * BS_BLOCK, s.n_planes[f], s.need, s.ge)
    else:
        for j in range(BS_BLOCK):
            s.ge[j] = 0
    for j in range(BS_BLOCK):
        if s.need[j] == IMPOSSIBLE:
            s.cand[j] = 0
        else:
            s.cand[j] &= s.ge[j] | twf[w0 + j]
        any_cand |= s.cand[j]
    return any_cand != 0


cdef void search_one(const Coll* Q, int64_t qi, const BIndex* X, int k, double floor_score,
                     bint exclude, Scratch* s, Kernels kern, MeasureArg mk) noexcept nogil:
    """Top-k of one query into s.top.ks / s.top.ki (s.top.nk entries)."""
    cdef int64_t nblk = X.nw // BS_BLOCK, up, down, lo, hi, mid, self_r = -1
    cdef double bu, bd
    s.top.nk = 0
    s.epoch += 1
    s.thr = floor_score
    s.seed_r = -1
    if prepare_query(Q, qi, X, s):
        if exclude:
            self_r = X.rank[qi]
        if s.top.prev_q == qi - 1 and s.top.prev_best >= 0 and s.top.prev_best + 1 < X.n:
            # a hint: consecutive queries are often consecutive samples of one
            # dialogue, whose best matches are consecutive references too;
            # scoring that reference first only raises thr early (it is then
            # left out of the scan, so it is never counted twice)
            s.seed_r = X.rank[s.top.prev_best + 1]
            if s.seed_r == self_r:
                s.seed_r = -1
            else:
                score_one(X, s, s.seed_r, k, floor_score, mk)
        # the first reference whose field-0 size is >= m: the bound peaks there
        lo = 0
        hi = X.n
        while lo < hi:
            mid = (lo + hi) >> 1
            if X.zs[mid] < s.m[0]:
                lo = mid + 1
            else:
                hi = mid
        up = lo // (BS_BLOCK * 64)
        if up >= nblk:
            up = nblk - 1
        down = up - 1
        bu = block_bound(X, s, up, mk)
        bd = block_bound(X, s, down, mk)
        while True:
            if bu <= 0.0 or bu < s.thr:
                up = nblk
                bu = -1.0
            if bd <= 0.0 or bd < s.thr:
                down = -1
                bd = -1.0
            if bu < 0.0 and bd < 0.0:
                break
            if (s.top.nk == k and s.top.ks[k - 1] >= 1.0 and one_means_identical(measure_of(mk))
                    and not seed_kept(X, s)):
                # k identical references found by the scan: an equal one has
                # the same sizes in every field, so it lies in the run being
                # scanned upwards (renumbered by original index within equal
                # sizes): any later one has a higher index.  (Not so for the
                # seed, which was scored out of order.)
                break
            if bu >= bd:
                scan_block(X, up, k, floor_score, self_r, s, kern, mk)
                up += 1
                bu = block_bound(X, s, up, mk)
            else:
                scan_block(X, down, k, floor_score, self_r, s, kern, mk)
                down -= 1
                bd = block_bound(X, s, down, mk)
    reset_query(X, s)


cdef void join_one(const Coll* Q, int64_t qi, const BIndex* X, double threshold, bint upper,
                   Scratch* s, Kernels kern, MeasureArg mk, PairBuf* pairs) noexcept nogil:
    """Every reference whose score with query qi is >= threshold, pushed to pairs
    (``upper``: only references whose original index is above the query's row id).

    The blocks are those of the top-k scan, every one whose length bound
    reaches the threshold; thr stays the threshold, so each survivor is scored
    once and kept on its own float score.
    """
    cdef int64_t nblk = X.nw // BS_BLOCK, blk
    cdef double b
    s.top.nk = 0
    s.epoch += 1  # new query sizes: the cached need counts are stale
    s.thr = threshold
    s.seed_r = -1
    s.pairs = pairs
    s.qrow = row_id(Q, qi)
    s.upper = upper
    if not size_may_reach(Q, qi, X, threshold, mk):
        s.pairs = NULL
        return  # nothing looked up, nothing to reset
    if prepare_query(Q, qi, X, s):
        for blk in range(nblk):
            b = block_bound(X, s, blk, mk)
            if b > 0.0 and b >= threshold:
                scan_block(X, blk, 1, threshold, -1, s, kern, mk)
    s.pairs = NULL
    reset_query(X, s)


cdef inline bint size_may_reach(const Coll* Q, int64_t qi, const BIndex* X, double threshold,
                                MeasureArg mk) noexcept nogil:
    """Whether query qi's field-0 size lets it reach ``threshold`` with any reference.

    The bound of ``block_bound`` over the whole index with every query token
    shared (``m = q``): a long probe row against short indexed rows (or the
    reverse) is dropped before any of its tokens is looked up.  An empty
    query scores 0 with everything.
    """
    cdef int64_t q = Q.sz[qi], z
    if q == 0 or X.n == 0:
        return False
    z = q
    if z < X.zs[0]:
        z = X.zs[0]
    if z > X.zs[X.n - 1]:
        z = X.zs[X.n - 1]
    return rest_score(measure_of(mk), q, q, z) >= threshold


ctypedef struct BTask:
    # what one bit-sliced call does; the same for every query of the call
    const Coll* Q
    const BIndex* X
    int k
    double floor_score
    const double* floors     # per query row, raising floor_score (NULL: none; top-k only)
    bint exclude             # skip reference qi (all-vs-rest); a join: only j > i
    int measure              # the score (_bounds.Measure)
    int64_t max_row
    Kernels kern             # the block kernels of the call's CPU level
    bint join                # a threshold join (pairs) rather than a top-k


cdef void* bitslice_scratch_new(const void* ctx) noexcept nogil:
    """One thread's scratch for a call, or NULL when memory runs out (nothing leaks)."""
    cdef const BTask* T = <const BTask*>ctx
    cdef int F = T.X.F
    cdef int64_t nref = T.X.n if T.X.n > 0 else 1
    cdef int64_t nw = T.X.nw if T.X.nw > 0 else 1
    cdef int64_t rowcap = T.max_row if T.max_row > 0 else 1
    cdef Scratch* s = <Scratch*>calloc(1, sizeof(Scratch))
    if s == NULL:
        return NULL
    s.rowcap = rowcap
    s.rows = <const uint64_t**>malloc(F * rowcap * sizeof(uint64_t*))
    s.rare_counts = <int32_t*>calloc(F * nref, sizeof(int32_t))
    s.touched_words = <uint64_t*>calloc(F * nw, sizeof(uint64_t))
    s.touched = <int32_t*>malloc(F * nref * sizeof(int32_t))
    s.P = <uint64_t*>calloc(F * BS_MAX_PLANES * BS_BLOCK, sizeof(uint64_t))
    s.ncache = <int32_t*>malloc(F * NEED_CACHE * sizeof(int32_t))
    s.nstamp = <int64_t*>calloc(F * NEED_CACHE, sizeof(int64_t))
    s.top.ks = <double*>malloc(T.k * sizeof(double))
    s.top.ki = <int64_t*>malloc(T.k * sizeof(int64_t))
    s.top.prev_q = -2
    s.top.prev_best = -1
    if (s.rows == NULL or s.rare_counts == NULL or s.touched_words == NULL
            or s.touched == NULL or s.P == NULL or s.ncache == NULL
            or s.nstamp == NULL or s.top.ks == NULL or s.top.ki == NULL):
        bitslice_scratch_free(s)
        return NULL
    return s


cdef void bitslice_scratch_free(void* scratch) noexcept nogil:
    cdef Scratch* s = <Scratch*>scratch
    if s == NULL:
        return
    free(s.rows)
    free(s.rare_counts)
    free(s.touched_words)
    free(s.touched)
    free(s.P)
    free(s.ncache)
    free(s.nstamp)
    free(s.top.ks)
    free(s.top.ki)
    free(s)


cdef void bitslice_search_one(const void* ctx, int64_t qi, void* s,
                              PairBuf* pairs) noexcept nogil:
    cdef const BTask* T = <const BTask*>ctx
    # Dice runs a copy compiled for it alone (_bounds.MeasureArg)
    cdef DiceOnly dice = 0
    cdef AnyMeasure any_measure = T.measure
    cdef double floor = T.floor_score
    if T.floors != NULL and T.floors[qi] > floor:
        floor = T.floors[qi]
    if T.join:
        if T.measure == DICE:
            join_one(T.Q, qi, T.X, T.floor_score, T.exclude, <Scratch*>s, T.kern, dice, pairs)
        else:
            join_one(T.Q, qi, T.X, T.floor_score, T.exclude, <Scratch*>s, T.kern, any_measure,
                     pairs)
    elif T.measure == DICE:
        search_one(T.Q, qi, T.X, T.k, floor, T.exclude, <Scratch*>s, T.kern, dice)
    else:
        search_one(T.Q, qi, T.X, T.k, floor, T.exclude, <Scratch*>s, T.kern, any_measure)


cdef void bitslice_take_stats(void* scratch, int64_t* row) noexcept nogil:
    """Blocks counted, references scored."""
    cdef Scratch* s = <Scratch*>scratch
    if row != NULL:
        row[0] += s.n_blocks
        row[1] += s.n_cand
    s.n_blocks = 0
    s.n_cand = 0


# the bit-sliced kernel's side of the runner (_runner.run_queries)
cdef Hooks BITSLICE_HOOKS
BITSLICE_HOOKS.scratch_new = bitslice_scratch_new
BITSLICE_HOOKS.scratch_free = bitslice_scratch_free
BITSLICE_HOOKS.search_one = bitslice_search_one
BITSLICE_HOOKS.take_stats = bitslice_take_stats
BITSLICE_HOOKS.n_stats = 2
BITSLICE_HOOKS.chunk = 8
