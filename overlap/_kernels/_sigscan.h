/* The signature test of the join's walk over one size group (walk_fill in
 * overlap/_kernels/_postings_search.pyx), with the population count chosen
 * at run time.
 *
 * sig_scan tests the row signatures sig[*p .. end) against the query's:
 * entry q passes when, in every field g (bits [g*b, (g+1)*b) of the 64),
 * popcount((qsig ^ sig[q]) >> (g*b) & mask) <= allowed[g] (b = 64 / F).  It writes the
 * indices of the entries that pass to out (room > 0 of them at most), moves
 * *p past the last entry it looked at and returns how many it wrote.
 *
 * The generic x86-64 target has no popcnt instruction (it came with SSE4.2
 * and AMD's ABM), so the baseline counts bits with a shift-and-add (SWAR)
 * sequence of about a dozen instructions, and a second copy compiled with
 * __attribute__((target("popcnt"))) uses the instruction.  The copy is
 * chosen at run time by the CPU level (_cpu.h; never -march=native).  Both compute the
 * same integers; on other architectures there is one copy, by the
 * compiler's builtin, which their baselines run in hardware.
 *
 * sig_popcount_swar is also the kernel's popcount64 (sig_admits, can_reach).
 */
#ifndef OVERLAP_SIGSCAN_H
#define OVERLAP_SIGSCAN_H

#include <stdint.h>

#include "_cpu.h"

typedef int (*sig_scan_fn)(const uint64_t* sig, int64_t* p, int64_t end, uint64_t qsig,
                           int F, int b, uint64_t mask, const int* allowed,
                           int64_t* out, int room);

static inline int sig_popcount_swar(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}

/* Most entries fail in the first field tested, so the early exit is the
 * cheap path (a branch-free two-field test measured more instructions). */
#define SIG_SCAN_BODY(POPCOUNT)                                                 \
    {                                                                           \
        int n = 0, g, ok;                                                       \
        int64_t q = *p;                                                         \
        for (; q < end && n < room; q++) {                                      \
            const uint64_t x = qsig ^ sig[q];                                   \
            ok = 1;                                                             \
            for (g = 0; g < F; g++) {                                           \
                if (POPCOUNT((x >> (g * b)) & mask) > allowed[g]) {             \
                    ok = 0;                                                     \
                    break;                                                      \
                }                                                               \
            }                                                                   \
            if (ok)                                                             \
                out[n++] = q;                                                   \
        }                                                                       \
        *p = q;                                                                 \
        return n;                                                               \
    }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SIG_HAVE_POPCNT 1
#else
#define SIG_HAVE_POPCNT 0
#endif

static int sig_scan_portable(const uint64_t* sig, int64_t* p, int64_t end, uint64_t qsig,
                             int F, int b, uint64_t mask, const int* allowed,
                             int64_t* out, int room)
#if SIG_HAVE_POPCNT || !(defined(__GNUC__) || defined(__clang__))
    SIG_SCAN_BODY(sig_popcount_swar)
#else
    SIG_SCAN_BODY(__builtin_popcountll)
#endif

#if SIG_HAVE_POPCNT
__attribute__((target("popcnt")))
static int sig_scan_popcnt(const uint64_t* sig, int64_t* p, int64_t end, uint64_t qsig,
                           int F, int b, uint64_t mask, const int* allowed,
                           int64_t* out, int room)
    SIG_SCAN_BODY(__builtin_popcountll)
#endif

/* The scan of CPU level ``level`` (_cpu.h): the popcnt copy from CPU_LEVEL_POPCNT on. */
static sig_scan_fn sig_scan_for(int level)
{
#if SIG_HAVE_POPCNT
    if (level >= CPU_LEVEL_POPCNT)
        return sig_scan_popcnt;
#endif
    (void)level;
    return sig_scan_portable;
}

#endif
