# The one vocabulary lookup of the query side: a field's open-addressing
# table of reference hashes (built by _vocab.compact_vocabulary).

from libc.stdint cimport uint64_t, int64_t

from overlap._kernels._hash cimport fmix64
from overlap._kernels._types cimport Index, VocabSlot

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
