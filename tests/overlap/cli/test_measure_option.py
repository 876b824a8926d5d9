"""``--measure`` on ``overlap scan`` (in memory and streamed) and ``overlap dedup``."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import overlap as _overlap_pkg
from overlap import TokenSets, dedup, max_overlap, ratio
from overlap._validation import MEASURE_LABELS

PKG_ROOT = str(Path(_overlap_pkg.__file__).resolve().parent.parent)
WORDS = "the cat sat on a mat dog ran far away red blue sky".split()


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    return subprocess.run([sys.executable, "-m", "overlap", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("measure")
    rng = np.random.default_rng(11)
    train = [" ".join(rng.choice(WORDS, rng.integers(1, 9))) for _ in range(60)]
    ev = [" ".join(rng.choice(WORDS, rng.integers(1, 4))) for _ in range(20)]
    (d / "train.txt").write_text("".join(t + "\n" for t in train))
    (d / "eval.txt").write_text("".join(t + "\n" for t in ev))
    (d / "shards").mkdir()
    (d / "shards" / "a.jsonl").write_text("".join(json.dumps({"text": t}) + "\n"
                                                  for t in train[:25]))
    (d / "shards" / "b.jsonl").write_text("".join(json.dumps({"text": t}) + "\n"
                                                  for t in train[25:]))
    return d, train, ev


def _rows(stdout: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(stdout)))


@pytest.mark.parametrize("measure", ["jaccard", "cosine", "overlap", "containment"])
def test_scan_writes_the_measure_scores(files, measure):
    d, train, ev = files
    want = max_overlap(TokenSets.from_texts(ev, "intl"), TokenSets.from_texts(train, "intl"),
                       measure=measure)
    for source in (["--train", "train.txt"], ["--train-stream", "shards", "--chunk-rows", "7"]):
        p = run("scan", "--eval", "eval.txt", *source, "--measure", measure, "--out", "-",
                cwd=d)
        assert p.returncode == 0, p.stderr
        rows = _rows(p.stdout)
        assert [float(r["score"]) for r in rows] == want.score.tolist()
        assert [int(r["train_index"]) for r in rows] == want.index.tolist()
        assert f"each sample's best match by {MEASURE_LABELS[measure]};" in p.stderr


def test_scan_defaults_to_dice_and_does_not_name_it(files):
    d, train, ev = files
    p = run("scan", "--eval", "eval.txt", "--train", "train.txt", "--out", "-", cwd=d)
    assert p.returncode == 0, p.stderr
    want = max_overlap(TokenSets.from_texts(ev, "intl"), TokenSets.from_texts(train, "intl"))
    assert [float(r["score"]) for r in _rows(p.stdout)] == want.score.tolist()
    assert "each sample's best match; counts" in p.stderr


@pytest.mark.parametrize("keep", ["most-overlapped", "first"])
def test_dedup_with_a_measure_and_its_report(files, keep):
    d, train, _ = files
    p = run("dedup", "train.txt", "--out", f"kept-{keep}.txt", "--measure", "overlap",
            "--threshold", "0.7", "--keep", keep, "--report", f"r-{keep}.json", cwd=d)
    assert p.returncode == 0, p.stderr
    ts = TokenSets.from_texts(train, "intl")
    if keep == "most-overlapped":
        res = dedup(ts, threshold=0.7, measure="overlap")
    else:
        from overlap.pipeline import dedup_first

        res = dedup_first(ts, threshold=0.7, measure="overlap")
    assert res.n_removed > 0
    kept = (d / f"kept-{keep}.txt").read_text().splitlines()
    assert kept == [t for t, k in zip(train, res.keep.tolist()) if k]
    rep = json.loads((d / f"r-{keep}.json").read_text())
    assert rep["measure"] == "overlap"
    gone = [u["index"] for u in rep["removed_units"]]
    scores = ratio(ts.take(gone), ts.take([u["kept_for"] for u in rep["removed_units"]]),
                   measure="overlap")
    assert [u["score"] for u in rep["removed_units"]] == scores.tolist()
    assert all(s > 0.7 for s in scores.tolist())
    assert "threshold 0.7 by overlap coefficient" in p.stdout


def test_dedup_refuses_containment_and_scan_refuses_unknown_measures(files):
    d, _, _ = files
    p = run("dedup", "train.txt", "--out", "never.txt", "--measure", "containment", cwd=d)
    assert p.returncode == 2
    assert "containment' is asymmetric" in p.stderr and "'overlap'" in p.stderr
    assert not (d / "never.txt").exists()
    p = run("scan", "eval.txt", "--measure", "tanimoto", cwd=d)
    assert p.returncode == 2
    assert "--measure: invalid choice: 'tanimoto'" in p.stderr
