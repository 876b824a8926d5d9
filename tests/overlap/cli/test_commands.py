"""End-to-end tests of the ``overlap`` command, run through subprocess."""

from __future__ import annotations

import csv
import re
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from overlap import TokenSets, dedup, max_overlap
from overlap.pipeline.demo import generate_corpus, write_corpus
from overlap.pipeline.dialogue import make_samples, read_dialogues, read_splits
from overlap.pipeline import summarize

import overlap as _overlap_pkg
from reference.interrupt import assert_interrupted, interrupt_after

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
    assert expect.format("test") in r.stdout
    # dedup numbers match the library call on the pooled dialogues
    pooled = corpus["train"] + corpus["valid"] + corpus["test"]
    dd = dedup(TokenSets.from_texts([" ".join(d) for d in pooled]), threshold=0.8)
    assert report["dedup"]["removed"] == dd.n_removed == len(report["dedup"]["removed_units"])
    assert f"removed {dd.n_removed:,} of {len(pooled):,} dialogues" in r.stdout
    # the planted overlap is visible, and gone after cleaning
    assert report["before"]["test"]["ge_0.8_share"] > 0.02
    assert report["after"]["test"]["identical"] == 0
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

    write_corpus(tmp_path / "corpus", generate_corpus(100, 10, 10, seed=5))
    clean(tmp_path / "corpus", tmp_path / "lib", seed=5)
    write_corpus(tmp_path / "lib" / "corpus", generate_corpus(100, 10, 10, seed=5))
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
    # the error is one line (after the step lines), never a traceback
    assert r.stderr.strip().splitlines()[-1].startswith("overlap: error: bad.jsonl:2:")
    assert "Traceback" not in r.stderr
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
    assert r.stderr.strip() == "overlap: error: nope: no such folder"
    (tmp_path / "f.txt").write_text("a __eou__ b __eou__\n")
    r = run("clean", "f.txt", "--out", "o", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "overlap: error: f.txt: not a directory"


def test_help_and_version(tmp_path):
    r = run("--help", cwd=tmp_path)
    assert r.returncode == 0 and "demo" in r.stdout and "clean" in r.stdout
    r = run(cwd=tmp_path)
    assert r.returncode == 2


def write_long_dialogues(directory: Path, n_train: int, n_test: int, seed: int = 1) -> None:
    """DailyDialog-style files of long utterances (300 words each): a slow scan."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(50000)])

    def lines(n: int) -> str:
        # word ranks log-uniform (Zipf-like): many shared words, little pruning
        ids = (50000.0 ** rng.random((n, 4, 300))).astype(np.int64) - 1
        return "".join(
            " __eou__ ".join(" ".join(vocab[u]) for u in d) + " __eou__\n" for d in ids
        )

    (directory / "dialogues_train.txt").write_text(lines(n_train), encoding="utf-8")
    (directory / "dialogues_test.txt").write_text(lines(n_test), encoding="utf-8")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery differs on Windows")
@pytest.mark.parametrize("bar", ["text", "tqdm"])
def test_ctrl_c_during_a_kernel_exits_130_with_one_line(tmp_path, bar, sigint_reaches_children):
    # the progress line appears once the scan has run for a second; with tqdm
    # hidden the CLI draws its own, so the test never needs the optional extra
    path = [PKG_ROOT]
    if bar == "tqdm":
        pytest.importorskip("tqdm", reason="the tqdm twin needs tqdm; the text twin runs")
    else:
        hide = tmp_path / "hide" / "tqdm"
        hide.mkdir(parents=True)
        (hide / "__init__.py").write_text("raise ImportError('tqdm hidden by the test')\n")
        path.insert(0, str(hide.parent))
    write_long_dialogues(tmp_path, 2000, 1000)
    # the postings kernel: the bit-sliced one may finish before the progress line
    # shows (both run the same interruptible chunk loop)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), OVERLAP_SEARCH_PATH="postings")
    # from the first progress line on, the process is inside the chunked kernel loop
    assert_interrupted(*interrupt_after(
        ["scan", "--threads", "1", "--train", "dialogues_train.txt", "--eval",
         "dialogues_test.txt"], b"scan", cwd=tmp_path, env=env))


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


# ------------------------------------------------------- never lose data
def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_dedup_refuses_to_write_over_its_input(corpus_dir, tmp_path):
    """The reported repro: ``overlap dedup in.txt --out in.txt`` overwrote the input."""
    src = tmp_path / "in.txt"
    src.write_bytes((corpus_dir / "dialogues_train.txt").read_bytes())
    before = src.read_bytes()
    for extra in ([], ["--overwrite"]):
        r = run("dedup", "in.txt", "--out", "in.txt", *extra, cwd=tmp_path)
        assert r.returncode == 2 and "refusing to write over an input" in r.stderr
        assert src.read_bytes() == before
    (tmp_path / "link.txt").symlink_to(src)  # the same file under another name
    r = run("dedup", "link.txt", "--out", "in.txt", "--overwrite", cwd=tmp_path)
    assert r.returncode == 2 and src.read_bytes() == before
    r = run("dedup", "in.txt", "--out", "k.txt", "--report", "in.txt", cwd=tmp_path)
    assert r.returncode == 2 and src.read_bytes() == before and not (tmp_path / "k.txt").exists()


def test_scan_refuses_out_over_train_eval_or_an_existing_file(corpus_dir, tmp_path):
    for name in ("train.csv", "eval.csv"):
        (tmp_path / name).write_text("text\nthe cat sat\nthe cat sat down\n")
    before = (tmp_path / "train.csv").read_bytes()
    for target in ("train.csv", "eval.csv"):
        r = run("scan", "--train", "train.csv", "--eval", "eval.csv", "--fields", "text",
                "--out", target, "--overwrite", cwd=tmp_path)
        assert r.returncode == 2 and "input" in r.stderr, r.stderr
    r = run("scan", "eval.csv", "--fields", "text", "--plot", "eval.csv", cwd=tmp_path)
    assert r.returncode == 2
    assert (tmp_path / "train.csv").read_bytes() == before
    (tmp_path / "old.csv").write_text("keep me\n")
    r = run("scan", "--train", "train.csv", "--eval", "eval.csv", "--fields", "text",
            "--out", "old.csv", cwd=tmp_path)
    assert r.returncode == 2 and "--overwrite" in r.stderr
    assert (tmp_path / "old.csv").read_text() == "keep me\n"
    r = run("scan", "--train", "train.csv", "--eval", "eval.csv", "--fields", "text",
            "--out", "old.csv", "--overwrite", cwd=tmp_path)
    assert r.returncode == 0, r.stderr and (tmp_path / "old.csv").read_text() != "keep me\n"


def test_clean_refuses_its_input_folder_and_non_empty_output(corpus_dir, tmp_path):
    data = tmp_path / "data"
    write_corpus(data, generate_corpus(60, 6, 6, seed=2))
    snapshot = {p.name: p.read_bytes() for p in data.iterdir()}
    for out in (str(data), str(data / "clean")):
        r = run("clean", str(data), "--out", out, "--overwrite", cwd=tmp_path)
        assert r.returncode == 2 and "input" in r.stderr, r.stderr
    r = run("clean", "--train", str(data / "dialogues_train.txt"), "--out",
            str(data / "dialogues_train.txt"), cwd=tmp_path)
    assert r.returncode == 2
    assert {p.name: p.read_bytes() for p in data.iterdir()} == snapshot
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    r = run("clean", str(data), "--out", "busy", cwd=tmp_path)
    assert r.returncode == 2 and "not empty" in r.stderr and "--overwrite" in r.stderr
    r = run("clean", str(data), "--out", "busy", "--overwrite", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"  # only our files written
    assert (tmp_path / "busy" / "report.json").is_file()


def test_demo_refuses_a_non_empty_folder_unless_overwrite(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("x")
    r = run("demo", "--dialogues", "50", "--out", "d", "-q", cwd=tmp_path)
    assert r.returncode == 2 and "not empty" in r.stderr
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["x"]
    r = run("demo", "--dialogues", "50", "--out", "d", "-q", "--overwrite", cwd=tmp_path)
    assert r.returncode == 0 and (tmp_path / "d" / "report.json").is_file()


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0,
                    reason="root writes into read-only folders")
def test_unwritable_output_is_refused_before_the_work(corpus_dir, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        r = run("dedup", str(corpus_dir / "dialogues_train.txt"), "--out", "ro/k.txt",
                cwd=tmp_path)
    finally:
        ro.chmod(0o700)
    assert r.returncode == 2 and "cannot write" in r.stderr
    assert "dedup:" not in r.stderr  # refused before the dedup step started


def test_unwritable_output_location_is_refused_before_the_work(corpus_dir, tmp_path):
    (tmp_path / "afile").write_text("x")
    r = run("dedup", str(corpus_dir / "dialogues_train.txt"), "--out", "afile/sub/k.txt",
            "--parents", cwd=tmp_path)
    assert r.returncode == 2 and "not a folder" in r.stderr
    assert "dedup:" not in r.stderr


def test_failure_midway_leaves_no_partial_set_of_outputs(corpus_dir, tmp_path):
    """clean writes seven files; a failure while writing them leaves none (and no temp)."""
    code = (
        "import sys, overlap.pipeline.tables as t\n"
        "orig = t.write_table\n"
        "def boom(path, table, fmt=None):\n"
        "    if 'test' in str(path):\n"
        "        raise OSError('disk full')\n"
        "    return orig(path, table, fmt)\n"
        "import overlap.pipeline.cleaning as s\n"
        "s.write_table = boom\n"
        "from overlap.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    r = subprocess.run([sys.executable, "-c", code, "clean", str(corpus_dir), "--out", "o"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "disk full" in r.stderr
    assert not (tmp_path / "o").exists()  # the folder it created is gone too
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery differs on Windows")
def test_interrupted_write_leaves_no_half_file(tmp_path, sigint_reaches_children):
    """Ctrl-C while the output is being written: the old file stays whole, no temp is left."""
    code = (
        "import os, signal, sys, overlap.pipeline.tables as t\n"
        "orig = t.write_table\n"
        "def slow(path, table, fmt=None, **kw):  # kw: progress=\n"
        "    with open(path, 'w') as fh:\n"
        "        fh.write('half')\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "import overlap.cli as c\n"
        "t.write_table = slow\n"
        "from overlap.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    (tmp_path / "in.csv").write_text("text\na b c\na b c d\nx y\n")
    (tmp_path / "out.csv").write_text("old\n")
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    r = subprocess.run([sys.executable, "-c", code, "dedup", "in.csv", "--fields", "text",
                        "--out", "out.csv", "--overwrite"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 130, r.stderr
    assert (tmp_path / "out.csv").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out.csv"]


# ------------------------------------------- thresholds, groups, within a file
def _mint_like(path: Path) -> None:
    rows = [("text", "label", "language", "id")]
    # 4 shared tokens of 5 each: 2*4/(5+5) = 0.8 exactly
    rows += [("a b c d e", "1.0", "English", "t0"), ("f g h i j", "2.0", "Chinese", "t1"),
             ("k l m n o", "3.0", "English", "t2")]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)


def test_scan_at_counts_exact_boundary_and_by_group(tmp_path):
    _mint_like(tmp_path / "train.csv")
    evals = [("text", "label", "language", "id"),
             ("a b c d z", "1", "English", "e0"),      # 0.8 exactly against t0
             ("f g h i j", "2", "Chinese", "e1"),      # 1.0
             ("k l m y z", "3", "English", "e2"),      # 2*3/10 = 0.6
             ("q r s", "4", "Spanish", "e3")]          # 0
    with open(tmp_path / "test.csv", "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(evals)
    r = run("scan", "--train", "train.csv", "--eval", "test.csv", "--fields", "text",
            "--by", "language", "--at", "0.8,1.0", "--out", "s.csv", "--summary", "g.csv",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "eval: 4 samples | ≥0.8: 2 (50.00%) | ≥1: 1 (25.00%)" in r.stdout
    assert "counts of scores >= each threshold" in r.stdout
    with open(tmp_path / "g.csv", newline="", encoding="utf-8") as fh:
        groups = {x["language"]: x for x in csv.DictReader(fh)}
    assert list(groups) == ["English", "Chinese", "Spanish", "overall"]
    assert (groups["English"]["n"], groups["English"]["ge_0.8"], groups["English"]["ge_1"]) \
        == ("2", "1", "0")
    assert (groups["Chinese"]["ge_0.8"], groups["Chinese"]["ge_1"]) == ("1", "1")
    assert (groups["overall"]["n"], groups["overall"]["ge_0.8"]) == ("4", "2")
    for g in ("English", "Chinese", "Spanish", "overall"):
        assert re.search(rf"^\s+{g}\s", r.stdout, re.M), g
    with open(tmp_path / "s.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    # other columns travel through, the match's too
    assert [x["id"] for x in rows] == ["e0", "e1", "e2", "e3"]
    assert [x["language"] for x in rows] == ["English", "Chinese", "English", "Spanish"]
    assert [x["train_id"] for x in rows[:3]] == ["t0", "t1", "t2"] and rows[3]["train_id"] == ""
    assert float(rows[0]["score"]) == 0.8 and rows[0]["train_text"] == "a b c d e"


def test_scan_within_one_file(tmp_path):
    rows = [{"text": "the cat sat on the mat", "id": 1}, {"text": "a dog barked", "id": 2},
            {"text": "the cat sat on the mat", "id": 3}, {"text": "a dog barked loudly", "id": 4}]
    (tmp_path / "one.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
    r = run("scan", "one.jsonl", "--fields", "text", "--out", "dups.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "against the rest of the file" in r.stdout
    got = [json.loads(x) for x in (tmp_path / "dups.jsonl").read_text().splitlines()]
    ref = max_overlap(TokenSets.from_texts([x["text"] for x in rows]))  # all vs rest
    assert [x["score"] for x in got] == ref.score.tolist()
    assert [x["match_index"] for x in got] == ref.index.tolist() == [2, 3, 0, 1]
    assert got[0]["match_text"] == rows[2]["text"] and got[1]["match_text"] == rows[3]["text"]
    assert [x["id"] for x in got] == [1, 2, 3, 4]


# ----------------------------------------------------------- clean on files
def test_clean_explicit_files_of_any_name_and_format(tmp_path):
    corpus = generate_corpus(120, 15, 15, seed=4).splits
    for split, name in (("train", "OpenSubtitles.en-train.txt"), ("valid", "dev.txt"),
                        ("test", "held_out.txt")):
        from overlap.pipeline.dialogue import write_dialogues
        write_dialogues(tmp_path / name, corpus[split])
    r = run("clean", "--train", "OpenSubtitles.en-train.txt", "--valid", "dev.txt", "--test",
            "held_out.txt", "--out", "o", "--keep", "first", "--resplit", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("mode: re-split")
    assert "plan: new split test 15 and valid 15 dialogues" in r.stderr
    rep = json.loads((tmp_path / "o" / "report.json").read_text())
    assert rep["settings"]["keep"] == "first" and rep["resplit"]["test"] == 15
    for u in rep["dedup"]["removed_units"]:
        assert u["text"] and u["kept_text"] and u["score"] > 0.8
    # tables: rows are the units, written back in their own format with every column
    table = {"id": [str(i) for i in range(40)],
             "context": [f"question {i % 25} about topic {i % 25}" for i in range(40)],
             "response": [f"answer {i % 25}" for i in range(40)]}
    with open(tmp_path / "tr.tsv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, dialect="excel-tab")
        w.writerow(list(table))
        w.writerows(zip(*table.values()))
    r = run("clean", "--train", "tr.tsv", "--test-size", "5", "--out", "t", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "t" / "test.tsv", newline="", encoding="utf-8") as fh:
        test = list(csv.DictReader(fh, dialect="excel-tab"))
    assert len(test) == 5 and set(test[0]) == {"id", "context", "response"}
    # sizes are never shrunk: too large is an error before anything is written
    r = run("clean", "--train", "tr.tsv", "--test-size", "20", "--valid-size", "5",
            "--out", "u", cwd=tmp_path)
    assert r.returncode == 2 and "never shrinks" in r.stderr and not (tmp_path / "u").exists()


def test_version_and_help_describe_every_argument(tmp_path):
    from overlap import __version__

    r = run("--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"overlap {__version__}"
    for cmd in ("demo", "scan", "dedup", "clean", "decontaminate"):
        r = run(cmd, "--help", cwd=tmp_path)
        assert r.returncode == 0
        from overlap.cli import build_parser
        sub = build_parser()._subparsers._group_actions[0].choices[cmd]
        for action in sub._actions:
            assert action.help, (cmd, action.dest)
            if action.default not in (None, False) and action.dest != "help":
                assert "default" in action.help, (cmd, action.dest)


@pytest.mark.data
def test_scan_mint_by_language_counts_the_exact_boundary(shared_data, tmp_path):
    """The issue's command on the real MINT files: per-language counts, ties at 0.8 included."""
    train, test = shared_data / "mint" / "train.csv", shared_data / "mint" / "test.csv"
    if not (train.is_file() and test.is_file()):
        pytest.skip("needs mint/train.csv and mint/test.csv in ../shared/data")
    r = run("scan", "--train", str(train), "--eval", str(test), "--fields", "text",
            "--by", "language", "--at", "0.8,1.0", "--summary", "g.csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with open(test, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    with open(train, newline="", encoding="utf-8") as fh:
        train_texts = [x["text"] for x in csv.DictReader(fh)]
    # the command's default tokenizer is intl (one token per CJK character)
    score = max_overlap(TokenSets.from_texts([x["text"] for x in rows], "intl"),
                        TokenSets.from_texts(train_texts, "intl")).score
    assert (score == 0.8).sum() > 0  # boundary ties exist in this data, and count below
    with open(tmp_path / "g.csv", newline="", encoding="utf-8") as fh:
        got = {x["language"]: x for x in csv.DictReader(fh)}
    langs = np.array([x["language"] for x in rows])
    for lang in set(langs.tolist()):
        s = score[langs == lang]
        assert int(got[lang]["n"]) == s.size
        assert int(got[lang]["ge_0.8"]) == int(np.count_nonzero(s >= 0.8))
        assert int(got[lang]["ge_1"]) == int(np.count_nonzero(s == 1.0))
        assert re.search(rf"^\s+{lang}\s+{s.size:,}\s+{np.count_nonzero(s >= 0.8):,} ",
                         r.stdout, re.M), lang
    assert int(got["overall"]["ge_0.8"]) == int(np.count_nonzero(score >= 0.8))


# ------------------------------------------------------------ progress in a log
def test_progress_in_a_log_is_lines_not_carriage_returns(monkeypatch):
    import io

    from overlap import cli

    clock = [100.0]
    monkeypatch.setattr(cli.time, "monotonic", lambda: clock[0])
    log = io.StringIO()  # not a terminal
    con = cli.Console(stream=log)
    assert not con.tty
    con.log("scan: 1,000 eval against 5 train samples")
    for done in range(0, 1001, 10):  # 100 updates over 20 s
        clock[0] += 0.2
        con.progress(done, 1000)
    text = log.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0].endswith("scan: 1,000 eval against 5 train samples")
    bars = [x for x in lines if x.startswith("scan: ") and "/1,000" in x]
    assert 3 <= len(bars) <= 6  # about one every 5 s, not one per update
    assert bars[-1].startswith("scan: 1,000/1,000 (100.0%)")
    assert con.timing_line(2).startswith("Time: ") and "scan " in con.timing_line(2)


def test_quiet_console_writes_nothing():
    import io

    from overlap import cli

    log = io.StringIO()
    con = cli.Console(quiet=True, stream=log)
    con.log("read: x")
    assert con.progress is False and log.getvalue() == ""


def test_dedup_keep_first_and_report_with_texts(tmp_path):
    from overlap.pipeline import dedup_first

    rows = [("id", "text"), ("a", "how are you today"), ("b", "how are you today friend"),
            ("c", "what time is it"), ("d", "how are you today my friend")]
    with open(tmp_path / "in.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    r = run("dedup", "in.csv", "--fields", "text", "--threshold", "0.7", "--keep", "first",
            "--out", "out.csv", "--report", "rep.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ts = TokenSets.from_texts([x[1] for x in rows[1:]])
    ref = dedup_first(ts, threshold=0.7)
    with open(tmp_path / "out.csv", newline="") as fh:
        got = [x["id"] for x in csv.DictReader(fh)]
    assert got == [x[0] for x, k in zip(rows[1:], ref.keep) if k] and got[0] == "a"
    rep = json.loads((tmp_path / "rep.json").read_text())
    assert rep["keep"] == "first" and rep["removed"] == ref.n_removed > 0
    for u in rep["removed_units"]:
        assert u["text"] == rows[1 + u["index"]][1]
        assert u["kept_text"] == rows[1 + u["kept_for"]][1] and u["score"] > 0.7
