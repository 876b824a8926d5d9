"""Wall time and peak memory of the in-memory pipeline commands on generated JSONL.

Writes seeded JSONL files into a temporary directory (rows ``{"id", "text",
"label"}``, the texts of :mod:`bench.stream_contamination`: 10-60 Zipf words
and a unique id token, about 230 bytes a row):

- ``train.jsonl`` (``--train-mb``, default 35 MB) and ``eval.jsonl``
  (``--eval`` rows: half are train rows with one token dropped, half unseen
  texts), for ``overlap scan eval.jsonl --train train.jsonl --out scores.jsonl``;
- ``dedup.jsonl`` (``--dedup-mb``, default 100 MB; one row in 20 repeats an
  earlier row's words under its own id token), for ``overlap dedup dedup.jsonl
  --out kept.jsonl``.

Each command runs in a fresh process, once per reader engine
(``OVERLAP_READER=arrow`` and ``python``); its wall time and peak resident
memory (``VmHWM`` of that process) are printed with the ratio to the input
file, and the output files of the two engines are compared byte for byte.
The files are deleted at the end (``--keep`` keeps them).

``--stages`` also prints where the peak is reached: the child probes its
resident memory when each step of the command starts and ends (reading,
tokenizing, the index's flat copy of the rows, its vocabularies and
postings, ``ReferenceIndex``, the join, the passes, reading the file again
(``overlap.pipeline.reread``), the writing), with the
peak since the previous probe (the mark is reset at every probe through
``/proc/self/clear_refs``, Linux).

Run from the repository root::

    python -m bench.table_memory                       # 35 MB scan, 100 MB dedup
    python -m bench.table_memory --train-mb 10 --dedup-mb 20 --engines arrow
    python -m bench.table_memory --max-words 3 --commands dedup   # short rows, about 70 bytes
    python -m bench.table_memory --commands dedup --engines arrow --stages

(``--max-words N`` keeps the first N words of each text: short rows, where a
Python ``str`` per row costs most against the text itself.)
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench.stream_contamination import POOL, _pool, _status

#: every this many rows, one repeats an earlier row's words (a near duplicate)
DUP_EVERY = 20


def _text(pool: list[str], src: int, i: int, words: int | None) -> str:
    """Row ``i``'s text: pool entry of row ``src`` (its first ``words`` words) and an id token."""
    text = pool[(src * 7919) % POOL]
    if words is not None:
        text = " ".join(text.split(" ", words)[:words])
    return f"{text} d{i}"


def _rows(pool: list[str], n_first: int, target: int, dups: bool, words: int | None):
    """JSONL lines of about ``target`` bytes, rows numbered from ``n_first``."""
    r, size = n_first, 0
    while size < target:
        block = []
        for i in range(r, r + 10_000):
            src = i - 997 if dups and i % DUP_EVERY == 0 and i >= 997 else i
            text = _text(pool, src, i, words)
            block.append(json.dumps({"id": i, "text": text, "label": "abc"[i % 3]}) + "\n")
        chunk = "".join(block)
        size += len(chunk)
        r += len(block)
        yield chunk


def generate(work: str, train_mb: float, dedup_mb: float, n_eval: int, seed: int,
             words: int | None = None) -> dict:
    """Write train.jsonl, eval.jsonl and dedup.jsonl; return their paths."""
    pool = _pool(np.random.default_rng(seed))
    paths = {k: os.path.join(work, f"{k}.jsonl") for k in ("train", "eval", "dedup")}
    n_train = 0
    with open(paths["train"], "w") as f:
        for chunk in _rows(pool, 0, int(train_mb * 1e6), False, words):
            f.write(chunk)
            n_train += chunk.count("\n")
    rng = np.random.default_rng(seed + 1)
    planted = np.sort(rng.choice(n_train, n_eval // 2, replace=False)).tolist()
    with open(paths["eval"], "w") as f:
        for k, r in enumerate(planted):
            toks = _text(pool, r, r, words).split()
            del toks[int(rng.integers(0, len(toks) - 1))]  # drop one token (never the id)
            f.write(json.dumps({"id": k, "text": " ".join(toks), "label": "x"}) + "\n")
        for k in range(n_eval - len(planted)):  # pool entries no train row took
            f.write(json.dumps({"id": len(planted) + k,
                                "text": _text(pool, n_train + k, n_train + k, words),
                                "label": "y"}) + "\n")
    with open(paths["dedup"], "w") as f:
        for chunk in _rows(pool, 0, int(dedup_mb * 1e6), True, words):
            f.write(chunk)
    return paths


#: the steps ``--stages`` probes: (module, attribute), called through that attribute
STAGES = (
    ("overlap.pipeline.tables", "read_named_columns"),
    ("overlap.pipeline.scanning", "tokenize_fields"),
    ("overlap._index", "collection"),
    ("overlap._index", "reference_index"),
    ("overlap._index", "vocabularies"),
    ("overlap._kernels._postings", "build_postings"),
    ("overlap._kernels._postings_search", "ReferenceIndex"),
    ("overlap.search", "OverlapIndex._join"),
    ("overlap.search", "OverlapIndex.max_overlap"),
    ("overlap.dedup", "dedup_from_edges"),
    ("overlap.pipeline.reread", "TableAgain.read"),
    ("overlap.pipeline.tables", "write_table"),
)


class StageProbes:
    """Resident memory at the start and end of every step of :data:`STAGES`.

    Each probe records ``(label, seconds, rss, peak)``: the resident memory
    then and the highest since the previous probe; the peak mark is reset at
    every probe (``/proc/self/clear_refs``), so the largest ``peak`` is the
    command's.
    """

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.rows: list[tuple[str, float, int, int]] = []

    def probe(self, label: str) -> None:
        self.rows.append((label, time.perf_counter() - self.t0, _status("VmRSS"),
                          _status("VmHWM")))
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")

    def install(self) -> None:
        import functools
        import importlib

        for mod_name, attr in STAGES:
            owner = importlib.import_module(mod_name)
            *path, name = attr.split(".")
            for part in path:
                owner = getattr(owner, part)
            fn = getattr(owner, name)

            def wrapped(*a, _fn=fn, _label=attr, **k):
                self.probe(f"start {_label}")
                try:
                    return _fn(*a, **k)
                finally:
                    self.probe(f"end {_label}")

            setattr(owner, name, functools.wraps(fn)(wrapped))


def child(cmd: list[str], stages: bool = False) -> None:
    """Child process: run the command line, then print its wall time and peak RSS
    (``VmHWM`` of this process: the parent's ``ru_maxrss`` would count the
    generator's memory the child inherited before ``exec``); with ``stages``,
    the probes of :class:`StageProbes` too."""
    from overlap.cli import main as overlap_main

    probes = StageProbes() if stages else None
    if probes is not None:
        probes.install()
        probes.probe("start")
    t0 = time.perf_counter()
    rc = overlap_main(cmd)
    secs = time.perf_counter() - t0
    fig = {"rc": rc, "seconds": secs, "peak_rss": _status("VmHWM")}
    if probes is not None:
        probes.probe("end")
        fig["stages"] = probes.rows
        fig["peak_rss"] = max(r[3] for r in probes.rows)
    print(json.dumps(fig))


def run(cmd: list[str], engine: str, threads: int | None, stages: bool = False) -> dict:
    """One command in a fresh process: wall seconds (imports excluded) and peak RSS in
    bytes (and the probes of :class:`StageProbes` with ``stages``)."""
    env = dict(os.environ, OVERLAP_READER=engine)
    if threads:
        cmd = cmd + ["--threads", str(threads)]
    flag = ["--child-stages"] if stages else ["--child"]
    out = subprocess.run([sys.executable, "-m", "bench.table_memory", *flag, *cmd, "-q"],
                         env=env, check=True, stdout=subprocess.PIPE, text=True)
    fig = json.loads(out.stdout.strip().splitlines()[-1])
    if fig["rc"]:
        raise SystemExit(f"{' '.join(cmd)}: exit status {fig['rc']}")
    return fig


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train-mb", type=float, default=35, help="train file in MB (default 35)")
    ap.add_argument("--dedup-mb", type=float, default=100, help="dedup input in MB (default 100)")
    ap.add_argument("--eval", type=int, default=2000, help="eval rows (default 2000)")
    ap.add_argument("--engines", default="arrow,python",
                    help="comma-separated readers: arrow, python (default both)")
    ap.add_argument("--max-words", type=int, default=None,
                    help="keep the first N words of each text (short rows; default all)")
    ap.add_argument("--commands", default="scan,dedup",
                    help="comma-separated commands run: scan, dedup (default both)")
    ap.add_argument("--threads", type=int, default=None, help="kernel threads (default all)")
    ap.add_argument("--dir", default=None, help="where to write the files (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the files afterwards")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stages", action="store_true",
                    help="also print the resident memory at every step of each command")
    ap.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    ap.add_argument("--child-stages", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child)
    if args.child_stages:
        return child(args.child_stages, stages=True)
    work = tempfile.mkdtemp(prefix="overlap-tablemem-", dir=args.dir)
    try:
        t0 = time.perf_counter()
        p = generate(work, args.train_mb, args.dedup_mb, args.eval, args.seed, args.max_words)
        print(f"generated in {time.perf_counter() - t0:.0f}s: " + ", ".join(
            f"{k} {os.path.getsize(v) / 1e6:.1f} MB" for k, v in p.items()), flush=True)
        engines = [e.strip() for e in args.engines.split(",") if e.strip()]
        commands = {c.strip() for c in args.commands.split(",") if c.strip()}
        outputs: dict[str, list[str]] = {c: [] for c in ("scan", "dedup") if c in commands}
        for engine in engines:
            scores = os.path.join(work, f"scores-{engine}.jsonl")
            kept = os.path.join(work, f"kept-{engine}.jsonl")
            for what, cmd, size, out in (
                ("scan --train", ["scan", p["eval"], "--train", p["train"], "--out", scores],
                 os.path.getsize(p["train"]), scores),
                ("dedup", ["dedup", p["dedup"], "--out", kept],
                 os.path.getsize(p["dedup"]), kept),
            ):
                if cmd[0] not in commands:
                    continue
                fig = run(cmd, engine, args.threads, args.stages)
                outputs[what.split()[0]].append(out)
                print(f"{engine:>6} {what:<13} {size / 1e6:6.1f} MB: {fig['seconds']:6.2f} s, "
                      f"peak RSS {fig['peak_rss'] / 1e6:7.1f} MB "
                      f"({fig['peak_rss'] / size:.1f}x the file)", flush=True)
                for label, secs, rss, peak in fig.get("stages", []):
                    print(f"{'':>8}{secs:7.2f} s  {label:<38} RSS {rss / 1e6:7.1f} MB, "
                          f"peak since the last {peak / 1e6:7.1f} MB", flush=True)
        for what, files in outputs.items():
            same = all(filecmp.cmp(files[0], f, shallow=False) for f in files[1:])
            if len(files) > 1:
                print(f"{what}: outputs of {', '.join(engines)} "
                      + ("identical" if same else "DIFFER"))
    finally:
        if args.keep:
            print(f"files kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
