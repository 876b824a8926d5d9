"""glibc's allocator: its steady state before a long scan, and its free
memory handed back between the steps of an in-memory command.

glibc's ``malloc`` maps every block of at least its *mmap threshold* (128 KiB
in a fresh process) straight from the system, and unmaps it when freed: the
next block of that size is fresh pages again, which the kernel zeroes on first
touch.  The threshold is dynamic: once a mapped block is freed, it rises to
that block's size (up to 32 MiB), and the heap then keeps up to twice that
much free memory for reuse.  A streamed scan frees arrays of a few MiB per
chunk (token hashes, bitmaps, Arrow buffers), so in a fresh process its first
chunks pay for zeroed pages until the threshold has climbed; a process that
already ran one scan does not (0.3 GB generated JSONL at ``min_score=0.5``, 2
threads: 2.14-2.48 s in a fresh process, 1.85-2.02 s for the second scan of
the same process).

:func:`settle` frees one untouched block just under 32 MiB, which moves the
threshold where glibc would bring it itself after the first chunks.  Nothing
else changes: the threshold stays dynamic, no memory is touched, and on other
C libraries the block is an ordinary allocation freed at once.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any, Callable

import numpy as np

__all__ = ["settle", "trim"]

#: Just under glibc's largest dynamic mmap threshold (32 MiB on 64-bit).
BLOCK_BYTES = 31 << 20

_settled = False


def settle() -> None:
    """Free one untouched block of :data:`BLOCK_BYTES` (once per process)."""
    global _settled
    if _settled:
        return
    block = np.empty(BLOCK_BYTES, dtype=np.uint8)  # mapped, never touched
    del block
    _settled = True


_malloc_trim: Callable[[int], Any] | None | bool = False  # False: not looked up yet


def _find_malloc_trim() -> Callable[[int], Any] | None:
    """glibc's ``malloc_trim``, or None (another C library, or none found)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def trim() -> bool:
    """Hand the free memory glibc's heaps hold back to the system (``malloc_trim``).

    glibc keeps a freed block below its mmap threshold in the heap of the
    thread that freed it, for reuse.  An in-memory command frees such blocks
    by the thousand between its steps (the Arrow arrays of a table read,
    the tokenizer's per-block arrays) and then allocates few of that size:
    the pages stay resident under the next step's peak.  ``malloc_trim``
    returns every free page of every heap (whole pages inside free blocks
    too); what is in use does not move.  Returns whether it ran (False
    where the C library has no ``malloc_trim``).
    """
    global _malloc_trim
    if _malloc_trim is False:
        _malloc_trim = _find_malloc_trim()
    if _malloc_trim is None:
        return False
    _malloc_trim(0)
    return True
