import numpy as np
from numpy.typing import NDArray

MEASURES: tuple[str, ...]
NO_LIMIT: int
IMPOSSIBLE: int

def score(
    measure: str, i: NDArray[np.int64], a: NDArray[np.int64], b: NDArray[np.int64]
) -> NDArray[np.float64]: ...
def need_count(
    measure: str, cut: NDArray[np.float64], a: NDArray[np.int64], b: NDArray[np.int64]
) -> NDArray[np.int64]: ...
def loose_need(
    measure: str, cut: NDArray[np.float64], a: NDArray[np.int64], b: NDArray[np.int64]
) -> NDArray[np.int64]: ...
def size_window(
    measure: str, q: NDArray[np.int64], cut: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]: ...
def rest_caps_window(
    measure: str,
    q: NDArray[np.int64],
    rest: NDArray[np.int64],
    cut: NDArray[np.float64],
    zhi: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]: ...
def peak_rest_score(
    measure: str, q: NDArray[np.int64], rest: NDArray[np.int64]
) -> NDArray[np.float64]: ...
def max_differing_bits(
    measure: str, q: NDArray[np.int64], z: NDArray[np.int64], cut: NDArray[np.float64], bits: int
) -> NDArray[np.int64]: ...
def window_differing_bits(
    measure: str, q: NDArray[np.int64], zhi: NDArray[np.int64], cut: NDArray[np.float64], bits: int
) -> NDArray[np.int64]: ...
def prune_cut(threshold: NDArray[np.float64]) -> NDArray[np.float64]: ...
def may_reach(
    measure: str,
    c: NDArray[np.int64],
    a: NDArray[np.int64],
    b: NDArray[np.int64],
    cut: NDArray[np.float64],
) -> NDArray[np.bool_]: ...
def reach_count(
    measure: str, a: NDArray[np.int64], b: NDArray[np.int64], cut: NDArray[np.float64]
) -> NDArray[np.int64]: ...
def differing_may_reach(
    measure: str,
    a: NDArray[np.int64],
    b: NDArray[np.int64],
    d: NDArray[np.int64],
    cut: NDArray[np.float64],
) -> NDArray[np.bool_]: ...
def reaching_bits(
    measure: str, a: NDArray[np.int64], b: NDArray[np.int64], cut: NDArray[np.float64], bits: int
) -> NDArray[np.int64]: ...
