"""overlap: exact, parallel train/test overlap search and near-duplicate removal.

Token sets are built with :class:`TokenSets`; the overlap ratio of two sets is
the Dice coefficient ``2|u ∩ v| / (|u| + |v|)`` (the minimum over fields for
multi-field samples).  Every search is exact and gives the same result for every
thread count.
"""

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

# The public names are loaded on first use (PEP 562), so that ``import overlap``
# and the ``overlap`` command start without numpy and the compiled kernels: the
# command can then answer Ctrl-C during its imports with "interrupted" (exit
# 130) instead of a traceback, and ``overlap --help`` is instant.
_EXPORTS = {
    "openmp_enabled": "._openmp",
    "effective_n_threads": "._threads",
    "contamination": ".contamination",
    "DedupResult": ".dedup",
    "dedup": ".dedup",
    "exact_duplicates": ".dedup",
    "JoinResult": ".search",
    "MaxOverlapResult": ".search",
    "OverlapIndex": ".search",
    "max_overlap": ".search",
    "overlap_join": ".search",
    "ratio": ".search",
    "TOKENIZERS": ".tokensets",
    "Provenance": ".tokensets",
    "TokenSets": ".tokensets",
}



class _Package(types.ModuleType):
    """The ``overlap`` module: a submodule never hides a public name.

    Importing ``overlap.dedup`` (the module) sets the package's attribute
    ``dedup``; with the names loaded lazily that would hide the function
    ``overlap.dedup``.  The module stays reachable as
    ``sys.modules["overlap.dedup"]`` and through ``from overlap.dedup import``.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

if TYPE_CHECKING:  # what a type checker and an IDE see
    from ._openmp import openmp_enabled
    from ._threads import effective_n_threads
    from .contamination import contamination
    from .dedup import DedupResult, dedup, exact_duplicates
    from .search import (
        JoinResult,
        MaxOverlapResult,
        OverlapIndex,
        max_overlap,
        overlap_join,
        ratio,
    )
    from .tokensets import TOKENIZERS, Provenance, TokenSets

__all__ = [
    "TokenSets",
    "TOKENIZERS",
    "Provenance",
    "OverlapIndex",
    "MaxOverlapResult",
    "JoinResult",
    "DedupResult",
    "ratio",
    "max_overlap",
    "overlap_join",
    "dedup",
    "exact_duplicates",
    "contamination",
    "openmp_enabled",
    "effective_n_threads",
]
# The one place the version is written: pyproject.toml reads it from here
# ([tool.setuptools.dynamic]) and metrics.__version__ is this string.
__version__ = "0.2.0.dev0"


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is not None:
        value = getattr(importlib.import_module(where, __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
