/* Word-parallel kernels of the bit-sliced search (overlap/_bitslice.pyx).
 *
 * A *block* is BS_BLOCK consecutive 64-bit words of every bitmap, i.e.
 * 64 * BS_BLOCK references.  A *vertical counter* over a block is an array of
 * bit-planes P[i * BS_BLOCK + j]: bit x of the count of reference 64*j + x is
 * bit x of word j of plane i (plane 0 holds the least significant bits).
 *
 * bs_add_rows adds n bitmap rows (one per frequent query token) into such a
 * counter.  It is written once as portable C on uint64_t words; the compiler
 * vectorises the inner loops over the BS_BLOCK words.  The same body is
 * compiled again for AVX2 and for AVX-512 with GCC/Clang target attributes and
 * the best variant the CPU supports is chosen at run time (never
 * -march=native).  Every variant computes the same integers.
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

/* Two rows at a time: a half adder turns them into (sum, carry) words, which
 * enter the counter at planes 0 and 1; the remaining carry ripples up.  One
 * row left over is added on its own.  Counts never exceed 2**b - 1 (the caller
 * sizes b for the number of rows), so the last carry is always zero. */
#define BS_ADD_ROWS_BODY                                                        \
    {                                                                           \
        int i, j, t;                                                            \
        uint64_t c[BS_BLOCK], d[BS_BLOCK];                                      \
        memset(P, 0, sizeof(uint64_t) * BS_BLOCK * (b > 0 ? b : 1));           \
        for (t = 0; t + 1 < n; t += 2) {                                        \
            const uint64_t* x = rows[t] + w0;                                   \
            const uint64_t* y = rows[t + 1] + w0;                               \
            for (j = 0; j < BS_BLOCK; j++) {                                    \
                uint64_t s = x[j] ^ y[j];                                       \
                uint64_t k = x[j] & y[j];                                       \
                uint64_t p = P[j];                                              \
                P[j] = p ^ s;                                                   \
                c[j] = p & s;        /* carry into plane 1 from plane 0 */      \
                d[j] = k;            /* the pair's own weight-2 bit */          \
            }                                                                   \
            /* plane 1: full adder of P1, c, d; carries ripple from plane 2 */  \
            for (i = 1; i < b; i++) {                                           \
                uint64_t* Pi = P + (int64_t)i * BS_BLOCK;                       \
                for (j = 0; j < BS_BLOCK; j++) {                                \
                    uint64_t p = Pi[j];                                         \
                    uint64_t u = p ^ c[j];                                      \
                    Pi[j] = u ^ d[j];                                           \
                    c[j] = (p & c[j]) | (u & d[j]);                             \
                    d[j] = 0;                                                   \
                }                                                               \
            }                                                                   \
        }                                                                       \
        if (t < n) {                                                            \
            const uint64_t* x = rows[t] + w0;                                   \
            for (j = 0; j < BS_BLOCK; j++)                                      \
                c[j] = x[j];                                                    \
            for (i = 0; i < b; i++) {                                           \
                uint64_t* Pi = P + (int64_t)i * BS_BLOCK;                       \
                for (j = 0; j < BS_BLOCK; j++) {                                \
                    uint64_t p = Pi[j];                                         \
                    Pi[j] = p ^ c[j];                                           \
                    c[j] = p & c[j];                                            \
                }                                                               \
            }                                                                   \
        }                                                                       \
    }

typedef void (*bs_add_rows_fn)(const uint64_t* const* rows, int n, int64_t w0, int b,
                               uint64_t* P);

static void bs_add_rows_portable(const uint64_t* const* rows, int n, int64_t w0, int b,
                                 uint64_t* P)
BS_ADD_ROWS_BODY

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define BS_HAVE_X86_DISPATCH 1
__attribute__((target("avx2")))
static void bs_add_rows_avx2(const uint64_t* const* rows, int n, int64_t w0, int b,
                             uint64_t* P)
BS_ADD_ROWS_BODY

__attribute__((target("avx512f")))
static void bs_add_rows_avx512(const uint64_t* const* rows, int n, int64_t w0, int b,
                               uint64_t* P)
BS_ADD_ROWS_BODY
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

/* Bits of word j whose count (planes P, b of them) is >= c: O'Neil's
 * bit-sliced comparison, from the most significant plane down. */
static inline uint64_t bs_count_ge(const uint64_t* P, int b, int j, int64_t c)
{
    uint64_t gt = 0, eq = ~(uint64_t)0;
    int i;
    if (c <= 0)
        return ~(uint64_t)0;
    if (b < 63 && c >= ((int64_t)1 << b))
        return 0;
    for (i = b - 1; i >= 0; i--) {
        uint64_t p = P[(int64_t)i * BS_BLOCK + j];
        if ((c >> i) & 1)
            eq &= p;
        else {
            gt |= eq & p;
            eq &= ~p;
        }
    }
    return gt | eq;
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
