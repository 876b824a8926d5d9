# cython: freethreading_compatible=True
"""The postings of a reference collection: built, sorted and grouped by size.

Every posting entry of reference ``r`` for token ``t`` stores ``r``, its size
and its suffix mass (the mass of its tokens ranked at or after ``t``); a
posting is ordered by (size, suffix mass descending, reference) and long
postings get a directory of their size groups.  ReferenceIndex
(``_postings_search``) reads what is built here.
"""

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange, parallel
from libc.stdint cimport uint64_t, int64_t, uint32_t, int32_t, uint16_t, uint8_t
from libc.stdlib cimport malloc, free, qsort

from overlap._kernels._collection cimport Collection
from overlap._kernels._signatures cimport row_sig64
from overlap._kernels._sort cimport chunk_first_slots, counting_sort_sizes, sort_u64
from overlap._kernels._types cimport (
    Coll, Entry, Group, SUF_SAT, TokenInfo, overlap_prefetch, suffix_bound, suffix_stored,
)

cnp.import_array()

#: One posting entry (the Entry struct) and one size group (Group), as numpy sees them.
ENTRY_DTYPE = np.dtype([("ref", np.int32), ("size", np.int32)])
GROUP_DTYPE = np.dtype([("size", np.int32), ("top", np.int32), ("start", np.int64)])

if ENTRY_DTYPE.itemsize != sizeof(Entry) or GROUP_DTYPE.itemsize != sizeof(Group):
    raise ImportError("overlap._kernels._postings: the entry and group dtypes do not match their structs")

cdef enum:
    # postings at least this long are sorted one per grab (sort_postings)
    SORT_LONG_POSTING = 2048

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


cdef int fill_signatures(const Coll* C, const int32_t* refs, int64_t ref_stride, int64_t m,
                         uint64_t* out, int n_threads) except -1:
    """out[i] = row_sig64 of entry i's reference refs[i*ref_stride] (i < m);
    ValueError if one is out of range."""
    cdef int64_t n = C.n, i, r
    rows = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] rv = rows
    cdef int bad = 0
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=4096):
            rv[i] = row_sig64(C, i)
        for i in prange(m, num_threads=n_threads, schedule="dynamic", chunksize=65536):
            r = refs[i * ref_stride]
            if r < 0 or r >= n:
                bad += 1
            else:
                out[i] = rv[r]
    if bad:
        raise ValueError("overlap index: a posting names a reference out of range")
    return 0


def entry_signatures(Collection refs, const int32_t[::1] entry_refs, int n_threads):
    """The row signature (row_sig64) of every posting entry's reference."""
    out = np.empty(entry_refs.shape[0], dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    fill_signatures(&refs.c, &entry_refs[0] if entry_refs.shape[0] else NULL, 1,
                    entry_refs.shape[0],
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


def group_records(const int32_t[::1] gsize, const int64_t[::1] gstart, const uint16_t[::1] psuf):
    """The size groups (see size_groups) as Group records (GROUP_DTYPE): size, top, start.

    ``top`` is the group's largest suffix mass, its first entry's (SUF_SAT
    there: the group's size)."""
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
        gr[g].top = <int32_t>suffix_bound(psuf[gstart[g]], gsize[g])
    return out



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


cdef inline void row_suffixes(const int32_t* inv, const int64_t* rank, const uint32_t* cnt,
                              int64_t L, int32_t* suf, uint64_t* buf) noexcept nogil:
    """Suffix mass of every token of one row, capped at 2**31 - 1.

    A token's suffix mass is the mass (count, or 1 for sets) of the row's
    tokens ranked at or after it.  Unindexed tokens (id -1, see
    build_postings) count as ranked before all others.  The ranks of one row are distinct (its
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
            # an unindexed token (-1) ranks before every indexed one: it is in
            # no suffix of theirs (its own is not stored)
            rk[m] = <int32_t>rank[inv[m]] if inv[m] >= 0 else -1
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
    # complemented (rank + 1, position) keys: ascending is rank descending,
    # unindexed tokens (rank 0 here) last
    for m in range(L):
        buf[m] = ~((<uint64_t>(rank[inv[m]] + 1 if inv[m] >= 0 else 0) << 32) | <uint64_t>m)
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
                            int64_t* fill, Entry* ent, uint16_t* psuf,
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
        if inv[m] < -1 or inv[m] >= V:
            return 1
    if L > SHORT_ROW:
        if rbuf == NULL or sbuf == NULL or L > room:
            return 2
        sf = sbuf
    row_suffixes(inv, rank, cnt, L, sf, rbuf)
    for m in range(L):
        v = inv[m]
        if v < 0:
            continue  # not indexed
        u = fill[v]
        if u >= ptr[v + 1]:
            return 1
        fill[v] = u + 1
        ent[u].ref = r
        ent[u].size = z
        psuf[u] = suffix_stored(sf[m])
        if pcnt != NULL:
            pcnt[u] = cnt[m]
    return 0


cdef inline void sort_size_group(Entry* ent, uint16_t* psuf, uint32_t* pcnt, int64_t a,
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
            psuf[u] = <uint16_t>e
            ent[u].ref = <int32_t>(buf[i].key & <uint64_t>0xFFFFFFFFULL)
            if pcnt != NULL:
                pcnt[u] = buf[i].c
        return
    qsort(buf, n, sizeof(GroupEntry), cmp_group_entries)
    for i in range(n):
        psuf[a + i] = <uint16_t>(0x7FFFFFFF - <int64_t>(buf[i].key >> 32))
        ent[a + i].ref = <int32_t>(buf[i].key & <uint64_t>0xFFFFFFFFULL)
        if pcnt != NULL:
            pcnt[a + i] = buf[i].c


def build_postings(Collection refs, const int32_t[::1] inverse, const int64_t[::1] rank,
                   const int64_t[::1] ptr, int64_t max_row, int n_threads):
    """Fill the postings of every field in the scan order.

    ``inverse`` maps every stored token of ``refs`` to its vocabulary id (the
    fields' vocabularies numbered one after the other), or to -1: a token
    left out of the index (no posting holds it; an index that answers only
    its self-join leaves out the tokens one row holds, see
    ``overlap._index.postings_index``).  ``rank`` gives each id its place in
    its field's scan order and ``ptr`` (V + 1) the posting boundaries;
    ``max_row`` is the longest row.  Each posting is ordered by
    (size ascending, suffix mass descending, reference), where the suffix mass
    is the reference's mass from the entry's token on in rank order (token
    included; tokens left out rank before all others).  Returns
    ``(entries, psuf, pcnt, maxe)``: the Entry records
    (ENTRY_DTYPE: reference id and size filled, signatures left for
    ReferenceIndex), suffix masses (uint16: SUF_SAT stands for SUF_SAT or
    more, the entry's size then bounds it) and counts (bags only; empty for
    sets) of every entry, sizes and masses capped at 2**31 - 1, and every
    posting's largest suffix mass (from the sizes where saturated).  The
    result does not depend on ``n_threads``.
    """
    check_postings_input(&refs.c, inverse, rank, ptr, max_row)
    # the scatter's scratch (its per-chunk offsets: chunks x V) goes with its
    # frame, before the postings are sorted
    entries, psuf, pcnt = scatter_postings(refs, inverse, rank, ptr, max_row, n_threads)
    cdef uint16_t[::1] ps = psuf
    cdef uint32_t[::1] pc = pcnt
    cdef int64_t m = ps.shape[0]
    maxe = sort_postings(ptr, <Entry*>cnp.PyArray_DATA(entries) if m else NULL,
                         &ps[0] if m else NULL,
                         &pc[0] if pc.shape[0] and m else NULL, n_threads)
    return entries, psuf, pcnt, maxe


cdef scatter_postings(Collection refs, const int32_t[::1] inverse, const int64_t[::1] rank,
                      const int64_t[::1] ptr, int64_t max_row, int n_threads):
    """The entries of build_postings (checked input), every posting in
    (size, reference) order: ``(entries, psuf, pcnt)``."""
    cdef const Coll* C = &refs.c
    cdef int64_t n = C.n, N = <int64_t>C.F * n, V = ptr.shape[0] - 1
    cdef int64_t nnz = inverse.shape[0], m = ptr[V], v
    cdef bint bags = C.c != NULL
    entries = np.empty(m, dtype=ENTRY_DTYPE)
    psuf = np.empty(m, dtype=np.uint16)
    pcnt = np.empty(m if bags else 0, dtype=np.uint32)
    cdef uint16_t[::1] ps = psuf
    cdef uint32_t[::1] pc = pcnt
    cdef Entry* ent_p = <Entry*>cnp.PyArray_DATA(entries) if m else NULL
    cdef uint16_t* suf_p = &ps[0] if m else NULL
    cdef uint32_t* cnt_p = &pc[0] if bags and m else NULL
    # rows of each field in size order: the stable counting sort by token
    # below leaves every posting sorted by (size, reference)
    by_size = rows_by_size(C)
    cdef const int64_t[::1] order = by_size
    # several chunks per thread, so a thread that loses its core holds up little
    # (chunked by stored tokens, not rows: 13k dialogues of 60 tokens are
    # worth splitting; each chunk costs V offsets, so not when V is large)
    cdef int n_chunks = (SCATTER_CHUNKS * n_threads
                         if n_threads > 1 and nnz >= SCATTER_MIN_TOKENS
                         and SCATTER_CHUNKS * n_threads * V <= 4 * nnz else 1)
    # chunk c scatters the rows order[cut[c]:cut[c + 1]] from fill[c * V + v] on
    cuts = np.zeros(n_chunks + 1, dtype=np.int64)
    cdef int64_t[::1] cut = cuts
    fill = np.empty(n_chunks * V, dtype=np.int64)
    cdef int64_t[::1] fv = fill
    cdef int64_t* fp = &fv[0] if V else NULL
    cdef int status
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
            chunk_offsets(C, &inverse[0], &order[0], &ptr[0], V, nnz, n_chunks, n_threads,
                          &cut[0], fp)
        status = scatter_chunks(C, &inverse[0] if nnz else NULL, &rank[0] if V else NULL,
                                &order[0] if N else NULL, &ptr[0], V, n_chunks, n_threads,
                                max_row, &cut[0], fp, ent_p, suf_p, cnt_p)
    if status == 1:
        raise ValueError("overlap index: token tables that disagree")
    if status == 2:
        raise MemoryError("overlap index: out of memory")
    return entries, psuf, pcnt


cdef int check_postings_input(const Coll* C, const int32_t[::1] inverse,
                              const int64_t[::1] rank, const int64_t[::1] ptr,
                              int64_t max_row) except -1:
    """ValueError unless build_postings' tables agree with the collection and each other."""
    cdef int F = C.F
    cdef int64_t n = C.n, V = ptr.shape[0] - 1, nnz = inverse.shape[0], v, t, kept = 0
    cdef int64_t lim = 2147483647
    if nnz != (C.ip[F * (n + 1) - 1] if F else 0) or rank.shape[0] != V or (
            ptr.shape[0] < 1 or ptr[0] != 0):
        raise ValueError("overlap index: token tables of different lengths")
    # every slot of the postings is filled: as many indexed tokens as entries,
    # the postings end to end
    with nogil:
        for t in range(nnz):
            kept += inverse[t] >= 0
        for v in range(V):
            if ptr[v + 1] < ptr[v]:
                kept = -1
                break
    if kept < 0 or ptr[V] != kept:
        raise ValueError("overlap index: token tables of different lengths")
    # the suffix masses compare ranks as 32-bit integers (row_suffixes)
    if V > lim:
        raise ValueError(f"overlap index: at most {lim} distinct tokens are supported, got {V}")
    if max_row < 0 or max_row > lim:
        raise ValueError(f"overlap index: rows of at most {lim} tokens are supported")
    for v in range(V):
        if rank[v] < 0 or rank[v] >= V:
            raise ValueError("overlap index: a token's rank is out of range")
    return 0


cdef rows_by_size(const Coll* C):
    """Every field's rows by size there (stably), field after field: ``F * n`` int64."""
    cdef int F = C.F, f
    cdef int64_t n = C.n, N = <int64_t>F * n
    cdef const int64_t* sz = C.sz
    by_size = np.empty(N, dtype=np.int64)
    cdef int64_t[::1] bs = by_size
    sizes = np.asarray(<const int64_t[:N]>sz) if N else np.zeros(0, dtype=np.int64)
    for f in range(F):
        if not counting_sort_sizes(sz + f * n, n, &bs[f * n] if n else NULL):
            by_size[f * n:(f + 1) * n] = np.argsort(sizes[f * n:(f + 1) * n], kind="stable")
    return by_size


cdef void chunk_offsets(const Coll* C, const int32_t* inv, const int64_t* order,
                        const int64_t* ptr, int64_t V, int64_t nnz, int n_chunks,
                        int n_threads, int64_t* cut, int64_t* fp) noexcept nogil:
    """Cut the rows (``order``, field after field) into ``n_chunks`` chunks of
    about equal entries (``cut``) and give every chunk its first slot in every
    posting (``fp[c * V + v]``), counting each chunk's tokens on its own."""
    cdef int F = C.F, f, c
    cdef int64_t n = C.n, N = <int64_t>F * n, i, k, t, v, seen
    cdef const int64_t* ip = C.ip
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


cdef int scatter_chunks(const Coll* C, const int32_t* inv, const int64_t* rk,
                        const int64_t* order, const int64_t* ptr, int64_t V, int n_chunks,
                        int n_threads, int64_t max_row, const int64_t* cut, int64_t* fp,
                        Entry* ent_p, uint16_t* suf_p, uint32_t* cnt_p) noexcept nogil:
    """Every chunk's rows into their postings (scatter_row) from the chunk's own
    slots, on up to ``n_threads`` threads; 0, 1 when the tables disagree, 2 when
    memory runs out."""
    cdef int F = C.F, f, c, st, bad = 0, failed = 0
    cdef int64_t n = C.n, i, k, r, a, lim = 2147483647
    cdef const int64_t* ip = C.ip
    cdef const uint32_t* cnt = C.c
    cdef const int64_t* sz = C.sz
    cdef uint64_t* rbuf
    cdef int32_t* sbuf
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
    return 1 if bad else (2 if failed else 0)


cdef sort_postings(const int64_t[::1] ptr, Entry* ent, uint16_t* psuf, uint32_t* pcnt,
                   int n_threads):
    """Order every posting by (size ascending, suffix mass descending, reference).

    Postings arrive sorted by (size, reference): each size group not yet in
    order is reordered by suffix mass (see sort_size_group).  The search reads
    a size range with a binary search and, inside each size, stops at the
    first entry the positional filter rejects (see scan_posting).  Returns
    every posting's largest suffix mass (a saturated group counts its size).
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
                        if suffix_bound(<uint16_t>top, z) > best:
                            best = <int32_t>suffix_bound(<uint16_t>top, z)
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
