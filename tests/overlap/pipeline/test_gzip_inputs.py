"""gzip (``.gz``) inputs: the same bytes, rows and errors with ISA-L (the
``isal`` package, the ``fastgz`` extra) and with the stdlib's zlib.

Random files of several members (header fields, stored and deflated blocks,
empty members, NUL padding), cut short or followed by bytes that are not
gzip, are read with both decoders and compared with the plain-Python
definition (``reference.gzip_format``): the same bytes, or the same error
naming the file and the byte where it went wrong.  Every line format is read
from a multi-member ``.gz`` by both engines, with both decoders, as the plain
file.  The compressed bytes read (progress) end at the file's size.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import overlap._gzip as gz
from overlap._lines import open_binary
from overlap.cli import main
from overlap.pipeline.tables import read_fields
from overlap.stream_readers import read_chunks

from reference import gzip_format as ref
from reference.helpers import without_modules

try:
    import isal  # noqa: F401
    HAVE_ISAL = True
except ImportError:
    HAVE_ISAL = False
try:
    import pyarrow  # noqa: F401
    HAVE_PYARROW = True
except ImportError:
    HAVE_PYARROW = False

DECODERS = [pytest.param("isal", marks=pytest.mark.skipif(
                not HAVE_ISAL, reason="the isal package (the fastgz extra) is not installed")),
            "zlib"]
ENGINES = ["python", "arrow"] if HAVE_PYARROW else ["python"]


@contextlib.contextmanager
def decoder(name: str):
    """Within the block, ``.gz`` files are inflated by ``name``: ``"zlib"``
    as when ``isal`` is not installed."""
    with pytest.MonkeyPatch.context() as mp:
        if name == "zlib":
            without_modules(mp, "isal")
        assert gz.gzip_decoder()[0] == name
        yield


def _write(path, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def _expected_error(path: str, damage: ref.GzipDamage) -> str:
    what = {
        "not gzip": "it is not gzip data (no gzip magic number at its start)",
        "trailing": f"the bytes from byte {damage.offset} on (after the last gzip member) "
                    "are not gzip data",
        "damaged": f"the gzip member at byte {damage.offset} is damaged",
        "truncated": f"it is truncated (the gzip member at byte {damage.offset} has no end)",
    }[damage.kind]
    return f"{path}: cannot inflate this gzip file: {what}"


def _read(path: str, size: int) -> tuple[str, bytes | str, int]:
    """``("bytes", inflated, compressed bytes read)`` or ``("error", message, 0)``,
    read ``size`` bytes at a time (-1: at once)."""
    try:
        with contextlib.closing(open_binary(path)) as f:
            if size < 0:
                return "bytes", f.read(), f.fileobj.tell()
            parts = []
            while True:
                b = f.read(size)
                if not b:
                    return "bytes", b"".join(parts), f.fileobj.tell()
                parts.append(b)
    except ValueError as e:
        return "error", str(e), 0


payloads = st.one_of(
    st.binary(max_size=300),
    st.lists(st.sampled_from([b"a", b"b ", b"\n", b"\r\n", b"\0", b"\x1f\x8b"]),
             max_size=400).map(b"".join),
    st.integers(0, 70_000).map(lambda n: b"x\n" * n),  # long runs: output past a read
)
header_fields = st.fixed_dictionaries({}, optional={
    "name": st.binary(max_size=8), "comment": st.binary(max_size=8),
    "extra": st.binary(max_size=8), "header_crc": st.booleans(),
    "mtime": st.integers(0, 2**32 - 1)})
members = st.tuples(payloads, st.integers(0, 9), header_fields,
                    st.sampled_from([0, 0, 1, 3, 700]))  # NUL bytes after it
not_a_member = st.binary(min_size=1, max_size=20).filter(
    lambda b: not b.lstrip(b"\0").startswith(ref.MAGIC))


@st.composite
def gzip_files(draw) -> bytes:
    """Good files of 0-4 members, or such a file cut short or followed by bytes
    that do not start a member."""
    data = b"".join(ref.member(p, level, **fields) + b"\0" * pad
                    for p, level, fields, pad in draw(st.lists(members, max_size=4)))
    how = draw(st.sampled_from(["whole", "cut", "after"]))
    if how == "cut" and data:
        data = data[:draw(st.integers(0, len(data) - 1))]
    elif how == "after":
        data += draw(not_a_member)
    return data


@pytest.mark.parametrize("name", DECODERS)
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                   HealthCheck.too_slow])
@given(data=gzip_files(), size=st.sampled_from([-1, 7, 4096, 1 << 21]),
       chunk=st.sampled_from([1, 2, 9, 1 << 20]))
def test_the_bytes_or_the_error_are_the_definitions(tmp_path, name, data, size, chunk):
    path = _write(tmp_path / "f.gz", data)
    try:
        want = ("bytes", ref.inflate(data), len(data))
    except ref.GzipDamage as damage:
        want = ("error", _expected_error(path, damage), 0)
    with decoder(name), pytest.MonkeyPatch.context() as mp:
        mp.setattr(gz, "GZIP_INPUT", chunk)  # compressed bytes read at a time
        got = _read(path, size)
    assert got == want


@pytest.mark.parametrize("name", DECODERS)
def test_the_stdlib_reads_what_both_decoders_read(tmp_path, name):
    """Files written by the gzip module (one member, two, a compressed empty
    text) and by hand inflate as gzip.decompress inflates them."""
    text = b"".join(b'{"text": "row %d"}\n' % i for i in range(30_000))
    files = {
        "one": gzip.compress(text, compresslevel=1),
        "two": gzip.compress(text[:1000]) + gzip.compress(text[1000:], compresslevel=9),
        "empty text": gzip.compress(b""),
        "padded": gzip.compress(text) + b"\0" * 5000,
        "named": ref.member(text, 6, name=b"rows.jsonl", comment=b"c", extra=b"xy",
                           header_crc=True),
    }
    with decoder(name):
        for label, data in files.items():
            path = _write(tmp_path / f"{label}.gz", data)
            assert _read(path, -1) == ("bytes", gzip.decompress(data), len(data)), label


@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("damage", ["crc", "length", "data", "header crc", "method"])
def test_a_damaged_member_is_named_with_the_file(tmp_path, name, damage):
    text = b"".join(b"line %d\n" % i for i in range(20_000))
    first = gzip.compress(b"fine\n")
    good = ref.member(text, 6, header_crc=True)
    bad = {"crc": good[:-8] + bytes(4) + good[-4:],
           "length": good[:-4] + bytes(4),
           "data": good[:40] + b"\xff" * 40 + good[80:],
           "header crc": good[:10] + bytes(2) + good[12:],
           "method": good[:2] + b"\x07" + good[3:]}[damage]
    path = _write(tmp_path / "d.text.gz", first + bad)
    with decoder(name):
        for engine in ENGINES:
            with pytest.raises(ValueError) as e:
                list(read_chunks(path, engine=engine))
            assert str(e.value) == (f"{path}: cannot inflate this gzip file: the gzip member "
                                    f"at byte {len(first)} is damaged")


FILES = {
    "a.jsonl": ('{"text": "one \\u00e9", "id": 1}\n\n{"text": "two", "id": 2}\r\n'
                '{"text": "three"}\n') * 50,
    "a.csv": 'id,text\r\n' + '1,"one, ""quoted""\nline"\r\n\r\n2,007\n3,\n' * 50,
    "a.text": "\ufefffirst line\n\nthird 😀\r\nlast" * 50,
    "a.txt": "hi __eou__ hello __eou__ bye __eou__\n\nyes __eou__ no __eou__\n" * 50,
}
FIELDS = {"a.jsonl": ["text"], "a.csv": ["text", "id"], "a.text": ["text"],
          "a.txt": ["context", "response"]}
FORMATS = {"a.jsonl": "jsonl", "a.csv": "csv", "a.text": "text", "a.txt": "dailydialog"}


def _rows(path, fields, engine):
    chunks = list(read_chunks(path, fields, engine=engine, chunk_rows=7))
    return [row for c in chunks for row in zip(*[
        c.columns[f] if isinstance(c.columns[f], list) else c.columns[f].to_pylist()
        for f in fields])], sum(c.nbytes for c in chunks)


@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("file", sorted(FILES))
@pytest.mark.parametrize("engine", ENGINES)
def test_rows_of_a_multi_member_gz_are_the_plain_files(tmp_path, name, file, engine,
                                                        monkeypatch):
    data = FILES[file].encode()
    plain = _write(tmp_path / file, data)
    cuts = [0, 1, len(data) // 3, len(data) // 3, len(data) - 1, len(data)]
    packed = _write(tmp_path / (file + ".gz"), b"".join(
        gzip.compress(data[a:b], compresslevel=1 + i) + b"\0" * i
        for i, (a, b) in enumerate(zip(cuts, cuts[1:]))))
    with decoder(name):
        rows, nbytes = _rows(packed, FIELDS[file], engine)
        assert rows == _rows(plain, FIELDS[file], engine)[0] and rows
        assert nbytes == os.path.getsize(packed)  # progress: every compressed byte
        monkeypatch.setenv("OVERLAP_READER", engine)
        assert read_fields(packed, FIELDS[file], FORMATS[file]) == read_fields(
            plain, FIELDS[file], FORMATS[file])


@pytest.mark.parametrize("name", DECODERS)
@pytest.mark.parametrize("engine", ENGINES)
def test_an_empty_gz_and_a_truncated_one(tmp_path, name, engine):
    empty = _write(tmp_path / "e.jsonl.gz", b"")
    data = gzip.compress(b"".join(b'{"text": "row %d"}\n' % i for i in range(50_000)))
    cut = _write(tmp_path / "c.jsonl.gz", data[:len(data) // 2])
    with decoder(name):
        with pytest.raises(ValueError, match=r"e\.jsonl\.gz: no rows \(0 samples read\)"):
            list(read_chunks(empty, engine=engine))
        with pytest.raises(ValueError) as e:
            list(read_chunks(cut, engine=engine))
    assert str(e.value) == (f"{cut}: cannot inflate this gzip file: it is truncated (the gzip "
                            "member at byte 0 has no end)")


def test_the_command_line_names_a_damaged_gz(tmp_path, capsys):
    ev = _write(tmp_path / "ev.txt", b"a b c\n")
    cut = _write(tmp_path / "c.txt.gz", gzip.compress(b"a b c\n" * 1000)[:-20])
    assert main(["scan", "--train-stream", cut, "--eval", ev]) == 2
    assert (f"{cut}: cannot inflate this gzip file: it is truncated (the gzip member at "
            "byte 0 has no end)") in capsys.readouterr().err


def test_closing_the_stream_closes_the_file(tmp_path):
    path = _write(tmp_path / "f.gz", gzip.compress(b"x\n"))
    f = open_binary(path)
    raw = f.fileobj
    assert isinstance(f, io.BufferedReader) and f.read() == b"x\n"
    f.close()
    assert raw.closed
