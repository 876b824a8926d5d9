import numpy as np
from numpy.typing import NDArray

from ._collection import Collection

ENTRY_DTYPE: np.dtype
GROUP_DTYPE: np.dtype

def entry_signatures(
    refs: Collection, entry_refs: NDArray[np.int32], n_threads: int
) -> NDArray[np.uint64]: ...

def group_records(
    gsize: NDArray[np.int32], gstart: NDArray[np.int64], psuf: NDArray[np.uint16]
) -> NDArray[np.void]: ...

def token_info(
    pptr: NDArray[np.int64],
    rank: NDArray[np.int64],
    maxe: NDArray[np.int32],
    gptr: NDArray[np.int64],
    gsize: NDArray[np.int32],
) -> NDArray[np.uint8]: ...

def build_postings(
    refs: Collection,
    inverse: NDArray[np.int32],
    rank: NDArray[np.int64],
    ptr: NDArray[np.int64],
    max_row: int,
    n_threads: int,
) -> tuple[NDArray[np.void], NDArray[np.uint16], NDArray[np.uint32], NDArray[np.int32]]: ...

def size_groups(
    pptr: NDArray[np.int64], psize: NDArray[np.int32], min_length: int, n_threads: int = 1
) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int64]]: ...
