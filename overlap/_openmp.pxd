# OpenMP stand-ins: the real runtime when the build has OpenMP, serial stubs
# otherwise, so no omp_* symbol is ever left undefined.  Cython code that needs
# OpenMP functions cimports them from here, never from `openmp` directly.

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define OVERLAP_OPENMP_ENABLED 1
    #else
    #define OVERLAP_OPENMP_ENABLED 0
    static inline int omp_get_max_threads(void) { return 1; }
    static inline int omp_get_thread_num(void) { return 0; }
    static inline int omp_get_num_procs(void) { return 1; }
    #endif
    """
    bint OVERLAP_OPENMP_ENABLED
    int omp_get_max_threads() noexcept nogil
    int omp_get_thread_num() noexcept nogil
    int omp_get_num_procs() noexcept nogil
