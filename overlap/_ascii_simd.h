/* The tokenizer's ASCII path with AVX-512 (overlap/_tokenize.pyx, scan_ascii_simd).
 *
 * scan_ascii reads a row byte by byte: a table lookup, a branch and an FNV-1a
 * step for every byte, and a mispredicted branch where most tokens end.  Here
 * the same tokens and hashes come from two vector passes over the row:
 *
 * ascii_bounds_avx512  classifies 64 bytes at a time (space, word, other:
 *     is_space / is_word of the ASCII code points) into bit masks and lists
 *     the runs, each as (first byte << 32 | flag << 31 | length).  A run of
 *     word bytes or of other bytes is a token (wordpunct, and intl: no ASCII
 *     code point is a single); a run of non-space bytes is one with
 *     `whitespace`.  In wordpunct, a run of one byte of string.punctuation is
 *     a substring of it and is not listed; a longer run that starts with such
 *     a byte is flagged (the caller tests it).  -1 as soon as a byte is
 *     >= 0x80 (the caller then takes the row's non-ASCII path).
 * ascii_hash_avx512  hashes eight listed tokens at a time, one per 64-bit
 *     lane: eight bytes of each are gathered, lower-cased and fed through
 *     FNV-1a (a lane stops at its token's length), then finish_token
 *     (overlap/_kernels/_hash.pxd): the same integers as hash_ascii.
 *
 * The caller drops the flagged runs that are substrings of string.punctuation
 * between the two (the rule of scan_ascii), and sends rows of under 8 bytes, rows of
 * 2^31 bytes or more, and the char and whole modes to scan_ascii.  The kernels
 * are compiled with __attribute__((target(...))) and run only where
 * ascii_simd_supported() (AVX-512 F, BW, DQ and VL); never -march=native.
 *
 * There is no AVX2 variant: the FNV-1a steps need a 64-bit multiply, which
 * AVX2 builds from three 32-bit ones, and a prototype's four-lane hashing
 * was slower than scanning byte by byte (0.77 against 0.68 s over the 258 MB
 * of the stream bench's text; SSE2 bounds with scalar hashing: 0.63 s).
 */
#ifndef OVERLAP_ASCII_SIMD_H
#define OVERLAP_ASCII_SIMD_H

#include <stdint.h>

#include "_cpu.h" /* overlap/_kernels: on every module's include path (setup.py) */

/* a row's byte positions and lengths fit the 32 bits of a listed run */
#define ASCII_SIMD_MIN_ROW 8
#define ASCII_SIMD_MAX_ROW ((int64_t)1 << 31)

#if CPU_X86_DISPATCH
#include <immintrin.h>

#define ASCII_SIMD_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))

static int ascii_simd_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

/* The classes of the 64 bytes p[0:64] (those past `valid` read as spaces):
 * word bytes in *word, other (non-space, non-word) bytes in *other, the
 * bytes of string.punctuation (printable, neither space nor letter nor
 * digit: '_' among them) in *punct.  Returns the mask of bytes >= 0x80. */
ASCII_SIMD_TARGET static inline uint64_t ascii_classify64(const uint8_t* p, uint64_t valid,
                                                          uint64_t* word, uint64_t* other,
                                                          uint64_t* punct)
{
    const __m512i v = _mm512_mask_loadu_epi8(_mm512_set1_epi8(' '), (__mmask64)valid, p);
    const __m512i folded = _mm512_or_si512(v, _mm512_set1_epi8(0x20)); /* A-Z onto a-z */
    const uint64_t us = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('_'));
    const uint64_t wd =
        _mm512_cmple_epu8_mask(_mm512_sub_epi8(folded, _mm512_set1_epi8('a')), _mm512_set1_epi8(25))
        | _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8('0')), _mm512_set1_epi8(9))
        | us;
    /* is_space below 128: ' ', 9-13 and 28-31 */
    const uint64_t sp =
        _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(' '))
        | _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8(9)), _mm512_set1_epi8(4))
        | _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8(28)), _mm512_set1_epi8(3));
    const uint64_t hi = _mm512_movepi8_mask(v);
    const uint64_t printable =  /* 0x21-0x7e */
        _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8(0x21)), _mm512_set1_epi8(0x5d));
    *word = wd;
    *other = ~(wd | sp | hi);
    *punct = (~(wd | sp) & printable) | us;
    return hi;
}

static inline uint64_t ascii_valid_bytes(int64_t left)
{
    return left >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << left) - 1);
}

#define ASCII_RUN_FLAG ((uint64_t)1 << 31)
#define ASCII_RUN_LENGTH ((uint64_t)0x7fffffff)

/* The runs of p[0:n] (1 <= n < ASCII_SIMD_MAX_ROW) in order into tok (room for
 * n): first byte << 32 | flag << 31 | length, the flag set on the runs that
 * may be substrings of string.punctuation (wordpunct: a run of two bytes or
 * more that starts with one of its bytes; a run of one such byte is left
 * out).  *flagged: whether a listed run is flagged.  Returns the number of
 * runs listed, or -1 when a byte is >= 0x80. */
ASCII_SIMD_TARGET static int64_t ascii_bounds_avx512(const uint8_t* p, int64_t n, int whitespace,
                                                     uint64_t* tok, int* flagged)
{
    int64_t m = 0, b, base, e, s;
    const int64_t nb = (n + 63) / 64;
    uint64_t w, o, pu, wn = 0, on = 0, pn = 0, cw = 0, co = 0, starts, ends, one, marks = 0;
    uint64_t open = 0; /* the first byte << 32 | flag of a run from the blocks before */
    int is_open = 0;
    if (ascii_classify64(p, ascii_valid_bytes(n), &w, &o, &pu))
        return -1;
    if (whitespace) {
        w |= o;
        o = pu = 0;
    }
    for (b = 0; b < nb; b++) {
        base = 64 * b;
        /* the next block's classes: whether a run goes on past this block */
        if (b + 1 < nb) {
            if (ascii_classify64(p + base + 64, ascii_valid_bytes(n - base - 64), &wn, &on, &pn))
                return -1;
            if (whitespace) {
                wn |= on;
                on = pn = 0;
            }
        } else {
            wn = on = pn = 0;
        }
        starts = (w & ~((w << 1) | cw)) | (o & ~((o << 1) | co));
        ends = (w & ~((w >> 1) | (wn << 63))) | (o & ~((o >> 1) | (on << 63)));
        /* a run of one punctuation byte: listed by neither mask */
        one = starts & ends & pu;
        starts &= ~one;
        ends &= ~one;
        marks |= starts & pu;
        /* starts and ends alternate: a run open from the blocks before ends
         * at the first end, every other end closes the start before it */
        if (is_open && ends) {
            e = base + __builtin_ctzll(ends) + 1;
            ends &= ends - 1;
            tok[m++] = open | (uint64_t)(e - (int64_t)(open >> 32));
            is_open = 0;
        }
        while (ends) {
            s = __builtin_ctzll(starts);
            starts &= starts - 1;
            e = base + __builtin_ctzll(ends) + 1;
            ends &= ends - 1;
            tok[m++] = ((uint64_t)(base + s) << 32) | (((pu >> s) & 1) << 31)
                       | (uint64_t)(e - base - s);
        }
        if (starts) { /* at most one: a run that goes on into the next block */
            s = __builtin_ctzll(starts);
            open = ((uint64_t)(base + s) << 32) | (((pu >> s) & 1) << 31);
            is_open = 1;
        }
        cw = w >> 63;
        co = o >> 63;
        w = wn;
        o = on;
        pu = pn;
    }
    *flagged = marks != 0;
    return m;
}

/* out[t] = hash_ascii of the run tok[t] of p[0:n] (n >= 8; its flag is
 * ignored), for t < nt; out may be tok. */
ASCII_SIMD_TARGET static void ascii_hash_avx512(const uint8_t* p, int64_t n, const uint64_t* tok,
                                                int64_t nt, uint64_t basis, uint64_t* out)
{
    const __m512i vbasis = _mm512_set1_epi64((long long)basis);
    const __m512i prime = _mm512_set1_epi64((long long)0x100000001b3ULL);
    const __m512i low31 = _mm512_set1_epi64((long long)ASCII_RUN_LENGTH);
    const __m512i last = _mm512_set1_epi64(n - 8);
    const __m512i byte = _mm512_set1_epi64(0xff);
    const __m512i from_a = _mm512_set1_epi64(0x3f3f3f3f3f3f3f3fLL);  /* + 'A' sets bit 7 */
    const __m512i past_z = _mm512_set1_epi64(0x2525252525252525LL);  /* + 'Z' + 1 sets bit 7 */
    const __m512i bit7 = _mm512_set1_epi64((long long)0x8080808080808080ULL);
    const __m512i golden = _mm512_set1_epi64((long long)0x9e3779b97f4a7c15ULL);
    const __m512i mix1 = _mm512_set1_epi64((long long)0xff51afd7ed558ccdULL);
    const __m512i mix2 = _mm512_set1_epi64((long long)0xc4ceb9fe1a85ec53ULL);
    int64_t t, o;
    for (t = 0; t < nt; t += 8) {
        const __mmask8 lanes = nt - t >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (nt - t)) - 1);
        const __m512i packed = _mm512_maskz_loadu_epi64(lanes, tok + t);
        const __m512i len = _mm512_and_si512(packed, low31);
        __m512i at = _mm512_srli_epi64(packed, 32), h = vbasis;
        for (o = 0;; o += 8) {
            const __mmask8 live = _mm512_cmpgt_epu64_mask(len, _mm512_set1_epi64(o));
            __m512i from, w, upper;
            if (!live)
                break;
            /* the 8 bytes from `at`, read from at most n - 8 and shifted down
             * (no read past the row; bytes past the token are never fed) */
            from = _mm512_min_epu64(at, last);
            w = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), live, from, (const void*)p, 1);
            w = _mm512_srlv_epi64(w, _mm512_slli_epi64(_mm512_sub_epi64(at, from), 3));
            /* lower-case: every byte is < 0x80, so the adds carry into no other byte */
            upper = _mm512_and_si512(
                _mm512_andnot_si512(_mm512_add_epi64(w, past_z), _mm512_add_epi64(w, from_a)), bit7);
            w = _mm512_or_si512(w, _mm512_srli_epi64(upper, 2));
#define ASCII_FNV_STEP(j)                                                                       \
    h = _mm512_mask_mullo_epi64(                                                                \
        h, _mm512_cmpgt_epu64_mask(len, _mm512_set1_epi64(o + (j))),                           \
        _mm512_xor_si512(h, _mm512_and_si512(_mm512_srli_epi64(w, 8 * (j)), byte)), prime);
            ASCII_FNV_STEP(0) ASCII_FNV_STEP(1) ASCII_FNV_STEP(2) ASCII_FNV_STEP(3)
            ASCII_FNV_STEP(4) ASCII_FNV_STEP(5) ASCII_FNV_STEP(6) ASCII_FNV_STEP(7)
#undef ASCII_FNV_STEP
            at = _mm512_add_epi64(at, _mm512_set1_epi64(8));
        }
        /* finish_token: fmix64(h ^ length * golden) */
        h = _mm512_xor_si512(h, _mm512_mullo_epi64(len, golden));
        h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
        h = _mm512_mullo_epi64(h, mix1);
        h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
        h = _mm512_mullo_epi64(h, mix2);
        h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
        _mm512_mask_storeu_epi64(out + t, lanes, h);
    }
}

#else /* no x86 dispatch: scan_ascii does all rows */

static int ascii_simd_supported(void) { return 0; }

static int64_t ascii_bounds_avx512(const uint8_t* p, int64_t n, int whitespace, uint64_t* tok,
                                   int* flagged)
{
    (void)p; (void)n; (void)whitespace; (void)tok;
    *flagged = 0;
    return -1;
}

static void ascii_hash_avx512(const uint8_t* p, int64_t n, const uint64_t* tok, int64_t nt,
                              uint64_t basis, uint64_t* out)
{
    (void)p; (void)n; (void)tok; (void)nt; (void)basis; (void)out;
}

#endif

#endif
