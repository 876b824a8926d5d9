"""The numpy/scipy fallbacks of metrics._compat against the real functions.

On numpy 2 / scipy >= 1.11 the fallbacks are compared bitwise (vecdot,
bitwise_count) or to 1 ulp-scale tolerance (betaincc) with the functions they
stand in for; on the floor (numpy 1.23.5, scipy 1.9.3, CI's "floor" job) with
plain-Python definitions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import special

from metrics import _compat


def _popcount_reference(values) -> list[int]:
    return [bin(abs(int(v))).count("1") for v in values]


@pytest.mark.parametrize(
    "dtype", [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64]
)
def test_bitwise_count_fallback_matches_definition(dtype, rng):
    info = np.iinfo(dtype)
    edges = np.array([info.min, info.min + 1, -1 if info.min else 0, 0, 1, info.max - 1, info.max],
                     dtype=dtype)
    rand = rng.integers(info.min, info.max, size=500, dtype=dtype, endpoint=True)
    x = np.concatenate([edges, rand])
    got = _compat._bitwise_count_fallback(x)
    assert got.dtype == np.uint8
    assert got.tolist() == _popcount_reference(x)
    if hasattr(np, "bitwise_count"):
        np.testing.assert_array_equal(got, np.bitwise_count(x))
        assert np.bitwise_count(x).dtype == got.dtype


def test_bitwise_count_fallback_shapes_and_views(rng):
    x = rng.integers(0, 2**63, size=(3, 4, 5), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    view = x[:, ::2, 1:]  # not contiguous
    got = _compat._bitwise_count_fallback(view)
    assert got.shape == view.shape
    assert got.ravel().tolist() == _popcount_reference(view.ravel())
    assert _compat._bitwise_count_fallback(np.uint64(2**64 - 1)) == 64
    assert _compat._bitwise_count_fallback(np.array([True, False])).tolist() == [1, 0]
    with pytest.raises(TypeError, match="integer"):
        _compat._bitwise_count_fallback(np.array([1.5]))


@pytest.mark.parametrize("n", [1, 2, 3, 17, 64, 255, 2048])
def test_vecdot_fallback_matches(n, rng):
    a = rng.standard_normal((4, n))
    b = rng.standard_normal((4, n))
    got = _compat._vecdot_fallback(a, b)
    assert got.shape == (4,)
    np.testing.assert_allclose(got, [math.fsum(p * q for p, q in zip(r, s)) for r, s in zip(a, b)],
                               rtol=1e-12, atol=1e-12 * n)
    one = _compat._vecdot_fallback(a[0], b[0])
    assert np.ndim(one) == 0
    if hasattr(np, "vecdot"):
        # the same BLAS dot: bitwise equal, so results do not depend on numpy's version
        np.testing.assert_array_equal(got, np.vecdot(a, b))
        assert one == np.vecdot(a[0], b[0])
    # broadcasting the leading axes
    np.testing.assert_array_equal(_compat._vecdot_fallback(a, b[0]),
                                  [_compat._vecdot_fallback(r, b[0]) for r in a])


@given(
    st.floats(0.5, 2000.0),
    st.floats(0.0, 1.0),
)
# found by hypothesis in a fresh venv: I_{1-x}(b, a) was 1e-9 off at tiny x
@example(0.5, 1.0112384624620492e-15)
@example(0.5, 2.7793339590532737e-20)
def test_betaincc_fallback_is_upper_tail(ab, x):
    got = float(_compat._betaincc_fallback(ab, ab, x))
    assert 0.0 <= got <= 1.0
    lower = float(special.betainc(ab, ab, x))
    # scipy < 1.11's betainc (cephes) is itself ~2e-12 off at a = b ~ 2000, x = 0.5
    assert math.isclose(got + lower, 1.0, rel_tol=0, abs_tol=1e-10)
    if hasattr(special, "betaincc"):
        want = float(special.betaincc(ab, ab, x))
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-300)


def test_public_names_are_the_real_functions_when_available():
    if hasattr(np, "vecdot"):
        assert _compat.vecdot is np.vecdot
    else:
        assert _compat.vecdot is _compat._vecdot_fallback
    if hasattr(np, "bitwise_count"):
        assert _compat.bitwise_count is np.bitwise_count
    else:
        assert _compat.bitwise_count is _compat._bitwise_count_fallback
    if hasattr(special, "betaincc"):
        assert _compat.betaincc is special.betaincc
    else:
        assert _compat.betaincc is _compat._betaincc_fallback
