"""``overlap._allocator.settle``: one untouched block freed, once per process."""

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
