"""The arrow reader equals the stdlib reader row for row, and error for error.

Files are assembled from adversarial lines (blank and whitespace lines, CRLF,
BOMs, nulls, numbers, missing fields, two objects on a line, invalid UTF-8,
lone surrogates, deep nesting, lines longer than the block) and read with
tiny blocks, so that blocks are cut everywhere and long lines make the reader
grow its block.  Good files are also checked against the plain-Python
definitions of ``reference.readers``.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap import _batches, _line_blocks
from overlap.stream_readers import read_chunks

from reference import readers as ref
from reference.engines import same_outcome, table_outcome, write_file

pa = pytest.importorskip("pyarrow", reason="the arrow reader needs pyarrow")
pq = pytest.importorskip("pyarrow.parquet", reason="the arrow reader needs pyarrow")

GOOD_JSON = [
    b'{"text": "plain words", "id": 1}',
    b'{"id": [1, {"x": 2}], "text": "nested neighbours"}',
    b'{"text": "caf\\u00e9 \\ud83d\\ude00 escaped"}',
    '{"text": "ünïcödé 今天 😀"}'.encode(),
    b'{"text": ""}',
    b'{"text": "a\\u0000b \\/ \\" \\\\"}',
    b'  {"text": "spaces around"}  ',
    b'{"text": "x", "y": NaN, "z": Infinity, "w": 1e999}',
    b'{"text": "x", "big": 123456789012345678901234567890}',
    b'{"text": "first", "text": "second"}',
    b'{"te\\u0078t": "escaped key"}',
    b'{"text": "braces }{ inside"}',
]
BAD_JSON = [
    b'{"text": 3}', b'{"text": null}', b'{"body": "no text"}', b'not json',
    b'[1, 2]', b'{"text": "a"} {"text": "b"}', b'{"text": "a\\ud800"}',
    b'{"text": "x", "y": "\\udc00"}', b'{"text": "bad \xff utf8"}',
    b'{"text": "x", "y": "\xed\xa0\x80"}', b'{"text": ["a"]}', b'{"text": "x",}',
    b'{"text": "x", "deep": ' + b"[" * 3000 + b"]" * 3000 + b"}",
    # deep enough to overflow the stack of pyarrow's type inference (a crash)
    b'{"text": "x", "deep": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
    b'{"text": "x", "deep": ' + b"[" * 200_000 + b"]" * 200_000 + b"}\n" + b"\n" * 3000,
    b'\xef\xbb\xbf{"text": "BOM inside the file"}',
]
BLANK = [b"", b"   ", b"\t", b"\x0c"]


line = st.one_of(
    st.sampled_from(GOOD_JSON), st.sampled_from(GOOD_JSON), st.sampled_from(BLANK),
    st.builds(lambda n: b'{"text": "' + b"long " * n + b'"}', st.integers(10, 400)),
)


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(line, max_size=30), bad=st.one_of(st.none(), st.sampled_from(BAD_JSON)),
       at=st.integers(0, 30), crlf=st.booleans(), bom=st.booleans(), final_nl=st.booleans(),
       block=st.sampled_from([4, 16, 64, 1024, 1 << 20]), gz=st.booleans(),
       chunk_rows=st.sampled_from([1, 3, 1000]), pieces=st.sampled_from([1, 2, 3]),
       workers=st.sampled_from([1, 3]))
def test_jsonl_rows_and_errors_equal_the_stdlib_reader(tmp_path_factory, lines,
                                                       bad, at, crlf, bom, final_nl, block,
                                                       gz, chunk_rows, pieces, workers):
    if bad is not None:
        lines = lines[:at] + [bad] + lines[at:]
    nl = b"\r\n" if crlf else b"\n"
    data = (b"\xef\xbb\xbf" if bom else b"") + nl.join(lines) + (nl if final_nl else b"")
    path = str(tmp_path_factory.mktemp("j") / ("f.jsonl.gz" if gz else "f.jsonl"))
    write_file(path, data)
    with pytest.MonkeyPatch.context() as mp:
        # one worker: every block in pieces, long lines across them; three:
        # blocks parsed whole on three threads at once, handed back in order
        mp.setattr(_line_blocks, "PARSE_WORKERS", workers)
        mp.setattr(_line_blocks, "PARSE_PIECES", pieces)
        mp.setattr(_line_blocks, "PARSE_MIN_PIECE", 1)
        got = same_outcome(path, ["text"], block, chunk_rows=chunk_rows)
    if got[0] == "rows" and got[1]:
        assert got[1] == ref.jsonl_rows(path, ["text"])


text_line = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"),
            max_size=12).map(lambda s: s.encode()),
    st.sampled_from([b"", b"\r", b"a\rb", b"\xef\xbb\xbfbom", b"x\r\r", b"long " * 50]),
)


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(text_line, max_size=30), bad=st.booleans(), at=st.integers(0, 30),
       bom=st.booleans(), final_nl=st.booleans(), block=st.sampled_from([4, 16, 256, 1 << 20]),
       gz=st.booleans(), workers=st.sampled_from([1, 3]))
def test_text_rows_and_errors_equal_the_stdlib_reader(tmp_path_factory, lines, bad,
                                                      at, bom, final_nl, block, gz, workers):
    if bad:
        lines = lines[:at] + [b"bad \xc3 utf8"] + lines[at:]
    data = (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + (b"\n" if final_nl else b"")
    path = str(tmp_path_factory.mktemp("t") / ("f.text.gz" if gz else "f.text"))
    write_file(path, data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_line_blocks, "PARSE_WORKERS", workers)
        got = same_outcome(path, ["text"], block, chunk_rows=7)
    if got[0] == "rows":
        assert got[1] == ref.text_rows(path)


@pytest.mark.parametrize("limit", [40, 41, 42, 100])
@pytest.mark.parametrize("block", [4, 32, 1 << 20])
def test_long_lines_are_refused_at_the_same_line(tmp_path, limit, block):
    body = b'{"text": "' + b"x" * 29 + b'"}'  # 41 bytes
    for name, data in [("a.jsonl", b'{"text": "s"}\n' + body + b"\n"),
                       ("b.jsonl", b'{"text": "s"}\n' + body),
                       ("c.text", b"short\n" + b"y" * 41 + b"\nz\n")]:
        path = str(tmp_path / name)
        write_file(path, data)
        got = same_outcome(path, ["text"], block, max_line_bytes=limit)
        assert (got[0] == "error") == (limit < 41), got
        if got[0] == "error":
            assert f"{name}:2: line longer than" in got[1]


@pytest.mark.parametrize("final_nl", [True, False])
@pytest.mark.parametrize("block", [4, 8, 64])
def test_after_a_line_too_long_the_rest_of_the_file_is_still_there(tmp_path, block, final_nl):
    # a reader that read ahead hands the rest of the file to the stdlib reader
    # from an earlier block (CSV); the too-long line's bytes must be in it
    data = b"a\nbb\n" + b"x" * 30 + (b"\n" if final_nl else b"")
    path = str(tmp_path / "f.csv")
    write_file(path, data)
    blocks = _line_blocks.Blocks(path, 20, block)
    got = []
    with pytest.raises(ValueError, match=":3: line longer than 20 bytes"):
        for b, _ in blocks:
            got.append(b)
    assert b"".join(got) + blocks.rest(b"").read() == data
    blocks.close()


def test_a_line_longer_than_the_block_is_read_whole(tmp_path):
    path = str(tmp_path / "l.jsonl")
    texts = ["w " * 5000, "short", "v " * 20000]
    write_file(path, "".join(f'{{"text": "{t}"}}\n' for t in texts).encode())
    got = same_outcome(path, ["text"], 1000)
    assert [r[0] for r in got[1]] == texts


def test_arrow_reader_gives_arrow_columns_without_python_strings(tmp_path):
    path = str(tmp_path / "a.jsonl")
    write_file(path, b'{"text": "a b"}\n{"text": "c"}\n')
    (chunk,) = read_chunks(path, "text", engine="arrow")
    assert isinstance(chunk.columns["text"], pa.ChunkedArray)
    assert chunk.columns["text"].type == pa.large_string()
    assert chunk.columns["text"].to_pylist() == ["a b", "c"]
    (chunk,) = read_chunks(path, "text", engine="python")
    assert chunk.columns["text"] == ["a b", "c"]


def test_a_chunk_holds_the_parsed_arrays_not_a_copy(tmp_path, monkeypatch):
    """A chunk spanning several blocks is a ChunkedArray over the blocks' own
    arrays (no concatenation), and the rows are the file's, in order: also
    once the blocks after them were copied into the same reused input buffer
    (``arrow_reader(reuse=True)``), so no array is a view of it."""
    import overlap._batches as batches
    monkeypatch.setattr(batches, "BLOCK_BYTES", 4096)
    path = str(tmp_path / "a.jsonl")
    texts = [f"row {i} " + "w" * (i % 50) for i in range(3000)]
    write_file(path, "".join(f'{{"text": "{t}", "n": {i}}}\n' for i, t in enumerate(texts)).encode())
    chunks = list(read_chunks(path, "text", engine="arrow", chunk_rows=1000))
    assert [c.n_rows for c in chunks] == [1000, 1000, 1000]
    assert all(c.columns["text"].num_chunks > 1 for c in chunks)
    got = [t for c in chunks for t in c.columns["text"].to_pylist()]
    assert got == texts


@pytest.mark.parametrize("column, message", [
    (pa.array(["a", None, "c"]), "p.parquet: row 1: field 'text' must be a string, got NoneType"),
    (pa.array([1, 2, 3]), "p.parquet: row 0: field 'text' must be a string, got int"),
    (pa.array(["a", "b", "c"]).dictionary_encode(), None),
    (pa.array(["a", None, "c"]).dictionary_encode(),
     "p.parquet: row 1: field 'text' must be a string, got NoneType"),
    (pa.array(["a", "b", "c"], pa.large_string()), None),
])
def test_parquet_rows_and_errors_equal_the_stdlib_reader(tmp_path, column,
                                                         message):
    path = str(tmp_path / "p.parquet")
    pq.write_table(pa.table({"text": column, "id": [1, 2, 3]}), path, row_group_size=2)
    got = same_outcome(path, ["text"], 1 << 20, chunk_rows=2)
    if message is None:
        assert got[1] == [("a",), ("b",), ("c",)]
    else:
        assert got[0] == "error" and got[1].endswith(os.sep + message)
    got = same_outcome(path, ["body"], 1 << 20)
    assert got[0] == "error" and "no column 'body'" in got[1]


def test_mixed_format_folder_equals_the_stdlib_reader(tmp_path):
    write_file(str(tmp_path / "0.jsonl"), b'{"text": "j1"}\n\n{"text": "j2"}\n')
    write_file(str(tmp_path / "1.txt.gz"), b"t1\r\nt2\n")
    write_file(str(tmp_path / "2.csv"), b'text,id\n"c,1",1\n"c\n2",2\n')
    pq.write_table(pa.table({"text": ["p1", "p2"]}), str(tmp_path / "3.parquet"))
    write_file(str(tmp_path / "4.tsv"), b"id\ttext\n1\ts1\n")
    got = same_outcome(str(tmp_path), ["text"], 8, chunk_rows=3)
    assert [r[0] for r in got[1]] == ["j1", "j2", "t1", "t2", "c,1", "c\n2", "p1", "p2", "s1"]
    assert got[3] == sum(os.path.getsize(tmp_path / f) for f in os.listdir(tmp_path)
                         if not f.endswith(".gz"))  + os.path.getsize(tmp_path / "1.txt.gz")


def test_engine_is_checked(tmp_path, monkeypatch):
    path = str(tmp_path / "a.jsonl")
    write_file(path, b'{"text": "a"}\n')
    with pytest.raises(ValueError, match="engine must be one of auto, arrow, python"):
        list(read_chunks(path, engine="rust"))
    monkeypatch.setenv("OVERLAP_READER", "fast")
    with pytest.raises(ValueError, match="OVERLAP_READER must be one of"):
        list(read_chunks(path))
    monkeypatch.setenv("OVERLAP_READER", "python")
    assert isinstance(next(read_chunks(path)).columns["text"], list)


# ------------------------------------------------------------ whole files
TABLE_JSON = GOOD_JSON + [
    b'{"text": "with int", "n": 3, "ok": true}',
    b'{"n": 4, "text": "keys swapped", "ok": false}',
    b'{"text": "float", "n": 1.0}',
    b'{"text": "null n", "n": null}',
    b'{"text": "no n"}',
    b'{"text": "label", "label": "x"}',
    b'{"text": "nested", "n": {"a": 1}}',
]


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(st.sampled_from(TABLE_JSON + BLANK), max_size=12),
       bad=st.one_of(st.none(), st.sampled_from(BAD_JSON)), at=st.integers(0, 12),
       block=st.sampled_from([8, 64, 1 << 20]), fields=st.sampled_from([None, ["text"]]),
       gz=st.booleans(), pieces=st.sampled_from([1, 2, 3]), workers=st.sampled_from([1, 3]))
def test_whole_jsonl_tables_equal_the_stdlib_reader(tmp_path_factory, lines, bad, at, block,
                                                    fields, gz, pieces, workers):
    if bad is not None:
        lines = lines[:at] + [bad] + lines[at:]
    path = str(tmp_path_factory.mktemp("w") / ("f.jsonl.gz" if gz else "f.jsonl"))
    write_file(path, b"\n".join(lines) + b"\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_batches, "BLOCK_BYTES", block)
        mp.setattr(_line_blocks, "PARSE_WORKERS", workers)
        mp.setattr(_line_blocks, "PARSE_PIECES", pieces)
        mp.setattr(_line_blocks, "PARSE_MIN_PIECE", 1)
        assert table_outcome(path, "arrow", fields) == table_outcome(path, "python", fields)


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(text_line, max_size=12), block=st.sampled_from([4, 64, 1 << 20]),
       workers=st.sampled_from([1, 3]))
def test_whole_text_tables_equal_the_stdlib_reader(tmp_path_factory, lines, block, workers):
    path = str(tmp_path_factory.mktemp("w") / "f.txt")
    write_file(path, b"\n".join(lines))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_batches, "BLOCK_BYTES", block)
        mp.setattr(_line_blocks, "PARSE_WORKERS", workers)
        assert (table_outcome(path, "arrow", ["text"])
                == table_outcome(path, "python", ["text"]))


def _block_sizes(monkeypatch) -> list:
    """The block sizes pyarrow's JSON reader is called with, recorded."""
    import pyarrow.json as pj
    sizes: list = []
    real = pj.read_json

    def spy(source, read_options=None, **kw):
        sizes.append(read_options.block_size)
        return real(source, read_options=read_options, **kw)

    monkeypatch.setattr(pj, "read_json", spy)
    return sizes


@pytest.mark.parametrize("pieces", [None, 3])
def test_a_jsonl_block_is_parsed_in_pieces(tmp_path, monkeypatch, pieces):
    # with one parsing worker, pyarrow gets a piece of the block for each of
    # its threads (two at least), which parse them at once ...
    monkeypatch.setattr(_line_blocks, "PARSE_WORKERS", 1)
    monkeypatch.setattr(_line_blocks, "PARSE_PIECES", pieces)
    lines = [b'{"text": "row %d of many"}' % i for i in range(20_000)]
    path = str(tmp_path / "a.jsonl")
    write_file(path, b"\n".join(lines) + b"\n")
    sizes = _block_sizes(monkeypatch)
    rows = [t for c in read_chunks(path, engine="arrow") for t in c.columns["text"].to_pylist()]
    assert rows == [f"row {i} of many" for i in range(20_000)]
    block = os.path.getsize(path)
    want = min(pieces or max(2, pa.cpu_count()), block // _line_blocks.PARSE_MIN_PIECE)
    assert want >= 2 and sizes == [block // want + 1]


def test_a_line_longer_than_a_piece_is_read_in_one(tmp_path, monkeypatch):
    # ... and a block whose long line spans more than two pieces (pyarrow
    # refuses it) is read again whole, by pyarrow, not by the stdlib reader
    from overlap import _readers
    monkeypatch.setattr(_line_blocks, "PARSE_WORKERS", 1)
    monkeypatch.setattr(_line_blocks, "PARSE_PIECES", 4)
    monkeypatch.setattr(_line_blocks, "PARSE_MIN_PIECE", 1024)
    lines = [b'{"text": "%s"}' % (b"w " * 100_000), b'{"text": "short"}']
    path = str(tmp_path / "a.jsonl")
    write_file(path, b"\n".join(lines) + b"\n")
    sizes = _block_sizes(monkeypatch)

    def refuse(*a, **k):
        raise AssertionError("the stdlib reader ran")

    monkeypatch.setattr(_readers, "json_line", refuse)
    rows = [t for c in read_chunks(path, engine="arrow") for t in c.columns["text"].to_pylist()]
    assert rows == ["w " * 100_000, "short"]
    size = os.path.getsize(path)
    assert sizes == [size // 4 + 1, size + 1]


def test_blocks_are_parsed_whole_on_several_threads_at_once(tmp_path, monkeypatch):
    # with several parsing workers, each block is parsed whole on a worker
    # thread (several blocks at once), and the rows come back in the file's order
    import threading

    import pyarrow.json as pj
    monkeypatch.setattr(_line_blocks, "PARSE_WORKERS", 3)
    monkeypatch.setattr(_batches, "BLOCK_BYTES", 1 << 12)
    lines = [b'{"text": "row %d of many"}' % i for i in range(5_000)]
    path = str(tmp_path / "a.jsonl")
    write_file(path, b"\n".join(lines) + b"\n")
    calls: list = []
    running = {"now": 0, "most": 0}
    lock = threading.Lock()
    real = pj.read_json

    def spy(source, read_options=None, **kw):
        with lock:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
        try:
            calls.append((threading.current_thread().name, read_options.use_threads,
                          source.size(), read_options.block_size))
            threading.Event().wait(0.002)  # long enough for the others to start
            return real(source, read_options=read_options, **kw)
        finally:
            with lock:
                running["now"] -= 1

    monkeypatch.setattr(pj, "read_json", spy)
    rows = [t for c in read_chunks(path, engine="arrow", chunk_rows=777)
            for t in c.columns["text"].to_pylist()]
    assert rows == [f"row {i} of many" for i in range(5_000)]
    assert len(calls) > 20
    assert all(name.startswith("overlap-parse") and not threads and size < block
               for name, threads, size, block in calls)
    assert running["most"] > 1


def test_blocks_are_parsed_on_a_worker_per_usable_core_up_to_the_cap(monkeypatch):
    monkeypatch.setattr(_line_blocks, "PARSE_WORKERS", None)
    for cores, want in ((1, 1), (3, 3), (_line_blocks.PARSE_WORKERS_MAX + 5,
                                         _line_blocks.PARSE_WORKERS_MAX)):
        monkeypatch.setattr(_line_blocks, "usable_cores", lambda c=cores: c)
        assert _line_blocks.parse_workers() == want
    monkeypatch.setattr(_line_blocks, "PARSE_WORKERS", 5)
    assert _line_blocks.parse_workers() == 5


def test_whole_jsonl_table_is_read_by_pyarrow(tmp_path, monkeypatch):
    # the fast path is taken (not only its fallback): the stdlib reader is not called
    path = str(tmp_path / "a.jsonl")
    write_file(path, b'{"text": "a b", "id": 1}\n{"text": "c", "id": 2}\n')
    from overlap import _readers
    from overlap.pipeline.tables import read_fields

    def refuse(*a, **k):
        raise AssertionError("the stdlib reader ran")

    monkeypatch.setattr(_readers, "json_line", refuse)
    monkeypatch.setenv("OVERLAP_READER", "arrow")
    cols, table = read_fields(path, ["text"])
    assert cols == [["a b", "c"]] and table == {"text": ["a b", "c"], "id": [1, 2]}


# --------------------------------------------- input owned by pyarrow
def test_arrow_reader_copies_the_block():
    """The stream handed to pyarrow's threaded readers holds no reference to
    the Python bytes (a worker thread may release it after the call; at exit
    that took the GIL in a dying thread and aborted the process)."""
    import sys

    from overlap._line_blocks import arrow_reader

    block = b'{"text": "a"}\n' * 3
    before = sys.getrefcount(block)
    reader = arrow_reader(block)
    assert sys.getrefcount(block) == before
    assert reader.read() == block
    assert arrow_reader(b"").read() == b""


def test_threaded_readers_get_only_copies(tmp_path, monkeypatch):
    """Every call of pyarrow's JSON and CSV readers receives a stream made by
    arrow_reader, for whole files and chunks."""
    import pyarrow.csv as pcsv
    import pyarrow.json as pj

    from overlap import _arrow_csv, _line_blocks
    from overlap.pipeline.tables import read_table

    made, given = [], []
    real = _line_blocks.arrow_reader

    def spy(block, **kw):
        made.append(real(block, **kw))
        return made[-1]

    for mod in (_batches, _arrow_csv):
        monkeypatch.setattr(mod, "arrow_reader", spy)
    def recording(orig):
        def read(src, *args, **kw):
            given.append(src)
            return orig(src, *args, **kw)
        return read

    for name, mod in (("read_json", pj), ("read_csv", pcsv)):
        monkeypatch.setattr(mod, name, recording(getattr(mod, name)))
    (tmp_path / "a.jsonl").write_text('{"text": "x y"}\n{"text": "z"}\n', encoding="utf-8")
    (tmp_path / "b.csv").write_text("text,id\nx y,1\nz,2\n", encoding="utf-8")
    for name in ("a.jsonl", "b.csv"):
        path = str(tmp_path / name)
        assert sum(c.n_rows for c in read_chunks(path, ["text"], engine="arrow")) == 2
        assert read_table(path)["text"] == ["x y", "z"]
    assert given and all(any(g is m for m in made) for g in given)


def test_inferred_types_are_read_from_one_piece(tmp_path, monkeypatch):
    # with its types inferred piece by piece, pyarrow reconciled a number in one
    # piece with a string in the other into the string "3"; the whole-file
    # reader infers them from the block in one piece (and hands this one back)
    monkeypatch.setattr(_line_blocks, "PARSE_PIECES", 2)
    monkeypatch.setattr(_line_blocks, "PARSE_MIN_PIECE", 1)
    monkeypatch.setattr(_batches, "BLOCK_BYTES", 64)
    path = str(tmp_path / "f.jsonl")
    write_file(path, b'{"text": ""}\n{"text": 3}\n')
    got = table_outcome(path, "arrow", None)
    assert got == table_outcome(path, "python", None)
    assert got[0] == ("ok", {"text": ["", 3]})


def test_the_reused_input_buffer_holds_each_block_in_turn():
    from overlap._line_blocks import arrow_reader
    first = arrow_reader(b"abcdef", reuse=True).read()
    again = arrow_reader(b"xy", reuse=True)
    assert first == b"abcdef" and again.read() == b"xy"
    assert arrow_reader(b"", reuse=True).read() == b""
    assert arrow_reader(b"12345678" * 1000, reuse=True).read() == b"12345678" * 1000


@pytest.mark.parametrize("pieces", [1, 2, 3])
def test_a_bom_starting_a_later_line_is_refused_in_every_piece_layout(tmp_path, monkeypatch,
                                                                      pieces):
    """pyarrow takes a BOM at the start of the piece it parses; a block cut in
    pieces can put a line that starts with one there: it is still refused,
    with the stdlib reader's error (found by the hypothesis test above)."""
    monkeypatch.setattr(_line_blocks, "PARSE_WORKERS", 1)
    monkeypatch.setattr(_line_blocks, "PARSE_PIECES", pieces)
    monkeypatch.setattr(_line_blocks, "PARSE_MIN_PIECE", 1)
    path = str(tmp_path / "f.jsonl")
    write_file(path, b'{"text": "plain words", "id": 1}\n'
                     b'\xef\xbb\xbf{"text": "BOM inside the file"}\n')
    got = same_outcome(path, ["text"], 1024, chunk_rows=1)
    assert got[0] == "error" and "f.jsonl:2: invalid JSON: Unexpected UTF-8 BOM" in got[1]
