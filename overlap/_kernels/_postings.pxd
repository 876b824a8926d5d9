# The postings build: what the index over references reads from it.

from overlap._kernels._collection cimport Collection


cdef sign_entries(Collection refs, entries, int n_threads)
