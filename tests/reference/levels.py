"""The kernels' run-time choices, for tests that run every one of them."""

from __future__ import annotations

import contextlib

from overlap import _tokenize
from overlap._kernels import _cpu

#: The CPU levels (``overlap._kernels._cpu``) that change the join walk's
#: signature test: 0 portable (SWAR) and, where the CPU has it, 1 the popcnt
#: instruction (every higher level uses popcnt too).
POPCOUNT_LEVELS = [lv for lv, name in enumerate(_cpu.LEVEL_NAMES)
                   if name in ("portable", "popcnt") and lv <= _cpu.cpu_level()]
#: The CPU levels that change the bit-sliced block kernels: portable, AVX2 and
#: AVX-512, as far as the CPU runs them (it has no popcnt variant).
BITSLICE_LEVELS = [lv for lv, name in enumerate(_cpu.LEVEL_NAMES)
                   if name != "popcnt" and lv <= _cpu.cpu_level()]


@contextlib.contextmanager
def cpu_level(level: int):
    """Run the block with the kernels at CPU level ``level``."""
    prev = _cpu.set_simd_level(level)
    try:
        yield
    finally:
        _cpu.set_simd_level(prev)


#: the join walk's signature test at a level (the name its tests use)
popcount_level = cpu_level


@contextlib.contextmanager
def forced_path(path: str):
    """Run the block on one search kernel, ``"postings"`` or ``"bitslice"``
    (``overlap._dispatch.FORCE_PATH``)."""
    from overlap import _dispatch

    prev = _dispatch.FORCE_PATH
    _dispatch.FORCE_PATH = path
    try:
        yield
    finally:
        _dispatch.FORCE_PATH = prev


#: The CPU levels that change the tokenizer's ASCII scan: portable (byte by
#: byte, ``scan_ascii``) and, where this CPU runs its AVX-512 kernels
#: (``overlap/_ascii_simd.h``), the top level.
ASCII_SCAN_LEVELS = [0] + ([_cpu.cpu_level()] if _tokenize.ascii_simd() else [])

#: Every CPU level this machine runs (each kernel test runs at all of them).
ALL_LEVELS = list(range(_cpu.cpu_level() + 1))
