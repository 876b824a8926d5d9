"""Shared fixtures: seeded rng, the shared data folder (skipped when absent),
Ctrl-C reaching the test's child processes."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from reference.datadir import DATA_ENV, shared_data_dir

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture
def sigint_reaches_children():
    """Children of this test start with SIGINT at its default, as from a terminal.

    A shell starts background jobs (``pytest &``, ``nohup``) with SIGINT
    ignored, and an ignored signal stays ignored in every child: Python then
    installs no KeyboardInterrupt handler, so a test that sends Ctrl-C to a
    child would watch it finish instead.  Handling the signal here for the
    test's duration makes the children start with the default (a handled
    signal is reset on exec); the previous disposition is put back after.
    """
    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if previous == signal.SIG_IGN:
            signal.signal(signal.SIGINT, previous)


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


@pytest.fixture(scope="session")
def dask_client():
    """A Client of one in-process LocalCluster (two single-thread workers) that
    every Dask test of the run shares; skipped without the dask extra."""
    distributed = pytest.importorskip(
        "distributed", reason="overlap.dask needs the dask extra: pip install 'overlap-metrics[dask]'")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as client:
            yield client
