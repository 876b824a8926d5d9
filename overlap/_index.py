"""Flatten TokenSets fields for the kernels and build the inverted index."""

from __future__ import annotations

import numpy as np

from . import _search

_EMPTY_U32 = np.zeros(0, dtype=np.uint32)
_INT32_MAX = np.iinfo(np.int32).max


def collection(fields: tuple, n_threads: int) -> _search.Collection:
    """Concatenate aligned fields into one flat Collection (with fingerprints)."""
    n = len(fields[0])
    nf = len(fields)
    multiset = fields[0].multiset
    if nf == 1:
        ip = fields[0].indptr
        h = fields[0].hashes
        c = fields[0].counts if multiset else _EMPTY_U32
        sz = fields[0].sizes
    else:
        offsets = np.cumsum([0] + [ts.nnz for ts in fields[:-1]])
        ip = np.concatenate([ts.indptr + off for ts, off in zip(fields, offsets)])
        h = np.concatenate([ts.hashes for ts in fields])
        c = np.concatenate([ts.counts for ts in fields]) if multiset else _EMPTY_U32
        sz = np.concatenate([ts.sizes for ts in fields])
    fp = _search.row_fingerprints(ip, h, c, nf, n, multiset, n_threads)
    return _search.Collection(ip, h, c, sz, fp, nf, n, multiset)


def reference_index(
    fields: tuple, coll: _search.Collection, n_threads: int = 1
) -> _search.ReferenceIndex:
    """Inverted index of every field, laid out for prefix and positional filtering.

    Tokens are ranked by document frequency (rarest first, ties by hash); the
    query kernel visits its tokens in the same order.  Every posting entry of
    reference ``r`` for token ``t`` stores ``|r|`` and ``e``: the mass of the
    tokens of ``r`` ranked at or after ``t`` (``t`` included).  Entries of one
    token are sorted by reference, so a query's scan walks the per-reference
    state in address order.

    Memory is linear in the number of stored tokens.
    """
    n = len(fields[0])
    if n > _INT32_MAX:
        raise ValueError(f"references: at most {_INT32_MAX} rows are supported, got {n}")
    multiset = fields[0].multiset
    tkeys, tids, ranks, maxes = [], [], [], []
    pptrs, prefs, psizes, pes, pcnts = [], [], [], [], []
    voff = [0]
    toff = [0]
    base = 0
    for ts in fields:
        vocab, inverse, table_keys, table_ids = _search.vocab_table(ts.hashes)
        df = np.bincount(inverse, minlength=vocab.shape[0])
        rank = np.empty(vocab.shape[0], dtype=np.int64)
        rank[np.lexsort((vocab, df))] = np.arange(vocab.shape[0])
        ptr = np.zeros(vocab.shape[0] + 1, dtype=np.int64)
        np.cumsum(df, out=ptr[1:])
        counts = ts.counts if multiset else _EMPTY_U32
        row_max = int(np.diff(ts.indptr).max()) if n else 0
        pref, psize, psuf, pcnt = _search.build_postings(
            ts.indptr, inverse.astype(np.int64, copy=False), rank, counts, multiset,
            ts.sizes, ptr, row_max, n_threads,
        )
        prefs.append(pref)
        psizes.append(psize)
        pes.append(psuf)
        maxes.append(
            np.maximum.reduceat(psuf, ptr[:-1]) if psuf.shape[0] else np.zeros(0, np.int32)
        )
        if multiset:
            pcnts.append(pcnt)
        pptrs.append(ptr[1:] + base)
        base += int(ptr[-1])
        tkeys.append(table_keys)
        tids.append(np.where(table_ids >= 0, table_ids + voff[-1], -1))
        toff.append(toff[-1] + table_keys.shape[0])
        ranks.append(rank)
        voff.append(voff[-1] + vocab.shape[0])
    pptr = np.concatenate([np.zeros(1, dtype=np.int64)] + [p.astype(np.int64) for p in pptrs])
    fp = np.asarray(coll_fingerprints(coll))
    fpi = np.argsort(fp, kind="stable").astype(np.int64)
    return _search.ReferenceIndex(
        coll,
        np.ascontiguousarray(np.concatenate(tkeys), dtype=np.uint64),
        np.ascontiguousarray(np.concatenate(tids), dtype=np.int64),
        np.asarray(toff, dtype=np.int64),
        np.ascontiguousarray(pptr),
        np.ascontiguousarray(np.concatenate(prefs), dtype=np.int32),
        np.ascontiguousarray(np.concatenate(psizes), dtype=np.int32),
        np.ascontiguousarray(np.concatenate(pes), dtype=np.int32),
        np.ascontiguousarray(np.concatenate(pcnts), dtype=np.uint32) if multiset else _EMPTY_U32,
        np.ascontiguousarray(fp[fpi]),
        fpi,
        np.ascontiguousarray(np.concatenate(ranks), dtype=np.int64),
        np.ascontiguousarray(np.concatenate(maxes), dtype=np.int32),
        coll.records(n_threads),
        n_threads,
    )


def coll_fingerprints(coll: _search.Collection) -> np.ndarray:
    return coll.fingerprints


def max_row(fields: tuple) -> int:
    return int(max((int(np.diff(ts.indptr).max()) if len(ts) else 0) for ts in fields))


def max_mass(fields: tuple) -> int:
    """Largest row size (sum of counts for bags) over all fields."""
    return int(max((int(ts.sizes.max()) if len(ts) else 0) for ts in fields))
