"""The search side of the streaming scan: ``StreamMerger.add`` over chunks of
W's train contexts, 1,000 test contexts as the eval set.

Timed region: a fresh :class:`overlap.stream.StreamMerger` and ``add`` of
every chunk (the chunks' token sets are made beforehand, so reading and
tokenizing are out of the picture).  Groups by ``min_score``; in each, the
ways of searching a chunk (``index=``) side by side, all of which must give
the same result as ``overlap.max_overlap`` over all the train contexts.
"""

from __future__ import annotations

import numpy as np
import pytest

import overlap
from overlap.stream import StreamMerger

from .conftest import THREADS

EVAL_ROWS = 1000
CHUNK_ROWS = 16384


@pytest.fixture(scope="module")
def stream_sides(workload):
    train, test = workload.sets["train"][0], workload.sets["test"][0]
    queries = test.take(np.arange(min(EVAL_ROWS, len(test)), dtype=np.int64))
    chunks = [train.take(np.arange(a, min(len(train), a + CHUNK_ROWS), dtype=np.int64))
              for a in range(0, len(train), CHUNK_ROWS)]
    return queries, chunks, train


def _bench_merger(benchmark, stream_sides, min_score, index, n_threads, every_token=False):
    """Time a StreamMerger over the chunks (in the group of its min_score) and
    check it against the in-memory search; ``every_token``: each chunk's
    bit-sliced index on all its tokens, as before ``overlap._query_tokens``."""
    queries, chunks, train = stream_sides
    benchmark.group = (f"stream: {EVAL_ROWS:,} test contexts vs train contexts in "
                       f"{CHUNK_ROWS:,}-row chunks, min_score {min_score:g}")

    def run():
        merger = StreamMerger(queries, min_score=min_score, index=index, n_threads=n_threads)
        if every_token:
            merger._query_tokens = None
        for chunk in chunks:
            merger.add(chunk)
        return merger.result()

    got = benchmark(run)
    want = overlap.max_overlap(queries, train, min_score=min_score, n_threads=n_threads)
    np.testing.assert_array_equal(got.score, want.score)
    np.testing.assert_array_equal(got.index, want.index)


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("min_score, index", [(0.0, "auto"), (0.0, "chunk"),
                                              (0.5, "auto"), (0.5, "chunk"),
                                              (0.5, "queries")])
def test_stream_merger(benchmark, stream_sides, min_score, index, n_threads):
    _bench_merger(benchmark, stream_sides, min_score, index, n_threads)


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("min_score", [0.0, 0.5])
def test_stream_merger_chunk_index_on_every_token(benchmark, stream_sides, min_score,
                                                  n_threads):
    """``index="chunk"`` with each chunk's bit-sliced index on all its tokens (as
    before ``overlap._query_tokens``): the peer of the chunk index on the
    queries' tokens, in the same groups."""
    _bench_merger(benchmark, stream_sides, min_score, "chunk", n_threads, every_token=True)
