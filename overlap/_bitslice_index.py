"""Build the bit-sliced index of a reference collection (on first use) and run it.

The bit-sliced kernel (``overlap._kernels._bitslice``) keeps the frequent
tokens of every field as bitmaps over the references renumbered by size, and
the rare ones as postings; the postings kernel
(``overlap._kernels._postings_search``) keeps postings only.  Which one serves
a call is ``overlap._dispatch``'s choice.
"""

from __future__ import annotations

import threading

import numpy as np

from . import _index
from ._fields import Handover
from ._kernels import _bitslice, _collection, _vocab
from ._query_tokens import QueryTokens, RestrictedRows

#: A token gets a bitmap when its document frequency is at least this ...
MIN_DF = 32
#: ... or this, in the index of the bit-sliced threshold join (small reference
#: sets, see ``overlap._dispatch.JOIN_MAX_REFS``).  There a bitmap row is a few
#: words, cheaper to add than a posting of a few entries whose references all
#: become candidates: 1,000 Zipf rows (16 words a row) probed by 65,536 rows,
#: dice 0.5, one thread, took 0.54 us a probe at 2 against 1.44 at 32
#: (docs/algorithms.md).
JOIN_MIN_DF = 2
#: ... and at least n_refs / DF_PER_REFS (a bitmap row must replace a posting
#: list long enough to pay for its n_refs / 8 bytes).
DF_PER_REFS = 1024
#: Bitmap memory of one field is at most this many 64-bit words per stored
#: token (posting entry) of that field: linear in the tokens, like the postings.
WORDS_PER_TOKEN = 1
#: At most this many bitmap rows per field: a query's frequent count must fit
#: ``MAX_PLANES`` bit-planes.  Frequent tokens beyond it keep postings (the
#: rare-token path), as do all tokens once the memory budget is spent.
MAX_ROWS = (1 << _bitslice.MAX_PLANES) - 1
_INT32_MAX = np.iinfo(np.int32).max


def frequent_tokens(df: np.ndarray, n_refs: int, nnz: int, nw: int,
                    min_df: int = MIN_DF) -> np.ndarray:
    """Vocabulary ids that get a bitmap, most frequent first.

    A token qualifies when its document frequency is at least
    ``max(min_df, n_refs / DF_PER_REFS)``; the most frequent ones are taken while
    the bitmaps stay within ``WORDS_PER_TOKEN * nnz`` words, at most ``MAX_ROWS``.
    """
    if nw == 0:
        return np.zeros(0, dtype=np.int64)
    min_df = max(min_df, -(-n_refs // DF_PER_REFS))
    cand = np.flatnonzero(df >= min_df)
    cand = cand[np.argsort(-df[cand], kind="stable")]
    budget = max(1, (WORDS_PER_TOKEN * nnz) // nw)
    return cand[: min(budget, MAX_ROWS, (1 << _bitslice.MAX_PLANES) - 1)]


def build(fields: tuple | Handover, n_threads: int = 1,
          min_df: int | None = None) -> _bitslice.BitsliceIndex:
    """The bit-sliced index of reference ``fields`` (sets, not multisets).

    ``fields``: TokenSets, or ``_query_tokens.RestrictedRows`` (rows restricted
    to some tokens, with their whole sizes).

    ``min_df``: the smallest document frequency of a bitmap token (see
    :func:`frequent_tokens`); default :data:`MIN_DF`, read at the call (tests
    lower it to give small corpora bitmaps).  ``fields`` may be a
    :class:`~overlap._fields.Handover`: the fields' hashes, read only to
    number the tokens, then go (when the caller kept no reference) before
    the bitmaps are made (``overlap.search.max_overlap_handed``).

    Memory: ``n_rows * nw`` bitmap words (at most ``WORDS_PER_TOKEN`` per stored
    token), one int32 per rare posting entry, and a few int32/int64 per
    reference.  ``n_threads`` threads fill it; the result does not depend on it.
    """
    handed = isinstance(fields, Handover)
    if handed:
        fields = fields.take()
    if fields[0].multiset:
        raise ValueError("the bit-sliced index supports sets only")
    if min_df is None:
        min_df = MIN_DF
    n = len(fields[0])
    if n > _INT32_MAX:
        raise ValueError(f"references: at most {_INT32_MAX} rows are supported, got {n}")
    nf = len(fields)
    blk = _bitslice.BLOCK_WORDS
    nw = -(-(-(-n // 64)) // blk) * blk
    flat_sizes = _index.joined([ts.sizes for ts in fields], np.int64)  # field after field
    # renumber by size: field 0, then the others, then the original index
    # (stable counting sorts, one a field)
    order = _collection.size_order(flat_sizes, nf, n)
    rank = np.empty(n, dtype=np.int32)
    rank[order] = np.arange(n, dtype=np.int32)
    zs = np.minimum(flat_sizes.reshape(nf, n)[:, order], _INT32_MAX).astype(np.int32)
    wzmin = word_min_sizes(zs, nw)
    zs = zs.ravel()
    tables = vocabulary_tables(fields, n_threads)
    freqs = [frequent_tokens(df, n, ts.nnz, nw, min_df) for ts, (*_, df) in zip(fields, tables)]
    # what the rest reads of the fields: their hashes are not needed any more
    indptrs = [np.ascontiguousarray(ts.indptr, dtype=np.int64) for ts in fields]
    if handed:
        del fields
    # the query side's vocabulary first: the build's hash tables go before
    # the bitmaps are made
    vocab, voff = compact_tables(tables)
    # every field's bitmap rows in one array, each field filling its own part
    bits = np.empty(sum(fq.shape[0] for fq in freqs) * nw, dtype=np.uint64)
    bitmap_rows, rptrs, rrefs = [], [], []
    row_base = 0
    rbase = 0
    for f, indptr in enumerate(indptrs):
        nv, inverse = tables[f]
        tables[f] = None  # the inverse goes once its field is filled
        freq = freqs[f]
        bitmap_row = np.full(nv, -1, dtype=np.int64)
        bitmap_row[freq] = np.arange(freq.shape[0], dtype=np.int64)
        # bitmaps of the frequent tokens, renumbered postings of the rare ones
        _, rptr, rref = _bitslice.fill_field(
            indptr, inverse, order, bitmap_row,
            freq.shape[0], nw, n_threads,
            bits[row_base * nw:(row_base + freq.shape[0]) * nw])
        del inverse
        rrefs.append(rref)
        rptrs.append(rptr[:-1] + rbase)
        rbase += int(rptr[-1])
        bitmap_rows.append(np.where(bitmap_row >= 0, bitmap_row + row_base, -1))
        row_base += freq.shape[0]
    rptr = np.concatenate(rptrs + [np.array([rbase], dtype=np.int64)])
    return _bitslice.BitsliceIndex(
        nf, n, nw, order, rank, zs, wzmin, vocab, voff,
        _index.joined(bitmap_rows, np.int64),
        np.ascontiguousarray(rptr, dtype=np.int64),
        _index.joined(rrefs, np.int32),
        bits,
    )


def vocabulary_tables(fields: tuple, n_threads: int = 1) -> list:
    """``_index.vocabularies`` of the fields' hashes; restricted rows bring their
    own (``RestrictedRows.vocabulary``)."""
    if isinstance(fields[0], RestrictedRows):
        return [ts.vocabulary() for ts in fields]
    return _index.vocabularies([ts.hashes for ts in fields], n_threads)


def compact_tables(tables: list) -> tuple[np.ndarray, np.ndarray]:
    """``_vocab.compact_vocabulary`` of the fields' :func:`_index.vocabularies`
    (ids numbered one field after the other); every item of ``tables`` is
    replaced by ``(nv, inverse)``, so that the build's hash tables go here."""
    tkeys, tids, toff = [], [], [0]
    voff = 0
    for f, (vocab, inverse, table_keys, table_ids, _) in enumerate(tables):
        tkeys.append(table_keys)
        tids.append(np.where(table_ids >= 0, table_ids + voff, -1) if voff else table_ids)
        toff.append(toff[-1] + table_keys.shape[0])
        voff += vocab.shape[0]
        tables[f] = (vocab.shape[0], inverse)
    return _vocab.compact_vocabulary(_index.joined(tkeys, np.uint64),
                                     _index.joined(tids, np.int64),
                                     np.asarray(toff, dtype=np.int64))


def word_min_sizes(zs: np.ndarray, nw: int) -> np.ndarray:
    """Every 64-reference word's smallest size, per field: ``(F * nw,)`` int32.

    ``zs`` is ``(F, n)`` (the renumbered references' sizes); the words past
    the last reference get ``2**31 - 1``, like padding references.
    """
    nf, n = zs.shape
    out = np.full((nf, nw), _INT32_MAX, dtype=np.int32)
    full = n // 64
    if full:
        out[:, :full] = zs[:, :full * 64].reshape(nf, full, 64).min(axis=2)
    if n % 64:
        out[:, full] = zs[:, full * 64:].min(axis=1)
    return out.ravel()


class LazyBitslice:
    """The bit-sliced side of an OverlapIndex, built on first use and then kept.

    ``ref_fields`` may be a :class:`~overlap._fields.Handover` when only its
    top-k of other queries is asked (``overlap.search.max_overlap_handed``):
    :func:`build` then lets the fields go before the bitmaps are made.
    """

    def __init__(self, ref_fields: tuple | Handover, n_threads: int = 1,
                 only: QueryTokens | None = None) -> None:
        self._fields = ref_fields
        self._n_threads = n_threads
        # the index holds only these queries' tokens; it then answers their
        # top-k alone (see overlap._query_tokens)
        self._only = only
        self._index: _bitslice.BitsliceIndex | None = None
        self._join_index: _bitslice.BitsliceIndex | None = None  # JOIN_MIN_DF
        self._queries: _collection.Collection | None = None  # the references as queries
        self._lock = threading.Lock()

    @property
    def index(self) -> _bitslice.BitsliceIndex:
        """The index, built once (concurrent first callers wait for one build)."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    fields = self._fields
                    if self._only is not None:
                        fields = self._only.restrict(fields, self._n_threads)
                    self._index = build(fields, self._n_threads)
        return self._index

    @property
    def join_index(self) -> _bitslice.BitsliceIndex:
        """The threshold join's index (bitmaps from :data:`JOIN_MIN_DF`), built once."""
        self._check_only(None, "join")
        if self._join_index is None:
            with self._lock:
                if self._join_index is None:
                    self._join_index = build(self._fields, self._n_threads, JOIN_MIN_DF)
        return self._join_index

    def _check_only(self, qfields: tuple | None, what: str) -> None:
        """RuntimeError unless an index on some queries' tokens is asked their top-k."""
        if self._only is not None and (what != "top_k" or not self._only.covers(qfields)):
            raise RuntimeError(f"LazyBitslice.{what}: this index holds only its queries' "
                               "tokens and answers only their top-k")

    def _collection_of(self, qfields: tuple | None):
        """The kernels' collection of ``qfields``; of the references themselves
        (made once) for ``None``."""
        if qfields is None:
            if self._queries is None:
                self._queries = _index.collection(self._fields)
            return self._queries
        return _index.collection(qfields)

    def join_runner(self, qfields: tuple | None, threshold: float, max_row: int,
                    parts: list, measure: int = 0):
        """``run(start, stop, threads)`` appending the unsorted pairs of
        queries[start:stop] to ``parts``; ``qfields=None`` is the self-join
        (pairs ``i < j`` of the references)."""
        bx = self.join_index
        queries = self._collection_of(qfields)

        def run(start: int, stop: int, threads: int) -> None:
            parts.append(bx.join(queries, start, stop, threshold, qfields is None, max_row,
                                 threads, measure))

        return run

    def top_k_runner(self, qfields: tuple | None, top_k: int, min_score: float,
                     exclude: bool, max_row: int, score: np.ndarray, index: np.ndarray,
                     measure: int = 0, floors: np.ndarray | None = None):
        """``run(start, stop, threads)`` filling score/index from the bit-sliced index.

        ``qfields=None`` searches the references against the rest of themselves.
        ``floors``: a score floor per query (``BitsliceIndex.top_k``).
        """
        self._check_only(qfields, "top_k")
        bx = self.index
        queries = self._collection_of(qfields)

        def run(start: int, stop: int, threads: int) -> None:
            bx.top_k(queries, start, stop, top_k, min_score, exclude, max_row, threads,
                     score, index, measure, floors)

        return run
