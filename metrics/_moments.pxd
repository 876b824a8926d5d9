# Co-moments of paired data, accurate under a large common offset.
#
# A block of moments is 8 doubles (MOMENT_FIELDS):
#   [0] n       number of pairs
#   [1] kx      a data value of x (the block's anchor; exact)
#   [2] ky      a data value of y
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
# Within a block, d = x - kx has relative error <= 2 eps for every anchor, so
# the two-pass deviations d - mx are as accurate as the data allow.

cdef enum:
    MOMENT_FIELDS = 8


cdef inline void block_moments(const double* x, const double* y, Py_ssize_t m,
                               double* out) noexcept nogil:
    """Moments of x[0:m], y[0:m] (m >= 1) by two passes from cache, anchored
    at the first pair."""
    cdef double kx = x[0], ky = y[0]
    cdef double sx0 = 0, sx1 = 0, sx2 = 0, sx3 = 0
    cdef double sy0 = 0, sy1 = 0, sy2 = 0, sy3 = 0
    cdef Py_ssize_t i, m4 = m - (m % 4)
    for i in range(0, m4, 4):
        sx0 += x[i] - kx; sx1 += x[i + 1] - kx; sx2 += x[i + 2] - kx; sx3 += x[i + 3] - kx
        sy0 += y[i] - ky; sy1 += y[i + 1] - ky; sy2 += y[i + 2] - ky; sy3 += y[i + 3] - ky
    for i in range(m4, m):
        sx0 += x[i] - kx
        sy0 += y[i] - ky
    cdef double mx = ((sx0 + sx1) + (sx2 + sx3)) / m
    cdef double my = ((sy0 + sy1) + (sy2 + sy3)) / m
    cdef double a0 = 0, a1 = 0, b0 = 0, b1 = 0, c0 = 0, c1 = 0
    cdef double dx0, dy0, dx1, dy1
    cdef Py_ssize_t m2 = m - (m % 2)
    for i in range(0, m2, 2):
        dx0 = (x[i] - kx) - mx; dy0 = (y[i] - ky) - my
        dx1 = (x[i + 1] - kx) - mx; dy1 = (y[i + 1] - ky) - my
        a0 += dx0 * dx0; a1 += dx1 * dx1
        b0 += dy0 * dy0; b1 += dy1 * dy1
        c0 += dx0 * dy0; c1 += dx1 * dy1
    for i in range(m2, m):
        dx0 = (x[i] - kx) - mx; dy0 = (y[i] - ky) - my
        a0 += dx0 * dx0; b0 += dy0 * dy0; c0 += dx0 * dy0
    out[0] = <double>m
    out[1] = kx
    out[2] = ky
    out[3] = mx
    out[4] = my
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
