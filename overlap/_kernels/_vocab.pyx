# cython: freethreading_compatible=True
"""The vocabulary: hashes numbered in first-seen order, their counts and tables.

``vocab_table`` numbers one field's hashes (on several threads, with the
result of one); ``compact_vocabulary`` rebuilds the tables the query side
reads (``vocab_lookup`` in ``_vocab.pxd``); ``count_key_order`` is the
vocabulary's scan order (rarest first).
"""

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange, parallel
from libc.stdint cimport uint64_t, int64_t, int32_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memmove

from overlap._kernels._hash cimport fmix64
from overlap._kernels._sort cimport counting_sort_sizes
from overlap._kernels._types cimport VocabSlot

cnp.import_array()

cdef enum:
    # hashes below which vocab_table numbers them on one thread
    PARALLEL_VOCAB_TOKENS = 65536
    # distinct hashes a vocabulary numbers: its ids are int32
    VOCAB_MAX_IDS = 2147483647


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
    most probes find a key already seen.  (vocab_add's loop, with the
    table's pointers kept in locals between insertions instead of a call a
    hash.)
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



def check_vocabulary(const uint64_t[::1] vocab, const int64_t[::1] voff, int64_t V, str who):
    """ValueError (its message starting with ``who``) unless every field's
    table of ``vocab``/``voff`` (compact_vocabulary) is a power of two of
    slots whose ids lie in [-1, V)."""
    cdef int64_t f, size
    for f in range(voff.shape[0] - 1):
        size = voff[f + 1] - voff[f]
        if voff[f] < 0 or size < 0 or (size & (size - 1)) != 0:
            raise ValueError(f"{who}: a vocabulary table is not a power of two of slots")
    ids = np.asarray(vocab).view(np.int64)[1::2]
    if ids.shape[0] and (ids.min() < -1 or ids.max() >= V):
        raise ValueError(f"{who}: a vocabulary id out of range")


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


cdef enum:
    # tokens below which restrict_rows runs on one thread
    PARALLEL_RESTRICT_TOKENS = 65536
    # row blocks per thread of a threaded restrict_rows
    RESTRICT_BLOCKS = 4


def restrict_rows(const int64_t[::1] indptr, const uint64_t[::1] hashes,
                  const uint64_t[::1] slots, int n_threads=1):
    """Every row's tokens that ``slots`` holds, as the table's ids, in their order.

    ``slots`` is one field's table of ``compact_vocabulary`` (uint64 pairs of
    key and id, a power of two of pairs, at most half full; id ``-1``: empty;
    the ids below 2**31 - 1).  Returns ``(indptr, ids, counts)``: row ``i``
    keeps ``ids[indptr[i]:indptr[i + 1]]`` (int32), the ids of its tokens
    that the table holds, in their order (a row that keeps none is empty),
    and ``counts[v]`` is how often id ``v`` was kept (int64, one per id up to
    the table's largest).

    With ``n_threads`` > 1 and at least PARALLEL_RESTRICT_TOKENS tokens,
    blocks of rows are restricted in parallel, each into its own part of the
    output, and the parts are then moved together: the result does not
    depend on ``n_threads``.  ValueError for an ``indptr`` that does not cover
    ``hashes`` or a table that is not a power of two of pairs.
    """
    cdef int64_t n = indptr.shape[0] - 1, nnz = hashes.shape[0], size = slots.shape[0] // 2
    cdef int64_t i, t, a, b, w, r0, r1, vid, V = 0
    cdef int c
    if n < 0 or indptr[0] != 0 or indptr[n] != nnz:
        raise ValueError("restrict_rows: indptr does not cover the hashes")
    for i in range(n):
        if indptr[i + 1] < indptr[i]:
            raise ValueError("restrict_rows: indptr is not sorted")
    if slots.shape[0] % 2 or size < 1 or (size & (size - 1)) != 0:
        raise ValueError("restrict_rows: the table is not a power of two of (key, id) pairs")
    for i in range(size):
        vid = <int64_t>slots[2 * i + 1]
        if vid < -1 or vid >= 2147483647:
            raise ValueError("restrict_rows: a table id out of range")
        if vid >= V:
            V = vid + 1
    if n_threads < 1:
        raise ValueError(f"restrict_rows: n_threads must be at least 1, got {n_threads}")
    cdef int P = n_threads * RESTRICT_BLOCKS if n_threads > 1 and nnz >= PARALLEL_RESTRICT_TOKENS else 1
    if P > n:
        P = max(1, <int>n)
    out_ptr = np.empty(n + 1, dtype=np.int64)
    kept = np.empty(nnz, dtype=np.int32)
    cut = np.empty(P + 1, dtype=np.int64)
    fill = np.zeros(P + 1, dtype=np.int64)  # kept tokens of every block
    # every block's count of each id
    per_block = np.zeros((P, V), dtype=np.int64)
    cdef int64_t[::1] op = out_ptr
    cdef int32_t[::1] kv = kept
    cdef int64_t[::1] cv = cut
    cdef int64_t[::1] fv = fill
    cdef int64_t[:, ::1] pb = per_block
    cdef int64_t voff[2]
    voff[0] = 0
    voff[1] = size
    cdef const VocabSlot* table = <const VocabSlot*>&slots[0]
    cdef const uint64_t* hp = &hashes[0] if nnz else NULL
    cdef int32_t* kp = &kv[0] if nnz else NULL
    with nogil:
        for c in range(P + 1):
            cv[c] = n * c // P
        op[0] = 0
        for c in prange(P, num_threads=n_threads if P > 1 else 1, schedule="dynamic",
                        chunksize=1):
            # the block's kept ids from its first input slot on (a block
            # writes only its own part: w never passes t)
            r0 = cv[c]
            r1 = cv[c + 1]
            w = indptr[r0]
            for i in range(r0, r1):
                for t in range(indptr[i], indptr[i + 1]):
                    # written always, kept by moving on (no branch to mispredict)
                    vid = vocab_lookup(table, voff, 0, hp[t])
                    kp[w] = <int32_t>vid
                    w = w + (vid >= 0)
                op[i + 1] = w - indptr[r0]  # kept so far in the block
            fv[c + 1] = w - indptr[r0]
            # the block's counts, apart from the lookups (which then overlap)
            for t in range(indptr[r0], w):
                pb[c, kp[t]] += 1
        # blocks moved together, in order (each moves left or stays)
        w = 0
        for c in range(P):
            b = fv[c + 1]
            a = indptr[cv[c]]
            if w != a and b:
                memmove(kp + w, kp + a, <size_t>b * sizeof(int32_t))
            for i in range(cv[c], cv[c + 1]):
                op[i + 1] += w
            w += b
        fv[P] = w
    return out_ptr, kept[:fill[P]], per_block.sum(axis=0)
