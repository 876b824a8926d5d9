"""Checks the compiled entry points make on the raw arrays they are handed."""

from libc.stdint cimport int64_t

from overlap._kernels._limits cimport MAX_FIELDS


cdef inline int check_flat(const int64_t[::1] ip, int64_t n_tokens, int n_fields, int64_t n,
                           str what) except -1:
    """Raise ValueError unless ``ip`` bounds ``n_fields`` fields of ``n`` rows each.

    Field f's row i is ``ip[f*(n+1) + i] : ip[f*(n+1) + i + 1]``: every bound
    must lie in ``[0, n_tokens]`` and rise within a field, so that no row
    reaches outside the token arrays.
    """
    cdef int64_t i, lo, hi
    cdef int f
    if n_fields < 1 or n_fields > MAX_FIELDS or n < 0:
        raise ValueError(f"{what}: {n_fields} field(s) of {n} rows: out of range")
    if ip.shape[0] != <int64_t>n_fields * (n + 1):
        raise ValueError(f"{what}: {ip.shape[0]} row bounds for {n_fields} field(s) of {n} rows")
    for f in range(n_fields):
        lo = f * (n + 1)
        hi = lo + n
        if ip[lo] < 0 or ip[hi] > n_tokens:
            raise ValueError(f"{what}: rows reach outside the {n_tokens} tokens")
        for i in range(lo, hi):
            if ip[i + 1] < ip[i]:
                raise ValueError(f"{what}: row bounds that fall")
    return 0


cdef inline int64_t longest_row(const int64_t[::1] ip, int n_fields, int64_t n, int64_t start,
                                int64_t stop) noexcept:
    """The most tokens a row of ``start:stop`` holds in one field (ip checked by check_flat)."""
    cdef int64_t i, top = 0
    cdef int f
    for f in range(n_fields):
        for i in range(f * (n + 1) + start, f * (n + 1) + stop):
            if ip[i + 1] - ip[i] > top:
                top = ip[i + 1] - ip[i]
    return top
