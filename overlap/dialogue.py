"""Moved to :mod:`overlap.pipeline.dialogue`; this re-export keeps ``overlap.dialogue`` working.

Deprecated in 0.2.0, removed in 0.3.0 (see CHANGELOG.md).
"""

from .pipeline.dialogue import *  # noqa: F401,F403
from .pipeline.dialogue import __all__  # noqa: F401
