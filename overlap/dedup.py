"""Iterative near-duplicate removal and exact-duplicate grouping."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _dedup, _index
from ._kernels import _collection
from ._progress import ProgressArg, check_progress
from ._threads import effective_n_threads
from ._fields import Handover, as_fields
from ._order import pair_order, stable_argsort_u64
from ._validation import check_measure, check_unit_interval
from .search import Fields, build_index

__all__ = ["DedupResult", "dedup", "dedup_from_edges", "exact_duplicates"]

#: The smallest positive float64: a join at ``max(threshold, _TINY)`` lists
#: every pair with a ratio above ``threshold`` (a join needs a threshold > 0).
_TINY = float(np.nextafter(0.0, 1.0))

Edges = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class DedupResult:
    """Outcome of :func:`dedup`.

    Attributes
    ----------
    keep : ndarray of bool, shape (n,)
        True for the units that stay.
    kept_for : ndarray of int64, shape (n,)
        For a removed unit, the unit it matched best when it was removed (a unit
        that was present then); -1 for kept units.  Following ``kept_for`` from
        any removed unit ends at a kept unit.
    passes : int
        Passes run, the last of which removed nothing.
    cluster : ndarray of int64, shape (n,)
        Connected component of the ``R > threshold`` graph, labelled by its
        smallest member index.
    n_edges : int
        Pairs with ``R > threshold``.
    """

    keep: np.ndarray
    kept_for: np.ndarray
    passes: int
    cluster: np.ndarray
    n_edges: int

    @property
    def n_removed(self) -> int:
        return int((~self.keep).sum())

    def representative(self) -> np.ndarray:
        """For every unit, the kept unit that its ``kept_for`` chain ends at."""
        rep = np.arange(self.keep.shape[0], dtype=np.int64)
        rep[~self.keep] = self.kept_for[~self.keep]
        while True:
            nxt = rep[rep]
            if np.array_equal(nxt, rep):
                return rep
            rep = nxt


def dedup(
    units: Fields,
    *,
    threshold: float = 0.8,
    measure: str = "dice",
    n_threads: int | None = None,
    progress: ProgressArg = False,
    _log: Callable[[str], Any] | None = None,
) -> DedupResult:
    """Iterative near-duplicate removal of the published overlap study.

    A pass visits units in index order; unit ``i`` is removed when its best
    overlap ratio against the units still present is strictly greater than
    ``threshold`` and ``i`` is not protected in this pass.  Its best match
    (lowest index on ties) is recorded in ``kept_for`` and protected until the
    pass ends.  Passes repeat until one removes nothing.

    Only pairs with ``R > threshold`` matter, so this runs on the edges of the
    threshold self-join; no dense n x n matrix is ever built.

    Parameters
    ----------
    units : TokenSets or sequence of TokenSets
        One row per unit (a dialogue, a movie, a sample); several fields use the
        minimum ratio over fields.
    threshold : float in [0, 1], default 0.8
    measure : {"dice", "jaccard", "cosine", "overlap"}, default "dice"
        The score of two units (docs/measures.md).  ``"overlap"`` removes a
        unit whose smaller side lies (at least ``threshold``) inside the
        other; ``"containment"`` is asymmetric and refused.
    n_threads : int or None
    progress : bool or callable
        Progress of the join (the passes themselves are fast).  The index the
        join reads is built first, in a few kernel calls, without progress.

    Returns
    -------
    DedupResult
    """
    fields = as_fields(units, "units")
    t = check_unit_interval(threshold, "threshold")
    check_measure(measure, self_join=True, call="dedup")
    check_progress(progress)
    nt = effective_n_threads(n_threads)
    return dedup_fields(fields, t, nt, progress, _log, measure)


def dedup_fields(fields: tuple | Handover, threshold: float, nt: int, progress: ProgressArg,
                 log: Callable[[str], Any] | None = None,
                 measure: str = "dice") -> DedupResult:
    """:func:`dedup` of checked ``fields`` (or a :class:`Handover` of them) with
    checked arguments; ``log`` gets the step lines."""
    n = fields.n_rows if isinstance(fields, Handover) else len(fields[0])
    left, right, score = self_join_edges(fields, threshold, nt, progress, log, measure)
    if log is not None:
        log(f"dedup: passes over {left.shape[0]:,} pairs above the threshold")
    return dedup_from_edges(left, right, score, n)


def edges_above(n: int, threshold: float, self_join: Callable[[float], Any]) -> Edges:
    """``(left, right, score)`` of every pair i < j of ``n`` units whose ratio is
    strictly above ``threshold`` (a checked float in [0, 1]).

    ``self_join(t)`` is the units' threshold self-join at ``t > 0`` (a
    :class:`~overlap.JoinResult`); it is not called when no pair can qualify.
    """
    if threshold >= 1.0 or n < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy(), np.zeros(0, dtype=np.float64)
    pairs = self_join(max(threshold, _TINY))
    strict = pairs.score > threshold
    return pairs.left[strict], pairs.right[strict], pairs.score[strict]


def self_join_edges(fields: tuple | Handover, threshold: float, nt: int, progress: ProgressArg,
                    log: Callable[[str], Any] | None = None, measure: str = "dice") -> Edges:
    """:func:`edges_above` of checked ``fields`` by a local self-join on ``nt``
    threads; ``log`` (the command line's step lines) hears of the join.

    The index lets the fields go once it holds its own copy of them (see
    :class:`~overlap._fields.Handover`); given a Handover, this keeps no
    reference either, so they are freed before the postings are built.
    """
    held = fields if isinstance(fields, Handover) else Handover(fields)
    del fields
    n = held.n_rows

    def self_join(t: float) -> Any:
        index = build_index(held, "units", nt, as_queries=True)
        if log is not None:  # the index build has no bar: the join gets a line
            log(f"dedup: joining {n:,} units with themselves")
        return index.join(None, threshold=t, measure=measure, n_threads=nt, progress=progress)

    return edges_above(n, threshold, self_join)


def dedup_from_edges(
    left: np.ndarray, right: np.ndarray, score: np.ndarray, n: int
) -> DedupResult:
    """Run the passes on the edges of the ``R > threshold`` graph.

    ``left``/``right``/``score`` list every pair i < j with ratio above the
    threshold (as the strict part of a self-join); the result is what
    :func:`dedup` returns for the units these edges came from.
    """
    left = np.ascontiguousarray(left, dtype=np.int64)
    right = np.ascontiguousarray(right, dtype=np.int64)
    score = np.ascontiguousarray(score, dtype=np.float64)
    # symmetric adjacency, neighbours ascending within each row
    src = np.concatenate([left, right])
    dst = np.concatenate([right, left])
    sc = np.concatenate([score, score])
    order = pair_order(src, dst)
    src, dst, sc = src[order], dst[order], sc[order]
    adj_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=adj_ptr[1:])
    keep, kept_for, passes = _dedup.iterative_passes(
        adj_ptr, np.ascontiguousarray(dst), np.ascontiguousarray(sc), n
    )
    cluster = _dedup.component_labels(left, right, n)
    return DedupResult(keep, kept_for, int(passes), cluster, int(left.shape[0]))


def exact_duplicates(units: Fields, *, n_threads: int | None = None) -> np.ndarray:
    """Group units whose token sets (every field) are identical.

    Parameters
    ----------
    units : TokenSets or sequence of TokenSets
    n_threads : int or None

    Returns
    -------
    ndarray of int64, shape (n,)
        For every unit, the smallest index of the units identical to it (itself
        when it has no duplicate earlier).  Units with empty token sets are
        identical to each other.
    """
    fields = as_fields(units, "units")
    nt = effective_n_threads(n_threads)
    n = len(fields[0])
    label = np.arange(n, dtype=np.int64)
    if n < 2:
        return label
    fp = _index.collection(fields).need_fingerprints(nt)
    order = stable_argsort_u64(fp)
    sfp = fp[order]
    run_start = np.ones(n, dtype=bool)
    run_start[1:] = sfp[1:] != sfp[:-1]
    head = order[np.maximum.accumulate(np.where(run_start, np.arange(n), 0))]
    member = head != order
    if not member.any():
        return label
    m_idx, h_idx = order[member], head[member]
    same = np.ones(m_idx.shape[0], dtype=bool)
    for ts in fields:
        a, b = ts.take(m_idx), ts.take(h_idx)
        sa, sb = a.sizes, b.sizes
        r = _collection.pair_ratios(_index.collection((a,)), _index.collection((b,)), nt)
        same &= (sa == sb) & ((sa == 0) | (r == 1.0))
    label[m_idx[same]] = h_idx[same]
    if not same.all():  # fingerprint collision: settle those runs exactly
        _settle_collisions(fields, label, order, sfp, set(fp[m_idx[~same]].tolist()))
    return label


def _settle_collisions(fields, label, order, sfp, colliding) -> None:
    for key in colliding:
        lo, hi = np.searchsorted(sfp, key, "left"), np.searchsorted(sfp, key, "right")
        first: dict = {}
        for i in order[lo:hi]:  # ascending index within the run
            row = tuple(
                (ts.row(int(i)).tobytes(),
                 b"" if ts.counts is None
                 else ts.counts[ts.indptr[i]:ts.indptr[i + 1]].tobytes())
                for ts in fields
            )
            label[i] = first.setdefault(row, int(i))
