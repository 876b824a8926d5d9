"""``measure=`` on overlap.dask: the local functions' results with the same
measure, bit for bit, for several shardings; containment refused where the
local functions refuse it."""

from __future__ import annotations

import json

import numpy as np
import pytest

distributed = pytest.importorskip(
    "distributed", reason="overlap.dask needs the dask extra: pip install 'overlap-metrics[dask]'"
)

import overlap  # noqa: E402
from overlap import TokenSets  # noqa: E402
from overlap import dask as odask  # noqa: E402
from overlap._validation import MEASURES  # noqa: E402
from overlap.stream import scan_stream  # noqa: E402
from reference import overlap as ref  # noqa: E402

SYMMETRIC = [m for m in MEASURES if m != "containment"]


@pytest.fixture
def client(dask_client):
    return dask_client


@pytest.fixture(scope="module")
def data():
    """Two fields of small-vocabulary rows (ties, duplicates, empty rows), as
    TokenSets and as the reference's bags; multisets in the second pair."""
    rng = np.random.default_rng(7)

    def rows(n):
        out = [list(rng.integers(0, 14, size=int(rng.integers(0, 7)))) for _ in range(n)]
        for i in range(5, n, 5):
            out[i] = out[int(rng.integers(0, i))]
        return out

    q = [rows(60), rows(60)]
    r = [rows(90), rows(90)]
    return q, r


def _sets(cols, multiset=False):
    return [TokenSets.from_ids(c, multiset=multiset) for c in cols]


def _units(cols, multiset=False):
    return [tuple(ref.bag(c[i], 1, multiset) for c in cols) for i in range(len(cols[0]))]


def assert_same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype and x.shape == y.shape


@pytest.mark.parametrize("multiset", [False, True])
@pytest.mark.parametrize("n_shards", [1, 3])
@pytest.mark.parametrize("measure", MEASURES)
def test_max_overlap_equals_local_and_the_definition(client, data, measure, n_shards, multiset):
    q, r = _sets(data[0], multiset), _sets(data[1], multiset)
    got = odask.max_overlap(q, r, client=client, top_k=2, measure=measure, n_shards=n_shards)
    assert_same(got, overlap.max_overlap(q, r, top_k=2, measure=measure))
    want = ref.max_overlap(_units(data[0], multiset), _units(data[1], multiset), 2, 0.0, measure)
    assert got.score.tolist() == [[s for s, _ in row] for row in want]
    assert got.index.tolist() == [[j for _, j in row] for row in want]
    rest = odask.max_overlap(r, client=client, min_score=0.5, measure=measure,
                             n_shards=n_shards)
    assert_same(rest, overlap.max_overlap(r, min_score=0.5, measure=measure))


@pytest.mark.parametrize("n_shards", [1, 3])
@pytest.mark.parametrize("measure", MEASURES)
def test_join_equals_local_and_the_definition(client, data, measure, n_shards):
    q, r = _sets(data[0]), _sets(data[1])
    for t in (0.5, 2 / 3):
        got = odask.overlap_join(q, r, client=client, threshold=t, measure=measure,
                                 n_shards=n_shards)
        assert_same(got, overlap.overlap_join(q, r, threshold=t, measure=measure))
        want = ref.join(_units(data[0]), _units(data[1]), t, measure)
        assert list(zip(got.left.tolist(), got.right.tolist(), got.score.tolist())) == want
        if measure in SYMMETRIC:
            got = odask.overlap_join(r, client=client, threshold=t, measure=measure,
                                     n_shards=n_shards)
            assert_same(got, overlap.overlap_join(r, threshold=t, measure=measure))


@pytest.mark.parametrize("measure", SYMMETRIC)
def test_dedup_equals_local(client, data, measure):
    r = _sets(data[1])
    for t in (0.5, 0.8):
        got = odask.dedup(r, client=client, threshold=t, measure=measure, n_shards=3)
        want = overlap.dedup(r, threshold=t, measure=measure)
        assert got.keep.tolist() == want.keep.tolist()
        assert got.kept_for.tolist() == want.kept_for.tolist()
        assert got.cluster.tolist() == want.cluster.tolist()


def test_containment_and_unknown_measures_are_refused(client, data):
    r = _sets(data[1])
    with pytest.raises(ValueError, match="containment.*asymmetric"):
        odask.overlap_join(r, client=client, threshold=0.5, measure="containment")
    with pytest.raises(ValueError, match="containment.*asymmetric"):
        odask.dedup(r, client=client, measure="containment")
    with pytest.raises(ValueError, match="measure must be one of"):
        odask.max_overlap(r, r, client=client, measure="dice ")


@pytest.mark.parametrize("measure", MEASURES)
def test_scan_stream_equals_local(client, tmp_path, measure):
    corpus = ["the best coffee in town is here", "best coffee", "vamos a la playa hoy",
              "la playa", "", "the best coffee in town"]
    for i, part in enumerate([corpus[:2], corpus[2:3], corpus[3:]]):
        (tmp_path / f"s{i}.jsonl").write_text(
            "".join(json.dumps({"text": t}) + "\n" for t in part))
    ev = ["the best coffee in town", "vamos a la playa", "z", ""]
    got = odask.scan_stream(ev, tmp_path, client=client, top_k=2, chunk_rows=2,
                            measure=measure)
    want = scan_stream(ev, tmp_path, top_k=2, chunk_rows=2, measure=measure)
    np.testing.assert_array_equal(got.score, want.score)
    np.testing.assert_array_equal(got.index, want.index)
    assert got.match == want.match
    with pytest.raises(ValueError, match="measure must be one of"):
        odask.scan_stream(ev, tmp_path, client=client, measure="cos")
