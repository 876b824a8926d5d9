"""A table read from a file, let go while a search runs and read again to be written.

``overlap dedup`` needs the rows' texts twice: to tokenize them, then to
write the kept rows (``overlap scan --train``: the train rows, then the
texts of their matches).  In between, the index is built and searched, and
that is where the command's memory peaks.  A table held in
Arrow buffers (:class:`overlap._columns.ArrowColumn`) is therefore let go
after tokenizing and read again, by the same reader, once the search is
over: the output is the same bytes, and the texts (about as large as the
file) are not resident next to the index.

The file is never written.  It must not change between the two reads:
its size and modification time are taken before the first read and
compared around the second, and the second must give as many rows.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .._columns import ArrowColumn, release_arrow_memory
from .._progress import ProgressArg
from .tables import read_named_columns

__all__ = ["FileStamp", "TableAgain", "held_by_arrow"]


class FileStamp:
    """A file's size and modification time (nanoseconds), taken when made."""

    __slots__ = ("path", "size", "mtime_ns")

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        st = os.stat(self.path)
        self.size = st.st_size
        self.mtime_ns = st.st_mtime_ns

    def check(self) -> None:
        """ValueError naming the file unless its size and modification time
        are still those of the stamp."""
        try:
            now = FileStamp(self.path)
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.path}: the file went away while it was "
                                    "processed; nothing was written") from None
        if (now.size, now.mtime_ns) != (self.size, self.mtime_ns):
            raise ValueError(f"{self.path}: the file changed while it was processed (size "
                             f"{self.size:,} -> {now.size:,} bytes or a new modification "
                             "time); nothing was written")


def held_by_arrow(table: dict[str, Sequence]) -> bool:
    """Whether every column of ``table`` is an :class:`ArrowColumn` (what
    :class:`TableAgain` lets go: a table of lists is kept, see the module)."""
    return bool(table) and all(isinstance(c, ArrowColumn) for c in table.values())


class TableAgain:
    """How to read a file's table again: the arguments of its first
    :func:`~overlap.pipeline.tables.read_named_columns` (with ``arrow=True``),
    the file's :class:`FileStamp` from before that read and its row count.

    Parameters
    ----------
    stamp : FileStamp
        Taken before the first read.
    fields, fmt :
        As given to the first read.
    n_rows : int
        Rows the first read gave.
    **read_args :
        The first read's other keyword arguments (``turns``, ``max_line_bytes``).
    """

    def __init__(self, stamp: FileStamp, fields: Any, fmt: str | None, n_rows: int,
                 **read_args: Any) -> None:
        self.stamp = stamp
        self.fields = fields
        self.fmt = fmt
        self.n_rows = n_rows
        self.read_args = read_args

    @staticmethod
    def let_go() -> None:
        """Hand the freed Arrow buffers back to the system (call it once the
        caller dropped its last reference to the table)."""
        release_arrow_memory()

    def read(self, progress: ProgressArg = False
             ) -> tuple[list[str], list[Any], dict[str, Sequence]]:
        """``(names, columns, table)`` again, as the first read gave them.

        Raises
        ------
        ValueError
            The file changed since the stamp, or gave another number of rows.
        """
        self.stamp.check()
        names, cols, table = read_named_columns(self.stamp.path, self.fields, self.fmt,
                                                progress=progress, arrow=True,
                                                **self.read_args)
        self.stamp.check()
        n = len(cols[0])
        if n != self.n_rows:
            raise ValueError(f"{self.stamp.path}: {n:,} rows read again, {self.n_rows:,} "
                             "the first time; nothing was written")
        return names, cols, table
