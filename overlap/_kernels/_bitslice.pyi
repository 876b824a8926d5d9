import numpy as np
from numpy.typing import NDArray

from ._collection import Collection

BLOCK_WORDS: int
MAX_PLANES: int

def block_counts(
    table: NDArray[np.uint64],
    pick: NDArray[np.int64],
    w0: int,
    need: NDArray[np.int64],
    level: int,
) -> tuple[NDArray[np.int64], NDArray[np.uint64]]: ...

class BitsliceIndex:
    n_rows: int
    n_words: int
    last_stats: NDArray[np.int64]
    def __init__(
        self,
        n_fields: int,
        n: int,
        nw: int,
        order: NDArray[np.int64],
        rank: NDArray[np.int32],
        zs: NDArray[np.int32],
        wzmin: NDArray[np.int32],
        vocab: NDArray[np.uint64],
        voff: NDArray[np.int64],
        bitmap_row: NDArray[np.int64],
        rptr: NDArray[np.int64],
        rref: NDArray[np.int32],
        bits: NDArray[np.uint64],
    ) -> None: ...
    def top_k(
        self,
        queries: Collection,
        start: int,
        stop: int,
        k: int,
        min_score: float,
        exclude_self: bool,
        max_row: int,
        n_threads: int,
        out_score: NDArray[np.float64],
        out_index: NDArray[np.int64],
        measure: int = ...,
        floors: NDArray[np.float64] | None = ...,
    ) -> None: ...
    def join(
        self,
        queries: Collection,
        start: int,
        stop: int,
        threshold: float,
        upper_only: bool,
        max_row: int,
        n_threads: int,
        measure: int = ...,
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]: ...

def fill_field(
    indptr: NDArray[np.int64],
    inverse: NDArray[np.int32],
    order: NDArray[np.int64],
    bitmap_row: NDArray[np.int64],
    n_rows: int,
    nw: int,
    n_threads: int,
    out: NDArray[np.uint64] | None = None,
) -> tuple[NDArray[np.uint64], NDArray[np.int64], NDArray[np.int32]]: ...

def token_codes(
    vocab: NDArray[np.uint64],
    bitmap_row: NDArray[np.int64],
    n_rows: int,
) -> NDArray[np.uint64]: ...
