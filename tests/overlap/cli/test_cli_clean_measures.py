"""``--measure`` (and ``--dedup-measure``) on ``overlap decontaminate`` and ``overlap clean``."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import overlap as _overlap_pkg
from overlap.pipeline import clean, decontaminate

PKG_ROOT = str(Path(_overlap_pkg.__file__).resolve().parent.parent)
QUESTION = "what is the capital of france"
LONG_ROW = ("trivia night q " + QUESTION + " a paris q how tall is the eiffel tower a 330 "
            "metres q name a prime number between ten and fifteen a eleven")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    return subprocess.run([sys.executable, "-m", "overlap", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def write_csv(path: Path, rows: list[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "text"])
        w.writerows(enumerate(rows))


def read_texts(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [r["text"] for r in csv.DictReader(fh)]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("clean_measures")
    rng = np.random.default_rng(21)
    words = [f"w{i}" for i in range(14)]
    train = [LONG_ROW, "the capital of spain is madrid"]
    train += [" ".join(rng.choice(words, rng.integers(2, 8))) for _ in range(50)]
    test = [QUESTION] + [" ".join(rng.choice(words, rng.integers(2, 5))) for _ in range(8)]
    write_csv(d / "train.csv", train)
    write_csv(d / "test.csv", test)
    return d, train, test


def _api(train, test, **kw):
    return decontaminate({"id": list(range(len(train))), "text": train},
                         {"test": {"id": list(range(len(test))), "text": test}},
                         fields="text", tokenizer="intl", **kw)


@pytest.mark.parametrize("measure,dedup_measure", [("jaccard", None), ("cosine", None),
                                                   ("overlap", None),
                                                   ("containment", "overlap"),
                                                   ("containment", "jaccard")])
def test_decontaminate_writes_what_the_api_keeps(files, measure, dedup_measure):
    d, train, test = files
    out = f"out-{measure}-{dedup_measure}"
    extra = ["--dedup-measure", dedup_measure] if dedup_measure else []
    before = digest(d / "test.csv")
    p = run("decontaminate", "--train", "train.csv", "--test", "test.csv", "--fields", "text",
            "--out", out, "--threshold", "0.9", "--measure", measure, *extra, cwd=d)
    assert p.returncode == 0, p.stderr
    want = _api(train, test, threshold=0.9, measure=measure, dedup_measure=dedup_measure)
    assert read_texts(d / out / "train.csv") == want.train["text"]
    rep = json.loads((d / out / "report.json").read_text())
    assert rep["settings"]["measure"] == measure
    assert rep["settings"]["dedup_measure"] == (dedup_measure or measure)
    assert [u["score"] for u in rep["removed_units"]] == [
        u["score"] for u in want.report.removed_units]
    assert digest(d / "test.csv") == before  # the eval file is never written
    label = {"jaccard": "Jaccard", "cosine": "cosine", "overlap": "overlap coefficient",
             "containment": "containment"}
    assert f"best match in train by {label[measure]}, min over the fields" in p.stdout
    assert f"by {label[dedup_measure or measure]}, keep most-overlapped" in p.stdout


def test_decontaminate_containment_removes_the_row_holding_an_eval_sample(tmp_path):
    train = [LONG_ROW, "the capital of spain is madrid", "spiders have eight legs"]
    write_csv(tmp_path / "train.csv", train)
    write_csv(tmp_path / "test.csv", [QUESTION, "do spiders have eight legs or six legs like "
                                                "insects and ants and bees and wasps"])
    args = ("decontaminate", "--train", "train.csv", "--test", "test.csv", "--fields", "text",
            "--threshold", "0.9", "--no-dedup")
    p = run(*args, "--out", "c", "--measure", "containment", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "eval-overlap: 1 (containment of an eval row in the train row >= 0.9; test 1)" \
        in p.stdout
    # the short train row inside the long eval sample stays: eval -> train direction
    assert read_texts(tmp_path / "c" / "train.csv") == train[1:]
    p = run(*args, "--out", "dice", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "eval-overlap: 0 (best eval match >= 0.9; test 0)" in p.stdout
    assert read_texts(tmp_path / "dice" / "train.csv") == train


def test_dice_output_does_not_name_the_measure(files):
    d, train, test = files
    p = run("decontaminate", "--train", "train.csv", "--test", "test.csv", "--fields", "text",
            "--out", "plain", "--threshold", "0.7", cwd=d)
    assert p.returncode == 0, p.stderr
    assert " by " not in p.stdout
    assert "eval-overlap: " in p.stdout and "(best eval match >= 0.7; test " in p.stdout
    want = _api(train, test, threshold=0.7)
    assert read_texts(d / "plain" / "train.csv") == want.train["text"]
    assert json.loads((d / "plain" / "report.json").read_text())["settings"]["measure"] == "dice"


def test_containment_needs_a_symmetric_dedup_measure(files):
    d, _, _ = files
    for cmd in (["decontaminate"], ["clean"]):
        p = run(*cmd, "--train", "train.csv", "--test", "test.csv", "--fields", "text",
                "--out", "never", "--measure", "containment", cwd=d)
        assert p.returncode == 2
        assert "containment' is asymmetric" in p.stderr and "--dedup-measure" in p.stderr
        assert "'overlap'" in p.stderr
    p = run("decontaminate", "--train", "train.csv", "--test", "test.csv", "--fields", "text",
            "--out", "never", "--dedup-measure", "containment", "--no-dedup", cwd=d)
    assert p.returncode == 2 and "the train dedup (--dedup-measure)" in p.stderr
    p = run("decontaminate", "--train", "train.csv", "--test", "test.csv", "--fields", "text",
            "--out", "never", "--measure", "containment", "--no-dedup", "--threshold", "0",
            cwd=d)
    assert p.returncode == 2 and "threshold must be > 0 with --measure containment" in p.stderr
    p = run("decontaminate", "--train", "train.csv", "--test", "test.csv", "--out", "never",
            "--measure", "Dice", cwd=d)
    assert p.returncode == 2 and "--measure: invalid choice: 'Dice'" in p.stderr
    assert not (d / "never").exists()


def test_clean_fixed_eval_takes_the_measures(files):
    d, train, test = files
    p = run("clean", "--train", "train.csv", "--test", "test.csv", "--fields", "text",
            "--out", "fixed", "--threshold", "0.9", "--measure", "containment",
            "--dedup-measure", "overlap", cwd=d)
    assert p.returncode == 0, p.stderr
    want = _api(train, test, threshold=0.9, measure="containment", dedup_measure="overlap")
    assert read_texts(d / "fixed" / "train.csv") == want.train["text"]
    assert LONG_ROW not in want.train["text"]


def test_clean_resplit_with_a_measure(files):
    d, train, test = files
    p = run("clean", "--train", "train.csv", "--test", "test.csv", "--fields", "text",
            "--resplit", "--out", "rs", "--threshold", "0.7", "--measure", "jaccard",
            "--allow-unlabelled-move", cwd=d)
    assert p.returncode == 0, p.stderr
    rep = json.loads((d / "rs" / "report.json").read_text())
    assert rep["settings"]["measure"] == "jaccard"
    want = clean({"train": {"id": list(range(len(train))), "text": train},
                  "test": {"id": list(range(len(test))), "text": test}}, fields="text",
                 threshold=0.7, measure="jaccard", allow_unlabelled_move=True)
    assert rep["dedup"]["removed_units"] == want.report.dedup.removed_units != []
    assert "Dedup (threshold 0.7 by Jaccard, keep most-overlapped)" in p.stdout
    assert "best match in train by Jaccard, min over the fields" in p.stdout


def test_clean_resplit_refuses_containment_and_dedup_measure(files):
    d, _, _ = files
    p = run("clean", "--train", "train.csv", "--out", "never2", "--measure", "containment",
            cwd=d)
    assert p.returncode == 2
    assert ("clean's dedup of the pooled splits, which scores each pair once, cannot use it"
            in p.stderr)
    p = run("clean", "--train", "train.csv", "--out", "never2", "--dedup-measure", "overlap",
            cwd=d)
    assert p.returncode == 2 and "--dedup-measure applies to fixed-eval mode" in p.stderr
    assert not (d / "never2").exists()
