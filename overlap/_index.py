"""Flatten TokenSets fields for the kernels and build the inverted index."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._allocator import trim
from ._kernels import _collection, _postings, _postings_search, _vocab
from ._order import count_key_order

#: Stored tokens (all fields) from which the fields' vocabularies are built side
#: by side on several threads.
PARALLEL_VOCAB = 1 << 16

_EMPTY_U32 = np.zeros(0, dtype=np.uint32)
_INT32_MAX = np.iinfo(np.int32).max


#: Stored tokens from which the postings build first hands the heap's free
#: pages back (``overlap._allocator.trim``): ``overlap dedup`` of a 101 MB
#: file peaked 34 MB higher in about half of the runs without it, when a
#: postings column landed past the holes the vocabulary's tables left.
TRIM_MIN_TOKENS = 1 << 20

#: Reference sets of at least this many rows are renumbered by size inside the
#: postings index (see renumbers_by_size); smaller ones keep the caller's order.
RENUMBER_MIN_ROWS = 1 << 17


def renumbers_by_size(n_rows: int) -> bool:
    """Whether an index over ``n_rows`` references renumbers them by size.

    Rows of one size then sit side by side in every array a search reads
    (postings, records, the rows themselves), and the self-join's queries
    come in size order too.  The results do not change (the kernels report
    the caller's ids, see ``_collection.Collection``); the renumbered rows are a
    copy of the tokens, which pays on large sets only.  On the generated 1M
    bench set (``bench/test_bench_scale.py``) the self-join at 0.8, index
    build included, took 2.74-3.90 s renumbered against 3.40-4.97 as stored
    (two threads, five alternating runs each); on sets of tens of thousands
    of rows the copy costs what the join saves.
    """
    return n_rows >= RENUMBER_MIN_ROWS


def collection(fields: tuple, by_size: bool = False, n_threads: int = 1) -> _collection.Collection:
    """Concatenate aligned fields into one flat Collection (fingerprints on first use).

    ``by_size``: the rows renumbered by their sizes (``_collection.size_order``),
    copied in that order (``_collection.gather_field``, on ``n_threads``), with
    their own ids kept as the Collection's ``ids``.
    """
    n = len(fields[0])
    nf = len(fields)
    multiset = fields[0].multiset
    if by_size:
        order = _collection.size_order(np.concatenate([ts.sizes for ts in fields]), nf, n)
        total = sum(ts.nnz for ts in fields)
        h = np.empty(total, dtype=np.uint64)
        c = np.empty(total, dtype=np.uint32) if multiset else _EMPTY_U32
        ips, pos = [], 0
        for ts in fields:
            ips.append(_collection.gather_field(ts.indptr, ts.hashes,
                                            ts.counts if multiset else _EMPTY_U32, order, h, c,
                                            pos, n_threads))
            pos += ts.nnz
        sz = np.concatenate([ts.sizes[order] for ts in fields])
        return _collection.Collection(np.concatenate(ips), h, c, sz, nf, n, multiset, ids=order)
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
    return _collection.Collection(ip, h, c, sz, nf, n, multiset)


def reference_index(
    fields: tuple, coll: _collection.Collection, n_threads: int = 1
) -> _postings_search.ReferenceIndex:
    """Inverted index of every field, laid out for prefix and positional filtering.

    Tokens are ranked by document frequency (rarest first, ties by hash); the
    query kernel visits its tokens in the same order.  Every posting entry of
    reference ``r`` for token ``t`` stores ``|r|`` and ``e``: the mass of the
    tokens of ``r`` ranked at or after ``t`` (``t`` included).  Entries of one
    token are sorted by size, then ``e`` descending, then reference (see
    ``_postings.build_postings``), so a query reads a size range and stops early
    inside each size.

    Memory is linear in the number of stored tokens.
    """
    return postings_index(coll, max_row(fields) if len(fields[0]) else 0, fields[0].multiset,
                          n_threads)


def postings_index(coll: _collection.Collection, longest: int, multiset: bool,
                   n_threads: int = 1, signatures: bool = True, self_only: bool = False
                   ) -> _postings_search.ReferenceIndex:
    """:func:`reference_index` from the rows as ``coll`` stores them: ``longest``
    is their longest row (tokens, one field), ``multiset`` whether they are bags.

    ``signatures=False``: no signature column (``ReferenceIndex``), 8 bytes a
    stored token less; the same results, found more slowly.

    ``self_only``: an index that is searched only with its own rows, each
    against the others (the self-join, or each row's nearest other row).  It
    leaves out every token that only one row holds (in that field): such a
    token is shared with no other row, so no pair, score or bound changes.
    These tokens rank before all others in the scan order, so no stored
    suffix mass counted them either.  Most of a vocabulary is such tokens
    (an id, a rare word, a typo), and every vocabulary id costs the index a
    hash-table slot pair and a token record (:func:`only_shared`).
    """
    n = coll.n_rows
    if n > _INT32_MAX:
        raise ValueError(f"references: at most {_INT32_MAX} rows are supported, got {n}")
    total = sum(h.shape[0] for h in stored_hashes(coll))
    # every field's vocabulary ids, numbered one field after the other, over
    # the tokens as coll stores them (renumbered or not)
    inverse = np.empty(total, dtype=np.int32)
    # the vocabulary tables hold views of ``inverse``: they go with
    # _token_tables' frame; the hash tables once compacted (the query side's,
    # at most half full), before the postings are made; ``inverse`` right
    # after the postings, before the index makes its own columns
    tables = vocabularies(stored_hashes(coll), n_threads, inverse)
    if self_only:
        tables = [only_shared(*t) for t in tables]
    all_keys, all_ids, toff, pptr, rank = _token_tables(tables)
    del tables
    vocab, voff = _vocab.compact_vocabulary(all_keys, all_ids, toff)
    del all_keys, all_ids
    if total >= TRIM_MIN_TOKENS:
        # the hash tables just freed (tens of MB, below glibc's mmap
        # threshold) leave holes in the heap that the postings' columns may
        # not fit: their pages go back first (overlap._allocator.trim)
        trim()
    entries, psuf, pcnt, maxe = _postings.build_postings(
        coll, inverse, rank, pptr, longest if n else 0, n_threads
    )
    del inverse
    return _postings_search.ReferenceIndex(
        coll,
        vocab,
        voff,
        pptr,
        entries,
        psuf,
        pcnt if multiset else _EMPTY_U32,
        rank,
        maxe,
        coll.records(n_threads),
        n_threads,
        signatures=signatures,
    )


def _token_tables(tables: list) -> tuple:
    """``(tkeys, tids, toff, pptr, rank)`` of :func:`reference_index` from the
    fields' :func:`vocabularies` (whose inverse ids are shifted in place, so
    that the fields' ids follow one another).

    ``tkeys``/``tids``: every field's hash table, concatenated (``toff``: each
    field's first slot); ``pptr``: the posting boundaries (by document
    frequency); ``rank``: every id's place in its field's scan order.
    """
    tkeys, tids, ranks, dfs = [], [], [], []
    toff = [0]
    nv_total = 0
    for vocab, inv, table_keys, table_ids, df in tables:
        nv = vocab.shape[0]
        if nv_total + nv > _INT32_MAX:  # the ids are int32
            raise ValueError(f"references: at most {_INT32_MAX} distinct tokens are "
                             f"supported over all fields, got {nv_total + nv} or more")
        if nv_total:
            shift_ids(inv, nv_total)  # the field's ids follow the previous fields'
            table_ids = np.where(table_ids >= 0, table_ids + nv_total, -1)
        rank = np.empty(nv, dtype=np.int64)
        rank[count_key_order(df, vocab)] = np.arange(nv)
        ranks.append(rank)
        dfs.append(df)
        tkeys.append(table_keys)
        tids.append(table_ids)  # the first field's as they are (-1: an empty slot)
        toff.append(toff[-1] + table_keys.shape[0])
        nv_total += nv
    pptr = np.zeros(nv_total + 1, dtype=np.int64)
    if nv_total:
        np.cumsum(joined(dfs, np.int64), out=pptr[1:])
    # one field's tables are not copied: a copy of a hash table (tens of MB)
    # would leave its freed pages resident next to the postings built next
    return (joined(tkeys, np.uint64), joined(tids, np.int64),
            np.asarray(toff, dtype=np.int64), pptr, joined(ranks, np.int64))


#: Stored tokens renumbered per numpy call by :func:`shift_ids` and
#: :func:`only_shared` (bounds their temporaries).
_ID_BLOCK = 1 << 20


def shift_ids(inv: np.ndarray, by: int) -> None:
    """Add ``by`` to the ids of ``inv`` in place, leaving out -1 (a token
    the index leaves out)."""
    for a in range(0, inv.shape[0], _ID_BLOCK):
        part = inv[a:a + _ID_BLOCK]
        np.add(part, by, out=part, where=part >= 0)


def only_shared(keys: np.ndarray, inv: np.ndarray, table_keys: np.ndarray,
                table_ids: np.ndarray, df: np.ndarray) -> tuple:
    """One field's ``_vocab.vocab_table`` without the tokens one row holds.

    The shared tokens (document frequency of at least 2) keep their order
    and are numbered from 0; ``inv`` (the stored tokens' ids) is renumbered
    in place, -1 for a token left out, and the hash table's slots of those
    tokens become empty (id -1).  Returns the same five items.
    """
    keep = df >= 2
    if keep.all():
        return keys, inv, table_keys, table_ids, df
    new_id = np.full(keys.shape[0] + 1, -1, dtype=np.int32)  # [-1] stays -1
    new_id[:-1][keep] = np.arange(int(np.count_nonzero(keep)), dtype=np.int32)
    for a in range(0, inv.shape[0], _ID_BLOCK):
        part = inv[a:a + _ID_BLOCK]
        part[:] = new_id[part]
    table_ids = new_id[table_ids].astype(np.int64)
    return keys[keep], inv, table_keys, table_ids, df[keep]


def joined(parts: list, dtype) -> np.ndarray:
    """The parts (one a field) end to end, contiguous; one part is not copied."""
    if len(parts) == 1:
        return np.ascontiguousarray(parts[0], dtype=dtype)
    return np.ascontiguousarray(np.concatenate(parts), dtype=dtype)


def max_row(fields: tuple) -> int:
    return int(max((int(np.diff(ts.indptr).max()) if len(ts) else 0) for ts in fields))


def max_mass(fields: tuple) -> int:
    """Largest row size (sum of counts for bags) over all fields."""
    return int(max((int(ts.sizes.max()) if len(ts) else 0) for ts in fields))


def stored_hashes(coll: _collection.Collection) -> list:
    """Every field's hashes as ``coll`` stores them (its rows' order), one array a field."""
    ip, h, _, _ = coll.arrays
    n = coll.n_rows
    return [h[ip[f * (n + 1)]:ip[f * (n + 1) + n]] for f in range(coll.n_fields)]


def vocabularies(hashes: list, n_threads: int = 1, out: np.ndarray | None = None) -> list:
    """``_vocab.vocab_table`` of every field's hashes (ids from 0 in each field).

    ``hashes``: one uint64 array a field (``ts.hashes``, or ``stored_hashes``
    of a Collection).  Each item is ``(keys, inverse, tkeys, tids, df)``.
    With ``out`` (int32, as long as all fields' tokens together) field
    ``f``'s ids are written into
    its slice of ``out``, fields one after the other.  Several fields are
    built side by side, one field's tokens in chunks on the threads left
    (the table is built without the GIL); the result does not depend on
    ``n_threads``.
    """
    slices, pos = [], 0
    for h in hashes:
        slices.append(None if out is None else out[pos:pos + h.shape[0]])
        pos += h.shape[0]

    side = min(len(hashes), n_threads) if pos >= PARALLEL_VOCAB else 1
    each = max(1, n_threads // side)

    def one(f: int):
        return _vocab.vocab_table(hashes[f], slices[f], each)

    if side > 1:
        with ThreadPoolExecutor(side) as pool:
            return list(pool.map(one, range(len(hashes))))
    return [one(f) for f in range(len(hashes))]
