"""Inflating a gzip JSONL shard (issue 29): ISA-L, zlib and Python's gzip module.

The shard is ``bench/stream_contamination.py``'s corpus,
``OVERLAP_BENCH_GZIP_ROWS`` rows (default 300,000: about 52 MB of JSONL),
written once per session at gzip level 1 (as that script writes its ``.gz``
shards).

Group ``inflate: JSONL shard as .gz, 2 MiB reads``: the inflated bytes read
2 MiB at a time, as the arrow reader cuts its blocks.  Ours is
``overlap._lines.open_binary`` with ISA-L (the ``fastgz`` extra; skipped
without it) and with the stdlib's zlib (the fallback); the peers are
``gzip.GzipFile`` (what ``open_binary`` used before), pyarrow's
``CompressedInputStream(..., "gzip")`` and reading the plain JSONL (the
floor: no inflating).  Every one must return the plain file's bytes
(checked once, outside the timed region); ``extra_info["mb_per_s"]`` is
JSONL MB over the mean time.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Callable
from typing import IO

import numpy as np
import pytest

from overlap import _gzip
from overlap._lines import open_binary

from .conftest import describe
from .stream_contamination import _pool, row_text

ROWS_ENV = "OVERLAP_BENCH_GZIP_ROWS"
G = "inflate: JSONL shard as .gz, 2 MiB reads"
READ = 2 << 20


@pytest.fixture(scope="module")
def shard(tmp_path_factory):
    n_rows = int(os.environ.get(ROWS_ENV, "300000"))
    pool = _pool(np.random.default_rng(0))
    data = "".join(json.dumps({"text": row_text(pool, r)}) + "\n"
                   for r in range(n_rows)).encode()
    folder = tmp_path_factory.mktemp("gzip")
    plain, packed = folder / "corpus.jsonl", folder / "corpus.jsonl.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data, compresslevel=1))
    return {"plain": str(plain), "gz": str(packed), "size": len(data),
            "crc": zlib.crc32(data)}


def _drain(f: IO[bytes]) -> int:
    n = 0
    with f:
        while True:
            b = f.read(READ)
            if not b:
                return n
            n += len(b)


def _check(open_: Callable[[], IO[bytes]], shard) -> None:
    crc = 0
    with open_() as f:
        while b := f.read(READ):
            crc = zlib.crc32(b, crc)
    assert crc == shard["crc"]


def _run(benchmark, shard, open_: Callable[[], IO[bytes]], **info) -> None:
    benchmark.group = G
    _check(open_, shard)
    describe(benchmark, jsonl_bytes=shard["size"], gz_bytes=os.path.getsize(shard["gz"]),
             **info)
    assert benchmark(lambda: _drain(open_())) == shard["size"]
    benchmark.extra_info["mb_per_s"] = round(shard["size"] / 1e6 / benchmark.stats.stats.mean,
                                             1)


@pytest.mark.parametrize("decoder", ["isal", "zlib"])
def test_ours(benchmark, shard, decoder, monkeypatch):
    if decoder == "isal":
        pytest.importorskip("isal", reason="the fastgz extra (isal) is not installed")
    else:
        monkeypatch.setattr(_gzip, "gzip_decoder", lambda: ("zlib", zlib, (zlib.error,)))
    _run(benchmark, shard, lambda: open_binary(shard["gz"]), decoder=decoder)


def test_gzip_module(benchmark, shard):
    _run(benchmark, shard, lambda: gzip.GzipFile(shard["gz"]))


def test_pyarrow_gzip(benchmark, shard):
    pa = pytest.importorskip("pyarrow")
    _run(benchmark, shard, lambda: pa.CompressedInputStream(pa.OSFile(shard["gz"]), "gzip"))


def test_plain_jsonl_floor(benchmark, shard):
    _run(benchmark, shard, lambda: open(shard["plain"], "rb"))
