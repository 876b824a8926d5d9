# The structs and constants both search kernels and their builders share.
#
# A kernel module cimports what it needs from here; the layout of every
# struct is part of the contract between the index builders (_postings,
# _vocab, _collection) and the query phases (_postings_search).

from libc.stdint cimport uint64_t, int64_t, uint32_t, int32_t, uint16_t, uint8_t

from overlap._kernels._limits cimport COUNT_BITS

cdef enum:
    # 64-bit words per token signature (256 bits: nearly collision-free on short rows)
    SIGW = 4

cdef enum:
    # Index.psuf holds suffix masses up to SUF_SAT - 1 as they are; SUF_SAT
    # stands for "SUF_SAT or more", read as the entry's size (the mass of
    # the whole reference in the field, never below its suffix mass)
    SUF_SAT = 65535

cdef enum:
    MODE_TOPK = 0
    MODE_JOIN = 1

cdef enum:
    # int64 slots per reference and field in Index.rrec: size, start, end, signature
    REC = 3 + SIGW

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
    const uint16_t* psuf     # and each one's reference mass from the token on (SUF_SAT: see there)
                             # (descending within a size)
    const int32_t* entry_refs  # their references alone (NULL until top_k needs them)
    bint has_sig             # psig is there (any entry at all)
    int sig_bits             # bits of that signature per field (64 // F)
    const uint32_t* pcnt     # posting counts (NULL for sets)
    const uint64_t* fps      # reference fingerprints, ascending
    const int64_t* fpi       # their reference ids (ascending within equal fps)
    int64_t nfp
    const Group* grp         # the size groups of the long postings



cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define overlap_prefetch(p) __builtin_prefetch(p)
    #else
    #define overlap_prefetch(p) ((void)0)
    #endif
    """
    # a hint to the CPU: the line at p will be read soon
    void overlap_prefetch(const void* p) noexcept nogil


cdef inline int64_t row_id(const Coll* C, int64_t i) noexcept nogil:
    """The id row i of C stands for in results (see Collection's ids)."""
    return C.id[i] if C.id != NULL else i


cdef inline uint16_t suffix_stored(int64_t e) noexcept nogil:
    """The Index.psuf value of suffix mass ``e`` (0 <= e): itself below SUF_SAT, else SUF_SAT."""
    return <uint16_t>(e if e < SUF_SAT else SUF_SAT)


cdef inline int64_t suffix_bound(uint16_t stored, int64_t size) noexcept nogil:
    """The suffix mass an Index.psuf value stands for, at most: the value itself,
    or the entry's ``size`` where it is SUF_SAT (see there)."""
    return stored if stored != SUF_SAT else size
