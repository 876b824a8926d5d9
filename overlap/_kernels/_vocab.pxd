# The one vocabulary lookup of the query side: a field's open-addressing
# table of reference hashes (built by _vocab.compact_vocabulary).

from libc.stdint cimport uint64_t, int64_t

from overlap._kernels._hash cimport fmix64
from overlap._kernels._types cimport VocabSlot

cdef inline int64_t vocab_lookup(const VocabSlot* vocab, const int64_t* voff, int f,
                                 uint64_t key) noexcept nogil:
    """Vocabulary id of ``key`` in field ``f``, or -1 when no reference holds it.

    ``vocab``/``voff``: the tables of compact_vocabulary (field f's slots are
    ``vocab[voff[f]:voff[f+1]]``); both kernels look their queries up here.
    """
    cdef int64_t a = voff[f], size = voff[f + 1] - a, slot
    cdef const VocabSlot* v
    if size == 0:
        return -1
    slot = <int64_t>(fmix64(key) & <uint64_t>(size - 1))
    while True:
        v = &vocab[a + slot]
        if v.vid < 0:
            return -1
        if v.key == key:
            return v.vid
        slot = (slot + 1) & (size - 1)
