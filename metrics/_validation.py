"""Every argument check of the metrics package, with its error message."""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import numpy as np

from overlap import effective_n_threads

__all__ = [
    "as_float_vector",
    "as_real_array",
    "as_ratings",
    "check_choice",
    "check_confidence_level",
    "check_positive_int",
    "check_same_length",
    "check_seed",
    "resolve_threads",
]

_SCALAR_TYPES = (str, bytes, bytearray, dict, set, frozenset)


def as_array(values, name: str, **kwargs) -> np.ndarray:
    """``np.asarray(values)``, with numpy's ValueError for ragged nested
    sequences ("setting an array element with a sequence") naming ``name``.

    The type stays ValueError, as scipy.stats raises for the same input.
    """
    try:
        arr = np.asarray(values, **kwargs)
    except ValueError as exc:  # numpy >= 1.24 refuses a ragged nested list
        raise ValueError(f"{name} must be a rectangular array-like of numbers ({exc})") from None
    if not kwargs and arr.dtype == object and arr.ndim and any(
        isinstance(v, (list, tuple, np.ndarray)) for v in arr.ravel()
    ):  # numpy < 1.24 makes an object array of the rows instead
        raise ValueError(f"{name} must be a rectangular array-like of numbers (ragged rows)")
    return arr


def as_real_array(values, name: str, order_only: bool = False) -> np.ndarray:
    """Return ``values`` as a float64 array of any shape (no copy when it is one).

    TypeError for non-numbers, ValueError for complex numbers (scipy's type).
    ``order_only``: the caller uses only the order of the values (ranks), so
    integers that float64 cannot hold exactly become their dense ranks
    (:func:`exact_int_order`).
    """
    if values is None or isinstance(values, _SCALAR_TYPES):
        raise TypeError(
            f"{name} must be an array-like of numbers, got {type(values).__name__}"
        )
    arr = as_array(values, name)
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except TypeError as exc:
            if any(isinstance(v, complex) for v in np.ravel(np.asarray(values, dtype=object))):
                raise ValueError(f"This function does not support complex data: {name} holds complex numbers") from None
            raise TypeError(f"{name} must contain numbers only ({exc})") from None
        except ValueError as exc:
            raise TypeError(f"{name} must contain numbers only ({exc})") from None
    if arr.dtype.kind == "c":  # ValueError, as scipy.stats raises for complex data
        raise ValueError(f"This function does not support complex data: {name} has dtype {arr.dtype}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must contain numbers, got dtype {arr.dtype}")
    if order_only:
        arr = exact_int_order(arr)
    return np.asarray(arr, dtype=np.float64)


def as_float_vector(values, name: str, order_only: bool = False) -> np.ndarray:
    """Return ``values`` as a 1-D C-contiguous float64 array.

    No copy is made when the input already is one (kernels only read, so the
    caller's array is never modified; read-only arrays are fine).  Raises
    TypeError/ValueError naming ``name``.
    """
    if values is None or isinstance(values, _SCALAR_TYPES):
        raise TypeError(
            f"{name} must be a 1-D array-like of numbers, got {type(values).__name__}"
        )
    arr = as_array(values, name)
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must contain numbers only ({exc})") from None
    if arr.dtype.kind == "c":  # ValueError, as scipy.stats raises for complex data
        raise ValueError(f"This function does not support complex data: {name} has dtype {arr.dtype}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must contain numbers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {arr.shape}")
    if order_only:
        arr = exact_int_order(arr)
    return np.ascontiguousarray(arr, dtype=np.float64)


#: Integers of magnitude up to this convert to float64 exactly.
_EXACT_INT = 2**53


def exact_int_order(arr: np.ndarray) -> np.ndarray:
    """Integers as numbers whose order and ties float64 keeps.

    Integer arrays within +-2**53 (and every other dtype) are returned as they
    are.  Beyond that float64 rounds distinct integers to the same value
    (2**60 and 2**60 + 1, nanosecond timestamps), so rank statistics would see
    ties that are not there: such an array becomes its dense ranks (0, 1, ...
    in the integers' order, equal integers equal), found by an exact integer
    sort.  Spearman's and Kendall's statistics depend only on the order, so
    they equal those of the integers themselves, as scipy (which ranks the
    integers exactly) gives them.
    """
    if arr.dtype.kind not in "iu" or arr.size == 0:
        return arr
    lo, hi = int(arr.min()), int(arr.max())
    if -_EXACT_INT <= lo and hi <= _EXACT_INT:
        return arr
    _, inverse = np.unique(arr, return_inverse=True)
    return inverse.reshape(arr.shape).astype(np.float64)


def check_same_length(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{name_a} and {name_b} must have the same length, got {a.shape[0]} and {b.shape[0]}"
        )


def check_choice(value, name: str, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def check_confidence_level(value, name: str = "confidence_level") -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in (0, 1), got {type(value).__name__}")
    value = float(value)
    if not (0.0 < value < 1.0):
        raise ValueError(f"{name} must be in the open interval (0, 1), got {value!r}")
    return value


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_seed(seed, name: str = "seed") -> int:
    """None (fresh entropy) or an int in [0, 2**64)."""
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0])
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{name} must be None or a non-negative int, got {type(seed).__name__}")
    if not 0 <= seed < 2**64:
        raise ValueError(f"{name} must be in [0, 2**64), got {seed}")
    return int(seed)


def resolve_threads(n_threads) -> int:
    return effective_n_threads(n_threads, "n_threads")


def as_ratings(ratings, name: str = "ratings") -> np.ndarray:
    """A 2-D (raters x items) C-contiguous float64 array; NaN marks a missing label."""
    if ratings is None or isinstance(ratings, _SCALAR_TYPES):
        raise TypeError(
            f"{name} must be a 2-D array-like (raters x items), got {type(ratings).__name__}"
        )
    try:
        arr = np.asarray(ratings, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a 2-D array of numbers with NaN for missing labels ({exc})"
        ) from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (raters x items), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} must not contain infinite values (use NaN for missing)")
    return np.ascontiguousarray(arr)
