# The flat view of one or more aligned fields that every kernel reads.

from overlap._kernels._types cimport Coll


cdef class Collection:
    cdef Coll c
    cdef object _keep
    cdef object _ids
    cdef object _fp
    cdef object _lock
