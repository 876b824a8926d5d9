"""Moved to :mod:`overlap.pipeline.tables`; this re-export keeps ``overlap.io`` working.

Deprecated in 0.2.0, removed in 0.3.0 (see CHANGELOG.md).
"""

from .pipeline.tables import *  # noqa: F401,F403
from .pipeline.tables import __all__  # noqa: F401
from ._optional import MissingExtra, require  # noqa: F401
