"""Resolve the one ``n_threads`` parameter every parallel entry point takes."""

from __future__ import annotations

import numbers
import os

from ._openmp import openmp_enabled, openmp_max_threads


def usable_cores() -> int:
    """Cores this process may run on (affinity-aware), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def effective_n_threads(n_threads: int | None, name: str = "n_threads") -> int:
    """Turn a user's ``n_threads`` into the thread count a kernel will use.

    Parameters
    ----------
    n_threads : int or None
        ``None`` uses every usable core (capped by ``OMP_NUM_THREADS`` when set);
        a positive ``k`` uses ``k`` threads; ``-k`` uses all usable cores but
        ``k - 1`` (``-1`` = all).  ``0`` is an error.
    name : str
        Argument name used in error messages.

    Returns
    -------
    int
        At least 1; always 1 when the build has no OpenMP.
    """
    if n_threads is not None and (
        isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral)
    ):
        raise TypeError(f"{name} must be an int or None, got {type(n_threads).__name__}")
    if n_threads is not None and n_threads == 0:
        raise ValueError(f"{name} must not be 0 (use None for all cores, or a positive count)")
    if not openmp_enabled():
        return 1
    cores = usable_cores()
    if n_threads is None:
        env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
        if env.isdigit() and int(env) > 0:
            return int(env)
        return max(1, min(cores, openmp_max_threads()))
    n = int(n_threads)
    if n < 0:
        if cores + 1 + n < 1:
            raise ValueError(
                f"{name}={n} asks for {cores + 1 + n} threads on {cores} usable cores"
            )
        n = cores + 1 + n
    return n


def threads_for(n_items: int, n_threads: int, min_per_thread: int = 256) -> int:
    """Threads worth starting for ``n_items`` units of work.

    Results never depend on the thread count, so small calls simply run on
    fewer threads: a parallel region costs more than it saves on tiny inputs,
    and OpenMP's spinning workers hurt on a loaded machine.
    """
    return max(1, min(n_threads, n_items // max(1, min_per_thread)))
