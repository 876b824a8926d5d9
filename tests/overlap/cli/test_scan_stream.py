"""``overlap scan --train-stream``: the streaming scan from the command line.

The streamed scan must print and write what ``overlap scan --train`` prints and
writes on the same rows (ties across chunk boundaries included), read shard
folders, refuse outputs among its inputs, and fail in one line on bad input.
"""

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
from overlap.pipeline import scan, scan_corpus

PKG_ROOT = str(Path(_overlap_pkg.__file__).resolve().parent.parent)
WORDS = "the cat sat on a mat dog ran far away red blue sky sea".split()
LANGS = ("en", "de", "zh")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    return subprocess.run([sys.executable, "-m", "overlap", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _texts(rng: np.random.Generator, n: int, lo: int = 1, hi: int = 6) -> list[str]:
    return [" ".join(rng.choice(WORDS, rng.integers(lo, hi))) for _ in range(n)]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def _read_csv(path: Path) -> dict[str, list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return {h: [r[k] for r in rows[1:]] for k, h in enumerate(rows[0])}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Train rows that repeat (every match ties with a later copy), eval rows with ids.

    Files: ``train.jsonl`` (all rows, fields text and context), ``shards/``
    (the same rows cut into a JSONL, a CSV and a text shard), ``eval.csv``
    (id, text, context, language).
    """
    d = tmp_path_factory.mktemp("stream")
    rng = np.random.default_rng(7)
    pool = _texts(rng, 12)
    texts = [pool[i] for i in rng.integers(0, len(pool), 40)] + _texts(rng, 8)
    context = [pool[i] for i in rng.integers(0, len(pool), len(texts))]
    train = [{"text": t, "context": c} for t, c in zip(texts, context)]
    _write_jsonl(d / "train.jsonl", train)
    (d / "shards").mkdir()
    _write_jsonl(d / "shards" / "part-000.jsonl", train[:17])
    with open(d / "shards" / "part-001.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["context", "text"])
        w.writerows([r["context"], r["text"]] for r in train[17:33])
    _write_jsonl(d / "shards" / "part-002.jsonl", train[33:])
    evals = _texts(rng, 10) + [pool[i] for i in range(0, len(pool), 2)] + ["zzz qqq"]
    ectx = [pool[i] for i in rng.integers(0, len(pool), len(evals))]
    with open(d / "eval.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "context", "language"])
        w.writerows([f"e{i}", t, c, LANGS[i % 3]] for i, (t, c) in enumerate(zip(evals, ectx)))
    return d


def _summary_lines(stdout: str) -> list[str]:
    """The printed summary, group table and histogram (not the header, timing or files)."""
    keep = []
    for line in stdout.splitlines()[1:]:
        s = line.strip()
        if s.startswith(("streamed:", "Time:", "scores written", "summary written")):
            continue
        keep.append(line)
    return keep


def _scan_both(data: Path, stream: str, out: str, fields: str, chunk_rows: str) -> tuple:
    m = run("scan", "--train", "train.jsonl", "--eval", "eval.csv", "--out", f"m-{out}",
            "--by", "language", "--at", "0.3,0.5,1", "--fields", fields, cwd=data)
    s = run("scan", "--train-stream", stream, "--eval", "eval.csv", "--out", f"s-{out}",
            "--by", "language", "--at", "0.3,0.5,1", "--fields", fields,
            "--chunk-rows", chunk_rows, cwd=data)
    assert m.returncode == 0, m.stderr
    assert s.returncode == 0, s.stderr
    return m, s, _read_csv(data / f"m-{out}"), _read_csv(data / f"s-{out}")


@pytest.mark.parametrize("chunk_rows", ["1", "3", "65536"])
def test_stream_scan_equals_in_memory_scan_with_ties_across_chunks(data, chunk_rows):
    m, s, mt, st = _scan_both(data, "train.jsonl", f"{chunk_rows}.csv", "text", chunk_rows)
    assert _summary_lines(s.stdout) == _summary_lines(m.stdout)
    assert "by language" in s.stdout and "≥0.5" in s.stdout
    for col in _shared(mt, "text"):  # every column of the in-memory output, equal
        assert st[col] == mt[col], col
    assert list(st) == ["eval_index", "id", "context", "language", "score", "train_index",
                        "train_shard", "train_shard_row", "eval_text", "train_text"]
    # ties are real: every matched train text occurs again later in train, and the
    # first occurrence is the one reported (lowest global row)
    train = [json.loads(x)["text"] for x in (data / "train.jsonl").read_text().splitlines()]
    idx = [int(i) for i in st["train_index"]]
    matched = [j for j in idx if j >= 0]
    assert sum(train.count(train[j]) > 1 for j in matched) >= 5
    assert all(train.index(train[j]) <= j for j in matched)
    assert idx.count(-1) >= 1  # "zzz qqq" matches nothing
    for j, shard, row, text in zip(idx, st["train_shard"], st["train_shard_row"],
                                   st["train_text"]):
        if j < 0:
            assert (shard, row, text) == ("", "-1", "")
        else:
            assert shard == "train.jsonl" and int(row) == j and text == train[j]


def test_stream_scan_of_a_shard_folder_with_two_fields(data):
    m, s, mt, st = _scan_both(data, "shards", "two.csv", "text,context", "4")
    assert _summary_lines(s.stdout) == _summary_lines(m.stdout)
    for col in _shared(mt, "text", "context"):
        assert st[col] == mt[col], col
    assert "streamed: 3 shard file(s)" in s.stdout
    shards = {p: _shard_texts(data / p) for p in set(st["train_shard"]) if p}
    assert len(shards) >= 2  # matches come from more than one shard
    for j, p, row, t, c in zip(st["train_index"], st["train_shard"], st["train_shard_row"],
                               st["train_text"], st["train_context"]):
        if int(j) >= 0:
            assert shards[p][int(row)] == (t, c)


def _shared(table: dict, *fields: str) -> list[str]:
    """Columns of an in-memory scan's output that a streamed scan also writes.

    The streamed corpus is read for the compared fields only, so the train
    file's other columns (``train_C``) are not in its output.
    """
    train = {"train_index", *(f"train_{f}" for f in fields)}
    return [c for c in table if not c.startswith("train_") or c in train]


def _shard_texts(path: Path) -> list[tuple[str, str]]:
    if path.suffix == ".csv":
        t = _read_csv(path)
        return list(zip(t["text"], t["context"]))
    return [(r["text"], r["context"]) for r in map(json.loads, path.read_text().splitlines())]


def test_stream_scan_summary_file_and_min_score(data):
    s = run("scan", "--train-stream", "shards", "--eval", "eval.csv", "--fields", "text",
            "--min-score", "0.5", "--chunk-rows", "5", "--by", "language",
            "--summary", "sum.json", "--out", "ms.jsonl", "-q", cwd=data)
    assert s.returncode == 0, s.stderr
    assert s.stdout == "" and s.stderr == ""  # --quiet
    m = scan(str(data / "eval.csv"), str(data / "train.jsonl"), fields="text")
    rows = [json.loads(x) for x in (data / "ms.jsonl").read_text().splitlines()]
    low = m.score < 0.5
    assert low.any() and (~low).any()
    assert [r["score"] for r in rows] == np.where(low, 0.0, m.score).tolist()
    assert [r["train_index"] for r in rows] == np.where(low, -1, m.index).tolist()
    summary = json.loads((data / "sum.json").read_text())
    assert [r["language"] for r in summary] == ["en", "de", "zh", "overall"]
    assert summary[-1]["n"] == len(rows)


def test_scan_corpus_api_equals_scan(data):
    train = [json.loads(x) for x in (data / "train.jsonl").read_text().splitlines()]
    table = {"text": [r["text"] for r in train], "context": [r["context"] for r in train]}
    for fields in ("text", ["text", "context"]):
        m = scan(str(data / "eval.csv"), table, fields=fields, by="language", at=[0.5, 1.0])
        s = scan_corpus(str(data / "eval.csv"), data / "shards", fields=fields,
                        by="language", at=[0.5, 1.0], chunk_rows=2)
        np.testing.assert_array_equal(s.score, m.score)
        np.testing.assert_array_equal(s.index, m.index)
        assert s.summary == m.summary and s.groups == m.groups
        assert s.n_references == len(train)
        st, mt = s.to_table(), m.to_table()
        names = [fields] if isinstance(fields, str) else fields
        assert set(st) - set(mt) == {"train_shard", "train_shard_row"}
        for col in _shared(mt, *names):
            assert st[col] == mt[col], col


def test_scan_names_the_fields_of_a_comma_separated_str(data):
    """Regression: ``scan(..., fields="text")`` named its fields t, e, x, t."""
    table = {"text": ["a b", "c d"], "lang": ["en", "de"]}
    for fields in ("text", "text,lang"):
        m = scan(table, {"text": ["a b"], "lang": ["en"]}, fields=fields)
        assert m.fields == tuple(fields.split(","))
        assert f"eval_{fields.split(',')[0]}" in m.to_table()


def test_scan_corpus_rejects_bad_arguments(data):
    with pytest.raises(ValueError, match="corpus_format"):
        scan_corpus(str(data / "eval.csv"), data / "shards", fields="text",
                    corpus_format="xml")
    with pytest.raises(TypeError, match="queries must be a table"):
        scan_corpus(["a b"], data / "shards")
    with pytest.raises(ValueError, match="chunk_rows"):
        scan_corpus(str(data / "eval.csv"), data / "shards", fields="text", chunk_rows=0)


# -------------------------------------------------------------- refusals
@pytest.mark.parametrize("out", ["shards/part-001.csv", "shards/new.csv", "train.jsonl"])
@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_output_among_the_stream_inputs_is_refused(data, out, overwrite):
    stream = "train.jsonl" if out == "train.jsonl" else "shards"
    before = {p: p.read_bytes() for p in [data / "train.jsonl", *(data / "shards").iterdir()]}
    r = run("scan", "--train-stream", stream, "--eval", "eval.csv", "--fields", "text",
            "--out", out, *overwrite, cwd=data)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1  # refused before any step starts
    assert "input" in r.stderr
    after = {p: p.read_bytes() for p in [data / "train.jsonl", *(data / "shards").iterdir()]}
    assert after == before


def test_output_equal_to_the_eval_file_is_refused(data):
    r = run("scan", "--train-stream", "shards", "--eval", "eval.csv", "--fields", "text",
            "--summary", "eval.csv", "--overwrite", cwd=data)
    assert r.returncode == 2 and "is the input" in r.stderr


# -------------------------------------------------------------- bad input
@pytest.mark.parametrize("args,message", [
    (["--train-stream", "train.jsonl", "--stream-format", "xml"], "--stream-format must be"),
    (["--train-stream", "odd.dat"], "give --stream-format"),
    (["--train-stream", "missing.jsonl"], "no such file"),
    (["--train-stream", "bad"], "bad/part-0.jsonl:2: invalid JSON"),
    (["--train-stream", "train.jsonl", "--fields", "nope"], "no column 'nope'"),
    (["--train", "train.jsonl", "--chunk-rows", "4"], "--chunk-rows applies to --train-stream"),
    (["--train", "train.jsonl", "--min-score", "0.5"], "--min-score applies to --train-stream"),
])
def test_bad_stream_input_is_one_line_and_exit_2(data, args, message):
    (data / "odd.dat").write_text("a b\n")
    (data / "bad").mkdir(exist_ok=True)
    (data / "bad" / "part-0.jsonl").write_text('{"text": "a"}\n{"text": \n')
    r = run("scan", "--eval", "eval.csv", *args, cwd=data)
    assert r.returncode == 2, r.stderr
    errors = [x for x in r.stderr.splitlines() if not x.startswith("[")]  # not step lines
    assert len(errors) == 1 and message in errors[0], r.stderr
    assert errors[0].startswith("overlap: error: ")


def test_train_and_train_stream_are_exclusive(data):
    r = run("scan", "--eval", "eval.csv", "--train", "train.jsonl", "--train-stream",
            "shards", cwd=data)
    assert r.returncode == 2 and "not allowed with" in r.stderr


def test_help_lists_the_stream_options_and_every_tokenizer(data):
    r = run("scan", "--help", cwd=data)
    assert r.returncode == 0
    for word in ("--train-stream", "--stream-format", "--chunk-rows", "--min-score",
                 *_overlap_pkg.TOKENIZERS):
        assert word in r.stdout


# -------------------------------------------------------------- progress
def test_byte_progress_in_a_log_is_plain_lines(monkeypatch):
    from overlap import cli

    clock = [100.0]
    monkeypatch.setattr(cli.time, "monotonic", lambda: clock[0])
    err = io.StringIO()
    con = cli.Console(stream=err)
    con.log("scan: a corpus")
    for done in range(0, 5_000_001, 500_000):
        clock[0] += 1.0
        con.byte_progress(done, 5_000_000)
    text = err.getvalue()
    assert "\r" not in text
    lines = [x for x in text.splitlines() if x.startswith("scan:")]
    assert 2 <= len(lines) <= 4  # at most one line per 5 s, and the last
    assert lines[-1].startswith("scan: 5.00 MB/5.00 MB (100.0%)")
    assert lines[-1].endswith("500.00 kB/s")  # 5 MB in 10 s
