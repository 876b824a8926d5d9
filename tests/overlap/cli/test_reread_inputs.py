"""``overlap dedup`` and ``overlap scan --train`` let a table go during the
search and read it again (issue 29).

With the arrow reader, the Arrow columns of the dedup's input (without
``--report``) and of the scan's train file are dropped once tokenized, and
the file is read again to write the kept rows or the matches' texts
(``overlap.pipeline.reread``).  The files are the bytes of the runs that keep
the table (the python reader's, and ``--report``'s); the table really is gone
during the search (weak references to its Arrow arrays); a file that changes
in between is refused and nothing is written.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import weakref

import numpy as np
import pytest

from overlap.cli import main
from overlap.pipeline import reread, scanning, tables

# the module (``overlap.dedup`` is also the package's function)
dedup_module = importlib.import_module("overlap.dedup")

pytest.importorskip("pyarrow", reason="the table let go is the arrow reader's")


def _write_input(path, n: int = 120, seed: int = 3) -> None:
    """JSONL rows (id, text, label) with near duplicates, an empty text, non-ASCII."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(25)] + ["ça", "日本"]
    texts = [" ".join(rng.choice(words, int(rng.integers(1, 9)))) for _ in range(n)]
    texts += [t + " more" for t in texts[:n // 3]] + [""]
    with open(path, "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": i, "text": t, "label": "ab"[i % 2]},
                               ensure_ascii=False) + "\n")


@pytest.fixture
def watch(monkeypatch):
    """Weak references to the Arrow arrays of every table read, and whether
    those of the latest read were alive when a dedup ran."""
    seen: dict = {"reads": [], "alive_in_search": []}
    read = tables.read_named_columns
    run = dedup_module.dedup_fields

    def spy_read(*args, **kwargs):
        names, cols, table = read(*args, **kwargs)
        seen["reads"].append([weakref.ref(c.arrow) for c in table.values()
                              if hasattr(c, "arrow")])
        return names, cols, table

    def spy_run(*args, **kwargs):
        gc.collect()
        seen["alive_in_search"].append([r() is not None for r in seen["reads"][-1]])
        return run(*args, **kwargs)

    def spy_search(*args, **kwargs):
        gc.collect()
        seen["alive_in_search"].append([r() is not None for r in seen["reads"][0]])
        return search(*args, **kwargs)

    search = scanning.max_overlap_handed
    monkeypatch.setattr(tables, "read_named_columns", spy_read)
    monkeypatch.setattr(reread, "read_named_columns", spy_read)
    monkeypatch.setattr(scanning, "read_named_columns", spy_read)
    monkeypatch.setattr(dedup_module, "dedup_fields", spy_run)
    monkeypatch.setattr(scanning, "max_overlap_handed", spy_search)
    return seen


@pytest.mark.parametrize("out_name", ["kept.jsonl", "kept.csv", "kept.parquet"])
def test_the_output_is_that_of_the_runs_that_keep_the_table(tmp_path, watch, out_name):
    src = tmp_path / "in.jsonl"
    _write_input(src)
    before = src.read_bytes()
    outs = {}
    for label, extra in (("arrow", []), ("python", ["--engine", "python"]),
                         ("report", ["--report", str(tmp_path / "rep.json")])):
        out = tmp_path / label / out_name
        assert main(["dedup", str(src), "--out", str(out), "--threshold", "0.7", "-q",
                     "--parents", *extra]) == 0
        outs[label] = out.read_bytes()
    assert outs["arrow"] == outs["python"] == outs["report"]
    assert src.read_bytes() == before  # the input is only read
    # arrow: no Arrow array alive during the dedup, the file read twice;
    # python: lists (kept); --report: its table kept (the report reads it)
    arrow, python, report = watch["alive_in_search"]
    assert arrow == [False] * 3 and python == [] and report == [True] * 3
    assert [len(r) for r in watch["reads"]] == [3, 3, 0, 3]


def test_report_run_keeps_its_table(tmp_path, watch):
    src = tmp_path / "in.jsonl"
    _write_input(src)
    assert main(["dedup", str(src), "--out", str(tmp_path / "k.jsonl"), "--threshold", "0.7",
                 "--report", str(tmp_path / "r.json"), "-q"]) == 0
    assert len(watch["reads"]) == 1
    assert watch["alive_in_search"] == [[True] * len(watch["reads"][0])]


def test_to_stdout_reads_again_too(tmp_path, watch, capsys):
    src = tmp_path / "in.jsonl"
    _write_input(src, n=30)
    assert main(["dedup", str(src), "--out", "-", "--threshold", "0.7"]) == 0
    printed = capsys.readouterr().out
    assert main(["dedup", str(src), "--out", str(tmp_path / "k.jsonl"), "--threshold", "0.7",
                 "-q", "--engine", "python"]) == 0
    assert printed == (tmp_path / "k.jsonl").read_text(encoding="utf-8")
    assert len(watch["reads"]) == 3 and watch["alive_in_search"][0] == [False] * 3


@pytest.mark.parametrize("change", ["appended", "touched"])
def test_a_file_changed_during_the_dedup_is_refused(tmp_path, monkeypatch, capsys, change):
    src = tmp_path / "in.jsonl"
    _write_input(src, n=40)
    run = dedup_module.dedup_fields

    def changing(*args, **kwargs):
        res = run(*args, **kwargs)
        if change == "appended":
            with open(src, "a", encoding="utf-8") as f:
                f.write(json.dumps({"id": -1, "text": "late", "label": "a"}) + "\n")
        else:  # the same bytes, a new modification time
            st = os.stat(src)
            os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        return res

    monkeypatch.setattr(dedup_module, "dedup_fields", changing)
    out = tmp_path / "k.jsonl"
    assert main(["dedup", str(src), "--out", str(out), "--threshold", "0.7", "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{src}: the file changed while it was processed" in err
    assert "nothing was written" in err
    assert not out.exists() and os.listdir(tmp_path) == ["in.jsonl"]


def test_table_again_checks_the_rows(tmp_path):
    src = tmp_path / "in.jsonl"
    _write_input(src, n=10)
    stamp = reread.FileStamp(src)
    _, _, table = tables.read_named_columns(src, None, "jsonl", arrow=True)
    n = len(table["text"])
    names, cols, got = reread.TableAgain(stamp, None, "jsonl", n).read()
    assert names == ["text"] and cols == [got["text"]]
    assert list(got) == list(table)
    assert all(list(got[k]) == list(table[k]) for k in table)
    with pytest.raises(ValueError, match=rf"{n:,} rows read again, {n + 1:,} the first time"):
        reread.TableAgain(stamp, None, "jsonl", n + 1).read()


def test_file_stamp_names_a_file_gone(tmp_path):
    src = tmp_path / "in.jsonl"
    _write_input(src, n=5)
    stamp = reread.FileStamp(src)
    stamp.check()
    os.remove(src)
    with pytest.raises(FileNotFoundError, match="in.jsonl: the file went away"):
        stamp.check()


def test_held_by_arrow():
    pa = pytest.importorskip("pyarrow")
    from overlap._columns import ArrowColumn

    assert reread.held_by_arrow({"a": ArrowColumn(pa.array(["x"]))})
    assert not reread.held_by_arrow({"a": ArrowColumn(pa.array(["x"])), "b": ["y"]})
    assert not reread.held_by_arrow({})


def _write_scan_inputs(tmp_path) -> tuple:
    train, evalf = tmp_path / "train.jsonl", tmp_path / "eval.jsonl"
    _write_input(train, n=150, seed=5)
    lines = train.read_text(encoding="utf-8").splitlines()[::7]
    evalf.write_text("".join(line.replace('"text": "', '"text": "x ') + "\n"
                             for line in lines), encoding="utf-8")
    return train, evalf


@pytest.mark.parametrize("out_name", ["scores.jsonl", "scores.csv"])
def test_scan_train_is_read_again_with_the_same_output(tmp_path, watch, out_name):
    train, evalf = _write_scan_inputs(tmp_path)
    before = train.read_bytes()
    outs = []
    for extra in ([], ["--engine", "python"]):
        out = tmp_path / f"{len(outs)}" / out_name
        assert main(["scan", str(evalf), "--train", str(train), "--out", str(out), "-q",
                     "--parents", *extra]) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and train.read_bytes() == before
    assert b"train_text" in outs[0] and b"train_label" in outs[0]
    # the train file (read first) had no Arrow array alive during the search;
    # the arrow run read it again, the python one kept its lists
    assert watch["alive_in_search"][0] == [False] * 3
    assert [len(r) for r in watch["reads"]] == [3, 3, 3, 0, 0]


def test_scan_train_changed_during_the_search_is_refused(tmp_path, monkeypatch, capsys):
    train, evalf = _write_scan_inputs(tmp_path)
    search = scanning.max_overlap_handed

    def changing(*args, **kwargs):
        res = search(*args, **kwargs)
        with open(train, "a", encoding="utf-8") as f:
            f.write(json.dumps({"id": -1, "text": "late", "label": "a"}) + "\n")
        return res

    monkeypatch.setattr(scanning, "max_overlap_handed", changing)
    out = tmp_path / "s.jsonl"
    assert main(["scan", str(evalf), "--train", str(train), "--out", str(out), "-q"]) == 2
    assert f"{train}: the file changed while it was processed" in capsys.readouterr().err
    assert not out.exists()
