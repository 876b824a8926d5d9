"""Max-overlap search, threshold join and dedup on a Dask ``distributed`` cluster.

The references are cut into contiguous shards, each scattered to one worker;
every worker builds an :class:`~overlap.OverlapIndex` on its shard and runs the
same Cython kernels as the local functions (GIL released, ``n_threads`` OpenMP
threads set explicitly).  Per-shard results carry global indices (shard offset
added) and are merged exactly: top-k by (score descending, index ascending), so
ties still go to the lowest reference index.  Results equal the local
:func:`overlap.max_overlap`, :func:`overlap.overlap_join` and
:func:`overlap.dedup` bit for bit.

Needs the ``dask`` extra: ``pip install 'overlap-metrics[dask]'``.

Example
-------
>>> from distributed import Client                       # doctest: +SKIP
>>> client = Client("tcp://scheduler:8786")              # doctest: +SKIP
>>> res = overlap.dask.max_overlap(test, train, client=client)   # doctest: +SKIP
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ._kernels import _pairs
from ._fields import as_fields, check_compatible
from ._progress import ProgressArg, make_progress
from ._threads import effective_n_threads
from ._validation import (
    check_int, check_join_threshold, check_measure, check_unit_interval, type_name,
)
from .dedup import DedupResult, dedup_from_edges, edges_above
from ._optional import require
from .search import Fields, JoinResult, MaxOverlapResult, OverlapIndex
from .stream import merge_top_k

__all__ = ["max_overlap", "overlap_join", "dedup", "shard_bounds"]

# ------------------------------------------------------------- validation
def _check_client(client: Any) -> Any:
    distributed = require("distributed", "dask", "overlap.dask")
    if not isinstance(client, distributed.Client):
        raise TypeError(f"client must be a distributed.Client, got {type_name(client)}")
    return client


def _check_threads(n_threads: Any) -> int | None:
    if n_threads is None:
        return None
    if isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral):
        raise TypeError(f"n_threads must be a positive int or None, got {type_name(n_threads)}")
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1 on workers (or None), got {n_threads}")
    return int(n_threads)


def shard_bounds(n: int, n_shards: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, stop)`` row ranges of ``n_shards`` near-equal shards."""
    n = check_int(n, "n", minimum=0)
    n_shards = check_int(n_shards, "n_shards", minimum=1)
    n_shards = max(1, min(n_shards, n))
    edges = np.linspace(0, n, n_shards + 1).round().astype(np.int64)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def _workers(client: Any) -> list[tuple[str, int]]:
    # ``Client.nthreads()`` asks the scheduler and returns its answer. Not
    # ``scheduler_info()``: distributed (2025+) returns a cached identity there,
    # which the client's periodic refresh can overwrite with a worker-less one
    # between the fetch and the return (seen as "no workers" under load).
    ws = sorted((str(addr), int(k)) for addr, k in client.nthreads().items())
    if not ws:
        raise ValueError("client: the cluster has no workers")
    return ws


def _plan(client: Any, n: int, n_shards: int | None, n_threads: int | None):
    """Shards, the worker each goes to, and the kernel threads each task uses."""
    ws = _workers(client)
    if n_shards is None:
        n_shards = len(ws)
    n_shards = check_int(n_shards, "n_shards", minimum=1)
    bounds = shard_bounds(n, n_shards)
    plan = []
    for s, (a, b) in enumerate(bounds):
        addr, slots = ws[s % len(ws)]
        plan.append((a, b, addr, n_threads if n_threads is not None else max(1, slots)))
    return plan


# ----------------------------------------------------------- worker side
def _take(fields: tuple, rows: np.ndarray) -> tuple:
    return tuple(ts.take(rows) for ts in fields)


def _shard_top_k(shard, queries, start, stop, n, top_k, min_score, self_mode, n_threads,
                 measure="dice"):
    """Top-k of every query within one shard, with global reference indices."""
    index = OverlapIndex(shard, n_threads=n_threads)
    nq = len(queries[0])
    score = np.zeros((nq, top_k), dtype=np.float64)
    found = np.full((nq, top_k), -1, dtype=np.int64)
    if self_mode:
        inside = index.max_overlap(None, top_k=top_k, min_score=min_score, measure=measure,
                                   n_threads=n_threads)
        score[start:stop], found[start:stop] = (np.reshape(inside.score, (-1, top_k)),
                                                np.reshape(inside.index, (-1, top_k)))
        rows = np.concatenate([np.arange(0, start), np.arange(stop, n)]).astype(np.int64)
    else:
        rows = np.arange(nq, dtype=np.int64)
    if rows.shape[0]:
        qs = queries if rows.shape[0] == nq else _take(queries, rows)
        out = index.max_overlap(qs, top_k=top_k, min_score=min_score, measure=measure,
                                n_threads=n_threads)
        score[rows] = np.reshape(out.score, (-1, top_k))
        found[rows] = np.reshape(out.index, (-1, top_k))
    found[found >= 0] += start
    return score, found


def _merge_shards(a, b):
    """:func:`overlap.stream.merge_top_k` of the (score, index) lists of two
    consecutive shard ranges, ``a`` the earlier."""
    return merge_top_k(a[0], a[1], b[0], b[1])


def _shard_join(shard, left, start, stop, threshold, self_mode, n_threads, measure="dice"):
    """Pairs (left, global right) of one shard at or above the threshold."""
    index = OverlapIndex(shard, n_threads=n_threads)
    parts = []
    if self_mode:  # i < j: pairs inside the shard, then every earlier row vs the shard
        inside = index.join(None, threshold=threshold, measure=measure, n_threads=n_threads)
        parts.append((inside.left + start, inside.right + start, inside.score))
        if start:
            before = index.join(_take(left, np.arange(start, dtype=np.int64)),
                                threshold=threshold, measure=measure, n_threads=n_threads)
            parts.append((before.left, before.right + start, before.score))
    else:
        out = index.join(left, threshold=threshold, measure=measure, n_threads=n_threads)
        parts.append((out.left, out.right + start, out.score))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


# ----------------------------------------------------------- client side
def _run(client, futures, progress, desc):
    """Wait for futures with progress; Ctrl-C cancels them and re-raises."""
    distributed = require("distributed", "dask", "overlap.dask")
    bar = make_progress(progress, len(futures), desc)
    try:
        for _ in distributed.as_completed(futures):
            bar.update(1)
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        bar.close()


def _scatter(client, plan, references, queries):
    """Every shard to its worker; the queries to every worker that needs them."""
    # scatter([x]) ships x whole (scatter would split a bare tuple of fields)
    addrs = sorted({p[2] for p in plan})
    q_future = client.scatter([queries], broadcast=True, workers=addrs, hash=False)[0]
    shards = [
        client.scatter([_take(references, np.arange(a, b, dtype=np.int64))], workers=[addr],
                       hash=False)[0]
        for a, b, addr, _ in plan
    ]
    return shards, q_future


def max_overlap(
    queries: Fields,
    references: Fields | None = None,
    *,
    client: Any,
    top_k: int = 1,
    min_score: float = 0.0,
    measure: str = "dice",
    n_shards: int | None = None,
    n_threads: int | None = None,
    progress: ProgressArg = False,
) -> MaxOverlapResult:
    """:func:`overlap.max_overlap` with the references sharded across Dask workers.

    Parameters
    ----------
    queries, references, top_k, min_score, measure
        As in :func:`overlap.max_overlap` (``references=None``: all against the
        rest, the query itself excluded).
    client : distributed.Client
    n_shards : int, optional
        Reference shards (default: one per worker); shard ``s`` goes to worker
        ``s mod n_workers``.
    n_threads : int, optional
        OpenMP threads of the kernel in each shard task.  Default: the worker's
        thread count (``nthreads``), set explicitly so that the nanny's
        ``OMP_NUM_THREADS=1`` does not decide it.
    progress : bool or callable
        Counts finished shards; Ctrl-C cancels the cluster work.

    Returns
    -------
    MaxOverlapResult
        Identical to the local call's.
    """
    qfields = as_fields(queries, "queries")
    self_mode = references is None
    rfields = qfields if self_mode else as_fields(references, "references")
    if not self_mode:
        check_compatible(qfields, rfields, "queries", "references")
    top_k = check_int(top_k, "top_k", minimum=1)
    min_score = check_unit_interval(min_score, "min_score")
    check_measure(measure)
    n_threads = _check_threads(n_threads)
    client = _check_client(client)
    n, nq = len(rfields[0]), len(qfields[0])
    if n == 0 or nq == 0:
        score, index = np.zeros((nq, top_k)), np.full((nq, top_k), -1, dtype=np.int64)
    else:
        plan = _plan(client, n, n_shards, n_threads)
        shards, qf = _scatter(client, plan, rfields, qfields)
        futures = [
            client.submit(_shard_top_k, shard, qf, a, b, n, top_k, min_score, self_mode, nt,
                          measure, workers=[addr], allow_other_workers=True, pure=False)
            for shard, (a, b, addr, nt) in zip(shards, plan)
        ]
        _run(client, futures, progress, "dask max_overlap")
        level = futures
        try:
            while len(level) > 1:  # pairwise tree reduction on the workers
                nxt = [client.submit(_merge_shards, level[i], level[i + 1], pure=False)
                       for i in range(0, len(level) - 1, 2)]
                level = nxt + ([level[-1]] if len(level) % 2 else [])
            score, index = level[0].result()
        except BaseException:
            client.cancel(level)
            raise
    if top_k == 1:
        score, index = score[:, 0], index[:, 0]
    return MaxOverlapResult(np.ascontiguousarray(score), np.ascontiguousarray(index))


def _join(lfields, rfields, self_mode, t, client, n_shards, n_threads, progress,
          measure="dice"):
    n = len(rfields[0])
    empty = np.zeros(0, dtype=np.int64)
    if n == 0 or len(lfields[0]) == 0:
        return JoinResult(empty, empty.copy(), np.zeros(0))
    plan = _plan(client, n, n_shards, n_threads)
    shards, lf = _scatter(client, plan, rfields, lfields)
    futures = [
        client.submit(_shard_join, shard, lf, a, b, t, self_mode, nt, measure,
                      workers=[addr], allow_other_workers=True, pure=False)
        for shard, (a, b, addr, nt) in zip(shards, plan)
    ]
    _run(client, futures, progress, "dask overlap_join")
    parts = [(np.ascontiguousarray(a, dtype=np.int64), np.ascontiguousarray(b, dtype=np.int64),
              np.ascontiguousarray(c, dtype=np.float64)) for a, b, c in client.gather(futures)]
    # the shards' pairs in (left, right) order, as the local join orders its
    # chunks' (indices checked against both sides on the way)
    return JoinResult(*_pairs.sorted_pairs(parts, len(lfields[0]), n,
                                            effective_n_threads(n_threads)))


def overlap_join(
    left: Fields,
    right: Fields | None = None,
    *,
    client: Any,
    threshold: float,
    measure: str = "dice",
    n_shards: int | None = None,
    n_threads: int | None = None,
    progress: ProgressArg = False,
) -> JoinResult:
    """:func:`overlap.overlap_join` with ``right`` (or ``left`` for a self-join) sharded.

    For a self-join (``right=None``, pairs i < j) each shard lists the pairs
    inside it and the pairs of every earlier row with it, so every pair is
    found exactly once.  ``measure`` as in :func:`overlap.overlap_join`
    (``"containment"`` not for a self-join); other parameters as in
    :func:`max_overlap` of this module.  The result equals the local call's.
    """
    lfields = as_fields(left, "left")
    t = check_join_threshold(threshold)
    self_mode = right is None
    check_measure(measure, self_join=self_mode, call="a self-join (right=None)")
    rfields = lfields if self_mode else as_fields(right, "right")
    if not self_mode:
        check_compatible(lfields, rfields, "left", "right")
    n_threads = _check_threads(n_threads)
    client = _check_client(client)
    return _join(lfields, rfields, self_mode, t, client, n_shards, n_threads, progress,
                 measure)


def dedup(
    units: Fields,
    *,
    client: Any,
    threshold: float = 0.8,
    measure: str = "dice",
    n_shards: int | None = None,
    n_threads: int | None = None,
    progress: ProgressArg = False,
) -> DedupResult:
    """:func:`overlap.dedup` whose threshold join runs on the cluster.

    The edges (pairs with score > threshold) are gathered and the passes run
    locally, as in the local function; the result is identical to it.
    ``measure`` as in :func:`overlap.dedup` (``"containment"`` is refused).
    """
    fields = as_fields(units, "units")
    t = check_unit_interval(threshold, "threshold")
    check_measure(measure, self_join=True, call="dedup")
    n_threads = _check_threads(n_threads)
    client = _check_client(client)
    n = len(fields[0])
    left, right, score = edges_above(
        n, t, lambda at: _join(fields, fields, True, at, client, n_shards, n_threads, progress,
                               measure))
    return dedup_from_edges(left, right, score, n)


# ------------------------------------------------------- streamed shards
def _stream_shard(path, eval_columns, options, n_threads):
    from .stream import scan_stream as _scan

    return _scan(eval_columns, [path], n_threads=n_threads, progress=False, **options)


def scan_stream(
    eval_columns: Any,
    shards: Any,
    *,
    client: Any,
    fields: Any = None,
    fmt: str | None = None,
    tokenizer: Any = "wordpunct",
    ngram: int = 1,
    seed: int = 0,
    chunk_rows: int = 65536,
    top_k: int = 1,
    min_score: float = 0.0,
    index: str = "auto",
    measure: str = "dice",
    keep_text: bool = True,
    n_threads: int | None = None,
    progress: ProgressArg = False,
):
    """:func:`overlap.stream.scan_stream` with every shard streamed on a worker.

    Each shard file is read, tokenized and searched chunk by chunk on the worker
    it is sent to (shard ``s`` to worker ``s mod n_workers``), so no worker
    holds more than one chunk of the corpus and nothing of it crosses the
    network: the workers must see the paths (a shared or replicated file
    system).  Every task returns its shard's best matches; they are laid end
    to end in shard order and merged exactly, so the result equals the local
    :func:`overlap.stream.scan_stream` over the same shards.

    Parameters
    ----------
    eval_columns : dict of field -> list of str, or list of str
        The eval samples; sent to every worker and tokenized there.
    shards : path or list of paths
        A directory (its shards in sorted name order) or a list of files.
    client : distributed.Client
    fields, fmt, tokenizer, ngram, seed, chunk_rows, top_k, min_score, index, measure, keep_text
        As in :func:`overlap.stream.scan_stream`.  A callable tokenizer must
        be picklable.
    n_threads : int, optional
        Kernel threads per shard task (default: the worker's ``nthreads``).
    progress : bool or callable
        Counts finished shards.

    Returns
    -------
    overlap.stream.StreamScanResult
    """
    import time

    from .stream import check_scan_args, merge_scan_results
    from .stream_readers import shard_paths

    t0 = time.perf_counter()
    check_scan_args(eval_columns, fields, ngram=ngram, chunk_rows=chunk_rows, top_k=top_k,
                    min_score=min_score, index=index, measure=measure)
    n_threads = _check_threads(n_threads)
    client = _check_client(client)
    paths = shard_paths(shards, fmt)
    ws = _workers(client)
    options = dict(fields=fields, fmt=fmt, tokenizer=tokenizer, ngram=ngram, seed=seed,
                   chunk_rows=chunk_rows, top_k=top_k, min_score=min_score, index=index,
                   measure=measure, keep_text=keep_text)
    ev = client.scatter([eval_columns], broadcast=True, hash=False)[0]
    futures = []
    for s, path in enumerate(paths):
        addr, slots = ws[s % len(ws)]
        nt = n_threads if n_threads is not None else max(1, slots)
        futures.append(client.submit(_stream_shard, path, ev, options, nt, workers=[addr],
                                     allow_other_workers=True, pure=False))
    _run(client, futures, progress, "dask scan_stream")
    res = merge_scan_results(client.gather(futures))
    res.seconds = time.perf_counter() - t0
    return res


__all__ += ["scan_stream"]


# ------------------------------------------------------------ contamination
def _contamination_shard(path, eval_texts, options, field, fmt, chunk_rows, n_threads):
    """One shard's :class:`overlap.contamination.ScanState`, rows numbered from 0."""
    from .contamination import ContaminationScanner
    from .stream_readers import read_chunks

    scanner = ContaminationScanner(eval_texts, n_threads=n_threads, **options)
    try:
        for chunk in read_chunks([path], [field], fmt=fmt, chunk_rows=chunk_rows):
            scanner.add_chunk(chunk, field)
    except ValueError:
        # an empty chunk comes only once the file is read to its end: what
        # follows it is read_chunks' "no rows" for a source of one empty shard,
        # which among other shards is no error (the client checks the total)
        if not (scanner.shards and scanner.n_rows == 0):
            raise
    return scanner.state()


def contamination(
    eval_texts: Any,
    shards: Any,
    *,
    client: Any,
    ngram: Any = None,
    rules: Any = None,
    groups: Any = None,
    field: str = "text",
    fmt: str | None = None,
    tokenizer: Any = "wordpunct",
    seed: int = 0,
    chunk_rows: int = 65536,
    keep_text: bool = True,
    n_threads: int | None = None,
    progress: ProgressArg = False,
):
    """:func:`overlap.contamination.contamination` with every shard read on a worker.

    Each shard file is read chunk by chunk by the worker it is sent to (shard
    ``s`` to worker ``s mod n_workers``; the workers must see the paths) with
    the same reader and kernels as the local function.  A task returns, for
    every distinct eval n-gram, the first row of its shard holding it (and
    per sample the first matching row and its text); the client lays the
    shards end to end in name order and keeps the lowest global row, so the
    result equals the local call's on the same shards.

    Parameters
    ----------
    eval_texts, ngram, rules, groups, field, fmt, tokenizer, seed, chunk_rows, keep_text
        As in :func:`overlap.contamination.contamination`; ``shards`` is a
        directory or a list of files.  A callable tokenizer must be picklable.
    client : distributed.Client
    n_threads : int, optional
        Kernel threads per shard task (default: the worker's ``nthreads``).
    progress : bool or callable
        Counts finished shards.

    Returns
    -------
    overlap.contamination.ContaminationResult
    """
    import time

    from .contamination import ContaminationScanner
    from .stream_readers import shard_paths

    t0 = time.perf_counter()
    n_threads = _check_threads(n_threads)
    check_int(chunk_rows, "chunk_rows", minimum=1)
    if isinstance(field, bool) or not isinstance(field, str):
        raise TypeError(f"field must be a str, got {type_name(field)}")
    options = dict(ngram=ngram, rules=rules, tokenizer=tokenizer, seed=seed, keep_text=keep_text)
    local = ContaminationScanner(eval_texts, n_threads=effective_n_threads(n_threads), **options)
    grp = None if groups is None else list(groups)
    if grp is not None and len(grp) != local.indptr.shape[0] - 1:
        raise ValueError(f"groups has {len(grp)} labels for {local.indptr.shape[0] - 1} "
                         "eval samples")
    client = _check_client(client)
    paths = shard_paths(shards, fmt)
    ws = _workers(client)
    ev = client.scatter([list(eval_texts) if not hasattr(eval_texts, "buffers")
                         else eval_texts], broadcast=True, hash=False)[0]
    futures = []
    for s, path in enumerate(paths):
        addr, slots = ws[s % len(ws)]
        nt = n_threads if n_threads is not None else max(1, slots)
        futures.append(client.submit(_contamination_shard, path, ev, options, field, fmt,
                                     chunk_rows, nt, workers=[addr],
                                     allow_other_workers=True, pure=False))
    _run(client, futures, progress, "dask contamination")
    for part in client.gather(futures):
        local.absorb(part)
    if local.n_rows == 0:
        what = paths[0] if len(paths) == 1 else f"{len(paths)} shard files"
        raise ValueError(f"{what}: no rows (0 samples read)")
    return local.result(grp, time.perf_counter() - t0)


__all__ += ["contamination"]
