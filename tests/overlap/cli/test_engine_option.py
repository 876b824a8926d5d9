"""``--engine``: every command that reads files writes the same files with either reader.

The commands run in this process (``overlap.cli.main``), so the test also
sees which reader ran: with ``--engine python`` the pyarrow readers are never
called, with ``--engine arrow`` they read the CSV corpus and the JSONL train
file, whatever the environment variable says.
"""

from __future__ import annotations

import csv
import json
import os

import pytest

from overlap import _arrow_csv, _batches
from overlap.cli import main

pytest.importorskip("pyarrow", reason="--engine arrow needs pyarrow")

TEXTS = ["the cat sat on the mat", "a dog, a cat\nand a bird", "今天天气真好", 'say "hi"',
         "the cat sat on a mat", "nothing alike at all", "007", "the dog sat on the mat"]


def _corpus(root) -> None:
    os.makedirs(root / "corpus")
    with open(root / "corpus" / "a.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "text"])
        w.writerows([[i, t] for i, t in enumerate(TEXTS)])
    with open(root / "corpus" / "b.tsv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, dialect="excel-tab")
        w.writerow(["text", "id"])
        w.writerows([[t.upper(), i] for i, t in enumerate(TEXTS)])
    with open(root / "train.jsonl", "w", encoding="utf-8") as f:
        for i, t in enumerate(TEXTS + TEXTS[:3]):
            f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")
    with open(root / "eval.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "text"])
        w.writerows([["q1", "The cat sat on the mat."], ["q2", "a bird and a dog"],
                     ["q3", "今天天气真好！"]])


COMMANDS = {
    "scan-stream": ["scan", "--train-stream", "corpus", "--eval", "eval.csv", "--chunk-rows", "3",
                    "--out", "OUT/scores.csv"],
    "scan": ["scan", "--train", "train.jsonl", "--eval", "eval.csv", "--out", "OUT/scores.csv"],
    "dedup": ["dedup", "train.jsonl", "--threshold", "0.6", "--out", "OUT/kept.jsonl",
              "--report", "OUT/report.json"],
    "decontaminate": ["decontaminate", "--train", "train.jsonl", "--test", "eval.csv",
                      "--fields", "text", "--threshold", "0.5", "--out", "OUT"],
    "contamination": ["contamination", "--eval", "eval.csv", "--corpus", "corpus", "--ngram",
                      "2", "--chunk-rows", "2", "--out", "OUT/report.csv"],
}


def _files(folder) -> dict:
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        if name.endswith(".json"):  # timings differ from run to run
            data = json.loads(data)
            for key in ("timings", "timing_s", "time"):
                data.pop(key, None)
        out[name] = data
    return out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_python_and_arrow_engines_write_the_same_files(tmp_path, monkeypatch, command):
    _corpus(tmp_path)
    monkeypatch.chdir(tmp_path)
    calls = {"n": 0}
    for module, name in ((_arrow_csv, "_arrow_block"), (_batches, "_jsonl_table_block"),
                         (_batches, "_jsonl_block")):
        real = getattr(module, name)

        def spy(*a, _real=real, **k):
            calls["n"] += 1
            return _real(*a, **k)

        monkeypatch.setattr(module, name, spy)
    got = {}
    for engine, env in (("python", "arrow"), ("arrow", "python")):
        monkeypatch.setenv("OVERLAP_READER", env)  # --engine comes first
        os.makedirs("out")  # the same output names (reports name them)
        calls["n"] = 0
        argv = [a.replace("OUT", "out") for a in COMMANDS[command]]
        assert main([argv[0], "-q", "--engine", engine, *argv[1:]]) == 0
        assert (calls["n"] > 0) == (engine == "arrow"), (engine, calls)
        got[engine] = _files("out")
        os.rename("out", f"out-{engine}")
    assert got["python"] == got["arrow"]
    assert got["python"]


def test_engine_is_checked_by_the_parser(capsys):
    assert main(["dedup", "x.csv", "--out", "y.csv", "--engine", "rust"]) == 2
    assert "--engine: invalid choice: 'rust'" in capsys.readouterr().err
