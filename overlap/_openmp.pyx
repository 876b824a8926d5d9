"""OpenMP facts of this build, for the Python layer."""

from overlap._openmp cimport OVERLAP_OPENMP_ENABLED, omp_get_max_threads


def openmp_enabled():
    """Return True when the kernels were compiled with OpenMP."""
    return bool(OVERLAP_OPENMP_ENABLED)


def openmp_max_threads():
    """The OpenMP runtime's default team size (1 without OpenMP)."""
    return int(omp_get_max_threads())
