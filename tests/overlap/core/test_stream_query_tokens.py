"""The stream's chunk index on the queries' tokens only (``overlap._query_tokens``).

A chunk's bit-sliced index holds only the tokens some query holds, each row
keeping its whole size: the streamed search must still equal the definition
(and ``overlap.max_overlap`` on all rows at once) for every measure, top_k and
min_score, with rows that hold no query token, rows of foreign tokens only,
empty rows, duplicates and ties.  The bit-sliced path is forced here (the
cost model leaves small chunks to the postings kernel), with bitmaps from a
document frequency of 1, 2 or the default.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import overlap
from overlap import TokenSets, _bitslice_index, _dispatch
from overlap._query_tokens import QueryTokens, RestrictedRows
from overlap._validation import MEASURES
from overlap.search import build_index
from overlap.stream import StreamMerger, stream_max_overlap
from reference import overlap as ref
from reference.helpers import as_arrays, build, chunked, collections, make_corpus, ref_units

#: ids no query holds (the queries draw from 0..300)
FOREIGN = st.lists(st.integers(1000, 1012), max_size=6)


@contextlib.contextmanager
def bitslice_chunks(min_df: int):
    """Every chunk searched by the bit-sliced kernel, bitmaps from ``min_df``."""
    saved = _dispatch.FORCE_PATH, _bitslice_index.MIN_DF
    _dispatch.FORCE_PATH, _bitslice_index.MIN_DF = "bitslice", min_df
    try:
        yield
    finally:
        _dispatch.FORCE_PATH, _bitslice_index.MIN_DF = saved


@contextlib.contextmanager
def built_indexes():
    """The fields every bit-sliced index of the block was built from."""
    seen: list = []
    real = _bitslice_index.build

    def spy(fields, *args, **kw):
        seen.append(fields)
        return real(fields, *args, **kw)

    _bitslice_index.build = spy
    try:
        yield seen
    finally:
        _bitslice_index.build = real


@st.composite
def with_foreign_tokens(draw, fields):
    """``fields`` with foreign ids added to some rows, and some rows foreign only."""
    out = []
    for col in fields:
        new = []
        for row in col:
            kind = draw(st.sampled_from(["same", "plus", "only"]))
            new.append(row if kind == "same" else
                       row + draw(FOREIGN) if kind == "plus" else draw(FOREIGN))
        out.append(new)
    return out


@pytest.mark.parametrize("measure", MEASURES)
@settings(max_examples=40, deadline=None)
@given(data=st.data(), top_k=st.integers(1, 3), min_df=st.sampled_from([1, 2, 32]),
       min_score=st.sampled_from([0.0, 0.25, 0.5, 2 / 3, 0.8, 1.0]),
       sizes=st.lists(st.integers(0, 9), min_size=1, max_size=4).filter(any),
       n_threads=st.sampled_from([1, 2]))
def test_streamed_search_equals_the_definition(measure, data, top_k, min_df, min_score,
                                               sizes, n_threads):
    qf = data.draw(collections())
    rf = data.draw(with_foreign_tokens(data.draw(collections(n_fields=len(qf)))))
    q, r = build(qf, False), build(rf, False)
    with bitslice_chunks(min_df), built_indexes() as seen:
        got = stream_max_overlap(q, chunked(r, sizes), top_k=top_k, min_score=min_score,
                                 index="chunk", measure=measure, n_threads=n_threads)
    if len(qf[0]) and len(rf[0]):
        assert seen and all(isinstance(f, RestrictedRows) for fields in seen for f in fields)
    score, idx = as_arrays(ref.max_overlap(ref_units(qf, False), ref_units(rf, False), top_k,
                                           min_score, measure), top_k)
    np.testing.assert_array_equal(np.reshape(got.score, (-1, top_k)), score)
    np.testing.assert_array_equal(np.reshape(got.index, (-1, top_k)), idx)
    local = overlap.max_overlap(q, r, top_k=top_k, min_score=min_score, measure=measure)
    np.testing.assert_array_equal(got.score, local.score)
    np.testing.assert_array_equal(got.index, local.index)


def test_a_chunk_index_holds_the_query_tokens_with_the_whole_sizes():
    q = (TokenSets.from_ids([[1, 2, 3], [4], []]), TokenSets.from_ids([[7], [8, 9], [7]]))
    r = (TokenSets.from_ids([[1, 5, 6], [], [50, 51], [4, 2, 2]]),
         TokenSets.from_ids([[7, 60], [9], [61], [62, 63, 64]]))
    with bitslice_chunks(1), built_indexes() as seen:
        StreamMerger(q, index="chunk").add(r)
    (fields,) = seen
    for f in range(2):
        rows = [r[f].row(i).tolist() for i in range(len(r[f]))]
        kept = ref.restrict_rows(rows, q[f].hashes.tolist())
        rr = fields[f]
        assert rr.sizes.tolist() == r[f].sizes.tolist()
        hashes = rr.keys[rr.ids]
        assert [hashes[rr.indptr[i]:rr.indptr[i + 1]].tolist() for i in range(len(r[f]))] == kept
        # the vocabulary holds the query tokens some row kept, each with its count
        keys, ids, _, tids, df = rr.vocabulary()
        assert sorted(keys[tids[tids >= 0]].tolist()) == sorted({t for row in kept for t in row})
        flat = [t for row in kept for t in row]
        assert df.tolist() == [flat.count(k) for k in keys.tolist()]


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("measure", MEASURES)
def test_large_chunks_take_the_restricted_index_unforced(rng, measure, n_threads):
    # chunks above the cost model's floor: the bit-sliced kernel by choice
    rows = make_corpus(rng, 2600, vocab=2000)
    queries, refs = rows[:40] + [[], [5000, 5001]], rows[40:]
    q, r = TokenSets.from_ids(queries), TokenSets.from_ids(refs)
    with built_indexes() as seen:
        got = stream_max_overlap(q, chunked((r,), [1100, 1460]), top_k=2, index="chunk",
                                 measure=measure, n_threads=n_threads)
    assert len(seen) == 2 and all(isinstance(f[0], RestrictedRows) for f in seen)
    score, idx = as_arrays(ref.max_overlap([(ref.bag(x),) for x in queries],
                                           [(ref.bag(x),) for x in refs], 2, 0.0, measure), 2)
    np.testing.assert_array_equal(got.score, score)
    np.testing.assert_array_equal(got.index, idx)


def test_multisets_keep_every_token():
    q = TokenSets.from_ids([[1, 1, 2]], multiset=True)
    r = TokenSets.from_ids([[1, 1, 9, 9, 9]] * 3, multiset=True)
    merger = StreamMerger(q, index="chunk")
    assert merger._query_tokens is None
    merger.add(r)
    want = overlap.max_overlap(q, r)
    assert (merger.result().score.tolist(), merger.result().index.tolist()) == (
        want.score.tolist(), want.index.tolist())
    with pytest.raises(ValueError, match="sets"):
        QueryTokens((q,))


def test_an_index_on_the_query_tokens_answers_only_their_top_k():
    q = TokenSets.from_ids([[1, 2], [3]])
    r = TokenSets.from_ids([[1, 2, 7], [3, 8], [9]])
    tokens = QueryTokens((q,))
    with bitslice_chunks(1):
        index = build_index((r,), "references", 1, eager=False, only_tokens=tokens)
        score, idx = index._max_overlap_above((q,), np.zeros(2), top_k=1)
        assert idx[:, 0].tolist() == [0, 1]
        assert score[:, 0].tolist() == [2 * 2 / 5, 2 * 1 / 3]
        other = TokenSets.from_ids([[7]])
        with pytest.raises(RuntimeError, match="only its queries' tokens"):
            index.max_overlap(other)
        with pytest.raises(RuntimeError, match="only its queries' tokens"):
            index.join(q, threshold=0.5)
    with pytest.raises(ValueError, match="queries' fields"):
        tokens.restrict((r, r))
