import numpy as np
from numpy.typing import NDArray

INTL_RANGES: tuple[tuple[int, int], ...]

def scan_texts(
    texts: list[str], mode: int, seed: int, n_threads: int
) -> tuple[NDArray[np.int64], NDArray[np.uint64]]: ...
def compact(
    slot: NDArray[np.int64], counts: NDArray[np.int64], buf: NDArray[np.uint64], n_threads: int
) -> tuple[NDArray[np.int64], NDArray[np.uint64]]: ...
def hash_ids(ids: NDArray[np.uint64], seed: int, n_threads: int) -> NDArray[np.uint64]: ...
def finalize_rows(
    indptr: NDArray[np.int64],
    hashes: NDArray[np.uint64],
    ngram: int,
    multiset: bool,
    n_threads: int,
) -> tuple[NDArray[np.int64], NDArray[np.uint64], NDArray[np.uint32] | None]: ...
def lower_matches_str_lower() -> bool: ...
def use_c_for_non_ascii(enabled: bool | None = None) -> bool: ...
def batch_slots(slots: int = 0) -> int: ...
def ascii_simd() -> bool: ...
def scan_utf8(
    offsets: NDArray[np.int32] | NDArray[np.int64],
    data: NDArray[np.uint8],
    mode: int,
    seed: int,
    ngram: int,
    multiset: bool,
    n_threads: int,
    name: str = "texts",
    base: int = 0,
    ordered: bool = False,
) -> tuple[NDArray[np.int64], NDArray[np.uint64], NDArray[np.uint32] | None]: ...
