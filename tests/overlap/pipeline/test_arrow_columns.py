"""Columns kept in Arrow buffers (``overlap._columns``) give the values of lists.

The command line's in-memory paths (``overlap scan --train``, ``overlap
dedup``) keep the columns of a JSONL or text file read by pyarrow as
:class:`~overlap._columns.ArrowColumn`.  Checked here: its row operations
against the plain-Python definitions of ``reference.tables``; the whole
tables it reads against the stdlib reader's lists (blocks cut everywhere,
columns whose type changes from block to block); and the commands' output
files, byte for byte, between the arrow and the stdlib reader.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap import _batches, _columns
from overlap._columns import ArrowColumn, as_list, keep_rows, take
from overlap.cli import main
from overlap.pipeline.tables import read_named_columns, read_named_fields

from reference import tables as ref

pa = pytest.importorskip("pyarrow", reason="Arrow columns need pyarrow")

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
values = st.one_of(st.lists(texts, max_size=30),
                   st.lists(st.integers(-2**63, 2**63 - 1), max_size=30),
                   st.lists(st.booleans(), max_size=30))


def _column(vals: list, chunks: int) -> ArrowColumn:
    """``vals`` as an ArrowColumn cut into about ``chunks`` pieces (one Array for 0)."""
    arr = pa.array(vals, type=pa.string() if not vals else None)
    if chunks == 0:
        return ArrowColumn(arr)
    step = max(1, len(vals) // chunks)
    return ArrowColumn(pa.chunked_array([arr.slice(a, step) for a in range(0, len(vals), step)],
                                        type=arr.type))


@settings(max_examples=150, deadline=None)
@given(vals=values, chunks=st.integers(0, 4), data=st.data())
def test_row_operations_equal_the_list_definitions(vals, chunks, data):
    col = _column(vals, chunks)
    n = len(vals)
    with pytest.MonkeyPatch.context() as mp:  # iteration a few rows at a time
        mp.setattr(_columns, "_ITER_ROWS", data.draw(st.integers(1, 7)))
        assert list(col) == vals
    assert len(col) == n and list(col) == vals and as_list(col) == vals
    for i in range(-n, n):
        assert col[i] == vals[i]
    for i in (n, -n - 1):
        with pytest.raises(IndexError):
            col[i]
    a, z = data.draw(st.integers(-n - 2, n + 2)), data.draw(st.integers(-n - 2, n + 2))
    step = data.draw(st.sampled_from([None, 1, 2, -1]))
    assert col[a:z:step] == vals[a:z:step]
    index = data.draw(st.lists(st.integers(-1, n - 1) if n else st.just(-1), max_size=20))
    for fill in ("", None):
        got = take(col, index, fill)
        assert list(got) == ref.taken(vals, index, fill)
        assert isinstance(got, ArrowColumn) or (fill is not None and not col.is_string) or (
            len(index) * _columns._SMALL_TAKE < n)
        assert take(vals, index, fill) == ref.taken(vals, index, fill)
    keep = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    got = keep_rows(col, np.array(keep, dtype=bool))
    assert isinstance(got, ArrowColumn) and list(got) == ref.kept(vals, keep)
    assert keep_rows(vals, np.array(keep, dtype=bool)) == ref.kept(vals, keep)
    assert vals == list(col)  # nothing changed in place


# ------------------------------------------------------------ whole files
LINES = [
    '{"text": "plain words", "id": 1, "label": "a"}',
    '{"id": 2, "text": "keys swapped", "label": "b"}',
    '{"text": "ünïcödé 今天 😀", "id": 3, "label": "a"}',
    '{"text": "", "id": 4, "label": "c"}',
    '{"text": "id as text", "id": "x5", "label": "a"}',  # id changes type between blocks
    '{"text": "flag", "id": 6, "label": true}',
    '{"text": "null label", "id": 7, "label": null}',
    '{"text": "no label", "id": 8}',
    '',
]


def _read(path, fields, engine, arrow):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OVERLAP_READER", engine)
        try:
            names, cols, table = read_named_columns(path, fields, arrow=arrow)
        except ValueError as e:
            return "error", str(e)
    return names, [as_list(c) for c in cols], {k: as_list(v) for k, v in table.items()}


@settings(max_examples=80, deadline=None)
@given(lines=st.lists(st.sampled_from(LINES), max_size=14),
       block=st.sampled_from([8, 48, 1 << 20]), fields=st.sampled_from([None, ["text"]]))
def test_arrow_tables_hold_the_stdlib_readers_values(tmp_path_factory, lines, block, fields):
    path = str(tmp_path_factory.mktemp("t") / "f.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_batches, "BLOCK_BYTES", block)
        mp.setattr(_batches, "Blocks", _small_blocks(block))
        got = _read(path, fields, "arrow", True)
    want = _read(path, fields, "python", False)
    assert got == want
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OVERLAP_READER", "python")
        try:
            public = read_named_fields(path, fields)
        except ValueError as e:
            public = ("error", str(e))
    assert want == public  # and the public reader gives lists, as before


def _small_blocks(block):
    """``Blocks`` with the block size of the test (the reader asks for at least 64 KiB)."""
    cls = _batches.Blocks

    class Small(cls):
        def __init__(self, path, limit, block_bytes):
            super().__init__(path, limit, block)

    return Small


def test_arrow_columns_are_taken_when_pyarrow_reads(tmp_path, monkeypatch):
    path = str(tmp_path / "f.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"text": "a b", "id": 1}\n{"text": "c", "id": 2}\n')
    monkeypatch.setenv("OVERLAP_READER", "arrow")
    names, cols, table = read_named_columns(path, arrow=True)
    assert names == ["text"] and all(isinstance(v, ArrowColumn) for v in table.values())
    assert list(table["id"]) == [1, 2] and list(cols[0]) == ["a b", "c"]
    assert isinstance(read_named_fields(path)[2]["text"], list)  # the public reader: lists
    monkeypatch.setenv("OVERLAP_READER", "python")
    assert isinstance(read_named_columns(path, arrow=True)[2]["text"], list)


# ------------------------------------------------------------ the commands
def _rows(rng, n, dup_every):
    words = [f"w{i}" for i in range(40)]
    out = []
    for i in range(n):
        src = i - 3 if dup_every and i % dup_every == 0 and i >= 3 else i
        r = np.random.default_rng(src)
        text = " ".join(words[j] for j in r.integers(0, 40, int(r.integers(0, 7))))
        out.append({"id": i, "text": f"{text} ü{i % 5}", "label": "ab"[i % 2]})
    return out


def _write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _outputs(tmp, engine, cmds, monkeypatch) -> dict:
    monkeypatch.setenv("OVERLAP_READER", engine)
    out = {}
    for name, cmd in cmds.items():
        target = os.path.join(tmp, f"{engine}-{name}")
        extra = [a.replace("@", os.path.join(tmp, f"{engine}-")) for a in cmd[1]]
        assert main([*cmd[0], "--out", target, *extra, "-q"]) == 0
        for p in [target] + [a for a in extra if a.startswith(tmp)]:
            with open(p, "rb") as f:
                data = f.read()
            if p != target:  # the report names the output file, whose name has the engine
                report = json.loads(data)
                assert report.pop("output") == target
                data = json.dumps(report).encode()
            out[name + os.path.basename(p)[len(engine):]] = data
    return out


@pytest.mark.parametrize("small_take", [_columns._SMALL_TAKE, 1 << 40])  # 2nd: Arrow takes all
@pytest.mark.parametrize("train_kind", ["jsonl", "text"])
def test_scan_and_dedup_write_the_same_files_with_either_reader(tmp_path, monkeypatch,
                                                               train_kind, small_take):
    pytest.importorskip("pyarrow.parquet", reason="Parquet output needs pyarrow")
    rng = np.random.default_rng(0)
    rows = _rows(rng, 300, 7)
    evals = rows[::9] + [{"id": -1, "text": "nothing in common zz", "label": "b"}]
    train = str(tmp_path / ("train.jsonl" if train_kind == "jsonl" else "train.txt"))
    if train_kind == "jsonl":
        _write_jsonl(train, rows)
    else:
        with open(train, "w", encoding="utf-8") as f:
            f.writelines(r["text"] + "\n" for r in rows)
    ev = str(tmp_path / "eval.jsonl")
    _write_jsonl(ev, [{"id": r["id"], "text": r["text"][:-1] + "q", "label": r["label"]}
                      for r in evals])
    lonely = str(tmp_path / "lonely.jsonl")  # nothing overlaps: every train column is None
    _write_jsonl(lonely, [{"id": 0, "text": "zz yy", "label": "x"}])
    cmds = {f"scan.{ext}": (["scan", ev, "--train", train], []) for ext in
            ("jsonl", "csv", "tsv", "parquet")}
    cmds["scan-lonely.parquet"] = (["scan", lonely, "--train", train], [])
    cmds["scan-self.jsonl"] = (["scan", train], [])
    for ext in ("jsonl", "csv", "parquet", "txt"):
        cmds[f"dedup.{ext}"] = (["dedup", train, "--threshold", "0.6"],
                                ["--report", "@report.json"] if ext == "jsonl" else [])
    monkeypatch.setattr(_columns, "_SMALL_TAKE", small_take)
    monkeypatch.setattr(_batches, "BLOCK_BYTES", 1 << 10)
    monkeypatch.setattr(_batches, "Blocks", _small_blocks(1 << 10))  # many blocks
    arrow = _outputs(str(tmp_path), "arrow", cmds, monkeypatch)
    python = _outputs(str(tmp_path), "python", cmds, monkeypatch)
    assert arrow.keys() == python.keys() and len(arrow) == len(cmds) + 1
    for k in arrow:
        assert arrow[k] == python[k], k
    report = json.loads(arrow["dedup.jsonl-report.json"])
    assert report["removed"] > 0 and report["removed_units"][0]["text"]


def test_the_in_memory_commands_do_not_import_pandas(tmp_path):
    """``take`` and ``keep_rows`` hand pyarrow arrays made from the numpy
    buffers, not numpy arrays: ``pa.array`` imports pandas (where installed)
    to check them, 0.2 s once per process."""
    pytest.importorskip("pandas", reason="the check needs pandas installed (to stay out)")
    import subprocess
    import sys
    import textwrap

    import overlap

    rows = [{"id": i, "text": f"row {i % 40} of some words {i % 7}", "label": "a"}
            for i in range(400)]
    src = str(tmp_path / "rows.jsonl")
    _write_jsonl(src, rows)
    ev = str(tmp_path / "eval.jsonl")
    _write_jsonl(ev, rows[::50])
    code = textwrap.dedent(f"""
        import sys
        from overlap.cli import main
        assert main(["dedup", {src!r}, "--out", "kept.jsonl", "-q"]) == 0
        assert main(["scan", {ev!r}, "--train", {src!r}, "--out", "scores.jsonl", "-q"]) == 0
        print("pandas" in sys.modules)
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(overlap.__file__)))
    env = dict(os.environ, OVERLAP_READER="arrow", PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    kept = (tmp_path / "kept.jsonl").read_text().splitlines()
    assert 0 < len(kept) < len(rows)
