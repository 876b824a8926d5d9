import numpy as np
from numpy.typing import NDArray

MAX_FIELDS: int
MAX_QUERY_TOKENS: int
MAX_ROW_MASS: int

class Collection:
    @property
    def fingerprints(self) -> NDArray[np.uint64]: ...
    @property
    def has_fingerprints(self) -> bool: ...
    def need_fingerprints(self, n_threads: int = 1) -> NDArray[np.uint64]: ...
    def records(self, n_threads: int) -> NDArray[np.int64]: ...
    @property
    def ids(self) -> NDArray[np.int64] | None: ...
    @property
    def n_rows(self) -> int: ...
    @property
    def n_fields(self) -> int: ...
    @property
    def arrays(
        self,
    ) -> tuple[NDArray[np.int64], NDArray[np.uint64], NDArray[np.uint32], NDArray[np.int64]]: ...
    def __init__(
        self,
        ip: NDArray[np.int64],
        h: NDArray[np.uint64],
        cnt: NDArray[np.uint32],
        sz: NDArray[np.int64],
        n_fields: int,
        n: int,
        multiset: bool,
        ids: NDArray[np.int64] | None = None,
    ) -> None: ...

def pair_ratios(
    a: Collection, b: Collection, n_threads: int, measure: int = ...
) -> NDArray[np.float64]: ...

def row_fingerprints(
    ip: NDArray[np.int64],
    h: NDArray[np.uint64],
    cnt: NDArray[np.uint32],
    n_fields: int,
    n: int,
    multiset: bool,
    n_threads: int,
) -> NDArray[np.uint64]: ...

def stable_argsort_u64(keys: NDArray[np.uint64]) -> NDArray[np.int64]: ...

def size_order(sz: NDArray[np.int64], n_fields: int, n: int) -> NDArray[np.int64]: ...

def gather_field(
    ip: NDArray[np.int64],
    h: NDArray[np.uint64],
    cnt: NDArray[np.uint32],
    order: NDArray[np.int64],
    out_h: NDArray[np.uint64],
    out_c: NDArray[np.uint32],
    base: int,
    n_threads: int = 1,
) -> NDArray[np.int64]: ...

def reference_records(
    ip: NDArray[np.int64], h: NDArray[np.uint64], sz: NDArray[np.int64], n_fields: int, n: int,
    n_threads: int,
) -> NDArray[np.int64]: ...
