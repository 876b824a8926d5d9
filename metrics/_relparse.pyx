# Scanner for CCKS/IPRE label files: tab-separated lines whose first field is
# an item id and whose last field is a space-separated list of relation ids.
#
# Lines and tabs are found with memchr.  Only the item ids become str objects
# here (they key the index); the columns between the first and the last one
# are checked (valid UTF-8, sentence ids not blank) and returned as byte
# spans, which RelationLabels decodes when they are first asked for.

from libc.stdint cimport uint64_t, int64_t
from libc.string cimport memchr, memcpy
from cpython.unicode cimport PyUnicode_DecodeUTF8

import numpy as np

cdef inline bint _is_space(unsigned char c) noexcept nogil:
    return c == 32 or c == 13 or c == 9 or c == 11 or c == 12


cdef inline bint _py_space(unsigned char c) noexcept nogil:
    """ASCII characters for which str.isspace() is true."""
    return c == 32 or (9 <= c <= 13) or (28 <= c <= 31)


cdef bint _valid_utf8(const unsigned char* p, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Well-formed UTF-8 (Unicode Table 3-7: no overlongs, surrogates or
    values above U+10FFFF), i.e. exactly what the strict decoder accepts."""
    cdef uint64_t word
    cdef unsigned char c, c1
    while a < b:
        if b - a >= 8:
            memcpy(&word, p + a, 8)
            if (word & 0x8080808080808080ULL) == 0:
                a += 8
                continue
        c = p[a]
        if c < 0x80:
            a += 1
        elif c < 0xC2:
            return False
        elif c < 0xE0:
            if a + 1 >= b or (p[a + 1] & 0xC0) != 0x80:
                return False
            a += 2
        elif c < 0xF0:
            if a + 2 >= b:
                return False
            c1 = p[a + 1]
            if c == 0xE0:
                if c1 < 0xA0 or c1 > 0xBF:
                    return False
            elif c == 0xED:
                if c1 < 0x80 or c1 > 0x9F:
                    return False
            elif (c1 & 0xC0) != 0x80:
                return False
            if (p[a + 2] & 0xC0) != 0x80:
                return False
            a += 3
        elif c < 0xF5:
            if a + 3 >= b:
                return False
            c1 = p[a + 1]
            if c == 0xF0:
                if c1 < 0x90 or c1 > 0xBF:
                    return False
            elif c == 0xF4:
                if c1 < 0x80 or c1 > 0x8F:
                    return False
            elif (c1 & 0xC0) != 0x80:
                return False
            if (p[a + 2] & 0xC0) != 0x80 or (p[a + 3] & 0xC0) != 0x80:
                return False
            a += 4
        else:
            return False
    return True


cdef int _blank_field(const unsigned char* p, Py_ssize_t a, Py_ssize_t b):
    """1 when the field is empty after str.strip(), else 0."""
    cdef Py_ssize_t k
    cdef bint ascii = True
    for k in range(a, b):
        if p[k] >= 0x80:
            ascii = False
        elif not _py_space(p[k]):
            return 0
    if ascii:
        return 1
    # only spaces and non-ASCII characters: let Python decide (rare)
    return 0 if PyUnicode_DecodeUTF8(<const char*>(p + a), b - a, "strict").strip() else 1


cdef str _decode(const unsigned char* p, Py_ssize_t a, Py_ssize_t b):
    # strip ASCII blanks around the field
    while a < b and (p[a] == 32 or p[a] == 13):
        a += 1
    while b > a and (p[b - 1] == 32 or p[b - 1] == 13):
        b -= 1
    return PyUnicode_DecodeUTF8(<const char*>(p + a), b - a, "strict")


def count_columns(const unsigned char[::1] data):
    """Tab-separated columns of the first non-blank line (0 for a blank file)."""
    cdef Py_ssize_t n = data.shape[0], pos = 0, start, end, k, tabs
    cdef const unsigned char* p = &data[0] if n > 0 else NULL
    cdef const unsigned char* hit
    while pos < n:
        start = pos
        hit = <const unsigned char*> memchr(p + pos, 10, n - pos)
        end = (hit - p) if hit != NULL else n
        pos = end + 1
        k = start
        while k < end and _is_space(p[k]):
            k += 1
        if k == end:
            continue
        tabs = 0
        for k in range(start, end):
            if p[k] == 9:
                tabs += 1
        return tabs + 1
    return 0


cdef Py_ssize_t find_tabs(const unsigned char* p, Py_ssize_t start, Py_ssize_t end,
                          Py_ssize_t* tabs) noexcept:
    """Count the tabs of the line p[start:end]; the first 8 positions go to ``tabs``."""
    cdef Py_ssize_t n_tabs = 0, k = start
    cdef const unsigned char* hit
    while k < end:
        hit = <const unsigned char*> memchr(p + k, 9, end - k)
        if hit == NULL:
            break
        if n_tabs < 8:
            tabs[n_tabs] = hit - p
        n_tabs += 1
        k = (hit - p) + 1
    return n_tabs


cdef object relation_mask(const unsigned char* p, Py_ssize_t a, Py_ssize_t b,
                          uint64_t allowed, uint64_t* out):
    """Read the space-separated relation ids of p[a:b] into the bit mask ``out``.

    Returns None, or the message for the first bad id (or for none at all).
    """
    cdef uint64_t mask = 0, v
    cdef int digits, any_id = 0
    cdef Py_ssize_t k = a, tok_end
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
                return f"relation id {token!r} is not a non-negative integer"
            if v < 1000:
                v = v * 10 + (p[k] - 48)
            digits += 1
            k += 1
        if v > 63:
            return f"relation id {bytes(p[k - digits:k]).decode()} is outside 0..63"
        if not (allowed >> v) & 1:
            return f"unknown relation id {v}"
        mask |= (<uint64_t>1) << v
        any_id = 1
    if not any_id:
        return "no relation ids (use 0 for NA)"
    out[0] = mask
    return None


def scan(const unsigned char[::1] data, int n_cols, uint64_t allowed):
    """Parse ``data`` (BOM already removed).

    Returns ``(ids, index, masks, spans, error)``:

    * ``ids``: list of item ids (str), in file order;
    * ``index``: dict item id -> row;
    * ``masks``: uint64 array, bit r set = relation r;
    * ``spans``: int64 array of shape (rows, n_cols - 2, 2), the byte range
      of every middle column with blanks (space, CR) stripped;
    * ``error``: None or ``(line_number, message)`` for the first bad line.

    ``allowed`` is the mask of permitted relation ids.  For ``n_cols == 5``
    the fourth column (sentence ids) must not be blank.
    """
    cdef Py_ssize_t n = data.shape[0], pos = 0, start, end, k, f, a, b
    cdef Py_ssize_t line_no = 0, blank_line = 0, n_mid = max(n_cols - 2, 0)
    cdef Py_ssize_t tabs[8]
    cdef Py_ssize_t n_tabs
    cdef uint64_t mask = 0
    cdef const unsigned char* p = &data[0] if n > 0 else NULL
    cdef const unsigned char* hit
    cdef Py_ssize_t cap = max(16, n // 16), count = 0
    cdef object item, first
    cdef dict index
    ids = []
    index = {}
    masks_arr = np.empty(cap, dtype=np.uint64)
    spans_arr = np.empty((cap, n_mid, 2), dtype=np.int64)
    cdef uint64_t[::1] masks = masks_arr
    cdef int64_t[:, :, ::1] spans = spans_arr
    while pos < n:
        start = pos
        hit = <const unsigned char*> memchr(p + pos, 10, n - pos)
        end = (hit - p) if hit != NULL else n
        pos = end + 1
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
            return ids, index, None, None, (blank_line, "blank line before more data")
        if p[end - 1] == 13:
            end -= 1
        n_tabs = find_tabs(p, start, end, tabs)
        if n_tabs != n_cols - 1:
            return ids, index, None, None, (
                line_no, f"expected {n_cols} tab-separated columns, found {n_tabs + 1}")
        try:
            item = _decode(p, start, tabs[0])
        except UnicodeDecodeError:
            return ids, index, None, None, (line_no, "item id is not valid UTF-8")
        if len(item) == 0:
            return ids, index, None, None, (line_no, "empty item id")
        if count == cap:
            cap *= 2
            masks_arr = np.resize(masks_arr, cap)
            masks = masks_arr
            spans_arr = np.resize(spans_arr, (cap, n_mid, 2))
            spans = spans_arr
        for f in range(n_mid):
            a = tabs[f] + 1
            b = tabs[f + 1]
            while a < b and (p[a] == 32 or p[a] == 13):
                a += 1
            while b > a and (p[b - 1] == 32 or p[b - 1] == 13):
                b -= 1
            if not _valid_utf8(p, a, b):
                return ids, index, None, None, (line_no, f"column {f + 2} is not valid UTF-8")
            if f == 2 and _blank_field(p, a, b):
                return ids, index, None, None, (line_no, "empty sentence id list")
            spans[count, f, 0] = a
            spans[count, f, 1] = b
        # relation ids: last field
        problem = relation_mask(p, tabs[n_cols - 2] + 1, end, allowed, &mask)
        if problem is not None:
            return ids, index, None, None, (line_no, problem)
        first = index.setdefault(item, count)
        if <Py_ssize_t>first != count:
            return ids, index, None, None, (
                line_no, f"duplicate item id {item!r} (first on line {<Py_ssize_t>first + 1})")
        masks[count] = mask
        count += 1
        ids.append(item)
    return ids, index, masks_arr[:count].copy(), spans_arr[:count].copy(), None
