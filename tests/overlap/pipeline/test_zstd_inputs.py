"""Zstandard (``.zst``) inputs: the same rows and errors as the plain and gzip files.

Every line format is written plain, as ``.gz`` and as a ``.zst`` of two
frames, and read by both engines, chunked and whole; a line that inflates
past the limit is refused at its line; without pyarrow and zstandard the
error says what to install.
"""

from __future__ import annotations

import gzip
import os

import pytest

from overlap._lines import open_binary, uncompressed_name
from overlap._optional import MissingExtra
from overlap.pipeline.tables import read_fields, read_table
from overlap.stream_readers import read_chunks, shard_paths

from reference import readers as ref
from reference.helpers import without_modules

try:
    import pyarrow  # noqa: F401
    HAVE_PYARROW = True
except ImportError:
    HAVE_PYARROW = False
try:
    import zstandard  # noqa: F401
    HAVE_ZSTANDARD = True
except ImportError:
    HAVE_ZSTANDARD = False

needs_zstd = pytest.mark.skipif(not (HAVE_PYARROW or HAVE_ZSTANDARD),
                                reason="reading .zst needs pyarrow or zstandard")
ENGINES = ["python", "arrow"] if HAVE_PYARROW else ["python"]

FILES = {
    "a.jsonl": ('{"text": "one \\u00e9", "id": 1}\n\n{"text": "two", "id": 2}\r\n'
                '{"text": "three"}\n'),
    "a.csv": '\ufeffid,text\r\n1,"one, ""quoted""\nline"\r\n\r\n2,007\n3,\n',
    "a.tsv": 'id\ttext\n1\t"tab\there"\n2\tcomma, here\n',
    "a.text": "\ufefffirst line\n\nthird 😀\r\nlast",
    "a.txt": "hi __eou__ hello __eou__ bye __eou__\n\nyes __eou__ no __eou__\n",
}
FIELDS = {"a.jsonl": ["text"], "a.csv": ["text", "id"], "a.tsv": ["text"],
          "a.text": ["text"], "a.txt": ["context", "response"]}


def _write(path: str, data: bytes) -> None:
    if path.endswith(".gz"):
        data = gzip.compress(data)
    elif path.endswith(".zst"):
        data = ref.zstd_compress(data, frames=2)
    with open(path, "wb") as f:
        f.write(data)


def _rows(path, fields, engine, **kw):
    try:
        chunks = list(read_chunks(path, fields, engine=engine, chunk_rows=2, **kw))
    except ValueError as e:
        return "error", str(e).replace(path, "PATH")
    return "rows", [row for c in chunks for row in zip(*[
        c.columns[f] if isinstance(c.columns[f], list) else c.columns[f].to_pylist()
        for f in fields])]


@needs_zstd
@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("engine", ENGINES)
def test_zst_rows_equal_the_plain_and_gzip_rows(tmp_path, name, engine, monkeypatch):
    fields = FIELDS[name]
    got = {}
    for suffix in ("", ".gz", ".zst"):
        path = str(tmp_path / (name + suffix))
        _write(path, FILES[name].encode())
        got[suffix] = _rows(path, fields, engine)
    assert got[".zst"] == got[".gz"] == got[""]
    assert got[""][0] == "rows" and got[""][1]
    # the whole-file readers (format given: whole-file names say nothing of .zst)
    monkeypatch.setenv("OVERLAP_READER", engine)
    fmt = {"a.jsonl": "jsonl", "a.csv": "csv", "a.tsv": "tsv", "a.text": "text",
           "a.txt": "dailydialog"}[name]
    whole = [read_fields(str(tmp_path / (name + s)), fields, fmt) for s in ("", ".gz", ".zst")]
    assert whole[0] == whole[1] == whole[2]
    assert [tuple(r) for r in zip(*whole[0][0])] == got[""][1]
    if fmt != "dailydialog":
        assert read_table(str(tmp_path / (name + ".zst")), fmt) == read_table(
            str(tmp_path / name), fmt)


@needs_zstd
def test_zst_names_tell_the_format(tmp_path):
    _write(str(tmp_path / "0.jsonl.zst"), b'{"text": "j"}\n')
    _write(str(tmp_path / "1.txt.zst"), b"a __eou__ b __eou__\n")  # DailyDialog inside
    _write(str(tmp_path / "2.txt.zst"), b"plain line\n")
    _write(str(tmp_path / "3.unknown.zst"), b"skipped\n")
    assert [os.path.basename(p) for p in shard_paths(str(tmp_path))] == [
        "0.jsonl.zst", "1.txt.zst", "2.txt.zst"]
    assert uncompressed_name("x.csv.zst") == "x.csv" and uncompressed_name("x.csv") == "x.csv"
    rows = [r for c in read_chunks(str(tmp_path / "1.txt.zst"), ["context", "response"])
            for r in zip(*[list(v) if isinstance(v, list) else v.to_pylist()
                           for v in c.columns.values()])]
    assert rows == [("a", "b")]
    assert ref.text_rows(str(tmp_path / "2.txt.zst")) == [("plain line",)]


@needs_zstd
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["l.jsonl.zst", "l.csv.zst", "l.text.zst"])
def test_the_line_limit_holds_after_inflation(tmp_path, engine, name):
    head = {"l.jsonl.zst": b'{"text": "s"}\n', "l.csv.zst": b"text\ns\n",
            "l.text.zst": b"s\n"}[name]
    line = b"x" * 5000  # 5 KB inflated, a few bytes compressed
    line = b'{"text": "' + line + b'"}' if name.startswith("l.jsonl") else line
    path = str(tmp_path / name)
    _write(path, head + line + b"\n")
    lineno = head.count(b"\n") + 1
    got = _rows(path, ["text"], engine, max_line_bytes=4096)
    assert got == ("error", f"PATH:{lineno}: line longer than 4,096 bytes (the limit; raise "
                            "it with --max-line-bytes or max_line_bytes=)")
    assert _rows(path, ["text"], engine, max_line_bytes=6000)[0] == "rows"


def test_zst_without_pyarrow_or_zstandard_says_what_to_install(tmp_path, monkeypatch):
    path = str(tmp_path / "a.jsonl.zst")
    with open(path, "wb") as f:
        f.write(b"\x28\xb5\x2f\xfd not read")
    without_modules(monkeypatch, "pyarrow", "zstandard")
    with pytest.raises(MissingExtra, match=r"a\.jsonl\.zst: reading \.zst needs pyarrow or "
                                           r"zstandard, neither is installed: pip install "
                                           r"'overlap-metrics\[zstd\]'"):
        open_binary(path)
    with pytest.raises(MissingExtra, match="reading .zst needs pyarrow or zstandard"):
        list(read_chunks(path, engine="python"))


@pytest.mark.skipif(not HAVE_ZSTANDARD, reason="the zstandard package is not installed")
def test_zstandard_alone_reads_every_frame(tmp_path, monkeypatch):
    path = str(tmp_path / "a.csv.zst")
    data = FILES["a.csv"].encode()
    with open(path, "wb") as f:
        f.write(ref.zstd_compress(data, frames=3))
    plain = str(tmp_path / "a.csv")
    _write(plain, data)
    want = _rows(plain, ["text", "id"], "python")
    without_modules(monkeypatch, "pyarrow")
    with open_binary(path) as f:
        assert f.read() == data
    assert _rows(path, ["text", "id"], "python") == want


@needs_zstd
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("damage", ["truncated", "not zstd"])
def test_a_damaged_zst_is_an_error_naming_the_file(tmp_path, engine, damage):
    data = ref.zstd_compress(b"".join(b"line %d\n" % i for i in range(20000)))
    data = data[:len(data) // 2] if damage == "truncated" else b"plain text, not zstd\n"
    path = str(tmp_path / "d.text.zst")
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(ValueError, match=r"d\.text\.zst: cannot inflate this Zstandard file"):
        list(read_chunks(path, engine=engine))


@pytest.mark.skipif(not HAVE_ZSTANDARD, reason="the zstandard package is not installed")
@pytest.mark.parametrize("checksum", [False, True])
def test_zstandard_alone_refuses_a_truncated_file(tmp_path, monkeypatch, checksum):
    import zstandard as zstd

    data = b"".join(b"line %d\n" % i for i in range(50000))
    whole = (zstd.ZstdCompressor(write_checksum=checksum).compress(data[:1000])
             + zstd.ZstdCompressor(write_checksum=checksum, write_content_size=False)
             .compress(data[1000:]))
    without_modules(monkeypatch, "pyarrow")
    for name, blob in (("whole.text.zst", whole), ("cut.text.zst", whole[:-3]),
                       ("half.text.zst", whole[:len(whole) // 2])):
        path = str(tmp_path / name)
        with open(path, "wb") as f:
            f.write(blob)
        if blob is whole:
            with open_binary(path) as f:
                assert f.read() == data
            continue
        with pytest.raises(ValueError, match=rf"{name}: cannot inflate this Zstandard file"):
            list(read_chunks(path, engine="python"))
