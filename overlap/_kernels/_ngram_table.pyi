import numpy as np
from numpy.typing import NDArray

NOT_FOUND: int

def ngram_keys(
    tokens: NDArray[np.uint64], starts: NDArray[np.int64], length: int, key_mask: int = ...
) -> NDArray[np.uint64]: ...

class NgramTable:
    tokens: NDArray[np.uint64]
    n_unique: int
    capacity: int
    max_length: int
    def __init__(
        self, tokens: NDArray[np.uint64], capacity: int, max_length: int, key_mask: int = ...
    ) -> None: ...
    def add(self, indptr: NDArray[np.int64], n: int) -> NDArray[np.int64]: ...
    def lengths(self) -> NDArray[np.int64]: ...
    def probe(
        self,
        indptr: NDArray[np.int64],
        tokens: NDArray[np.uint64],
        first_row: int,
        found_at: NDArray[np.int64],
        n_threads: int,
    ) -> None: ...
