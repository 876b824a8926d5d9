# cython: freethreading_compatible=True
"""The one CPU-level switch of the kernels (levels: see ``_cpu.h``).

The level starts at the highest this CPU runs; every kernel call reads it
once, at its start, and picks its variants from it.  Every level computes the
same integers: tests lower it to run each variant.
"""

#: names of the levels, by number
LEVEL_NAMES = ("portable", "popcnt", "avx2", "avx512")

cdef int _cpu_level = cpu_detect_level()
cdef int _level = _cpu_level


cdef int current_level() noexcept nogil:
    return _level


def cpu_level():
    """Highest level this CPU runs (an index into LEVEL_NAMES)."""
    return _cpu_level


def simd_level():
    """The level the kernels use now."""
    return _level


def set_simd_level(int level):
    """Use level ``level`` (<= cpu_level()) from the next kernel call on; returns the previous one.

    Not for use while another thread runs a kernel.
    """
    global _level
    if level < 0 or level > _cpu_level:
        raise ValueError(f"level must be in [0, {_cpu_level}] on this CPU, got {level}")
    prev = _level
    _level = level
    return prev
