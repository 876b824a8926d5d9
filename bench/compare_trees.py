"""Time the same workloads on two builds of overlap-metrics, alternately, in one run.

A kernel refactor must leave every figure within noise of the code it replaces.
Two builds cannot share one process (both are the package ``overlap``), so this
script runs each workload in a fresh process per build, alternating
old/new/old/new, and reports the best time of each build and their ratio::

    python -m bench.compare_trees OLD_TREE NEW_TREE [--rounds 5] [--threads 1,all]
                                  [--only top1-2f,join-self] [--json OUT.json]

Each tree is a source checkout with its modules built in place
(``python setup.py build_ext --inplace``).  The workloads are those of the
benchmark suite: DailyDialog's W from the shared data folder (else the
generated corpus of its shape), and the 1M generated self-join.  Every run
also checks that both builds return identical results (a digest of the
arrays), so a faster build that answers differently is caught here too.
Take figures on a quiet machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

WORKLOADS = ("top1-2f", "top1-ctx", "join-rs", "join-self", "1m-self-join")
THRESHOLD = 0.8


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _prepare(name: str, cache: Path):
    """Return (callable, description); the callable runs the timed operation once
    and returns a digest of its result."""
    import overlap
    from bench import _workload

    if name == "1m-self-join":
        from bench._scale_worker import load_part, save_corpus

        d = cache / "1m"
        if not (d / "meta.json").exists():
            save_corpus(d, _workload.generate_samples(1_000_000))
        corpus = load_part(d, "corpus")

        def run(n):
            r = overlap.overlap_join(corpus, threshold=THRESHOLD, n_threads=n)
            return _digest(r.left, r.right, r.score)

        return run
    w = _workload.load_workload()
    train, test = w.sets["train"], w.sets["test"]
    if name == "top1-2f":
        idx = overlap.OverlapIndex(train)
        queries = test
    elif name == "top1-ctx":
        idx = overlap.OverlapIndex(train[0])
        queries = test[0]
    else:
        idx = overlap.OverlapIndex(train[0])
        queries = test[0] if name == "join-rs" else None
    if name.startswith("top1"):
        def run(n):
            r = idx.max_overlap(queries, n_threads=n)
            return _digest(r.score, r.index)
    else:
        def run(n):
            r = idx.join(queries, threshold=THRESHOLD, n_threads=n)
            return _digest(r.left, r.right, r.score)
    return run


def worker(name: str, threads: str, repeats: int, cache: str) -> None:
    """In the child: build the workload, run it once to warm up, then time it."""
    run = _prepare(name, Path(cache))
    n = None if threads == "all" else int(threads)
    digest = run(n)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        again = run(n)
        best = min(best, time.perf_counter() - t0)
        if again != digest:
            raise SystemExit(f"{name}: results differ between runs")
    print(json.dumps({"seconds": best, "digest": digest}))


def _child(tree: Path, name: str, threads: str, repeats: int, cache: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    # the tree under test first on sys.path (its overlap and bench._workload);
    # this file is loaded by its path, since the old tree may not have it
    code = ("import sys, importlib.util as u; sys.path.insert(0, %r); "
            "s = u.spec_from_file_location('_compare_trees', %r); m = u.module_from_spec(s); "
            "s.loader.exec_module(m); m.worker(*sys.argv[1:3], int(sys.argv[3]), sys.argv[4])"
            % (str(tree), str(Path(__file__).resolve())))
    out = subprocess.run([sys.executable, "-c", code, name, threads, str(repeats), str(cache)],
                         cwd=tree, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{tree} {name}: worker failed\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--rounds", type=int, default=3, help="alternations per workload")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per process")
    ap.add_argument("--threads", default="1,all")
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        ap.error(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="compare-trees-") as cache:
        for name in names:
            for threads in args.threads.split(","):
                best = {"old": float("inf"), "new": float("inf")}
                digests = set()
                for _ in range(args.rounds):
                    for side in ("old", "new"):
                        got = _child(getattr(args, side).resolve(), name, threads,
                                     args.repeats, Path(cache))
                        best[side] = min(best[side], got["seconds"])
                        digests.add(got["digest"])
                row = {"workload": name, "threads": threads, "old_s": best["old"],
                       "new_s": best["new"], "new_over_old": best["new"] / best["old"],
                       "identical": len(digests) == 1}
                rows.append(row)
                print(f"{name:14s} threads={threads:3s} old {best['old']:.4f} s  "
                      f"new {best['new']:.4f} s  new/old {row['new_over_old']:.3f}  "
                      f"{'identical' if row['identical'] else 'RESULTS DIFFER'}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"old": str(args.old), "new": str(args.new),
                                         "date": time.strftime("%Y-%m-%d %H:%M"),
                                         "rows": rows}, indent=2))
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
