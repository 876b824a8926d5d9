# Co-moments of paired data, accurate under a large common offset.
#
# A block of moments is 8 doubles (MOMENT_FIELDS):
#   [0] n       number of pairs
#   [1] kx      the block's anchor for x: a double near its values
#   [2] ky      the anchor for y
#   [3] mx      mean(x) - kx   (small: the anchor lies inside the data)
#   [4] my      mean(y) - ky
#   [5] sxx     sum (x - mean x)^2
#   [6] syy     sum (y - mean y)^2
#   [7] sxy     sum (x - mean x)(y - mean y)
#
# Why the anchor: a mean of values near 1e9 is only known to ulp(1e9) ~ 1e-7,
# and Chan's merge of two blocks multiplies the difference of their means, so
# means stored as plain doubles lose ~1e-5 of the between-block sum of squares
# when the spread is 1.  Stored as anchor + small offset, the difference of two
# means is (kx_b - kx_a) + (mx_b - mx_a): the first term is exact when the
# anchors are close (Sterbenz) and the second is accurate to eps * spread.
# Within a block, d = x - kx has relative error <= 2 eps for every anchor (and
# is exact for values within a factor 2 of it), so the corrected two-pass sums
# are as accurate as the data allow.

cdef enum:
    MOMENT_FIELDS = 8


cdef inline void block_moments(const double* x, const double* y, Py_ssize_t m,
                               double* out) noexcept nogil:
    """Moments of x[0:m], y[0:m] (m >= 1) by the corrected two-pass method, from
    cache.

    Pass 1 takes the plain mean as the anchor (off by a few ulps of a large
    offset, which is fine: any double near the data will do).  Pass 2 sums
    d = x - anchor (exact for data near the anchor), d^2 and d e; the mean of
    d is the anchor's error, kept as the block's small offset, and
    Sxx = sum d^2 - (sum d)^2 / m removes it from the sums of squares.
    """
    cdef double sx0 = 0, sx1 = 0, sx2 = 0, sx3 = 0
    cdef double sy0 = 0, sy1 = 0, sy2 = 0, sy3 = 0
    cdef Py_ssize_t i, m4 = m - (m % 4)
    for i in range(0, m4, 4):
        sx0 += x[i]; sx1 += x[i + 1]; sx2 += x[i + 2]; sx3 += x[i + 3]
        sy0 += y[i]; sy1 += y[i + 1]; sy2 += y[i + 2]; sy3 += y[i + 3]
    for i in range(m4, m):
        sx0 += x[i]
        sy0 += y[i]
    cdef double kx = ((sx0 + sx1) + (sx2 + sx3)) / m
    cdef double ky = ((sy0 + sy1) + (sy2 + sy3)) / m
    if not (kx - kx == 0 and ky - ky == 0):  # inf or NaN (or an overflowed sum)
        kx = x[0]
        ky = y[0]
    cdef double a0 = 0, a1 = 0, b0 = 0, b1 = 0, c0 = 0, c1 = 0
    cdef double u0 = 0, u1 = 0, v0 = 0, v1 = 0
    cdef double dx0, dy0, dx1, dy1
    cdef Py_ssize_t m2 = m - (m % 2)
    for i in range(0, m2, 2):
        dx0 = x[i] - kx; dy0 = y[i] - ky
        dx1 = x[i + 1] - kx; dy1 = y[i + 1] - ky
        u0 += dx0; u1 += dx1
        v0 += dy0; v1 += dy1
        a0 += dx0 * dx0; a1 += dx1 * dx1
        b0 += dy0 * dy0; b1 += dy1 * dy1
        c0 += dx0 * dy0; c1 += dx1 * dy1
    for i in range(m2, m):
        dx0 = x[i] - kx; dy0 = y[i] - ky
        u0 += dx0; v0 += dy0
        a0 += dx0 * dx0; b0 += dy0 * dy0; c0 += dx0 * dy0
    cdef double su = u0 + u1, sv = v0 + v1
    out[0] = <double>m
    out[1] = kx
    out[2] = ky
    out[3] = su / m
    out[4] = sv / m
    out[5] = (a0 + a1) - su * (su / m)
    out[6] = (b0 + b1) - sv * (sv / m)
    out[7] = (c0 + c1) - su * (sv / m)


cdef inline void block_moments_plain(const double* x, const double* y, Py_ssize_t m,
                                     double* out) noexcept nogil:
    """The fast variant for data whose mean is not large against its spread:
    plain two-pass moments, the mean itself as the anchor (offset 0).  The
    Python layer checks the conditioning and falls back to block_moments."""
    cdef double sx0 = 0, sx1 = 0, sx2 = 0, sx3 = 0
    cdef double sy0 = 0, sy1 = 0, sy2 = 0, sy3 = 0
    cdef Py_ssize_t i, m4 = m - (m % 4)
    for i in range(0, m4, 4):
        sx0 += x[i]; sx1 += x[i + 1]; sx2 += x[i + 2]; sx3 += x[i + 3]
        sy0 += y[i]; sy1 += y[i + 1]; sy2 += y[i + 2]; sy3 += y[i + 3]
    for i in range(m4, m):
        sx0 += x[i]
        sy0 += y[i]
    cdef double mx = ((sx0 + sx1) + (sx2 + sx3)) / m
    cdef double my = ((sy0 + sy1) + (sy2 + sy3)) / m
    cdef double a0 = 0, a1 = 0, b0 = 0, b1 = 0, c0 = 0, c1 = 0
    cdef double dx0, dy0, dx1, dy1
    cdef Py_ssize_t m2 = m - (m % 2)
    for i in range(0, m2, 2):
        dx0 = x[i] - mx; dy0 = y[i] - my
        dx1 = x[i + 1] - mx; dy1 = y[i + 1] - my
        a0 += dx0 * dx0; a1 += dx1 * dx1
        b0 += dy0 * dy0; b1 += dy1 * dy1
        c0 += dx0 * dy0; c1 += dx1 * dy1
    for i in range(m2, m):
        dx0 = x[i] - mx; dy0 = y[i] - my
        a0 += dx0 * dx0; b0 += dy0 * dy0; c0 += dx0 * dy0
    out[0] = <double>m
    out[1] = mx
    out[2] = my
    out[3] = 0
    out[4] = 0
    out[5] = a0 + a1
    out[6] = b0 + b1
    out[7] = c0 + c1


cdef inline void merge_moments(double* acc, const double* part) noexcept nogil:
    """Chan et al.'s pairwise update: fold ``part`` into ``acc`` (acc keeps its
    anchor)."""
    cdef double na = acc[0], nb = part[0]
    cdef Py_ssize_t k
    if nb == 0:
        return
    if na == 0:
        for k in range(MOMENT_FIELDS):
            acc[k] = part[k]
        return
    cdef double n = na + nb
    cdef double dx = (part[1] - acc[1]) + (part[3] - acc[3])
    cdef double dy = (part[2] - acc[2]) + (part[4] - acc[4])
    cdef double f = na * nb / n
    acc[0] = n
    acc[3] = acc[3] + dx * (nb / n)
    acc[4] = acc[4] + dy * (nb / n)
    acc[5] = acc[5] + part[5] + dx * dx * f
    acc[6] = acc[6] + part[6] + dy * dy * f
    acc[7] = acc[7] + part[7] + dx * dy * f


cdef inline void zero_moments(double* acc) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(MOMENT_FIELDS):
        acc[k] = 0
