"""Moved to :mod:`overlap.pipeline.demo`; this re-export keeps ``overlap.demo`` working.

Deprecated in 0.2.0, removed in 0.3.0 (see CHANGELOG.md).
"""

from .pipeline.demo import *  # noqa: F401,F403
from .pipeline.demo import __all__  # noqa: F401
