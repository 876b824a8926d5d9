"""Moved to :mod:`overlap.pipeline.plot`; this re-export keeps ``overlap.plot`` working.

Deprecated in 0.2.0, removed in 0.3.0 (see CHANGELOG.md).
"""

from .pipeline.plot import *  # noqa: F401,F403
from .pipeline.plot import __all__  # noqa: F401
