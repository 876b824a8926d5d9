"""Fixed-eval decontamination (issue 31, item 1) and one report vocabulary (item 5).

- :func:`overlap.pipeline.decontaminate` against a plain-Python reference;
- ``overlap decontaminate`` and ``overlap clean --train --test`` through
  subprocess: the mode line, eval files untouched, exit codes;
- re-split refuses to move labelled rows into a split without labels;
- every report names the unit a removed one was removed for ``kept_for``.
"""

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

from reference import overlap as ref
import overlap as _overlap_pkg
from overlap.pipeline.demo import generate_corpus, write_corpus
from overlap.pipeline import decontaminate

PKG_ROOT = str(Path(_overlap_pkg.__file__).resolve().parent.parent)
#: The keys of a removed unit in every report (dedup --report adds cluster, has no split).
UNIT_KEYS = {"split", "index", "kept_split", "kept_for", "score", "text", "kept_text"}


def run(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    return subprocess.run([sys.executable, "-m", "overlap", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def write_csv(path: Path, table: dict) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(list(table))
        w.writerows(zip(*table.values()))


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def texts(rng, n: int, vocab: int = 12, length: tuple = (1, 6)) -> list[str]:
    words = [f"w{i}" for i in range(vocab)]
    return [" ".join(rng.choice(words, size=rng.integers(*length), replace=False))
            for _ in range(n)]


def ref_units(columns: list[list[str]]) -> list[tuple]:
    return [tuple(ref.bag(ref.tokenize_whitespace(t)) for t in row) for row in zip(*columns)]


# ------------------------------------------------------------- the definition
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("threshold", [0.5, 0.75, 0.8])
def test_removed_set_is_eval_overlap_then_train_dedup(seed, threshold):
    """Removed = {train rows with best eval score >= t} ∪ (dedup > t of the rest)."""
    rng = np.random.default_rng(seed)
    n_fields = 1 + seed % 2
    tr = [texts(rng, 40) for _ in range(n_fields)]
    va = [texts(rng, 8) for _ in range(n_fields)]
    te = [texts(rng, 10) for _ in range(n_fields)]
    names = [f"f{i}" for i in range(n_fields)]
    train = {"id": [f"r{i}" for i in range(40)], **dict(zip(names, tr))}
    evals = {"valid": dict(zip(names, va)), "test": dict(zip(names, te))}
    res = decontaminate(train, evals, fields=names, threshold=threshold, at=[threshold],
                        tokenizer="whitespace", n_threads=2)

    u_tr, u_va, u_te = ref_units(tr), ref_units(va), ref_units(te)
    best = [max([ref.sample_ratio(x, y) for y in u_va + u_te]) for x in u_tr]
    overlapping = {i for i, s in enumerate(best) if s >= threshold and s > 0}
    rest = [i for i in range(40) if i not in overlapping]
    present, kept_for, _, _ = ref.dedup([u_tr[i] for i in rest], threshold)
    duplicates = {rest[k] for k, p in enumerate(present) if not p}
    want_kept = [i for i in range(40) if i not in overlapping | duplicates]

    assert np.flatnonzero(res.keep).tolist() == want_kept
    assert res.train["id"] == [f"r{i}" for i in want_kept]  # every column, original order
    np.testing.assert_array_equal(res.best_score, best)
    by_index = {u["index"]: u for u in res.report.removed_units}
    assert sorted(by_index) == sorted(overlapping | duplicates)
    for i, u in by_index.items():
        assert set(u) == UNIT_KEYS | {"reason"} and u["split"] == "train"
        if i in overlapping:
            split_units = u_va if u["kept_split"] == "valid" else u_te
            assert u["reason"] == "eval-overlap" and u["score"] == best[i]
            assert ref.sample_ratio(u_tr[i], split_units[u["kept_for"]]) == best[i]
            # ties: valid (given first) before test, then the lowest row
            va_best = max(ref.sample_ratio(u_tr[i], y) for y in u_va)
            assert u["kept_split"] == ("valid" if va_best == best[i] else "test")
        else:
            k = rest.index(i)
            assert u["reason"] == "train-duplicate" and u["kept_split"] == "train"
            assert u["kept_for"] == rest[kept_for[k]]
            assert u["score"] == ref.sample_ratio(u_tr[i], u_tr[u["kept_for"]]) > threshold
    rm = res.report.removed
    assert rm["eval-overlap"] == len(overlapping) and rm["train-duplicate"] == len(duplicates)
    # after: no eval row has a train match at or above the threshold
    kept = [u_tr[i] for i in want_kept]
    for split, units in (("valid", u_va), ("test", u_te)):
        after = [max([ref.sample_ratio(y, x) for x in kept], default=0.0) for y in units]
        assert max(after) < threshold and res.report.after[split].count(threshold) == 0


def test_threshold_is_at_least_for_eval_and_strictly_greater_for_train_dedup():
    # Dice("a b c d", "a b c e") = 6/8 = 0.75 exactly
    train = {"text": ["a b c d", "a b c e", "x y z w", "x y z v", "unrelated words"]}
    res = decontaminate(train, {"test": {"text": ["a b c e"]}}, fields="text",
                        threshold=0.75)
    assert res.reason == ["eval-overlap", "eval-overlap", None, None, None]
    assert res.best_score.tolist()[:2] == [0.75, 1.0]
    # x y z w / x y z v score exactly 0.75 with each other: dedup (> 0.75) keeps both
    assert res.train["text"] == ["x y z w", "x y z v", "unrelated words"]
    no = decontaminate(train, {"test": {"text": ["nothing alike"]}}, fields="text",
                       threshold=0.0, dedup_train=False)
    assert no.keep.all()  # a train row matching nothing is never "eval overlap"


def test_dialogue_files_and_inputs_never_modified(tmp_path):
    corpus = generate_corpus(80, 10, 10, seed=1).splits
    before = {k: [list(d) for d in v] for k, v in corpus.items()}
    res = decontaminate(corpus["train"], {"valid": corpus["valid"], "test": corpus["test"]},
                        tmp_path / "o")
    assert res.unit == "dialogue" and corpus == before
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["dialogues_train.txt",
                                                                   "report.json"]
    assert res.report.removed["eval-overlap"] > 0  # the corpus plants copies of train in eval
    for k in ("valid", "test"):
        assert res.report.after[k].count(0.8) == 0 < res.report.before[k].count(0.8)


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least one eval split"):
        decontaminate({"text": ["a"]}, {}, fields="text")
    with pytest.raises(TypeError, match="evals"):
        decontaminate({"text": ["a"]}, ["b"], fields="text")
    with pytest.raises(ValueError, match="threshold"):
        decontaminate({"text": ["a"]}, {"test": {"text": ["a"]}}, fields="text", threshold=2)
    with pytest.raises(ValueError, match="same kind"):
        decontaminate({"text": ["a"]}, {"test": [["a", "b"]]}, fields="text")


# -------------------------------------------------------------- command line
@pytest.fixture
def fixed_bench(tmp_path) -> Path:
    """A labelled train and an unlabelled test (like MINT), with planted overlap."""
    train = {"text": ["the cat sat on the mat", "a dog ran in the park",
                      "the cat sat on the mat today", "good morning everyone",
                      "it is raining again", "nothing to see here"],
             "label": ["1.5", "2.0", "1.0", "3.0", "2.5", "1.0"],
             "language": ["English"] * 6}
    test = {"text": ["the cat sat on a mat", "it is raining again!", "brand new sentence"],
            "language": ["English"] * 3}
    write_csv(tmp_path / "train.csv", train)
    write_csv(tmp_path / "test.csv", test)
    return tmp_path


def test_clean_with_eval_files_is_fixed_eval_and_never_touches_them(fixed_bench):
    snap = {p: digest(fixed_bench / p) for p in ("train.csv", "test.csv")}
    r = run("clean", "--train", "train.csv", "--test", "test.csv", "--fields", "text",
            "--out", "clean", cwd=fixed_bench)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == ("mode: fixed eval (test is never changed; train rows that overlap it "
                        "are removed, then train is deduplicated)")
    assert {p: digest(fixed_bench / p) for p in ("train.csv", "test.csv")} == snap
    assert sorted(p.name for p in (fixed_bench / "clean").iterdir()) == ["report.json",
                                                                       "train.csv"]
    got = read_csv(fixed_bench / "clean" / "train.csv")
    assert [x["text"] for x in got] == ["a dog ran in the park", "good morning everyone",
                                        "nothing to see here"]
    assert list(got[0]) == ["text", "label", "language"] and got[0]["label"] == "2.0"
    rep = json.loads((fixed_bench / "clean" / "report.json").read_text())
    assert rep["mode"] == "fixed-eval" and rep["removed"]["eval-overlap"] == 3
    units = {u["index"]: u for u in rep["removed_units"]}
    assert sorted(units) == [0, 2, 4]
    assert units[4] == {"split": "train", "index": 4, "reason": "eval-overlap",
                        "kept_split": "test", "kept_for": 1, "score": 1.0,
                        "text": "it is raining again", "kept_text": "it is raining again!"}
    assert "Removed from train: 3 of 6 rows, kept 3" in r.stdout
    # overlap decontaminate is the same mode, the same files
    r2 = run("decontaminate", "--train", "train.csv", "--test", "test.csv", "--fields", "text",
             "--out", "d", cwd=fixed_bench)
    assert r2.returncode == 0, r2.stderr
    assert r2.stdout.splitlines()[0] == lines[0]
    assert (fixed_bench / "d" / "train.csv").read_bytes() == \
        (fixed_bench / "clean" / "train.csv").read_bytes()


def test_clean_folder_names_the_re_split_mode(tmp_path):
    write_corpus(tmp_path / "data", generate_corpus(60, 6, 6, seed=2))
    r = run("clean", "data", "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith("mode: re-split (")
    r = run("clean", "data", "--fixed-eval", "--out", "f", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("mode: fixed eval (valid and test are never changed")
    assert (tmp_path / "f" / "dialogues_train.txt").is_file()


def test_re_split_refuses_to_move_labelled_rows_into_an_unlabelled_split(fixed_bench):
    r = run("clean", "--train", "train.csv", "--test", "test.csv", "--fields", "text",
            "--resplit", "--test-size", "2", "--out", "o", cwd=fixed_bench)
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()[-1]
    assert err.startswith("overlap: error: test.csv: has no column 'label', which train.csv "
                          "has")
    assert "--allow-unlabelled-move" in err and not (fixed_bench / "o").exists()
    r = run("clean", "--train", "train.csv", "--test", "test.csv", "--fields", "text",
            "--resplit", "--allow-unlabelled-move", "--out", "o", cwd=fixed_bench)
    assert r.returncode == 0, r.stderr
    assert "WARNING: the splits have different columns" in r.stdout
    rep = json.loads((fixed_bench / "o" / "report.json").read_text())
    moved_in = rep["moved"].get("train", {}).get("without_column", {}).get("label", 0)
    new_train = read_csv(fixed_bench / "o" / "train.csv")
    assert moved_in == sum(1 for x in new_train if not x["label"])


@pytest.mark.parametrize("args,message", [
    (["clean", "--train", "train.csv", "--test", "test.csv", "--test-size", "2"],
     "--test-size applies to re-splitting"),
    (["clean", "--train", "train.csv", "--test", "test.csv", "--seed", "1"],
     "--seed applies to re-splitting"),
    (["decontaminate", "--train", "train.csv"], "--test FILE and/or --valid FILE"),
    (["decontaminate", "--train", "train.csv", "--test", "nope.csv"],
     "nope.csv: no such file (--test)"),
    (["decontaminate", "--train", "train.csv", "--test", "test.csv", "--fields", "label"],
     "test.csv:1: no column 'label'"),
    (["clean", "--train", "train.csv", "--test", "test.csv", "--resplit", "--fixed-eval"],
     "not allowed with argument"),
])
def test_bad_usage_exits_2_with_one_line(fixed_bench, args, message):
    r = run(*args, "--fields", "text", "--out", "o", cwd=fixed_bench) if "--fields" not in args \
        else run(*args, "--out", "o", cwd=fixed_bench)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert not (fixed_bench / "o").exists()


def test_never_writes_over_an_input(fixed_bench):
    snap = {p: digest(fixed_bench / p) for p in ("train.csv", "test.csv")}
    base = ["decontaminate", "--train", "train.csv", "--test", "test.csv", "--fields", "text"]
    r = run(*base, "--out", ".", "--overwrite", cwd=fixed_bench)  # ./train.csv is the input
    assert r.returncode == 2 and "train.csv: is the input" in r.stderr, r.stderr
    r = run(*base, "--out", "test.csv", "--overwrite", cwd=fixed_bench)
    assert r.returncode == 2 and "test.csv" in r.stderr, r.stderr
    assert {p: digest(fixed_bench / p) for p in ("train.csv", "test.csv")} == snap
    assert sorted(p.name for p in fixed_bench.iterdir()) == ["test.csv", "train.csv"]


# ------------------------------------------------------------ one vocabulary
def test_every_report_names_removed_units_with_the_same_keys(tmp_path):
    rows = {"id": ["a", "b", "c"], "context": ["how are you", "how are you", "hi"],
            "response": ["fine thanks", "fine thanks", "hello"]}
    write_csv(tmp_path / "t.csv", rows)
    write_csv(tmp_path / "e.csv", {k: v[2:] for k, v in rows.items()})
    r = run("dedup", "t.csv", "--out", "d.csv", "--report", "d.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run("clean", "--train", "t.csv", "--test-size", "1", "--out", "c", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run("decontaminate", "--train", "t.csv", "--test", "e.csv", "--out", "x",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    dedup_units = json.loads((tmp_path / "d.json").read_text())["removed_units"]
    clean_units = json.loads((tmp_path / "c" / "report.json").read_text())["dedup"][
        "removed_units"]
    decon_units = json.loads((tmp_path / "x" / "report.json").read_text())["removed_units"]
    assert dedup_units and clean_units and decon_units
    assert {k for u in dedup_units for k in u} == UNIT_KEYS - {"split", "kept_split"} | {
        "cluster"}
    assert {k for u in clean_units for k in u} == UNIT_KEYS
    assert {k for u in decon_units for k in u} == UNIT_KEYS | {"reason"}
    for units in (dedup_units, clean_units, decon_units):
        assert all("kept_index" not in u for u in units)


# ------------------------------------------------------------------ real data
@pytest.mark.data
def test_mint_fixed_eval(shared_data, tmp_path):
    """The README's MINT command: test untouched, nothing left at or above 0.8."""
    mint = shared_data / "mint"
    if not (mint / "train.csv").is_file() or not (mint / "test.csv").is_file():
        pytest.skip("needs mint/train.csv and mint/test.csv in ../shared/data")
    snap = digest(mint / "test.csv")
    r = run("clean", "--train", str(mint / "train.csv"), "--test", str(mint / "test.csv"),
            "--fields", "text", "--out", "clean", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("mode: fixed eval")
    assert digest(mint / "test.csv") == snap
    rep = json.loads((tmp_path / "clean" / "report.json").read_text())
    assert rep["after"]["test"]["ge_0.8"] == 0 < rep["before"]["test"]["ge_0.8"]
    train = read_csv(mint / "train.csv")
    got = read_csv(tmp_path / "clean" / "train.csv")
    removed = {u["index"] for u in rep["removed_units"]}
    assert got == [x for i, x in enumerate(train) if i not in removed]
    assert all(x["label"] for x in got)  # every row of the new train still has its label
