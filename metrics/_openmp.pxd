# OpenMP stand-ins of metrics (its own: metrics never cimports overlap's
# private modules): the real runtime when the build has OpenMP, serial stubs
# otherwise, so no omp_* symbol is ever left undefined.  Cython code of
# metrics that needs OpenMP functions cimports them from here, never from
# `openmp` directly.

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #else
    static inline int omp_get_thread_num(void) { return 0; }
    #endif
    """
    int omp_get_thread_num() noexcept nogil
