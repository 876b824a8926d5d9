"""Checks the compiled kernels of metrics make on the arrays they are handed."""


ctypedef fused index_t:
    int
    Py_ssize_t


cdef inline int check_indices(const index_t[::1] a, Py_ssize_t n, Py_ssize_t top, str what) except -1:
    """ValueError unless ``a`` holds n values in [0, top)."""
    cdef Py_ssize_t i
    if a.shape[0] != n:
        raise ValueError(f"{what}: {a.shape[0]} entries for {n} points")
    for i in range(n):
        if a[i] < 0 or a[i] >= top:
            raise ValueError(f"{what}: an entry out of range [0, {top})")
    return 0


cdef inline int check_run_ends(const index_t[::1] e, Py_ssize_t n, str what) except -1:
    """ValueError unless e[k] (the end of k's run) lies in (k, n] for every k."""
    cdef Py_ssize_t k
    if e.shape[0] != n:
        raise ValueError(f"{what}: {e.shape[0]} run ends for {n} points")
    for k in range(n):
        if e[k] <= k or e[k] > n:
            raise ValueError(f"{what}: a run end out of range")
    return 0


cdef inline int check_segments(const Py_ssize_t[::1] offsets, Py_ssize_t n, str what) except -1:
    """ValueError unless ``offsets`` (at least one) rise from >= 0 to <= n."""
    cdef Py_ssize_t g
    if offsets.shape[0] < 1 or offsets[0] < 0 or offsets[offsets.shape[0] - 1] > n:
        raise ValueError(f"{what}: segment offsets outside the {n} values")
    for g in range(offsets.shape[0] - 1):
        if offsets[g + 1] < offsets[g]:
            raise ValueError(f"{what}: segment offsets that fall")
    return 0
