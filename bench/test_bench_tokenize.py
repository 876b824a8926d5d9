"""Tokenizing and hashing every text of W: ours vs plain Python and scikit-learn.

The texts are every context and response of train, validation and test
(179,724 on W), tokenized with the default ``wordpunct`` preset.

Timed regions
-------------
* ours: ``TokenSets.from_texts(texts)`` (lower-casing, tokenizing, hashing,
  sorting and de-duplicating every row);
* plain Python: the reference script's tokenizer (``re.findall`` + drop the
  substrings of ``string.punctuation``) into one ``set`` per text;
* scikit-learn: ``CountVectorizer(analyzer=<that tokenizer>, binary=True)``,
  the usual way to build the brute force's binary matrix.

The peers must find the same number of distinct tokens in every text.

Ingesting token ids (issue 29): ``TokenSets.from_ids`` on 1M id rows with
W-like lengths (the scale corpus's utterances: Zipf ids over a 200k
vocabulary, median 9 ids a row), in two groups:

* 1M numpy arrays: ours (bulk checks) against ``np.concatenate`` of the same
  arrays (the floor: no check, no hash) and the previous path (every row
  checked and converted on its own, ``overlap._ids.per_row``, then hashed),
  timed once;
* an Arrow ``ListArray`` of the same rows: ours (read from the buffers)
  against the previous way to get it in (``to_numpy(zero_copy_only=False)``,
  then the per-row path), timed once.

The previous paths must return our token sets exactly.

Texts already in an Arrow column (issue 29): ``TokenSets.from_texts`` on 1M
W-shaped utterances (the scale corpus's id rows written as text with
``_workload.word``: about 55 characters a row) in a pyarrow ``string``
column, read from its buffers, against the same strings as a Python list, on
one thread and on all of them, in two groups:

* the text as generated: 47 % of its rows hold a non-ASCII character (every
  97th word ends in "é", and "’" is a frequent word), and those rows go
  through the str path;
* the same text made ASCII ("é" -> "e", "’" -> "''"), like most English
  JSONL: every row is tokenized on its bytes.

The Arrow path must return the list path's token sets exactly.

The ASCII rows' scan by CPU level (``overlap/_ascii_simd.h``): the ASCII
column above through the byte-by-byte scan (the kernels' CPU level set to
portable) against the AVX-512 kernels, where this CPU runs them (else the
group holds the byte-by-byte scan alone).  Both must give the same sets.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import overlap
from overlap import TokenSets, _ids, _tokenize
from overlap._kernels import _cpu

from ._peers import python_token_sets, sklearn_binary_matrix
from ._workload import IDS_LEN_LOG_MEAN, W_VOCAB, Zipf, _utterances, word
from .conftest import THREADS, describe, run_once

G = "tokenize: every W text, wordpunct"


@pytest.fixture(scope="module")
def texts(workload):
    return workload.all_texts


@pytest.fixture(scope="module")
def expected(texts):
    return TokenSets.from_texts(texts, n_threads=1)


def _info(benchmark, workload, texts, **kw):
    describe(benchmark, workload, texts=len(texts), characters=sum(map(len, texts)), **kw)


@pytest.mark.parametrize("n_threads", THREADS)
def test_ours_from_texts(benchmark, workload, texts, expected, n_threads):
    benchmark.group = G
    ts = benchmark(TokenSets.from_texts, texts, n_threads=n_threads)
    assert ts == expected
    _info(benchmark, workload, texts, side="ours", tokens=ts.nnz,
          timed="TokenSets.from_texts(texts)",
          n_threads=n_threads or overlap.effective_n_threads(None))


def test_python_reference_sets(benchmark, workload, texts, expected):
    benchmark.group = G
    sets = benchmark.pedantic(python_token_sets, args=(texts,), rounds=3, iterations=1)
    assert_array_equal([len(s) for s in sets], expected.sizes)
    _info(benchmark, workload, texts, side="peer", peer="plain Python (re + set)",
          exact=True, timed="re.findall + punctuation filter + set() per text", n_threads=1)


def test_sklearn_count_vectorizer(benchmark, workload, texts, expected):
    pytest.importorskip("sklearn", reason="optional bench extra: scikit-learn")
    benchmark.group = G
    X = benchmark.pedantic(sklearn_binary_matrix, args=(texts,), rounds=3, iterations=1)
    assert_array_equal(X.getnnz(axis=1), expected.sizes)
    _info(benchmark, workload, texts, side="peer",
          peer="scikit-learn CountVectorizer(binary=True)", exact=True,
          vocabulary=int(X.shape[1]),
          timed="fit_transform with the reference tokenizer as analyzer", n_threads=1)


# ------------------------------------------------------------ from_ids (issue 29)
G_IDS = "from_ids: 1M numpy arrays"
G_ARROW = "from_ids: Arrow ListArray, 1M rows"
ID_ROWS = 1_000_000


@pytest.fixture(scope="module")
def id_rows():
    """``(indptr, ids)`` of 1M W-like id rows (int64)."""
    return _utterances(np.random.default_rng(29), Zipf(200_000), ID_ROWS, IDS_LEN_LOG_MEAN)


@pytest.fixture(scope="module")
def id_arrays(id_rows):
    indptr, ids = id_rows
    return [ids[a:b].copy() for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist())]


@pytest.fixture(scope="module")
def id_column(id_rows):
    pa = pytest.importorskip("pyarrow", reason="optional extra: pyarrow")
    indptr, ids = id_rows
    return pa.ListArray.from_arrays(pa.array(indptr.astype(np.int32)), pa.array(ids))


@pytest.fixture(scope="module")
def id_expected(id_arrays):
    return TokenSets.from_ids(id_arrays, n_threads=1)


def previous_from_ids(rows):
    """``from_ids`` before issue 29: each row checked and converted on its own."""
    values, indptr = _ids.per_row(list(rows))
    return TokenSets.from_flat_ids(values, indptr)


def _ids_info(benchmark, id_rows, **kw):
    indptr, _ = id_rows
    describe(benchmark, rows=ID_ROWS, ids=int(indptr[-1]),
             median_row=float(np.median(np.diff(indptr))), **kw)


@pytest.mark.parametrize("n_threads", THREADS)
def test_ours_from_ids_arrays(benchmark, id_rows, id_arrays, id_expected, n_threads):
    benchmark.group = G_IDS
    ts = benchmark(TokenSets.from_ids, id_arrays, n_threads=n_threads)
    assert ts == id_expected
    _ids_info(benchmark, id_rows, side="ours", timed="TokenSets.from_ids(arrays)",
              n_threads=n_threads or overlap.effective_n_threads(None))


def test_from_ids_peer_concatenate(benchmark, id_rows, id_arrays):
    benchmark.group = G_IDS
    flat = benchmark(np.concatenate, id_arrays)
    assert_array_equal(flat, id_rows[1])
    _ids_info(benchmark, id_rows, side="peer", peer="np.concatenate (no check, no hash)",
              exact=False, timed="np.concatenate(arrays)", n_threads=1)


def test_previous_from_ids_arrays(benchmark, id_rows, id_arrays, id_expected):
    benchmark.group = G_IDS
    ts = run_once(benchmark, previous_from_ids, id_arrays)
    assert ts == id_expected
    _ids_info(benchmark, id_rows, side="peer", peer="previous from_ids (row by row)",
              exact=True, timed="per-row checks + hash",
              n_threads=overlap.effective_n_threads(None))


@pytest.mark.parametrize("n_threads", THREADS)
def test_ours_from_ids_arrow(benchmark, id_rows, id_column, id_expected, n_threads):
    benchmark.group = G_ARROW
    ts = benchmark(TokenSets.from_ids, id_column, n_threads=n_threads)
    assert ts == id_expected
    _ids_info(benchmark, id_rows, side="ours", timed="TokenSets.from_ids(list_array)",
              n_threads=n_threads or overlap.effective_n_threads(None))


def test_previous_from_ids_arrow(benchmark, id_rows, id_column, id_expected):
    benchmark.group = G_ARROW
    ts = run_once(benchmark, lambda col: previous_from_ids(col.to_numpy(zero_copy_only=False)),
                  id_column)
    assert ts == id_expected
    _ids_info(benchmark, id_rows, side="peer", peer="previous from_ids of to_numpy()",
              exact=True, timed="to_numpy(zero_copy_only=False) + per-row checks + hash",
              n_threads=overlap.effective_n_threads(None))


# ------------------------------------------- from_texts of an Arrow column (issue 29)
G_TEXT_ARROW = "from_texts_arrow: 1M W-shaped rows, Arrow column vs list"
G_TEXT_ARROW_ASCII = "from_texts_arrow: 1M ASCII rows, Arrow column vs list"
TEXT_ROWS = 1_000_000


@pytest.fixture(scope="module")
def row_texts():
    """1M W-shaped utterances as text: ``{"w-text": [...], "ascii": [...]}``."""
    indptr, ids = _utterances(np.random.default_rng(2929), Zipf(W_VOCAB), TEXT_ROWS)
    vocab = [word(i) for i in range(int(ids.max()) + 1)]
    toks = [vocab[i] for i in ids.tolist()]
    texts = [" ".join(toks[a:b]) for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist())]
    ascii_ = [t.replace("é", "e").replace("’", "\'\'") for t in texts]
    assert all(t.isascii() for t in ascii_)
    return {"w-text": texts, "ascii": ascii_}


@pytest.fixture(scope="module")
def row_columns(row_texts):
    pa = pytest.importorskip("pyarrow", reason="optional extra: pyarrow")
    return {k: pa.array(v, pa.string()) for k, v in row_texts.items()}


@pytest.fixture(scope="module")
def row_expected(row_texts):
    return {k: TokenSets.from_texts(v, n_threads=1) for k, v in row_texts.items()}


def _rows_info(benchmark, texts, **kw):
    describe(benchmark, rows=len(texts), characters=sum(map(len, texts)),
             non_ascii_rows=sum(not t.isascii() for t in texts), **kw)


CORPORA = [pytest.param("w-text", id="w-text"), pytest.param("ascii", id="ascii")]
GROUPS = {"w-text": G_TEXT_ARROW, "ascii": G_TEXT_ARROW_ASCII}


@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("n_threads", THREADS)
def test_ours_from_texts_arrow(benchmark, row_texts, row_columns, row_expected, corpus,
                               n_threads):
    benchmark.group = GROUPS[corpus]
    ts = benchmark(TokenSets.from_texts, row_columns[corpus], n_threads=n_threads)
    assert ts == row_expected[corpus]
    _rows_info(benchmark, row_texts[corpus], side="ours",
               timed="TokenSets.from_texts(pa.array(texts))",
               n_threads=n_threads or overlap.effective_n_threads(None))


@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("n_threads", THREADS)
def test_list_from_texts_arrow(benchmark, row_texts, row_expected, corpus, n_threads):
    benchmark.group = GROUPS[corpus]
    ts = benchmark(TokenSets.from_texts, row_texts[corpus], n_threads=n_threads)
    assert ts == row_expected[corpus]
    _rows_info(benchmark, row_texts[corpus], side="peer", peer="from_texts(list of str)",
               exact=True, timed="TokenSets.from_texts(texts)",
               n_threads=n_threads or overlap.effective_n_threads(None))


# ------------------------------------- the ASCII rows' scan by CPU level (issue 29)
G_ASCII_LEVELS = "from_texts_arrow: 1M ASCII rows, byte-by-byte scan vs AVX-512 kernels"
#: portable, and the top level where this CPU runs the AVX-512 kernels
ASCII_LEVELS = [0] + ([_cpu.cpu_level()] if _tokenize.ascii_simd() else [])


@pytest.mark.parametrize("level", ASCII_LEVELS,
                         ids=[_cpu.LEVEL_NAMES[lv] for lv in ASCII_LEVELS])
@pytest.mark.parametrize("n_threads", THREADS)
def test_ascii_scan_by_level(benchmark, row_texts, row_columns, row_expected, level, n_threads):
    benchmark.group = G_ASCII_LEVELS
    prev = _cpu.set_simd_level(level)
    try:
        ts = benchmark(TokenSets.from_texts, row_columns["ascii"], n_threads=n_threads)
    finally:
        _cpu.set_simd_level(prev)
    assert ts == row_expected["ascii"]
    kernels = "AVX-512 kernels" if level else "byte-by-byte scan"
    info = dict(side="ours", timed=f"TokenSets.from_texts(pa.array(texts)), {kernels}")
    if not level:
        info.update(side="peer", peer="byte-by-byte scan (CPU level portable)", exact=True)
    _rows_info(benchmark, row_texts["ascii"], n_threads=n_threads or
               overlap.effective_n_threads(None), **info)
