"""overlap: exact, parallel train/test overlap search and near-duplicate removal."""

from ._openmp import openmp_enabled

__all__ = ["openmp_enabled"]
__version__ = "0.1.0"
