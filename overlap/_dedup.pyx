# cython: freethreading_compatible=True
"""Passes of the iterative near-duplicate removal over the R > t graph."""

import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t

cnp.import_array()


def iterative_passes(const int64_t[::1] adj_ptr, const int64_t[::1] adj_nbr,
                     const double[::1] adj_score, int64_t n):
    """Run passes until one removes nothing.

    ``adj_*`` is the symmetric adjacency (CSR) of the pairs with R > t, each
    row's neighbours ascending.  Returns ``(keep, kept_for, passes)``.
    ValueError, before anything runs, unless the adjacency describes ``n`` rows
    whose neighbours all lie in ``[0, n)``.
    """
    cdef int64_t k
    if n < 0 or adj_ptr.shape[0] != n + 1 or adj_ptr[0] < 0 or (
            adj_ptr[n] > adj_nbr.shape[0] or adj_score.shape[0] != adj_nbr.shape[0]):
        raise ValueError("iterative_passes: the adjacency does not describe "
                         f"{n} rows")
    for k in range(n):
        if adj_ptr[k + 1] < adj_ptr[k]:
            raise ValueError("iterative_passes: row bounds that fall")
    for k in range(adj_ptr[0], adj_ptr[n]):
        if adj_nbr[k] < 0 or adj_nbr[k] >= n:
            raise ValueError(f"iterative_passes: a neighbour out of range for {n} rows")
    keep = np.ones(n, dtype=np.bool_)
    kept_for = np.full(n, -1, dtype=np.int64)
    protected = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] present = keep.view(np.uint8)
    cdef int64_t[::1] kf = kept_for
    cdef uint8_t[::1] prot = protected
    cdef int64_t passes = 0, i, e, j, best
    cdef double best_s
    cdef bint removed
    with nogil:
        while True:
            passes += 1
            removed = False
            for i in range(n):
                prot[i] = 0
            for i in range(n):
                if not present[i] or prot[i]:
                    continue
                best = -1
                best_s = -1.0
                for e in range(adj_ptr[i], adj_ptr[i + 1]):
                    j = adj_nbr[e]
                    # neighbours ascend, so '>' keeps the lowest index on ties
                    if present[j] and adj_score[e] > best_s:
                        best_s = adj_score[e]
                        best = j
                if best >= 0:
                    present[i] = 0
                    kf[i] = best
                    prot[best] = 1
                    removed = True
            if not removed:
                break
    return keep, kept_for, passes


def component_labels(const int64_t[::1] left, const int64_t[::1] right, int64_t n):
    """Connected components of the edge list, labelled by their smallest member.

    ValueError unless both ends of every edge lie in ``[0, n)``.
    """
    cdef int64_t k
    if n < 0 or left.shape[0] != right.shape[0]:
        raise ValueError("component_labels: edge columns of different lengths")
    for k in range(left.shape[0]):
        if left[k] < 0 or left[k] >= n or right[k] < 0 or right[k] >= n:
            raise ValueError(f"component_labels: an edge out of range for {n} rows")
    parent = np.arange(n, dtype=np.int64)
    cdef int64_t[::1] p = parent
    cdef int64_t e, a, b, ra, rb, i
    with nogil:
        for e in range(left.shape[0]):
            ra = left[e]
            while p[ra] != ra:
                p[ra] = p[p[ra]]
                ra = p[ra]
            rb = right[e]
            while p[rb] != rb:
                p[rb] = p[p[rb]]
                rb = p[rb]
            if ra != rb:
                # the root is always the smallest index of its component
                if ra < rb:
                    p[rb] = ra
                else:
                    p[ra] = rb
        for i in range(n):
            # roots are smaller than their members, so one forward sweep settles all
            p[i] = p[p[i]]
    return parent
