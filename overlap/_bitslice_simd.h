/* Word-parallel kernels of the bit-sliced search (overlap/_bitslice.pyx).
 *
 * A *block* is BS_BLOCK consecutive 64-bit words of every bitmap, i.e.
 * 64 * BS_BLOCK references.  A *vertical counter* over a block is an array of
 * bit-planes P[i * BS_BLOCK + j]: bit x of the count of reference 64*j + x is
 * bit x of word j of plane i (plane 0 holds the least significant bits).
 *
 * bs_add_rows adds n bitmap rows (one per frequent query token) into such a
 * counter; bs_count_ge compares the counts with a threshold per word.  Each
 * is written once on GCC/Clang vector types of BS_BLOCK uint64_t words (plain
 * C loops for other compilers) and compiled three times: for the default
 * target (portable x86-64, or any other architecture), and with
 * __attribute__((target("avx2"))) and target("avx512f"); the best variant the
 * CPU supports is chosen at run time (never -march=native).  Every variant
 * computes the same integers.
 */
#ifndef OVERLAP_BITSLICE_SIMD_H
#define OVERLAP_BITSLICE_SIMD_H

#include <stdint.h>
#include <string.h>

#define BS_BLOCK 8
#define BS_MAX_PLANES 16

/* levels: 0 portable 64-bit, 1 AVX2, 2 AVX-512 */
#define BS_LEVEL_PORTABLE 0
#define BS_LEVEL_AVX2 1
#define BS_LEVEL_AVX512 2

#if defined(__GNUC__) || defined(__clang__)
/* One block as a GCC/Clang vector: the compiler emits whatever the function's
 * target offers (4 SSE2, 2 AVX2 or 1 AVX-512 instruction per operation).
 * aligned(8): bitmap rows and scratch are only 8-byte aligned. */
typedef uint64_t bs_vec __attribute__((vector_size(8 * BS_BLOCK), aligned(8)));
#define BS_LOAD(p) (*(const bs_vec*)(p))
#define BS_STORE(p, v) (*(bs_vec*)(p) = (v))
#define BS_ZERO ((bs_vec){0})
#define BS_HAVE_VEC 1
#else
#define BS_HAVE_VEC 0
#endif

#if BS_HAVE_VEC
/* Add n rows into b planes.  Two rows at a time: a half adder turns them into
 * a sum and a carry word, which enter the counter at planes 0 and 1 (a full
 * adder there); the remaining carry ripples up.  A row left over is added on
 * its own.  The caller sizes b for n rows, so no carry leaves the top plane.
 * Planes live in a local array (registers or L1) and are stored at the end. */
#define BS_ADD_ROWS_BODY                                                        \
    {                                                                           \
        int i, t;                                                               \
        bs_vec acc[BS_MAX_PLANES];                                              \
        for (i = 0; i < b; i++)                                                 \
            acc[i] = BS_ZERO;                                                   \
        for (t = 0; t + 1 < n; t += 2) {                                        \
            bs_vec x = BS_LOAD(rows[t] + w0), y = BS_LOAD(rows[t + 1] + w0);    \
            bs_vec s = x ^ y, d = x & y, p = acc[0], c, u;                      \
            acc[0] = p ^ s;                                                     \
            c = p & s;                                                          \
            p = acc[1];                                                         \
            u = p ^ c;                                                          \
            acc[1] = u ^ d;                                                     \
            c = (p & c) | (u & d);                                              \
            for (i = 2; i < b; i++) {                                           \
                p = acc[i];                                                     \
                acc[i] = p ^ c;                                                 \
                c = p & c;                                                      \
            }                                                                   \
        }                                                                       \
        if (t < n) {                                                            \
            bs_vec c = BS_LOAD(rows[t] + w0), p;                                \
            for (i = 0; i < b; i++) {                                           \
                p = acc[i];                                                     \
                acc[i] = p ^ c;                                                 \
                c = p & c;                                                      \
            }                                                                   \
        }                                                                       \
        for (i = 0; i < b; i++)                                                 \
            BS_STORE(P + (int64_t)i * BS_BLOCK, acc[i]);                        \
    }

/* Bits whose count is >= need[j] in each word j: O'Neil's bit-sliced
 * comparison, from the most significant plane down, all words at once (m is
 * all ones in the words whose need has bit i set).  need[j] <= 0 keeps every
 * bit; need[j] >= 2**b keeps none. */
#define BS_COUNT_GE_BODY                                                        \
    {                                                                           \
        int i, j;                                                               \
        bs_vec gt = BS_ZERO, eq = ~BS_ZERO, nv, m, p, out;                      \
        for (j = 0; j < BS_BLOCK; j++)                                          \
            nv[j] = (uint64_t)(need[j] < 0 ? 0 : need[j]);                      \
        for (i = b - 1; i >= 0; i--) {                                          \
            p = BS_LOAD(P + (int64_t)i * BS_BLOCK);                             \
            m = -((nv >> i) & 1);                                               \
            gt |= eq & p & ~m;                                                  \
            eq &= ~(p ^ m);                                                     \
        }                                                                       \
        out = gt | eq;                                                          \
        m = (bs_vec)((nv >> b) != 0); /* all ones where need >= 2**b */                        \
        out &= ~m;                                                              \
        BS_STORE(res, out);                                                     \
    }
#else
/* Plain C for compilers without vector extensions (same integers). */
#define BS_ADD_ROWS_BODY                                                        \
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
#define BS_COUNT_GE_BODY                                                        \
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
#endif

typedef void (*bs_add_rows_fn)(const uint64_t* const* rows, int n, int64_t w0, int b,
                               uint64_t* P);
typedef void (*bs_count_ge_fn)(const uint64_t* P, int b, const int64_t* need,
                               uint64_t* res);

static void bs_add_rows_portable(const uint64_t* const* rows, int n, int64_t w0, int b,
                                 uint64_t* P)
BS_ADD_ROWS_BODY

static void bs_count_ge_portable(const uint64_t* P, int b, const int64_t* need,
                                 uint64_t* res)
BS_COUNT_GE_BODY

#if BS_HAVE_VEC && (defined(__x86_64__) || defined(__i386__))
#define BS_HAVE_X86_DISPATCH 1
__attribute__((target("avx2")))
static void bs_add_rows_avx2(const uint64_t* const* rows, int n, int64_t w0, int b,
                             uint64_t* P)
BS_ADD_ROWS_BODY

__attribute__((target("avx2")))
static void bs_count_ge_avx2(const uint64_t* P, int b, const int64_t* need, uint64_t* res)
BS_COUNT_GE_BODY

__attribute__((target("avx512f")))
static void bs_add_rows_avx512(const uint64_t* const* rows, int n, int64_t w0, int b,
                               uint64_t* P)
BS_ADD_ROWS_BODY

__attribute__((target("avx512f")))
static void bs_count_ge_avx512(const uint64_t* P, int b, const int64_t* need, uint64_t* res)
BS_COUNT_GE_BODY
#else
#define BS_HAVE_X86_DISPATCH 0
#endif

/* Highest level this CPU runs. */
static int bs_cpu_level(void)
{
#if BS_HAVE_X86_DISPATCH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return BS_LEVEL_AVX512;
    if (__builtin_cpu_supports("avx2"))
        return BS_LEVEL_AVX2;
#endif
    return BS_LEVEL_PORTABLE;
}

static bs_add_rows_fn bs_add_rows_for(int level)
{
#if BS_HAVE_X86_DISPATCH
    if (level >= BS_LEVEL_AVX512)
        return bs_add_rows_avx512;
    if (level == BS_LEVEL_AVX2)
        return bs_add_rows_avx2;
#else
    (void)level;
#endif
    return bs_add_rows_portable;
}

static bs_count_ge_fn bs_count_ge_for(int level)
{
#if BS_HAVE_X86_DISPATCH
    if (level >= BS_LEVEL_AVX512)
        return bs_count_ge_avx512;
    if (level == BS_LEVEL_AVX2)
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
