/* Word-parallel kernels of the bit-sliced search (overlap/_kernels/_bitslice.pyx).
 *
 * A *block* is BS_BLOCK consecutive 64-bit words of every bitmap, i.e.
 * 64 * BS_BLOCK references.  A *vertical counter* over a block is an array of
 * bit-planes P[i * BS_BLOCK + j]: bit x of the count of reference 64*j + x is
 * bit x of word j of plane i (plane 0 holds the least significant bits).
 *
 * bs_add_rows adds n bitmap rows (one per frequent query token) into such a
 * counter; bs_count_ge compares the counts with a threshold per word.  Each
 * is written once on GCC/Clang vector types (plain C loops for other
 * compilers) and compiled three times: for the default
 * target (portable x86-64, or any other architecture), and with
 * __attribute__((target("avx2"))) and target("avx512f"); the variant is
 * chosen at run time by the CPU level (_cpu.h; never -march=native).  Every variant
 * computes the same integers.
 */
#ifndef OVERLAP_BITSLICE_SIMD_H
#define OVERLAP_BITSLICE_SIMD_H

#include <stdint.h>
#include <string.h>

#define BS_BLOCK 8
#define BS_MAX_PLANES 16

#include "_cpu.h"

#if defined(__GNUC__) || defined(__clang__)
/* Each variant works on GCC/Clang vectors of the width its target handles in
 * one register (VEC of LANES uint64_t words: 2 for the portable SSE2/NEON
 * baseline, 4 for AVX2, 8 for AVX-512) and walks the block in BS_BLOCK/LANES
 * slices.  A vector wider than the target's registers would be split by the
 * compiler into 128-bit pieces with the planes spilled to the stack, which made
 * the AVX2 variant slower than the portable one.  aligned(8): bitmap rows and
 * scratch are only 8-byte aligned. */
typedef uint64_t bs_v2 __attribute__((vector_size(16), aligned(8)));
typedef uint64_t bs_v4 __attribute__((vector_size(32), aligned(8)));
typedef uint64_t bs_v8 __attribute__((vector_size(64), aligned(8)));
#define BS_HAVE_VEC 1
#else
#define BS_HAVE_VEC 0
#endif

#if BS_HAVE_VEC
/* Add n rows into b planes, one slice of LANES words at a time.  Two rows at a
 * time: a half adder turns them into a sum and a carry word, which enter the
 * counter at planes 0 and 1 (a full adder there); the remaining carry ripples
 * up.  A row left over is added on its own.  The caller sizes b for n rows, so
 * no carry leaves the top plane.  The slice's planes live in a local array
 * (registers or L1) and are stored at the end. */
#define BS_ADD_ROWS_BODY(VEC, LANES)                                            \
    {                                                                           \
        int i, t, o;                                                            \
        VEC acc[BS_MAX_PLANES];                                                 \
        for (o = 0; o < BS_BLOCK; o += (LANES)) {                               \
            const int64_t wo = w0 + o;                                          \
            for (i = 0; i < b; i++)                                             \
                acc[i] = (VEC){0};                                              \
            for (t = 0; t + 1 < n; t += 2) {                                    \
                VEC x = *(const VEC*)(rows[t] + wo);                            \
                VEC y = *(const VEC*)(rows[t + 1] + wo);                        \
                VEC s = x ^ y, d = x & y, p = acc[0], c, u;                     \
                acc[0] = p ^ s;                                                 \
                c = p & s;                                                      \
                p = acc[1];                                                     \
                u = p ^ c;                                                      \
                acc[1] = u ^ d;                                                 \
                c = (p & c) | (u & d);                                          \
                for (i = 2; i < b; i++) {                                       \
                    p = acc[i];                                                 \
                    acc[i] = p ^ c;                                             \
                    c = p & c;                                                  \
                }                                                               \
            }                                                                   \
            if (t < n) {                                                        \
                VEC c = *(const VEC*)(rows[t] + wo), p;                         \
                for (i = 0; i < b; i++) {                                       \
                    p = acc[i];                                                 \
                    acc[i] = p ^ c;                                             \
                    c = p & c;                                                  \
                }                                                               \
            }                                                                   \
            for (i = 0; i < b; i++)                                             \
                *(VEC*)(P + (int64_t)i * BS_BLOCK + o) = acc[i];                \
        }                                                                       \
    }

/* Bits whose count is >= need[j] in each word j: O'Neil's bit-sliced
 * comparison, from the most significant plane down, a slice at a time (m is
 * all ones in the words whose need has bit i set).  need[j] <= 0 keeps every
 * bit; need[j] >= 2**b keeps none. */
#define BS_COUNT_GE_BODY(VEC, LANES)                                            \
    {                                                                           \
        int i, j, o;                                                            \
        for (o = 0; o < BS_BLOCK; o += (LANES)) {                               \
            VEC gt = (VEC){0}, eq = ~(VEC){0}, nv, m, p, out;                   \
            for (j = 0; j < (LANES); j++)                                       \
                nv[j] = (uint64_t)(need[o + j] < 0 ? 0 : need[o + j]);          \
            for (i = b - 1; i >= 0; i--) {                                      \
                p = *(const VEC*)(P + (int64_t)i * BS_BLOCK + o);               \
                m = -((nv >> i) & 1);                                           \
                gt |= eq & p & ~m;                                              \
                eq &= ~(p ^ m);                                                 \
            }                                                                   \
            out = gt | eq;                                                      \
            m = (VEC)((nv >> b) != 0); /* all ones where need >= 2**b */       \
            out &= ~m;                                                          \
            *(VEC*)(res + o) = out;                                             \
        }                                                                       \
    }
#define BS_PORTABLE_T bs_v2
#define BS_PORTABLE_LANES 2
#else
/* Plain C for compilers without vector extensions (same integers). */
#define BS_ADD_ROWS_BODY(VEC, LANES)                                            \
    {                                                                           \
        int i, j, t;                                                            \
        memset(P, 0, sizeof(uint64_t) * BS_BLOCK * (b > 0 ? b : 1));           \
        for (t = 0; t < n; t++) {                                               \
            for (j = 0; j < BS_BLOCK; j++) {                                    \
                uint64_t c = rows[t][w0 + j], p;                                \
                for (i = 0; i < b && c; i++) {                                  \
                    p = P[(int64_t)i * BS_BLOCK + j];                           \
                    P[(int64_t)i * BS_BLOCK + j] = p ^ c;                       \
                    c = p & c;                                                  \
                }                                                               \
            }                                                                   \
        }                                                                       \
    }
#define BS_COUNT_GE_BODY(VEC, LANES)                                            \
    {                                                                           \
        int i, j;                                                               \
        for (j = 0; j < BS_BLOCK; j++) {                                        \
            uint64_t gt = 0, eq = ~(uint64_t)0;                                 \
            int64_t c = need[j];                                                \
            if (c <= 0) { res[j] = ~(uint64_t)0; continue; }                    \
            if (c >= ((int64_t)1 << b)) { res[j] = 0; continue; }               \
            for (i = b - 1; i >= 0; i--) {                                      \
                uint64_t p = P[(int64_t)i * BS_BLOCK + j];                      \
                if ((c >> i) & 1)                                               \
                    eq &= p;                                                    \
                else {                                                          \
                    gt |= eq & p;                                               \
                    eq &= ~p;                                                   \
                }                                                               \
            }                                                                   \
            res[j] = gt | eq;                                                   \
        }                                                                       \
    }
#define BS_PORTABLE_T uint64_t
#define BS_PORTABLE_LANES 1
#endif

typedef void (*bs_add_rows_fn)(const uint64_t* const* rows, int n, int64_t w0, int b,
                               uint64_t* P);

#if BS_HAVE_VEC
/* NAME adds rows with the body above specialised for each plane count b
 * (1..BS_MAX_PLANES, a switch), so that the slice's planes stay in registers;
 * ATTR is the target attribute of the variant.  b == 0 means no rows. */
#define BS_CASES(F)                                                             \
    BS_CASE(F, 1) BS_CASE(F, 2) BS_CASE(F, 3) BS_CASE(F, 4) BS_CASE(F, 5)       \
    BS_CASE(F, 6) BS_CASE(F, 7) BS_CASE(F, 8) BS_CASE(F, 9) BS_CASE(F, 10)      \
    BS_CASE(F, 11) BS_CASE(F, 12) BS_CASE(F, 13) BS_CASE(F, 14) BS_CASE(F, 15)  \
    BS_CASE(F, 16)
#define BS_CASE(F, B)                                                           \
    case B:                                                                     \
        F(rows, n, w0, B, P);                                                   \
        return;
#define BS_DEFINE_ADD_ROWS(NAME, ATTR, VEC, LANES)                              \
    ATTR __attribute__((always_inline)) static inline void NAME##_b(            \
        const uint64_t* const* rows, int n, int64_t w0, const int b, uint64_t* P) \
    BS_ADD_ROWS_BODY(VEC, LANES)                                                \
    ATTR static void NAME(const uint64_t* const* rows, int n, int64_t w0, int b, \
                          uint64_t* P)                                          \
    {                                                                           \
        switch (b) {                                                            \
            BS_CASES(NAME##_b)                                                  \
        default:                                                                \
            return;                                                             \
        }                                                                       \
    }
#else
#define BS_DEFINE_ADD_ROWS(NAME, ATTR, VEC, LANES)                              \
    static void NAME(const uint64_t* const* rows, int n, int64_t w0, int b,     \
                     uint64_t* P)                                               \
    BS_ADD_ROWS_BODY(VEC, LANES)
#endif
typedef void (*bs_count_ge_fn)(const uint64_t* P, int b, const int64_t* need,
                               uint64_t* res);

BS_DEFINE_ADD_ROWS(bs_add_rows_portable, , BS_PORTABLE_T, BS_PORTABLE_LANES)

static void bs_count_ge_portable(const uint64_t* P, int b, const int64_t* need,
                                 uint64_t* res)
BS_COUNT_GE_BODY(BS_PORTABLE_T, BS_PORTABLE_LANES)

#if BS_HAVE_VEC && (defined(__x86_64__) || defined(__i386__))
#define BS_HAVE_X86_DISPATCH 1
#include <immintrin.h>

/* AVX2 in intrinsics, the same algorithm as BS_ADD_ROWS_BODY and
 * BS_COUNT_GE_BODY in two slices of four words.  GCC 12 lowers the generic
 * count_ge body badly for this target (the comparison state bounces through
 * the stack: slower than portable); the generic add_rows specialised per plane
 * count (BS_DEFINE_ADD_ROWS with bs_v4) measured 5-10% slower than this one on
 * W, so both stay in intrinsics.  bs_add_rows_avx2_b is one plane count B known
 * at compile time (the switch below), so that the planes stay in registers. */
__attribute__((target("avx2"), always_inline))
static inline void bs_add_rows_avx2_b(const uint64_t* const* rows, int n, int64_t w0,
                                      const int b, uint64_t* P)
{
    int i, t, o;
    for (o = 0; o < BS_BLOCK; o += 4) {
        const int64_t wo = w0 + o;
        __m256i acc[BS_MAX_PLANES];
        for (i = 0; i < b; i++)
            acc[i] = _mm256_setzero_si256();
        for (t = 0; t + 1 < n; t += 2) {
            __m256i x = _mm256_loadu_si256((const __m256i*)(rows[t] + wo));
            __m256i y = _mm256_loadu_si256((const __m256i*)(rows[t + 1] + wo));
            __m256i s = _mm256_xor_si256(x, y), d = _mm256_and_si256(x, y);
            __m256i p = acc[0], c, u;
            acc[0] = _mm256_xor_si256(p, s);
            c = _mm256_and_si256(p, s);
            p = acc[1];
            u = _mm256_xor_si256(p, c);
            acc[1] = _mm256_xor_si256(u, d);
            c = _mm256_or_si256(_mm256_and_si256(p, c), _mm256_and_si256(u, d));
            for (i = 2; i < b; i++) {
                p = acc[i];
                acc[i] = _mm256_xor_si256(p, c);
                c = _mm256_and_si256(p, c);
            }
        }
        if (t < n) {
            __m256i c = _mm256_loadu_si256((const __m256i*)(rows[t] + wo)), p;
            for (i = 0; i < b; i++) {
                p = acc[i];
                acc[i] = _mm256_xor_si256(p, c);
                c = _mm256_and_si256(p, c);
            }
        }
        for (i = 0; i < b; i++)
            _mm256_storeu_si256((__m256i*)(P + (int64_t)i * BS_BLOCK + o), acc[i]);
    }
}

__attribute__((target("avx2")))
static void bs_add_rows_avx2(const uint64_t* const* rows, int n, int64_t w0, int b,
                             uint64_t* P)
{
    switch (b) {
        BS_CASES(bs_add_rows_avx2_b)
    default:
        return;
    }
}

__attribute__((target("avx2")))
static void bs_count_ge_avx2(const uint64_t* P, int b, const int64_t* need, uint64_t* res)
{
    int i, o;
    const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi64x(1);
    for (o = 0; o < BS_BLOCK; o += 4) {
        __m256i nv = _mm256_loadu_si256((const __m256i*)(need + o));
        __m256i gt = zero, eq = _mm256_cmpeq_epi64(zero, zero), p, m;
        nv = _mm256_and_si256(nv, _mm256_cmpgt_epi64(nv, zero)); /* max(need, 0) */
        for (i = b - 1; i >= 0; i--) {
            p = _mm256_loadu_si256((const __m256i*)(P + (int64_t)i * BS_BLOCK + o));
            m = _mm256_sub_epi64(zero, _mm256_and_si256(
                                           _mm256_srl_epi64(nv, _mm_cvtsi32_si128(i)), one));
            gt = _mm256_or_si256(gt, _mm256_andnot_si256(m, _mm256_and_si256(eq, p)));
            eq = _mm256_andnot_si256(_mm256_xor_si256(p, m), eq);
        }
        /* keep only the words whose need < 2**b */
        m = _mm256_cmpeq_epi64(_mm256_srl_epi64(nv, _mm_cvtsi32_si128(b)), zero);
        _mm256_storeu_si256((__m256i*)(res + o), _mm256_and_si256(_mm256_or_si256(gt, eq), m));
    }
}

BS_DEFINE_ADD_ROWS(bs_add_rows_avx512, __attribute__((target("avx512f"))), bs_v8, 8)

__attribute__((target("avx512f")))
static void bs_count_ge_avx512(const uint64_t* P, int b, const int64_t* need, uint64_t* res)
BS_COUNT_GE_BODY(bs_v8, 8)
#else
#define BS_HAVE_X86_DISPATCH 0
#endif

/* The block kernels of CPU level ``level`` (_cpu.h): portable below
 * CPU_LEVEL_AVX2. */
static bs_add_rows_fn bs_add_rows_for(int level)
{
#if BS_HAVE_X86_DISPATCH
    if (level >= CPU_LEVEL_AVX512)
        return bs_add_rows_avx512;
    if (level >= CPU_LEVEL_AVX2)
        return bs_add_rows_avx2;
#else
    (void)level;
#endif
    return bs_add_rows_portable;
}

static bs_count_ge_fn bs_count_ge_for(int level)
{
#if BS_HAVE_X86_DISPATCH
    if (level >= CPU_LEVEL_AVX512)
        return bs_count_ge_avx512;
    if (level >= CPU_LEVEL_AVX2)
        return bs_count_ge_avx2;
#else
    (void)level;
#endif
    return bs_count_ge_portable;
}

/* The count of bit x of word j. */
static inline int64_t bs_count_at(const uint64_t* P, int b, int j, int x)
{
    int64_t v = 0;
    int i;
    for (i = 0; i < b; i++)
        v |= (int64_t)((P[(int64_t)i * BS_BLOCK + j] >> x) & 1) << i;
    return v;
}

/* Narrow mask[0..BS_BLOCK) to its bits of the largest count (planes P, b of
 * them), from the top plane down; returns that count, or -1 for an empty mask. */
static inline int64_t bs_narrow_to_max(const uint64_t* P, int b, uint64_t* mask)
{
    int i, j;
    int64_t v = 0;
    uint64_t t[BS_BLOCK], any = 0;
    for (j = 0; j < BS_BLOCK; j++)
        any |= mask[j];
    if (!any)
        return -1;
    for (i = b - 1; i >= 0; i--) {
        any = 0;
        for (j = 0; j < BS_BLOCK; j++) {
            t[j] = mask[j] & P[(int64_t)i * BS_BLOCK + j];
            any |= t[j];
        }
        if (any) {
            for (j = 0; j < BS_BLOCK; j++)
                mask[j] = t[j];
            v |= (int64_t)1 << i;
        }
    }
    return v;
}

/* Index of the lowest set bit (x != 0). */
static inline int bs_ctz(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) {
        x >>= 1;
        n++;
    }
    return n;
#endif
}

#endif
