"""How time and peak memory grow from 10k to 1M samples (ours only).

Corpus: :func:`bench._workload.generate_samples` — (context, response) samples
over a Zipf vocabulary of 200k ids, W's lengths, 10% planted near-duplicates,
hashed with ``TokenSets.from_ids``; plus 100k queries (10% of them planted
near-copies of corpus rows).  Sizes 10k and 100k always run; 1M only with
``OVERLAP_BENCH_SCALE=1`` (it takes minutes, and a minute to generate).

Each operation runs in a fresh worker process (``bench/_scale_worker.py``) that
loads the saved corpus, then waits; the timed region is only the operation
(start-up and loading are in the untimed setup).  The worker resets its
peak-RSS mark before the operation and reports ``VmHWM`` after it, stored in
``extra_info["peak_rss_mb"]``: the peak of the operation, with the corpus and
the interpreter (resident throughout) included, the transient of loading not.
(Not ``getrusage(RUSAGE_CHILDREN)``: on Linux a child inherits the parent's
peak in ``ru_maxrss`` at fork/exec, which here is pytest's, corpus generation
included.)

Operations (two fields, ratio = min over fields):

* ``join``: ``overlap_join(corpus, threshold=0.8)`` (self-join, index build included);
* ``dedup``: ``dedup(corpus, threshold=0.8)``;
* ``search``: ``max_overlap(queries, corpus, min_score=0.5)`` (index build included).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import overlap

from ._scale_worker import save_corpus
from ._workload import generate_samples
from .conftest import describe, env_flag

SCALE_ENV = "OVERLAP_BENCH_SCALE"
QUERIES_ENV = "OVERLAP_BENCH_SCALE_QUERIES"
N_QUERIES = int(os.environ.get(QUERIES_ENV, "100000"))
REPO = Path(__file__).resolve().parent.parent

_big = pytest.mark.skipif(not env_flag(SCALE_ENV),
                          reason=f"1M samples takes minutes; set {SCALE_ENV}=1")
SIZES = [pytest.param(10_000, id="10k"), pytest.param(100_000, id="100k"),
         pytest.param(1_000_000, id="1M", marks=_big)]
THREADS = [pytest.param("all", id="all-threads"), pytest.param("1", id="1-thread")]
OPS = {
    "join": "scale: self-join at 0.8 (2 fields)",
    "dedup": "scale: dedup at 0.8 (2 fields)",
    "search": f"scale: max_overlap of {N_QUERIES // 1000}k queries, min_score=0.5",
}


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory):
    made: dict[int, Path] = {}

    def get(n: int) -> Path:
        if n not in made:
            d = tmp_path_factory.mktemp(f"scale_{n}")
            save_corpus(d, generate_samples(n, n_queries=N_QUERIES))
            made[n] = d
        return made[n]

    return get


def _start(directory: Path, op: str, n_threads: str):
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench._scale_worker", str(directory), op, n_threads],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO,
    )
    ready = json.loads(proc.stdout.readline() or "{}")
    if not ready.get("ready"):
        proc.kill()
        proc.wait()
        raise RuntimeError(f"scale worker for {op} failed to start")
    return (proc,), {}


def _run(proc):
    proc.stdin.write("go\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    proc.wait()
    if proc.returncode != 0 or not line:
        raise RuntimeError(f"scale worker exited with {proc.returncode}")
    return json.loads(line)


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", list(OPS))
def test_scale(benchmark, corpus_dir, op, n, n_threads):
    if n >= 1_000_000 and n_threads == "1" and not env_flag("OVERLAP_BENCH_SCALE_1THREAD"):
        pytest.skip("1M on one thread: set OVERLAP_BENCH_SCALE_1THREAD=1")
    benchmark.group = OPS[op]
    d = corpus_dir(n)
    out = benchmark.pedantic(_run, setup=lambda: _start(d, op, n_threads), rounds=1,
                             iterations=1, warmup_rounds=0)
    s = out["summary"]
    if op == "join":
        assert s["planted_found"] == s["planted_in_corpus"]
    elif op == "dedup":
        assert s["planted_both_kept"] == 0
    else:
        assert s["planted_below_0_8"] == 0
    describe(benchmark, None, corpus="generated samples (Zipf 200k, 10% planted)",
             n_samples=n, n_queries=N_QUERIES if op == "search" else 0,
             work_seconds=round(out["seconds"], 3),
             peak_rss_mb=round(out["peak_rss_mb"], 1),
             rss_before_mb=round(out["rss_before_mb"], 1), data_mb=round(out["data_mb"], 1),
             peak_mark_reset=out["hwm_reset"],
             n_threads=overlap.effective_n_threads(None) if n_threads == "all"
             else int(n_threads),
             **s)
