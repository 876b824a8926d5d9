"""Helpers shared by the test files: corpora, strategies and builders.

Test files import these from here, never from one another.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from overlap import TokenSets
from reference import overlap as ref

# Small vocabularies make overlaps, ties and identical rows common.
row = st.lists(st.integers(0, 9), max_size=8)
big_row = st.lists(st.integers(0, 300), min_size=60, max_size=200)


@st.composite
def collections(draw, n_fields=None, min_rows=0, max_rows=25):
    """(list of per-field id lists, n_fields) with empty, tiny, huge and repeated rows."""
    nf = draw(st.integers(1, 3)) if n_fields is None else n_fields
    n = draw(st.integers(min_rows, max_rows))
    pool = [draw(st.one_of(row, row, row, big_row)) for _ in range(max(n // 2, 1))]
    fields = []
    for _ in range(nf):
        col = []
        for _ in range(n):
            # reuse earlier rows often: exact duplicates and ties
            col.append(draw(st.sampled_from(pool)) if draw(st.booleans()) else draw(row))
        fields.append(col)
    return fields


def build(fields, multiset, ngram=1):
    return [TokenSets.from_ids(col, multiset=multiset, ngram=ngram) for col in fields]


def ref_units(fields, multiset, ngram=1):
    n = len(fields[0])
    return [tuple(ref.bag(col[i], ngram, multiset) for col in fields) for i in range(n)]


def as_arrays(rows_, k):
    return (np.array([[s for s, _ in r] for r in rows_], dtype=float).reshape(-1, k),
            np.array([[j for _, j in r] for r in rows_], dtype=np.int64).reshape(-1, k))


def make_corpus(rng, n, vocab=400, zipf=1.3):
    """Zipf tokens with planted near-duplicates: a small realistic corpus."""
    rows_ = []
    for i in range(n):
        if i > 10 and rng.random() < 0.2:
            base = list(rows_[rng.integers(0, i)])
            if base and rng.random() < 0.5:
                base[rng.integers(0, len(base))] = int(rng.integers(0, vocab))
            rows_.append(base)
        else:
            length = int(rng.integers(0, 25))
            rows_.append([int(x) % vocab for x in rng.zipf(zipf, length)])
    return rows_
