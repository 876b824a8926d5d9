from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

MAX_FIELDS: int
MAX_QUERY_TOKENS: int
MAX_ROW_MASS: int
ENTRY_DTYPE: np.dtype
GROUP_DTYPE: np.dtype

def popcount_cpu_level() -> int: ...
def popcount_level() -> int: ...
def set_popcount_level(level: int) -> int: ...

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
        tkeys: NDArray[np.uint64],
        tids: NDArray[np.int64],
        toff: NDArray[np.int64],
        pptr: NDArray[np.int64],
        entries: NDArray[np.void],
        psuf: NDArray[np.int32],
        pcnt: NDArray[np.uint32],
        rank: NDArray[np.int64],
        maxe: NDArray[np.int32],
        rrec: NDArray[np.int64],
        n_threads: int = 1,
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
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]: ...

class ScratchPool:
    n_threads: int
    n_refs: int
    max_row: int
    max_mass: int
    n_fields: int
    k: int
    def __new__(
        cls, n_threads: int, n_refs: int, max_row: int, n_fields: int, max_mass: int, k: int
    ) -> ScratchPool: ...
    @property
    def allocated(self) -> int: ...

def entry_signatures(
    refs: Collection, pref: NDArray[np.int32], n_threads: int
) -> NDArray[np.uint64]: ...
def group_records(
    gsize: NDArray[np.int32], gstart: NDArray[np.int64], psuf: NDArray[np.int32]
) -> NDArray[np.void]: ...
def compact_vocabulary(
    tkeys: NDArray[np.uint64], tids: NDArray[np.int64], toff: NDArray[np.int64]
) -> tuple[NDArray[np.uint64], NDArray[np.int64]]: ...
def token_info(
    pptr: NDArray[np.int64],
    rank: NDArray[np.int64],
    maxe: NDArray[np.int32],
    gptr: NDArray[np.int64],
    gsize: NDArray[np.int32],
) -> NDArray[np.uint8]: ...
def pair_ratios(a: Collection, b: Collection, n_threads: int) -> NDArray[np.float64]: ...
def row_fingerprints(
    ip: NDArray[np.int64],
    h: NDArray[np.uint64],
    cnt: NDArray[np.uint32],
    n_fields: int,
    n: int,
    multiset: bool,
    n_threads: int,
) -> NDArray[np.uint64]: ...
def build_postings(
    refs: Collection,
    inverse: NDArray[np.int32],
    rank: NDArray[np.int64],
    ptr: NDArray[np.int64],
    max_row: int,
    n_threads: int,
) -> tuple[NDArray[np.void], NDArray[np.int32], NDArray[np.uint32], NDArray[np.int32]]: ...
def size_groups(
    pptr: NDArray[np.int64], psize: NDArray[np.int32], min_length: int, n_threads: int = 1
) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int64]]: ...
def sorted_pairs(
    parts: Iterable[tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]],
    n_left: int,
    n_right: int,
    n_threads: int = 1,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]: ...
def vocab_table(
    hashes: NDArray[np.uint64], out: NDArray[np.int32] | None = None, n_threads: int = 1
) -> tuple[
    NDArray[np.uint64], NDArray[np.int32], NDArray[np.uint64], NDArray[np.int64],
    NDArray[np.int64],
]: ...
def count_key_order(
    counts: NDArray[np.int64], keys: NDArray[np.uint64]
) -> NDArray[np.int64]: ...
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
