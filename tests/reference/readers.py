"""Plain-Python definitions of what a sample file holds (the readers' reference).

Only the rows of a good file are defined here; errors are the stdlib reader's
(``overlap._readers``), which the arrow reader is compared with.
"""

from __future__ import annotations

import gzip
import json


def _data(path: str) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if path.endswith(".gz") else data


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
