"""Plain-Python definitions of what a sample file holds (the readers' reference).

Only the rows of a good file are defined here; errors are the stdlib reader's
(``overlap._readers``), which the arrow reader is compared with.
"""

from __future__ import annotations

import csv
import gzip
import io
import json


def zstd_decompress(data: bytes) -> bytes:
    """Every frame of Zstandard ``data`` inflated (pyarrow, else zstandard)."""
    try:
        import pyarrow as pa
    except ImportError:
        import zstandard
        return zstandard.ZstdDecompressor().stream_reader(
            io.BytesIO(data), read_across_frames=True).read()
    return pa.CompressedInputStream(pa.BufferReader(data), "zstd").read()


def zstd_compress(data: bytes, frames: int = 1) -> bytes:
    """``data`` as Zstandard, in ``frames`` consecutive frames (a multi-frame file)."""
    try:
        import pyarrow as pa
        one = lambda b: pa.compress(b, "zstd", asbytes=True)  # noqa: E731
    except ImportError:
        import zstandard
        one = zstandard.ZstdCompressor().compress
    step = -(-len(data) // frames) if data else 1
    return b"".join(one(data[i:i + step]) for i in range(0, max(len(data), 1), step))


def _data(path: str) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        return gzip.decompress(data)
    if path.endswith(".zst"):
        return zstd_decompress(data)
    return data


def jsonl_rows(path: str, fields: list[str]) -> list[tuple]:
    """Every non-blank line is a JSON object: the ``fields`` of each, in order."""
    text = _data(path).decode("utf-8-sig")
    out = []
    for line in text.split("\n"):
        if line.strip():
            obj = json.loads(line)
            out.append(tuple(obj[f] for f in fields))
    return out


def text_rows(path: str) -> list[tuple]:
    """Every line of the bytes (blank ones too; a BOM opening the file dropped) without
    its trailing ``\\r``/``\\n`` characters."""
    lines = _data(path).split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [(line.decode("utf-8-sig" if i == 0 else "utf-8").rstrip("\r\n"),)
            for i, line in enumerate(lines)]


def csv_rows(path: str, fields: list[str], delimiter: str = ",") -> list[tuple]:
    """A CSV (TSV) file with a header record: the ``fields`` of every record that
    is not an empty line, by the csv module's excel dialect on the whole text (a
    BOM opening the file dropped).  Only for files that hold no error."""
    text = _data(path).decode("utf-8-sig")
    records = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if r]
    header, body = records[0], records[1:]
    at = [header.index(f) for f in fields]
    return [tuple(r[k] for k in at) for r in body]


def jsonl_block_facts(block: bytes) -> tuple[int, int, bool]:
    """What the arrow reader checks in a JSONL block: its newlines, its ``[``
    and ``{``, and whether some ``}`` is followed by ``{`` with only spaces,
    tabs and carriage returns between (two objects on a line)."""
    two = False
    for i, c in enumerate(block):
        if c == ord("}"):
            j = i + 1
            while j < len(block) and block[j] in b" \t\r":
                j += 1
            two = two or (j < len(block) and block[j] == ord("{"))
    return block.count(b"\n"), block.count(b"[") + block.count(b"{"), two
