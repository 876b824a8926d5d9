import numpy as np
from numpy.typing import NDArray

def check_vocabulary(
    vocab: NDArray[np.uint64], voff: NDArray[np.int64], V: int, who: str
) -> None: ...

def compact_vocabulary(
    tkeys: NDArray[np.uint64], tids: NDArray[np.int64], toff: NDArray[np.int64]
) -> tuple[NDArray[np.uint64], NDArray[np.int64]]: ...

def vocab_table(
    hashes: NDArray[np.uint64], out: NDArray[np.int32] | None = None, n_threads: int = 1
) -> tuple[
    NDArray[np.uint64], NDArray[np.int32], NDArray[np.uint64], NDArray[np.int64],
    NDArray[np.int64],
]: ...

def count_key_order(
    counts: NDArray[np.int64], keys: NDArray[np.uint64]
) -> NDArray[np.int64]: ...

def restrict_rows(
    indptr: NDArray[np.int64], hashes: NDArray[np.uint64], slots: NDArray[np.uint64],
    n_threads: int = 1,
) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int64]]: ...
