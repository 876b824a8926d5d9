"""Each set measure next to Dice on the generated scale corpus (ours only).

Corpus: :func:`bench._workload.generate_samples` — (context, response)
samples over a Zipf vocabulary of 200k ids, W's lengths, 10% planted
near-duplicates; 100k samples always, 1M with ``OVERLAP_BENCH_SCALE=1``.

One group per size holds the self-join at 0.8 (two fields, index build
included) under every symmetric measure, so each one's time sits next to
Dice's in one run.  ``containment`` is asymmetric and refused for a
self-join; its row is the join of the corpus with itself as two collections
(``references=`` the same sets), which lists every pair in both directions
and every row with itself, so it does more work than the others by design.

``overlap`` and ``containment`` have no upper size window (a short row can
lie wholly inside a long one), so they list far more pairs than the
symmetric-by-size measures (``n_pairs`` in the JSON: on 100k rows about 45x
Dice's for ``overlap``); compare their time per listed pair, not per call.

Each run checks that every planted near-copy pair is found (a planted field
pair has Dice > 0.8 by construction; under the other measures the pair is
found when its score reaches 0.8, checked against the exact score).
"""

from __future__ import annotations

import numpy as np
import pytest

import overlap

from ._workload import generate_samples
from .conftest import THREADS, describe, env_flag

SCALE_ENV = "OVERLAP_BENCH_SCALE"
THRESHOLD = 0.8
SYMMETRIC = ("dice", "jaccard", "cosine", "overlap")

_big = pytest.mark.skipif(not env_flag(SCALE_ENV),
                          reason=f"1M samples takes minutes; set {SCALE_ENV}=1")
SIZES = [pytest.param(100_000, id="100k"),
         pytest.param(1_000_000, id="1M", marks=_big)]


@pytest.fixture(scope="module")
def corpora():
    made: dict[int, tuple] = {}

    def get(n: int):
        if n not in made:
            gen = generate_samples(n)
            made[n] = (gen.corpus(), gen.planted)
        return made[n]

    return get


def _check_planted(fields, planted, pairs, measure: str) -> int:
    """Planted pairs whose exact score reaches the threshold must all be listed."""
    a = np.minimum(planted[:, 0], planted[:, 1])
    b = np.maximum(planted[:, 0], planted[:, 1])
    score = overlap.ratio([f.take(a) for f in fields], [f.take(b) for f in fields],
                          measure=measure)
    found = set(zip(pairs.left.tolist(), pairs.right.tolist()))
    want = score >= THRESHOLD
    missing = [(x, y) for x, y in zip(a[want].tolist(), b[want].tolist())
               if (x, y) not in found and (y, x) not in found]
    assert not missing, (measure, missing[:5])
    return int(want.sum())


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("measure", [*SYMMETRIC, "containment"])
@pytest.mark.parametrize("n", SIZES)
def test_measure_self_join(benchmark, corpora, n, measure, n_threads):
    fields, planted = corpora(n)
    benchmark.group = f"measures: self-join at {THRESHOLD} (2 fields), {n // 1000}k generated"
    if measure == "containment":
        run = lambda: overlap.overlap_join(fields, fields, threshold=THRESHOLD,  # noqa: E731
                                           measure=measure, n_threads=n_threads)
    else:
        run = lambda: overlap.overlap_join(fields, threshold=THRESHOLD,  # noqa: E731
                                           measure=measure, n_threads=n_threads)
    pairs = benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=0)
    checked = _check_planted(fields, planted[planted[:, 0] < n], pairs, measure)
    describe(benchmark, None, corpus="generated samples (Zipf 200k, 10% planted)",
             n_samples=n, measure=measure, n_pairs=len(pairs.left),
             planted_checked=checked,
             n_threads=overlap.effective_n_threads(n_threads))
