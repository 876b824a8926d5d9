"""Fixtures and machine description shared by the benchmark suites."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shlex
import sys

import numpy as np
import pytest
import scipy

import overlap
from ._workload import DATA_ENV, GENERATED_ENV, load_workload, shared_data_dir

#: ``n_threads`` for our side of every group: all cores, and one thread.
THREADS = [pytest.param(None, id="all-threads"), pytest.param(1, id="1-thread")]

PEERS = ("SetSimilaritySearch", "datasketch", "sparse_dot_topn", "scikit-learn")

#: Environment variable enabling the slowest peer runs (several minutes each).
SLOW_ENV = "OVERLAP_BENCH_SLOW"


def env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def pytest_report_header(config):
    d = shared_data_dir()
    forced = env_flag(GENERATED_ENV)
    where = ("generated corpus (" + GENERATED_ENV + " set)" if forced
             else f"W from {d}" if d is not None
             else f"generated corpus (no shared data; set {DATA_ENV})")
    peers = ", ".join(f"{p} {_version(p)}" for p in PEERS)
    return [f"overlap bench: workload = {where}",
            f"overlap bench: cpu = {_cpu_model()} x {os.cpu_count()}; "
            f"effective threads = {overlap.effective_n_threads(None)}",
            f"overlap bench: peers = {peers}"]


#: environment variables that change what a run measures, kept with its command
RUN_ENV = ("OVERLAP_BENCH_GENERATED", "OVERLAP_BENCH_SCALE", "OVERLAP_BENCH_SCALE_1THREAD",
           "OVERLAP_BENCH_SCALE_QUERIES", "OVERLAP_BENCH_SLOW", "OMP_NUM_THREADS",
           "OVERLAP_BENCH_CONTAMINATION_ROWS")


def _command(config) -> str:
    """The command line of this run, as it was typed (for bench/report.py)."""
    env = [f"{k}={shlex.quote(os.environ[k])}" for k in RUN_ENV if os.environ.get(k)]
    main = sys.argv[0].replace("\\", "/")
    prog = ["python", "-m", "pytest"] if main.endswith("pytest/__main__.py") else ["pytest"]
    return " ".join(env + prog + [shlex.quote(a) for a in config.invocation_params.args])


def pytest_benchmark_update_machine_info(config, machine_info):
    machine_info["command"] = _command(config)
    machine_info["cpu_model"] = _cpu_model()
    machine_info["logical_cpus"] = os.cpu_count()
    machine_info["overlap_threads"] = overlap.effective_n_threads(None)
    machine_info["openmp_enabled"] = bool(overlap.openmp_enabled())
    machine_info["numpy"] = np.__version__
    machine_info["scipy"] = scipy.__version__
    machine_info["overlap"] = overlap.__version__
    machine_info["peers"] = {p: _version(p) for p in PEERS}
    machine_info["env"] = {k: os.environ.get(k) for k in
                           ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS",
                            DATA_ENV, GENERATED_ENV)}


@pytest.fixture(scope="session")
def workload():
    """W (or the generated stand-in), loaded once per session."""
    return load_workload()


def describe(benchmark, workload=None, **info) -> None:
    """Record the workload and anything else in ``benchmark.extra_info``."""
    if workload is not None:
        benchmark.extra_info["workload"] = workload.name
    for k, v in info.items():
        benchmark.extra_info[k] = v.item() if isinstance(v, np.generic) else v


def run_once(benchmark, fn, *args, **kwargs):
    """Time a slow peer exactly once (no warm-up, one round)."""
    return benchmark.pedantic(fn, args=args, kwargs=kwargs, rounds=1, iterations=1,
                              warmup_rounds=0)
