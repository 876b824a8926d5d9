"""``overlap._allocator``: ``settle`` frees one untouched block, once per
process; ``trim`` hands glibc's free pages back."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import overlap

#: The start of every child: the module, and its resident memory in bytes.
PREAMBLE = """
import ctypes, os
import numpy as np
from overlap import _allocator
def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
"""


def _child(body: str) -> list[str]:
    """Run ``body`` after :data:`PREAMBLE` in a fresh process that imports the
    package under test (installed, or built in place); the words it printed."""
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("needs /proc/self/statm (Linux) to read the resident memory")
    root = os.path.dirname(os.path.dirname(os.path.abspath(overlap.__file__)))
    out = subprocess.run([sys.executable, "-c", PREAMBLE + textwrap.dedent(body)], check=True,
                         capture_output=True, text=True, cwd=root,
                         env=dict(os.environ, PYTHONPATH=root))
    return out.stdout.split()


def test_settle_touches_no_memory_and_runs_once():
    """In a fresh process: the resident memory does not grow by the block
    (it is never written), and a second call allocates nothing.  (Every
    stream scan test runs after it: the results do not depend on it.)"""
    assert _child("""
        before = rss()
        _allocator.settle()
        grew = rss() - before
        calls = []
        real = np.empty
        np.empty = lambda *a, **k: calls.append(a) or real(*a, **k)
        _allocator.settle()
        np.empty = real
        print(grew < _allocator.BLOCK_BYTES // 4, calls == [])
    """) == ["True", "True"]


def test_trim_hands_free_heap_pages_back():
    """In a fresh process: blocks below glibc's mmap threshold, written and
    freed, stay resident until ``trim`` (glibc only: elsewhere it says it
    did nothing)."""
    got = _child("""
        if not _allocator.trim():
            print('no-malloc-trim')
            raise SystemExit
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = [ctypes.c_size_t]
        libc.free.argtypes = [ctypes.c_void_p]
        start = rss()
        # 64 MiB in 64 KiB blocks (under the 128 KiB threshold: the heap), half
        # of each written, then a block above them (the heap's top cannot
        # shrink past it)
        blocks = [libc.malloc(1 << 16) for _ in range(1024)]
        keep = libc.malloc(1 << 15)
        for b in blocks + [keep]:
            ctypes.memset(b, 1, 1 << 15)
        for b in blocks:
            libc.free(b)
        before = rss()
        _allocator.trim()
        half = (1 << 25) // 2  # of the 32 MiB written
        print(before - start > half, before - rss() > half)
    """)
    if got == ["no-malloc-trim"]:
        pytest.skip("the C library has no malloc_trim (not glibc)")
    # freed, the blocks stayed resident; trimmed, they went
    assert got == ["True", "True"]
