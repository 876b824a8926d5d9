"""Where the shared real data lives (tests and benchmarks only)."""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable that points at the shared data folder.
DATA_ENV = "OVERLAP_METRICS_DATA"


def shared_data_dir() -> Path | None:
    """``$OVERLAP_METRICS_DATA`` or ``../shared/data`` next to the repository; None if absent."""
    env = os.environ.get(DATA_ENV)
    candidates = [Path(env)] if env else []
    repo = Path(__file__).resolve().parents[2]
    candidates += [repo.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    for c in candidates:
        if c.is_dir():
            return c
    return None
