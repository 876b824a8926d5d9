"""``overlap contamination``: the per-sample report and summary from the command line.

The files it writes must hold what :func:`overlap.contamination.contamination`
computes (checked against the plain-Python reference), the summary must count
the labels, inputs are never overwritten, and bad input fails in one line.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import overlap as _overlap_pkg

from reference import contamination as ref
from reference.datadir import shared_data_dir
from reference.interrupt import assert_interrupted, interrupt_after

PKG_ROOT = str(Path(_overlap_pkg.__file__).resolve().parent.parent)


def run(*args: str, cwd: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    return subprocess.run([sys.executable, "-m", "overlap", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def read_csv(path: Path) -> dict[str, list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return {h: [r[k] for r in rows[1:]] for k, h in enumerate(rows[0])}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """eval.csv (text, language) and shards/ (two JSONL shards and a text shard) with
    eval n-grams planted in the corpus, the last rows of a shard among them."""
    d = tmp_path_factory.mktemp("contamination")
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(300)]

    def sent(k):
        return " ".join(rng.choice(words, k))

    ev = [sent(int(rng.integers(14, 30))) for _ in range(10)] + ["", "w1 w2", "猫 狗 鱼"]
    langs = ["en", "de"] * 5 + ["en", "de", "zh"]
    corpus = [sent(int(rng.integers(0, 25))) for _ in range(40)]
    for k, row in enumerate([0, 9, 19, 20, 39]):
        toks = ev[k].split()
        corpus[row] += " " + " ".join(toks[: 11 + k])  # 11 to 15 tokens planted
    corpus[25] += " 我 猫 狗 鱼"
    with open(d / "eval.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "language"])
        w.writerows(zip(ev, langs))
    (d / "shards").mkdir()
    for name, (a, b) in (("a.jsonl", (0, 10)), ("b.jsonl", (10, 20))):
        with open(d / "shards" / name, "w", encoding="utf-8") as f:
            for t in corpus[a:b]:
                f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
    (d / "shards" / "c.txt").write_text("".join(t + "\n" for t in corpus[20:]),
                                        encoding="utf-8")
    (d / "corpus.json").write_text(json.dumps({"eval": ev, "langs": langs, "corpus": corpus}))
    return d


def loaded(d: Path):
    x = json.loads((d / "corpus.json").read_text())
    return x["eval"], x["langs"], x["corpus"]


def test_csv_report_matches_the_reference(data, tmp_path):
    out = tmp_path / "report.csv"
    r = run("contamination", "--eval", str(data / "eval.csv"), "--corpus", str(data / "shards"),
            "--rule", "any,palm", "--rule", "llama2", "--ngram", "3", "--by", "language",
            "--chunk-rows", "3", "--tokenizer", "intl", "--out", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ev, langs, corpus = loaded(data)
    t = read_csv(out)
    assert t["language"] == langs and t["sample"] == [str(i) for i in range(len(ev))]
    for n in (3, 8, 11, 13):
        want = ref.membership(ev, corpus, n, "intl")
        assert t[f"found_{n}"] == [str(w["n_found"]) for w in want]
        assert t[f"ngrams_{n}"] == [str(w["n_ngrams"]) for w in want]
        assert t[f"longest_run_{n}"] == [str(w["longest_run"]) for w in want]
        assert t[f"first_row_{n}"] == [str(w["first_row"]) for w in want]
        for i, w in enumerate(want):
            row = w["first_row"]
            if row < 0:
                assert t[f"shard_{n}"][i] == "" and t[f"match_{n}"][i] == ""
                continue
            shard, at = ("a.jsonl", row) if row < 10 else ("b.jsonl", row - 10) \
                if row < 20 else ("c.txt", row - 20)
            assert os.path.basename(t[f"shard_{n}"][i]) == shard
            assert t[f"shard_row_{n}"][i] == str(at) and t[f"match_{n}"][i] == corpus[row]
    labels = {}
    for rule in ("any", "palm", "llama2"):
        want = [ref.label(rule, m) for m in ref.membership(ev, corpus, ref.RULE_N[rule], "intl")]
        assert t[f"label_{rule}"] == want
        labels[rule] = want
    # the summary counts the labels per group and overall
    for group in ("en", "de", "zh"):
        idx = [i for i, g in enumerate(langs) if g == group]
        dirty = sum(labels["any"][i] == "dirty" for i in idx)
        assert f"{group}: {len(idx)} samples, any {dirty} dirty" in r.stdout
    dirty = sum(x == "dirty" for x in labels["palm"])
    assert f"overall: {len(ev)} samples" in r.stdout and f"palm {dirty} dirty" in r.stdout
    assert "1 eval sample(s) without a token" in r.stdout


def test_jsonl_report_and_default_rule(data, tmp_path):
    out = tmp_path / "report.jsonl"
    r = run("contamination", "--eval", str(data / "eval.csv"), "--corpus", str(data / "shards"),
            "--out", str(out), "--threads", "1", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    ev, _, corpus = loaded(data)
    want = ref.membership(ev, corpus, 13, "intl")
    assert [x["label_any"] for x in rows] == [ref.label("any", m) for m in want]
    assert [x["found_13"] for x in rows] == [m["n_found"] for m in want]
    assert "group" not in rows[0] and "label_palm" not in rows[0]


@pytest.mark.parametrize("args, msg", [
    (["--ngram", "0"], "n-gram lengths"),
    (["--ngram", "x"], "n-gram lengths"),
    (["--rule", "gpt4"], "unknown rule 'gpt4'"),
    (["--by", "country"], "no column 'country'"),
    (["--field", "body"], "no column 'body'"),
    (["--corpus-format", "xml"], "--corpus-format must be one of"),
    (["--out", "-"], "not to stdout"),
    (["--out", "report.txt"], "give a .csv, .jsonl, .tsv or .parquet file"),
])
def test_errors(data, tmp_path, args, msg):
    r = run("contamination", "--eval", str(data / "eval.csv"), "--corpus", str(data / "shards"),
            *args, cwd=tmp_path)
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]  # argparse prints its usage lines first
    assert last.startswith("overlap") and "error: " in last and msg in last, r.stderr
    assert "Traceback" not in r.stderr


def test_refuses_to_write_over_inputs(data, tmp_path):
    before = (data / "eval.csv").read_bytes()
    for target in (data / "eval.csv", data / "shards" / "a.jsonl"):
        r = run("contamination", "--eval", str(data / "eval.csv"), "--corpus",
                str(data / "shards"), "--out", str(target), "--overwrite", cwd=tmp_path)
        assert r.returncode == 2 and "input" in r.stderr, r.stderr
    assert (data / "eval.csv").read_bytes() == before


def test_missing_files(data, tmp_path):
    r = run("contamination", "--eval", str(tmp_path / "none.csv"), "--corpus",
            str(data / "shards"), cwd=tmp_path)
    assert r.returncode == 2 and "none.csv: no such file (--eval)" in r.stderr
    r = run("contamination", "--eval", str(data / "eval.csv"), "--corpus",
            str(tmp_path / "nowhere"), cwd=tmp_path)
    assert r.returncode == 2 and "no such file or folder (--corpus)" in r.stderr


def test_mint_by_language(tmp_path):
    """MINT (SemEval 2023 Task 9): test against train, per language, intl tokenizer."""
    d = shared_data_dir()
    mint = None if d is None else d / "mint"
    if mint is None or not (mint / "train.csv").is_file() or not (mint / "test.csv").is_file():
        pytest.skip("MINT data not found (shared data folder: set OVERLAP_METRICS_DATA or "
                    "place it at ../shared/data; needs mint/train.csv and mint/test.csv)")
    out = tmp_path / "mint.csv"
    r = run("contamination", "--eval", str(mint / "test.csv"), "--corpus",
            str(mint / "train.csv"), "--by", "language", "--tokenizer", "intl",
            "--rule", "any,palm,llama2", "--out", str(out), cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    t = read_csv(out)
    with open(mint / "test.csv", newline="", encoding="utf-8") as f:
        test = list(csv.DictReader(f))
    with open(mint / "train.csv", newline="", encoding="utf-8") as f:
        train = [row["text"] for row in csv.DictReader(f)]
    assert t["language"] == [row["language"] for row in test]
    # the reference on a sample of rows (the whole set is slow in plain Python)
    idx = list(range(0, len(test), max(1, len(test) // 40)))
    want = ref.membership([test[i]["text"] for i in idx], train, 13, "intl")
    assert [t["found_13"][i] for i in idx] == [str(w["n_found"]) for w in want]
    assert [t["first_row_13"][i] for i in idx] == [str(w["first_row"]) for w in want]
    assert [t["label_any"][i] for i in idx] == [ref.label("any", w) for w in want]
    for lang in sorted({row["language"] for row in test}):
        assert f"    {lang}: " in r.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery differs on Windows")
def test_ctrl_c_while_reading_exits_130(tmp_path, sigint_reaches_children):
    rng = np.random.default_rng(5)
    (tmp_path / "corpus").mkdir()
    words = np.array([f"w{i}" for i in range(500)])
    with open(tmp_path / "corpus" / "a.txt", "w", encoding="utf-8") as f:
        for _ in range(40):
            f.write("".join(" ".join(rng.choice(words, 12)) + "\n" for _ in range(5000)))
    (tmp_path / "eval.txt").write_text("w1 w2 w3\nw4 w5\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    # the step line: the scan loop has begun
    assert_interrupted(*interrupt_after(
        ["contamination", "--eval", "eval.txt", "--corpus", "corpus", "--chunk-rows", "50",
         "--ngram", "1", "--out", "r.csv"], b"] scan:", cwd=tmp_path, env=env))
    assert not (tmp_path / "r.csv").exists()
