"""Shared fixtures: seeded rng, the shared data folder (skipped when absent)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from overlap._datadir import DATA_ENV, shared_data_dir

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)


@pytest.fixture(scope="session")
def shared_data():
    d = shared_data_dir()
    if d is None:
        pytest.skip(
            f"shared data not found: set {DATA_ENV} or place it at ../shared/data "
            "next to the repository"
        )
    return d


@pytest.fixture(scope="session")
def dailydialog_dir(shared_data):
    d = shared_data / "dailydialog"
    if not (d / "dialogues_train.txt").is_file():
        pytest.skip(f"DailyDialog files not found in {d}")
    return d
