"""Exact max-overlap search against a reference corpus bigger than memory.

The queries (an eval set: small) stay in memory; the references (a training
corpus: large) arrive chunk by chunk and are dropped after use.  For every
chunk the exact search of :func:`overlap.max_overlap` runs on that chunk alone
and its best matches, shifted to global reference numbers, are merged into the
running best.  Chunks arrive in order, so a later chunk replaces a match only
with a strictly greater score (or, for ``top_k > 1``, enters the list after
the equal scores already in it): ties go to the lowest global index, and the
result equals :func:`overlap.max_overlap` on all the references at once, bit
for bit, for any chunking.

Memory is the queries, one chunk (its texts, token sets and index) and the
``n_queries x top_k`` running best: independent of the corpus size.
:func:`scan_stream` reads and tokenizes the next chunk on a background thread
while one is searched when ``prefetch=True`` (the default from
:data:`PREFETCH_MIN_THREADS` kernel threads on), and then holds three chunks at a
time (one searched, one tokenized, one read).

Two ways to search one chunk, chosen per chunk by ``index=``:

``"chunk"``
    Build an :class:`~overlap.OverlapIndex` on the chunk and search the
    queries in it (each query is searched above its own running k-th best
    score, which prunes most of the chunk).  Its bit-sliced side holds only
    the chunk's tokens that some query holds, each row keeping its whole size
    (``overlap._query_tokens``): no other token adds to a score.
``"queries"``
    Use one index over the queries, built once, and list the chunk's pairs
    whose score reaches the cut-off ``max(min_score, lowest running k-th best)``
    (a threshold join), keeping the best per query.  No index build per chunk,
    but it needs a cut-off > 0 and lists every pair above it.
``"auto"`` (default)
    ``"queries"`` once the cut-off is at least :data:`AUTO_QUERIES_CUTOFF`,
    unless the last chunk searched that way listed more pairs than it had
    rows; else ``"chunk"``.

``measure="containment"`` (how much of the query lies inside the reference)
searches every chunk with ``"chunk"``: the join of ``"queries"`` scores each
pair from the chunk row's side, the other direction.

The rule comes from a measurement (docs/streaming.md): on Zipf
text with 1,000 queries and 65,536-row chunks, one thread, the query index was
1.4x (cut-off 0.5) to 2.7x (0.8) faster than indexing the chunk, but at 0.3 it
was 2.4x slower and at 0.1 about 70x slower, because the join then lists
millions of pairs.  Its join now runs on the bit-sliced kernel
(``OverlapIndex.join`` picks it for a small indexed side): 4.3x faster than
indexing the chunk at 0.5, about as fast at 0.3.  The join runs on slices of :data:`JOIN_ROWS` chunk rows
so that its pair list stays small even then.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ._allocator import settle
from ._columns import arrow_indices
from ._fields import as_fields, check_compatible
from ._prefetch import Prefetch
from ._progress import ProgressArg, make_progress
from ._query_tokens import QueryTokens
from ._threads import effective_n_threads
from ._validation import check_int, check_measure, check_unit_interval, type_name
from .search import Fields, MaxOverlapResult, OverlapIndex, build_index
from .stream_readers import Chunk, read_chunks, source_size
from .tokensets import Tokenizer, TokenSets

__all__ = [
    "AUTO_QUERIES_CUTOFF",
    "PREFETCH_MIN_THREADS",
    "StreamMerger",
    "StreamScanResult",
    "stream_max_overlap",
    "scan_stream",
    "merge_scan_results",
    "check_scan_args",
]

#: ``index="auto"`` indexes the queries once the cut-off reaches this score.
AUTO_QUERIES_CUTOFF = 0.5
#: ``scan_stream`` prefetches by default from this many kernel threads on.
PREFETCH_MIN_THREADS = 2
#: Chunk rows per threshold join when the queries are indexed.
JOIN_ROWS = 8192

_INDEX_CHOICES = ("auto", "chunk", "queries")


def merge_top_k(score: np.ndarray, index: np.ndarray, new_score: np.ndarray,
                new_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact merge of two ``(n, k)`` top-k lists, the second from later references.

    Sorted by score (descending) then index (ascending); ``-1`` (no match) last.
    """
    k = score.shape[1]
    if k == 1:
        better = new_score[:, 0] > score[:, 0]
        return (np.where(better[:, None], new_score, score),
                np.where(better[:, None], new_index, index))
    s = np.concatenate([score, new_score], axis=1)
    i = np.concatenate([index, new_index], axis=1)
    key = np.where(i < 0, np.iinfo(np.int64).max, i)
    order = np.lexsort((key, -s), axis=1)[:, :k]
    return np.take_along_axis(s, order, 1), np.take_along_axis(i, order, 1)


def _best_per_query(left: np.ndarray, right: np.ndarray, score: np.ndarray, nq: int, k: int):
    """Top-k per query of join pairs in any order (left: reference row, right: query)."""
    s = np.zeros((nq, k), dtype=np.float64)
    i = np.full((nq, k), -1, dtype=np.int64)
    order = np.lexsort((left, -score, right))
    q, r, sc = right[order], left[order], score[order]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    rank = np.arange(q.shape[0]) - np.repeat(starts, np.diff(np.r_[starts, q.shape[0]]))
    top = rank < k
    s[q[top], rank[top]] = sc[top]
    i[q[top], rank[top]] = r[top]
    return s, i


class StreamMerger:
    """The running best matches of fixed queries over a stream of reference chunks.

    Parameters
    ----------
    queries : TokenSets or sequence of TokenSets
        One TokenSets per field (multi-field ratio: the minimum over fields).
    top_k : int, default 1
    min_score : float in [0, 1], default 0
    index : {"auto", "chunk", "queries"}
        How each chunk is searched (see the module notes); the result is the
        same for every choice.
    measure : str, default "dice"
        As in :func:`overlap.max_overlap`; ``"containment"`` takes
        ``index="chunk"`` or ``"auto"``.
    n_threads : int or None

    Use :meth:`add` for every chunk in order, then :meth:`result`.
    """

    def __init__(self, queries: Fields, *, top_k: int = 1, min_score: float = 0.0,
                 index: str = "auto", measure: str = "dice",
                 n_threads: int | None = None) -> None:
        self.queries = as_fields(queries, "queries")
        self.top_k = check_int(top_k, "top_k", minimum=1)
        self.min_score = check_unit_interval(min_score, "min_score")
        _check_index(index, measure)
        self.index_choice = index
        self.measure = measure
        self.n_threads = n_threads
        effective_n_threads(n_threads)  # validates
        nq = len(self.queries[0])
        self.score = np.zeros((nq, self.top_k), dtype=np.float64)
        self.index = np.full((nq, self.top_k), -1, dtype=np.int64)
        self.n_references = 0
        self.chunks = {"chunk": 0, "queries": 0}
        self._query_index: OverlapIndex | None = None
        self._pairs_per_row = 0.0
        # the queries' tokens: a chunk's bit-sliced index holds only these
        self._query_tokens = (None if self.queries[0].multiset
                              else QueryTokens(self.queries))

    def cutoff(self) -> float:
        """Scores below this can no longer enter any query's top-k (or pass min_score)."""
        if self.score.shape[0] == 0:
            return 1.0
        return max(self.min_score, float(self.score[:, -1].min()))

    def add(self, references: Fields, offset: int | None = None) -> None:
        """Merge the best matches of the next chunk of references.

        Parameters
        ----------
        references : TokenSets or sequence of TokenSets
            The chunk, with the same fields as the queries.
        offset : int, optional
            Global index of the chunk's first reference; default: the number
            of references added so far.  Must not go backwards.
        """
        rfields = as_fields(references, "references")
        check_compatible(self.queries, rfields, "queries", "references")
        if offset is None:
            offset = self.n_references
        offset = check_int(offset, "offset", minimum=self.n_references)
        m = len(rfields[0])
        self.n_references = offset + m
        nq = self.score.shape[0]
        if m == 0 or nq == 0:
            return
        cut = self.cutoff()
        how = self.index_choice
        if how == "auto":
            cheap = (cut >= AUTO_QUERIES_CUTOFF and self._pairs_per_row <= 1.0
                     and self.measure != "containment")
            how = "queries" if cheap else "chunk"
        if how == "queries" and cut <= 0.0:
            how = "chunk"  # a join needs a positive threshold
        self.chunks[how] += 1
        if how == "chunk":
            # lazy: the postings index is built only if the search needs it (the
            # bit-sliced kernel answers most chunks without it); the bit-sliced
            # one holds only the queries' tokens (no other token adds to a score)
            chunk_index = build_index(rfields, "references", effective_n_threads(self.n_threads),
                                      eager=False, only_tokens=self._query_tokens)
            # each query searched above its own running k-th best: only a
            # reference scoring at least that can enter its list
            floors = np.maximum(self.score[:, -1], self.min_score)
            s, i = chunk_index._max_overlap_above(self.queries, floors, top_k=self.top_k,
                                                  measure=self.measure, n_threads=self.n_threads)
        else:
            s, i = self._join_chunk(rfields, cut)
        found = i >= 0
        # scores equal to the cut-off are kept: below min_score nothing is
        # reported, and ties with earlier references lose in the merge anyway
        keep = found & (s >= self.min_score)
        s = np.where(keep, s, 0.0)
        i = np.where(keep, i + offset, -1)
        self.score, self.index = merge_top_k(self.score, self.index, s, i)

    def _join_chunk(self, rfields, cut: float):
        if self._query_index is None:
            self._query_index = build_index(self.queries, "queries",
                                            effective_n_threads(self.n_threads), eager=False)
        nq, k = self.score.shape
        m = len(rfields[0])
        s = np.zeros((nq, k), dtype=np.float64)
        i = np.full((nq, k), -1, dtype=np.int64)
        n_pairs = 0
        for left, right, score in self._query_index._join_slices(
                rfields, threshold=cut, rows=JOIN_ROWS, measure=self.measure,
                n_threads=self.n_threads):
            n_pairs += len(left)
            if len(left):
                s, i = merge_top_k(s, i, *_best_per_query(left, right, score, nq, k))
        self._pairs_per_row = n_pairs / m
        return s, i

    def result(self) -> MaxOverlapResult:
        """The matches so far, shaped as :func:`overlap.max_overlap` returns them."""
        if self.top_k == 1:
            return MaxOverlapResult(self.score[:, 0].copy(), self.index[:, 0].copy())
        return MaxOverlapResult(self.score.copy(), self.index.copy())


def stream_max_overlap(
    queries: Fields,
    reference_chunks: Iterable[Fields],
    *,
    top_k: int = 1,
    min_score: float = 0.0,
    index: str = "auto",
    measure: str = "dice",
    n_threads: int | None = None,
    progress: ProgressArg = False,
) -> MaxOverlapResult:
    """:func:`overlap.max_overlap` with the references given chunk by chunk.

    Parameters
    ----------
    queries : TokenSets or sequence of TokenSets
    reference_chunks : iterable of TokenSets (or of sequences of TokenSets)
        Consecutive chunks of the references, in order; reference ``j`` of the
        result is row ``j`` of the chunks laid end to end.  Any iterable works
        (a generator keeps only one chunk alive).
    top_k, min_score, measure
        As in :func:`overlap.max_overlap`.
    index : {"auto", "chunk", "queries"}
        How each chunk is searched (module notes); the result does not depend
        on it (``measure="containment"`` takes ``"chunk"`` or ``"auto"``).
    n_threads : int or None
    progress : bool or callable
        True prints references done (tqdm on a terminal, plain lines in a
        log); a callable receives ``(references_done, 0)``.

    Returns
    -------
    MaxOverlapResult
        Equal to ``overlap.max_overlap(queries, all_references, ...)``.
    """
    merger = StreamMerger(queries, top_k=top_k, min_score=min_score, index=index,
                          measure=measure, n_threads=n_threads)
    if isinstance(reference_chunks, (TokenSets, str, bytes)):
        raise TypeError("reference_chunks must be an iterable of chunks, got a single "
                        f"{type_name(reference_chunks)}")
    bar = make_progress(progress, 0, "stream_max_overlap", "references")
    try:
        for chunk in reference_chunks:
            before = merger.n_references
            merger.add(chunk)
            bar.update(merger.n_references - before)
    finally:
        bar.close()
    return merger.result()


# ------------------------------------------------------------------ texts
@dataclass
class StreamScanResult:
    """Best training match of every eval sample over a streamed corpus.

    Attributes
    ----------
    score, index : ndarray
        As in :class:`~overlap.MaxOverlapResult`; ``index`` numbers the
        corpus rows globally, in reading order (see ``shards``).
    match : dict of str to list
        For every field, the text of each match (``None`` where there is
        none); lists of ``top_k`` entries per sample when ``top_k > 1``.
    shards : list of (path, first_row, n_rows)
        Where each global row number comes from.
    n_references : int
    nbytes : int
        Bytes read.
    seconds : float
    chunks : dict
        How many chunks each search strategy handled.
    """

    score: np.ndarray
    index: np.ndarray
    match: dict
    shards: list = field(default_factory=list)
    n_references: int = 0
    nbytes: int = 0
    seconds: float = 0.0
    chunks: dict = field(default_factory=dict)

    def locate(self, row: int) -> tuple[str, int]:
        """``(shard path, row within the shard)`` of a global row number."""
        for path, first, n in self.shards:
            if first <= row < first + n:
                return path, row - first
        raise IndexError(f"row {row} is not in the corpus ({self.n_references} rows)")


def _check_index(index, measure) -> None:
    """``index=`` and ``measure=`` of a streamed search."""
    if index not in _INDEX_CHOICES:
        raise ValueError(f"index must be one of {', '.join(_INDEX_CHOICES)}, got {index!r}")
    check_measure(measure)
    if index == "queries" and measure == "containment":
        raise ValueError("index='queries' cannot search with measure='containment': its join "
                         "scores each pair from the corpus row's side (how much of the corpus "
                         "row lies inside the query); use index='chunk' or 'auto'")


def check_scan_args(eval_columns, fields, *, ngram, chunk_rows, top_k, min_score,
                    index, measure="dice") -> tuple[list[str], dict]:
    """Validate :func:`scan_stream`'s arguments; return the field list and eval columns."""
    if fields is None:
        fields = ["text"]
    elif isinstance(fields, str):
        fields = [fields]
    else:
        if isinstance(fields, (bytes, Mapping)) or not isinstance(fields, Sequence):
            raise TypeError(f"fields must be a str or a list of str, got {type_name(fields)}")
        fields = list(fields)
        if not fields or not all(isinstance(f, str) for f in fields):
            raise TypeError("fields must be a str or a non-empty list of str")
    check_int(ngram, "ngram", minimum=1)
    check_int(chunk_rows, "chunk_rows", minimum=1)
    check_int(top_k, "top_k", minimum=1)
    check_unit_interval(min_score, "min_score")
    _check_index(index, measure)
    return fields, _eval_fields(eval_columns, fields)


def _eval_fields(eval_columns, fields: list[str]) -> dict:
    if isinstance(eval_columns, Mapping):
        missing = [f for f in fields if f not in eval_columns]
        if missing:
            raise ValueError(f"eval_columns has no field {missing[0]!r} "
                             f"(has {', '.join(map(str, eval_columns))})")
        cols = {f: list(eval_columns[f]) for f in fields}
    elif isinstance(eval_columns, Sequence) and not isinstance(eval_columns, (str, bytes)):
        if len(fields) != 1:
            raise ValueError("eval_columns is a list of texts: give exactly one field")
        cols = {fields[0]: list(eval_columns)}
    else:
        raise TypeError("eval_columns must be a dict of field -> texts or a list of texts, "
                        f"got {type_name(eval_columns)}")
    lens = {len(v) for v in cols.values()}
    if len(lens) > 1:
        raise ValueError(f"eval_columns: fields have different lengths {sorted(lens)}")
    return cols


def scan_stream(
    eval_columns: Mapping[str, Sequence[str]] | Sequence[str],
    source: str | os.PathLike | Sequence | Iterable[Chunk],
    *,
    fields: Sequence[str] | str | None = None,
    fmt: str | None = None,
    tokenizer: Tokenizer = "wordpunct",
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
    prefetch: bool | None = None,
    engine: str | None = None,
) -> StreamScanResult:
    """Scan eval samples against a training corpus read from disk in chunks.

    The CLI-ready entry point: ``overlap scan --train-stream SOURCE --eval E``.

    Parameters
    ----------
    eval_columns : dict of field -> list of str, or list of str
        The eval samples (in memory).
    source : path, list of paths, or iterable of :class:`Chunk`
        A JSONL / CSV / TSV / Parquet / text file or a directory of shards
        (see :func:`overlap.stream_readers.read_chunks`); or chunks already read.
    fields : str or list of str, optional
        Fields compared (multi-field ratio: the minimum).  Default ``"text"``.
    fmt : str, optional
        Format of every shard, instead of the file extensions.
    tokenizer, ngram, seed
        As in :meth:`overlap.TokenSets.from_texts`, for both sides.
    chunk_rows : int, default 65536
        Corpus rows held in memory at a time.
    top_k, min_score, index, measure, n_threads
        As in :func:`stream_max_overlap`.
    keep_text : bool, default True
        Keep the text of every current match (memory: eval size x top_k).
    progress : bool or callable
        True: a bar over bytes read (tqdm on a terminal, plain lines in a log,
        with MB/s and the time left); a callable receives ``(bytes_done,
        bytes_total)``.
    prefetch : bool, optional
        While chunk ``i`` is searched, read chunk ``i + 2`` on one
        background thread and tokenize chunk ``i + 1`` on another (pyarrow's
        reading and the tokenizer and search kernels run without the GIL).
        Memory: three chunks (the one searched, the one tokenized, the one
        being read) instead of one.  The result is the same either way.
        Default: on with :data:`PREFETCH_MIN_THREADS` kernel threads or more
        (docs/streaming.md has the figures).
    engine : {"auto", "arrow", "python"}, optional
        How files are read (:func:`overlap.stream_readers.read_chunks`).

    Returns
    -------
    StreamScanResult
    """
    t0 = time.perf_counter()
    settle()  # the allocator's steady state from the first chunk (overlap._allocator)
    fields, ev = check_scan_args(eval_columns, fields, ngram=ngram, chunk_rows=chunk_rows,
                                 top_k=top_k, min_score=min_score, index=index,
                                 measure=measure)
    nt = n_threads

    def tok(texts):
        return TokenSets.from_texts(texts, tokenizer, ngram=ngram, n_threads=nt, seed=seed)

    queries = tuple(tok(ev[f]) for f in fields)
    merger = StreamMerger(queries, top_k=top_k, min_score=min_score, index=index,
                          measure=measure, n_threads=n_threads)
    nq, k = merger.score.shape
    match = {f: np.full((nq, k), None, dtype=object) for f in fields} if keep_text else {}
    if isinstance(source, (str, os.PathLike)) or (
            isinstance(source, Sequence) and not isinstance(source, (str, bytes))
            and all(isinstance(p, (str, os.PathLike)) for p in source)):
        total = source_size(source, fmt)
        chunks: Iterable[Chunk] = read_chunks(source, fields, fmt=fmt, chunk_rows=chunk_rows,
                                              engine=engine)
    else:
        total, chunks = 0, source

    def prepared(items: Iterable[Chunk]):  # the reading and tokenizing of every chunk
        for chunk in items:
            if not isinstance(chunk, Chunk):
                raise TypeError(f"source yielded a {type_name(chunk)}, expected a Chunk")
            refs = tuple(tok(chunk.columns[f]) for f in fields) if chunk.n_rows else ()
            yield chunk, refs

    bar = make_progress(progress, total, "scan_stream", "B")
    shards: list[list] = []
    nbytes = 0
    if prefetch is None:
        prefetch = effective_n_threads(nt) >= PREFETCH_MIN_THREADS
    # with prefetching, two threads ahead of the search: one reads chunk
    # i + 2 while the other tokenizes chunk i + 1 (reading a chunk is mostly
    # one thread's Python and pyarrow's parsing, tokenizing is the kernel's
    # threads: run in turn on one thread, they bounded the scan)
    reading = Prefetch(iter(chunks), name="overlap-read") if prefetch else None
    work = (Prefetch(prepared(reading), name="overlap-tokenize") if reading is not None
            else prepared(chunks))
    try:
        for chunk, refs in work:
            if not shards or shards[-1][0] != chunk.path:
                shards.append([chunk.path, chunk.first_row, 0])
            shards[-1][2] += chunk.n_rows
            if chunk.n_rows:
                before = merger.index.copy() if keep_text else None
                merger.add(refs, offset=chunk.first_row)
                if keep_text:
                    new = merger.index >= chunk.first_row  # older rows have lower numbers
                    if k > 1:  # top-k lists move older matches between slots
                        _realign_texts(match, before, merger.index, new)
                    rows = merger.index[new] - chunk.first_row
                    for f in fields:
                        match[f][new] = texts_at(chunk.columns[f], rows)
            del refs
            nbytes += chunk.nbytes
            bar.update(chunk.nbytes)
    finally:
        if reading is not None:
            work.close()
            reading.close()
        bar.close()
    res = merger.result()
    out_match = {}
    for f, arr in match.items():
        out_match[f] = arr[:, 0].tolist() if k == 1 else arr.tolist()
    return StreamScanResult(
        res.score, res.index, out_match, [tuple(s) for s in shards], merger.n_references,
        nbytes, time.perf_counter() - t0, dict(merger.chunks),
    )


def merge_scan_results(parts: Sequence[StreamScanResult]) -> StreamScanResult:
    """Lay the results of consecutive corpus parts (e.g. shards) end to end.

    ``parts[p]`` numbers its rows from 0; here they are shifted by the rows of
    the parts before it and merged exactly (ties to the lowest global row), so
    the result equals one :func:`scan_stream` over all the parts in order.
    """
    if not parts:
        raise ValueError("parts must hold at least one StreamScanResult")
    first = parts[0]
    k = 1 if first.score.ndim == 1 else first.score.shape[1]
    fields = list(first.match)
    score = np.reshape(first.score, (-1, k)).copy()
    index = np.reshape(first.index, (-1, k)).copy()
    texts = {f: np.reshape(np.array(first.match[f], dtype=object), (-1, k)) for f in fields}
    shards = list(first.shards)
    offset, nbytes, seconds = first.n_references, first.nbytes, first.seconds
    chunks = dict(first.chunks)
    for part in parts[1:]:
        ps = np.reshape(part.score, (-1, k))
        pi = np.reshape(part.index, (-1, k))
        pi = np.where(pi >= 0, pi + offset, -1)
        s = np.concatenate([score, ps], axis=1)
        i = np.concatenate([index, pi], axis=1)
        key = np.where(i < 0, np.iinfo(np.int64).max, i)
        order = np.lexsort((key, -s), axis=1)[:, :k]
        score, index = np.take_along_axis(s, order, 1), np.take_along_axis(i, order, 1)
        for f in fields:
            t = np.concatenate([texts[f], np.reshape(np.array(part.match[f], dtype=object),
                                                     (-1, k))], axis=1)
            texts[f] = np.take_along_axis(t, order, 1)
        shards += [(p, a + offset, n) for p, a, n in part.shards]
        offset += part.n_references
        nbytes += part.nbytes
        seconds = max(seconds, part.seconds)
        for key_, v in part.chunks.items():
            chunks[key_] = chunks.get(key_, 0) + v
    if k == 1:
        score, index = score[:, 0], index[:, 0]
        match = {f: texts[f][:, 0].tolist() for f in fields}
    else:
        match = {f: texts[f].tolist() for f in fields}
    return StreamScanResult(np.ascontiguousarray(score), np.ascontiguousarray(index), match,
                            shards, offset, nbytes, seconds, chunks)


def texts_at(col, rows: np.ndarray) -> list:
    """The str of ``rows`` of a chunk column (an Arrow array, or a sequence of str)."""
    if hasattr(col, "to_pylist") and hasattr(col, "take"):
        import pyarrow.compute as pc

        # an Arrow array of indices and pc.take, not a numpy array or the array's
        # take method: pyarrow would import pandas in the middle of a scan (the
        # method did before pyarrow 12)
        return pc.take(col, arrow_indices(np.ascontiguousarray(rows, dtype=np.int64))).to_pylist()
    return [col[r] for r in rows.tolist()]


def _realign_texts(match: dict, before: np.ndarray, after: np.ndarray, new: np.ndarray) -> None:
    """Move the kept texts of older matches to their new slots in each top-k row."""
    for q in np.flatnonzero((before != after).any(axis=1)):
        old = {int(j): s for s, j in enumerate(before[q]) if j >= 0}
        for f, arr in match.items():
            prev = arr[q].copy()
            for s, j in enumerate(after[q]):
                if not new[q, s]:
                    arr[q, s] = prev[old[int(j)]] if int(j) in old else None
