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
"""

from __future__ import annotations

import pytest
from numpy.testing import assert_array_equal

import overlap
from overlap import TokenSets

from ._peers import python_token_sets, sklearn_binary_matrix
from .conftest import THREADS, describe

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
