"""Streaming scan: equal to the in-memory search for any chunking; bounded memory."""

from __future__ import annotations

import gzip
import json
import os
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import overlap
from overlap import TokenSets
from overlap.stream import (
    StreamMerger,
    merge_scan_results,
    scan_stream,
    stream_max_overlap,
)
from overlap import _batches
from overlap._allocator import settle
from overlap.stream_readers import read_chunks, shard_paths, source_size

from reference import overlap as ref
from reference.helpers import chunked

VOCAB = [f"w{i}" for i in range(12)]
try:
    import pyarrow  # noqa: F401
    _NO_ARROW = False
except ImportError:
    _NO_ARROW = True
#: both readers; the arrow one needs pyarrow (an extra)
ENGINES = [pytest.param("arrow", marks=pytest.mark.skipif(
    _NO_ARROW, reason="pyarrow is not installed (the dataframe extra)")), "python"]


def _strs(col):
    """A chunk column as a list of str (the arrow reader gives Arrow arrays)."""
    return col if isinstance(col, list) else col.to_pylist()


def _texts(draw_lists):
    return [" ".join(VOCAB[i] for i in row) for row in draw_lists]


rows = st.lists(st.lists(st.integers(0, len(VOCAB) - 1), max_size=6), max_size=25)


@given(
    q=st.lists(rows, min_size=1, max_size=2),
    r=st.lists(rows, min_size=1, max_size=2),
    sizes=st.lists(st.integers(0, 9), min_size=1, max_size=4).filter(any),
    top_k=st.integers(1, 3),
    min_score=st.sampled_from([0.0, 0.25, 0.5, 2 / 3, 0.8, 1.0]),
    index=st.sampled_from(["auto", "chunk", "queries"]),
    multiset=st.booleans(),
)
def test_equals_in_memory_search_for_any_chunking(q, r, sizes, top_k, min_score, index,
                                                  multiset):
    nf = min(len(q), len(r))
    nq = min(len(x) for x in q[:nf])
    nr = min(len(x) for x in r[:nf])
    qf = tuple(TokenSets.from_texts(_texts(x[:nq]), multiset=multiset) for x in q[:nf])
    rf = tuple(TokenSets.from_texts(_texts(x[:nr]), multiset=multiset) for x in r[:nf])
    want = overlap.max_overlap(qf, rf, top_k=top_k, min_score=min_score)
    got = stream_max_overlap(qf, chunked(rf, sizes), top_k=top_k, min_score=min_score,
                             index=index)
    np.testing.assert_array_equal(got.score, want.score)
    np.testing.assert_array_equal(got.index, want.index)


def test_equals_plain_python_reference(rng):
    q = [" ".join(rng.choice(VOCAB, rng.integers(0, 6))) for _ in range(40)]
    r = [" ".join(rng.choice(VOCAB, rng.integers(0, 6))) for _ in range(300)]
    qs, rs = TokenSets.from_texts(q), TokenSets.from_texts(r)
    got = stream_max_overlap(qs, chunked((rs,), [1, 7, 30]), top_k=2)
    want = ref.max_overlap([(ref.bag(ref.tokenize_wordpunct(t)),) for t in q],
                           [(ref.bag(ref.tokenize_wordpunct(t)),) for t in r], top_k=2)
    assert got.score.tolist() == [[s for s, _ in row] for row in want]
    assert got.index.tolist() == [[j for _, j in row] for row in want]


@pytest.mark.parametrize("index", ["chunk", "queries", "auto"])
def test_ties_across_chunk_boundaries_go_to_the_lowest_row(index):
    refs = TokenSets.from_texts(["x y", "a b", "a b", "a b c", "a b", "a b"])
    queries = TokenSets.from_texts(["a b", "a b c", "z"])
    for size in (1, 2, 3):
        got = stream_max_overlap(queries, chunked((refs,), [size]), top_k=3, index=index,
                                 min_score=0.5)
        want = overlap.max_overlap(queries, refs, top_k=3, min_score=0.5)
        np.testing.assert_array_equal(got.index, want.index)
        assert got.index[0].tolist() == [1, 2, 4]  # equal scores, first rows win


@pytest.mark.parametrize("join_rows", [1, 2, 5])
def test_query_index_joins_in_slices(monkeypatch, rng, join_rows):
    import overlap.stream as stream

    monkeypatch.setattr(stream, "JOIN_ROWS", join_rows)
    q = TokenSets.from_texts([" ".join(rng.choice(VOCAB, rng.integers(1, 5))) for _ in range(30)])
    r = TokenSets.from_texts([" ".join(rng.choice(VOCAB, rng.integers(1, 5))) for _ in range(80)])
    for k in (1, 3):
        got = stream_max_overlap(q, chunked((r,), [11]), top_k=k, min_score=0.4,
                                 index="queries")
        want = overlap.max_overlap(q, r, top_k=k, min_score=0.4)
        np.testing.assert_array_equal(got.score, want.score)
        np.testing.assert_array_equal(got.index, want.index)


def test_auto_falls_back_to_the_chunk_index_when_the_join_lists_many_pairs():
    q = TokenSets.from_texts(["a b", "a c", "a d"])
    m = StreamMerger(q, min_score=0.5)
    m.add(TokenSets.from_texts(["x", "y"]))           # cut-off 0.5: query index, no pairs
    assert m.chunks == {"chunk": 0, "queries": 1}
    m.add(TokenSets.from_texts(["a", "a b c d"]))     # 6 pairs >= 0.5 for 2 rows
    m.add(TokenSets.from_texts(["a b"]))
    assert m.chunks == {"chunk": 1, "queries": 2}
    want = overlap.max_overlap(q, TokenSets.from_texts(["x", "y", "a", "a b c d", "a b"]),
                               min_score=0.5)
    np.testing.assert_array_equal(m.result().index, want.index)


def test_same_result_for_every_thread_count(rng):
    q = TokenSets.from_ids(rng.integers(0, 400, (300, 12)))
    r = TokenSets.from_ids(rng.integers(0, 400, (5000, 12)))
    runs = [stream_max_overlap(q, chunked((r,), [1500]), top_k=2, n_threads=nt, index=how)
            for nt in (1, 2, 4) for how in ("chunk", "queries")]
    for res in runs[1:]:
        np.testing.assert_array_equal(res.score, runs[0].score)
        np.testing.assert_array_equal(res.index, runs[0].index)


def test_merger_validates():
    q = TokenSets.from_texts(["a b"])
    m = StreamMerger(q)
    m.add(TokenSets.from_texts(["a", "b"]))
    with pytest.raises(ValueError, match="offset"):
        m.add(TokenSets.from_texts(["a"]), offset=1)
    with pytest.raises(ValueError, match="index"):
        StreamMerger(q, index="both")
    with pytest.raises(ValueError, match="fields|references"):
        m.add((TokenSets.from_texts(["a"]), TokenSets.from_texts(["a"])))
    with pytest.raises(TypeError, match="reference_chunks"):
        stream_max_overlap(q, TokenSets.from_texts(["a"]))
    with pytest.raises(ValueError, match="min_score"):
        stream_max_overlap(q, [], min_score=1.5)


# ------------------------------------------------------------------ readers
CORPUS = [
    ("今天的天气真好，我们去公园散步吧！", "zh"),
    ("honestly the best coffee in town", "en"),
    ("¡qué día tan bonito! vamos a la playa", "es"),
    ("the best coffee in town, honestly", "en"),
    ("a line with a \"quote\", and a comma", "en"),
    ("今天天气真好", "zh"),
    ("", "en"),
    ("vamos a la playa con mis amigos", "es"),
]


def _write(path, fmt, rows):
    if fmt == "parquet":
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        table = pa.table({"text": [t for t, _ in rows], "lang": [lang for _, lang in rows]})
        pq.write_table(table, path, row_group_size=3)
        return
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8", newline="") as f:
        if fmt == "jsonl":
            for t, lang in rows:
                f.write(json.dumps({"text": t, "lang": lang, "id": 1}, ensure_ascii=False) + "\n")
        elif fmt == "text":
            for t, _ in rows:
                f.write(t + "\n")
        else:
            import csv

            w = csv.writer(f, delimiter="," if fmt == "csv" else "\t")
            w.writerow(["id", "text", "lang"])
            for i, (t, lang) in enumerate(rows):
                w.writerow([i, t, lang])


@pytest.mark.parametrize("name, fmt", [
    ("c.jsonl", "jsonl"), ("c.jsonl.gz", "jsonl"), ("c.txt", "text"), ("c.txt.gz", "text"),
    ("c.csv", "csv"), ("c.tsv", "tsv"), ("c.parquet", "parquet"),
])
@pytest.mark.parametrize("chunk_rows", [1, 3, 100])
@pytest.mark.parametrize("engine", ENGINES)
def test_readers_yield_rows_in_order(tmp_path, name, fmt, chunk_rows, engine):
    path = str(tmp_path / name)
    _write(path, fmt, CORPUS)
    chunks = list(read_chunks(path, "text", chunk_rows=chunk_rows, engine=engine))
    texts = [t for c in chunks for t in _strs(c.columns["text"])]
    assert texts == [t for t, _ in CORPUS]
    assert all(c.n_rows <= chunk_rows for c in chunks)
    assert [c.first_row for c in chunks] == list(np.cumsum([0] + [c.n_rows for c in chunks])[:-1])
    assert sum(c.nbytes for c in chunks) == os.path.getsize(path) or name.endswith(".gz")


@pytest.mark.parametrize("engine", ENGINES)
def test_directory_of_shards_is_read_in_name_order(tmp_path, engine):
    _write(str(tmp_path / "part-001.jsonl"), "jsonl", CORPUS[4:])
    _write(str(tmp_path / "part-000.csv"), "csv", CORPUS[:4])
    (tmp_path / "README.md").write_text("not a shard")
    assert [os.path.basename(p) for p in shard_paths(tmp_path)] == [
        "part-000.csv", "part-001.jsonl"]
    chunks = list(read_chunks(tmp_path, ["text", "lang"], chunk_rows=3, engine=engine))
    assert [t for c in chunks for t in _strs(c.columns["lang"])] == [lang for _, lang in CORPUS]
    assert [(os.path.basename(c.path), c.shard_row, c.first_row) for c in chunks] == [
        ("part-000.csv", 0, 0), ("part-000.csv", 3, 3),
        ("part-001.jsonl", 0, 4), ("part-001.jsonl", 3, 7)]
    assert source_size(tmp_path) == sum(os.path.getsize(p) for p in shard_paths(tmp_path))


@pytest.mark.parametrize("engine", ENGINES)
def test_reader_errors_name_file_and_line(tmp_path, engine, monkeypatch):
    monkeypatch.setenv("OVERLAP_READER", engine)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": 3}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: field 'text' must be a string"):
        list(read_chunks(bad))
    bad.write_text('{"text": "ok"}\n{"body": "x"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: no field 'text'"):
        list(read_chunks(bad))
    bad.write_text('{"text": "ok"}\nnot json\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: invalid JSON"):
        list(read_chunks(bad))
    csvf = tmp_path / "t.csv"
    csvf.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"t.csv:1: no column 'text'"):
        list(read_chunks(csvf))
    odd = tmp_path / "x.bin"
    odd.write_text("x")
    with pytest.raises(ValueError, match="cannot tell the format"):
        list(read_chunks(odd))
    with pytest.raises(ValueError, match="no file with a known extension"):
        list(read_chunks(tmp_path / "empty")) if (tmp_path / "empty").mkdir() is None else None
    with pytest.raises(ValueError, match="chunk_rows"):
        list(read_chunks(bad, chunk_rows=0))


EVAL = {
    "text": ["今天天气真好，我们去公园散步！", "the best coffee in town", "vamos a la playa",
             "nothing matches here", ""],
    "lang": ["zh", "en", "es", "en", "en"],
}


@pytest.mark.parametrize("tokenizer", ["intl", "wordpunct"])
@pytest.mark.parametrize("top_k", [1, 2])
@pytest.mark.parametrize("chunk_rows", [1, 2, 5, 100])
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("prefetch", [True, False])
def test_scan_stream_equals_in_memory_scan(tmp_path, tokenizer, top_k, chunk_rows, engine,
                                           prefetch):
    _write(str(tmp_path / "a.jsonl"), "jsonl", CORPUS[:5])
    _write(str(tmp_path / "b.txt"), "text", CORPUS[5:])
    res = scan_stream(EVAL, tmp_path, tokenizer=tokenizer, chunk_rows=chunk_rows, top_k=top_k,
                      engine=engine, prefetch=prefetch)
    train = [t for t, _ in CORPUS]
    want = overlap.max_overlap(TokenSets.from_texts(EVAL["text"], tokenizer),
                               TokenSets.from_texts(train, tokenizer), top_k=top_k)
    np.testing.assert_array_equal(res.score, want.score)
    np.testing.assert_array_equal(res.index, want.index)
    texts = np.array([train[j] if j >= 0 else None for j in np.ravel(want.index)], dtype=object)
    assert np.ravel(np.array(res.match["text"], dtype=object)).tolist() == texts.tolist()
    assert res.n_references == len(CORPUS)
    assert res.nbytes == source_size(tmp_path)
    assert res.locate(6) == (str(tmp_path / "b.txt"), 1)


def test_scan_stream_two_fields_and_min_score(tmp_path):
    _write(str(tmp_path / "c.parquet"), "parquet", CORPUS)
    ev = {"text": EVAL["text"], "lang": EVAL["lang"]}
    res = scan_stream(ev, tmp_path / "c.parquet", fields=["text", "lang"], chunk_rows=2,
                      min_score=0.5)
    fields = ["text", "lang"]
    q = [TokenSets.from_texts(ev[f]) for f in fields]
    r = [TokenSets.from_texts([row[k] for row in CORPUS]) for k in range(2)]
    want = overlap.max_overlap(q, r, min_score=0.5)
    np.testing.assert_array_equal(res.score, want.score)
    np.testing.assert_array_equal(res.index, want.index)
    assert res.match["lang"] == [CORPUS[j][1] if j >= 0 else None for j in want.index]


def test_merged_shard_results_equal_one_scan(tmp_path):
    for i, part in enumerate([CORPUS[:3], CORPUS[3:4], CORPUS[4:]]):
        _write(str(tmp_path / f"s{i}.jsonl"), "jsonl", part)
    for k in (1, 2):
        whole = scan_stream(EVAL, tmp_path, top_k=k, chunk_rows=2)
        parts = [scan_stream(EVAL, [p], top_k=k, chunk_rows=2) for p in shard_paths(tmp_path)]
        merged = merge_scan_results(parts)
        np.testing.assert_array_equal(merged.score, whole.score)
        np.testing.assert_array_equal(merged.index, whole.index)
        assert merged.match == whole.match
        assert merged.shards == whole.shards


def test_progress_over_bytes_is_plain_lines_in_a_log(tmp_path, capsys):
    path = str(tmp_path / "c.jsonl")
    _write(path, "jsonl", CORPUS * 20)
    seen = []
    scan_stream(EVAL, path, chunk_rows=16, progress=lambda d, t: seen.append((d, t)))
    total = os.path.getsize(path)
    assert seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    scan_stream(EVAL, path, chunk_rows=16, progress=True)
    err = capsys.readouterr().err
    assert "\r" not in err and f"/{total / 1000:.2f} kB (100.0%)" in err


def test_scan_stream_validates(tmp_path):
    path = tmp_path / "c.txt"
    _write(str(path), "text", CORPUS)
    with pytest.raises(ValueError, match="eval_columns has no field 'body'"):
        scan_stream(EVAL, path, fields="body")
    with pytest.raises(TypeError, match="eval_columns"):
        scan_stream("a text", path)
    with pytest.raises(ValueError, match="text file has one field"):
        scan_stream(EVAL, path, fields=["text", "lang"])
    with pytest.raises(ValueError, match="chunk_rows"):
        scan_stream(EVAL, path, chunk_rows=0)
    with pytest.raises(ValueError, match="index"):
        scan_stream(EVAL, path, index="none")


# ------------------------------------------------------------------- memory
def _generated_jsonl(path, n_rows, rng):
    with open(path, "w") as f:
        for row in rng.integers(0, 5000, (n_rows, 40)).tolist():
            f.write(json.dumps({"text": " ".join(f"tok{i}" for i in row)}) + "\n")


def _peak_bytes(fn, warm_up=None) -> int:
    # what a process does once would be the peak of whichever scan comes
    # first: the allocator's warm-up (a 31 MiB block allocated untouched and
    # freed) and the imports of the first scan (pyarrow's: about 30 MB of
    # Python objects at their peak); ``warm_up`` is run first, unmeasured
    settle()
    if warm_up is not None:
        warm_up()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_memory_is_bounded_by_the_chunks_in_flight_not_the_corpus(tmp_path, rng, engine,
                                                                  prefetch, monkeypatch):
    # the same scan over a small corpus and one 150x the chunk: the peak of
    # Python and numpy allocations must not grow with the corpus (the arrow
    # reader's blocks made small, so that the big corpus spans many).  The
    # small one fills the pipeline: two chunks (the one searched and the one
    # being read), four with prefetching (which holds three: searched,
    # tokenized, being read; a queue that let the reader run ahead fails)
    monkeypatch.setenv("OVERLAP_READER", engine)
    monkeypatch.setattr(_batches, "BLOCK_BYTES", 1 << 16)
    chunk = 500
    small, big = str(tmp_path / "small.jsonl"), str(tmp_path / "big.jsonl")
    _generated_jsonl(small, (4 if prefetch else 2) * chunk, rng)
    _generated_jsonl(big, 150 * chunk, rng)
    ev = [" ".join(f"tok{i}" for i in rng.integers(0, 5000, 40)) for _ in range(200)]

    def scan(path):
        return scan_stream(ev, path, chunk_rows=chunk, n_threads=2 if prefetch else 1,
                           prefetch=prefetch)

    peak_small = _peak_bytes(lambda: scan(small), warm_up=lambda: scan(small))
    peak_big = _peak_bytes(lambda: scan(big))
    corpus_bytes = os.path.getsize(big)
    assert peak_big < 1.5 * peak_small + (1 << 20), (peak_small, peak_big)
    assert peak_big < corpus_bytes / 4, (peak_big, corpus_bytes)


def test_memory_bounded_for_a_generated_stream(rng):
    # TokenSets chunks made on the fly: 50 chunks, never all alive at once
    q = TokenSets.from_ids(rng.integers(0, 3000, (100, 30)))

    def gen(n_chunks):
        for _ in range(n_chunks):
            yield TokenSets.from_ids(rng.integers(0, 3000, (1000, 30)))

    peak_2 = _peak_bytes(lambda: stream_max_overlap(q, gen(2), n_threads=1))
    peak_50 = _peak_bytes(lambda: stream_max_overlap(q, gen(50), n_threads=1))
    assert peak_50 < 1.5 * peak_2 + (1 << 20), (peak_2, peak_50)


# --------------------------------------------------------------------- dask
def test_dask_streams_shards_on_workers(tmp_path, dask_client):
    import overlap.dask as odask

    for i, part in enumerate([CORPUS[:3], CORPUS[3:4], CORPUS[4:]]):
        _write(str(tmp_path / f"s{i}.jsonl"), "jsonl", part)
    client = dask_client
    for k in (1, 2):
        got = odask.scan_stream(EVAL, tmp_path, client=client, top_k=k, chunk_rows=2,
                                tokenizer="intl")
        want = scan_stream(EVAL, tmp_path, top_k=k, chunk_rows=2, tokenizer="intl")
        np.testing.assert_array_equal(got.score, want.score)
        np.testing.assert_array_equal(got.index, want.index)
        assert got.match == want.match
        assert got.n_references == len(CORPUS)
    with pytest.raises(ValueError, match="min_score"):
        odask.scan_stream(EVAL, tmp_path, client=client, min_score=2.0)


@pytest.mark.parametrize("prefetch", [True, False])
def test_a_read_error_mid_corpus_reaches_the_caller_and_stops_the_threads(tmp_path, prefetch):
    """With prefetching, a shard is read on one thread and tokenized on another:
    an error of the reading (a bad row in the second shard) still reaches the
    caller with its file and line, and no thread of the scan is left running."""
    import threading

    _write(str(tmp_path / "a.jsonl"), "jsonl", CORPUS)
    (tmp_path / "b.jsonl").write_text('{"text": "x y"}\n{"text": 3}\n')
    before = {t.name for t in threading.enumerate()}
    with pytest.raises(ValueError, match=r"b.jsonl:2: field 'text' must be a string"):
        scan_stream(EVAL, tmp_path, chunk_rows=2, prefetch=prefetch)
    left = {t.name for t in threading.enumerate()} - before
    assert not {n for n in left if n.startswith("overlap-")}


def test_a_bad_chunk_from_the_caller_is_refused_with_prefetching(tmp_path):
    with pytest.raises(TypeError, match="source yielded a str, expected a Chunk"):
        scan_stream(EVAL, iter(["not a chunk"]), prefetch=True)
