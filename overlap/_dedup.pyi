import numpy as np
from numpy.typing import NDArray

def iterative_passes(
    adj_ptr: NDArray[np.int64], adj_nbr: NDArray[np.int64], adj_score: NDArray[np.float64], n: int
) -> tuple[NDArray[np.bool_], NDArray[np.int64], int]: ...
def component_labels(
    left: NDArray[np.int64], right: NDArray[np.int64], n: int
) -> NDArray[np.int64]: ...
