"""End-to-end tests of the ``overlap`` command, run through subprocess."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from overlap import TokenSets, dedup, max_overlap
from overlap.demo import generate_corpus, write_corpus
from overlap.dialogue import make_samples, read_dialogues, read_splits
from overlap.pipeline import summarize

import overlap as _overlap_pkg

# the folder the tested ``overlap`` was imported from (the source tree for an
# editable install, site-packages otherwise): subprocesses must import the same
PKG_ROOT = str(Path(_overlap_pkg.__file__).resolve().parent.parent)


def run(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    return subprocess.run(
        [sys.executable, "-m", "overlap", *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=timeout,
    )


def fields(samples) -> list[TokenSets]:
    return [TokenSets.from_texts(samples.context), TokenSets.from_texts(samples.response)]


def pct(x: float) -> str:
    return f"{100 * x:.2f}%"


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("corpus")
    write_corpus(d, generate_corpus(300, 40, 40, seed=3))
    return d


# ----------------------------------------------------------------- demo
def test_demo_runs_in_cwd_and_reports_what_it_wrote(tmp_path):
    r = run("demo", "--dialogues", "400", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "overlap-demo-output"
    report = json.loads((out / "report.json").read_text())
    # the report's "before" numbers are the scan of the generated corpus, recomputed here
    corpus = read_splits(out / "corpus")
    test, train = make_samples(corpus["test"]), make_samples(corpus["train"])
    score = max_overlap(fields(test), fields(train)).score
    expect = summarize(score)
    assert report["before"]["test"] == pytest.approx(expect.as_dict())
    assert pct(expect.identical) in r.stdout and pct(expect.above[0.8]) in r.stdout
    # dedup numbers match the library call on the pooled dialogues
    pooled = corpus["train"] + corpus["valid"] + corpus["test"]
    dd = dedup(TokenSets.from_texts([" ".join(d) for d in pooled]), threshold=0.8)
    assert report["dedup"]["removed"] == dd.n_removed
    assert f"removed {dd.n_removed:,} of {len(pooled):,} dialogues" in r.stdout
    # the planted overlap is visible, and gone after cleaning
    assert report["before"]["test"]["above_0.8"] > 0.02
    assert report["after"]["test"]["identical"] == 0.0
    new = read_splits(out)
    assert {k: len(v) for k, v in new.items()} == report["resplit"]
    for name in ("dialogues_train.txt", "train.jsonl", "test.jsonl", "report.json"):
        assert name in r.stdout
    assert "Time:" in r.stdout


def test_demo_out_quiet_and_same_as_library(tmp_path):
    r = run("demo", "--dialogues", "100", "--out", "elsewhere", "--quiet", "--seed", "5",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""
    assert not (tmp_path / "overlap-demo-output").exists()
    # another process, the library called directly: byte-identical files
    from overlap.pipeline import clean

    write_corpus(tmp_path / "lib" / "corpus", generate_corpus(100, 10, 10, seed=5))
    clean(tmp_path / "lib" / "corpus", tmp_path / "lib", seed=5)
    for name in ("corpus/dialogues_train.txt", "dialogues_train.txt", "dialogues_test.txt",
                 "train.jsonl", "test.jsonl"):
        assert (tmp_path / "elsewhere" / name).read_bytes() == \
            (tmp_path / "lib" / name).read_bytes(), name


def test_demo_without_optional_extras(tmp_path):
    """A plain install (no tqdm, matplotlib, pandas, pyarrow, dask) runs the demo."""
    shadow = tmp_path / "shadow"
    for mod in ("tqdm", "matplotlib", "pandas", "pyarrow", "dask", "distributed"):
        (shadow / mod).mkdir(parents=True)
        (shadow / mod / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shadow), PKG_ROOT]))
    r = subprocess.run([sys.executable, "-m", "overlap", "demo", "--dialogues", "100"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "pip install 'overlap-metrics[plot]'" in r.stdout  # why there is no PNG
    assert "[0.90, 1.00]" in r.stdout  # the text histogram instead
    assert not (tmp_path / "overlap-demo-output" / "overlap_hist.png").exists()
    assert (tmp_path / "overlap-demo-output" / "report.json").is_file()


# ----------------------------------------------------------------- scan
def test_scan_dailydialog_files_writes_matches(corpus_dir, tmp_path):
    r = run("scan", "--train", str(corpus_dir / "dialogues_train.txt"),
            "--eval", str(corpus_dir / "dialogues_test.txt"), "--out", "scores.csv",
            "--threads", "1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    train = make_samples(read_dialogues(corpus_dir / "dialogues_train.txt"))
    test = make_samples(read_dialogues(corpus_dir / "dialogues_test.txt"))
    ref = max_overlap(fields(test), fields(train))
    with open(tmp_path / "scores.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(test)
    np.testing.assert_array_equal([float(x["score"]) for x in rows], ref.score)
    np.testing.assert_array_equal([int(x["train_index"]) for x in rows], ref.index)
    for x in rows:
        j = int(x["train_index"])
        assert x["train_response"] == (train.response[j] if j >= 0 else "")
        assert x["eval_context"] == test.context[int(x["eval_index"])]
    assert summarize(ref.score).format("eval") in r.stdout


def test_scan_jsonl_one_field_and_plot(tmp_path):
    train = [{"text": "the cat sat on the mat"}, {"text": "a dog barked"}]
    evals = [{"text": "the cat sat on a mat"}, {"text": "nothing in common"}]
    for name, rows in (("train.jsonl", train), ("eval.jsonl", evals)):
        (tmp_path / name).write_text("".join(json.dumps(x) + "\n" for x in rows))
    r = run("scan", "--train", "train.jsonl", "--eval", "eval.jsonl", "--fields", "text",
            "--out", "s.jsonl", "--plot", "h.png", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    # {the, cat, sat, on, mat} vs {the, cat, sat, on, a, mat}: 2*5/11
    assert got[0]["score"] == 2 * 5 / 11 and got[0]["train_index"] == 0
    assert got[1]["score"] == 0.0 and got[1]["train_index"] == -1
    png = tmp_path / "h.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "text histogram" in r.stdout
    else:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_scan_bad_inputs_exit_2_with_file_and_line(tmp_path):
    (tmp_path / "t.jsonl").write_text('{"context": "a", "response": "b"}\n{"context": 3}\n')
    (tmp_path / "bad.jsonl").write_text('{"context": "a", "response": "b"}\nnot json\n')
    r = run("scan", "--train", "t.jsonl", "--eval", "t.jsonl", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("overlap: error: t.jsonl:2:")
    r = run("scan", "--train", "bad.jsonl", "--eval", "t.jsonl", cwd=tmp_path)
    assert r.returncode == 2 and "bad.jsonl:2: invalid JSON" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = run("scan", "--train", "missing.txt", "--eval", "t.jsonl", cwd=tmp_path)
    assert r.returncode == 2 and "missing.txt" in r.stderr
    r = run("scan", "--train", "t.jsonl", cwd=tmp_path)  # --eval missing: argparse
    assert r.returncode == 2 and "--eval" in r.stderr
    r = run("scan", "--train", "t.jsonl", "--eval", "t.jsonl", "--threads", "0", cwd=tmp_path)
    assert r.returncode == 2 and "--threads" in r.stderr
    (tmp_path / "x.txt").write_text("hello __eou__ hi __eou__\n \n__eou__\n")
    r = run("scan", "--train", "x.txt", "--eval", "x.txt", cwd=tmp_path)
    assert r.returncode == 2 and "x.txt:3:" in r.stderr


# ----------------------------------------------------------------- dedup
def test_dedup_dailydialog_file(corpus_dir, tmp_path):
    src = corpus_dir / "dialogues_train.txt"
    r = run("dedup", str(src), "--threshold", "0.7", "--out", "kept.txt",
            "--report", "rep.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    units = read_dialogues(src)
    ref = dedup(TokenSets.from_texts([" ".join(u) for u in units]), threshold=0.7)
    kept = read_dialogues(tmp_path / "kept.txt")
    assert kept == [u for u, k in zip(units, ref.keep) if k]
    rep = json.loads((tmp_path / "rep.json").read_text())
    assert rep["removed"] == ref.n_removed > 0 and rep["passes"] == ref.passes
    assert [x["index"] for x in rep["removed_units"]] == np.flatnonzero(~ref.keep).tolist()
    assert [x["kept_for"] for x in rep["removed_units"]] == ref.kept_for[~ref.keep].tolist()


def test_dedup_csv_rows_keeps_all_columns(tmp_path):
    rows = [("id", "context", "response"), ("1", "how are you", "fine thanks"),
            ("2", "how are you", "fine thanks !"), ("3", "what time is it", "noon"),
            ("4", "how are you ?", "fine , thanks")]
    with open(tmp_path / "in.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    r = run("dedup", "in.csv", "--threshold", "0.8", "--out", "out.csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "out.csv", newline="") as fh:
        got = list(csv.reader(fh))
    ctx = TokenSets.from_texts([x[1] for x in rows[1:]])
    rsp = TokenSets.from_texts([x[2] for x in rows[1:]])
    keep = dedup([ctx, rsp], threshold=0.8).keep
    assert got == [list(rows[0])] + [list(x) for x, k in zip(rows[1:], keep) if k]
    assert len(got) - 1 < len(rows) - 1  # the three copies of "how are you" collapse


def test_dedup_rejects_bad_threshold(tmp_path):
    r = run("dedup", "x.txt", "--threshold", "1.5", "--out", "y.txt", cwd=tmp_path)
    assert r.returncode == 2 and "--threshold" in r.stderr


# ----------------------------------------------------------------- clean
def test_clean_folder(corpus_dir, tmp_path):
    r = run("clean", str(corpus_dir), "--out", "clean", "--test-size", "30",
            "--valid-size", "20", "--turns", "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "clean"
    new = read_splits(out)
    assert len(new["test"]) == 30 and len(new["valid"]) == 20
    rep = json.loads((out / "report.json").read_text())
    assert rep["settings"]["turns"] == 2
    test = [json.loads(x) for x in (out / "test.jsonl").read_text().splitlines()]
    train = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
    assert len(test) == rep["samples"]["test"]["after"]
    pairs_train = {(x["context"], x["response"]) for x in train}
    assert len(pairs_train) == len(train)
    assert not {(x["context"], x["response"]) for x in test} & pairs_train
    assert "Overlap of the NEW split" in r.stdout


def test_clean_missing_folder_exits_2(tmp_path):
    r = run("clean", "nope", "--out", "o", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "overlap: error: nope: not a directory"


def test_help_and_version(tmp_path):
    r = run("--help", cwd=tmp_path)
    assert r.returncode == 0 and "demo" in r.stdout and "clean" in r.stdout
    r = run(cwd=tmp_path)
    assert r.returncode == 2


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery differs on Windows")
def test_ctrl_c_during_a_kernel_exits_130_with_one_line(tmp_path):
    corpus = generate_corpus(6000, 0, 2500, leak_rate=0.0, seed=1)
    write_corpus(tmp_path, corpus)
    # the postings kernel: the bit-sliced one finishes this scan (0.3 s) before
    # the progress bar shows (both run the same interruptible chunk loop)
    env = dict(os.environ, PYTHONPATH=PKG_ROOT, OVERLAP_SEARCH_PATH="postings")
    p = subprocess.Popen(
        [sys.executable, "-m", "overlap", "scan", "--threads", "1",
         "--train", "dialogues_train.txt", "--eval", "dialogues_test.txt"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    # the progress bar appears on stderr once the scan has run for a second;
    # from then on the process is inside the chunked kernel loop
    first = b""
    while b"scan" not in first:
        chunk = p.stderr.read1(64)
        assert chunk, "the scan ended before showing progress"
        first += chunk
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    err = (first + err).decode()
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1].split("\r")[-1].strip().endswith("overlap: interrupted")
    assert "Traceback" not in err and out == b""


# ------------------------------------------------------ real data (optional)
@pytest.mark.data
def test_scan_dailydialog_original_split(dailydialog_dir, tmp_path):
    r = run("scan", "--train", str(dailydialog_dir / "dialogues_train.txt"),
            "--eval", str(dailydialog_dir / "dialogues_test.txt"), "--out", "s.csv",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "s.csv", newline="", encoding="utf-8") as fh:
        score = np.array([float(x["score"]) for x in csv.DictReader(fh)])
    assert score.shape == (6740,)  # the data README's count of test samples
    train = make_samples(read_dialogues(dailydialog_dir / "dialogues_train.txt"))
    test = make_samples(read_dialogues(dailydialog_dir / "dialogues_test.txt"))
    assert len(train) == 76053
    idx = np.random.default_rng(0).choice(len(test), size=50, replace=False)
    ref = max_overlap(fields(test.take(idx)), fields(train))
    np.testing.assert_array_equal(score[idx], ref.score)
    assert summarize(score).format("eval") in r.stdout
