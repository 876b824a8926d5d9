"""bench/report.py: tables and the results file from saved pytest-benchmark JSON.

Synthetic runs in pytest-benchmark's JSON layout (the fields report.py reads),
so nothing is timed here.  report.py is loaded by its path: bench/ is not
installed, and the repository root must not go on sys.path.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _load_report():
    spec = importlib.util.spec_from_file_location("bench_report", REPO / "bench" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report = _load_report()

G_2F = "search: top-1, test vs train, 2 fields"


def _bench(group, name, best, median=None, rounds=5, **extra):
    return {"group": group, "name": name, "fullname": f"bench/x.py::{name}",
            "params": None, "extra_info": extra,
            "stats": {"min": best, "median": best if median is None else median,
                      "rounds": rounds, "mean": best, "max": best}}


def _run(tmp_path, name, benchmarks, *, when="2026-12-04T21:00:00+00:00", commit="a" * 40,
         command="python -m pytest bench/test_bench_search.py --benchmark-only",
         cpu="Test CPU 9000", dirty=False):
    data = {
        "machine_info": {"cpu_model": cpu, "logical_cpus": 2, "overlap_threads": 2,
                         "openmp_enabled": True, "system": "Linux", "release": "6.1",
                         "python_implementation": "CPython", "python_version": "3.11.7",
                         "overlap": "0.2.0", "numpy": "2.4.6", "scipy": "1.17.1",
                         "peers": {"datasketch": "2.0.0"},
                         "env": {"OMP_NUM_THREADS": None, "OPENBLAS_CORETYPE": None},
                         "command": command},
        "commit_info": {"id": commit, "branch": "main", "dirty": dirty},
        "benchmarks": benchmarks, "datetime": when, "version": "5.3.1",
    }
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


SEARCH = [
    _bench(G_2F, "test_ours_prebuilt_index[2f-bitslice-all-threads]", 0.05, 0.06),
    _bench(G_2F, "test_ours_prebuilt_index[2f-bitslice-1-thread]", 0.1, 0.11),
    _bench(G_2F, "test_ours_prebuilt_index[2f-postings-all-threads]", 0.5),
    _bench(G_2F, "test_scipy_brute_force[2f]", 25.0, rounds=1, build_seconds=0.2),
]


def test_results_file_names_machine_date_commit_and_command(tmp_path):
    path = _run(tmp_path, "0001_run.json", SEARCH)
    out = tmp_path / "RESULTS.md"
    assert report.main(["--write", str(out), str(path)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Benchmark results\n")
    assert f"python -m bench.report --write {out} {path}" in text
    assert "`0001_run.json`: 2026-12-04T21:00:00+00:00, commit aaaaaaaaaa (main)" in text
    assert "command: `python -m pytest bench/test_bench_search.py --benchmark-only`" in text
    assert "Test CPU 9000, 2 logical CPUs; 2 threads by default, OpenMP on" in text
    assert "numpy 2.4.6, scipy 1.17.1" in text and "peers: datasketch 2.0.0" in text
    assert "none of the recorded variables set" in text
    assert not list(tmp_path.glob("*.tmp"))


def test_group_table_ratios_baseline_and_order(tmp_path):
    benches, runs = report.load([_run(tmp_path, "r.json", SEARCH)])
    lines = report.group_tables(benches)
    rows = [ln for ln in lines if ln.startswith("| test_")]
    assert [r.split(" | ")[0] for r in rows] == [  # fastest first
        "| test_ours_prebuilt_index[2f-bitslice-all-threads] (baseline)",
        "| test_ours_prebuilt_index[2f-bitslice-1-thread]",
        "| test_ours_prebuilt_index[2f-postings-all-threads]",
        "| test_scipy_brute_force[2f]",
    ]
    assert rows[0].split(" | ")[1:5] == ["0.050", "0.060", "5", "1.0"]
    assert rows[3].split(" | ")[1:6] == ["25.00", "25.00", "1", "500.0", "build_seconds=0.2 |"]
    assert not any("several runs" in ln for ln in lines)


def test_thread_and_goal_tables(tmp_path):
    benches, _ = report.load([_run(tmp_path, "r.json", SEARCH)])
    threads = report.thread_table(benches)
    assert "| test_ours_prebuilt_index[2f-bitslice] | 0.050 | 0.100 | 2.00 |" in threads
    assert len([ln for ln in threads if ln.startswith("| test_")]) == 1  # pairs only
    goals = report.goal_table(benches)
    row = next(ln for ln in goals if ln.startswith("| top-1 two fields, test vs train |"))
    assert row == "| top-1 two fields, test vs train | 0.050 | 0.1 | yes; speed-up yes | 500 | ≥ 250× |"
    assert not any("scale 1M" in ln for ln in goals)  # not run: no row
    assert report.goal_table({}) == [] and report.thread_table({}) == []


def test_groups_without_a_listed_baseline_take_our_all_threads_row(tmp_path):
    g = "krippendorff-ordinal"
    benches, _ = report.load([_run(tmp_path, "m.json", [
        _bench(g, "test_alpha_ours[ordinal-1-thread]", 0.04),
        _bench(g, "test_alpha_ours[ordinal-all-threads]", 0.02),
        _bench(g, "test_alpha_package[ordinal]", 2.0, rounds=1),
    ])])
    text = "\n".join(report.group_tables(benches))
    assert "| test_alpha_ours[ordinal-all-threads] (baseline) |" in text
    assert "| test_alpha_package[ordinal] | 2.00 | 2.00 | 1 | 100.0 |" in text


def test_later_runs_override_and_mixed_groups_say_so(tmp_path):
    first = _run(tmp_path, "0001.json", [
        _bench(G_2F, "test_ours_prebuilt_index[2f-bitslice-all-threads]", 0.09),
        _bench(G_2F, "test_ours_prebuilt_index[2f-previous-kernel-all-threads]", 0.7),
    ], command=None, commit="b" * 40, dirty=True, cpu="Other CPU")
    second = _run(tmp_path, "0002.json", SEARCH[:1])
    benches, runs = report.load([first, second])
    assert benches["test_ours_prebuilt_index[2f-bitslice-all-threads]"]["stats"]["min"] == 0.05
    # the postings kernel's old id is read under its new name
    assert "test_ours_prebuilt_index[2f-postings-all-threads]" in benches
    assert any("several runs" in ln for ln in report.group_tables(benches))
    text = report.results_file(benches, runs, ["0001.json", "0002.json"])
    assert "commit bbbbbbbbbb (main), uncommitted changes" in text
    assert "command: not recorded" in text
    assert "different machines" in text


def test_printing_and_no_saved_run(tmp_path, monkeypatch, capsys):
    path = _run(tmp_path, "r.json", SEARCH)
    assert report.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Run 2026-12-04T21:00:00+00:00: Test CPU 9000")
    assert f"### {G_2F}" in out
    monkeypatch.chdir(tmp_path)  # no .benchmarks/ here
    assert report.main([]) == 1
    assert "no .benchmarks" in capsys.readouterr().err


def test_the_benchmark_ids_named_here_exist():
    """report.py's baselines and goals name benchmarks the suites define."""
    ids = set()
    for f in (REPO / "bench").glob("test_bench_*.py"):
        ids.update(_ids(f.read_text(encoding="utf-8")))
    named = set(report.BASELINE.values()) | {g[1] for g in report.GOALS}
    named |= {g[3] for g in report.GOALS if g[3]}
    missing = {n for n in named if n.split("[")[0] not in ids}
    assert not missing, missing


def _ids(source: str) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}
