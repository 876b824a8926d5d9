"""Reading a file with both engines and comparing what comes out: the rows,
the layout of the chunks holding them and the bytes counted, or the error
(the arrow-vs-stdlib reader tests)."""

from __future__ import annotations

import gzip

import pytest

from overlap import _batches
from overlap.stream_readers import read_chunks
from reference.readers import zstd_compress


def write_file(path: str, data: bytes) -> None:
    """``data`` written to ``path``, gzip- or Zstandard-compressed (two frames)
    when its name ends in ``.gz`` or ``.zst``."""
    if path.endswith(".gz"):
        data = gzip.compress(data)
    elif path.endswith(".zst"):
        data = zstd_compress(data, frames=2)
    with open(path, "wb") as f:
        f.write(data)


def outcome(path, fields, engine: str, **kw) -> tuple:
    """``("rows", rows, layout, bytes)`` of ``read_chunks`` with ``engine``, or
    ``("error", message)``."""
    try:
        chunks = list(read_chunks(path, fields, engine=engine, **kw))
    except ValueError as e:
        return "error", str(e)
    rows = []
    for c in chunks:
        cols = [c.columns[f] if isinstance(c.columns[f], list) else c.columns[f].to_pylist()
                for f in fields]
        assert all(len(col) == c.n_rows for col in cols)
        rows += list(zip(*cols))
    # an empty chunk may close a shard (carrying bytes after its last row)
    # with one reader and not the other: the chunks with rows must agree
    layout = [(c.path, c.first_row, c.shard_row, c.n_rows) for c in chunks if c.n_rows]
    return "rows", rows, layout, sum(c.nbytes for c in chunks)


def same_outcome(path, fields, block: int, **kw) -> tuple:
    """:func:`outcome` of both engines with line blocks of ``block`` bytes,
    asserted equal; returns it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_batches, "BLOCK_BYTES", block)
        arrow = outcome(path, fields, "arrow", **kw)
        python = outcome(path, fields, "python", **kw)
    assert arrow == python
    return arrow


def table_outcome(path, engine: str, fields) -> list:
    """What the whole-file readers give with ``engine``: ``read_table(path)`` and
    ``read_fields(path, fields)``, each ``("ok", result)`` or ``("error", message)``."""
    from overlap.pipeline.tables import read_fields, read_table

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OVERLAP_READER", engine)
        out = []
        for read in (lambda: read_table(path), lambda: read_fields(path, fields)):
            try:
                out.append(("ok", read()))
            except ValueError as e:
                out.append(("error", str(e)))
        return out
