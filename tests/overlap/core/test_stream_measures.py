"""``measure=`` on the streamed search: equal to the in-memory search with the
same measure and to the plain-Python definition, for any chunking, both ways
of searching a chunk, multisets, several fields and thread counts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import overlap
from overlap import TokenSets
from overlap._validation import MEASURES
from overlap.stream import StreamMerger, scan_stream, stream_max_overlap
from reference import overlap as ref
from reference.helpers import as_arrays, build, chunked, collections, make_corpus, ref_units

SYMMETRIC = [m for m in MEASURES if m != "containment"]


def _index_choices(measure):
    return ["auto", "chunk"] + (["queries"] if measure != "containment" else [])


@pytest.mark.parametrize("measure", MEASURES)
@settings(max_examples=40, deadline=None)
@given(data=st.data(), multiset=st.booleans(), top_k=st.integers(1, 3),
       min_score=st.sampled_from([0.0, 0.25, 0.5, 2 / 3, 0.8, 1.0]),
       sizes=st.lists(st.integers(0, 9), min_size=1, max_size=4).filter(any))
def test_streamed_search_equals_the_definition_for_any_chunking(measure, data, multiset,
                                                               top_k, min_score, sizes):
    qf = data.draw(collections())
    rf = data.draw(collections(n_fields=len(qf)))
    index = data.draw(st.sampled_from(_index_choices(measure)))
    q, r = build(qf, multiset), build(rf, multiset)
    got = stream_max_overlap(q, chunked(r, sizes), top_k=top_k, min_score=min_score,
                             index=index, measure=measure)
    local = overlap.max_overlap(q, r, top_k=top_k, min_score=min_score, measure=measure)
    np.testing.assert_array_equal(got.score, local.score)
    np.testing.assert_array_equal(got.index, local.index)
    want = ref.max_overlap(ref_units(qf, multiset), ref_units(rf, multiset), top_k, min_score,
                           measure)
    score, idx = as_arrays(want, top_k)
    np.testing.assert_array_equal(np.reshape(got.score, (-1, top_k)), score)
    np.testing.assert_array_equal(np.reshape(got.index, (-1, top_k)), idx)


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(20261205)
    rows = make_corpus(rng, 330)
    refs, queries = rows[:270], rows[270:]
    return (TokenSets.from_ids(queries), TokenSets.from_ids(refs),
            [(ref.bag(x),) for x in queries], [(ref.bag(x),) for x in refs])


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("sizes", [[1], [7, 30], [64], [1000]])
@pytest.mark.parametrize("measure", MEASURES)
def test_streamed_search_of_a_corpus_equals_the_definition(corpus, measure, sizes, n_threads):
    q, r, uq, ur = corpus
    for min_score, index in [(0.0, "auto"), (0.5, "auto"), (0.6, "chunk")] + (
            [(0.5, "queries")] if measure != "containment" else []):
        got = stream_max_overlap(q, chunked((r,), sizes), top_k=2, min_score=min_score,
                                 index=index, measure=measure, n_threads=n_threads)
        score, idx = as_arrays(ref.max_overlap(uq, ur, 2, min_score, measure), 2)
        np.testing.assert_array_equal(got.score, score, err_msg=f"{min_score}, {index}")
        np.testing.assert_array_equal(got.index, idx, err_msg=f"{min_score}, {index}")


@pytest.mark.parametrize("measure", SYMMETRIC)
def test_symmetric_measures_search_chunks_with_the_query_index(corpus, measure):
    """The join of ``index="queries"`` scores (chunk row, query) pairs: right for
    a symmetric measure, and used once the cut-off is high."""
    q, r, uq, ur = corpus
    merger = StreamMerger(q, min_score=0.5, index="auto", measure=measure)
    for (chunk,) in chunked((r,), [40]):
        merger.add(chunk)
    assert merger.chunks["queries"] > 0
    score, idx = as_arrays(ref.max_overlap(uq, ur, 1, 0.5, measure), 1)
    assert merger.result().score.tolist() == score[:, 0].tolist()
    assert merger.result().index.tolist() == idx[:, 0].tolist()


def test_containment_searches_every_chunk_with_a_chunk_index(corpus):
    q, r, uq, ur = corpus
    merger = StreamMerger(q, min_score=0.5, measure="containment")
    for (chunk,) in chunked((r,), [40]):
        merger.add(chunk)
    assert merger.chunks == {"chunk": 7, "queries": 0}
    score, idx = as_arrays(ref.max_overlap(uq, ur, 1, 0.5, "containment"), 1)
    assert merger.result().score.tolist() == score[:, 0].tolist()
    assert merger.result().index.tolist() == idx[:, 0].tolist()


def test_containment_is_the_query_inside_the_reference():
    q = TokenSets.from_ids([[1, 2]])
    chunks = [TokenSets.from_ids([list(range(1, 10))]), TokenSets.from_ids([[1, 7]])]
    got = stream_max_overlap(q, iter(chunks), measure="containment")
    assert (got.score.tolist(), got.index.tolist()) == ([1.0], [0])
    dice = stream_max_overlap(q, iter(chunks))
    assert (dice.score.tolist(), dice.index.tolist()) == ([0.5], [1])


def test_bad_measures_and_containment_with_the_query_index_are_refused(tmp_path):
    q = TokenSets.from_ids([[1, 2]])
    with pytest.raises(ValueError, match="index='queries' cannot search with "
                                         "measure='containment'.*'chunk' or 'auto'"):
        StreamMerger(q, index="queries", measure="containment")
    with pytest.raises(ValueError, match="index='queries' cannot"):
        stream_max_overlap(q, [q], index="queries", measure="containment")
    with pytest.raises(ValueError, match="measure must be one of"):
        stream_max_overlap(q, [q], measure="Jaccard")
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "a b"}\n')
    with pytest.raises(ValueError, match="measure must be one of"):
        scan_stream(["a b"], path, measure="tversky")
    with pytest.raises(ValueError, match="index='queries' cannot"):
        scan_stream(["a b"], path, index="queries", measure="containment")


CORPUS = ["the best coffee in town is here", "best coffee", "a b c d", "vamos a la playa hoy",
          "la playa", "coffee", "", "nothing", "the best coffee in town"]
EVAL = ["the best coffee in town", "vamos a la playa", "a b", "z", ""]


@pytest.mark.parametrize("chunk_rows", [1, 2, 4, 100])
@pytest.mark.parametrize("measure", MEASURES)
def test_scan_stream_equals_in_memory_search(tmp_path, measure, chunk_rows):
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in CORPUS))
    res = scan_stream(EVAL, path, chunk_rows=chunk_rows, top_k=2, measure=measure)
    want = overlap.max_overlap(TokenSets.from_texts(EVAL), TokenSets.from_texts(CORPUS),
                               top_k=2, measure=measure)
    np.testing.assert_array_equal(res.score, want.score)
    np.testing.assert_array_equal(res.index, want.index)
    assert res.match["text"] == [[CORPUS[j] if j >= 0 else None for j in row]
                                 for row in want.index.tolist()]
