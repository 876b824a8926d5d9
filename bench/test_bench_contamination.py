"""N-gram contamination (issue 30): 10,000 eval samples, 13-grams, a generated corpus.

The corpus is ``bench/stream_contamination.py``'s: rows of 10-60 Zipf words
(a 100,000-word vocabulary) plus a unique id token, about 160 characters a
row, ``OVERLAP_BENCH_CONTAMINATION_ROWS`` rows (default 300,000: about 52 MB
of JSONL), written once per session to a temporary folder.  The eval set is
10,000 token sequences of the same pool, so about a quarter of them occur
in the corpus (about 3 % of them shorter than 13 tokens: their whole stream
is their one n-gram).

Groups (the figure to read is ``extra_info["mb_per_s"]``: corpus bytes over
the mean time, end to end: reading, tokenizing, probing, the report):

* ``contamination: JSONL and Parquet corpus``: ours
  (``overlap.contamination.contamination`` on the file, ``rules="any"``), from
  JSONL and from Parquet (the same rows), read by either engine of
  ``read_chunks`` (``arrow``: Arrow string columns; ``python``: the standard
  library), on all threads and on one, against the
  plain-Python peer of lm-evaluation-harness's decontamination: the eval
  13-grams as a set of token tuples (the reference tokenizer), every corpus
  row read with ``json.loads``, tokenized and its windows looked up.  The
  peer computes the same definition (a sample shorter than 13 tokens looks
  for its whole stream) and must flag the same samples.
* ``contamination: corpus in memory``: ours on the same texts as a list of
  str and as an Arrow column (no reading), all threads.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from overlap.contamination import contamination

from ._peers import tokenize_reference
from .conftest import THREADS, describe, run_once
from .stream_contamination import POOL, _pool, row_text

ROWS_ENV = "OVERLAP_BENCH_CONTAMINATION_ROWS"
N_EVAL = 10_000
G_FILE = "contamination: 10k eval, 13-grams, JSONL and Parquet corpus"
G_MEM = "contamination: 10k eval, 13-grams, corpus in memory"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    n_rows = int(os.environ.get(ROWS_ENV, "300000"))
    pool = _pool(np.random.default_rng(0))
    corpus = [row_text(pool, r) for r in range(n_rows)]
    ev = [pool[(i * 104729) % POOL] for i in range(N_EVAL)]
    path = tmp_path_factory.mktemp("contamination") / "corpus.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for t in corpus:
            f.write(json.dumps({"text": t}) + "\n")
    paths = {"jsonl": str(path)}
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        pass
    else:
        paths["parquet"] = str(path.with_suffix(".parquet"))
        pq.write_table(pa.table({"text": corpus}), paths["parquet"])
    want = contamination(ev, corpus, rules="any", n_threads=1)
    return {"eval": ev, "corpus": corpus, "path": str(path), "paths": paths,
            "size": os.path.getsize(path),
            "chars": sum(map(len, corpus)), "dirty": want.labels["any"] == "dirty"}


def _info(benchmark, nbytes: int, **kw) -> None:
    describe(benchmark, eval_samples=N_EVAL, ngram=13, corpus_bytes=nbytes, **kw)


def _rate(benchmark, nbytes: int) -> None:
    benchmark.extra_info["mb_per_s"] = round(nbytes / 1e6 / benchmark.stats.stats.mean, 1)


def python_peer(ev: list[str], path: str, n: int = 13) -> np.ndarray:
    """lm-evaluation-harness style: a set of eval n-gram tuples, the corpus scanned row by row."""
    grams: set = set()
    per_sample = []
    for t in ev:
        toks = tokenize_reference(t)
        gs = ([tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)] if len(toks) >= n
              else [tuple(toks)] if toks else [])
        per_sample.append(gs)
        grams.update(gs)
    lengths = sorted({len(g) for g in grams})
    found: set = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            toks = tokenize_reference(json.loads(line)["text"])
            for k in lengths:
                for i in range(len(toks) - k + 1):
                    g = tuple(toks[i:i + k])
                    if g in grams:
                        found.add(g)
    return np.array([any(g in found for g in gs) for gs in per_sample])


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("engine", ["arrow", "python"])
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_ours_file(benchmark, setup, fmt, engine, n_threads):
    benchmark.group = G_FILE
    if engine == "arrow" or fmt == "parquet":
        pytest.importorskip("pyarrow", reason=f"{fmt} read by the {engine} engine needs pyarrow")
    # the rate is over the JSONL bytes for both formats: the same rows, comparable figures
    _info(benchmark, setup["size"], fmt=fmt, engine=engine, n_threads=n_threads)
    res = benchmark.pedantic(contamination, args=(setup["eval"], setup["paths"][fmt]),
                             kwargs=dict(rules="any", n_threads=n_threads, engine=engine),
                             rounds=3, iterations=1, warmup_rounds=0)
    _rate(benchmark, setup["size"])
    np.testing.assert_array_equal(res.labels["any"] == "dirty", setup["dirty"])
    assert 0 < setup["dirty"].sum() < N_EVAL


def test_python_peer_file(benchmark, setup):
    benchmark.group = G_FILE
    _info(benchmark, setup["size"], peer="python set of 13-gram tuples (lm-eval-harness style)")
    dirty = run_once(benchmark, python_peer, setup["eval"], setup["path"])
    _rate(benchmark, setup["size"])
    np.testing.assert_array_equal(dirty, setup["dirty"])


@pytest.mark.parametrize("kind", ["list", "arrow"])
def test_ours_in_memory(benchmark, setup, kind):
    benchmark.group = G_MEM
    corpus = setup["corpus"]
    if kind == "arrow":
        pa = pytest.importorskip("pyarrow", reason="the Arrow case needs pyarrow")
        corpus = pa.array(corpus, type=pa.string())
    _info(benchmark, setup["chars"], kind=kind)
    res = benchmark.pedantic(contamination, args=(setup["eval"], corpus),
                             kwargs=dict(rules="any"), rounds=3, iterations=1, warmup_rounds=0)
    _rate(benchmark, setup["chars"])
    np.testing.assert_array_equal(res.labels["any"] == "dirty", setup["dirty"])
