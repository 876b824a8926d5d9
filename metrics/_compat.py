"""numpy/scipy functions newer than the supported floors, in one place.

The declared floors (``numpy>=1.23.5``, ``scipy>=1.9.3``) are what CI installs
and tests. Where a newer release has the function, it is used as is; otherwise
an equivalent built from functions the floor has:

- ``vecdot``: numpy 2.0. Fallback: ``matmul`` of a row and a column, which
  gives bitwise the same float64 sums as ``np.vecdot`` (both use the BLAS dot).
- ``bitwise_count``: numpy 2.0. Fallback: a 256-entry table of byte popcounts.
  Like numpy's, it counts the bits of the absolute value for signed integers
  and returns ``uint8``.
- ``betaincc``: scipy 1.11. Fallback: the symmetry
  ``I_x(a, b) = 1 - I_{1-x}(b, a)``, i.e. ``betainc(b, a, 1 - x)``; ``1 - x`` is
  exact for ``x >= 0.5`` (the two-sided p-value's case).

``betaincc`` and ``HAVE_BETAINCC`` are looked up on first use: scipy.special
takes a third of a second to import, which the relation scorer (numpy's
``bitwise_count`` only) does not need.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["vecdot", "bitwise_count", "betaincc", "HAVE_NUMPY2", "HAVE_BETAINCC"]

HAVE_NUMPY2 = hasattr(np, "vecdot") and hasattr(np, "bitwise_count")

_BYTE_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _vecdot_fallback(x1, x2):
    """Dot product over the last axis, broadcasting the others (real inputs)."""
    a = np.asarray(x1)
    b = np.asarray(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot: inputs must have at least one dimension")
    out = np.matmul(a[..., None, :], b[..., :, None])[..., 0, 0]
    return out[()] if out.ndim == 0 else out


def _bitwise_count_fallback(x):
    """Number of 1-bits of |x| per element, as uint8 (numpy 2's rules)."""
    a = np.asarray(x)
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    if a.dtype.kind not in "iu":
        raise TypeError(f"bitwise_count: integer input expected, got {a.dtype}")
    if a.dtype.kind == "i":
        # abs of the most negative value wraps to itself; viewed unsigned it is
        # 2**(bits-1), whose count (1) is numpy's answer too.
        a = np.abs(a).view(a.dtype.str.replace("i", "u"))
    a = np.ascontiguousarray(a)
    per_byte = _BYTE_POPCOUNT[a.view(np.uint8).reshape(a.shape + (a.dtype.itemsize,))]
    return per_byte.sum(axis=-1, dtype=np.uint8)


def _betaincc_fallback(a, b, x):
    """Regularized upper incomplete beta function, 1 - I_x(a, b).

    ``I_{1-x}(b, a)`` is exact only where ``1 - x`` is (x >= 0.5): below, the
    rounding of ``1 - x`` moves the argument by up to 1e-16, which the density
    of a small-parameter beta (~1e7 at x = 1e-15 for a = b = 0.5) turns into a
    1e-9 error.  Where the lower tail is below one half the upper one is
    ``1 - I_x(a, b)`` to within rounding, so that is used there.
    """
    from scipy import special

    x = np.asarray(x, dtype=np.float64)
    lower = special.betainc(a, b, x)
    upper = special.betainc(b, a, 1 - x)
    return np.where(lower < 0.5, 1.0 - lower, upper)[()]  # scalars stay scalars, as betainc


vecdot = np.vecdot if hasattr(np, "vecdot") else _vecdot_fallback
bitwise_count = np.bitwise_count if hasattr(np, "bitwise_count") else _bitwise_count_fallback


def __getattr__(name: str) -> Any:
    if name in ("betaincc", "HAVE_BETAINCC"):
        from scipy import special

        have = hasattr(special, "betaincc")
        globals().update(HAVE_BETAINCC=have,
                         betaincc=special.betaincc if have else _betaincc_fallback)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
