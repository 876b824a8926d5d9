"""Summarize pytest-benchmark JSON files as the Markdown tables of bench/README.md.

Usage::

    python -m bench.report [FILE.json ...]

With no file, the newest ``.benchmarks/*/*.json`` is read.  With several, later
files override earlier ones benchmark by benchmark (so a rerun of a few groups
can be laid over a full run).  Prints, per group, every benchmark with its
median time and its ratio to our baseline in that group, then our goals.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: Our row that every peer of a group is compared with (all threads).  For the
#: self-join the peers build their index inside the timed region, so the
#: baseline is our end-to-end call there.
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
        "work_seconds", "same_index_as_dice_top1", "build_seconds")


def _load(paths: list[Path]) -> tuple[dict, dict]:
    benches: dict = {}
    machine: dict = {}
    for p in paths:
        data = json.loads(p.read_text())
        machine = data.get("machine_info", machine)
        machine["_datetime"] = data.get("datetime")
        for b in data["benchmarks"]:
            benches[b["name"]] = b
    return benches, machine


def _fmt(s: float) -> str:
    if s >= 100:
        return f"{s:.0f}"
    if s >= 1:
        return f"{s:.2f}"
    return f"{s:.3f}"


def _extra(b: dict) -> str:
    ex = b.get("extra_info", {})
    parts = [f"{k}={ex[k]}" for k in SHOW if k in ex]
    return ", ".join(parts)


def render(benches: dict, machine: dict) -> str:
    out = []
    groups: dict[str, list] = {}
    for b in benches.values():
        groups.setdefault(b["group"] or "(no group)", []).append(b)
    for g in sorted(groups):
        rows = sorted(groups[g], key=lambda b: b["stats"]["median"])
        base = benches.get(BASELINE.get(g, ""))
        out.append(f"\n#### {g}\n")
        out.append("| benchmark | median s | rounds | × ours | notes |")
        out.append("| --- | ---: | ---: | ---: | --- |")
        for b in rows:
            med = b["stats"]["median"]
            ratio = "" if base is None else f"{med / base['stats']['median']:.1f}"
            name = b["name"] + (" (baseline)" if base is b else "")
            out.append(f"| {name} | {_fmt(med)} | {b['stats']['rounds']} | {ratio} | "
                       f"{_extra(b)} |")
    out.append("\n#### Goals (ours, all threads)\n")
    out.append("| goal | ours median s | goal s | meets | peer × | speed-up goal |")
    out.append("| --- | ---: | ---: | --- | ---: | ---: |")
    for desc, name, goal, peer, speedup in GOALS:
        b = benches.get(name)
        if b is None:
            out.append(f"| {desc} | not run | {goal} | | | |")
            continue
        med = b["stats"]["median"]
        p = benches.get(peer) if peer else None
        ratio = f"{p['stats']['median'] / med:.0f}" if p else ""
        meets = "yes" if med <= goal else f"no ({med / goal:.1f}× over)"
        if speedup and p:
            meets += "; speed-up " + ("yes" if p["stats"]["median"] / med >= speedup else "no")
        out.append(f"| {desc} | {_fmt(med)} | {goal} | {meets} | {ratio} | "
                   f"{'≥ ' + str(speedup) + '×' if speedup else ''} |")
    head = (f"Run {machine.get('_datetime')}: {machine.get('cpu_model')}, "
            f"{machine.get('logical_cpus')} cores, numpy {machine.get('numpy')}, "
            f"scipy {machine.get('scipy')}, env {machine.get('env')}")
    return head + "\n" + "\n".join(out)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv]
    if not paths:
        found = sorted(Path(".benchmarks").glob("*/*.json"), key=lambda p: p.stat().st_mtime)
        if not found:
            print("no .benchmarks/*/*.json found; run with --benchmark-autosave first",
                  file=sys.stderr)
            return 1
        paths = [found[-1]]
    print(render(*_load(paths)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
