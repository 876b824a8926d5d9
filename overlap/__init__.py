"""overlap: exact, parallel train/test overlap search and near-duplicate removal.

Token sets are built with :class:`TokenSets`; the overlap ratio of two sets is
the Dice coefficient ``2|u ∩ v| / (|u| + |v|)`` (the minimum over fields for
multi-field samples).  Every search is exact and gives the same result for every
thread count.
"""

from ._openmp import openmp_enabled
from ._threads import effective_n_threads
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
    "dialogue",
    "openmp_enabled",
    "effective_n_threads",
]
# The one place the version is written: pyproject.toml reads it from here
# ([tool.setuptools.dynamic]) and metrics.__version__ is this string.
__version__ = "0.2.0.dev0"


def __getattr__(name: str):
    # ``overlap.dialogue`` (now ``overlap.pipeline.dialogue``) is imported on first
    # use, so that importing the core never loads the application layer
    if name == "dialogue":
        import importlib

        return importlib.import_module(".dialogue", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
