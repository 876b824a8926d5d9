"""Progress of reading, tokenizing, dedup and writing (issue 31, item 6).

Inputs big enough for a step to take a second are too slow here: the plumbing
is checked with small inputs, a ``progress=`` callable collecting the updates
and, for the command line, the one-second delay forced to zero.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from overlap import TokenSets, tokensets
from overlap._progress import format_bytes
from overlap.dedup import dedup
from overlap.pipeline import dedup_first
from overlap.pipeline.dialogue import read_dialogues
from overlap.pipeline.scanning import tokenize_fields
from overlap.pipeline.tables import read_fields, read_named_fields, read_table, write_table

N = 10_000  # rows: more than two reports' worth (one every 4,096 lines)


def _collect():
    seen: list[tuple[int, int]] = []
    return seen, lambda done, total: seen.append((done, total))


def _check(seen, total):
    assert len(seen) >= 3, seen  # reports along the way, not only at the end
    assert seen[-1] == (total, total)
    dones = [d for d, _ in seen]
    assert dones == sorted(dones) and all(t == total for _, t in seen)


def _rows(n=N):
    """Two fields of random words: few pairs above any threshold, a few copies."""
    rng = np.random.default_rng(0)
    words = rng.integers(0, 5000, size=(n, 12))
    rows = [(" ".join(f"w{x}" for x in w[:7]), " ".join(f"w{x}" for x in w[7:])) for w in words]
    for i in range(10, n, 50):
        rows[i] = rows[i - 7]
    return rows


@pytest.fixture
def files(tmp_path):
    rows = _rows()
    paths = {}
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"id": i, "context": c, "response": r}) + "\n"
                         for i, (c, r) in enumerate(rows)), encoding="utf-8")
    paths["jsonl"] = p
    p = tmp_path / "t.csv"
    with open(p, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["context", "response"])
        w.writerows(rows)
    paths["csv"] = p
    p = tmp_path / "t.txt"
    p.write_text("".join(c + "\n" for c, _ in rows), encoding="utf-8")
    paths["text"] = p
    p = tmp_path / "d.txt"
    p.write_text("".join(f"{c} __eou__ {r} __eou__\n" for c, r in rows), encoding="utf-8")
    paths["dailydialog"] = p
    return paths


@pytest.mark.parametrize("kind", ["jsonl", "csv", "text", "dailydialog"])
def test_reading_reports_bytes_up_to_the_file_size(files, kind):
    path = files[kind]
    seen, cb = _collect()
    names, cols, table = read_named_fields(path, progress=cb)
    _check(seen, path.stat().st_size)
    assert read_named_fields(path) == (names, cols, table)  # the same table either way


def test_read_table_read_fields_and_read_dialogues_take_progress(files):
    for fn, path in ((read_table, files["csv"]), (read_fields, files["jsonl"]),
                     (read_dialogues, files["dailydialog"])):
        seen, cb = _collect()
        fn(path, progress=cb)
        _check(seen, path.stat().st_size)
        with pytest.raises(TypeError, match="progress"):
            fn(path, progress="yes")


def test_reading_an_in_memory_table_reports_nothing():
    seen, cb = _collect()
    read_named_fields({"text": ["a", "b"]}, progress=cb)
    assert seen == []


def test_reading_that_fails_does_not_claim_the_whole_file(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"text": "a"}\n' * N + "not json\n", encoding="utf-8")
    seen, cb = _collect()
    with pytest.raises(ValueError, match=f"bad.jsonl:{N + 1}"):
        read_named_fields(p, progress=cb)
    assert seen and seen[-1][0] < p.stat().st_size


def test_jsonl_keys_first_seen_late_read_as_none_before(tmp_path):
    p = tmp_path / "late.jsonl"
    p.write_text('{"text": "a"}\n\n{"text": "b", "lang": "en"}\n{"lang": "fr", "text": "c"}\n',
                 encoding="utf-8")
    assert read_table(p) == {"text": ["a", "b", "c"], "lang": [None, "en", "fr"]}


def test_from_texts_reports_every_chunk(monkeypatch):
    texts = [f"text number {i} here" for i in range(N)]
    plain = TokenSets.from_texts(texts, "intl")
    monkeypatch.setattr(tokensets, "TEXT_CHUNK", 20_000)  # about 1,000 texts a chunk
    seen, cb = _collect()
    ts = TokenSets.from_texts(texts, "intl", progress=cb)
    _check(seen, N)
    assert len(seen) >= 10
    assert np.array_equal(ts.indptr, plain.indptr) and np.array_equal(ts.hashes, plain.hashes)


def test_from_texts_progress_with_a_callable_tokenizer():
    seen, cb = _collect()
    TokenSets.from_texts([f"a {i}" for i in range(N)], str.split, progress=cb)
    assert seen == [(8192, N), (N, N)]
    seen.clear()
    TokenSets.from_texts([], progress=cb)
    assert seen == [(0, 0)]


@pytest.mark.parametrize("bad", ["yes", 1, 0.5])
def test_from_texts_progress_is_checked(bad):
    with pytest.raises(TypeError, match="progress"):
        TokenSets.from_texts(["a"], progress=bad)


def test_tokenize_fields_one_count_over_all_fields(monkeypatch):
    monkeypatch.setattr(tokensets, "TEXT_CHUNK", 50_000)
    ctx, resp = map(list, zip(*_rows()))
    seen, cb = _collect()
    out = tokenize_fields([ctx, resp], progress=cb)
    _check(seen, 2 * N)
    assert len(out) == 2 and any(d == N for d, _ in seen)
    with pytest.raises(TypeError, match="progress"):
        tokenize_fields([ctx], progress="yes")


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "text"])
def test_write_table_reports_rows(tmp_path, fmt):
    table = {"text": [f"row {i}" for i in range(N)]}
    seen, cb = _collect()
    write_table(tmp_path / f"out.{fmt}", table, fmt, progress=cb)
    _check(seen, N)
    assert read_table(tmp_path / f"out.{fmt}", fmt) == table


def _units():
    ctx, resp = map(list, zip(*_rows(500)))
    return tokenize_fields([ctx, resp])


@pytest.mark.parametrize("fn", [dedup, dedup_first])
def test_dedup_names_its_phases(fn):
    said: list[str] = []
    res = fn(_units(), threshold=0.5, _log=said.append)
    assert [s.split(" ")[1] for s in said] == ["joining", "passes" if fn is dedup else "keeping"]
    assert all(s.startswith("dedup: ") for s in said)
    plain = fn(_units(), threshold=0.5)
    assert np.array_equal(res.keep, plain.keep)


# ------------------------------------------------------------- command line
def test_a_bar_shows_once_the_step_has_run_a_second(monkeypatch):
    """The first update may come late in a step (after a long first chunk)."""
    from overlap import cli

    clock = [50.0]
    monkeypatch.setattr(cli.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(cli.time, "perf_counter", lambda: clock[0])
    log = io.StringIO()
    con = cli.Console(stream=log)
    con.log("tokenize: the fields")
    clock[0] += 0.9
    con.progress(1, 3)  # 0.9 s into the step: nothing yet
    assert "1/3" not in log.getvalue()
    clock[0] += 0.2
    con.progress(2, 3)  # 1.1 s into the step, 0.2 s into the bar: shown
    clock[0] += 0.2
    con.progress(3, 3)
    bars = [x for x in log.getvalue().splitlines() if x.startswith("tokenize: ") and "/3" in x]
    assert bars[0].startswith("tokenize: 2/3") and bars[-1].startswith("tokenize: 3/3 (100.0%)")


def test_dedup_command_in_a_log_shows_every_step(tmp_path, monkeypatch, capsys):
    from overlap import cli

    monkeypatch.setattr(cli, "SHOW_AFTER", 0.0)  # every bar at once: no step is a second long
    monkeypatch.setattr(tokensets, "TEXT_CHUNK", 50_000)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"context": c, "response": r}) + "\n"
                           for c, r in _rows()), encoding="utf-8")
    for keep in ("most-overlapped", "first"):
        out = tmp_path / f"out-{keep}.jsonl"
        assert cli.main(["dedup", str(src), "--out", str(out), "--keep", keep,
                         "--threshold", "0.5", "--threads", "1"]) == 0
        err = capsys.readouterr().err
        assert "\r" not in err
        size = src.stat().st_size
        n_out = sum(1 for _ in open(out, encoding="utf-8"))
        for line in (f"read: {format_bytes(size)}/{format_bytes(size)} (100.0%)",
                     f"tokenize: {2 * N:,}/{2 * N:,} (100.0%)",
                     f"dedup: {N:,}/{N:,} (100.0%)",
                     f"write: {n_out:,}/{n_out:,} (100.0%)"):
            assert any(x.startswith(line) for x in err.splitlines()), (line, err)
        steps = [x.split("] ", 1)[1] for x in err.splitlines() if x.startswith("[")]
        assert [s.split(":")[0] for s in steps] == ["read", "tokenize", "dedup", "dedup",
                                                    "dedup", "write"]
        assert "indexing" in steps[2] and "joining" in steps[3]


def test_scan_reports_reading_and_tokenizing(files, monkeypatch):
    # overlap scan's read and tokenize steps get bars too (not only the search)
    from overlap.pipeline import scan

    monkeypatch.setattr(tokensets, "TEXT_CHUNK", 20_000)
    read, on_read = _collect()
    seen, on_progress = _collect()
    res = scan(files["csv"], files["jsonl"], fields="context,response",
               read_progress=on_read, progress=on_progress)
    assert len(res.score) == N
    sizes = {files["csv"].stat().st_size, files["jsonl"].stat().st_size}
    assert {t for _, t in read} == sizes and {(s, s) for s in sizes} <= set(read)
    tokenized = [(d, t) for d, t in seen if t == 2 * N]  # two fields of N rows, each side
    assert tokenized and tokenized[-1] == (2 * N, 2 * N) and len(tokenized) >= 4
    with pytest.raises(TypeError, match="progress"):
        scan(files["csv"], fields="context,response", read_progress="yes")
