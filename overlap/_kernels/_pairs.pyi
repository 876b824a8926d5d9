from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

def sorted_pairs(
    parts: Iterable[tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]],
    n_left: int,
    n_right: int,
    n_threads: int = 1,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]: ...
