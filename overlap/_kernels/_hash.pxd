# Stable 64-bit hashing: the tokenizer's hashes and the kernels' table probes.

from libc.stdint cimport uint64_t, uint32_t

# The fixed constants of the hash functions.  Changing any of them changes every
# stored hash, so they are part of the on-disk contract of TokenSets.
cdef enum:
    HASH_VERSION = 1

cdef inline uint64_t fmix64(uint64_t k) noexcept nogil:
    """MurmurHash3's 64-bit finalizer: a bijection with full avalanche."""
    k ^= k >> 33
    k *= <uint64_t>0xff51afd7ed558ccdULL
    k ^= k >> 33
    k *= <uint64_t>0xc4ceb9fe1a85ec53ULL
    k ^= k >> 33
    return k

cdef inline uint64_t seed_basis(uint64_t seed) noexcept nogil:
    # FNV-1a offset basis, moved by the seed.
    return <uint64_t>0xcbf29ce484222325ULL ^ fmix64(seed + <uint64_t>0x9e3779b97f4a7c15ULL)

cdef inline uint64_t fnv_byte(uint64_t h, uint64_t b) noexcept nogil:
    return (h ^ b) * <uint64_t>0x100000001b3ULL

cdef inline uint64_t fnv_codepoint(uint64_t h, uint32_t c) noexcept nogil:
    """Feed the UTF-8 bytes of one code point (surrogates encoded as 3 bytes)."""
    if c < 0x80:
        return fnv_byte(h, c)
    if c < 0x800:
        h = fnv_byte(h, 0xC0 | (c >> 6))
        return fnv_byte(h, 0x80 | (c & 0x3F))
    if c < 0x10000:
        h = fnv_byte(h, 0xE0 | (c >> 12))
        h = fnv_byte(h, 0x80 | ((c >> 6) & 0x3F))
        return fnv_byte(h, 0x80 | (c & 0x3F))
    h = fnv_byte(h, 0xF0 | (c >> 18))
    h = fnv_byte(h, 0x80 | ((c >> 12) & 0x3F))
    h = fnv_byte(h, 0x80 | ((c >> 6) & 0x3F))
    return fnv_byte(h, 0x80 | (c & 0x3F))

cdef inline uint64_t finish_token(uint64_t h, uint64_t nbytes) noexcept nogil:
    return fmix64(h ^ (nbytes * <uint64_t>0x9e3779b97f4a7c15ULL))

cdef inline uint64_t hash_id(uint64_t x, uint64_t seed) noexcept nogil:
    """Hash of an integer token id: a bijection of the id for a fixed seed."""
    return fmix64(x ^ fmix64(seed ^ <uint64_t>0x5bd1e9955bd1e995ULL))

cdef inline uint64_t ngram_step(uint64_t g, uint64_t h) noexcept nogil:
    """Fold the next token hash into an n-gram hash (order-sensitive)."""
    return fmix64((g * <uint64_t>0x9e3779b97f4a7c15ULL) ^ (h + <uint64_t>0x632be59bd9b4e019ULL))
