"""Resolve the one ``n_threads`` parameter every parallel entry point takes.

Every kernel call of ``overlap`` and ``metrics`` goes through
:func:`effective_n_threads`, so the rules below hold everywhere:

* the count is capped at the cores this process may use (a larger team only
  adds threads that wait, and the runtime keeps them alive afterwards);
* counts above :data:`MAX_THREADS` are rejected as nonsense;
* in a ``fork()``-ed child of a process that has run a multi-threaded kernel,
  every kernel runs on one thread (GNU libgomp's thread pool does not survive
  ``fork``: the child's next parallel region would wait forever for threads that
  no longer exist).  A one-time :class:`RuntimeWarning` says so.
"""

from __future__ import annotations

import numbers
import os
import warnings

from ._openmp import openmp_enabled, openmp_max_threads

#: Largest ``n_threads`` accepted; anything above is an error, not a request.
MAX_THREADS = 4096

# True once this process resolved a count above 1 (it may have started an
# OpenMP thread pool); inherited by a fork()ed child, which then runs serially.
_state = {"parallel_used": False, "forked_after_parallel": False, "warned": False}


def _after_fork_in_child() -> None:
    if _state["parallel_used"]:
        _state["forked_after_parallel"] = True
        _state["warned"] = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def usable_cores() -> int:
    """Cores this process may run on (affinity-aware), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def forked_after_parallel() -> bool:
    """True in a ``fork()``-ed child whose parent had run multi-threaded kernels."""
    return _state["forked_after_parallel"]


def _serial_in_forked_child() -> int:
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(
            "overlap: this process was fork()ed from one that ran multi-threaded "
            "kernels; the OpenMP runtime cannot start threads here, so every kernel "
            "runs on one thread. Use the 'spawn' or 'forkserver' start method for "
            "parallel kernels in child processes.",
            RuntimeWarning,
            stacklevel=3,
        )
    return 1


def effective_n_threads(n_threads: int | None, name: str = "n_threads") -> int:
    """Turn a user's ``n_threads`` into the thread count a kernel will use.

    Parameters
    ----------
    n_threads : int or None
        ``None`` uses every usable core (capped by ``OMP_NUM_THREADS`` when set);
        a positive ``k`` uses ``k`` threads, at most the usable cores; ``-k``
        uses all usable cores but ``k - 1`` (``-1`` = all).  ``0``, counts above
        :data:`MAX_THREADS` and ``-k`` beyond the usable cores are errors.
    name : str
        Argument name used in error messages.

    Returns
    -------
    int
        In ``[1, usable_cores()]``; always 1 when the build has no OpenMP, and
        in a ``fork()``-ed child of a process that ran multi-threaded kernels.

    Raises
    ------
    TypeError
        ``n_threads`` is not an int or None (bools are rejected).
    ValueError
        ``n_threads`` is 0, above :data:`MAX_THREADS`, or asks for fewer than
        one thread.
    """
    if n_threads is not None and (
        isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral)
    ):
        raise TypeError(f"{name} must be an int or None, got {type(n_threads).__name__}")
    if n_threads is not None:
        n_threads = int(n_threads)
        if n_threads == 0:
            raise ValueError(
                f"{name} must not be 0 (use None for all cores, or a positive count)"
            )
        if n_threads > MAX_THREADS:
            raise ValueError(
                f"{name} must be at most {MAX_THREADS}, got {n_threads} "
                f"(this machine has {usable_cores()} usable cores)"
            )
    cores = usable_cores()
    if n_threads is not None and n_threads < 0 and cores + 1 + n_threads < 1:
        raise ValueError(
            f"{name}={n_threads} asks for {cores + 1 + n_threads} threads on "
            f"{cores} usable cores"
        )
    if not openmp_enabled():
        return 1
    if n_threads is None:
        env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
        # ASCII digits only: str.isdigit also accepts '²', which int() refuses
        ok = env.isascii() and env.isdigit() and int(env) > 0
        n = int(env) if ok else openmp_max_threads()
    elif n_threads < 0:
        n = cores + 1 + n_threads
    else:
        n = n_threads
    n = max(1, min(n, cores))
    if n > 1:
        if _state["forked_after_parallel"]:
            return _serial_in_forked_child()
        _state["parallel_used"] = True
    return n


def threads_for(n_items: int, n_threads: int, min_per_thread: int = 256) -> int:
    """Threads worth starting for ``n_items`` units of work.

    Results never depend on the thread count, so small calls simply run on
    fewer threads: a parallel region costs more than it saves on tiny inputs,
    and OpenMP's spinning workers hurt on a loaded machine.
    """
    return max(1, min(n_threads, n_items // max(1, min_per_thread)))
