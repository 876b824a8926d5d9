# cython: freethreading_compatible=True
"""Facts about a block of lines, from one look at its bytes.

The arrow reader takes a block of a JSONL file from pyarrow only when it can
show that the stdlib reader would read the same rows (``overlap._batches``):
the block's newlines against pyarrow's row count, no line holding two
objects (a ``}`` then spaces, tabs or carriage returns, then ``{``), and
the ``[`` and ``{`` that bound the nesting.  Counted here in C (numpy's
three comparisons and a regular expression took a quarter of the reading).
"""

from libc.stdint cimport uint8_t, int64_t
from libc.string cimport memchr


def jsonl_block_facts(const uint8_t[::1] block):
    """``(newlines, openers, two_objects)`` of ``block``: how many ``\\n``, how
    many ``[`` and ``{``, and whether a ``}`` is followed by a ``{`` with
    only spaces, tabs and carriage returns between them."""
    cdef Py_ssize_t n = block.shape[0], i, j
    cdef int64_t newlines = 0, openers = 0
    cdef bint two = False
    cdef const uint8_t* p
    cdef const uint8_t* hit
    cdef uint8_t c
    if n == 0:
        return 0, 0, False
    p = &block[0]
    with nogil:
        for i in range(n):
            c = p[i]
            newlines += c == 10
            openers += (c == 91) | (c == 123)
        i = 0
        while not two and i < n:
            hit = <const uint8_t*>memchr(p + i, 125, <size_t>(n - i))
            if hit == NULL:
                break
            j = hit - p + 1
            while j < n and (p[j] == 32 or p[j] == 9 or p[j] == 13):
                j += 1
            two = j < n and p[j] == 123
            i = j
    return int(newlines), int(openers), bool(two)


def count_byte(const uint8_t[::1] block, uint8_t byte):
    """How many bytes of ``block`` equal ``byte`` (one pass in C: the compiler
    vectorizes it; numpy's comparison and count took two passes and a
    temporary array)."""
    cdef Py_ssize_t n = block.shape[0], i
    cdef int64_t hits = 0
    cdef const uint8_t* p
    if n == 0:
        return 0
    p = &block[0]
    with nogil:
        for i in range(n):
            hits += p[i] == byte
    return int(hits)


def bom_after_newline(const uint8_t[::1] block):
    """Whether ``block`` holds a newline followed by a UTF-8 BOM (``EF BB BF``):
    a line other than the first starting with one (``memchr`` to each ``EF``;
    ``bytes.find`` of the four bytes took 3 % of a stream scan's CPU)."""
    cdef Py_ssize_t n = block.shape[0], i = 1
    cdef const uint8_t* p
    cdef const uint8_t* hit
    cdef bint found = False
    if n < 4:
        return False
    p = &block[0]
    with nogil:
        while i + 3 <= n:
            hit = <const uint8_t*>memchr(p + i, 0xEF, <size_t>(n - i - 2))
            if hit == NULL:
                break
            i = hit - p
            if p[i - 1] == 10 and p[i + 1] == 0xBB and p[i + 2] == 0xBF:
                found = True
                break
            i += 1
    return bool(found)
