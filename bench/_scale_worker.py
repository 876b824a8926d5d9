"""Run one scale-suite operation in a fresh process, so its peak memory can be read.

Protocol (driven by ``test_bench_scale.py``)::

    python -m bench._scale_worker DIR OP N_THREADS

loads the corpus saved in DIR (``save_corpus``), prints one JSON line
``{"ready": ...}``, waits for a line on stdin, runs OP (``join``, ``dedup`` or
``search``) on all threads (``N_THREADS`` = ``all``) or the given count, prints
one JSON line with the wall time measured around OP alone, its peak RSS and a
summary of the result, and exits.  Before OP the worker resets its peak-RSS
mark (``/proc/self/clear_refs``, Linux); the peak reported is ``VmHWM`` from
``/proc/self/status`` after OP: the peak of OP itself, with the corpus and the
interpreter (resident throughout) included and the transient of loading not.
``getrusage(...).ru_maxrss`` is not used: on Linux a child started by
fork/exec inherits the parent's (pytest's) peak in it.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

FIELDS = ("context", "response")
THRESHOLD = 0.8
MIN_SCORE = 0.5


def save_corpus(directory: Path, gen) -> None:
    """Write a GeneratedSamples' corpus and queries TokenSets (hashed) to DIR."""
    directory.mkdir(parents=True, exist_ok=True)
    for part, sets in (("corpus", gen.corpus()), ("queries", gen.queries())):
        for name, ts in zip(FIELDS, sets):
            np.save(directory / f"{part}_{name}_indptr.npy", ts.indptr)
            np.save(directory / f"{part}_{name}_hashes.npy", ts.hashes)
    np.save(directory / "planted.npy", gen.planted)
    (directory / "meta.json").write_text(json.dumps({"n_corpus": gen.n_corpus, "n": len(gen)}))


def load_part(directory: Path, part: str):
    from overlap import TokenSets

    out = []
    for name in FIELDS:
        ip = np.load(directory / f"{part}_{name}_indptr.npy", mmap_mode="r")
        h = np.load(directory / f"{part}_{name}_hashes.npy", mmap_mode="r")
        out.append(TokenSets.from_csr(ip, h))  # copies into memory
        del ip, h
    return tuple(out)


def _status_mb(key: str) -> float:
    """A ``/proc/self/status`` memory line (VmRSS, VmHWM) in MiB; NaN off Linux."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return float("nan")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _pair_keys(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    return lo.astype(np.int64) * n + hi


def main(argv: list[str]) -> int:
    directory, op, nt_arg = Path(argv[0]), argv[1], argv[2]
    n_threads = None if nt_arg == "all" else int(nt_arg)
    import overlap

    meta = json.loads((directory / "meta.json").read_text())
    n_corpus = int(meta["n_corpus"])
    corpus = load_part(directory, "corpus")
    queries = load_part(directory, "queries") if op == "search" else None
    planted = np.load(directory / "planted.npy")
    data_mb = sum(ts.indptr.nbytes + ts.hashes.nbytes for ts in corpus) / 2**20
    if queries is not None:
        data_mb += sum(ts.indptr.nbytes + ts.hashes.nbytes for ts in queries) / 2**20
    reset = _reset_peak()
    before = _status_mb("VmRSS")
    print(json.dumps({"ready": True, "rss_before_mb": before}), flush=True)
    sys.stdin.readline()

    t0 = time.perf_counter()
    if op == "join":
        res = overlap.overlap_join(corpus, threshold=THRESHOLD, n_threads=n_threads)
    elif op == "dedup":
        res = overlap.dedup(corpus, threshold=THRESHOLD, n_threads=n_threads)
    elif op == "search":
        res = overlap.max_overlap(queries, corpus, min_score=MIN_SCORE, n_threads=n_threads)
    else:
        raise SystemExit(f"unknown op {op!r}")
    seconds = time.perf_counter() - t0
    # VmHWM: the peak RSS of this process's own address space since the reset.
    # (ru_maxrss is no good here: on Linux it keeps the peak of the parent's
    # address space inherited at fork/exec, i.e. of the pytest process.)
    peak_mb = _status_mb("VmHWM")
    if peak_mb != peak_mb:  # no /proc: fall back to getrusage (may include the parent's)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    in_corpus = planted[planted[:, 0] < n_corpus]
    summary: dict = {"n_corpus": n_corpus, "planted_in_corpus": int(in_corpus.shape[0])}
    if op == "join":
        keys = _pair_keys(res.left, res.right, n_corpus)
        want = _pair_keys(in_corpus[:, 0], in_corpus[:, 1], n_corpus)
        summary.update(pairs=len(res), planted_found=int(np.isin(want, keys).sum()))
    elif op == "dedup":
        both = res.keep[in_corpus[:, 0]] & res.keep[in_corpus[:, 1]]
        summary.update(removed=res.n_removed, passes=res.passes, edges=res.n_edges,
                       planted_both_kept=int(both.sum()))
    else:
        q_planted = planted[planted[:, 0] >= n_corpus, 0] - n_corpus
        summary.update(queries=len(res), matched=int((res.index >= 0).sum()),
                       planted_queries=int(q_planted.shape[0]),
                       planted_below_0_8=int((res.score[q_planted] <= THRESHOLD).sum()))
    print(json.dumps({"seconds": seconds, "summary": summary, "data_mb": data_mb,
                      "peak_rss_mb": peak_mb, "hwm_reset": reset,
                      "rss_before_mb": before}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
