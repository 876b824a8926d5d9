import numpy as np
from numpy.typing import NDArray

from ._collection import Collection
from ._runner import ScratchPool

class ReferenceIndex:
    refs: Collection
    last_stats: NDArray[np.int64] | None
    groups: tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int64], NDArray[np.int32]]
    entries: NDArray[np.void]
    @property
    def entry_signatures(self) -> NDArray[np.uint64]: ...
    @property
    def fingerprint_order(self) -> tuple[NDArray[np.uint64], NDArray[np.int64]] | None: ...
    def __init__(
        self,
        refs: Collection,
        vocab: NDArray[np.uint64],
        voff: NDArray[np.int64],
        pptr: NDArray[np.int64],
        entries: NDArray[np.void],
        psuf: NDArray[np.uint16],
        pcnt: NDArray[np.uint32],
        rank: NDArray[np.int64],
        maxe: NDArray[np.int32],
        rrec: NDArray[np.int64],
        n_threads: int = 1,
        signatures: bool = True,
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
        max_mass: int,
        n_threads: int,
        out_score: NDArray[np.float64],
        out_index: NDArray[np.int64],
        pool: ScratchPool | None = None,
        measure: int = ...,
    ) -> None: ...
    def join(
        self,
        queries: Collection,
        start: int,
        stop: int,
        threshold: float,
        upper_only: bool,
        max_row: int,
        max_mass: int,
        n_threads: int,
        pool: ScratchPool | None = None,
        measure: int = ...,
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]: ...
