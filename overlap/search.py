"""Exact max-overlap search, threshold join and aligned ratios (SPEC §2–4)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Union

import numpy as np

from . import _bitslice_index, _index, _search
from ._progress import ProgressArg, make_progress
from ._threads import effective_n_threads, threads_for
from ._validation import (
    MAX_QUERY_TOKENS,
    as_fields,
    check_compatible,
    check_int,
    check_unit_interval,
)
from .tokensets import TokenSets

__all__ = [
    "MaxOverlapResult",
    "JoinResult",
    "OverlapIndex",
    "ratio",
    "max_overlap",
    "overlap_join",
]

Fields = Union[TokenSets, Sequence[TokenSets]]


@dataclass(frozen=True)
class MaxOverlapResult:
    """Best matches of every query.

    Attributes
    ----------
    score : ndarray of float64, shape (n,) or (n, top_k)
        Best overlap ratio (0 when nothing overlaps or below ``min_score``).
    index : ndarray of int64, same shape
        Reference index of each match; -1 where there is none.
    """

    score: np.ndarray
    index: np.ndarray

    def __iter__(self) -> Iterator[np.ndarray]:
        yield self.score
        yield self.index

    def __len__(self) -> int:
        return int(self.score.shape[0])


@dataclass(frozen=True)
class JoinResult:
    """Every pair at or above the threshold, sorted by (left, right).

    Attributes
    ----------
    left, right : ndarray of int64
    score : ndarray of float64
    """

    left: np.ndarray
    right: np.ndarray
    score: np.ndarray

    def __iter__(self) -> Iterator[np.ndarray]:
        yield self.left
        yield self.right
        yield self.score

    def __len__(self) -> int:
        return int(self.left.shape[0])


def _chunks(n: int, n_threads: int) -> int:
    # large enough that every thread has plenty of queries per call, small enough
    # for responsive progress bars and Ctrl-C (checked between chunks)
    return max(2048 * n_threads, -(-n // 64))


def _run_chunks(run, n: int, nt: int, progress: ProgressArg, desc: str) -> None:
    """Call ``run(start, stop, threads)`` chunk by chunk, updating progress.

    Ctrl-C raises between chunks, when control is back in Python.
    """
    bar = make_progress(progress, n, desc)
    step = _chunks(n, nt)
    try:
        for start in range(0, n, step):
            stop = min(n, start + step)
            run(start, stop, threads_for(stop - start, nt, 64))
            bar.update(stop - start)
    finally:
        bar.close()


class OverlapIndex:
    """An inverted index over reference token sets, reusable across queries.

    Parameters
    ----------
    references : TokenSets or sequence of TokenSets
        One TokenSets per field (aligned rows); the ratio of two samples is the
        minimum over fields.
    n_threads : int or None
        Threads used to build the index (None: all cores).

    Notes
    -----
    Memory is linear in the number of stored tokens (postings plus the
    references themselves), never in queries x references.
    """

    def __init__(self, references: Fields, *, n_threads: int | None = None) -> None:
        self._fields = as_fields(references, "references")
        nt = threads_for(len(self._fields[0]), effective_n_threads(n_threads), 4096)
        self._coll = _index.collection(self._fields, nt)
        self._index = _index.reference_index(self._fields, self._coll, nt)
        self._max_row = _index.max_row(self._fields)
        self._bitslice = _bitslice_index.LazyBitslice(self._fields)

    def __len__(self) -> int:
        return len(self._fields[0])

    @property
    def n_fields(self) -> int:
        return len(self._fields)

    def _prepare(self, queries, qname: str, rname: str, nt: int):
        """(collection, n, against_self, max_row, max_mass) for a query set.

        ``queries=None`` means the references themselves (all vs rest, or the
        self-join's upper triangle).
        """
        if queries is None:
            qfields, qcoll, against_self = self._fields, self._coll, True
        else:
            qfields = as_fields(queries, qname)
            check_compatible(qfields, self._fields, qname, rname)
            qcoll = _index.collection(qfields, nt)
            against_self = False
        max_row = max(self._max_row, _index.max_row(qfields))
        max_mass = _index.max_mass(qfields)
        _check_query_rows(max_row, len(qfields), qname, max_mass)
        return qcoll, len(qfields[0]), against_self, max_row, max_mass

    def max_overlap(
        self,
        queries: Fields | None = None,
        *,
        top_k: int = 1,
        min_score: float = 0.0,
        n_threads: int | None = None,
        progress: ProgressArg = False,
    ) -> MaxOverlapResult:
        """Best ``top_k`` references of every query; ``queries=None`` = all vs rest.

        See :func:`max_overlap`.
        """
        top_k = check_int(top_k, "top_k", minimum=1)
        min_score = check_unit_interval(min_score, "min_score")
        nt = effective_n_threads(n_threads)
        qcoll, n, exclude, max_row, max_mass = self._prepare(queries, "queries", "references", nt)
        score = np.zeros((n, top_k), dtype=np.float64)
        index = np.full((n, top_k), -1, dtype=np.int64)

        def run(start: int, stop: int, threads: int) -> None:
            self._index.top_k(qcoll, start, stop, top_k, min_score, exclude, max_row, max_mass,
                              threads, score, index)

        # the bit-sliced kernel where its cost model says it pays (same results)
        qfields = None if queries is None else as_fields(queries, "queries")
        run = self._bitslice.top_k_runner(qfields, n, top_k, min_score, exclude, max_row,
                                          score, index) or run

        _run_chunks(run, n, nt, progress, "max_overlap")
        if top_k == 1:
            score, index = score[:, 0], index[:, 0]
        return MaxOverlapResult(score, index)

    def join(
        self,
        queries: Fields | None = None,
        *,
        threshold: float,
        n_threads: int | None = None,
        progress: ProgressArg = False,
    ) -> JoinResult:
        """Pairs (query, reference) with ratio >= threshold; ``queries=None`` = self-join.

        See :func:`overlap_join`.
        """
        threshold = _check_join_threshold(threshold)
        nt = effective_n_threads(n_threads)
        qcoll, n, upper, max_row, max_mass = self._prepare(queries, "left", "right", nt)
        parts = []

        def run(start: int, stop: int, threads: int) -> None:
            parts.append(self._index.join(qcoll, start, stop, threshold, upper, max_row,
                                          max_mass, threads))

        _run_chunks(run, n, nt, progress, "overlap_join")
        if parts:
            left = np.concatenate([p[0] for p in parts])
            right = np.concatenate([p[1] for p in parts])
            score = np.concatenate([p[2] for p in parts])
        else:
            left = right = np.zeros(0, dtype=np.int64)
            score = np.zeros(0, dtype=np.float64)
        order = np.lexsort((right, left))
        return JoinResult(left[order], right[order], score[order])


def _check_query_rows(max_row: int, n_fields: int, name: str, max_mass: int = 0) -> None:
    if max_mass >= 2**30:
        raise ValueError(f"{name}: a row has {max_mass} tokens; at most 2**30 - 1 are supported")
    if max_row * n_fields > MAX_QUERY_TOKENS:
        raise ValueError(
            f"{name}: a row holds {max_row} tokens per field; at most "
            f"{MAX_QUERY_TOKENS // n_fields} are supported with {n_fields} field(s)"
        )


def _check_join_threshold(threshold: float) -> float:
    t = check_unit_interval(threshold, "threshold")
    if t == 0.0:
        raise ValueError(
            "threshold must be > 0: at 0 every pair qualifies (n x m rows); use a small "
            "positive threshold to list every overlapping pair"
        )
    return t


def ratio(a: Fields, b: Fields, *, n_threads: int | None = None) -> np.ndarray:
    """Overlap ratio (Dice) of aligned pairs ``a[i]``, ``b[i]``.

    Parameters
    ----------
    a, b : TokenSets or sequence of TokenSets
        Equally long collections with the same fields; with several fields the
        ratio is the minimum over fields.
    n_threads : int or None

    Returns
    -------
    ndarray of float64, shape (n,)
        ``2*|a ∩ b| / (|a| + |b|)``, 0 where both are empty.
    """
    fa = as_fields(a, "a")
    fb = as_fields(b, "b")
    check_compatible(fa, fb, "a", "b")
    if len(fa[0]) != len(fb[0]):
        raise ValueError(f"a and b must have the same length, got {len(fa[0])} and {len(fb[0])}")
    nt = threads_for(len(fa[0]), effective_n_threads(n_threads), 4096)
    return _search.pair_ratios(_index.collection(fa, nt), _index.collection(fb, nt), nt)


def max_overlap(
    queries: Fields,
    references: Fields | None = None,
    *,
    top_k: int = 1,
    min_score: float = 0.0,
    n_threads: int | None = None,
    progress: ProgressArg = False,
) -> MaxOverlapResult:
    """Exact best-overlap search: for every query, its best reference(s).

    Parameters
    ----------
    queries : TokenSets or sequence of TokenSets
        One TokenSets per field; the ratio of two samples is the minimum of the
        fields' Dice ratios.
    references : same kind as ``queries``, or None
        ``None`` searches every query against the rest of ``queries`` (the query
        itself excluded).
    top_k : int, default 1
        Number of matches per query, sorted by score (descending) then index.
    min_score : float in [0, 1], default 0
        Matches below it are not reported (index -1, score 0); the search prunes
        with it.  Scores at or above it are exact.
    n_threads : int or None
        None uses all cores; results are identical for every value.
    progress : bool or callable
        True shows a progress bar (tqdm if installed); a callable receives
        ``(done, total)`` after every chunk.  Ctrl-C stops between chunks.

    Returns
    -------
    MaxOverlapResult
        ``score`` and ``index``, shape ``(n,)`` (or ``(n, top_k)``).  Ties go to
        the lowest reference index; a query that overlaps nothing gets index -1
        and score 0.
    """
    qfields = as_fields(queries, "queries")
    if references is None:
        return OverlapIndex(qfields, n_threads=n_threads).max_overlap(
            None, top_k=top_k, min_score=min_score, n_threads=n_threads, progress=progress
        )
    rfields = as_fields(references, "references")
    check_compatible(qfields, rfields, "queries", "references")
    check_int(top_k, "top_k", minimum=1)
    check_unit_interval(min_score, "min_score")
    return OverlapIndex(rfields, n_threads=n_threads).max_overlap(
        qfields, top_k=top_k, min_score=min_score, n_threads=n_threads, progress=progress
    )


def overlap_join(
    left: Fields,
    right: Fields | None = None,
    *,
    threshold: float,
    n_threads: int | None = None,
    progress: ProgressArg = False,
) -> JoinResult:
    """Every pair (i, j) whose overlap ratio is at least ``threshold``.

    Parameters
    ----------
    left : TokenSets or sequence of TokenSets
    right : same kind as ``left``, or None
        ``None`` joins ``left`` with itself over pairs i < j.
    threshold : float in (0, 1]
        A pair is listed exactly when its float64 score ``2.0*inter/(a+b)`` is
        ``>= threshold``.  This equals the integer test
        ``2*inter*q >= p*(a+b)`` for the threshold written as a decimal
        fraction ``p/q`` (e.g. 4/5 for 0.8), so a pair exactly on the threshold
        is never lost to rounding.
    n_threads : int or None
    progress : bool or callable

    Returns
    -------
    JoinResult
        ``left``, ``right`` (int64) and ``score`` (float64), sorted by (left, right).
    """
    lfields = as_fields(left, "left")
    t = _check_join_threshold(threshold)
    if right is None:
        return OverlapIndex(lfields, n_threads=n_threads).join(
            None, threshold=t, n_threads=n_threads, progress=progress
        )
    rfields = as_fields(right, "right")
    check_compatible(lfields, rfields, "left", "right")
    return OverlapIndex(rfields, n_threads=n_threads).join(
        lfields, threshold=t, n_threads=n_threads, progress=progress
    )
