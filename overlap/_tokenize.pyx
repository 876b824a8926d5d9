# cython: freethreading_compatible=True
"""Text and id sequences to sorted hashed token rows (kernels only).

The Python layer (``overlap.tokensets``) validates and lower-cases; this module
scans the strings' code points without the GIL, hashes tokens and n-grams, and
sorts and de-duplicates every row.
"""

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange, parallel
from libc.stdlib cimport malloc, free
from libc.stdint cimport uint64_t, int64_t, int32_t, uint32_t, uint8_t, uintptr_t
from libc.string cimport memcpy
from cpython.unicode cimport PyUnicode_DecodeUTF8

from overlap._kernels._hash cimport (
    seed_basis, fnv_byte, fnv_codepoint, finish_token, hash_id, ngram_step,
)
from overlap._kernels._sort cimport sort_hashes
from overlap._kernels._cpu cimport current_level, CPU_LEVEL_AVX512

cdef extern from "_ascii_simd.h" nogil:
    enum:
        ASCII_SIMD_MIN_ROW
    const int64_t ASCII_SIMD_MAX_ROW
    int ascii_simd_supported() noexcept
    const uint64_t ASCII_RUN_FLAG
    const uint64_t ASCII_RUN_LENGTH
    int64_t ascii_bounds_avx512(const uint8_t* p, int64_t n, int whitespace, uint64_t* tok,
                                int* flagged) noexcept
    void ascii_hash_avx512(const uint8_t* p, int64_t n, const uint64_t* tok, int64_t nt,
                           uint64_t basis, uint64_t* out) noexcept

cnp.import_array()

cdef extern from "Python.h":
    void* PyUnicode_DATA(object o)
    int PyUnicode_KIND(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    Py_UCS4 PyUnicode_READ(int kind, const void* data, Py_ssize_t index) nogil
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch) nogil
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch) nogil
    Py_UCS4 Py_UNICODE_TOLOWER(Py_UCS4 ch) nogil

# Tokenizer modes; keep in sync with overlap/tokensets.py.
cdef enum:
    MODE_WORDPUNCT = 0
    MODE_WHITESPACE = 1
    MODE_CHAR = 2
    MODE_WHOLE = 3
    MODE_INTL = 4

#: Code point ranges (inclusive) whose word characters are one token each in the
#: ``intl`` preset: kana, CJK ideographs and Hangul syllables.
INTL_RANGES = (
    (0x3040, 0x309F),    # Hiragana
    (0x30A0, 0x30FF),    # Katakana
    (0x31F0, 0x31FF),    # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),    # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),    # CJK Unified Ideographs
    (0xAC00, 0xD7AF),    # Hangul Syllables
    (0xF900, 0xFAFF),    # CJK Compatibility Ideographs
    (0xFF66, 0xFF9F),    # halfwidth Katakana
    (0x1AFF0, 0x1B16F),  # Kana Extended-B, Kana Supplement, Kana Extended-A, Small Kana Extension
    (0x20000, 0x3FFFF),  # planes 2 and 3: CJK Unified Ideographs Extensions B-J and
                         # CJK Compatibility Ideographs Supplement
)

# string.punctuation: the reference drops every token that is a substring of it.
cdef const char* PUNCT = b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
cdef int PUNCT_LEN = 32


cdef inline bint is_word(Py_UCS4 c) noexcept nogil:
    # Python's `re` \w on str patterns: alphanumeric (str.isalnum) or '_'.
    if c < 128:
        return (c >= 97 and c <= 122) or (c >= 48 and c <= 57) or c == 95 or (c >= 65 and c <= 90)
    return Py_UNICODE_ISALNUM(c)


cdef inline bint is_single(Py_UCS4 c) noexcept nogil:
    # `intl`: code points that are one token each when they are word characters.
    # The same ranges as INTL_RANGES below (a test checks every code point).
    if c < 0x3040:
        return False
    if c < 0x3100:                                  # Hiragana, Katakana
        return True
    if c < 0x31F0:
        return False
    if c < 0x3200:                                  # Katakana Phonetic Extensions
        return True
    if c < 0x3400:
        return False
    if c < 0x4DC0:                                  # CJK Unified Ideographs Ext. A
        return True
    if c < 0x4E00:
        return False
    if c < 0xA000:                                  # CJK Unified Ideographs
        return True
    if c < 0xAC00:
        return False
    if c < 0xD7B0:                                  # Hangul Syllables
        return True
    if c < 0xF900:
        return False
    if c < 0xFB00:                                  # CJK Compatibility Ideographs
        return True
    if c < 0xFF66:
        return False
    if c < 0xFFA0:                                  # halfwidth Katakana
        return True
    if c < 0x1AFF0:
        return False
    if c < 0x1B170:                                 # Kana Ext.-B, Supplement, Ext.-A, Small
        return True
    if c < 0x20000:
        return False
    return c < 0x40000                              # Ideographic planes 2 and 3


cdef inline bint is_space(Py_UCS4 c) noexcept nogil:
    if c < 128:
        return c == 32 or (c >= 9 and c <= 13) or (c >= 28 and c <= 31)
    return Py_UNICODE_ISSPACE(c)


cdef inline bint in_punctuation(int kind, const void* data, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Is text[a:b] a substring of string.punctuation?"""
    cdef Py_ssize_t n = b - a, s, k
    cdef Py_UCS4 c
    if n > PUNCT_LEN:
        return False
    c = PyUnicode_READ(kind, data, a)
    if c >= 128:
        return False
    for s in range(PUNCT_LEN - n + 1):
        if <Py_UCS4>PUNCT[s] != c:
            continue
        k = 1
        while k < n and <Py_UCS4>PUNCT[s + k] == PyUnicode_READ(kind, data, a + k):
            k += 1
        if k == n:
            return True
    return False


cdef inline uint64_t hash_span(int kind, const void* data, Py_ssize_t a, Py_ssize_t b,
                               uint64_t basis) noexcept nogil:
    cdef uint64_t h = basis, nbytes = 0
    cdef Py_UCS4 c
    cdef Py_ssize_t i
    for i in range(a, b):
        c = PyUnicode_READ(kind, data, i)
        h = fnv_codepoint(h, c)
        nbytes += 1 if c < 0x80 else (2 if c < 0x800 else (3 if c < 0x10000 else 4))
    return finish_token(h, nbytes)


cdef int64_t scan_one(int kind, const void* data, Py_ssize_t n, int mode,
                      uint64_t basis, uint64_t* out) noexcept nogil:
    """Write the token hashes of one string to ``out``; return how many."""
    cdef Py_ssize_t i = 0, start
    cdef int64_t m = 0
    cdef Py_UCS4 c
    if mode == MODE_WHOLE:
        out[0] = hash_span(kind, data, 0, n, basis)
        return 1
    while i < n:
        c = PyUnicode_READ(kind, data, i)
        if is_space(c):
            i += 1
            continue
        start = i
        i += 1
        if mode == MODE_CHAR:
            pass
        elif mode == MODE_WHITESPACE:
            while i < n and not is_space(PyUnicode_READ(kind, data, i)):
                i += 1
        elif is_word(c):
            if mode == MODE_INTL:
                if not is_single(c):
                    while i < n:
                        c = PyUnicode_READ(kind, data, i)
                        if not is_word(c) or is_single(c):
                            break
                        i += 1
            else:
                while i < n and is_word(PyUnicode_READ(kind, data, i)):
                    i += 1
        else:
            while i < n:
                c = PyUnicode_READ(kind, data, i)
                if is_word(c) or is_space(c):
                    break
                i += 1
        if (mode == MODE_WORDPUNCT or mode == MODE_INTL) and in_punctuation(kind, data, start, i):
            continue
        out[m] = hash_span(kind, data, start, i, basis)
        m += 1
    return m


def scan_texts(list texts, int mode, uint64_t seed, int n_threads):
    """Token hashes of every string, in order (no n-grams, no de-duplication).

    Returns ``(indptr, hashes)``: int64 (n+1) and uint64 arrays.
    """
    cdef Py_ssize_t n = len(texts), i
    cdef cnp.ndarray[uint64_t, ndim=1] ptrs = np.empty(n, dtype=np.uint64)
    cdef cnp.ndarray[int64_t, ndim=1] lens = np.empty(n, dtype=np.int64)
    cdef cnp.ndarray[int64_t, ndim=1] slot = np.zeros(n + 1, dtype=np.int64)
    cdef cnp.ndarray[uint8_t, ndim=1] kinds = np.empty(n, dtype=np.uint8)
    cdef object s
    for i in range(n):
        s = texts[i]
        if type(s) is not str:  # the scan reads code points: exact str only
            raise TypeError(f"texts[{i}] must be exactly str, got {type(s).__name__}")
        ptrs[i] = <uint64_t><uintptr_t>PyUnicode_DATA(s)
        kinds[i] = <uint8_t>PyUnicode_KIND(s)
        lens[i] = PyUnicode_GET_LENGTH(s)
        # a token has at least one code point; MODE_WHOLE writes exactly one hash
        slot[i + 1] = slot[i] + (1 if mode == MODE_WHOLE else lens[i])
    cdef cnp.ndarray[uint64_t, ndim=1] buf = np.empty(max(slot[n], 1), dtype=np.uint64)
    cdef cnp.ndarray[int64_t, ndim=1] counts = np.zeros(n, dtype=np.int64)
    cdef uint64_t basis = seed_basis(seed)
    cdef uint64_t[::1] bufv = buf
    cdef const uint64_t[::1] pv = ptrs
    cdef const int64_t[::1] lv = lens
    cdef const int64_t[::1] sv = slot
    cdef const uint8_t[::1] kv = kinds
    cdef int64_t[::1] cv = counts
    # a pointer, not &bufv[sv[i]]: an empty last string starts one past the end
    cdef uint64_t* bp = &bufv[0]
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=256):
            cv[i] = scan_one(kv[i], <const void*><uintptr_t>pv[i], lv[i], mode, basis,
                             bp + sv[i])
    return compact(slot, counts, buf, n_threads)


def compact(const int64_t[::1] slot, const int64_t[::1] counts, const uint64_t[::1] buf,
            int n_threads):
    """Pack rows that start at ``slot[i]`` and hold ``counts[i]`` items.

    ValueError unless every row lies inside ``buf``.
    """
    cdef Py_ssize_t n = counts.shape[0], i, k
    if slot.shape[0] < n:
        raise ValueError("compact: fewer slots than counts")
    for i in range(n):
        if slot[i] < 0 or counts[i] < 0 or counts[i] > buf.shape[0] - slot[i]:
            raise ValueError(f"compact: row {i} reaches outside the {buf.shape[0]} items")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    out = np.empty(indptr[n], dtype=np.uint64)
    cdef const int64_t[::1] ip = indptr
    cdef uint64_t[::1] ov = out
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=4096):
            for k in range(counts[i]):
                ov[ip[i] + k] = buf[slot[i] + k]
    return indptr, out


def hash_ids(const uint64_t[::1] ids, uint64_t seed, int n_threads):
    """Hash integer token ids (a bijection for a fixed seed)."""
    cdef Py_ssize_t n = ids.shape[0], i
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=65536):
            ov[i] = hash_id(ids[i], seed)
    return out


cdef int64_t finalize_row(uint64_t* h, int64_t n, int ngram, bint multiset,
                          uint32_t* cnt) noexcept nogil:
    """n-grams in place, then sort and de-duplicate; return the row length.

    With ``multiset`` the multiplicity of each kept key goes to ``cnt``.
    """
    cdef int64_t i, j, m
    cdef uint64_t g
    cdef uint32_t run, fresh
    if ngram > 1:
        if n < ngram:
            return 0
        for i in range(n - ngram + 1):
            g = h[i]
            for j in range(1, ngram):
                g = ngram_step(g, h[i + j])
            h[i] = g
        n = n - ngram + 1
    if n == 0:
        return 0
    sort_hashes(h, n)
    # every value is written to the slot after the last kept one, which moves on
    # only for a new value: no branch on the values (a row's duplicates are few
    # and where they fall is not predictable)
    m = 0
    if multiset:
        run = 1
        for i in range(1, n):
            fresh = h[i] != h[m]
            cnt[m] = run
            m += fresh
            h[m] = h[i]
            run = run * (1 - fresh) + 1
        cnt[m] = run
    else:
        for i in range(1, n):
            fresh = h[i] != h[m]
            m += fresh
            h[m] = h[i]
    return m + 1


def finalize_rows(const int64_t[::1] indptr, const uint64_t[::1] hashes, int ngram,
                  bint multiset, int n_threads):
    """Turn raw token-hash rows into sorted unique (or counted) n-gram rows.

    Returns ``(indptr, hashes, counts)``; ``counts`` is None unless ``multiset``.
    ValueError unless ``indptr`` bounds rows inside ``hashes`` and ``ngram`` >= 1.
    """
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, k
    if n < 0 or indptr[0] != 0 or indptr[n] > hashes.shape[0]:
        raise ValueError("finalize_rows: indptr does not describe the hashes")
    for i in range(n):
        if indptr[i + 1] < indptr[i]:
            raise ValueError("finalize_rows: row bounds that fall")
    if ngram < 1:
        raise ValueError(f"finalize_rows: ngram must be at least 1, got {ngram}")
    work = np.array(hashes, dtype=np.uint64, copy=True)
    cnt = np.ones(max(work.shape[0], 1), dtype=np.uint32)
    lengths = np.empty(n, dtype=np.int64)
    cdef uint64_t[::1] wv = work
    cdef uint32_t[::1] cv = cnt
    cdef int64_t[::1] lv = lengths
    cdef uint64_t* wp = &wv[0] if work.shape[0] else NULL
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=256):
            lv[i] = finalize_row(wp + indptr[i], indptr[i + 1] - indptr[i], ngram,
                                 multiset, &cv[0] + indptr[i])
    new_indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_indptr[1:])
    out = np.empty(new_indptr[n], dtype=np.uint64)
    out_cnt = np.empty(new_indptr[n] if multiset else 0, dtype=np.uint32)
    cdef const int64_t[::1] ip = new_indptr
    cdef uint64_t[::1] ov = out
    cdef uint32_t[::1] oc = out_cnt
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=4096):
            for k in range(lv[i]):
                ov[ip[i] + k] = wv[indptr[i] + k]
                if multiset:
                    oc[ip[i] + k] = cv[indptr[i] + k]
    return new_indptr, out, (out_cnt if multiset else None)


# ------------------------------------------------------------ UTF-8 buffers
# Rows of an Arrow string column: ``data[offsets[i]:offsets[i + 1]]`` holds the
# UTF-8 bytes of row i.  An ASCII row (every byte < 0x80) is lower-cased and
# tokenized on its bytes: for ASCII, str.lower maps exactly A-Z to a-z, one code
# point is one byte and its UTF-8 encoding is itself, so the scan below is
# scan_one on the lowered string step for step.  Other rows are decoded in C
# and each code point lower-cased with Py_UNICODE_TOLOWER, then scan_one reads
# them: str.lower maps each code point on its own (CPython's lower_ucs4) except
# U+03A3 (final sigma, by context) and U+0130 (two code points), and a row
# holding either goes to Python; that TOLOWER equals str.lower everywhere else
# is checked once per process against str.lower of every code point
# (lower_matches_str_lower), and without that every non-ASCII row goes to
# Python.  Python also decodes every row that is not valid UTF-8 (and raises).
# Where the CPU runs AVX-512 (F, BW, DQ, VL), the ASCII rows of 8 bytes or
# more in the wordpunct, intl and whitespace modes are scanned by the vector
# kernels of _ascii_simd.h (scan_ascii_simd: the same hashes; 1.5-2.5x as fast as
# scan_ascii, docs/streaming.md); the kernels' CPU level
# (overlap._kernels._cpu) switches them off, for tests.

ctypedef fused offset_t:
    int32_t
    int64_t

cdef enum:
    CLS_SPACE = 0
    CLS_WORD = 1
    CLS_OTHER = 2

# the class of every ASCII byte after lower-casing, as is_space/is_word say,
# every ASCII byte lower-cased (a load in the scan's inner loop, not a compare
# and an add), and the position of every ASCII byte in string.punctuation
# (-1: not in it)
cdef uint8_t ASCII_CLASS[128]
cdef uint8_t ASCII_LOWER[128]
cdef int ASCII_PUNCT_POS[128]


cdef void _init_ascii_tables() noexcept:
    cdef int c, s
    for c in range(128):
        if is_space(c):
            ASCII_CLASS[c] = CLS_SPACE
        elif is_word(c):
            ASCII_CLASS[c] = CLS_WORD
        else:
            ASCII_CLASS[c] = CLS_OTHER
        ASCII_PUNCT_POS[c] = -1
        ASCII_LOWER[c] = c + 32 if (c >= 65 and c <= 90) else c
    for s in range(PUNCT_LEN):
        ASCII_PUNCT_POS[<uint8_t>PUNCT[s]] = s


_init_ascii_tables()


cdef inline uint8_t lower_ascii(uint8_t c) noexcept nogil:
    return c + 32 if (c >= 65 and c <= 90) else c


cdef inline bint is_ascii(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    cdef uint64_t acc = 0, w
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&w, p + i, 8)
        acc |= w
        i += 8
    while i < n:
        acc |= p[i]
        i += 1
    return (acc & <uint64_t>0x8080808080808080ULL) == 0


cdef inline bint ascii_in_punctuation(const uint8_t* p, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Is lower(text[a:b]) a substring of string.punctuation? (ASCII bytes)"""
    cdef Py_ssize_t n = b - a, k
    cdef int s
    if n > PUNCT_LEN:
        return False
    s = ASCII_PUNCT_POS[lower_ascii(p[a])]  # its characters are distinct: one start
    if s < 0 or s + n > PUNCT_LEN:
        return False
    for k in range(1, n):
        if lower_ascii(p[a + k]) != <uint8_t>PUNCT[s + k]:
            return False
    return True


cdef inline uint64_t hash_ascii(const uint8_t* p, Py_ssize_t a, Py_ssize_t b,
                                uint64_t basis) noexcept nogil:
    cdef uint64_t h = basis
    cdef Py_ssize_t i
    for i in range(a, b):
        h = fnv_byte(h, lower_ascii(p[i]))
    return finish_token(h, <uint64_t>(b - a))


cdef int64_t scan_ascii(const uint8_t* p, Py_ssize_t n, int mode, uint64_t basis,
                        uint64_t* out) noexcept nogil:
    """scan_one of the lower-cased ASCII bytes ``p[:n]`` (every byte < 0x80).

    The same token boundaries (ASCII_CLASS is is_space/is_word) and the same
    hashes (one byte per code point, fed as it is read).
    """
    cdef Py_ssize_t i = 0, start
    cdef int64_t m = 0
    cdef uint8_t k, c, c0
    cdef uint64_t h
    if mode == MODE_WHOLE:
        out[0] = hash_ascii(p, 0, n, basis)
        return 1
    while i < n:
        c = p[i]
        k = ASCII_CLASS[c]
        if k == CLS_SPACE:
            i += 1
            continue
        start = i
        c0 = c
        i += 1
        h = fnv_byte(basis, ASCII_LOWER[c])
        if mode == MODE_CHAR:
            pass
        elif mode == MODE_WHITESPACE:
            while i < n:
                c = p[i]
                if ASCII_CLASS[c] == CLS_SPACE:
                    break
                h = fnv_byte(h, ASCII_LOWER[c])
                i += 1
        else:  # wordpunct, and intl (no ASCII code point is a single)
            while i < n:
                c = p[i]
                if ASCII_CLASS[c] != k:
                    break
                h = fnv_byte(h, ASCII_LOWER[c])
                i += 1
            if ASCII_PUNCT_POS[c0] >= 0 and ascii_in_punctuation(p, start, i):
                continue
        out[m] = finish_token(h, <uint64_t>(i - start))
        m += 1
    return m


cdef bint _ascii_simd_cpu = ascii_simd_supported()


cdef inline bint use_ascii_simd() noexcept nogil:
    """Whether a scan starting now sends ASCII rows to the AVX-512 kernels: the CPU
    runs them and the kernels' CPU level (``overlap._kernels._cpu``; tests lower
    it) is AVX-512."""
    return _ascii_simd_cpu and current_level() >= CPU_LEVEL_AVX512


def ascii_simd():
    """Whether the ASCII rows of the next scan go through the AVX-512 kernels
    (``_ascii_simd.h``; see use_ascii_simd)."""
    return bool(use_ascii_simd())


cdef int64_t scan_ascii_simd(const uint8_t* p, Py_ssize_t n, int mode, uint64_t basis,
                             uint64_t* out) noexcept nogil:
    """scan_ascii of ``p[:n]`` by the AVX-512 kernels, for ``mode`` wordpunct, intl
    or whitespace and ASCII_SIMD_MIN_ROW <= n < ASCII_SIMD_MAX_ROW; -1 when a byte
    is >= 0x80 (nothing else is checked first).  ``out`` has room for ``n``."""
    cdef int flagged = 0
    cdef int64_t m, t, k, s
    cdef uint64_t run
    m = ascii_bounds_avx512(p, n, mode == MODE_WHITESPACE, out, &flagged)
    if m <= 0:
        return m
    if flagged:  # scan_ascii's rule: a run that is a substring of string.punctuation goes
        k = 0
        for t in range(m):
            run = out[t]
            if run & ASCII_RUN_FLAG:
                s = <int64_t>(run >> 32)
                if ascii_in_punctuation(p, s, s + <int64_t>(run & ASCII_RUN_LENGTH)):
                    continue
            out[k] = run
            k += 1
        m = k
    ascii_hash_avx512(p, n, out, m, basis, out)
    return m


cdef inline int64_t scan_ascii_row(const uint8_t* p, Py_ssize_t n, int mode, uint64_t basis,
                                   uint64_t* out, bint simd) noexcept nogil:
    """The token hashes of the row ``p[:n]`` if it is ASCII (scan_ascii, or its
    AVX-512 kernels where ``simd`` and they take the row), else -1."""
    if (simd and n >= ASCII_SIMD_MIN_ROW and n < ASCII_SIMD_MAX_ROW
            and (mode == MODE_WORDPUNCT or mode == MODE_INTL or mode == MODE_WHITESPACE)):
        return scan_ascii_simd(p, n, mode, basis, out)
    if is_ascii(p, n):
        return scan_ascii(p, n, mode, basis, out)
    return -1


cdef int64_t decode_lower(const uint8_t* p, Py_ssize_t n, uint32_t* out) noexcept nogil:
    """The lower-cased code points of the UTF-8 bytes ``p[:n]``; -1 when they are not
    well-formed UTF-8 or hold U+0130 or U+03A3 (str.lower is not per code point there)."""
    cdef Py_ssize_t i = 0
    cdef int64_t m = 0
    cdef uint32_t c, b1, b2, b3
    while i < n:
        c = p[i]
        if c < 0x80:
            out[m] = lower_ascii(<uint8_t>c)
            m += 1
            i += 1
            continue
        if c < 0xC2:
            return -1
        if c < 0xE0:                    # C2..DF 80..BF
            if i + 1 >= n:
                return -1
            b1 = p[i + 1]
            if b1 < 0x80 or b1 > 0xBF:
                return -1
            c = ((c & 0x1F) << 6) | (b1 & 0x3F)
            i += 2
        elif c < 0xF0:                  # E0 A0..BF | E1..EC 80..BF | ED 80..9F | EE..EF 80..BF
            if i + 2 >= n:
                return -1
            b1 = p[i + 1]
            b2 = p[i + 2]
            if (b1 < (0xA0 if c == 0xE0 else 0x80) or b1 > (0x9F if c == 0xED else 0xBF)
                    or b2 < 0x80 or b2 > 0xBF):
                return -1
            c = ((c & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
            i += 3
        elif c < 0xF5:                  # F0 90..BF | F1..F3 80..BF | F4 80..8F, then 2 x 80..BF
            if i + 3 >= n:
                return -1
            b1 = p[i + 1]
            b2 = p[i + 2]
            b3 = p[i + 3]
            if (b1 < (0x90 if c == 0xF0 else 0x80) or b1 > (0x8F if c == 0xF4 else 0xBF)
                    or b2 < 0x80 or b2 > 0xBF or b3 < 0x80 or b3 > 0xBF):
                return -1
            c = ((c & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
            i += 4
        else:
            return -1
        if c == 0x130 or c == 0x3A3:
            return -1
        out[m] = Py_UNICODE_TOLOWER(c)
        m += 1
    return m


cdef int _lower_ok = -1  # -1: not checked yet
cdef int64_t WIDE_ROW_BYTES = 1 << 22
# scan_utf8 scans its rows in batches of about this many slots (one a byte of
# text): one scratch buffer, reused by every batch, so that a call touches (and
# the OS zeroes) about 8 MiB of fresh memory, not 8 bytes for every byte of text
# (that zeroing was a quarter of a stream scan's time)
cdef int64_t BATCH_SLOTS = 1 << 20


def batch_slots(int64_t slots=0):
    """scan_utf8's batch size in slots; ``slots`` > 0 sets it (tests use tiny
    batches to cross batch edges).  Returns the size before the call."""
    global BATCH_SLOTS
    cdef int64_t before = BATCH_SLOTS
    if slots > 0:
        BATCH_SLOTS = slots
    return before


def lower_matches_str_lower():
    """Is ``str.lower`` of every code point but U+03A3 what decode_lower writes?

    One ``str.lower`` of all of them in a row (context matters only for U+03A3,
    left out), compared with Py_UNICODE_TOLOWER, U+0130 with its two code points.
    Checked once per process; the answer is kept.
    """
    global _lower_ok
    if _lower_ok >= 0:
        return bool(_lower_ok)
    cps = np.arange(0x80, 0x110000, dtype=np.uint32)
    cps = cps[((cps < 0xD800) | (cps > 0xDFFF)) & (cps != 0x3A3)]
    text = cps.astype("<u4").tobytes().decode("utf-32-le")
    low = text.lower()
    cdef int kind = PyUnicode_KIND(low)
    cdef const void* data = PyUnicode_DATA(low)
    cdef Py_ssize_t nl = PyUnicode_GET_LENGTH(low), j = 0, i
    cdef const uint32_t[::1] cv = cps
    cdef uint32_t c
    cdef bint ok = True
    for i in range(cv.shape[0]):
        c = cv[i]
        if c == 0x130:
            if (j + 1 >= nl or PyUnicode_READ(kind, data, j) != 0x69
                    or PyUnicode_READ(kind, data, j + 1) != 0x307):
                ok = False
                break
            j += 2
        else:
            if j >= nl or PyUnicode_READ(kind, data, j) != Py_UNICODE_TOLOWER(c):
                ok = False
                break
            j += 1
    _lower_ok = 1 if (ok and j == nl) else 0
    return bool(_lower_ok)


def use_c_for_non_ascii(enabled=None):
    """Whether scan_utf8 tokenizes non-ASCII rows in C (after the check of
    lower_matches_str_lower); ``enabled=False`` sends them all to Python (for
    tests), ``True`` checks again.  Returns the setting in force."""
    global _lower_ok
    if enabled is not None:
        _lower_ok = 0 if not enabled else -1
    return lower_matches_str_lower()


def scan_utf8(const offset_t[::1] offsets, const uint8_t[::1] data, int mode, uint64_t seed,
              int ngram, bint multiset, int n_threads, str name="texts", Py_ssize_t base=0,
              bint ordered=False):
    """Token sets of the UTF-8 rows ``data[offsets[i]:offsets[i + 1]]`` (an Arrow
    string column's buffers; int32 or int64 offsets, not rebased).

    The same ``(indptr, hashes, counts)`` as ``finalize_rows`` of ``scan_texts``
    of the decoded, lower-cased rows.  With ``ordered`` the rows are not
    finalized: ``(indptr, hashes, None)`` holds every token hash in text order,
    as ``scan_texts`` of the decoded, lower-cased rows (``ngram`` and
    ``multiset`` are then ignored).  Rows are decoded, lower-cased and
    scanned without the GIL, except rows holding U+0130 or U+03A3 and rows that
    are not valid UTF-8, which are decoded, lower-cased with ``str.lower`` and
    scanned as str.  ValueError (naming ``name[base + i]``) for offsets outside
    ``data`` or a row that is not valid UTF-8.
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1, i, j, k, nd = data.shape[0]
    cdef int64_t lo, hi
    if n < 0:
        raise ValueError("scan_utf8: offsets must hold at least one element")
    if ngram < 1:
        raise ValueError(f"scan_utf8: ngram must be at least 1, got {ngram}")
    if ordered:
        multiset = False
    with nogil:
        k = -1
        if offsets[0] < 0 or offsets[n] > nd:
            k = 0
        else:
            for i in range(n):
                if offsets[i + 1] < offsets[i]:
                    k = i
                    break
    if k >= 0:
        raise ValueError(f"scan_utf8: the offsets of {name} do not describe its data "
                         f"(at row {base + k})")
    slot = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] sv = slot
    sv[0] = 0
    for i in range(n):
        sv[i + 1] = sv[i] + (1 if mode == MODE_WHOLE else offsets[i + 1] - offsets[i])
    cdef int64_t widest = 0, m, a, b, base_slot, cap, room
    for i in range(n):
        widest = max(widest, <int64_t>(offsets[i + 1] - offsets[i]))
    # a batch's slots (at least one row, at least a few dynamic chunks a thread)
    cap = max(BATCH_SLOTS, <int64_t>n_threads * (BATCH_SLOTS >> 3))
    cap = min(max(sv[n], 1), max(cap, 1 if mode == MODE_WHOLE else widest))
    buf = np.empty(cap, dtype=np.uint64)
    cnt = np.empty(cap if multiset else 1, dtype=np.uint32)
    lengths = np.empty(n, dtype=np.int64)
    # row i's rows in the compact output of the batches: coff[i]..coff[i] + lengths[i]
    coff_arr = np.zeros(n + 1, dtype=np.int64)
    cdef int64_t[::1] coff = coff_arr
    cdef uint64_t[::1] bv = buf
    cdef uint32_t[::1] cv = cnt
    cdef int64_t[::1] lv = lengths
    cdef uint64_t* bp = &bv[0]
    cdef uint32_t* cp = &cv[0]
    cdef uint64_t* pp
    cdef uint32_t* pc
    cdef uint64_t[::1] pv
    cdef uint32_t[::1] pcv
    cdef const uint8_t* dp = &data[0] if nd else NULL
    cdef uint64_t basis = seed_basis(seed)
    cdef uint32_t* scratch
    cdef bint wide_in_c = lower_matches_str_lower()
    cdef bint simd = use_ascii_simd()
    # non-ASCII rows longer than WIDE_ROW_BYTES go to Python: 16 MiB a thread at most
    widest = min(widest, WIDE_ROW_BYTES)
    # the packed rows of every batch, one after the other, in one array grown
    # as the batches come (its size projected from the slots: a rare regrowth
    # is a realloc), so no part of it is copied again
    comp = np.empty(0, dtype=np.uint64)
    comp_cnt = np.empty(0, dtype=np.uint32)
    a = 0
    while a < n:
        b = a + 1
        while b < n and sv[b + 1] - sv[a] <= cap:
            b += 1
        base_slot = sv[a]
        with nogil, parallel(num_threads=n_threads):
            # this thread's code points of one row (a row has at most as many as bytes)
            scratch = (<uint32_t*>malloc(<size_t>(widest + 1) * sizeof(uint32_t))
                       if wide_in_c else NULL)
            for i in prange(a, b, schedule="dynamic", chunksize=256):
                lo = offsets[i]
                hi = offsets[i + 1]
                m = scan_ascii_row(dp + lo, hi - lo, mode, basis, bp + (sv[i] - base_slot),
                                   simd)
                if m < 0:
                    if scratch != NULL and hi - lo <= widest:
                        m = decode_lower(dp + lo, hi - lo, scratch)
                    if m < 0:  # to Python
                        lv[i] = -1
                        continue
                    m = scan_one(4, scratch, m, mode, basis, bp + (sv[i] - base_slot))
                if ordered:
                    lv[i] = m
                else:
                    lv[i] = finalize_row(bp + (sv[i] - base_slot), m, ngram, multiset,
                                         (cp + (sv[i] - base_slot)) if multiset else cp)
            free(scratch)
        # the batch's rows, packed after the others (the rows that go to Python
        # hold nothing yet)
        for i in range(a, b):
            coff[i + 1] = coff[i] + (lv[i] if lv[i] > 0 else 0)
        if coff[b] > comp.shape[0]:
            room = coff[b] + coff[b] // 8 + 64
            if b < n:  # the rows to come, at this batch's tokens per slot
                room = room + <int64_t>(<double>coff[b] / <double>max(sv[b], 1)
                                      * <double>(sv[n] - sv[b]))
            if comp.shape[0] == 0:  # numpy's resize would zero the new slots first
                comp = np.empty(room, dtype=np.uint64)
                if multiset:
                    comp_cnt = np.empty(room, dtype=np.uint32)
            else:  # nothing else refers to them: realloc may move them
                comp.resize(room, refcheck=False)
                if multiset:
                    comp_cnt.resize(room, refcheck=False)
        if coff[b] > coff[a]:
            pv = comp
            pp = &pv[0]
            pc = NULL
            if multiset:
                pcv = comp_cnt
                pc = &pcv[0]
            with nogil:
                for i in prange(a, b, num_threads=n_threads, schedule="dynamic",
                                chunksize=4096):
                    if lv[i] > 0:
                        memcpy(pp + coff[i], bp + (sv[i] - base_slot),
                               <size_t>lv[i] * sizeof(uint64_t))
                        if multiset:
                            memcpy(pc + coff[i], cp + (sv[i] - base_slot),
                                   <size_t>lv[i] * sizeof(uint32_t))
            pv = pcv = None
        a = b
    del buf, cnt
    comp.resize(coff[n], refcheck=False)  # a shrink: the pages kept are not copied
    comp_cnt.resize(coff[n] if multiset else 0, refcheck=False)
    # the other rows: decoded and lower-cased by Python, then the str path's kernels
    wide = np.flatnonzero(lengths < 0)
    cdef Py_ssize_t nw = wide.shape[0]
    cdef const int64_t[::1] wv = wide
    w_indptr = w_hashes = w_counts = None
    cdef list lowered = []
    if nw == 0:  # the packed batches are the rows
        return coff_arr, comp, (comp_cnt if multiset else None)
    if nw:
        for j in range(nw):
            i = wv[j]
            lo = offsets[i]
            hi = offsets[i + 1]
            try:
                s = PyUnicode_DecodeUTF8(<const char*>(dp + lo), hi - lo, "strict")
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"{name}[{base + i}] is not valid UTF-8 ({exc.reason} at byte {exc.start})"
                ) from None
            lowered.append(s.lower())
        w_ip, w_raw = scan_texts(lowered, mode, seed, n_threads)
        del lowered
        if ordered:
            w_indptr, w_hashes = w_ip, w_raw
        else:
            w_indptr, w_hashes, w_counts = finalize_rows(w_ip, w_raw, ngram, multiset,
                                                         n_threads)
    row_lengths = lengths.copy()
    row_lengths[wide] = np.diff(w_indptr)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_lengths, out=indptr[1:])
    out = np.empty(indptr[n], dtype=np.uint64)
    out_cnt = np.empty(indptr[n] if multiset else 0, dtype=np.uint32)
    cdef const int64_t[::1] ip = indptr
    cdef uint64_t[::1] ov = out
    cdef uint32_t[::1] oc = out_cnt
    cdef const uint64_t[::1] kv = comp
    cdef const uint32_t[::1] kc = comp_cnt
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="dynamic", chunksize=4096):
            lo = lv[i]  # -1 for the rows that went through Python
            for k in range(lo):
                ov[ip[i] + k] = kv[coff[i] + k]
                if multiset:
                    oc[ip[i] + k] = kc[coff[i] + k]
    cdef const int64_t[::1] wip
    cdef const uint64_t[::1] wh
    cdef const uint32_t[::1] wc
    if nw:
        wip = w_indptr
        wh = w_hashes
        if multiset:
            wc = w_counts
        with nogil:
            for j in range(nw):
                i = wv[j]
                for k in range(wip[j + 1] - wip[j]):
                    ov[ip[i] + k] = wh[wip[j] + k]
                    if multiset:
                        oc[ip[i] + k] = wc[wip[j] + k]
    return indptr, out, (out_cnt if multiset else None)
