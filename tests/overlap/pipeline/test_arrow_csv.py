"""CSV and TSV through pyarrow equal the stdlib reader row for row, and error for error.

Files mix records written by the csv module (quoted commas, tabs, quotes,
embedded newlines, empty values, numbers that must stay text) with raw lines
that are not plain CSV (stray quotes, text after a closing quote, lone
``\\r``, rows of the wrong width, invalid UTF-8, a BOM inside the file, NUL),
and are read with tiny blocks so that blocks are cut everywhere and quoted
fields span blocks.  Good files are also checked against the plain-Python
definition of ``reference.readers.csv_rows``.
"""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap import _arrow_csv, _batches, _line_blocks
from overlap.stream_readers import read_chunks

from reference import readers as ref
from reference.engines import same_outcome, table_outcome, write_file

pa = pytest.importorskip("pyarrow", reason="the arrow CSV reader needs pyarrow")

PIECES = ["a", "b c", ",", "\t", '"', "\n", "\r\n", "\r", " ", "é", "😀", "\ufeff", "007",
          "", "1.5", "NA", "null", "x" * 300]
value = st.lists(st.sampled_from(PIECES), max_size=4).map("".join)
RAW = [b"", b"\r", b'1,a"b', b'1,"a"b', b'"1",x ', b"1,bad \xff", b"1,2,3", b"1",
       b"\xef\xbb\xbf1,bom", b"1,nul\x00", b'1,"open', b"1\t\"q\"\t", b'1,""""', b"  ",
       b"1,x\ry"]


def _record(values, delimiter, crlf):
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="\r\n" if crlf else "\n").writerow(values)
    return out.getvalue().encode()


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(value, value), max_size=25),
       raw=st.lists(st.tuples(st.integers(0, 25), st.sampled_from(RAW)), max_size=2),
       tsv=st.booleans(), crlf=st.booleans(), bom=st.booleans(), final_nl=st.booleans(),
       block=st.sampled_from([4, 16, 64, 1024, 1 << 20]),
       compress=st.sampled_from(["", ".gz", ".zst"]), chunk_rows=st.sampled_from([1, 3, 1000]),
       workers=st.sampled_from([1, 3]))
def test_csv_rows_and_errors_equal_the_stdlib_reader(tmp_path_factory, rows, raw, tsv, crlf,
                                                     bom, final_nl, block, compress,
                                                     chunk_rows, workers):
    delimiter = "\t" if tsv else ","
    records = [_record(["id", "text"], delimiter, crlf)]
    records += [_record([a, b], delimiter, crlf) for a, b in rows]
    for at, line in raw:  # raw lines in the comma dialect: some plain in TSV too
        records.insert(min(at + 1, len(records)), line + (b"\r\n" if crlf else b"\n"))
    data = (b"\xef\xbb\xbf" if bom else b"") + b"".join(records)
    if not final_nl:
        data = data.rstrip(b"\n")
    name = ("f.tsv" if tsv else "f.csv") + compress
    path = str(tmp_path_factory.mktemp("c") / name)
    write_file(path, data)
    with pytest.MonkeyPatch.context() as mp:
        # three workers: blocks parsed ahead of the one that goes to the stdlib reader
        mp.setattr(_line_blocks, "PARSE_WORKERS", workers)
        got = same_outcome(path, ["text", "id"], block, chunk_rows=chunk_rows)
    if not raw and got[0] == "rows":
        assert got[1] == ref.csv_rows(path, ["text", "id"], delimiter)


@pytest.mark.parametrize("tsv", [False, True])
def test_plain_csv_is_read_by_pyarrow(tmp_path, monkeypatch, tsv):
    # the fast path is taken, not its fallback: the stdlib reader reads only the header
    d = "\t" if tsv else ","
    path = str(tmp_path / ("a.tsv" if tsv else "a.csv"))
    values = [["1", "007"], ["2", ""], ["3", 'say "hi",\tthen\r\nleave'], ["4", "é 😀"]]
    write_file(path, b"".join(_record(r, d, crlf=True) for r in [["id", "text"], *values]))

    def refuse(*a, **k):
        raise AssertionError("the stdlib reader read the rows")

    monkeypatch.setattr(_arrow_csv, "csv_records", refuse)
    monkeypatch.setattr(_batches, "BLOCK_BYTES", 8)  # the quoted field spans blocks
    (chunk,) = read_chunks(path, ["text", "id"], engine="arrow")
    assert chunk.columns["text"].type == pa.large_string()
    assert chunk.columns["text"].to_pylist() == [v[1] for v in values]
    assert chunk.columns["id"].to_pylist() == [v[0] for v in values]


@pytest.mark.parametrize("workers", [1, 3])
def test_a_bad_row_after_plain_blocks_names_its_line(tmp_path, monkeypatch, workers):
    monkeypatch.setattr(_line_blocks, "PARSE_WORKERS", workers)
    path = str(tmp_path / "b.csv")
    good = b"".join(b'%d,"t %d"\n' % (i, i) for i in range(50))
    write_file(path, b"id,text\n" + good + b'50,x"y\n51,z,extra\n')
    got = same_outcome(path, ["text"], 64)
    assert got == ("error", f"{path}:53: 3 fields, the header has 2")


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("stray", [b"", b'1,a"b\n'])
@pytest.mark.parametrize("limit", [8, 9, 10, 11])
def test_csv_long_lines_are_refused_at_the_same_line(tmp_path, monkeypatch, limit, stray,
                                                     workers):
    # with a stray quote before it, the block that holds it hands the rest of
    # the file to the stdlib reader after the long line was read ahead
    monkeypatch.setattr(_line_blocks, "PARSE_WORKERS", workers)
    path = str(tmp_path / "l.csv")
    stray = stray.replace(b'1,a"b', b'9,"a"b')
    write_file(path, b"id,text\n" + stray + b"1,short\n2,abcdefgh\n")  # 10 bytes and "\n"
    got = same_outcome(path, ["text"], 4, max_line_bytes=limit)
    assert (got[0] == "error") == (limit < 10)
    if got[0] == "error":
        line = 3 + bool(stray)
        assert got[1].endswith(f"l.csv:{line}: line longer than 10 bytes (the limit; raise it "
                               "with --max-line-bytes or max_line_bytes=)"
                               .replace("10", f"{limit:,}"))


def test_an_open_quote_spanning_many_blocks_goes_to_the_stdlib_reader(tmp_path):
    path = str(tmp_path / "q.csv")
    long = "\n".join(f"line {i}" for i in range(400))
    write_file(path, b"id,text\n1,a\n" + _record(["2", long], ",", False) + b"3,b\n")
    got = same_outcome(path, ["text"], 16)
    assert [r[0] for r in got[1]] == ["a", long, "b"]


# ------------------------------------------------------------ whole files
@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(value, value), max_size=12),
       raw=st.lists(st.tuples(st.integers(0, 12), st.sampled_from(RAW)), max_size=1),
       tsv=st.booleans(), crlf=st.booleans(), bom=st.booleans(),
       block=st.sampled_from([8, 64, 1 << 20]), fields=st.sampled_from([None, ["text"]]),
       workers=st.sampled_from([1, 3]))
def test_whole_csv_tables_equal_the_stdlib_reader(tmp_path_factory, rows, raw, tsv, crlf, bom,
                                                  block, fields, workers):
    from overlap._readers import open_records

    delimiter = "\t" if tsv else ","
    records = [_record(["id", "text"], delimiter, crlf)]
    records += [_record([a, b], delimiter, crlf) for a, b in rows]
    for at, line in raw:
        records.insert(min(at + 1, len(records)), line + b"\n")
    path = str(tmp_path_factory.mktemp("w") / ("f.tsv" if tsv else "f.csv"))
    write_file(path, (b"\xef\xbb\xbf" if bom else b"") + b"".join(records))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_batches, "BLOCK_BYTES", block)
        mp.setattr(_line_blocks, "PARSE_WORKERS", workers)
        assert table_outcome(path, "arrow", fields) == table_outcome(path, "python", fields)
        fast = _batches.read_whole_table(path, "tsv" if tsv else "csv", engine="arrow")
    if fast is not None:  # the line of each row is the stdlib reader's
        src = open_records(path, "tsv" if tsv else "csv")
        want = list(src)
        src.close()
        assert fast[1] == [n for n, _ in want]
        assert [tuple(fast[0][c][i] for c in fast[0]) for i in range(len(want))] == [
            tuple(rec.values()) for _, rec in want]


def test_whole_csv_table_is_read_by_pyarrow(tmp_path, monkeypatch):
    from overlap.pipeline.tables import read_fields

    path = str(tmp_path / "w.csv")
    write_file(path, b'id,text\n1,"a\nb"\n\n2,007\n')
    calls = []
    real = _arrow_csv._arrow_block
    monkeypatch.setattr(_arrow_csv, "_arrow_block",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setenv("OVERLAP_READER", "arrow")
    cols, table = read_fields(path, ["text"])
    assert calls and cols == [["a\nb", "007"]] and table == {"id": ["1", "2"],
                                                           "text": ["a\nb", "007"]}
    assert _batches.read_whole_table(path, "csv", engine="arrow")[1] == [3, 5]


@pytest.mark.parametrize("pieces", [2, 3])
def test_csv_blocks_are_not_cut_into_pieces(tmp_path, monkeypatch, pieces):
    # pyarrow's CSV reader, given a block in pieces (the JSON reader's way to
    # use its threads), lost the "\n" of a quoted "\r\n" that a piece edge
    # split ('aa\r\n' came back 'aa\r'): CSV blocks go to it whole
    monkeypatch.setattr(_line_blocks, "PARSE_PIECES", pieces)
    monkeypatch.setattr(_line_blocks, "PARSE_MIN_PIECE", 1)
    path = str(tmp_path / "f.csv")
    write_file(path, b'id,text\n"aa\r\n",')
    got = same_outcome(path, ["text", "id"], 4, chunk_rows=1)
    assert got[1] == [("", "aa\r\n")]
