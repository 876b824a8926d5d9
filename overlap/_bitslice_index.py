"""Build the bit-sliced index and choose, per call, between it and the postings kernel.

The bit-sliced kernel (``overlap._bitslice``) keeps the frequent tokens of every
field as bitmaps over the references renumbered by size, and the rare ones as
postings; ``overlap._search`` keeps postings only.  Both are exact and return
the same results bit for bit; :func:`choose_path` picks the faster one from a
cost estimate (see docs/algorithms.md, "Choosing the path").

Tests force a path with :data:`FORCE_PATH` (``None``, ``"bitslice"`` or
``"postings"``).
"""

from __future__ import annotations

import os
import threading

import numpy as np

from . import _index
from ._kernels import _bitslice, _collection

#: ``None`` chooses by cost; ``"bitslice"`` or ``"postings"`` forces a path
#: wherever the bit-sliced kernel supports the call (tests run both).  The
#: environment variable ``OVERLAP_SEARCH_PATH`` sets it for a whole process
#: (e.g. a CLI test that needs a scan slow enough to interrupt).
FORCE_PATH: str | None = os.environ.get("OVERLAP_SEARCH_PATH") or None

#: A token gets a bitmap when its document frequency is at least this ...
MIN_DF = 32
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
#: The postings kernel runs alone below this many references (two blocks).
MIN_REFS = 1024
#: ... and from this ``min_score`` up, where its prefix filter admits so few
#: postings that it is as fast (W, two fields: 0.029 vs 0.032 s at 0.9).
HIGH_MIN_SCORE = 0.9

_INT32_MAX = np.iinfo(np.int32).max


def flat_fields(fields: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, hashes, sizes) of every field concatenated, as the kernel reads them."""
    if len(fields) == 1:
        ts = fields[0]
        return ts.indptr, ts.hashes, ts.sizes
    offsets = np.cumsum([0] + [ts.nnz for ts in fields[:-1]])
    ip = np.concatenate([ts.indptr + off for ts, off in zip(fields, offsets)])
    h = np.concatenate([ts.hashes for ts in fields])
    sz = np.concatenate([ts.sizes for ts in fields])
    return (np.ascontiguousarray(ip, dtype=np.int64), np.ascontiguousarray(h, dtype=np.uint64),
            np.ascontiguousarray(sz, dtype=np.int64))


def frequent_tokens(df: np.ndarray, n_refs: int, nnz: int, nw: int) -> np.ndarray:
    """Vocabulary ids that get a bitmap, most frequent first.

    A token qualifies when its document frequency is at least
    ``max(MIN_DF, n_refs / DF_PER_REFS)``; the most frequent ones are taken while
    the bitmaps stay within ``WORDS_PER_TOKEN * nnz`` words, at most ``MAX_ROWS``.
    """
    if nw == 0:
        return np.zeros(0, dtype=np.int64)
    min_df = max(MIN_DF, -(-n_refs // DF_PER_REFS))
    cand = np.flatnonzero(df >= min_df)
    cand = cand[np.argsort(-df[cand], kind="stable")]
    budget = max(1, (WORDS_PER_TOKEN * nnz) // nw)
    return cand[: min(budget, MAX_ROWS, (1 << _bitslice.MAX_PLANES) - 1)]


def build(fields: tuple, n_threads: int = 1) -> _bitslice.BitsliceIndex:
    """The bit-sliced index of reference ``fields`` (sets, not multisets).

    Memory: ``n_rows * nw`` bitmap words (at most ``WORDS_PER_TOKEN`` per stored
    token), one int32 per rare posting entry, and a few int32/int64 per
    reference.  ``n_threads`` threads fill it; the result does not depend on it.
    """
    if fields[0].multiset:
        raise ValueError("the bit-sliced index supports sets only")
    n = len(fields[0])
    if n > _INT32_MAX:
        raise ValueError(f"references: at most {_INT32_MAX} rows are supported, got {n}")
    nf = len(fields)
    blk = _bitslice.BLOCK_WORDS
    nw = -(-(-(-n // 64)) // blk) * blk
    flat_sizes = joined([ts.sizes for ts in fields], np.int64)  # field after field
    # renumber by size: field 0, then the others, then the original index
    # (stable counting sorts, one a field)
    order = _collection.size_order(flat_sizes, nf, n)
    rank = np.empty(n, dtype=np.int32)
    rank[order] = np.arange(n, dtype=np.int32)
    zs = np.minimum(flat_sizes.reshape(nf, n)[:, order], _INT32_MAX).astype(np.int32)
    wzmin = word_min_sizes(zs, nw)
    zs = zs.ravel()
    tables = _index.vocabularies([ts.hashes for ts in fields], n_threads)
    freqs = [frequent_tokens(df, n, ts.nnz, nw) for ts, (*_, df) in zip(fields, tables)]
    # every field's bitmap rows in one array, each field filling its own part
    bits = np.empty(sum(fq.shape[0] for fq in freqs) * nw, dtype=np.uint64)
    tkeys, tids, toff, drows, rptrs, rrefs = [], [], [0], [], [], []
    voff = 0
    row_base = 0
    rbase = 0
    for f, ts in enumerate(fields):
        vocab, inverse, table_keys, table_ids, df = tables[f]
        tables[f] = None  # the inverse goes once its field is filled
        freq = freqs[f]
        nv = vocab.shape[0]
        drow = np.full(nv, -1, dtype=np.int64)
        drow[freq] = np.arange(freq.shape[0], dtype=np.int64)
        # bitmaps of the frequent tokens, renumbered postings of the rare ones
        _, rptr, rref = _bitslice.fill_field(
            np.ascontiguousarray(ts.indptr, dtype=np.int64), inverse, order, drow,
            freq.shape[0], nw, n_threads,
            bits[row_base * nw:(row_base + freq.shape[0]) * nw])
        del inverse
        rrefs.append(rref)
        rptrs.append(rptr[:-1] + rbase)
        rbase += int(rptr[-1])
        drows.append(np.where(drow >= 0, drow + row_base, -1))
        row_base += freq.shape[0]
        tkeys.append(table_keys)
        tids.append(np.where(table_ids >= 0, table_ids + voff, -1))
        toff.append(toff[-1] + table_keys.shape[0])
        voff += nv
    rptr = np.concatenate(rptrs + [np.array([rbase], dtype=np.int64)])
    return _bitslice.BitsliceIndex(
        nf, n, nw, order, rank, zs, wzmin,
        joined(tkeys, np.uint64),
        joined(tids, np.int64),
        np.asarray(toff, dtype=np.int64),
        joined(drows, np.int64),
        np.ascontiguousarray(rptr, dtype=np.int64),
        joined(rrefs, np.int32),
        bits,
    )


def joined(parts: list, dtype) -> np.ndarray:
    """The parts (one a field) end to end, contiguous; one part is not copied."""
    if len(parts) == 1:
        return np.ascontiguousarray(parts[0], dtype=dtype)
    return np.ascontiguousarray(np.concatenate(parts), dtype=dtype)


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


def supported(fields: tuple) -> bool:
    """Whether the bit-sliced kernel can run on these references (sets only)."""
    return not fields[0].multiset


def choose_path(ref_fields: tuple, n_queries: int, min_score: float = 0.0) -> str:
    """``"bitslice"`` or ``"postings"`` for one max_overlap call.

    Honours :data:`FORCE_PATH` where the bit-sliced kernel supports the input.
    (The caller also falls back to postings when no token got a bitmap.)
    """
    if not supported(ref_fields):
        return "postings"
    if FORCE_PATH is not None:
        if FORCE_PATH not in ("bitslice", "postings"):
            raise ValueError(f"FORCE_PATH must be None, 'bitslice' or 'postings', got {FORCE_PATH!r}")
        return FORCE_PATH
    n = len(ref_fields[0])
    if n < MIN_REFS or n_queries == 0 or min_score >= HIGH_MIN_SCORE:
        return "postings"
    return "bitslice"


class LazyBitslice:
    """The bit-sliced side of an OverlapIndex, built on first use and then kept."""

    def __init__(self, ref_fields: tuple, n_threads: int = 1) -> None:
        self._fields = ref_fields
        self._n_threads = n_threads
        self._index: _bitslice.BitsliceIndex | None = None
        self._flat: tuple | None = None
        self._lock = threading.Lock()

    @property
    def index(self) -> _bitslice.BitsliceIndex:
        """The index, built once (concurrent first callers wait for one build)."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = build(self._fields, self._n_threads)
        return self._index

    def top_k_runner(self, qfields: tuple | None, n: int, top_k: int, min_score: float,
                     exclude: bool, max_row: int, score: np.ndarray, index: np.ndarray):
        """``run(start, stop, threads)`` filling score/index, or None for the postings path.

        ``qfields=None`` searches the references against the rest of themselves.
        """
        if choose_path(self._fields, n, min_score) != "bitslice":
            return None
        bx = self.index
        if bx.n_rows == 0 and FORCE_PATH is None:
            return None  # no frequent token: the postings kernel does the same work
        if qfields is None:
            if self._flat is None:
                self._flat = flat_fields(self._fields)
            ip, h, sz = self._flat
        else:
            ip, h, sz = flat_fields(qfields)
        nf = len(self._fields)

        def run(start: int, stop: int, threads: int) -> None:
            bx.top_k(nf, n, ip, h, sz, start, stop, top_k, min_score, exclude, max_row,
                     threads, score, index)

        return run
