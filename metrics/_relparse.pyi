import numpy as np
from numpy.typing import NDArray

def scan(data: NDArray[np.uint8], n_cols: int, allowed: int) -> tuple[list[str], NDArray[np.uint64] | None, list[list[str]], tuple[int, str] | None]: ...
