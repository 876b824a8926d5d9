# The postings cursor of the query phases (see _postings_search): a walk over
# one posting's entries that pass the size window and the positional filter,
# with the length filter and the signature test it applies.  All cdef inline:
# the phases call these per entry.

from libc.stdint cimport uint64_t, int64_t, int32_t, uint16_t

from overlap._kernels cimport _limits
from overlap._kernels._bounds cimport (
    MeasureArg, measure_of,
    differing_may_reach, may_reach, reach_count, reaching_bits, rest_caps_window,
    size_window,
)
from overlap._kernels._signatures cimport popcount64, sig_scan_fn
from overlap._kernels._types cimport (
    Entry, Group, Index, SUF_SAT, TokenInfo, overlap_prefetch, suffix_bound,
)

cdef enum:
    # size groups of a posting whose first entries a walk asks for up front
    PREFETCH_GROUPS = 16
    # the group whose entries (up to this many) a walk asks for in full when
    # it opens a group, so many groups on
    GROUPS_AHEAD = 2
    PREFETCH_GROUP_ENTRIES = 64


ctypedef struct SigFilter:
    # a scan's test of the entries' row signatures (see sig_prepare, sig_admits)
    bint active
    uint64_t qsig        # the query's row signature
    uint64_t mask        # one field's bits, shifted down
    int F
    int b                # bits per field
    int driver           # the scanned field: the entry gives the reference's size in it
    int64_t q            # the query's size in the scanned field
    double cut           # the scan's cut (a prune_cut)
    int allowed[_limits.MAX_FIELDS]   # other fields: most differing bits a match can show
    sig_scan_fn scan     # the group signature test (walk_fill) of the call's CPU level



cdef inline bint sig_admits(const SigFilter* sf, uint64_t rsig, int64_t z, MeasureArg mk) noexcept nogil:
    """False when the reference with row signature rsig (size z in the scanned field)
    surely cannot match (see sig_prepare)."""
    cdef uint64_t x = sf.qsig ^ rsig
    cdef int g, d
    for g in range(sf.F):
        d = popcount64((x >> (g * sf.b)) & sf.mask)
        if g == sf.driver:
            if not differing_may_reach(measure_of(mk), sf.q, z, d, sf.cut):
                return False
        elif d > sf.allowed[g]:
            return False
    return True



cdef inline int64_t lower_bound_group(const Group* g, int64_t lo, int64_t hi, int64_t size,
                                      int64_t first) noexcept nogil:
    """The first group in [lo, hi) whose size is >= ``size`` (hi if none).

    ``first`` is g[lo].size (kept in the token's TokenInfo, so it costs no
    read here).  Sizes are distinct and ascending, and mostly consecutive:
    the group ``size - first`` places on is tried first (one read, where a
    binary search would make several dependent ones), then a binary search.
    """
    cdef int64_t mid, guess
    if lo >= hi or first >= size:
        return lo
    guess = lo + (size - first)
    if guess < hi:
        # sizes rise by at least one a group, so g[guess].size >= size
        if g[guess].size == size:
            return guess
        hi = guess
    while lo < hi:
        mid = (lo + hi) >> 1
        if g[mid].size < size:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline int64_t lower_bound_entry(const Entry* e, int64_t lo, int64_t hi,
                                      int64_t size) noexcept nogil:
    """The first entry in [lo, hi) whose reference size is >= ``size`` (hi if none)."""
    cdef int64_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if e[mid].size < size:
            lo = mid + 1
        else:
            hi = mid
    return lo


ctypedef struct Walk:
    # a cursor over the entries of one posting that pass the size window and
    # the positional filter (see walk_fill)
    const Index* X
    int64_t p            # the next entry to look at
    int64_t end          # the end of its size group (grouped) or of the posting
    int64_t g            # grouped postings: the current size group, and the last + 1
    int64_t g_end
    int64_t post_end
    int64_t zlo          # the size window
    int64_t zhi
    int64_t q            # the query's size and its mass from this token on
    int64_t rest
    double cut
    bint grouped
    bint cut_short       # some entry in the window failed the positional filter
    int64_t n_read       # entries looked at
    int64_t z            # the size of the entry walk_next returned (grouped: of the open group)
    int sig_driver       # walk_fill, grouped: most differing signature bits in
                         # the scanned field for the open group's size (-1: none pass)


cdef inline void walk_start(Walk* w, const Index* X, int64_t vid, int64_t q, int64_t rest,
                            double cut, int64_t zmin, MeasureArg mk) noexcept nogil:
    """Start a walk over posting vid for a query of size q with mass rest left;
    sizes below zmin are left out of the window too (0: none)."""
    cdef int m = measure_of(mk)
    w.X = X
    w.q = q
    w.rest = rest
    w.cut = cut
    w.cut_short = False
    w.n_read = 0
    cdef const TokenInfo* ti = &X.tinfo[vid]
    w.post_end = ti.end
    size_window(m, q, cut, &w.zlo, &w.zhi)
    if zmin > w.zlo:
        w.zlo = zmin
    if rest_caps_window(m, q, rest, cut, &w.zhi):
        w.cut_short = True
    w.g = ti.g0
    w.g_end = ti.g0 + ti.ng
    w.grouped = ti.ng > 0
    cdef int64_t g, e
    cdef const Group* gr
    if w.grouped:
        # start "before" the first group in the window: walk_open_group opens it
        w.g = lower_bound_group(X.grp, w.g, w.g_end, w.zlo, ti.z0) - 1
        w.p = 0
        w.end = 0
        # the first entry of every group the walk will open is a random read:
        # ask for them all now, so that they overlap
        g = w.g + 1
        while g < w.g_end and g <= w.g + PREFETCH_GROUPS:
            gr = &X.grp[g]
            if gr.size > w.zhi:
                break
            e = gr.top if gr.top < rest else rest
            if may_reach(m, e, q, gr.size, cut):
                overlap_prefetch(&X.psuf[gr.start])
                if X.has_sig:
                    overlap_prefetch(&X.psig[gr.start])
            g += 1
    else:
        w.p = ti.start
        w.end = w.post_end


cdef inline int64_t walk_next(Walk* w, MeasureArg mk) noexcept nogil:
    """Short postings: the next entry that passes the size window and
    may_reach(min(e, rest), q, z), or -1 (grouped walks: see walk_open_group).

    Entries are sorted by size, then by e descending; a short posting is
    read entry by entry.
    """
    cdef const Entry* ent = w.X.ent
    cdef const uint16_t* psuf = w.X.psuf
    cdef int64_t e, z
    while w.p < w.end:
        z = ent[w.p].size
        if z > w.zhi:
            return -1
        w.p += 1
        if z < w.zlo:
            continue
        w.n_read += 1
        e = suffix_bound(psuf[w.p - 1], z)
        if may_reach(measure_of(mk), e if e < w.rest else w.rest, w.q, z, w.cut):
            w.z = z
            return w.p - 1
        w.cut_short = True
    return -1


cdef inline void prefetch_group(const Index* X, int64_t g, int64_t end) noexcept nogil:
    """Ask for the suffix masses and signatures of group g's entries (up to
    end, at most PREFETCH_GROUP_ENTRIES of them): groups are too short for
    the hardware's stream prefetch to start in time."""
    cdef int64_t a = X.grp[g].start, p
    if end > a + PREFETCH_GROUP_ENTRIES:
        end = a + PREFETCH_GROUP_ENTRIES
    p = a
    while p < end:
        overlap_prefetch(&X.psuf[p])
        p += 16
    p = a
    while X.has_sig and p < end:
        overlap_prefetch(&X.psig[p])
        p += 8


cdef inline bint walk_open_group(Walk* w, const SigFilter* sf, MeasureArg mk) noexcept nogil:
    """Grouped walks: move to the next size group with an entry that passes
    the positional filter and set [p, end) to the entries that pass it (a
    prefix of the group: e descends within it); False when the walk is over."""
    cdef const Group* grp
    cdef const uint16_t* psuf = w.X.psuf
    cdef int64_t z, e, p, gend, emin, rest = w.rest
    while True:
        w.g += 1
        if w.g >= w.g_end:
            return False
        grp = &w.X.grp[w.g]
        z = grp.size
        if z > w.zhi:
            return False
        e = grp.top
        if not may_reach(measure_of(mk), e if e < rest else rest, w.q, z, w.cut):
            # the group's largest suffix mass fails: skip it unread
            w.cut_short = True
            continue
        gend = grp[1].start if w.g + 1 < w.g_end else w.post_end
        if w.g + GROUPS_AHEAD < w.g_end:
            prefetch_group(w.X, w.g + GROUPS_AHEAD,
                           grp[GROUPS_AHEAD + 1].start if w.g + GROUPS_AHEAD + 1 < w.g_end
                           else w.post_end)
        # an entry passes when may_reach(min(e, rest)); rest passes (the top
        # did), so exactly when e reaches the smallest count that passes
        emin = reach_count(measure_of(mk), w.q, z, w.cut)
        if emin > SUF_SAT:
            # a stored SUF_SAT reads as z (see SUF_SAT): those entries pass
            # when z does, the others (below SUF_SAT) never
            emin = SUF_SAT if z >= emin else SUF_SAT + 1
        p = grp.start + 1   # its first entry holds the top, which passed
        while p < gend and psuf[p] >= emin:
            p += 1
        w.n_read += p - grp.start
        if p < gend:
            w.n_read += 1
            w.cut_short = True
        w.z = z
        w.p = grp.start
        w.end = p
        if sf.active:
            w.sig_driver = reaching_bits(measure_of(mk), sf.q, z, sf.cut, sf.b)
        return True



cdef inline void window_range(const Index* X, int64_t vid, int64_t zlo, int64_t zhi,
                              int64_t* a, int64_t* b) noexcept nogil:
    """The entries [a, b) of posting vid whose reference size lies in [zlo, zhi]."""
    cdef const TokenInfo* ti = &X.tinfo[vid]
    cdef int64_t g0 = ti.g0, g1 = ti.g0 + ti.ng, ga, gb, end = ti.end
    if g1 > g0:
        ga = lower_bound_group(X.grp, g0, g1, zlo, ti.z0)
        gb = lower_bound_group(X.grp, ga, g1, zhi + 1, X.grp[ga].size if ga < g1 else 0)
        a[0] = X.grp[ga].start if ga < g1 else end
        b[0] = X.grp[gb].start if gb < g1 else end
        return
    a[0] = lower_bound_entry(X.ent, ti.start, end, zlo)
    b[0] = lower_bound_entry(X.ent, a[0], end, zhi + 1)


cdef inline int64_t window_entries(const Index* X, int64_t vid, int64_t zlo,
                                   int64_t zhi) noexcept nogil:
    """Entries of posting vid whose reference size lies in [zlo, zhi]."""
    cdef int64_t a, b
    window_range(X, vid, zlo, zhi, &a, &b)
    return b - a
