"""One OverlapIndex and the metrics functions used from 8 Python threads at once.

The kernels release the GIL, so Python threads really run them concurrently
(each also starting OpenMP threads). Every concurrent result must equal the
serial one computed first, bit for bit, and the shared inputs must be unchanged.
"""

from __future__ import annotations

import dataclasses
import math
import threading

import numpy as np
import pytest

import metrics
import overlap
from overlap import OverlapIndex, TokenSets

N_PY_THREADS = 8
ROUNDS = 3


def _same(a, b) -> bool:
    """Deep equality: arrays exactly, floats with NaN == NaN, dataclasses by field."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            _same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def test_same_sees_differences():
    assert _same(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    assert not _same(np.array([1.0, 2.0]), np.array([1.0, 2.5]))
    assert not _same(np.array([1, 2]), np.array([1, 2], dtype=np.int32))
    assert not _same((1.0, 2.0), (1.0, 3.0))
    assert not _same({"a": 1}, {"a": 2})


def _run_concurrently(calls: dict) -> dict:
    """Run every call on 8 threads for ROUNDS rounds; return {name: [results]}."""
    names = list(calls)
    barrier = threading.Barrier(N_PY_THREADS)
    results: dict[str, list] = {n: [] for n in names}
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker(t: int) -> None:
        try:
            barrier.wait(timeout=60)
            for r in range(ROUNDS):
                # each thread walks the calls in its own order, so different
                # kernels overlap in time
                for k in range(len(names)):
                    name = names[(k + t + r) % len(names)]
                    out = calls[name]()
                    with lock:
                        results[name].append(out)
        except BaseException as exc:  # reported in the main thread
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(N_PY_THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=600)
    assert not any(th.is_alive() for th in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


def _texts(rng, n: int, vocab: int, lo: int, hi: int) -> list[str]:
    words = [f"w{i}" for i in range(vocab)]
    return [" ".join(rng.choice(words, size=rng.integers(lo, hi))) for _ in range(n)]


def test_one_index_from_many_threads_equals_serial(rng):
    ref_texts = _texts(rng, 3000, 400, 3, 25)
    # queries: copies with small edits of some references, plus fresh texts
    qry_texts = [t + " w1" if i % 3 else t for i, t in enumerate(ref_texts[:400])]
    qry_texts += _texts(rng, 200, 400, 1, 30)
    refs = [TokenSets.from_texts(ref_texts), TokenSets.from_texts(ref_texts, ngram=2)]
    qrys = [TokenSets.from_texts(qry_texts), TokenSets.from_texts(qry_texts, ngram=2)]
    before = [(f.indptr.copy(), f.hashes.copy()) for f in refs + qrys]
    index = OverlapIndex(refs)

    calls = {
        "top1": lambda: index.max_overlap(qrys, n_threads=2),
        "top3": lambda: index.max_overlap(qrys, top_k=3, min_score=0.2, n_threads=1),
        "rest": lambda: index.max_overlap(top_k=2, n_threads=None),
        "join": lambda: index.join(qrys, threshold=0.5, n_threads=2),
        "self_join": lambda: index.join(threshold=0.7, n_threads=None),
        "tokenize": lambda: TokenSets.from_texts(qry_texts, n_threads=2).hashes,
        "ratio": lambda: overlap.ratio(qrys, [f.take(np.arange(len(qry_texts))) for f in refs],
                                       n_threads=2),
        "dedup": lambda: overlap.dedup(refs[0].take(np.arange(800)), threshold=0.6, n_threads=2),
    }
    serial = {name: call() for name, call in calls.items()}
    assert len(serial["join"].left) > 0 and (serial["top1"].score > 0.5).any()

    for name, outs in _run_concurrently(calls).items():
        assert len(outs) == N_PY_THREADS * ROUNDS
        for out in outs:
            assert _same(out, serial[name]), f"{name}: concurrent result differs from serial"
    for (indptr, hashes), f in zip(before, refs + qrys):
        np.testing.assert_array_equal(f.indptr, indptr)
        np.testing.assert_array_equal(f.hashes, hashes)


def test_metrics_from_many_threads_equal_serial(rng):
    n = 5000  # above the small-n paths, so the parallel kernels run
    x = rng.normal(size=n)
    y = 0.6 * x + rng.normal(size=n)
    xi = rng.integers(0, 7, size=n).astype(np.float64)  # ties
    yi = np.clip(xi + rng.integers(-2, 3, size=n), 0, 6).astype(np.float64)
    groups = rng.integers(0, 20, size=n)
    ratings = rng.integers(1, 6, size=(5, 400)).astype(np.float64)
    ratings[rng.random(ratings.shape) < 0.1] = np.nan
    gold = {f"s{i}": sorted(set(rng.integers(0, 6, size=rng.integers(1, 3)).tolist()))
            for i in range(2000)}
    pred = {k: sorted(set(rng.integers(0, 6, size=rng.integers(1, 3)).tolist())) for k in gold}
    shared = [x, y, xi, yi, groups, ratings]
    before = [a.copy() for a in shared]

    def relation():
        res = metrics.relation_f1(gold, pred)
        return (res.precision, res.recall, res.f1)

    calls = {
        "pearson": lambda: metrics.pearson(x, y, n_threads=2),
        "spearman": lambda: metrics.spearman(xi, yi, n_threads=None),
        "kendall": lambda: metrics.kendall(xi, yi, n_threads=2),
        "kendall_cont": lambda: metrics.kendall(x, y, n_threads=1),
        "grouped": lambda: metrics.grouped(x, y, groups, method="spearman", n_threads=2),
        "bootstrap": lambda: metrics.bootstrap_ci(x[:500], y[:500], n_resamples=300, seed=7,
                                                  n_threads=2),
        "alpha": lambda: metrics.krippendorff_alpha(ratings, level="interval", n_threads=2),
        "split_half": lambda: metrics.split_half(ratings, n_splits=20, seed=3),
        "relation": relation,
    }
    serial = {name: call() for name, call in calls.items()}
    for name, outs in _run_concurrently(calls).items():
        for out in outs:
            assert _same(out, serial[name]), f"{name}: concurrent result differs from serial"
    for a, b in zip(shared, before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_serial_reference_does_not_depend_on_n_threads(rng, n_threads):
    # the serial results above are the comparison point: they must not depend
    # on n_threads either (guards against comparing two equally wrong runs)
    x = rng.normal(size=5000)
    y = x + rng.normal(size=5000)
    assert _same(metrics.pearson(x, y, n_threads=n_threads), metrics.pearson(x, y, n_threads=1))
    t = TokenSets.from_texts(_texts(rng, 500, 50, 2, 10))
    assert _same(overlap.max_overlap(t, n_threads=n_threads), overlap.max_overlap(t, n_threads=1))
