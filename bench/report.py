"""Markdown tables from saved pytest-benchmark JSON, and the results file.

Usage::

    python -m bench.report [FILE.json ...]                      # print the tables
    python -m bench.report --write bench/RESULTS.md FILE.json ...  # write the results file

With no file, the newest ``.benchmarks/*/*.json`` is read.  With several, later
files override earlier ones benchmark by benchmark (so a rerun of a few groups
can be laid over a full run; a group whose rows come from several files says
so, since its ratios then span runs).  Per group: every benchmark with its best
and median time and its ratio to our baseline in that group; then one thread
against all threads, and our goals.  The results file adds where the figures
come from: the machine, the date, the commit and the command of every run,
from the JSON's metadata (``bench/conftest.py`` records the command).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

#: Our row that every peer of a group is compared with (all threads).  For the
#: self-join the peers build their index inside the timed region, so the
#: baseline is our end-to-end call there.  Groups not named here take their
#: first ``*_ours*`` row on all threads (or without a thread variant).
BASELINE = {
    "search: top-1, test vs train, 2 fields": "test_ours_prebuilt_index[2f-bitslice-all-threads]",
    "search: top-1, test+valid vs train, 2 fields":
        "test_ours_prebuilt_index[test+valid-bitslice-all-threads]",
    "search: top-1, test vs train, context only":
        "test_ours_prebuilt_index[ctx-bitslice-all-threads]",
    "search: top-5, test vs train, 2 fields":
        "test_ours_prebuilt_index[top5-bitslice-all-threads]",
    "search: all-vs-rest, 13,118 dialogues as units":
        "test_ours_prebuilt_index[units-bitslice-all-threads]",
    "join: test vs train contexts, Dice >= 0.8": "test_ours_rs_prebuilt[all-threads]",
    "join: train contexts self-join, Dice >= 0.8": "test_ours_self_end_to_end[all-threads]",
    "dedup: 13,118 dialogues, all-vs-rest + dedup at 0.8":
        "test_ours_all_vs_rest_and_dedup[all-threads]",
    "dedup: 13,118 dialogues, dedup only at 0.8": "test_ours_dedup[all-threads]",
    "tokenize: every W text, wordpunct": "test_ours_from_texts[all-threads]",
    "inflate: JSONL shard as .gz, 2 MiB reads": "test_ours[isal]",
}

#: (description, benchmark name, goal seconds, peer name for a speed-up goal, speed-up)
GOALS = [
    ("top-1 two fields, test vs train", "test_ours_prebuilt_index[2f-bitslice-all-threads]",
     0.1, "test_scipy_brute_force[2f]", 250),
    ("top-1 two fields, test+valid vs train",
     "test_ours_prebuilt_index[test+valid-bitslice-all-threads]", 0.2, None, None),
    ("top-1 context only, test vs train",
     "test_ours_prebuilt_index[ctx-bitslice-all-threads]", 0.03, None, None),
    ("top-5 two fields, test vs train", "test_ours_prebuilt_index[top5-bitslice-all-threads]",
     0.3, None, None),
    ("all-vs-rest + dedup, 13,118 dialogues",
     "test_ours_all_vs_rest_and_dedup[all-threads]", 0.5, None, None),
    ("join Dice >= 0.8, test vs train contexts", "test_ours_rs_prebuilt[all-threads]", 0.2,
     "test_setsimilaritysearch_rs", 100),
    ("self-join Dice >= 0.8, train contexts (end to end)",
     "test_ours_self_end_to_end[all-threads]", 1.0, "test_setsimilaritysearch_self", None),
    ("TokenSets.from_texts, every W text", "test_ours_from_texts[all-threads]", 0.3, None,
     None),
    ("scale 1M: self-join at 0.8", "test_scale[join-1M-all-threads]", 20.0, None, None),
    ("scale 1M: 100k queries, min_score=0.5", "test_scale[search-1M-all-threads]", 30.0,
     None, None),
]

SHOW = ("recall", "precision", "candidates", "pairs", "removed", "peak_rss_mb",
        "work_seconds", "same_index_as_dice_top1", "build_seconds", "error_vs_exact")

#: benchmark ids renamed since older saved runs: old -> new
RENAMED = {"-previous-kernel-": "-postings-"}

ALL, ONE = "all-threads", "1-thread"


def _name(name: str) -> str:
    for old, new in RENAMED.items():
        name = name.replace(old, new)
    return name


def load(paths: list[Path]) -> tuple[dict, list[dict]]:
    """Benchmarks by name (later files win) and each file's metadata."""
    benches: dict = {}
    runs = []
    for i, p in enumerate(paths):
        data = json.loads(Path(p).read_text(encoding="utf-8"))
        runs.append({"file": str(p), "datetime": data.get("datetime"),
                     "machine": data.get("machine_info", {}),
                     "commit": data.get("commit_info", {})})
        for b in data["benchmarks"]:
            b = dict(b, name=_name(b["name"]), _run=i)
            benches[b["name"]] = b
    return benches, runs


def _fmt(s: float) -> str:
    if s >= 100:
        return f"{s:.0f}"
    if s >= 1:
        return f"{s:.2f}"
    if s >= 0.01:
        return f"{s:.3f}"
    return f"{s:.2g}"


def _best(b: dict) -> float:
    return b["stats"]["min"]


def _extra(b: dict) -> str:
    ex = b.get("extra_info", {})
    return ", ".join(f"{k}={ex[k]}" for k in SHOW if k in ex)


def _baseline(group: str, rows: list[dict], benches: dict) -> dict | None:
    if group in BASELINE:
        return benches.get(BASELINE[group])
    ours = [b for b in rows if "_ours" in b["name"]]
    for b in ours:
        if ALL in b["name"] or ONE not in b["name"]:
            return b
    return None


def group_tables(benches: dict) -> list[str]:
    out = []
    groups: dict[str, list] = {}
    for b in benches.values():
        groups.setdefault(b.get("group") or "(no group)", []).append(b)
    for g in sorted(groups):
        rows = sorted(groups[g], key=_best)
        base = _baseline(g, rows, benches)
        out.append(f"\n### {g}\n")
        if len({b["_run"] for b in rows}) > 1:
            out.append("Rows from several runs: ratios across runs are not comparable.\n")
        out.append("| benchmark | best s | median s | rounds | × ours | notes |")
        out.append("| --- | ---: | ---: | ---: | ---: | --- |")
        for b in rows:
            ratio = "" if base is None else f"{_best(b) / _best(base):.1f}"
            name = b["name"] + (" (baseline)" if base is b else "")
            out.append(f"| {name} | {_fmt(_best(b))} | {_fmt(b['stats']['median'])} | "
                       f"{b['stats']['rounds']} | {ratio} | {_extra(b)} |")
    return out


def thread_table(benches: dict) -> list[str]:
    """Every benchmark run on all threads and on one: best times and their ratio."""
    rows = []
    for name, b in sorted(benches.items()):
        if ALL not in name:
            continue
        one = benches.get(name.replace(ALL, ONE))
        if one is None:
            continue
        same = "" if one["_run"] == b["_run"] else " (two runs)"
        short = name.replace("-" + ALL, "").replace("[" + ALL + "]", "").replace(ALL + "-", "")
        rows.append(f"| {short} | {_fmt(_best(b))} | "
                    f"{_fmt(_best(one))} | {_best(one) / _best(b):.2f}{same} |")
    if not rows:
        return []
    return ["\n## One thread against all threads\n",
            "| benchmark | all threads, best s | 1 thread, best s | 1 ÷ all |",
            "| --- | ---: | ---: | ---: |", *rows]


def goal_table(benches: dict) -> list[str]:
    rows = []
    for desc, name, goal, peer, speedup in GOALS:
        b = benches.get(name)
        if b is None:
            continue
        best = _best(b)
        p = benches.get(peer) if peer else None
        ratio = f"{_best(p) / best:.0f}" if p else ""
        meets = "yes" if best <= goal else f"no ({best / goal:.1f}× over)"
        if speedup and p:
            meets += "; speed-up " + ("yes" if _best(p) / best >= speedup else "no")
        rows.append(f"| {desc} | {_fmt(best)} | {goal} | {meets} | {ratio} | "
                    f"{'≥ ' + str(speedup) + '×' if speedup else ''} |")
    if not rows:
        return []
    return ["\n## Goals (ours, all threads)\n",
            "| goal | ours best s | goal s | meets | peer × | speed-up goal |",
            "| --- | ---: | ---: | --- | ---: | ---: |", *rows]


def _machine(m: dict) -> str:
    cpu = m.get("cpu_model") or m.get("cpu", {}).get("brand_raw") or m.get("processor")
    parts = [f"{cpu or 'unknown CPU'}, {m.get('logical_cpus', '?')} logical CPUs"]
    if "overlap_threads" in m:
        parts.append(f"{m['overlap_threads']} threads by default, OpenMP "
                     f"{'on' if m.get('openmp_enabled') else 'off'}")
    parts.append(f"{m.get('system', '?')} {m.get('release', '')}".strip())
    parts.append(f"{m.get('python_implementation', 'Python')} {m.get('python_version', '?')}")
    parts.append(", ".join(f"{k} {m[k]}" for k in ("overlap", "numpy", "scipy") if k in m))
    peers = m.get("peers") or {}
    if peers:
        parts.append("peers: " + ", ".join(f"{k} {v}" for k, v in peers.items()))
    env = {k: v for k, v in (m.get("env") or {}).items() if v is not None}
    parts.append("environment: " + (", ".join(f"{k}={v}" for k, v in env.items())
                                    if env else "none of the recorded variables set"))
    return "; ".join(p for p in parts if p)


def _commit(c: dict) -> str:
    if not c or not c.get("id"):
        return "not recorded"
    s = c["id"][:10]
    if c.get("branch"):
        s += f" ({c['branch']})"
    if c.get("dirty"):
        s += ", uncommitted changes"
    return s


def render(benches: dict, runs: list[dict]) -> str:
    """The tables alone (what ``python -m bench.report`` prints)."""
    head = [f"Run {r['datetime']}: {_machine(r['machine'])}" for r in runs]
    body = group_tables(benches) + thread_table(benches) + goal_table(benches)
    return "\n".join(head) + "\n" + "\n".join(body) + "\n"


def results_file(benches: dict, runs: list[dict], argv: list[str]) -> str:
    """bench/RESULTS.md: where the figures come from, then the tables."""
    out = ["# Benchmark results", "",
           "Generated from saved pytest-benchmark JSON by "
           f"`python -m bench.report {' '.join(argv)}`; do not edit by hand. How to run "
           "the benchmarks and read these tables: [README.md](README.md). Times are "
           "seconds, the best of the rounds (the median beside it); \"× ours\" is a "
           "row's best over our baseline's best in the same group.", "",
           "## Runs", ""]
    machines = {json.dumps(r["machine"].get("cpu_model")) for r in runs}
    for r in runs:
        cmd = r["machine"].get("command")
        out += [f"- `{Path(r['file']).name}`: {r['datetime'] or 'date not recorded'}, "
                f"commit {_commit(r['commit'])}",
                f"  - command: {'`' + cmd + '`' if cmd else 'not recorded'}",
                f"  - machine: {_machine(r['machine'])}"]
    if len(machines) > 1:
        out += ["", "**The runs are from different machines: compare ratios within a run.**"]
    body = goal_table(benches) + thread_table(benches)
    body += ["\n## Every group"] + group_tables(benches)
    return "\n".join(out) + "\n" + "\n".join(body) + "\n"


def _newest() -> list[Path]:
    found = sorted(Path(".benchmarks").glob("*/*.json"), key=lambda p: p.stat().st_mtime)
    return found[-1:]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.report",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path,
                    help="pytest-benchmark JSON files (default: the newest in .benchmarks/)")
    ap.add_argument("--write", type=Path, metavar="FILE",
                    help="write the results file (bench/RESULTS.md) instead of printing")
    args = ap.parse_args(argv)
    paths = args.files or _newest()
    if not paths:
        print("no .benchmarks/*/*.json found; run with --benchmark-autosave or "
              "--benchmark-json=FILE first", file=sys.stderr)
        return 1
    benches, runs = load(paths)
    if args.write is None:
        sys.stdout.write(render(benches, runs))
        return 0
    shown = [f"--write {args.write}", *(str(p) for p in paths)]
    text = results_file(benches, runs, shown)
    tmp = args.write.with_name(args.write.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(args.write)
    print(f"wrote {args.write} ({len(benches)} benchmarks from {len(paths)} run(s))")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
