"""The kernels' run-time choices, for tests that run every one of them."""

from __future__ import annotations

import contextlib

from overlap._kernels import _postings_search

#: The join walk's signature test: 0 portable (SWAR) and, where the CPU has
#: it, 1 the popcnt instruction.
POPCOUNT_LEVELS = list(range(_postings_search.popcount_cpu_level() + 1))


@contextlib.contextmanager
def popcount_level(level: int):
    """Run the block with the walk's signature test at ``level``."""
    prev = _postings_search.set_popcount_level(level)
    try:
        yield
    finally:
        _postings_search.set_popcount_level(prev)
