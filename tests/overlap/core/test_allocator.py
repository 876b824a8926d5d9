"""``overlap._allocator``: ``settle`` frees one untouched block, once per
process; ``trim`` hands glibc's free pages back."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def test_settle_touches_no_memory_and_runs_once():
    """In a fresh process: the resident memory does not grow by the block
    (it is never written), and a second call allocates nothing.  (Every
    stream scan test runs after it: the results do not depend on it.)"""
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("needs /proc/self/statm (Linux) to read the resident memory")
    code = (
        "import os, numpy as np\n"
        "from overlap import _allocator\n"
        "def rss():\n"
        "    with open('/proc/self/statm') as f:\n"
        "        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')\n"
        "before = rss()\n"
        "_allocator.settle()\n"
        "grew = rss() - before\n"
        "calls = []\n"
        "real = np.empty\n"
        "np.empty = lambda *a, **k: calls.append(a) or real(*a, **k)\n"
        "_allocator.settle()\n"
        "np.empty = real\n"
        "print(grew < _allocator.BLOCK_BYTES // 4, calls == [])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                             os.path.dirname(os.path.abspath(__file__))))))
    assert out.stdout.split() == ["True", "True"]


def test_trim_hands_free_heap_pages_back():
    """In a fresh process: blocks below glibc's mmap threshold, written and
    freed, stay resident until ``trim`` (glibc only: elsewhere it says it
    did nothing)."""
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("needs /proc/self/statm (Linux) to read the resident memory")
    code = (
        "import ctypes, os\n"
        "from overlap import _allocator\n"
        "def rss():\n"
        "    with open('/proc/self/statm') as f:\n"
        "        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')\n"
        "if not _allocator.trim():\n"
        "    print('no-malloc-trim'); raise SystemExit\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.malloc.restype = ctypes.c_void_p\n"
        "libc.malloc.argtypes = [ctypes.c_size_t]\n"
        "libc.free.argtypes = [ctypes.c_void_p]\n"
        "start = rss()\n"
        "# 64 MiB in 64 KiB blocks (under the 128 KiB threshold: the heap), written,\n"
        "# then a block above them (the heap's top cannot shrink past it)\n"
        "blocks = [libc.malloc(1 << 16) for _ in range(1024)]\n"
        "keep = libc.malloc(1 << 15)\n"
        "for b in blocks + [keep]:\n"
        "    ctypes.memset(b, 1, 1 << 15)\n"
        "for b in blocks:\n"
        "    libc.free(b)\n"
        "before = rss()\n"
        "_allocator.trim()\n"
        "half = (1 << 25) // 2  # of the 32 MiB written\n"
        "print(before - start > half, before - rss() > half)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                             os.path.dirname(os.path.abspath(__file__))))))
    if out.stdout.strip() == "no-malloc-trim":
        pytest.skip("the C library has no malloc_trim (not glibc)")
    # freed, the blocks stayed resident; trimmed, they went
    assert out.stdout.split() == ["True", "True"]
