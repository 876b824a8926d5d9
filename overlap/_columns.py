"""A table column held in Arrow buffers: a read-only sequence without a Python object per row.

The command line reads whole files into tables (``overlap.pipeline.tables``);
with pyarrow a JSONL or text file's columns stay the Arrow arrays its reader
made (:func:`overlap._batches.read_whole_table` with ``arrow=True``), wrapped
in :class:`ArrowColumn`, so a 1 GB file costs about 1 GB of memory rather
than a Python ``str`` (and an ``int``) per row.  Values come out as Python
values only where they are used: a slice gives a list (the writers take rows
block by block), iteration goes block by block, the tokenizer reads the Arrow
array itself (:attr:`ArrowColumn.arrow`), and rows are taken or filtered by
Arrow kernels.  The values are those of ``to_pylist()`` on the whole column,
so every output is what the list column gave.

Public functions never return an ArrowColumn: it stays inside the command
line's in-memory paths (``overlap scan --train``, ``overlap dedup``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

__all__ = ["ArrowColumn", "arrow_indices", "as_list", "take", "keep_rows", "texts_of",
           "release_arrow_memory"]

#: Rows turned into Python values at a time while iterating.
_ITER_ROWS = 65536

#: :func:`take` of fewer rows than a column's length over this gives a list:
#: pyarrow's first compute kernel costs 20-50 MB of resident memory once,
#: more than the Python values of a few rows (a scan's matches of a small eval
#: set in a big train file).
_SMALL_TAKE = 8


class ArrowColumn(Sequence):
    """A read-only column over a pyarrow ``Array`` or ``ChunkedArray``."""

    __slots__ = ("arrow",)

    def __init__(self, arrow: Any) -> None:
        self.arrow = arrow

    def __len__(self) -> int:
        return len(self.arrow)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):  # a block of rows as Python values
            a, z, step = i.indices(len(self.arrow))
            if step != 1:
                return self.arrow.to_pylist()[i]
            return self.arrow.slice(a, max(0, z - a)).to_pylist()
        n = len(self.arrow)
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError(f"row {i} out of range for {n} rows")
        return self.arrow[j].as_py()

    def __iter__(self) -> Iterator[Any]:
        for a in range(0, len(self.arrow), _ITER_ROWS):
            yield from self.arrow.slice(a, _ITER_ROWS).to_pylist()

    def __repr__(self) -> str:
        return f"ArrowColumn({len(self)} rows of {self.arrow.type})"

    @property
    def is_string(self) -> bool:
        """True for a string column (the readers make them without nulls)."""
        return str(self.arrow.type) in ("string", "large_string", "string_view")


def as_list(col: Sequence) -> list:
    """The column as a list of Python values (a copy for a list)."""
    return col.arrow.to_pylist() if isinstance(col, ArrowColumn) else list(col)


def texts_of(col: Sequence) -> Any:
    """What :meth:`overlap.TokenSets.from_texts` reads: the Arrow array of an
    ArrowColumn (no ``str`` per row), else the column itself."""
    return col.arrow if isinstance(col, ArrowColumn) else col


def take(col: Sequence, index: Sequence[int], fill: Any) -> Sequence:
    """``[col[j] if j >= 0 else fill for j in index]``; an ArrowColumn for an
    ArrowColumn, but a list for a few rows (``_SMALL_TAKE``) or when a ``fill``
    other than None goes into a column of another type than strings."""
    if not isinstance(col, ArrowColumn) or len(index) * _SMALL_TAKE < len(col):
        return [col[j] if j >= 0 else fill for j in index]
    import pyarrow.compute as pc

    idx = np.ascontiguousarray(index, dtype=np.int64)
    missing = idx < 0
    # pc.take, not the array's take method: before pyarrow 12 that imported pandas
    taken = pc.take(col.arrow, arrow_indices(idx, missing))  # a null where j < 0
    if fill is None or not missing.any():
        return ArrowColumn(taken)
    if col.is_string and isinstance(fill, str):
        return ArrowColumn(pc.fill_null(taken, fill))
    return [fill if m else v for m, v in zip(missing.tolist(), taken.to_pylist())]


def keep_rows(col: Sequence, keep: np.ndarray) -> Sequence:
    """The rows of ``col`` where the boolean ``keep`` is True, in order."""
    if isinstance(col, ArrowColumn):
        import pyarrow as pa
        import pyarrow.compute as pc

        mask = np.asarray(keep, dtype=bool)
        bits = pa.py_buffer(np.packbits(mask, bitorder="little"))
        return ArrowColumn(pc.filter(  # not the filter method: see take
            col.arrow, pa.Array.from_buffers(pa.bool_(), mask.shape[0], [None, bits])))
    return [v for v, m in zip(col, keep.tolist()) if m]


def arrow_indices(idx: np.ndarray, missing: np.ndarray | None = None) -> Any:
    """An Arrow int64 array over the buffer of ``idx`` (contiguous int64), null
    where ``missing``: the indices of ``take`` for pyarrow.

    Made from the buffers, not ``pa.array``: handed a numpy array, pyarrow
    imports pandas (where installed) to check its type first, 0.2 s once per
    process (the same for the boolean mask of :func:`keep_rows`).
    """
    import pyarrow as pa

    n_missing = 0 if missing is None else int(np.count_nonzero(missing))
    valid = pa.py_buffer(np.packbits(~missing, bitorder="little")) if n_missing else None
    return pa.Array.from_buffers(pa.int64(), idx.shape[0], [valid, pa.py_buffer(idx)],
                                 null_count=n_missing)


def release_arrow_memory() -> None:
    """Hand the memory the allocators hold but no longer use back to the system.

    pyarrow's pool keeps freed buffers for reuse by later Arrow allocations,
    and glibc's heaps keep the freed blocks of the steps before (the
    tokenizer's per-block arrays, pyarrow's own); the rest of the package
    allocates large arrays through numpy, so a table let go before a search
    (``overlap.pipeline.reread``) frees nothing for it until this is called
    (``overlap._allocator.trim`` for glibc's part).
    """
    import sys

    from ._allocator import trim

    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()
    trim()
