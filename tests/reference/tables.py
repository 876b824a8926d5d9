"""Plain-Python definitions of the row operations on a table column.

A column is a list of values; the Arrow-backed columns of
``overlap._columns`` must give the same values.
"""

from __future__ import annotations


def taken(col: list, index: list[int], fill) -> list:
    """Row ``j`` of ``col`` for every ``j`` of ``index``; ``fill`` where ``j`` is -1."""
    out = []
    for j in index:
        out.append(fill if j == -1 else col[j])
    return out


def kept(col: list, keep: list[bool]) -> list:
    """The rows of ``col`` whose ``keep`` is True, in order."""
    out = []
    for v, k in zip(col, keep):
        if k:
            out.append(v)
    return out
