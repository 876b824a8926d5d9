# Every threshold <-> count bound of the kernels, once, for every set measure.
#
# A measure scores a pair from integers: i = |u ∩ v| (for bags, the sum of the
# smaller counts), a = |u| (the query, or left side) and b = |v| (the
# reference, or right side).  Its score is one float64 expression (the table
# of the specification, reproduced in ``score``), and a threshold decision is
# that value compared with the threshold (``>=``).
#
# The kernels prune with questions about that expression: which reference
# sizes can still reach a cut, how many shared tokens a pair needs, how large a
# reference may be when only ``rest`` query tokens are left to share, how many
# signature bits two rows may differ by.  Each question is answered here from
# ``score`` itself: a closed-form guess per measure, then corrected step by
# step with ``score``'s own float comparisons, so an answer is exactly the set
# of integers whose float score passes, never off by one.  The guesses only
# make the corrections short (one or two steps); they never decide.
#
# The facts the answers rest on, for sizes a, b >= 1 (each checked
# exhaustively for small sizes by tests/test_bounds.py):
#
# * ``score`` is non-decreasing in i (its float expression is a monotone
#   rounding of a real function increasing in i);
# * the best score sizes a and b allow, ``score(min(a, b), a, b)``, is
#   non-decreasing in b up to b = a and non-increasing after (for ``overlap``
#   and ``containment`` it stays 1.0 after b = a): the sizes that can reach a
#   cut form one interval around a;
# * with at most ``rest`` query tokens left to share, the best score against
#   size z, ``score(min(rest, z), a, z)``, peaks at z = rest and does not grow
#   after it;
# * two rows whose bit signatures differ in d bits have at least d tokens in
#   their symmetric difference, so i <= (a + b - d) / 2.

from libc.stdint cimport int64_t
from libc.math cimport ceil, sqrt, INFINITY

cdef enum Measure:
    DICE = 0          # 2.0*i/(a+b)
    JACCARD = 1       # i/(a+b-i)
    COSINE = 2        # i/sqrt(a*b)
    OVERLAP = 3       # i/min(a,b)
    CONTAINMENT = 4   # i/a: how much of the query lies inside the reference

cdef enum:
    N_MEASURES = 5
    # "No upper limit" for a size: sizes are int32 in the indexes.
    NO_SIZE_LIMIT = 2147483647
    # A count no pair reaches (need_count's answer past a + b); above every
    # row mass (< 2**COUNT_BITS) and still an int32.
    NEVER = 2147483647


# A kernel compiles its per-query phases twice through this fused type: with
# a DiceOnly argument every measure test below folds, at compile time, to the
# Dice arithmetic alone (the default keeps the speed it had before measure=
# existed); with AnyMeasure the argument is the measure, chosen at run time.
# Pass measure_of(mk) wherever a function here asks for ``m``.
ctypedef signed char DiceOnly
ctypedef int AnyMeasure
ctypedef fused MeasureArg:
    DiceOnly
    AnyMeasure


cdef inline int measure_of(MeasureArg mk) noexcept nogil:
    """The measure a MeasureArg stands for: DICE for DiceOnly, else its value."""
    if MeasureArg is DiceOnly:
        return DICE
    else:
        return mk


cdef inline double extended_score(int m, int64_t i, int64_t a, int64_t b) noexcept nogil:
    """The measure's float64 expression for a count i >= 1, also beyond min(a, b).

    Past min(a, b) the count is not a real intersection; the value there only
    serves ``need_count``, which may answer a count above min(a, b) to say "no
    pair of these sizes reaches the threshold".  A zero denominator reads as
    +inf.
    """
    cdef double den
    cdef double num = <double>i
    if m == DICE:
        num = 2.0 * num
        den = <double>(a + b)
    elif m == JACCARD:
        den = <double>(a + b - i)
    elif m == COSINE:
        den = sqrt(<double>a * <double>b)
    elif m == OVERLAP:
        den = <double>(a if a < b else b)
    else:
        den = <double>a
    if den <= 0.0:
        return INFINITY
    return num / den


cdef inline double score(int m, int64_t i, int64_t a, int64_t b) noexcept nogil:
    """The measure's score of a pair: 0.0 when i = 0 (so for empty sets too)."""
    if i <= 0:
        return 0.0
    return extended_score(m, i, a, b)


cdef inline bint one_means_identical(int m) noexcept nogil:
    """Does a score of 1.0 mean the two rows are equal?  For dice, jaccard and
    cosine it does (i = a = b); for overlap and containment a row inside a
    larger one scores 1.0 too, so shortcuts that stop at an identical row do
    not apply."""
    return m == DICE or m == JACCARD or m == COSINE


cdef inline double best_score(int m, int64_t a, int64_t b) noexcept nogil:
    """The highest score two rows of sizes a and b can have (they share min(a, b))."""
    return score(m, a if a < b else b, a, b)


cdef inline bint passes_length(int m, int64_t a, int64_t b, double cut) noexcept nogil:
    """The length filter: can rows of sizes a and b reach ``cut`` at all?"""
    return best_score(m, a, b) >= cut


cdef inline double prune_cut(double threshold) noexcept nogil:
    """The cut the kernels prune with: the threshold lowered by a relative
    1e-12, so that a product-form test (``may_reach``) rounding the other way
    never prunes a pair whose score equals the threshold."""
    return threshold * (1.0 - 1e-12)


cdef inline bint may_reach(int m, int64_t c, int64_t a, int64_t b, double cut) noexcept nogil:
    """Can a count c against sizes a, b reach ``cut``?  The division-free form of
    ``score(c, a, b) >= cut`` for hot loops.

    It may round differently from ``score`` in the last bit, so it prunes only
    with a ``prune_cut``: every pair whose score reaches the threshold passes.
    """
    if m == DICE:
        return 2.0 * <double>c >= cut * <double>(a + b)
    if m == JACCARD:
        return <double>c >= cut * <double>(a + b - c)
    # (cosine and overlap: a product with an empty side is 0, which no count
    # beats; a count of 0 reaches only a cut of 0)
    if m == COSINE:
        return (<double>c * <double>c >= cut * cut * (<double>a * <double>b)
                and (c > 0 or cut <= 0.0))
    if m == OVERLAP:
        return <double>c >= cut * <double>(a if a < b else b) and (c > 0 or cut <= 0.0)
    return <double>c >= cut * <double>a


cdef inline bint length_may_pass(int m, int64_t a, int64_t b, double cut) noexcept nogil:
    """The length filter in the division-free form: ``may_reach`` of min(a, b)."""
    return may_reach(m, a if a < b else b, a, b, cut)


cdef inline bint rest_may_reach(int m, int64_t q, int64_t rest, int64_t z,
                                double cut) noexcept nogil:
    """``may_reach`` of the most a size-z reference can share with ``rest``
    query tokens left: min(rest, z)."""
    return may_reach(m, rest if rest < z else z, q, z, cut)


cdef inline int64_t reach_count(int m, int64_t a, int64_t b, double cut) noexcept nogil:
    """The smallest count c >= 0 that ``may_reach`` passes against sizes a, b.

    For dice, overlap and containment this is one ceil: ``may_reach`` compares
    an integer (or twice one) with a product, and 0.5 * x is exact in binary
    floating point.  Jaccard and cosine start from the closed form and step.
    """
    cdef int64_t c
    if cut <= 0.0:
        return 0
    if m == DICE:
        return <int64_t>ceil(0.5 * (cut * <double>(a + b)))
    if m == OVERLAP:
        return <int64_t>ceil(cut * <double>(a if a < b else b))
    if m == CONTAINMENT:
        return <int64_t>ceil(cut * <double>a)
    if m == JACCARD:
        c = <int64_t>(cut * <double>(a + b) / (1.0 + cut))
    else:
        c = <int64_t>(cut * sqrt(<double>a * <double>b))
    while c > 0 and may_reach(m, c - 1, a, b, cut):
        c -= 1
    while not may_reach(m, c, a, b, cut):
        c += 1
    return c


cdef inline bint differing_may_reach(int m, int64_t a, int64_t b, int64_t d,
                                     double cut) noexcept nogil:
    """Can rows of sizes a, b whose signatures differ in d bits reach ``cut``?

    Each differing bit stands for at least one token of one row missing from
    the other, so they share at most (a + b - d) / 2 tokens (and min(a, b)).
    """
    cdef int64_t c = (a + b - d) >> 1
    if c > a:
        c = a
    if c > b:
        c = b
    if c < 0:
        c = 0
    return may_reach(m, c, a, b, cut)


cdef inline int reaching_bits(int m, int64_t a, int64_t b, double cut, int bits) noexcept nogil:
    """The most differing bits (of ``bits``) that ``differing_may_reach`` passes
    for sizes a, b; -1 when none does."""
    cdef int64_t c = reach_count(m, a, b, cut), d
    if c > (a if a < b else b):
        return -1
    d = a + b - 2 * c
    return <int>(d if d < bits else bits)


cdef inline double count_guess(int m, double cut, int64_t a, int64_t b) noexcept nogil:
    """The real count at which the measure's real-valued score reaches ``cut``."""
    if m == DICE:
        return cut * <double>(a + b) * 0.5
    if m == JACCARD:
        return cut * <double>(a + b) / (1.0 + cut)
    if m == COSINE:
        return cut * sqrt(<double>a * <double>b)
    if m == OVERLAP:
        return cut * <double>(a if a < b else b)
    return cut * <double>a


cdef inline int64_t need_count(int m, double cut, int64_t a, int64_t b) noexcept nogil:
    """The smallest count c >= 1 whose score against sizes a, b is >= ``cut``.

    An answer above min(a, b) means no pair of these sizes reaches ``cut``; it
    is then the count the measure's expression would need (``NEVER`` past
    a + b), which still grows with b, so it bounds a block of larger sizes.
    """
    cdef double g
    cdef int64_t c, top = a + b
    if cut <= 0.0:
        return 1
    g = count_guess(m, cut, a, b)
    if g >= <double>top:
        c = top
    else:
        c = <int64_t>g
    if c < 1:
        c = 1
    while c > 1 and extended_score(m, c - 1, a, b) >= cut:
        c -= 1
    while c <= top and extended_score(m, c, a, b) < cut:
        c += 1
    return c if c <= top else NEVER


cdef inline int64_t loose_need(int m, double cut, int64_t a, int64_t b) noexcept nogil:
    """A cheap lower bound of ``need_count`` (never above it) for early exits.

    The merge of two rows stops once its count plus what is left cannot
    reach this; a bound below the exact count only stops later.
    """
    cdef int64_t c
    if cut <= 0.0:
        return 0
    c = <int64_t>count_guess(m, cut, a, b) - 1
    return c if c > 0 else 0


cdef inline void size_window(int m, int64_t q, double cut, int64_t* lo,
                             int64_t* hi) noexcept nogil:
    """Reference sizes [lo, hi] that pass the length filter against query size q.

    Exactly the sizes b for which ``length_may_pass(q, b)`` holds; lo > hi when
    there is none, hi = NO_SIZE_LIMIT when there is no upper limit.  The
    kernels call it once per posting visited, so it uses the division-free
    test: with a ``prune_cut`` it holds every size whose best score reaches
    the threshold.
    """
    cdef double guess
    cdef int64_t top = NO_SIZE_LIMIT
    if cut <= 0.0:
        lo[0] = 0
        hi[0] = top
        return
    if q <= 0 or not length_may_pass(m, q, q, cut):
        lo[0] = 1
        hi[0] = 0
        return
    if m == DICE:
        guess = cut * <double>q / (2.0 - cut)
    elif m == COSINE:
        guess = cut * cut * <double>q
    elif m == OVERLAP:
        guess = 1.0
    else:
        guess = cut * <double>q
    lo[0] = <int64_t>guess if guess < <double>q else q
    while lo[0] > 0 and length_may_pass(m, q, lo[0] - 1, cut):
        lo[0] -= 1
    while lo[0] < q and not length_may_pass(m, q, lo[0], cut):
        lo[0] += 1
    if m == OVERLAP or m == CONTAINMENT:
        hi[0] = top      # a larger reference still holds the whole query
        return
    if m == DICE:
        guess = (2.0 - cut) * <double>q / cut
    elif m == JACCARD:
        guess = <double>q / cut
    else:
        guess = <double>q / (cut * cut)
    hi[0] = top if guess >= <double>top else <int64_t>guess
    if hi[0] < q:
        hi[0] = q
    while hi[0] > q and not length_may_pass(m, q, hi[0], cut):
        hi[0] -= 1
    while hi[0] < top and length_may_pass(m, q, hi[0] + 1, cut):
        hi[0] += 1


cdef inline double rest_score(int m, int64_t q, int64_t rest, int64_t z) noexcept nogil:
    """The best score against a size-z reference when at most ``rest`` query
    tokens are left to share."""
    return score(m, rest if rest < z else z, q, z)


cdef inline double peak_rest_score(int m, int64_t q, int64_t rest) noexcept nogil:
    """The best score any reference can reach sharing at most ``rest`` of the
    query's q tokens (``rest_score`` peaks at z = rest)."""
    return score(m, rest, q, rest)


cdef inline bint rest_caps_window(int m, int64_t q, int64_t rest, double cut,
                                  int64_t* zhi) noexcept nogil:
    """Lower zhi to the largest size z <= zhi that ``rest_may_reach`` passes
    (-1: none); True when it moved.  Division-free, like ``size_window``: with
    a ``prune_cut`` every size whose ``rest_score`` reaches the threshold stays."""
    cdef double guess
    cdef int64_t z, peak
    if cut <= 0.0 or zhi[0] < 0:
        return False
    peak = rest if rest < zhi[0] else zhi[0]
    if not rest_may_reach(m, q, rest, peak, cut):
        zhi[0] = -1
        return True
    if peak == zhi[0] or rest_may_reach(m, q, rest, zhi[0], cut):
        return False
    # rest < z <= zhi, where rest_score(z) = score(rest, q, z) does not grow
    if m == DICE:
        guess = 2.0 * <double>rest / cut - <double>q
    elif m == JACCARD:
        guess = <double>rest / cut - <double>q + <double>rest
    elif m == COSINE:
        guess = <double>rest * <double>rest / (cut * cut * <double>q)
    elif m == OVERLAP:
        guess = <double>rest / cut
    else:
        guess = <double>rest    # containment: rest/q is flat in z, and failed at zhi
    if guess >= <double>zhi[0]:
        z = zhi[0] - 1
    elif guess <= <double>rest:
        z = rest
    else:
        z = <int64_t>guess
    while z + 1 < zhi[0] and rest_may_reach(m, q, rest, z + 1, cut):
        z += 1
    while z > rest and not rest_may_reach(m, q, rest, z, cut):
        z -= 1
    zhi[0] = z
    return True


cdef inline int max_differing_bits(int m, int64_t q, int64_t z, double cut,
                                   int bits) noexcept nogil:
    """The most signature bits (of ``bits``) in which rows of sizes q and z may
    differ and still reach ``cut`` (-1: they cannot reach it at all).

    d differing bits leave at most (q + z - d) / 2 shared tokens, so a match
    needs q + z - d >= 2 * need_count.
    """
    cdef int64_t need, d
    if cut <= 0.0:
        return bits
    need = need_count(m, cut, q, z)
    if need > (q if q < z else z):
        return -1
    d = q + z - 2 * need
    return <int>(d if d < bits else bits)


cdef inline int window_differing_bits(int m, int64_t q, int64_t zhi,
                                      double cut, int bits) noexcept nogil:
    """The most differing bits any size up to the window top zhi allows
    (``bits`` when the window has no upper limit), in the division-free form
    of ``size_window`` (``reaching_bits``).

    ``reaching_bits`` is q + z - 2 * reach_count: it rises with z except where
    the needed count steps up.  At the top of a finite window (dice, jaccard,
    cosine) the needed count is q itself, and the needed count falls at most
    half as fast as z below it, so no size in the window allows more bits
    than zhi does.
    """
    if zhi >= NO_SIZE_LIMIT:
        return bits
    return reaching_bits(m, q, zhi, cut, bits)
