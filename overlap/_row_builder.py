"""Token-set rows appended block by block into one set of arrays.

``TokenSets.from_texts`` tokenizes a long column a block of rows at a time
(so that Ctrl-C gets through between kernel calls).  Concatenating the blocks
at the end held every block and the whole result at once and wrote every
hash twice, into memory the OS had to hand over (and zero) twice.  A
:class:`RowBuilder` copies each block once, into its place in arrays that
grow by ``realloc`` (numpy's ``resize``: what is there is not copied when the
allocation can grow or move in place), sized after the first block from its
hashes per row.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RowBuilder"]

#: Head room of the size projected from the first block (a regrowth is a realloc).
SLACK = 1.1


class RowBuilder:
    """``n_rows`` rows of hashes (and counts, for multisets), added in order."""

    def __init__(self, n_rows: int, multiset: bool) -> None:
        self.n_rows, self.multiset = int(n_rows), bool(multiset)
        self.indptr = np.zeros(self.n_rows + 1, dtype=np.int64)
        self.hashes = np.empty(0, dtype=np.uint64)
        self.counts = np.empty(0, dtype=np.uint32) if multiset else None
        self.rows = 0   # rows added
        self.used = 0   # hashes held

    def add(self, indptr: np.ndarray, hashes: np.ndarray, counts: np.ndarray | None) -> None:
        """Append the rows ``indptr`` (from 0) of ``hashes`` (and ``counts``)."""
        k, m = len(indptr) - 1, int(indptr[-1])
        if self.rows + k > self.n_rows:
            raise ValueError(f"RowBuilder: {self.rows + k} rows added, {self.n_rows} expected")
        need = self.used + m
        if need > len(self.hashes):
            self._grow(need, k)
        self.hashes[self.used:need] = hashes[:m]
        if self.multiset:
            self.counts[self.used:need] = counts[:m]
        np.add(indptr[1:], self.used, out=self.indptr[self.rows + 1:self.rows + 1 + k])
        self.rows += k
        self.used = need

    def _grow(self, need: int, k: int) -> None:
        rows_after = self.rows + k
        per_row = need / max(rows_after, 1)
        cap = max(need, int(need + per_row * (self.n_rows - rows_after) * SLACK) + 64)
        if not len(self.hashes):  # resize would first write zeros over the new slots
            self.hashes = np.empty(cap, dtype=np.uint64)
            if self.multiset:
                self.counts = np.empty(cap, dtype=np.uint32)
            return
        cap = max(cap, len(self.hashes) + len(self.hashes) // 4)
        self.hashes.resize(cap, refcheck=False)  # held by this builder alone
        if self.multiset:
            self.counts.resize(cap, refcheck=False)

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(indptr, hashes, counts)`` of every row; the builder is spent."""
        if self.rows != self.n_rows:
            raise ValueError(f"RowBuilder: {self.rows} rows added, {self.n_rows} expected")
        self.hashes.resize(self.used, refcheck=False)  # a shrink keeps the pages in place
        if self.multiset:
            self.counts.resize(self.used, refcheck=False)
        out = self.indptr, self.hashes, self.counts
        self.indptr = self.hashes = self.counts = None  # type: ignore[assignment]
        return out
