"""The pyarrow memory pool the chunked readers allocate their arrays from.

A streamed scan reads a chunk on one thread and frees it on another once it
is searched (``overlap.stream``: three chunks in flight).  With pyarrow's
default pool (mimalloc in the wheels) the reading thread kept asking the
system for fresh memory, which mimalloc marks for transparent huge pages: in
a perf profile of the 0.3 GB Parquet stream scan, the kernel's zeroing of
fresh huge pages (``clear_page_erms``, under pyarrow's copies into the new
arrays) took 10-24 % of the samples, and none when the same scan allocated
from the system pool.  glibc keeps a freed block below its mmap threshold
for the next allocation of any thread (``overlap._allocator.settle`` raises
that threshold before a scan), so a chunk's arrays reuse the previous one's
memory.

Measured on two quiet cores, each run a fresh process, alternating (the
Parquet corpus of ``bench.stream_contamination``, ``min_score=0.5``): 1.72-1.77 s
with the system pool against 1.88-2.10 s, CPU 2.99-3.06 s against 3.26-3.62 s,
peak memory 296-337 MB against 320-333 MB.  Reading the same file alone on
one thread, the default pool is faster (0.53 against 0.63 s): the cost is in
memory that moves between threads.

Only the chunked readers of JSONL, text and Parquet
(``overlap._batches.read_batches``) take this pool.  pyarrow's CSV reader
allocated its arrays from the default pool whatever pool it was handed
(pyarrow 26), so CSV keeps that one; whole-file reads keep it too, and
``overlap._columns.release_arrow_memory`` empties it when the table goes.

The pool is pyarrow's jemalloc pool where the pyarrow build has one (its
Linux wheels do), and the system pool elsewhere; a pool named in pyarrow's
own ``ARROW_DEFAULT_MEMORY_POOL`` wins (CI's sanitizer job names ``system``,
so that ASan sees the arrays' bounds).  With the system
pool, a long Parquet scan's peak memory crept: glibc kept the blocks of
varying size that the Parquet reader grows and frees in its thread's heap,
and the heaps' free memory grew chunk after chunk (the 5 GB corpus as
Parquet at ``min_score=0.5``: 410-416 MB at the peak; the 0.3 GB file
scanned six times in one call at ``min_score=0``: 399-428 MB, rising
through the scan).  jemalloc keeps it flat: 274-292 MB on the 5 GB corpus
(21.7-22.1 against 21.0-21.5 s), 276-288 MB on the six scans, and 215-219
against 284-351 MB on one 0.3 GB scan in the same time (1.37-1.56 against
1.39-1.51 s, alternating).  JSONL is the same with either pool (219-223 MB,
1.59-1.78 s).
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["reading_pool"]


def reading_pool() -> Any:
    """The pool of the chunked readers: pyarrow's jemalloc pool, or its system
    (malloc) pool where this pyarrow is built without jemalloc; pyarrow's
    default pool where ``ARROW_DEFAULT_MEMORY_POOL`` names one."""
    import pyarrow as pa

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return pa.default_memory_pool()
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # pyarrow's ArrowNotImplementedError is one
        return pa.system_memory_pool()
