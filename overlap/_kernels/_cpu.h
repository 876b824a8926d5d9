/* The one CPU-level switch of the kernels.
 *
 * Levels, each including the ones below it:
 *   0 portable  the baseline of the target (x86-64: SSE2; any other arch)
 *   1 popcnt    the population-count instruction (the join's signature test,
 *               _sigscan.h)
 *   2 avx2      256-bit vectors (the bit-sliced block kernels, _bitslice_simd.h)
 *   3 avx512    512-bit vectors (AVX-512F; idem)
 * cpu_detect_level() is the highest level this CPU runs (x86-64 with GCC or
 * Clang; 0 elsewhere, where the compiler's builtins are the baseline).  The
 * kernels take the level they use from overlap._kernels._cpu, which starts at
 * this one and which tests lower to run every variant; every variant computes
 * the same integers.  Variants are compiled with
 * __attribute__((target(...))), never -march=native.
 */
#ifndef OVERLAP_CPU_H
#define OVERLAP_CPU_H

#define CPU_LEVEL_PORTABLE 0
#define CPU_LEVEL_POPCNT 1
#define CPU_LEVEL_AVX2 2
#define CPU_LEVEL_AVX512 3

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CPU_X86_DISPATCH 1
#else
#define CPU_X86_DISPATCH 0
#endif

static inline int cpu_detect_level(void)
{
#if CPU_X86_DISPATCH
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("popcnt"))
        return CPU_LEVEL_PORTABLE;
    if (!__builtin_cpu_supports("avx2"))
        return CPU_LEVEL_POPCNT;
    if (!__builtin_cpu_supports("avx512f"))
        return CPU_LEVEL_AVX2;
    return CPU_LEVEL_AVX512;
#else
    return CPU_LEVEL_PORTABLE;
#endif
}

#endif
