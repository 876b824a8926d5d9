"""Exact max-overlap search, threshold join and aligned ratios."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Union

import numpy as np

from . import _bitslice_index, _dispatch, _index
from ._kernels import _collection, _pairs, _postings_search, _runner
from ._fields import Handover, as_fields, check_compatible
from ._progress import ProgressArg, check_progress, make_progress
from ._query_tokens import QueryTokens
from ._threads import effective_n_threads, threads_for
from ._kernels._collection import MAX_QUERY_TOKENS, MAX_ROW_MASS
from ._validation import (
    MAX_C_INT, check_int, check_join_threshold, check_measure, check_unit_interval,
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


#: Seconds of work one kernel call aims at: Ctrl-C and progress are handled
#: between calls, so a long search stops within about this long.  Every call
#: ends at a barrier where OpenMP's idle threads spin: at 0.2 s they cost 15%
#: more CPU on a loaded machine, at 0.5 s 3% (DailyDialog W top-1).
CHUNK_SECONDS = 0.5
# queries a thread takes at a time in the kernel's query loop (``run_queries``);
# every call holds at least this many per thread, so a call of heavy rows lasts
# at least 16 queries' time on one thread (0.1-0.5 s for 300-token rows)
_QUERIES_PER_GRAB = 16


def query_work(fields: tuple, order: np.ndarray | None = None) -> np.ndarray:
    """Cumulative estimated work of the queries: ``work[i]`` before query ``i``.

    A query's work is its number of tokens over all fields, plus one.  With
    ``order`` (a renumbered collection's ids) query ``i`` is row ``order[i]``.
    """
    n = len(fields[0])
    per = np.ones(n, dtype=np.int64)
    for ts in fields:
        per += np.diff(ts.indptr)
    if order is not None:
        per = per[order]
    work = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(per, out=work[1:])
    return work


def _run_chunks(
    run: Callable[[int, int, int], None],
    work: np.ndarray,
    nt: int,
    progress: ProgressArg,
    desc: str,
    *,
    seconds: float = CHUNK_SECONDS,
    clock: Callable[[], float] = time.perf_counter,
) -> None:
    """Call ``run(start, stop, threads)`` on consecutive query chunks, updating progress.

    ``work`` is :func:`query_work` of the queries.  The first chunk holds 16
    queries per thread; each next one holds the work the previous one ran at in
    ``seconds`` (at most four times its work, at least 16 queries per thread),
    so every call returns to Python soon and Ctrl-C raises between calls
    whatever the rows' lengths.  Results never depend on the chunking: every
    query writes only its own output.
    """
    n = int(work.shape[0]) - 1
    nt = threads_for(n, nt, 64)
    # the kernel hands out queries 16 at a time: fewer per call would idle threads
    least = _QUERIES_PER_GRAB * nt
    bar = make_progress(progress, n, desc)
    start = 0
    budget = -1.0  # work units per call; unknown before the first call
    try:
        while start < n:
            if budget < 0:
                stop = min(n, start + least)
            else:
                stop = int(np.searchsorted(work, work[start] + budget, side="right")) - 1
                stop = min(n, max(stop, start + least))
            t0 = clock()
            run(start, stop, min(nt, stop - start))
            elapsed = clock() - t0
            done = float(work[stop] - work[start])
            rate_budget = done * seconds / elapsed if elapsed > 0 else 4.0 * done
            budget = max(1.0, min(rate_budget, 4.0 * done))
            bar.update(stop - start)
            start = stop
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
        self._init(as_fields(references, "references"), "references",
                   effective_n_threads(n_threads))

    @classmethod
    def _build(cls, fields: tuple | Handover, name: str, nt: int, *, as_queries: bool = False,
               eager: bool = True, only_tokens: QueryTokens | None = None):
        """An index over checked ``fields``; errors about them name ``name``.

        ``as_queries``: the rows will also be searched as queries (all vs rest,
        self-join), so the query limits are checked before anything is built.
        ``eager=False`` leaves the postings index to its first use: a one-shot
        ``max_overlap`` that the bit-sliced kernel answers never needs it.
        ``fields`` may be a :class:`~overlap._fields.Handover` (with
        ``as_queries`` and ``eager``): an index that copies the rows
        (renumbered by size) lets them go once the copy is made and answers
        only its self-join (``join(None, ...)``).
        ``only_tokens`` (fixed queries' :class:`~overlap._query_tokens.QueryTokens`):
        the bit-sliced side is built on those queries' tokens alone and
        answers only their max_overlap (the postings side, where the
        dispatch picks it, holds every token).
        """
        self = object.__new__(cls)
        self._init(fields, name, nt, as_queries, eager, only_tokens)
        return self

    def _init(self, fields: tuple | Handover, name: str, nt: int, as_queries: bool = False,
              eager: bool = True, only_tokens: QueryTokens | None = None) -> None:
        handed = lean = False
        if isinstance(fields, Handover):
            if not (as_queries and eager):
                raise ValueError("OverlapIndex: handed-over fields are for a self-join")
            fields, handed, lean = fields.take(), True, fields.lean
        self._fields: tuple | None = fields
        self._n_rows = len(fields[0])
        self._n_fields = len(fields)
        # (max_mass, query_work) of the rows once the fields are let go
        # (handed over); None while the index holds them
        self._self_only: tuple[int, np.ndarray] | None = None
        self._name = name
        self._max_row = _index.max_row(fields)
        _check_rows(self._max_row, len(fields), name,
                    _index.max_mass(fields) if as_queries else 0)
        nt = threads_for(len(fields[0]), nt, 4096)
        # large reference sets are renumbered by size (see _index.renumbered);
        # the results are the same
        self._renumbered = _index.renumbers_by_size(len(fields[0]))
        self._collection: _collection.Collection | None = None
        self._build_threads = nt
        self._postings: _postings_search.ReferenceIndex | None = None
        self._postings_lock = threading.Lock()
        self._bitslice: _bitslice_index.LazyBitslice | None = None
        if handed and self._renumbered:
            # the rows' copy in size order first, then the fields go (the
            # caller's last reference, see Handover) before the postings
            coll = self._coll
            multiset = fields[0].multiset
            self._self_only = (_index.max_mass(fields), query_work(fields, coll.ids))
            self._fields = None
            del fields
            # a lean handover (``overlap dedup``) keeps no signature column
            # either: the largest array of the postings, for a slower join
            # (without them the join counts every entry its positional filter
            # passes: the same pairs)
            self._postings = _index.postings_index(coll, self._max_row, multiset, nt,
                                                   not lean, self_only=True)
            return
        if eager:
            self._postings = _index.reference_index(fields, self._coll, nt)
        self._bitslice = _bitslice_index.LazyBitslice(fields, nt, only_tokens)

    @property
    def _coll(self) -> _collection.Collection:
        """The references as one flat Collection (what the postings kernel reads),
        made on first use: a one-shot search that the bit-sliced kernel answers
        never copies the fields into it."""
        if self._collection is None:
            with self._postings_lock:
                if self._collection is None:
                    self._collection = _index.collection(self._need_fields("_coll"),
                                                         self._renumbered, self._build_threads)
        return self._collection

    @property
    def _index(self) -> _postings_search.ReferenceIndex:
        """The postings index, built on first use (once, whatever the callers' threads)."""
        if self._postings is None:
            coll = self._coll
            with self._postings_lock:
                if self._postings is None:
                    self._postings = _index.reference_index(self._need_fields("_index"), coll,
                                                            self._build_threads)
        return self._postings

    def __len__(self) -> int:
        return self._n_rows

    @property
    def n_fields(self) -> int:
        return self._n_fields

    def _need_fields(self, what: str) -> tuple:
        """The fields, or RuntimeError once the index kept only the self-join."""
        if self._fields is None:
            raise RuntimeError(f"OverlapIndex.{what}: this index answers only its self-join "
                               "(its token sets were let go)")
        return self._fields

    def _check_queries(self, queries, qname: str, rname: str) -> tuple[tuple | None, int, int]:
        """(query fields or None, max_row, max_mass) of checked queries.

        ``queries=None`` means the references themselves; ``max_row`` covers
        both sides, ``max_mass`` is the queries'.
        """
        if queries is None:
            qfields, q_row, name = None, self._max_row, self._name
            max_mass = (self._self_only[0] if self._self_only is not None
                        else _index.max_mass(self._need_fields("search")))
        else:
            qfields = as_fields(queries, qname)
            check_compatible(qfields, self._need_fields("search"), qname, rname)
            q_row, name = _index.max_row(qfields), qname
            max_mass = _index.max_mass(qfields)
        _check_rows(q_row, self.n_fields, name, max_mass)
        return qfields, max(self._max_row, q_row), max_mass

    def _prepare(self, queries, qname: str, rname: str, nt: int = 1, checked=None):
        """(collection, work, against_self, max_row, max_mass) for a query set.

        ``work`` is :func:`query_work` of the queries in the collection's
        order (its length is n + 1).  Queries against renumbered references
        are renumbered by size too (their results come back in the caller's
        order), copied on ``nt`` threads.

        ``queries=None`` means the references themselves (all vs rest, or the
        self-join's upper triangle).  ``checked``: what :meth:`_check_queries`
        returned for these queries, when the caller has it.
        """
        qfields, max_row, max_mass = checked or self._check_queries(queries, qname, rname)
        if qfields is None:
            if self._self_only is not None:
                return self._coll, self._self_only[1], True, max_row, max_mass
            qfields, qcoll, against_self = self._need_fields("search"), self._coll, True
        else:
            qcoll = _index.collection(qfields, self._renumbered,
                                      threads_for(len(qfields[0]), nt, 4096))
            against_self = False
        return qcoll, query_work(qfields, qcoll.ids), against_self, max_row, max_mass

    def max_overlap(
        self,
        queries: Fields | None = None,
        *,
        top_k: int = 1,
        min_score: float = 0.0,
        measure: str = "dice",
        n_threads: int | None = None,
        progress: ProgressArg = False,
    ) -> MaxOverlapResult:
        """Best ``top_k`` references of every query; ``queries=None`` = all vs rest.

        See :func:`max_overlap`.
        """
        top_k = check_int(top_k, "top_k", minimum=1, maximum=MAX_C_INT)
        min_score = check_unit_interval(min_score, "min_score")
        code = check_measure(measure)
        check_progress(progress)
        nt = effective_n_threads(n_threads)
        self._need_fields("max_overlap")
        checked = self._check_queries(queries, "queries", self._name)
        score, index = self._top_k(queries, checked, top_k, min_score, code, nt, progress)
        if top_k == 1:
            score, index = score[:, 0], index[:, 0]
        return MaxOverlapResult(score, index)

    def _max_overlap_above(self, queries: Fields, floors: np.ndarray, *, top_k: int = 1,
                           measure: str = "dice",
                           n_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(score, index)``, shape ``(n, top_k)``: the best ``top_k`` references
        of every query among those scoring at least the query's own floor.

        Query ``i`` is searched as :meth:`max_overlap` with
        ``min_score=floors[i]`` would search it (the streaming scan passes each
        query's running k-th best score: the search prunes with it).
        ``floors``: float64 in [0, 1], one per query; not modified.
        """
        top_k = check_int(top_k, "top_k", minimum=1, maximum=MAX_C_INT)
        code = check_measure(measure)
        nt = effective_n_threads(n_threads)
        self._need_fields("max_overlap")
        checked = self._check_queries(queries, "queries", self._name)
        n = len(checked[0][0])
        floors = np.asarray(floors)
        if floors.shape != (n,) or floors.dtype != np.float64:
            raise ValueError(f"floors must be a float64 array of shape ({n},), one per query, "
                             f"got {floors.dtype} {floors.shape}")
        if not ((floors >= 0.0) & (floors <= 1.0)).all():  # NaN fails too
            raise ValueError("floors must lie in [0, 1]")
        lowest = float(floors.min()) if n else 0.0
        return self._top_k(queries, checked, top_k, lowest, code, nt, False,
                           np.ascontiguousarray(floors))

    def _top_k(self, queries, checked, top_k: int, min_score: float, code: int, nt: int,
               progress, floors: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`max_overlap`'s ``(n, top_k)`` arrays for checked arguments.

        ``floors`` (one per query, each ``>= min_score``): query ``i`` reports
        only scores ``>= floors[i]``; the bit-sliced kernel prunes with them.
        """
        qfields, max_row, max_mass = checked
        n = len(self) if qfields is None else len(qfields[0])
        score = np.zeros((n, top_k), dtype=np.float64)
        index = np.full((n, top_k), -1, dtype=np.int64)
        # the bit-sliced kernel where its cost model says it pays (same
        # results); it reads the fields as they are
        fields = self._need_fields("max_overlap")
        uses_bitslice = self._bitslice is not None and _dispatch.use_bitslice(
            fields, n, min_score, self._bitslice)
        if uses_bitslice:
            run = self._bitslice.top_k_runner(qfields, top_k, min_score, qfields is None,
                                              max_row, score, index, code, floors)
            work = query_work(fields if qfields is None else qfields)
        else:
            qcoll, work, exclude, max_row, max_mass = self._prepare(queries, "queries",
                                                                    self._name, nt, checked)
            # the chunks' calls share their per-thread scratch
            pool = _runner.ScratchPool(nt, len(self), max_row, self.n_fields, max_mass, top_k)

            def run(start: int, stop: int, threads: int) -> None:
                self._index.top_k(qcoll, start, stop, top_k, min_score, exclude, max_row,
                                  max_mass, threads, score, index, pool, code)

        _run_chunks(run, work, nt, progress, "max_overlap")
        if floors is not None and not uses_bitslice:
            # searched down to min_score (the lowest floor): a query's top-k
            # above its own floor are the first entries of its list
            below = score < floors[:, None]
            score[below] = 0.0
            index[below] = -1
        return score, index

    def join(
        self,
        queries: Fields | None = None,
        *,
        threshold: float,
        measure: str = "dice",
        n_threads: int | None = None,
        progress: ProgressArg = False,
    ) -> JoinResult:
        """Pairs (query, reference) with score >= threshold; ``queries=None`` = self-join.

        See :func:`overlap_join`.
        """
        return self._join(queries, "queries", threshold, n_threads, progress, measure)

    def _join_slices(self, queries: Fields, *, threshold: float, rows: int,
                     measure: str = "dice",
                     n_threads: int | None = None) -> Iterator[tuple[np.ndarray, ...]]:
        """The pairs of :meth:`join`, ``rows`` queries at a time, unsorted.

        Yields ``(left, right, score)`` for queries ``[0, rows)``, then
        ``[rows, 2 * rows)``, ...; ``left`` numbers the queries as given.  The
        bit-sliced join reads the queries in place (one collection for all
        slices, no copy of a slice); the postings join gets each slice copied.
        """
        threshold = check_join_threshold(threshold)
        code = check_measure(measure)
        rows = check_int(rows, "rows", minimum=1)
        nt = effective_n_threads(n_threads)
        fields = self._need_fields("join")
        qfields, max_row, _ = self._check_queries(queries, "queries", self._name)
        n = len(qfields[0])
        if self._bitslice is not None and _dispatch.use_bitslice_join(fields, n):
            parts: list = []
            run = self._bitslice.join_runner(qfields, threshold, max_row, parts, code)
            nt = threads_for(n, nt, 64)
            for a in range(0, n, rows):
                b = min(n, a + rows)
                run(a, b, min(nt, b - a))
                yield parts.pop()
            return
        for a in range(0, n, rows):
            b = min(n, a + rows)
            part = qfields if (a, b) == (0, n) else tuple(
                f.take(np.arange(a, b, dtype=np.int64)) for f in qfields)
            res = self._join(part, "queries", threshold, n_threads, False, measure)
            yield res.left + a, res.right, res.score

    def _join(self, queries, qname: str, threshold, n_threads, progress,
              measure: str = "dice") -> JoinResult:
        """:meth:`join`; errors about the queries name ``qname``."""
        threshold = check_join_threshold(threshold)
        code = check_measure(measure, self_join=queries is None,
                             call=f"a self-join ({qname}=None)")
        check_progress(progress)
        nt = effective_n_threads(n_threads)
        parts: list = []
        checked = self._check_queries(queries, qname, self._name)
        qfields, max_row, _ = checked
        n = len(self) if qfields is None else len(qfields[0])
        if self._bitslice is not None and _dispatch.use_bitslice_join(
                self._need_fields("join"), n):
            # the bit-sliced join where it pays (small reference sets; same pairs)
            run = self._bitslice.join_runner(qfields, threshold, max_row, parts, code)
            work = query_work(self._need_fields("join") if qfields is None else qfields)
            _run_chunks(run, work, nt, progress, "overlap_join")
            return JoinResult(*_pairs.sorted_pairs(parts, n, len(self), nt))
        qcoll, work, upper, max_row, max_mass = self._prepare(queries, qname, self._name, nt,
                                                              checked)
        # the chunks' calls share their per-thread scratch
        pool = _runner.ScratchPool(nt, len(self), max_row, self.n_fields, max_mass, 1)

        def run(start: int, stop: int, threads: int) -> None:
            parts.append(self._index.join(qcoll, start, stop, threshold, upper, max_row,
                                          max_mass, threads, pool, code))

        _run_chunks(run, work, nt, progress, "overlap_join")
        return JoinResult(*_pairs.sorted_pairs(parts, int(work.shape[0]) - 1, len(self), nt))


def build_index(fields: tuple | Handover, name: str, nt: int, *, as_queries: bool = False,
                eager: bool = True, only_tokens: QueryTokens | None = None) -> OverlapIndex:
    """An :class:`OverlapIndex` over fields already checked (``as_fields``), for
    the package's own callers (:meth:`OverlapIndex._build` says what the
    arguments do)."""
    return OverlapIndex._build(fields, name, nt, as_queries=as_queries, eager=eager,
                               only_tokens=only_tokens)


def max_overlap_handed(queries: tuple, held: Handover, *, measure: str = "dice",
                       n_threads: int | None = None,
                       progress: ProgressArg = False) -> MaxOverlapResult:
    """:func:`max_overlap` (top 1, every score) of checked ``queries`` against a
    :class:`~overlap._fields.Handover` of checked references.

    Where the cost model picks the bit-sliced kernel (``_dispatch.choose_path``),
    its index is built from the Handover: the references' hashes, read only
    to number their tokens, go (when the caller kept no reference, as
    ``overlap scan --train`` does not) before the bitmaps are made, and that
    kernel answers, also where no token got a bitmap (the same results; see
    ``_dispatch.use_bitslice``).  Elsewhere this is :func:`max_overlap`.
    """
    rfields = held.take()
    check_compatible(queries, rfields, "queries", "references")
    code = check_measure(measure)
    check_progress(progress)
    nt = effective_n_threads(n_threads)
    n = len(queries[0])
    if _dispatch.choose_path(rfields, n) != "bitslice":
        return max_overlap(queries, rfields, measure=measure, n_threads=nt, progress=progress)
    # the checks of OverlapIndex._build and max_overlap, before anything is built
    r_row, q_row = _index.max_row(rfields), _index.max_row(queries)
    _check_rows(r_row, len(rfields), "references")
    _check_rows(q_row, len(queries), "queries", _index.max_mass(queries))
    build_threads = threads_for(len(rfields[0]), nt, 4096)
    lazy = _bitslice_index.LazyBitslice(Handover(rfields), build_threads)
    del rfields  # the index is built below, from the Handover alone
    score = np.zeros((n, 1), dtype=np.float64)
    index = np.full((n, 1), -1, dtype=np.int64)
    run = lazy.top_k_runner(queries, 1, 0.0, False, max(r_row, q_row), score, index, code)
    _run_chunks(run, query_work(queries), nt, progress, "max_overlap")
    return MaxOverlapResult(score[:, 0], index[:, 0])


def _check_rows(max_row: int, n_fields: int, name: str, max_mass: int = 0) -> None:
    """Rows the kernels can hold: ``name`` is the argument they came from."""
    if max_mass > MAX_ROW_MASS:
        raise ValueError(
            f"{name}: a row has {max_mass} tokens; at most {MAX_ROW_MASS} are supported"
        )
    if max_row * n_fields > MAX_QUERY_TOKENS:
        raise ValueError(
            f"{name}: a row holds {max_row} tokens per field; at most "
            f"{MAX_QUERY_TOKENS // n_fields} are supported with {n_fields} field(s)"
        )


def ratio(a: Fields, b: Fields, *, measure: str = "dice",
          n_threads: int | None = None) -> np.ndarray:
    """Overlap ratio of aligned pairs ``a[i]``, ``b[i]`` (Dice unless ``measure``).

    Parameters
    ----------
    a, b : TokenSets or sequence of TokenSets
        Equally long collections with the same fields; with several fields the
        ratio is the minimum over fields.
    measure : {"dice", "jaccard", "cosine", "overlap", "containment"}, default "dice"
        The score of a pair of rows (docs/measures.md), the minimum over fields
        for several fields; ``"containment"`` is how much of the row of ``a`` lies
        inside the row of ``b``.
    n_threads : int or None

    Returns
    -------
    ndarray of float64, shape (n,)
        Dice: ``2*|a ∩ b| / (|a| + |b|)``; every measure is 0 where the rows
        share nothing (and where both are empty).
    """
    fa = as_fields(a, "a")
    fb = as_fields(b, "b")
    check_compatible(fa, fb, "a", "b")
    code = check_measure(measure)
    if len(fa[0]) != len(fb[0]):
        raise ValueError(f"a and b must have the same length, got {len(fa[0])} and {len(fb[0])}")
    nt = threads_for(len(fa[0]), effective_n_threads(n_threads), 4096)
    return _collection.pair_ratios(_index.collection(fa), _index.collection(fb), nt, code)


def max_overlap(
    queries: Fields,
    references: Fields | None = None,
    *,
    top_k: int = 1,
    min_score: float = 0.0,
    measure: str = "dice",
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
    measure : {"dice", "jaccard", "cosine", "overlap", "containment"}, default "dice"
        The score of a pair of rows (docs/measures.md), the minimum over fields
        for several fields; ``"containment"`` is how much of the query lies
        inside the reference.
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
    rfields = None if references is None else as_fields(references, "references")
    if rfields is not None:
        check_compatible(qfields, rfields, "queries", "references")
    # every argument is checked before the index is built
    top_k = check_int(top_k, "top_k", minimum=1, maximum=MAX_C_INT)
    min_score = check_unit_interval(min_score, "min_score")
    check_measure(measure)
    check_progress(progress)
    nt = effective_n_threads(n_threads)
    if rfields is None:
        return OverlapIndex._build(qfields, "queries", nt, as_queries=True,
                                   eager=False).max_overlap(
            None, top_k=top_k, min_score=min_score, measure=measure, n_threads=n_threads,
            progress=progress
        )
    return OverlapIndex._build(rfields, "references", nt, eager=False).max_overlap(
        qfields, top_k=top_k, min_score=min_score, measure=measure, n_threads=n_threads,
        progress=progress
    )


def overlap_join(
    left: Fields,
    right: Fields | None = None,
    *,
    threshold: float,
    measure: str = "dice",
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
        is never lost to rounding.  Other measures: their float64 score
        (docs/measures.md) ``>= threshold``.
    measure : {"dice", "jaccard", "cosine", "overlap", "containment"}, default "dice"
        The score of a pair of rows (docs/measures.md), the minimum over fields
        for several fields; ``"containment"`` is how much of ``left[i]`` lies
        inside ``right[j]`` (not for a self-join: use ``"overlap"``).
    n_threads : int or None
    progress : bool or callable

    Returns
    -------
    JoinResult
        ``left``, ``right`` (int64) and ``score`` (float64), sorted by (left, right).
    """
    lfields = as_fields(left, "left")
    rfields = None if right is None else as_fields(right, "right")
    if rfields is not None:
        check_compatible(lfields, rfields, "left", "right")
    t = check_join_threshold(threshold)
    check_measure(measure, self_join=rfields is None, call="a self-join (right=None)")
    check_progress(progress)
    nt = effective_n_threads(n_threads)
    if rfields is None:
        return OverlapIndex._build(lfields, "left", nt, as_queries=True)._join(
            None, "left", t, n_threads, progress, measure
        )
    return OverlapIndex._build(rfields, "right", nt)._join(lfields, "left", t, n_threads,
                                                           progress, measure)
