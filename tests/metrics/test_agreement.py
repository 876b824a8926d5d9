"""metrics.krippendorff_alpha / split_half / trimmed_mean.

Krippendorff's alpha is checked against its definition in exact rationals
(tests/reference/agreement.py), Krippendorff's published example, and the
krippendorff package when it is installed.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import agreement as ref_alpha
from reference import metrics as ref
import metrics


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@st.composite
def rating_matrices(draw):
    raters = draw(st.integers(2, 5))
    items = draw(st.integers(2, 8))
    cells = draw(st.lists(
        st.one_of(st.none(), st.sampled_from([1.0, 2.0, 3.0, 4.5, 5.0])),
        min_size=raters * items, max_size=raters * items))
    m = np.array([np.nan if c is None else c for c in cells]).reshape(raters, items)
    return m


# ----------------------------------------------------------------- Krippendorff's alpha

LEVELS = ("nominal", "ordinal", "interval", "ratio")
nan = np.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C:
# 4 observers x 12 units, values 1..5, with missing values.
K2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]
K2011_PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}

# The 3 coders x 15 units example of the Wikipedia article (also in the
# krippendorff package's documentation).
WIKI = [
    [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
    [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
    [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
]


def _exact(m, level, order=None):
    return ref_alpha.alpha(ref_alpha.units_from_ratings(np.asarray(m, dtype=object).tolist()),
                           level, order)


def _close_to_exact(got, exact, tol=1e-12):
    """|got - exact| <= tol * max(|alpha|, |1 - alpha|): alpha = 1 - D_o/D_e is
    computed as a ratio, so its error is relative to the larger of the two."""
    err = abs(Fraction(got) - exact)
    return err <= tol * max(abs(exact), abs(1 - exact))


def _counts_of(m):
    """The units x values counts of a ratings matrix, and the values."""
    m = np.asarray(m, dtype=float)
    values = np.unique(m[~np.isnan(m)])
    counts = np.array([[np.sum(col == v) for v in values] for col in m.T])
    return counts, values


@pytest.mark.parametrize("level", LEVELS)
def test_krippendorff_2011_published_example(level):
    got = metrics.krippendorff_alpha(K2011, level=level)
    assert round(got, 3) == K2011_PUBLISHED[level]
    assert _close_to_exact(got, _exact(K2011, level))


def test_wikipedia_example_and_its_value_counts():
    assert round(metrics.krippendorff_alpha(WIKI, level="nominal"), 6) == 0.691358
    assert round(metrics.krippendorff_alpha(WIKI, level="interval"), 6) == 0.810845
    counts, values = _counts_of(WIKI)
    assert counts.shape == (15, 4)
    for level in LEVELS:
        want = metrics.krippendorff_alpha(WIKI, level=level)
        got = metrics.krippendorff_alpha(value_counts=counts, level=level, value_domain=values)
        assert got == pytest.approx(want, rel=1e-14)
        assert _close_to_exact(got, _exact(WIKI, level))
    # without a domain the columns are the values 0..V-1: the same for every
    # level but ratio (a shift changes ratios)
    for level in ("nominal", "ordinal", "interval"):
        assert metrics.krippendorff_alpha(value_counts=counts, level=level) == pytest.approx(
            metrics.krippendorff_alpha(WIKI, level=level), rel=1e-14)


def test_labels_nominal_and_ordinal_with_domain():
    names = {1: "very low", 2: "low", 3: "mid", 4: "high", 5: "very high"}
    labels = [[names[v] if v == v else nan for v in row] for row in K2011]
    domain = ["very low", "low", "mid", "high", "very high"]
    ordinal = metrics.krippendorff_alpha(labels, level="ordinal", value_domain=domain)
    assert ordinal == pytest.approx(metrics.krippendorff_alpha(K2011, level="ordinal"), rel=1e-15)
    assert round(metrics.krippendorff_alpha(labels, level="nominal"), 3) == 0.743
    # numpy turns NaN into the string "nan" in a str array: still missing
    as_str = np.asarray(labels)
    assert as_str.dtype.kind == "U" and "nan" in as_str
    assert metrics.krippendorff_alpha(as_str, level="nominal") == pytest.approx(
        metrics.krippendorff_alpha(K2011, level="nominal"), rel=1e-15)
    with_none = [[None if v != v else v for v in row] for row in labels]
    assert metrics.krippendorff_alpha(with_none, level="ordinal", value_domain=domain) == ordinal
    # the order of the domain is the ordinal order
    rev = metrics.krippendorff_alpha(labels, level="ordinal", value_domain=domain[::-1])
    assert rev == pytest.approx(ordinal, rel=1e-15)  # reversing keeps all distances
    shuffled = ["mid", "very low", "high", "low", "very high"]
    got = metrics.krippendorff_alpha(labels, level="ordinal", value_domain=shuffled)
    assert _close_to_exact(got, _exact(labels, "ordinal", order=shuffled))
    assert abs(got - ordinal) > 0.01
    with pytest.raises(ValueError, match="needs value_domain"):
        metrics.krippendorff_alpha(labels, level="ordinal")
    with pytest.raises(TypeError, match="interval level needs numeric"):
        metrics.krippendorff_alpha(labels, level="interval")
    with pytest.raises(ValueError,
                       match="ratings contain 'very low', which is not in value_domain"):
        metrics.krippendorff_alpha(labels, level="nominal", value_domain=["low", "high"])


@st.composite
def small_reliability_data(draw, offset=0.0, spread=1.0, nonnegative=False):
    raters = draw(st.integers(2, 5))
    units = draw(st.integers(1, 9))
    pool = draw(st.lists(st.integers(-6, 6), min_size=1, max_size=6, unique=True))
    cells = draw(st.lists(st.one_of(st.none(), st.sampled_from(pool)),
                          min_size=raters * units, max_size=raters * units))
    vals = [np.nan if c is None else offset + spread * c for c in cells]
    m = np.array(vals, dtype=float).reshape(raters, units)
    if nonnegative:
        m = np.abs(m)
    return m


def _check_against_exact(m, level, **kw):
    exact = _exact(m, level, kw.get("order"))
    if exact is None:
        with pytest.warns(RuntimeWarning, match="undefined"):
            got = metrics.krippendorff_alpha(m, level=level)
        assert math.isnan(got)
        return
    got = metrics.krippendorff_alpha(m, level=level)
    assert _close_to_exact(got, exact), (got, float(exact))


@settings(max_examples=150, deadline=None)
@given(m=small_reliability_data(), level=st.sampled_from(("nominal", "ordinal", "interval")))
def test_alpha_matches_exact_definition(m, level):
    _check_against_exact(m, level)


@settings(max_examples=100, deadline=None)
@given(m=small_reliability_data(nonnegative=True))
def test_ratio_alpha_matches_exact_definition(m):
    _check_against_exact(m, "ratio")


@settings(max_examples=150, deadline=None)
@given(offset=st.sampled_from([0.0, 1e3, -1e6, 1e9, -1e9, 1e12, 3.5e12]),
       spread=st.sampled_from([1.0, 0.37, 1e-3, 1e-6]),
       level=st.sampled_from(LEVELS), data=st.data())
def test_alpha_exact_on_large_offsets_and_tiny_spreads(offset, spread, level, data):
    m = data.draw(small_reliability_data(offset=offset, spread=spread,
                                         nonnegative=level == "ratio"))
    _check_against_exact(m, level)


def test_interval_offset_regression_many_units():
    # before centering: 8e-10 relative error at 1e9, 1e-6 at spread 1e-3
    rng = np.random.default_rng(1)
    for offset, spread in [(1e9, 1.0), (1e9, 1e-3), (1e12, 1.0), (-1e12, 0.01)]:
        truth = rng.normal(size=3000) * spread
        m = offset + truth + 0.5 * spread * rng.normal(size=(5, 3000))
        m[rng.random(m.shape) < 0.2] = np.nan
        exact = ref_alpha.interval_alpha_moments(ref_alpha.units_from_ratings(m.tolist()))
        got = metrics.krippendorff_alpha(m)
        assert _close_to_exact(got, exact), (offset, spread, got, float(exact))
        # the value-code route (taken when a domain is given) agrees
        dom = np.unique(m[~np.isnan(m)])
        got2 = metrics.krippendorff_alpha(m, level="interval", value_domain=dom)
        assert _close_to_exact(got2, exact)


@settings(max_examples=60, deadline=None)
@given(m=small_reliability_data(nonnegative=True), level=st.sampled_from(LEVELS))
def test_value_counts_equal_ratings(m, level):
    counts, values = _counts_of(m)
    if counts.size == 0:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a = metrics.krippendorff_alpha(m, level=level)
        b = metrics.krippendorff_alpha(value_counts=counts, level=level, value_domain=values)
    assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("level", LEVELS)
def test_many_raters_take_the_sorting_path(level, rng):
    # units with more than 16 and more than 32 values sort and group them
    m = np.round(rng.uniform(0, 4, (40, 6)))
    m[rng.random(m.shape) < 0.1] = np.nan
    _check_against_exact(m, level)


@pytest.mark.parametrize("level", LEVELS)
def test_sorted_value_codes_route_equals_hash_route(level, rng, monkeypatch):
    # more distinct values than the hash table takes: codes come from a sort
    from metrics import agreement

    m = np.round(rng.uniform(0, 9, (6, 400)), 1)
    m[rng.random(m.shape) < 0.3] = np.nan
    m[0, 0] = -0.0 if level != "ratio" else 0.0
    m[1, 0] = 0.0
    hashed = metrics.krippendorff_alpha(m, level=level)
    small = m[:, :12]
    _check_against_exact(small, level)  # -0.0 and 0.0 are one value
    monkeypatch.setattr(agreement, "HASH_LIMIT", 3)
    assert metrics.krippendorff_alpha(m, level=level) == pytest.approx(hashed, rel=1e-14)
    _check_against_exact(small, level)


def test_ordinal_numeric_domain_sets_the_order():
    domain = [3.0, 1.0, 2.0, 4.0, 5.0]
    got = metrics.krippendorff_alpha(K2011, level="ordinal", value_domain=domain)
    assert _close_to_exact(got, _exact(K2011, "ordinal", order=domain))
    # a domain with extra values does not change alpha; a too small one is an error
    wide = metrics.krippendorff_alpha(K2011, level="ordinal", value_domain=range(0, 9))
    assert wide == pytest.approx(metrics.krippendorff_alpha(K2011, level="ordinal"), rel=1e-15)
    with pytest.raises(ValueError, match=r"ratings contain 5\.0, which is not in value_domain"):
        metrics.krippendorff_alpha(K2011, level="nominal", value_domain=[1, 2, 3, 4])


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_thread_count_invariant(level, rng):
    values = np.round(np.linspace(0.5, 7.1, 67), 1)
    truth = rng.integers(0, 67, 30_000)
    m = values[np.clip(truth + rng.integers(-4, 5, (7, 30_000)), 0, 66)]
    m[rng.random(m.shape) < 0.25] = np.nan
    res = [metrics.krippendorff_alpha(m, level=level, n_threads=t) for t in (1, 2, 3, 4)]
    assert res[0] == res[1] == res[2] == res[3]
    assert (0.05 if level == "nominal" else 0.5) < res[0] < 1
    counts, vals = _counts_of(m[:, :3000])
    a = metrics.krippendorff_alpha(value_counts=counts, level=level, value_domain=vals,
                                   n_threads=1)
    b = metrics.krippendorff_alpha(value_counts=counts, level=level, value_domain=vals,
                                   n_threads=4)
    assert a == b


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_memory_free_of_distinct_values(level, rng):
    # every value distinct: a values x values matrix would need 20 GB
    m = rng.normal(size=(7, 50_000))
    m[rng.random(m.shape) < 0.2] = np.nan
    res = [metrics.krippendorff_alpha(m, level=level, n_threads=t) for t in (1, 2)]
    assert res[0] == res[1]
    assert abs(res[0]) < 0.05  # independent noise: no agreement
    if level == "nominal":  # no two values coincide: D_o = n, D_e = n (n - 1)
        assert res[0] == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_peak_memory_is_linear_in_the_ratings(level, rng):
    # 7 x 50,000 ratings: a units x values x values array (the package's) would
    # take 1.8 GB with 67 values; a values x values one 1.7 TB for continuous data
    import tracemalloc

    values = np.round(np.linspace(1, 7.6, 67), 1)
    stepped = values[rng.integers(0, 67, (7, 50_000))]
    continuous = rng.uniform(1, 8, (7, 50_000))
    for m, limit in ((stepped, 2.5), (continuous, 12.0)):
        if level == "ratio" and m is continuous:
            continue  # O(V^2) time for 280,000 distinct values
        m[rng.random(m.shape) < 0.2] = np.nan
        tracemalloc.start()
        try:
            metrics.krippendorff_alpha(m, level=level)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < limit * m.nbytes, (level, peak / m.nbytes)


def test_alpha_known_properties(rng):
    truth = rng.normal(size=200) + 5
    perfect = np.tile(truth, (4, 1))
    for level in LEVELS:
        assert metrics.krippendorff_alpha(perfect, level=level) == pytest.approx(1.0, abs=1e-12)
    noise = rng.normal(size=(4, 200))
    assert abs(metrics.krippendorff_alpha(noise)) < 0.1


def test_alpha_undefined_cases_warn():
    with pytest.warns(RuntimeWarning, match="fewer than two pairable values") as rec:
        assert math.isnan(metrics.krippendorff_alpha([[1.0, nan], [nan, 2.0]]))
    assert rec[0].filename == __file__  # the warning points at the caller
    for level in LEVELS:
        with pytest.warns(RuntimeWarning, match="undefined"):
            assert math.isnan(metrics.krippendorff_alpha([[3.0, 3.0], [3.0, 3.0]], level=level))
    with pytest.warns(RuntimeWarning, match="fewer than two pairable"):
        metrics.krippendorff_alpha(value_counts=[[1, 0], [0, 1]])


def test_alpha_bad_input():
    with pytest.raises(ValueError, match="level"):
        metrics.krippendorff_alpha([[1, 2], [1, 2]], level="ordinal-ish")
    with pytest.raises(ValueError, match="2-D"):
        metrics.krippendorff_alpha([1, 2, 3])
    with pytest.raises(ValueError, match="empty"):
        metrics.krippendorff_alpha(np.empty((0, 3)))
    with pytest.raises(TypeError, match="ratings"):
        metrics.krippendorff_alpha("ratings")
    with pytest.raises(ValueError, match="infinite"):
        metrics.krippendorff_alpha([[1, np.inf], [1, 2]])
    with pytest.raises(ValueError, match="exactly one of ratings and value_counts"):
        metrics.krippendorff_alpha()
    with pytest.raises(ValueError, match="exactly one of ratings and value_counts"):
        metrics.krippendorff_alpha([[1, 2]], value_counts=[[1, 1]])
    with pytest.raises(ValueError, match=r"ratings must be >= 0 for the ratio level, got -1\.0"):
        metrics.krippendorff_alpha([[1, -1], [2, 2]], level="ratio")
    with pytest.raises(ValueError, match="value_counts must be non-negative"):
        metrics.krippendorff_alpha(value_counts=[[1, -1], [2, 2]])
    with pytest.raises(ValueError, match="whole numbers"):
        metrics.krippendorff_alpha(value_counts=[[1, 0.5], [2, 2]])
    with pytest.raises(ValueError, match="finite"):
        metrics.krippendorff_alpha(value_counts=[[1, nan], [2, 2]])
    with pytest.raises(ValueError, match="2-D"):
        metrics.krippendorff_alpha(value_counts=[1, 2])
    with pytest.raises(ValueError, match="one value per column"):
        metrics.krippendorff_alpha(value_counts=[[1, 2], [2, 2]], value_domain=[1, 2, 3])
    with pytest.raises(ValueError, match="must not repeat"):
        metrics.krippendorff_alpha([[1, 2], [1, 2]], level="ordinal", value_domain=[1, 2, 2])
    with pytest.raises(ValueError, match="value_domain must be >= 0 for the ratio level"):
        metrics.krippendorff_alpha(value_counts=[[1, 2], [2, 2]], level="ratio",
                                   value_domain=[-1, 2])
    with pytest.raises(TypeError, match="value_counts must hold numbers"):
        metrics.krippendorff_alpha(value_counts=[["a", "b"]])
    m = np.array([[1.0, 2.0, nan], [1.0, 3.0, 2.0]])
    before = m.copy()
    for level in LEVELS:
        metrics.krippendorff_alpha(m, level=level)
    np.testing.assert_array_equal(m, before)
    ro = m.copy()
    ro.flags.writeable = False
    assert metrics.krippendorff_alpha(ro, level="ordinal") == metrics.krippendorff_alpha(
        m, level="ordinal")


# ----------------------------------------------------------------- the krippendorff package


@pytest.fixture(scope="module")
def kpkg():
    return pytest.importorskip("krippendorff", reason="krippendorff package not installed: "
                               "the compatibility check needs it (pip install krippendorff)")


def test_package_compat_documented_cases(kpkg):
    """The cases of the package's own documentation, through both libraries."""
    counts, _ = _counts_of(WIKI)
    for level in LEVELS:
        want = kpkg.alpha(reliability_data=WIKI, level_of_measurement=level)
        assert metrics.krippendorff_alpha(WIKI, level=level) == pytest.approx(want, rel=1e-13)
        want = kpkg.alpha(value_counts=counts, level_of_measurement=level)
        assert metrics.krippendorff_alpha(value_counts=counts, level=level) == pytest.approx(
            want, rel=1e-13)
        want = kpkg.alpha(K2011, level_of_measurement=level)
        assert metrics.krippendorff_alpha(K2011, level=level) == pytest.approx(want, rel=1e-13)
    want = kpkg.alpha(K2011, value_domain=[1, 2, 3, 4, 5], level_of_measurement="ordinal")
    assert metrics.krippendorff_alpha(K2011, value_domain=[1, 2, 3, 4, 5],
                                      level="ordinal") == pytest.approx(want, rel=1e-13)
    names = ["very low", "low", "mid", "high", "very high"]
    labels = [[names[int(v) - 1] if v == v else nan for v in row] for row in K2011]
    want = kpkg.alpha(labels, level_of_measurement="ordinal", value_domain=names)
    assert metrics.krippendorff_alpha(labels, level="ordinal",
                                      value_domain=names) == pytest.approx(want, rel=1e-13)
    want = kpkg.alpha(labels, level_of_measurement="nominal")
    assert metrics.krippendorff_alpha(labels, level="nominal") == pytest.approx(want, rel=1e-13)


@pytest.mark.parametrize("level", LEVELS)
def test_package_compat_random(kpkg, level, rng):
    for offset in (0.0, 1e6, 1e9):
        m = offset + np.round(rng.uniform(1, 5, (5, 300)) * 4) / 4
        m[rng.random(m.shape) < 0.3] = np.nan
        want = kpkg.alpha(reliability_data=m, level_of_measurement=level)
        got = metrics.krippendorff_alpha(m, level=level)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-13)
        counts, values = _counts_of(m)
        want = kpkg.alpha(value_counts=counts, value_domain=values, level_of_measurement=level)
        got = metrics.krippendorff_alpha(value_counts=counts, value_domain=values, level=level)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-13)


@settings(max_examples=60, deadline=None)
@given(m=rating_matrices())
def test_trimmed_mean_matches_reference(m):
    got = metrics.trimmed_mean(m)
    want = ref.trimmed_mean(m.tolist())
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_trimmed_mean_drops_extremes_only_from_five_labels():
    m = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0], [10.0, np.nan]])
    np.testing.assert_allclose(metrics.trimmed_mean(m), [3.0, 2.5])
    m0 = np.array([[1.0, 1.0], [2.0, 2.0]])
    m0c = m0.copy()
    metrics.trimmed_mean(m0)
    np.testing.assert_array_equal(m0, m0c)


def test_split_half(rng):
    truth = rng.normal(size=300)
    m = truth + 0.5 * rng.normal(size=(6, 300))
    m[rng.random(m.shape) < 0.2] = np.nan
    a = metrics.split_half(m, n_splits=30, seed=3)
    b = metrics.split_half(m, n_splits=30, seed=3)
    np.testing.assert_array_equal(a.splits, b.splits)
    assert 0.5 < a.statistic < 1
    raw = metrics.split_half(m, n_splits=30, seed=3, spearman_brown=False)
    np.testing.assert_allclose(a.splits, 2 * raw.splits / (1 + raw.splits), atol=1e-12)
    perfect = np.tile(truth, (4, 1))
    assert metrics.split_half(perfect, n_splits=5, seed=1).statistic == pytest.approx(1.0)
    noise = rng.normal(size=(6, 2000))
    assert abs(metrics.split_half(noise, n_splits=10, seed=1, spearman_brown=False).statistic) < 0.1


def test_split_half_halves_are_disjoint_label_sets():
    # two labels per item: each split sends one label of every item to each half,
    # so every split's r must be the r of one of the 2**5 ways to orient the items
    import itertools
    m = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 2.0, 4.0, 3.0, 5.0]])
    res = metrics.split_half(m, n_splits=40, seed=0, spearman_brown=False)
    possible = []
    for flips in itertools.product([False, True], repeat=5):
        a = np.where(flips, m[1], m[0])
        b = np.where(flips, m[0], m[1])
        possible.append(np.corrcoef(a, b)[0, 1])
    possible = np.array(possible)
    for r in res.splits:
        assert np.min(np.abs(possible - r)) < 1e-12
    assert len(set(np.round(res.splits, 12))) > 1  # the splits really vary


def test_split_half_bad_input():
    with pytest.raises(ValueError, match="n_splits"):
        metrics.split_half([[1, 2], [1, 2]], n_splits=0)
    with pytest.raises(ValueError, match="at least 2 items"):
        metrics.split_half([[1, np.nan], [1, 2]])
    with pytest.raises(TypeError, match="spearman_brown"):
        metrics.split_half([[1, 2], [1, 2]], spearman_brown="yes")
