"""Stand-ins for numpy/scipy functions newer than the declared floor.

The package supports numpy >= 1.23 and scipy >= 1.9; the functions below exist
only in numpy 2 (``bitwise_count``) or scipy 1.11 (``special.betaincc``).  Each
name uses the library function when it exists and an equivalent otherwise.
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["betaincc", "bitwise_count"]


if hasattr(special, "betaincc"):
    betaincc = special.betaincc
else:  # scipy < 1.11

    def betaincc(a, b, x):
        """Complement of the regularized incomplete beta: I_{1-x}(b, a).

        ``1 - x`` is exact for x in [0.5, 1] (the range where the complement
        is small), so no precision is lost where it matters.
        """
        return special.betainc(b, a, 1.0 - np.asarray(x, dtype=np.float64))


if hasattr(np, "bitwise_count"):
    bitwise_count = np.bitwise_count
else:  # numpy < 2
    _BYTE_COUNTS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)

    def bitwise_count(a):
        """Number of 1-bits of every element of an unsigned-integer array."""
        a = np.ascontiguousarray(a)
        if a.dtype.kind != "u":
            raise TypeError(f"bitwise_count needs an unsigned-integer array, got {a.dtype}")
        per_byte = _BYTE_COUNTS[a.view(np.uint8)].reshape(a.shape + (a.dtype.itemsize,))
        return per_byte.sum(axis=-1, dtype=np.uint8)
