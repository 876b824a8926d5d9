"""Contamination check of an eval set against a generated corpus bigger than memory.

Writes a corpus of JSONL shards (default 5 GB) into a temporary directory,
plants eval samples that are light edits of known corpus rows, then runs
:func:`overlap.stream.scan_stream` in a fresh process and records its wall
time and peak resident memory (``VmHWM``), and the memory of a process that
only imported the library, for comparison.  The corpus is deleted at the end
(``--keep`` keeps it).  Nothing here is committed data: the corpus is made on
the fly from a seed.

Run from the repository root::

    python -m bench.stream_contamination                 # 5 GB, about 3 GB of RAM is NOT needed
    python -m bench.stream_contamination --gb 0.5 --chunk-rows 65536
    python -m bench.stream_contamination --gb 0.2 --compare-index   # chunk vs queries index
    python -m bench.stream_contamination --gb 0.3 --min-score 0.5 --formats jsonl,parquet \
        --baseline ../previous-main       # the same scans with an earlier build, in turn
    python -m bench.stream_contamination --gb 0.3 --min-score 0.5 --formats jsonl,parquet \
        --cores 1,2 --repeat 3 --stages   # scaling with cores: 1, then 2 pinned CPUs

``--cores 1,2,4`` measures how the scan scales with cores: each scan's process
is pinned to that many of the CPUs this one may use (``os.sched_setaffinity``)
and runs that many kernel threads; the table adds the speed-up over the first
count and the CPU time the scan used (user + system), so that "cores busy"
(CPU time over wall time) shows whether the extra cores did work.
``--stages`` also times each stage of the scan alone over the whole corpus
(reading the chunks, tokenizing them, searching them), at every core count:
the stage that stops scaling bounds the scan, whose stages overlap.

``--baseline TREE`` scans every setting with the ``overlap`` of another
checkout too (built in place, e.g. the previous main): its runs alternate with
this tree's, so both see the same machine, and its results must be the same.

Corpus rows are "samples" of 10-60 tokens drawn from a Zipf vocabulary of
100,000 words, each with a unique id token (so no two rows are equal); about
210 bytes a row in JSONL.  The eval set has ``--eval`` samples: half are
copies of corpus rows spread over the whole corpus with one token dropped
(ratio about 0.98), half are fresh random samples.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

VOCAB = 100_000
POOL = 1 << 20  # distinct token sequences; each written row adds its own id token


def _status(key: str) -> int:
    """A /proc/self/status field in bytes (VmHWM: peak RSS, VmRSS: current)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return -1


def _pool(rng: np.random.Generator) -> list[str]:
    p = 1.0 / np.arange(1, VOCAB + 1) ** 1.1
    cdf = np.cumsum(p / p.sum())
    lens = rng.integers(10, 61, POOL)
    ids = np.searchsorted(cdf, rng.random(int(lens.sum())))
    words = [f"w{i}" for i in range(VOCAB)]
    out, pos = [], 0
    for n in lens.tolist():
        out.append(" ".join([words[i] for i in ids[pos:pos + n].tolist()]))
        pos += n
    return out


def row_text(pool: list[str], r: int) -> str:
    """Corpus row ``r``: a pool entry (in a row-dependent order) plus a unique id token."""
    return f"{pool[(r * 7919) % POOL]} d{r}"


def generate(out_dir: str, gb: float, shard_mb: int, seed: int) -> tuple[int, list[str]]:
    """Write the shards; return the row count and the pool (to derive eval samples)."""
    rng = np.random.default_rng(seed)
    pool = _pool(rng)
    target = int(gb * 1e9)
    written, r, shard = 0, 0, 0
    t0 = time.perf_counter()
    while written < target:
        path = os.path.join(out_dir, f"part-{shard:05d}.jsonl")
        with open(path, "w", buffering=1 << 20) as f:
            size = 0
            while size < shard_mb * 1_000_000 and written + size < target:
                lines = [f'{{"text": "{row_text(pool, r + i)}", "id": {r + i}}}\n'
                         for i in range(10_000)]
                block = "".join(lines)
                f.write(block)
                size += len(block)
                r += len(lines)
        written += size
        shard += 1
        print(f"generate: {written / 1e9:.2f}/{gb:.2f} GB, {r} rows, "
              f"{time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    return r, pool


def eval_set(pool: list[str], n_rows: int, n_eval: int, seed: int):
    rng = np.random.default_rng(seed + 1)
    planted = np.sort(rng.choice(n_rows, n_eval // 2, replace=False))
    texts = []
    for r in planted.tolist():
        toks = row_text(pool, r).split()
        del toks[rng.integers(0, len(toks) - 1)]  # drop one token (never the id)
        texts.append(" ".join(toks))
    fresh = _pool(np.random.default_rng(seed + 2))[: n_eval - len(planted)]
    texts += [t + " fresh" for t in fresh]
    return texts, planted


def convert(corpus: str, out: str, fmt: str) -> str:
    """The JSONL shards of ``corpus`` written as gzip or Zstandard JSONL, Parquet or
    CSV, in ``out``."""
    os.mkdir(out)
    for name in sorted(os.listdir(corpus)):
        src = os.path.join(corpus, name)
        stem = os.path.splitext(name)[0]
        if fmt == "gz":
            import gzip
            with open(src, "rb") as f, gzip.open(os.path.join(out, stem + ".jsonl.gz"), "wb",
                                                 compresslevel=1) as g:
                shutil.copyfileobj(f, g, 1 << 24)
        elif fmt == "zst":
            import pyarrow as pa
            with open(src, "rb") as f, pa.CompressedOutputStream(
                    os.path.join(out, stem + ".jsonl.zst"), "zstd") as z:
                shutil.copyfileobj(f, z, 1 << 24)
        elif fmt == "parquet":
            import pyarrow.json as pj
            import pyarrow.parquet as pq
            pq.write_table(pj.read_json(src), os.path.join(out, stem + ".parquet"))
        elif fmt == "csv":
            import pyarrow.csv as pcsv
            import pyarrow.json as pj
            pcsv.write_csv(pj.read_json(src), os.path.join(out, stem + ".csv"))
        else:
            raise SystemExit(f"--formats: unknown format {fmt!r} (jsonl, gz, zst, parquet, csv)")
    return out


def parse_cores(text: str | None, usable: list[int]) -> list[int]:
    """``--cores``: the core counts to pin scans to, each at most ``len(usable)``."""
    if text is None:
        return []
    try:
        counts = [int(c) for c in text.split(",") if c.strip()]
    except ValueError:
        raise SystemExit(f"--cores: expected comma-separated integers, got {text!r}") from None
    if not counts:
        raise SystemExit("--cores: no core count given")
    for c in counts:
        if not 1 <= c <= len(usable):
            raise SystemExit(f"--cores: {c} is not between 1 and the {len(usable)} CPUs "
                             f"this process may use ({usable})")
    return counts


def _cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def scan(args) -> None:
    """Child process: scan and print one JSON line of figures."""
    import overlap
    from overlap.stream import scan_stream

    base = _status("VmRSS")
    with open(args.eval_file) as f:
        ev = json.load(f)
    t0, c0 = time.perf_counter(), _cpu_seconds()
    res = scan_stream(ev, args.scan, chunk_rows=args.chunk_rows, min_score=args.min_score,
                      index=args.index, n_threads=args.threads, progress=True,
                      engine=args.engine, prefetch=not args.no_prefetch)
    secs = time.perf_counter() - t0
    cpu = _cpu_seconds() - c0
    print(json.dumps({
        "seconds": secs, "cpu_seconds": cpu, "cpus": sorted(os.sched_getaffinity(0)),
        "rows": res.n_references, "bytes": res.nbytes,
        "peak_rss": _status("VmHWM"), "rss_after_import": base, "chunks": res.chunks,
        "index": res.index.tolist(), "score": res.score.tolist(),
        "version": overlap.__version__, "tree": _tree(),
    }))


def stages(args) -> None:
    """Child process: each stage of the scan alone, in turn, over the whole
    corpus (its chunks held in memory): reading, tokenizing, searching; one
    JSON line of ``{stage: [wall seconds, CPU seconds]}``."""
    from overlap import TokenSets
    from overlap._allocator import settle
    from overlap.stream import StreamMerger
    from overlap.stream_readers import read_chunks

    settle()  # as scan_stream does
    with open(args.eval_file) as f:
        ev = json.load(f)
    queries = (TokenSets.from_texts(ev, n_threads=args.threads),)  # the tokenizer warmed up
    out = {}
    t0, c0 = time.perf_counter(), _cpu_seconds()
    cols = [c.columns["text"] for c in read_chunks(args.scan, ["text"],
                                                    chunk_rows=args.chunk_rows,
                                                    engine=args.engine)]
    out["read"] = [time.perf_counter() - t0, _cpu_seconds() - c0]
    t0, c0 = time.perf_counter(), _cpu_seconds()
    refs = [TokenSets.from_texts(c, n_threads=args.threads) for c in cols]
    out["tokenize"] = [time.perf_counter() - t0, _cpu_seconds() - c0]
    del cols
    merger = StreamMerger(queries, min_score=args.min_score, index=args.index,
                          n_threads=args.threads)
    t0, c0 = time.perf_counter(), _cpu_seconds()
    first = 0
    for r in refs:
        merger.add((r,), offset=first)
        first += len(r)
    out["search"] = [time.perf_counter() - t0, _cpu_seconds() - c0]
    print(json.dumps({"stages": out, "cpus": sorted(os.sched_getaffinity(0)),
                      "tree": _tree()}))


def _tree() -> str:
    """The checkout (or site-packages) whose ``overlap`` this process imported."""
    import overlap
    return os.path.dirname(os.path.dirname(overlap.__file__))


def run_scan(corpus: str, ev_path: str, args, index: str, engine: str = "auto",
             prefetch: bool = True, tree: str | None = None,
             cpus: list[int] | None = None, stages: bool = False) -> dict:
    """One scan in a fresh process; ``tree``: a checkout whose ``overlap`` it uses
    (this file run as a script, the tree first on the path);
    ``cpus``: the CPUs it is pinned to, with as many kernel threads."""
    cmd = [sys.executable, "-m", "bench.stream_contamination", "--scan", corpus,
           "--eval-file", ev_path, "--chunk-rows", str(args.chunk_rows),
           "--min-score", str(args.min_score), "--index", index, "--engine", engine]
    threads = len(cpus) if cpus else args.threads
    if threads:
        cmd += ["--threads", str(threads)]
    if not prefetch:
        cmd += ["--no-prefetch"]
    if stages:
        cmd += ["--stage-scan"]
    env, cwd = None, None
    if tree is not None:  # this file's scan() (the same figures), the tree's overlap
        cmd[1:3] = [os.path.abspath(__file__)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (tree, os.environ.get("PYTHONPATH")) if p))
        cwd = tree
    pin = None
    if cpus:
        def pin():  # in the child, before it execs: every thread it starts inherits it
            os.sched_setaffinity(0, cpus)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=env, cwd=cwd,
                         preexec_fn=pin)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    if cpus and r["cpus"] != sorted(cpus):
        raise SystemExit(f"--cores: the scan ran on CPUs {r['cpus']}, not {sorted(cpus)}")
    return r


def print_stages(sources: dict, formats: list[str], ev_path: str, args,
                 cores: list[int]) -> None:
    """Each stage alone (:func:`stages`), best of ``--repeat`` per stage, at every
    core count: wall time, speed-up over the first count, cores busy."""
    usable = sorted(os.sched_getaffinity(0))
    for fmt in formats:
        best: dict = {}
        for _ in range(max(1, args.repeat)):
            for k in cores or [None]:
                r = run_scan(sources[fmt], ev_path, args, args.index, "arrow",
                             cpus=usable[:k] if k else None, stages=True)
                for stage, (wall, cpu) in r["stages"].items():
                    if (k, stage) not in best or wall < best[k, stage][0]:
                        best[k, stage] = (wall, cpu)
        for k in cores or [None]:
            parts = []
            for stage in ("read", "tokenize", "search"):
                wall, cpu = best[k, stage]
                speed = ""
                if cores:
                    speed = f" {best[cores[0], stage][0] / wall:.2f}x"
                parts.append(f"{stage} {wall:5.2f}s{speed} ({cpu / wall:.2f} busy)")
            where = f"cores={k:<2d}" if k is not None else "cores=all"
            print(f"stages   {fmt:8s} {where}: " + ", ".join(parts))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gb", type=float, default=5.0, help="corpus size in GB (default 5)")
    ap.add_argument("--shard-mb", type=int, default=500, help="shard size in MB (default 500)")
    ap.add_argument("--eval", type=int, default=1000, help="eval samples (default 1000)")
    ap.add_argument("--chunk-rows", type=int, default=65536, help="rows per chunk (default 65536)")
    ap.add_argument("--min-score", type=float, default=0.0, help="min_score (default 0)")
    ap.add_argument("--index", default="auto", help="auto, chunk or queries (default auto)")
    ap.add_argument("--compare-index", action="store_true",
                    help="scan with index=chunk and index=queries too, and check equality")
    ap.add_argument("--threads", type=int, default=None, help="kernel threads (default all)")
    ap.add_argument("--cores", default=None, metavar="LIST",
                    help="comma-separated core counts, e.g. 1,2,4: each scan pinned to that "
                         "many CPUs, with as many kernel threads (default: not pinned)")
    ap.add_argument("--dir", default=None, help="where to write the corpus (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the corpus afterwards")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--formats", default="jsonl",
                    help="comma-separated corpus formats scanned: jsonl, gz (gzip JSONL "
                         "shards), zst (Zstandard JSONL shards), parquet, csv (default jsonl)")
    ap.add_argument("--engines", default="arrow",
                    help="comma-separated readers: arrow, python (default arrow)")
    ap.add_argument("--engine", default="auto", help=argparse.SUPPRESS)
    ap.add_argument("--no-prefetch", action="store_true",
                    help="read and tokenize on the searching thread (no pipelining)")
    ap.add_argument("--repeat", type=int, default=1, help="scans per setting; the best is "
                    "reported (default 1)")
    ap.add_argument("--baseline", default=None, metavar="TREE",
                    help="a checkout built in place (e.g. the previous main) whose overlap "
                         "scans every setting too, in turn with this tree's")
    ap.add_argument("--scan", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--stages", action="store_true",
                    help="also time each stage alone (reading, tokenizing, searching) "
                         "at every --cores count: which one bounds the scan")
    ap.add_argument("--eval-file", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--stage-scan", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.scan:
        return stages(args) if args.stage_scan else scan(args)
    usable = sorted(os.sched_getaffinity(0))
    cores = parse_cores(args.cores, usable)
    if cores and args.threads:
        raise SystemExit("--cores sets the kernel threads of each scan; leave out --threads")

    work = tempfile.mkdtemp(prefix="overlap-stream-", dir=args.dir)
    corpus = os.path.join(work, "corpus")
    os.mkdir(corpus)
    try:
        free = shutil.disk_usage(work).free
        if free < args.gb * 1e9 * 1.1:
            raise SystemExit(f"{work}: {free / 1e9:.1f} GB free, the corpus needs {args.gb} GB")
        t0 = time.perf_counter()
        n_rows, pool = generate(corpus, args.gb, args.shard_mb, args.seed)
        gen_s = time.perf_counter() - t0
        texts, planted = eval_set(pool, n_rows, args.eval, args.seed)
        ev_path = os.path.join(work, "eval.json")
        with open(ev_path, "w") as f:
            json.dump(texts, f)
        sources = {"jsonl": corpus}
        formats = [f.strip() for f in args.formats.split(",") if f.strip()]
        for fmt in formats:
            if fmt != "jsonl":
                sources[fmt] = convert(corpus, os.path.join(work, fmt), fmt)
        jsonl_bytes = sum(os.path.getsize(os.path.join(corpus, p)) for p in os.listdir(corpus))
        grid = {}
        trees = [None] + ([os.path.abspath(args.baseline)] if args.baseline else [])
        for fmt in formats:
            for engine in [e.strip() for e in args.engines.split(",") if e.strip()]:
                if fmt == "parquet" and engine == "python":
                    continue  # Parquet is read by pyarrow either way
                best: dict = {}
                for _ in range(max(1, args.repeat)):
                    # in turn (trees, core counts): every setting sees the same machine
                    for k in cores or [None]:
                        for tree in trees:
                            r = run_scan(sources[fmt], ev_path, args, args.index, engine,
                                         not args.no_prefetch, tree,
                                         usable[:k] if k else None)
                            if (k, tree) not in best or r["seconds"] < best[k, tree]["seconds"]:
                                best[k, tree] = r
                for (k, tree), r in best.items():
                    grid[fmt, engine, k, tree] = r
                    if tree is not None and os.path.realpath(r["tree"]) != os.path.realpath(tree):
                        raise SystemExit(f"--baseline: the scan imported overlap from "
                                         f"{r['tree']}, not {tree}")
        first = next(iter(grid.values()))
        for (fmt, engine, k, tree), r in grid.items():
            assert r["index"] == first["index"] and r["score"] == first["score"], (fmt, engine, k)
            files = sum(os.path.getsize(os.path.join(sources[fmt], p))
                        for p in os.listdir(sources[fmt]))
            who = "baseline" if tree is not None else "this tree"
            extra = ""
            if tree is not None:
                mine = grid[fmt, engine, k, None]["seconds"]
                extra += f", this tree {r['seconds'] / mine:.2f}x faster"
            if k is not None:
                one = grid[fmt, engine, cores[0], tree]["seconds"]
                extra += (f", {one / r['seconds']:.2f}x {cores[0]} core(s)' speed, "
                          f"CPU {r['cpu_seconds']:.2f}s ({r['cpu_seconds'] / r['seconds']:.2f} "
                          f"cores busy)")
            where = f" cores={k:<2d}" if k is not None else ""
            print(f"{fmt:8s} engine={engine:6s}{where} {who:9s}: {r['seconds']:6.2f}s  "
                  f"{jsonl_bytes / 1e6 / r['seconds']:6.1f} MB/s of JSONL text "
                  f"({files / 1e6:.0f} MB of files), peak RSS {r['peak_rss'] / 1e6:.0f} MB"
                  f"{extra}")
        if args.stages:
            print_stages(sources, formats, ev_path, args, cores)
        runs = {args.index: grid.get(("jsonl", "arrow", cores[-1] if cores else None, None))
                or first}
        if args.compare_index:
            for how in ("chunk", "queries"):
                if how not in runs:
                    runs[how] = run_scan(corpus, ev_path, args, how)
            first = next(iter(runs.values()))
            for how, r in runs.items():
                assert r["index"] == first["index"] and r["score"] == first["score"], how
        main_run = runs[args.index]
        idx = np.array(main_run["index"])
        score = np.array(main_run["score"])
        found = int((idx[: len(planted)] == planted).sum())
        size = sum(os.path.getsize(os.path.join(corpus, p)) for p in os.listdir(corpus))
        print(f"corpus: {size / 1e9:.2f} GB in {len(os.listdir(corpus))} shards, {n_rows} rows "
              f"(generated in {gen_s:.0f}s); eval: {len(texts)} samples, {len(planted)} planted")
        for how, r in runs.items():
            print(f"scan index={how}: {r['seconds']:.0f}s "
                  f"({r['bytes'] / 1e6 / r['seconds']:.1f} MB/s, "
                  f"{r['rows'] / r['seconds']:.0f} rows/s), peak RSS "
                  f"{r['peak_rss'] / 1e6:.0f} MB (after import: "
                  f"{r['rss_after_import'] / 1e6:.0f} MB), chunks {r['chunks']}")
        print(f"planted found at their source row: {found}/{len(planted)}; "
              f"eval samples with score >= 0.8: {int((score >= 0.8).sum())}, "
              f"== 1.0: {int((score == 1.0).sum())}; chunk_rows={args.chunk_rows}")
    finally:
        if args.keep:
            print(f"corpus kept in {corpus}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
