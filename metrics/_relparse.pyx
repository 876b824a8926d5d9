# Scanner for CCKS/IPRE label files: tab-separated lines whose first field is
# an item id and whose last field is a space-separated list of relation ids.
# String work needs the GIL (it builds str objects); the byte scanning is C.

from libc.stdint cimport uint64_t
from cpython.unicode cimport PyUnicode_DecodeUTF8

import numpy as np

cdef inline bint _is_space(unsigned char c) noexcept nogil:
    return c == 32 or c == 13 or c == 9 or c == 11 or c == 12


cdef str _decode(const unsigned char* p, Py_ssize_t a, Py_ssize_t b):
    # strip ASCII blanks around the field
    while a < b and (p[a] == 32 or p[a] == 13):
        a += 1
    while b > a and (p[b - 1] == 32 or p[b - 1] == 13):
        b -= 1
    return PyUnicode_DecodeUTF8(<const char*>(p + a), b - a, "strict")


def scan(const unsigned char[::1] data, int n_cols, uint64_t allowed):
    """Parse ``data`` (BOM already removed).

    Returns ``(ids, masks, middle, error)``: ``ids`` a list of str, ``masks`` a
    uint64 array (bit r set = relation r), ``middle`` a list of lists holding
    the fields between the first and the last one (empty lists when
    ``n_cols == 2``), and ``error`` either None or ``(line_number, message)``.
    ``allowed`` is the mask of permitted relation ids.
    """
    cdef Py_ssize_t n = data.shape[0], pos = 0, start, end, k, f, a, b
    cdef Py_ssize_t line_no = 0, blank_line = 0
    cdef Py_ssize_t tabs[8]
    cdef int n_tabs
    cdef uint64_t mask, v
    cdef int digits, any_id
    cdef const unsigned char* p = &data[0] if n > 0 else NULL
    ids = []
    middle = [[] for _ in range(max(n_cols - 2, 0))]
    masks_list = np.empty(max(16, n // 16), dtype=np.uint64)
    cdef uint64_t[::1] masks = masks_list
    cdef Py_ssize_t count = 0
    while pos < n:
        start = pos
        while pos < n and p[pos] != 10:
            pos += 1
        end = pos
        pos += 1
        line_no += 1
        # blank (whitespace-only) line: fine only if nothing follows
        k = start
        while k < end and _is_space(p[k]):
            k += 1
        if k == end:
            if blank_line == 0:
                blank_line = line_no
            continue
        if blank_line != 0:
            return ids, None, middle, (blank_line, "blank line before more data")
        if end > start and p[end - 1] == 13:
            end -= 1
        n_tabs = 0
        for k in range(start, end):
            if p[k] == 9:
                if n_tabs < 8:
                    tabs[n_tabs] = k
                n_tabs += 1
        if n_tabs != n_cols - 1:
            return ids, None, middle, (
                line_no, f"expected {n_cols} tab-separated columns, found {n_tabs + 1}")
        try:
            item = _decode(p, start, tabs[0])
        except UnicodeDecodeError:
            return ids, None, middle, (line_no, "item id is not valid UTF-8")
        if len(item) == 0:
            return ids, None, middle, (line_no, "empty item id")
        for f in range(n_cols - 2):
            try:
                middle[f].append(_decode(p, tabs[f] + 1, tabs[f + 1]))
            except UnicodeDecodeError:
                return ids, None, middle, (line_no, f"column {f + 2} is not valid UTF-8")
        # relation ids: last field
        a = tabs[n_cols - 2] + 1
        b = end
        mask = 0
        any_id = 0
        k = a
        while k < b:
            while k < b and p[k] == 32:
                k += 1
            if k >= b:
                break
            v = 0
            digits = 0
            while k < b and p[k] != 32:
                if p[k] < 48 or p[k] > 57:
                    tok_end = k
                    while tok_end < b and p[tok_end] != 32:
                        tok_end += 1
                    token = bytes(p[k - digits:tok_end]).decode("utf-8", "replace")
                    return ids, None, middle, (
                        line_no, f"relation id {token!r} is not a non-negative integer")
                if v < 1000:
                    v = v * 10 + (p[k] - 48)
                digits += 1
                k += 1
            if v > 63:
                return ids, None, middle, (
                    line_no, f"relation id {bytes(p[k - digits:k]).decode()} is outside 0..63")
            if not (allowed >> v) & 1:
                return ids, None, middle, (line_no, f"unknown relation id {v}")
            mask |= (<uint64_t>1) << v
            any_id = 1
        if not any_id:
            return ids, None, middle, (line_no, "no relation ids (use 0 for NA)")
        if count == masks.shape[0]:
            masks_list = np.resize(masks_list, 2 * count)
            masks = masks_list
        masks[count] = mask
        count += 1
        ids.append(item)
    return ids, masks_list[:count].copy(), middle, None
