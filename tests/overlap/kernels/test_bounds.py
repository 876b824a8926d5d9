"""Every threshold <-> count bound of the kernels against its definition.

``overlap/_kernels/_bounds.pxd`` answers the kernels' pruning questions for
every measure.  A bound that is off by one loses pairs silently, so each answer
is compared here with a brute-force evaluation of its definition over every
size up to 64 and thresholds on the boundaries (each score reachable by small
sizes, and the floats just above and below it), plus random large sizes.

The definitions are written with numpy's float64 arithmetic in the order of
the specification's expressions, so they round exactly as the kernels must.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from overlap._kernels import _bounds_arrays as bounds

MEASURES = bounds.MEASURES
BIG = 1 << 24   # more signature bits than any row here differs by: no clipping
NMAX = 64


def score_ref(measure: str, i, a, b):
    """The specification's float64 expression, elementwise (0 when i = 0)."""
    i, a, b = (np.asarray(x, dtype=np.int64) for x in (i, a, b))
    with np.errstate(divide="ignore", invalid="ignore"):
        if measure == "dice":
            s = 2.0 * i.astype(np.float64) / (a + b).astype(np.float64)
        elif measure == "jaccard":
            s = i.astype(np.float64) / (a + b - i).astype(np.float64)
        elif measure == "cosine":
            s = i.astype(np.float64) / np.sqrt(a.astype(np.float64) * b.astype(np.float64))
        elif measure == "overlap":
            s = i.astype(np.float64) / np.minimum(a, b).astype(np.float64)
        else:
            s = i.astype(np.float64) / a.astype(np.float64)
    return np.where(i > 0, s, 0.0)


def boundary_thresholds() -> np.ndarray:
    """Scores reachable with sizes <= 10 under any measure, the floats just
    below and above each, and usual thresholds (0.5, 0.8, Jaccard's 2/3 ...)."""
    i, a, b = np.meshgrid(*(np.arange(1, 11),) * 3, indexing="ij")
    keep = i <= np.minimum(a, b)
    vals = np.concatenate([score_ref(m, i[keep], a[keep], b[keep]) for m in MEASURES])
    vals = np.unique(vals)
    rng = np.random.default_rng(20261204)
    vals = rng.choice(vals, size=min(300, vals.size), replace=False)
    usual = np.array([1e-9, 0.1, 0.25, 1 / 3, 0.5, 2 / 3, 0.7, 0.75, 0.8, 0.9, 0.95, 1.0])
    vals = np.concatenate([vals, usual])
    near = np.concatenate([vals, np.nextafter(vals, 0.0), np.nextafter(vals, 2.0)])
    return np.unique(near[(near > 0.0) & (near <= 1.0)])


THRESHOLDS = boundary_thresholds()


def test_thresholds_cover_the_boundaries():
    assert 2 / 3 in THRESHOLDS and np.nextafter(2 / 3, 1.0) in THRESHOLDS
    assert 0.8 in THRESHOLDS and 1.0 in THRESHOLDS
    assert THRESHOLDS.size > 500


def size_pairs(nmax: int = NMAX):
    a, b = np.meshgrid(np.arange(1, nmax + 1), np.arange(1, nmax + 1), indexing="ij")
    return a.ravel(), b.ravel()


@pytest.mark.parametrize("measure", MEASURES)
def test_score_is_the_specified_expression_and_grows_with_the_count(measure):
    a, b = size_pairs()
    for i in range(0, NMAX + 1):
        ok = i <= np.minimum(a, b)
        ii = np.full(ok.sum(), i, dtype=np.int64)
        got = bounds.score(measure, ii, a[ok], b[ok])
        np.testing.assert_array_equal(got, score_ref(measure, ii, a[ok], b[ok]))
    # monotone in the count, and the best score of two sizes is unimodal in b
    table = np.array([score_ref(measure, np.full(a.size, i), a, b) for i in range(NMAX + 1)])
    valid = np.arange(NMAX + 1)[:, None] <= np.minimum(a, b)[None, :]
    steps = np.diff(table, axis=0)
    assert np.all(steps[valid[1:]] >= 0.0)
    best = score_ref(measure, np.minimum(a, b), a, b).reshape(NMAX, NMAX)
    for q in range(NMAX):
        row = best[q]
        assert np.all(np.diff(row[: q + 1]) >= 0.0)
        assert np.all(np.diff(row[q:]) <= 0.0)


@pytest.mark.parametrize("measure", MEASURES)
def test_product_form_never_prunes_a_pair_that_reaches_the_threshold(measure):
    """``may_reach`` with the pruning cut passes every count whose score reaches
    the threshold, and passes nothing far below it."""
    i, a, b = np.meshgrid(np.arange(1, 33), np.arange(1, 33), np.arange(1, 33), indexing="ij")
    keep = i <= np.minimum(a, b)
    i, a, b = i[keep], a[keep], b[keep]
    s = score_ref(measure, i, a, b)
    for t in np.ascontiguousarray(THRESHOLDS[::4]):
        cut = bounds.prune_cut(np.full(i.size, t))
        ok = bounds.may_reach(measure, i, a, b, cut)
        assert ok[s >= t].all(), t
        assert (s[ok] >= t * (1 - 1e-9)).all(), t


@pytest.mark.parametrize("measure", MEASURES)
def test_product_form_counts_and_bits(measure):
    """``reach_count`` is the smallest count ``may_reach`` passes; the signature
    tests built on it never drop a pair that reaches the threshold."""
    a, b = size_pairs(32)
    c = np.arange(0, 33)
    for t in np.ascontiguousarray(THRESHOLDS[::9]):
        cut = bounds.prune_cut(np.full(a.size, t))
        rc = bounds.reach_count(measure, a, b, cut)
        for k in range(a.size):
            ok = bounds.may_reach(measure, c, np.full(c.size, a[k]), np.full(c.size, b[k]),
                                  np.full(c.size, cut[k]))
            assert rc[k] == np.argmax(ok), (a[k], b[k], t)
        bits = bounds.reaching_bits(measure, a, b, cut, 1 << 20)
        exact = bounds.max_differing_bits(measure, a, b, np.full(a.size, t), 1 << 20)
        assert np.all(bits >= exact), t
        # every count reaching t, with every number of differing bits its
        # symmetric difference allows, passes the signature test
        for k in range(0, a.size, 7):
            i = np.arange(1, min(a[k], b[k]) + 1)
            i = i[score_ref(measure, i, a[k], b[k]) >= t]
            if i.size == 0:
                continue
            d = a[k] + b[k] - 2 * i.min()
            ds = np.arange(0, d + 1)
            n = ds.size
            assert bounds.differing_may_reach(measure, np.full(n, a[k]), np.full(n, b[k]), ds,
                                              np.full(n, cut[k])).all(), (a[k], b[k], t)
            assert bits[k] >= d, (a[k], b[k], t)


def need_ref(measure: str, cut: np.ndarray, a: int, b: int) -> np.ndarray:
    """Smallest c in 1..min(a, b) with score >= cut; min(a, b) + 1 when none."""
    c = np.arange(1, min(a, b) + 1)
    row = score_ref(measure, c, np.full(c.size, a), np.full(c.size, b))
    return np.searchsorted(row, cut, side="left") + 1


@pytest.mark.parametrize("measure", MEASURES)
def test_need_count_is_the_smallest_passing_count(measure):
    t = THRESHOLDS
    last = None
    for a in range(1, NMAX + 1):
        for b in range(1, NMAX + 1):
            aa = np.full(t.size, a, dtype=np.int64)
            bb = np.full(t.size, b, dtype=np.int64)
            got = bounds.need_count(measure, t, aa, bb)
            want = need_ref(measure, t, a, b)
            reachable = want <= min(a, b)
            np.testing.assert_array_equal(got[reachable], want[reachable])
            assert np.all(got[~reachable] > min(a, b))
            loose = bounds.loose_need(measure, t, aa, bb)
            assert np.all(loose >= 0) and np.all(loose[reachable] <= got[reachable])
            if b > 1:
                # grows with the reference size: the need at a block's smallest
                # size bounds the whole block (bit-sliced kernel)
                assert np.all(got >= last)
            last = got
    zero = bounds.need_count(measure, np.zeros(3), np.array([1, 5, 9]), np.array([2, 5, 1]))
    np.testing.assert_array_equal(zero, [1, 1, 1])


def reach_ref(measure, c, a, b, cut):
    """The division-free test ``may_reach``, in the kernels' float operations."""
    c, a, b = (np.asarray(x, dtype=np.float64) for x in (c, a, b))
    if measure == "dice":
        return 2.0 * c >= cut * (a + b)
    if measure == "jaccard":
        return c >= cut * (a + b - c)
    some = (c > 0) | (cut <= 0.0)
    if measure == "cosine":
        return (c * c >= cut * cut * (a * b)) & some
    if measure == "overlap":
        return (c >= cut * np.minimum(a, b)) & some
    return c >= cut * a


def passes_ref(measure, q, b, cut):
    """The length filter of ``size_window``: ``may_reach`` of min(q, b)."""
    return reach_ref(measure, np.minimum(q, b), q, b, cut)


def best_reaches(measure, q, b, t):
    """The exact length filter: the best score sizes q and b allow reaches t."""
    return score_ref(measure, np.minimum(q, b), q, b) >= t


@pytest.mark.parametrize("measure", MEASURES)
def test_size_window_is_exactly_the_passing_sizes(measure):
    bmax = 4 * NMAX * NMAX
    sizes = np.arange(0, bmax + 1)
    for q in range(1, NMAX + 1):
        qq = np.full(THRESHOLDS.size, q, dtype=np.int64)
        lo, hi = bounds.size_window(measure, qq, THRESHOLDS)
        for k, cut in enumerate(THRESHOLDS[:: 7]):
            k *= 7
            passing = passes_ref(measure, np.full(sizes.size, q), sizes, cut)
            if not passing.any():
                assert lo[k] > hi[k], (q, cut)
                continue
            assert lo[k] == np.argmax(passing), (q, cut)
            if hi[k] == bounds.NO_LIMIT:
                assert passing[lo[k]:].all() and passes_ref(measure, q, 10**9, cut), (q, cut)
            else:
                if hi[k] <= bmax:
                    assert hi[k] == bmax - np.argmax(passing[::-1]), (q, cut)
                else:
                    assert passing[lo[k]:].all(), (q, cut)
                assert passes_ref(measure, q, hi[k], cut) and not passes_ref(
                    measure, q, hi[k] + 1, cut), (q, cut)
    lo, hi = bounds.size_window(measure, np.array([0, 7]), np.array([0.0, -1.0]))
    np.testing.assert_array_equal(lo, [0, 0])
    np.testing.assert_array_equal(hi, [bounds.NO_LIMIT] * 2)
    lo, hi = bounds.size_window(measure, np.array([0]), np.array([0.5]))
    assert lo[0] > hi[0]   # an empty query reaches no positive cut


@pytest.mark.parametrize("measure", MEASURES)
def test_size_window_with_the_pruning_cut_holds_every_size_that_reaches(measure):
    sizes = np.arange(0, 4 * NMAX + 1)
    for q in range(1, NMAX + 1):
        cuts = bounds.prune_cut(THRESHOLDS)
        lo, hi = bounds.size_window(measure, np.full(cuts.size, q), cuts)
        for k, t in enumerate(THRESHOLDS):
            inside = (sizes >= lo[k]) & (sizes <= hi[k])
            assert inside[best_reaches(measure, q, sizes, t)].all(), (q, t)


def rest_ref(measure, q, rest, z):
    return score_ref(measure, np.minimum(rest, z), q, z)


def rest_reach_ref(measure, q, rest, z, cut):
    return reach_ref(measure, np.minimum(rest, z), q, z, cut)


@pytest.mark.parametrize("measure", MEASURES)
def test_rest_caps_the_window_at_the_last_reachable_size(measure):
    zmax = 400
    zs = np.arange(0, zmax + 1)
    cuts = np.ascontiguousarray(THRESHOLDS[::5])
    for q in range(1, 41):
        for rest in range(0, q + 1):
            scores = rest_ref(measure, q, rest, zs)
            # the peak is at z = rest
            assert scores[rest] == scores.max()
            assert peak_is(measure, q, rest, scores[rest])
            for zhi in sorted({0, 1, rest, q, 2 * q + 3, zmax}):
                n = cuts.size
                got, moved = bounds.rest_caps_window(
                    measure, np.full(n, q), np.full(n, rest), cuts, np.full(n, zhi))
                ok = np.array([rest_reach_ref(measure, q, rest, zs[: zhi + 1], c) for c in cuts])
                want = np.where(ok.any(axis=1), zhi - np.argmax(ok[:, ::-1], axis=1), -1)
                np.testing.assert_array_equal(got, want, err_msg=f"q={q} rest={rest} zhi={zhi}")
                np.testing.assert_array_equal(moved, want != zhi)
                # with the pruning cut no size whose exact score reaches stays out
                got, _ = bounds.rest_caps_window(measure, np.full(n, q), np.full(n, rest),
                                                 bounds.prune_cut(cuts), np.full(n, zhi))
                exact = scores[None, : zhi + 1] >= cuts[:, None]
                last = np.where(exact.any(axis=1), zhi - np.argmax(exact[:, ::-1], axis=1), -1)
                assert np.all(got >= last), (q, rest, zhi)


def peak_is(measure, q, rest, value) -> bool:
    return bounds.peak_rest_score(measure, np.array([q]), np.array([rest]))[0] == value


@pytest.mark.parametrize("bits", [8, 64])
@pytest.mark.parametrize("measure", MEASURES)
def test_differing_bits_bound_is_the_largest_that_can_still_match(measure, bits):
    cuts = np.ascontiguousarray(THRESHOLDS[::3])
    d = np.arange(0, bits + 1)
    for q in range(1, NMAX + 1):
        for z in range(1, NMAX + 1):
            n = cuts.size
            got = bounds.max_differing_bits(measure, np.full(n, q), np.full(n, z), cuts, bits)
            cmax = np.minimum(min(q, z), (q + z - d) // 2)
            best = score_ref(measure, cmax, np.full(d.size, q), np.full(d.size, z))
            ok = best[None, :] >= cuts[:, None]
            want = np.where(ok.any(axis=1), bits - np.argmax(ok[:, ::-1], axis=1), -1)
            np.testing.assert_array_equal(got, want, err_msg=f"q={q} z={z}")


@pytest.mark.parametrize("measure", MEASURES)
def test_window_differing_bits_never_drops_a_match(measure):
    """With the pruning cut, a pair of sizes q, z sharing c tokens whose exact
    score reaches t differs in at most q + z - 2c bits: never more than the
    bound of z's window."""
    for q in range(1, 33):
        cuts = bounds.prune_cut(THRESHOLDS)
        lo, hi = bounds.size_window(measure, np.full(cuts.size, q), cuts)
        got = bounds.window_differing_bits(measure, np.full(cuts.size, q), hi, cuts, BIG)
        for z in range(1, 4 * 33):
            c = np.arange(1, min(q, z) + 1)
            s = score_ref(measure, c, np.full(c.size, q), np.full(c.size, z))
            for k, t in enumerate(THRESHOLDS[::13]):
                k *= 13
                reach = c[s >= t]
                if reach.size:
                    assert lo[k] <= z <= hi[k] and q + z - 2 * reach.min() <= got[k], (q, z, t)


@pytest.mark.parametrize("measure", MEASURES)
def test_window_differing_bits_is_the_most_any_size_in_the_window_allows(measure):
    """Another field's signature test uses one bound for its whole size window."""
    cuts = np.ascontiguousarray(THRESHOLDS[::11])
    for q in range(1, NMAX + 1):
        lo, hi = bounds.size_window(measure, np.full(cuts.size, q), cuts)
        got = bounds.window_differing_bits(measure, np.full(cuts.size, q), hi, cuts, BIG)
        for k, cut in enumerate(cuts):
            if lo[k] > hi[k]:
                continue
            if hi[k] == bounds.NO_LIMIT:
                assert got[k] == BIG
                continue
            if hi[k] - lo[k] > 200_000:   # thresholds near 0: every bit is allowed
                assert got[k] == BIG
                continue
            z = np.arange(max(lo[k], 1), hi[k] + 1)
            each = bounds.reaching_bits(measure, np.full(z.size, q), z,
                                        np.full(z.size, cut), BIG)
            assert got[k] == each.max(), (q, cut)


@settings(max_examples=200, deadline=None)
@given(measure=st.sampled_from(["dice", "jaccard", "cosine"]), q=st.integers(1, 5000),
       cut=st.floats(0.05, 1.0))
def test_window_differing_bits_for_larger_rows(measure, q, cut):
    lo, hi = bounds.size_window(measure, np.array([q]), np.array([cut]))
    if hi[0] - lo[0] > 200_000:
        return
    z = np.arange(max(lo[0], 1), hi[0] + 1)
    each = bounds.reaching_bits(measure, np.full(z.size, q), z, np.full(z.size, cut), BIG)
    got = bounds.window_differing_bits(measure, np.array([q]), hi, np.array([cut]), BIG)
    assert got[0] == each.max()


@settings(max_examples=300, deadline=None)
@given(measure=st.sampled_from(MEASURES),
       a=st.integers(1, 2**30 - 1), b=st.integers(1, 2**30 - 1),
       cut=st.floats(1e-12, 1.0))
def test_need_count_is_exact_for_large_sizes(measure, a, b, cut):
    need = bounds.need_count(measure, np.array([cut]), np.array([a]), np.array([b]))[0]
    top = min(a, b)
    if need <= top:
        assert score_ref(measure, need, a, b) >= cut
        assert need == 1 or score_ref(measure, need - 1, a, b) < cut
    else:
        assert score_ref(measure, top, a, b) < cut
    loose = bounds.loose_need(measure, np.array([cut]), np.array([a]), np.array([b]))[0]
    assert 0 <= loose and (need > top or loose <= need)


@settings(max_examples=300, deadline=None)
@given(measure=st.sampled_from(MEASURES), q=st.integers(1, 2**30 - 1),
       cut=st.floats(1e-6, 1.0))
def test_size_window_ends_are_exact_for_large_sizes(measure, q, cut):
    lo, hi = bounds.size_window(measure, np.array([q]), np.array([cut]))
    lo, hi = int(lo[0]), int(hi[0])
    assert lo <= q <= hi
    assert passes_ref(measure, q, lo, cut) and (lo == 0 or not passes_ref(measure, q, lo - 1, cut))
    assert passes_ref(measure, q, hi, cut)
    assert hi == bounds.NO_LIMIT or not passes_ref(measure, q, hi + 1, cut)


def test_unknown_measure_is_refused():
    with pytest.raises(ValueError, match="measure must be one of"):
        bounds.score("tversky", np.array([1]), np.array([1]), np.array([1]))
