import numpy as np
from numpy.typing import NDArray

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
