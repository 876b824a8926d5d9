# The one CPU-level switch of the kernels (see _cpu.h): which compiled variant
# of the SIMD and popcount kernels a call uses.

cdef extern from "_cpu.h" nogil:
    enum:
        CPU_LEVEL_PORTABLE
        CPU_LEVEL_POPCNT
        CPU_LEVEL_AVX2
        CPU_LEVEL_AVX512
    int cpu_detect_level() noexcept


# The level the kernels use now: read once at the start of every kernel call.
cdef int current_level() noexcept nogil
