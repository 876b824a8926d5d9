"""The chunked arrow reader allocates from pyarrow's jemalloc pool (its
system pool where pyarrow has no jemalloc), and a streamed scan never
imports pandas.

``overlap._arrow_pool`` says why: chunks read on one thread and freed on
another had mimalloc ask the system for fresh (zeroed) memory again and
again, and glibc's heaps kept more and more of a long Parquet scan's freed
blocks.  The rows are the stdlib reader's either way; here, that the arrays
do come from that pool for JSONL, text and Parquet (pyarrow's CSV
reader allocated from the default pool whatever pool it was handed: CSV
keeps it), that
the Parquet reader falls back to the default pool where pyarrow's reader
takes none, and that the scan does not stall on importing pandas (pyarrow
imports it when ``pa.array`` is handed a list or a numpy array).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import overlap
from overlap import _batches
from overlap._arrow_pool import reading_pool

from reference.engines import outcome

pa = pytest.importorskip("pyarrow", reason="the arrow reader needs pyarrow")
pq = pytest.importorskip("pyarrow.parquet", reason="the arrow reader needs pyarrow")

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(overlap.__file__)))
TEXTS = [f"row {i} with some words {'x' * (i % 50)}" for i in range(3000)]


def _write(tmp_path, fmt: str) -> str:
    path = str(tmp_path / f"data.{fmt}")
    if fmt == "jsonl":
        with open(path, "w") as f:
            f.writelines(json.dumps({"text": t, "id": i}) + "\n" for i, t in enumerate(TEXTS))
    elif fmt == "csv":
        with open(path, "w") as f:
            f.write("id,text\n")
            f.writelines(f"{i},{t}\n" for i, t in enumerate(TEXTS))
    elif fmt == "txt":
        with open(path, "w") as f:
            f.writelines(t + "\n" for t in TEXTS)
    else:  # "parquet", or "parquet-dict": the column stored as an Arrow dictionary
        text = pa.array(TEXTS)
        if fmt == "parquet-dict":
            text, path = text.dictionary_encode(), path[:-len("-dict")]
        pq.write_table(pa.table({"text": text, "id": list(range(len(TEXTS)))}), path,
                       row_group_size=1000)
    return path


def _jemalloc_built() -> bool:
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


@pytest.mark.parametrize("fmt", ["jsonl", "txt", "parquet"])
@pytest.mark.parametrize("jemalloc", [True, False], ids=["jemalloc", "no-jemalloc"])
def test_chunked_arrays_come_from_the_reading_pool(tmp_path, monkeypatch, fmt, jemalloc):
    if jemalloc and not _jemalloc_built():
        pytest.skip("this pyarrow is built without jemalloc (the other case runs)")
    if not jemalloc:  # as in a pyarrow built without it
        def unavailable():
            raise pa.lib.ArrowNotImplementedError("This Arrow build does not enable jemalloc")
        monkeypatch.setattr(pa, "jemalloc_memory_pool", unavailable)
    path = _write(tmp_path, fmt)
    fmt_name = "text" if fmt == "txt" else fmt
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    pool = reading_pool()
    assert pool.backend_name == ("jemalloc" if jemalloc else "system")
    before = pool.bytes_allocated()
    batches = list(_batches.read_batches(path, fmt_name, ["text"], engine="arrow",
                                         block_bytes=1 << 14))
    held = pool.bytes_allocated() - before
    text_bytes = sum(len(t) for t in TEXTS)
    assert held >= text_bytes  # the strings' bytes at least, all in that pool
    got = [t for b in batches for t in b.columns["text"].to_pylist()]
    assert got == TEXTS
    del batches
    # and handed back when the batches go (the pool may also be pyarrow's
    # default, jemalloc before pyarrow 13, holding a few buffers of its own)
    assert pool.bytes_allocated() - before < text_bytes


def test_parquet_without_a_pooled_reader_reads_the_same_rows(tmp_path, monkeypatch):
    path = _write(tmp_path, "parquet")
    import pyarrow._parquet as low

    class NoPool:
        def __init__(self, memory_pool=None):
            raise TypeError("this pyarrow's reader takes no memory pool")

    monkeypatch.setattr(low, "ParquetReader", NoPool)
    assert _batches._pooled_reader(path, None, reading_pool()) is None
    assert outcome(path, ["text"], "arrow") == outcome(path, ["text"], "python")


def test_a_pool_named_in_arrows_variable_wins(tmp_path):
    # pyarrow reads ARROW_DEFAULT_MEMORY_POOL when it is imported: a child
    # process with it set (CI's sanitizer job sets "system", where ASan sees
    # the arrays' bounds)
    code = ("from overlap._arrow_pool import reading_pool\n"
            "import pyarrow as pa\n"
            "pool = reading_pool()\n"
            "print(pool.backend_name, pool.backend_name == pa.default_memory_pool().backend_name)\n")
    env = dict(os.environ, ARROW_DEFAULT_MEMORY_POOL="system", PYTHONPATH=PKG_ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["system", "True"], out.stdout


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "parquet-dict", "csv"])
def test_a_streamed_scan_does_not_import_pandas(tmp_path, fmt):
    pytest.importorskip("pandas", reason="the check needs pandas installed (to stay out)")
    path = _write(tmp_path, fmt)
    code = textwrap.dedent(f"""
        import sys
        from overlap.stream import scan_stream
        res = scan_stream({TEXTS[:20]!r} + ["unseen words"], {path!r}, chunk_rows=700,
                          min_score=0.5, keep_text=True, n_threads=2)
        assert res.match["text"][:20] == {TEXTS[:20]!r}, res.match["text"][:20]
        print("pandas" in sys.modules)
    """)
    # the child imports the package this process tested (installed, or built in place)
    env = dict(os.environ, OVERLAP_READER="arrow", PYTHONPATH=PKG_ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
