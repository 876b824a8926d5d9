# cython: freethreading_compatible=True
"""The eval n-gram table of a contamination check, and its probe by corpus rows.

An *n-gram* is a run of ``L`` consecutive token hashes ``x_0 .. x_{L-1}`` of
one row.  Its key is ``fmix64(P + L * LEN_MIX)`` where ``P`` is the
polynomial ``sum x_j * BASE**(L-1-j)`` modulo 2**64 (a fixed function of the
token hashes in order).  A corpus row computes prefix sums of that polynomial
once, so the key of every length at every position costs O(1).

The table holds every distinct eval n-gram once (its *uid*): open addressing
with linear probing on the key (a slot is the key and the uid side by side: one
cache line per probe), the n-gram itself kept as a reference into the eval
token stream.  A probe hit counts only when the corpus tokens equal the
eval n-gram's tokens, hash for hash: two n-grams whose keys collide are never
confused.  A bit array indexed by the key's top bits (32 bits an n-gram at
least, so at most 1 in 32 misses gets past it) rejects most corpus n-grams
before the table is touched.

Kernels only: the Python layer (``overlap.contamination``) validates.
"""

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange, parallel
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.stdint cimport uint64_t, int64_t, int32_t, uint8_t, INT64_MAX
from libc.string cimport memcmp

from overlap._kernels._hash cimport fmix64
from overlap._openmp cimport omp_get_thread_num

cnp.import_array()

cdef uint64_t BASE = <uint64_t>0x9e3779b97f4a7c15ULL      # odd: invertible mod 2**64
cdef uint64_t LEN_MIX = <uint64_t>0xc2b2ae3d27d4eb4fULL

#: "not found" in the first-row arrays
NOT_FOUND = INT64_MAX


cdef struct Hits:
    # one thread's first hit of every n-gram it met in one probe call
    int64_t* data      # (uid, row) pairs
    int64_t n
    int64_t cap
    uint8_t* seen      # a bit per uid: recorded already
    bint failed        # out of memory


cdef inline uint64_t key_of(uint64_t poly, int64_t length, uint64_t key_mask) noexcept nogil:
    return fmix64(poly + <uint64_t>length * LEN_MIX) & key_mask


def ngram_keys(const uint64_t[::1] tokens, const int64_t[::1] starts, int64_t length,
               uint64_t key_mask=<uint64_t>0xffffffffffffffffULL):
    """The keys of the n-grams ``tokens[s:s + length]`` for every ``s`` in ``starts``
    (for tests: the table's keys of the same n-grams)."""
    cdef Py_ssize_t i, j
    cdef uint64_t p
    out = np.empty(starts.shape[0], dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    for i in range(starts.shape[0]):
        if starts[i] < 0 or starts[i] + length > tokens.shape[0]:
            raise ValueError("ngram_keys: an n-gram outside the tokens")
        p = 0
        for j in range(length):
            p = p * BASE + tokens[starts[i] + j]
        ov[i] = key_of(p, length, key_mask)
    return out


cdef class NgramTable:
    """Distinct eval n-grams of the token stream ``tokens``, with their keys.

    Parameters
    ----------
    tokens : uint64 array
        Every eval token hash, rows laid end to end (kept, read-only).
    capacity : int
        Most n-grams :meth:`add` will be given in all (sizes the table).
    max_length : int
        Longest n-gram.
    key_mask : uint64, default all ones
        ANDed into every key: a narrow mask makes keys collide on purpose
        (tests of the verification); results never depend on it.
    """

    cdef readonly object tokens
    cdef const uint64_t[::1] tok
    cdef uint64_t[::1] slots          # (key, uid + 1) pairs; uid + 1 == 0: empty
    cdef uint64_t[::1] bits
    cdef int bits_shift
    cdef uint64_t mask
    cdef uint64_t key_mask
    cdef int64_t[::1] uid_start
    cdef int64_t[::1] uid_len
    cdef uint8_t[::1] has_len
    cdef uint64_t[::1] powers
    cdef readonly int64_t n_unique
    cdef readonly int64_t capacity
    cdef readonly int64_t max_length

    def __init__(self, tokens, int64_t capacity, int64_t max_length,
                 uint64_t key_mask=<uint64_t>0xffffffffffffffffULL):
        cdef int64_t size = 16, nbits = 1 << 12
        cdef Py_ssize_t k
        if capacity < 0 or max_length < 1:
            raise ValueError("NgramTable: capacity must be >= 0 and max_length >= 1")
        self.tokens = np.ascontiguousarray(tokens, dtype=np.uint64)
        self.tok = self.tokens
        while size < 2 * capacity:
            size <<= 1
        while nbits < 32 * capacity:
            nbits <<= 1
        self.mask = <uint64_t>(size - 1)
        self.slots = np.zeros(2 * size, dtype=np.uint64)
        self.bits = np.zeros(nbits // 64, dtype=np.uint64)
        self.bits_shift = 64
        while nbits > 1:
            nbits >>= 1
            self.bits_shift -= 1
        self.key_mask = key_mask
        self.uid_start = np.zeros(max(capacity, 1), dtype=np.int64)
        self.uid_len = np.zeros(max(capacity, 1), dtype=np.int64)
        self.has_len = np.zeros(max_length + 1, dtype=np.uint8)
        self.powers = np.ones(max_length + 1, dtype=np.uint64)
        for k in range(1, max_length + 1):
            self.powers[k] = self.powers[k - 1] * BASE
        self.n_unique = 0
        self.capacity = capacity
        self.max_length = max_length

    cdef inline bint bit_set(self, uint64_t key) noexcept nogil:
        cdef uint64_t b = key >> self.bits_shift
        return (self.bits[b >> 6] >> (b & 63)) & 1

    cdef inline int64_t find(self, uint64_t key, const uint64_t* t, int64_t length) noexcept nogil:
        """The uid of the n-gram ``t[:length]`` with this key, or -1."""
        cdef uint64_t idx = key & self.mask
        cdef int64_t u
        while True:
            u = <int64_t>self.slots[2 * idx + 1] - 1
            if u < 0:
                return -1
            if (self.slots[2 * idx] == key and self.uid_len[u] == length
                    and memcmp(&self.tok[self.uid_start[u]], t,
                               <size_t>length * sizeof(uint64_t)) == 0):
                return u
            idx = (idx + 1) & self.mask

    def add(self, const int64_t[::1] indptr, int64_t n):
        """Enter the ``n``-grams of every row ``tokens[indptr[i]:indptr[i + 1]]``.

        A row shorter than ``n`` gives the one n-gram of its whole stream, an
        empty row none.  Returns the uid of every n-gram, row after row, in
        position order (int64).
        """
        cdef Py_ssize_t rows = indptr.shape[0] - 1, r
        cdef int64_t total = 0, length, start, p, a, b, j, u, o = 0
        cdef uint64_t poly, key, idx, bit
        if n < 1 or n > self.max_length:
            raise ValueError(f"NgramTable.add: n must be in [1, {self.max_length}], got {n}")
        if rows < 0 or indptr[0] != 0 or indptr[rows] > self.tok.shape[0]:
            raise ValueError("NgramTable.add: indptr does not describe the tokens")
        for r in range(rows):
            length = indptr[r + 1] - indptr[r]
            if length < 0:
                raise ValueError("NgramTable.add: row bounds that fall")
            total += (length - n + 1) if length >= n else (1 if length > 0 else 0)
        if self.n_unique + total > self.capacity:
            raise ValueError(f"NgramTable.add: more than the capacity of {self.capacity} n-grams")
        out = np.empty(total, dtype=np.int64)
        cdef int64_t[::1] ov = out
        for r in range(rows):
            a = indptr[r]
            b = indptr[r + 1]
            if b == a:
                continue
            length = n if b - a >= n else b - a
            for start in range(a, b - length + 1):
                poly = 0
                for j in range(length):
                    poly = poly * BASE + self.tok[start + j]
                key = key_of(poly, length, self.key_mask)
                u = self.find(key, &self.tok[start], length)
                if u < 0:
                    u = self.n_unique
                    self.n_unique += 1
                    self.uid_start[u] = start
                    self.uid_len[u] = length
                    self.has_len[length] = 1
                    idx = key & self.mask
                    while self.slots[2 * idx + 1] != 0:
                        idx = (idx + 1) & self.mask
                    self.slots[2 * idx + 1] = <uint64_t>(u + 1)
                    self.slots[2 * idx] = key
                    bit = key >> self.bits_shift
                    self.bits[bit >> 6] |= (<uint64_t>1) << (bit & 63)
                ov[o] = u
                o += 1
        return out

    def lengths(self):
        """The n-gram lengths in the table, ascending (int64)."""
        return np.flatnonzero(np.asarray(self.has_len)).astype(np.int64)

    def probe(self, const int64_t[::1] indptr, const uint64_t[::1] tokens, int64_t first_row,
              int64_t[::1] found_at, int n_threads):
        """Lower ``found_at[u]`` to the first corpus row holding n-gram ``u``.

        Corpus row ``first_row + i`` is ``tokens[indptr[i]:indptr[i + 1]]``;
        every n-gram of every length in the table is looked up at every
        position of every row (never across rows).  ``found_at`` (one slot a
        uid, :data:`NOT_FOUND` where none) only ever decreases, so the result
        is the same for every thread count and every cut of the corpus into
        calls.

        Each thread takes one contiguous block of rows (static schedule), so
        it meets its rows in increasing order and its first hit of an n-gram
        is its lowest row: it records ``(uid, row)`` once per n-gram (a bit
        per uid says which it has), and skips n-grams found in earlier calls
        (their rows are lower).  The records are merged by minimum.  Memory:
        a bit per uid and thread, and the records.
        """
        cdef Py_ssize_t rows = indptr.shape[0] - 1, r
        cdef int64_t widest = 0, nu = self.n_unique, k, t, u, row
        if rows < 0 or indptr[0] < 0 or indptr[rows] > tokens.shape[0]:
            raise ValueError("NgramTable.probe: indptr does not describe the tokens")
        for r in range(rows):
            if indptr[r + 1] < indptr[r]:
                raise ValueError("NgramTable.probe: row bounds that fall")
            widest = max(widest, indptr[r + 1] - indptr[r])
        if found_at.shape[0] != nu:
            raise ValueError(f"NgramTable.probe: found_at must have {nu} slots, "
                             f"got {found_at.shape[0]}")
        if n_threads < 1:
            raise ValueError("NgramTable.probe: n_threads must be >= 1")
        if rows == 0 or nu == 0 or tokens.shape[0] == 0:
            return  # no row holds a token: nothing to find
        lens = self.lengths()
        cdef const int64_t[::1] lv = lens
        cdef int64_t nl = lens.shape[0]
        cdef Hits* hits = <Hits*>calloc(n_threads, sizeof(Hits))
        if hits == NULL:
            raise MemoryError("NgramTable.probe: no memory for the thread records")
        cdef uint64_t* pre
        cdef int tid
        cdef bint failed = False
        cdef const int64_t* found = &found_at[0]
        try:
            with nogil, parallel(num_threads=n_threads):
                tid = omp_get_thread_num()
                pre = <uint64_t*>malloc(<size_t>(widest + 1) * sizeof(uint64_t))
                hits[tid].seen = <uint8_t*>calloc(<size_t>(nu + 7) // 8, 1)
                hits[tid].cap = 256
                hits[tid].data = <int64_t*>malloc(2 * 256 * sizeof(int64_t))
                if pre == NULL or hits[tid].seen == NULL or hits[tid].data == NULL:
                    hits[tid].failed = True
                else:
                    for r in prange(rows, schedule="static"):
                        self.probe_row(&tokens[0] + indptr[r], indptr[r + 1] - indptr[r],
                                       first_row + r, pre, &lv[0], nl, found, &hits[tid])
                free(pre)
            for t in range(n_threads):
                failed = failed or hits[t].failed
            if failed:
                raise MemoryError(f"NgramTable.probe: no memory for a row of {widest} tokens "
                                  "or for the thread records")
            for t in range(n_threads):
                for k in range(hits[t].n):
                    u = hits[t].data[2 * k]
                    row = hits[t].data[2 * k + 1]
                    if row < found_at[u]:
                        found_at[u] = row
        finally:
            for t in range(n_threads):
                free(hits[t].seen)
                free(hits[t].data)
            free(hits)

    cdef void probe_row(self, const uint64_t* t, int64_t m, int64_t row, uint64_t* pre,
                        const int64_t* lens, int64_t nl, const int64_t* found,
                        Hits* hits) noexcept nogil:
        cdef int64_t i, li, length, u
        cdef uint64_t key, b, idx
        cdef const uint64_t* bits = &self.bits[0]
        cdef const uint64_t* slots = &self.slots[0]
        cdef const uint64_t* powers = &self.powers[0]
        cdef const uint64_t* tok = &self.tok[0]
        cdef const int64_t* ustart = &self.uid_start[0]
        cdef const int64_t* ulen = &self.uid_len[0]
        cdef uint64_t mask = self.mask, key_mask = self.key_mask
        cdef int shift = self.bits_shift
        pre[0] = 0
        for i in range(m):
            pre[i + 1] = pre[i] * BASE + t[i]
        for i in range(m):
            for li in range(nl):
                length = lens[li]
                if i + length > m:
                    break
                key = key_of(pre[i + length] - pre[i] * powers[length], length, key_mask)
                b = key >> shift
                if not ((bits[b >> 6] >> (b & 63)) & 1):
                    continue
                idx = key & mask
                while True:
                    u = <int64_t>slots[2 * idx + 1] - 1
                    if u < 0:
                        break
                    if (slots[2 * idx] == key and ulen[u] == length
                            and memcmp(tok + ustart[u], t + i,
                                       <size_t>length * sizeof(uint64_t)) == 0):
                        if found[u] == INT64_MAX and not (hits.seen[u >> 3] >> (u & 7)) & 1:
                            hits.seen[u >> 3] |= <uint8_t>(1 << (u & 7))
                            record(hits, u, row)
                        break
                    idx = (idx + 1) & mask


cdef inline void record(Hits* hits, int64_t u, int64_t row) noexcept nogil:
    """Append ``(u, row)`` to a thread's records (growing them); on failure mark it."""
    cdef int64_t* grown
    if hits.failed:
        return
    if hits.n == hits.cap:
        grown = <int64_t*>realloc(hits.data, <size_t>(2 * hits.cap) * 2 * sizeof(int64_t))
        if grown == NULL:
            hits.failed = True
            return
        hits.data = grown
        hits.cap *= 2
    hits.data[2 * hits.n] = u
    hits.data[2 * hits.n + 1] = row
    hits.n += 1
