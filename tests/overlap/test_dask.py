"""overlap.dask on a LocalCluster gives exactly the local functions' results."""

from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason="overlap.dask needs the dask extra: pip install 'overlap-metrics[dask]'"
)

import overlap  # noqa: E402
from overlap import TokenSets  # noqa: E402
from overlap import dask as odask  # noqa: E402


@pytest.fixture
def client(dask_client):
    return dask_client


def token_sets(rng, n, vocab=25, max_len=6, dup_every=7):
    """Small vocabulary: many ties, exact duplicates (spread over shards), empty rows."""
    seqs = [rng.integers(0, vocab, size=int(rng.integers(0, max_len))) for _ in range(n)]
    for i in range(dup_every, n, dup_every):
        seqs[i] = seqs[int(rng.integers(0, i))]
    return TokenSets.from_ids(seqs)


def assert_same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype and x.shape == y.shape


@pytest.mark.parametrize("n_shards", [1, 2, 3, 7])
@pytest.mark.parametrize("top_k", [1, 3])
def test_max_overlap_equals_local(client, rng, n_shards, top_k):
    q = [token_sets(rng, 150), token_sets(rng, 150)]
    r = [token_sets(rng, 220), token_sets(rng, 220)]
    assert_same(odask.max_overlap(q, r, client=client, top_k=top_k, n_shards=n_shards),
                overlap.max_overlap(q, r, top_k=top_k))
    # all against the rest: the query's own row stays excluded, across shards too
    assert_same(odask.max_overlap(q, client=client, top_k=top_k, n_shards=n_shards),
                overlap.max_overlap(q, top_k=top_k))


def test_max_overlap_min_score_and_one_field(client, rng):
    q = token_sets(rng, 200, vocab=12)
    local = overlap.max_overlap(q, top_k=2, min_score=0.5)
    assert_same(odask.max_overlap(q, client=client, top_k=2, min_score=0.5, n_shards=5), local)
    assert (local.index == -1).any() and (local.score >= 0.5).any()


def test_ties_go_to_lowest_index_across_shards(client):
    ts = TokenSets.from_ids([[1, 2]] * 6 + [[3]])  # six identical rows
    res = odask.max_overlap(ts, client=client, top_k=2, n_shards=3)
    assert res.index[:6].tolist() == [[1, 2], [0, 2], [0, 1], [0, 1], [0, 1], [0, 1]]
    assert res.index[6].tolist() == [-1, -1]


@pytest.mark.parametrize("n_shards", [1, 3, 4])
def test_join_equals_local(client, rng, n_shards):
    a = [token_sets(rng, 180), token_sets(rng, 180)]
    b = [token_sets(rng, 120), token_sets(rng, 120)]
    assert_same(odask.overlap_join(a, client=client, threshold=0.4, n_shards=n_shards),
                overlap.overlap_join(a, threshold=0.4))
    assert_same(odask.overlap_join(a, b, client=client, threshold=0.4, n_shards=n_shards),
                overlap.overlap_join(a, b, threshold=0.4))


@pytest.mark.parametrize("threshold", [0.3, 0.8, 1.0])
def test_dedup_equals_local(client, rng, threshold):
    units = [token_sets(rng, 250, vocab=15), token_sets(rng, 250, vocab=15)]
    got = odask.dedup(units, client=client, threshold=threshold, n_shards=3)
    want = overlap.dedup(units, threshold=threshold)
    for f in ("keep", "kept_for", "cluster"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
    assert (got.passes, got.n_edges) == (want.passes, want.n_edges)
    if threshold < 1:
        assert want.n_removed > 0


def test_empty_and_tiny_inputs(client):
    empty = TokenSets.from_ids([])
    one = TokenSets.from_ids([[1]])
    assert_same(odask.max_overlap(one, empty, client=client), overlap.max_overlap(one, empty))
    assert_same(odask.max_overlap(one, client=client, n_shards=4), overlap.max_overlap(one))
    assert len(odask.overlap_join(one, client=client, threshold=0.5)) == 0
    assert odask.dedup(one, client=client).keep.tolist() == [True]
    assert odask.shard_bounds(5, 9) == [(i, i + 1) for i in range(5)]


def test_validation_before_any_work(client, rng):
    ts = token_sets(rng, 10)
    with pytest.raises(TypeError, match="client must be a distributed.Client"):
        odask.max_overlap(ts, client="tcp://localhost:8786")
    with pytest.raises(ValueError, match="threshold must be > 0"):
        odask.overlap_join(ts, client=client, threshold=0.0)
    with pytest.raises(ValueError, match="n_threads"):
        odask.max_overlap(ts, client=client, n_threads=0)
    with pytest.raises(ValueError, match="n_shards"):
        odask.max_overlap(ts, client=client, n_shards=0)
    with pytest.raises(ValueError, match="top_k"):
        odask.max_overlap(ts, client=client, top_k=0)
    with pytest.raises(ValueError, match="same fields"):
        odask.max_overlap([ts, ts], ts, client=client)
    with pytest.raises(TypeError, match="units"):
        odask.dedup("text", client=client)


def test_progress_counts_shards(client, rng):
    seen = []
    ts = token_sets(rng, 60)
    odask.max_overlap(ts, client=client, n_shards=3, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_workers_come_from_the_scheduler_not_the_cached_identity(client, rng, monkeypatch):
    """distributed's ``scheduler_info()`` returns a cached identity that its
    periodic refresh may replace with a worker-less one at any moment (a CI run
    failed on "no workers" that way); the plan must not read it."""
    a = [token_sets(rng, 40)]
    monkeypatch.setattr(client, "scheduler_info", lambda *args, **kw: {"workers": {}})
    plan = odask._plan(client, 40, None, None)
    assert sorted({p[2] for p in plan}) == sorted(client.nthreads())
    assert_same(odask.max_overlap(a, client=client), overlap.max_overlap(a))


@pytest.mark.slow
def test_process_workers_with_nanny_environment(rng, monkeypatch):
    """Nannies set OMP_NUM_THREADS=1; the kernels get n_threads explicitly anyway."""
    # the nanny also writes OMP_NUM_THREADS=1 into this process's environment:
    # monkeypatch restores the original when the test ends
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    a = [token_sets(rng, 300), token_sets(rng, 300)]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as c:
            env = c.run(lambda: __import__("os").environ.get("OMP_NUM_THREADS"))
            assert set(env.values()) == {"1"}
            plan = odask._plan(c, 300, None, None)
            assert [p[3] for p in plan] == [2, 2]  # the workers' thread slots, not 1
            assert_same(odask.max_overlap(a, client=c, top_k=2), overlap.max_overlap(a, top_k=2))
            got = odask.dedup(a, client=c, threshold=0.5, n_threads=2)
            np.testing.assert_array_equal(got.keep, overlap.dedup(a, threshold=0.5).keep)
