# The limits shared by the kernels and the Python checks, defined once.
#
# ``overlap._kernels._collection`` exports each of them as a Python constant
# (MAX_FIELDS, MAX_QUERY_TOKENS, MAX_ROW_MASS); the Python layer validates
# against those constants, never against a literal of its own.

cdef enum:
    # Most fields a sample may have: per-field query state lives on the stack.
    MAX_FIELDS = 8
    # Bits of a query token's position in the scan-order key (rank << bits | position):
    # a query row holds at most 2**QUERY_TOKEN_BITS - 1 tokens over all its fields.
    QUERY_TOKEN_BITS = 24
    # Bits of a candidate's count in its per-reference state word (the top two
    # bits hold its flag): a row's mass (size) is at most 2**COUNT_BITS - 1.
    COUNT_BITS = 30
