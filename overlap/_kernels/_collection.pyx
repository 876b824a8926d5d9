# cython: freethreading_compatible=True
"""Collections: the rows the kernels read, their renumbering by size,
fingerprints, per-reference records and the ratios of aligned rows."""

import threading

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdint cimport uint64_t, int64_t, uint32_t, uint8_t
from libc.string cimport memcpy

from overlap._kernels._checks cimport check_flat
from overlap._kernels cimport _limits
from overlap._kernels._hash cimport fmix64
from overlap._kernels._scoring cimport field_inter
from overlap._kernels._bounds cimport N_MEASURES, score
from overlap._kernels._signatures cimport row_signature
from overlap._kernels._sort cimport counting_sort_sizes
from overlap._kernels._types cimport Coll, REC

cnp.import_array()

#: Most fields a sample may have.
MAX_FIELDS = _limits.MAX_FIELDS
#: Most tokens one query row may hold, over all its fields.
MAX_QUERY_TOKENS = (1 << _limits.QUERY_TOKEN_BITS) - 1
#: Largest mass (size; the sum of counts for multisets) of one row.
MAX_ROW_MASS = (1 << _limits.COUNT_BITS) - 1

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
    tie = sk[1:] == sk[:n - 1]
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

def pair_ratios(Collection a, Collection b, int n_threads, int measure=0):
    """min over fields of the score (``_bounds.Measure``; 0: dice) of a[i] and b[i],
    for aligned rows."""
    cdef int64_t n = a.c.n, i
    if not 0 <= measure < N_MEASURES:
        raise ValueError(f"pair_ratios: measure {measure} is not a _bounds.Measure")
    if a.c.n != b.c.n or a.c.F != b.c.F:
        raise ValueError(f"pair_ratios: {a.c.n} rows of {a.c.F} field(s) against "
                         f"{b.c.n} rows of {b.c.F}")
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] ov = out
    cdef const Coll* A = &a.c
    cdef const Coll* B = &b.c
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=256):
            ov[i] = exact_score_aligned(measure, A, B, i)
    return out


cdef inline double exact_score_aligned(int m, const Coll* A, const Coll* B, int64_t i) noexcept nogil:
    cdef double s = 2.0, d
    cdef int f
    for f in range(A.F):
        d = score(m, field_inter(A, i, B, i, f), A.sz[f * A.n + i], B.sz[f * B.n + i])
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
