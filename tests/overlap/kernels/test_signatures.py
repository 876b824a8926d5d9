"""The 64-bit row signatures kept in every posting entry, and the scans that use them.

Before a posting scan reads a reference's per-query state (a random read),
it tests the reference's row signature, stored in the entry: ``64 // F``
bits per field, one bit set per distinct token.  A bit set on one side only
stands for a token missing on the other, so in every field
``2*|x ∩ y| <= |x| + |y| - (differing bits)``, and a reference whose bound
falls below the cut in some field is skipped.  These tests pin the signature
to its definition, check the bound on random bags, and compare the kernel
with the plain-Python definitions where the signatures are saturated (rows
longer than the bits), with 1 to 8 fields (64 down to 8 bits per field),
multisets, and thresholds from tiny to exactly 1.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import overlap as ref
from reference.levels import POPCOUNT_LEVELS, popcount_level
from overlap import OverlapIndex, TokenSets, _dispatch, max_overlap, overlap_join
from overlap._kernels import _postings, _postings_search
from overlap._index import collection

THRESHOLDS = [1e-9, 0.3, 0.5, 2 / 3, 0.8, 0.9, float(np.nextafter(1.0, 0.0)), 1.0]


def row_hashes(ts, i):
    return np.asarray(ts.hashes[ts.indptr[i]:ts.indptr[i + 1]]).tolist()


def signature(fields, i):
    """The definition: field f owns bits [f*b, (f+1)*b), b = 64 // F; a token sets one."""
    b = 64 // len(fields)
    sig = 0
    for f, ts in enumerate(fields):
        for h in row_hashes(ts, i):
            sig |= 1 << (f * b + (ref.fmix64(int(h)) & 0xFFFFFFFF) % b)
    return sig


@pytest.mark.parametrize("n_fields", [1, 2, 3, 5, 8])
def test_entry_signatures_follow_the_definition(n_fields):
    rng = np.random.default_rng(n_fields)
    fields = [TokenSets.from_ids([rng.integers(0, 90, rng.integers(0, 40)).tolist()
                                  for _ in range(30)]) for _ in range(n_fields)]
    want = np.array([signature(fields, i) for i in range(30)], dtype=np.uint64)
    coll = collection(tuple(fields))
    rows = np.arange(30, dtype=np.int32)[::-1].copy()
    got = _postings.entry_signatures(coll, rows, 2)
    np.testing.assert_array_equal(got.astype(np.uint64), want[rows])
    # the index keeps one per posting entry: each reference's once per stored token
    idx = OverlapIndex(tuple(fields) if n_fields > 1 else fields[0])
    per_ref = sum(np.diff(ts.indptr) for ts in fields)
    np.testing.assert_array_equal(np.sort(np.asarray(idx._index.entry_signatures)),
                                  np.sort(np.repeat(want, per_ref).astype(np.uint64)))
    with pytest.raises(ValueError, match="out of range"):
        _postings.entry_signatures(coll, np.array([0, 30], dtype=np.int32), 1)


@settings(max_examples=200)
@given(st.lists(st.integers(0, 200), max_size=60), st.lists(st.integers(0, 200), max_size=60),
       st.integers(1, 8), st.booleans())
def test_differing_bits_bound_the_intersection(a, b, n_fields, multiset):
    """2*|x ∩ y| <= |x| + |y| - popcount(sig_x ^ sig_y) in each field, sets and bags
    (the kernel's own signatures)."""
    bits = 64 // n_fields
    ts = TokenSets.from_ids([a, b], multiset=multiset)
    sx, sy = (int(v) for v in _postings.entry_signatures(
        collection((ts,) * n_fields), np.array([0, 1], dtype=np.int32), 1))
    x, y = ref.bag(a, 1, multiset), ref.bag(b, 1, multiset)
    inter = sum((x & y).values())
    mask = (1 << bits) - 1
    for f in range(n_fields):
        d = bin(((sx ^ sy) >> (f * bits)) & mask).count("1")
        assert 2 * inter <= sum(x.values()) + sum(y.values()) - d
    assert (sx >> (n_fields * bits)) == 0 if n_fields * bits < 64 else True


# ------------------------------------------------------------ the kernel against the definition
token = st.one_of(st.integers(0, 4), st.integers(0, 40), st.integers(0, 400))
row = st.lists(token, max_size=90)   # up to 90 tokens: beyond any field's bits (64 for one field)


@st.composite
def corpora(draw, n_fields, min_rows, max_rows):
    n = draw(st.integers(min_rows, max_rows))
    base = [draw(row) for _ in range(6)]
    out = []
    for _ in range(n_fields):
        col = []
        for _ in range(n):
            kind = draw(st.integers(0, 4))
            if kind == 0:
                # a near copy of a base row: scores near and on the threshold
                src = list(draw(st.sampled_from(base)))
                drop = draw(st.integers(0, 3))
                col.append(src[drop:] + draw(st.lists(token, max_size=2)))
            elif kind == 1:
                col.append(list(draw(st.sampled_from(base))))
            else:
                col.append(draw(row))
        out.append(col)
    return out


def units(fields, multiset):
    return [tuple(ref.bag(col[i], 1, multiset) for col in fields)
            for i in range(len(fields[0]))]


def build(fields, multiset):
    sets = [TokenSets.from_ids(col, multiset=multiset) for col in fields]
    return tuple(sets) if len(sets) > 1 else sets[0]


def triples(res):
    return list(zip(res.left.tolist(), res.right.tolist(), res.score.tolist()))


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 8), st.booleans(), st.sampled_from(THRESHOLDS))
def test_join_with_saturated_signatures(data, n_fields, multiset, threshold):
    a = data.draw(corpora(n_fields, 20, 45))
    b = data.draw(corpora(n_fields, 10, 30))
    want = ref.join(units(a, multiset), units(b, multiset), threshold)
    want_self = ref.join(units(a, multiset), None, threshold)
    for level in POPCOUNT_LEVELS:
        with popcount_level(level):
            for nt in (1, 2):
                assert triples(overlap_join(build(a, multiset), build(b, multiset),
                                            threshold=threshold, n_threads=nt)) == want
                assert triples(overlap_join(build(a, multiset), threshold=threshold,
                                            n_threads=nt)) == want_self


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 8), st.booleans(), st.integers(1, 3),
       st.sampled_from([0.5, 0.6, 0.8, 0.95]))
def test_top_k_with_saturated_signatures(data, n_fields, multiset, top_k, min_score):
    """min_score >= 0.5: the scans read only entries that pass every filter."""
    q = data.draw(corpora(n_fields, 5, 20))
    r = data.draw(corpora(n_fields, 20, 45))
    want = ref.max_overlap(units(q, multiset), units(r, multiset), top_k, min_score)
    ws = np.array([[s for s, _ in w] for w in want], dtype=float).reshape(-1, top_k)
    wi = np.array([[j for _, j in w] for w in want], dtype=np.int64).reshape(-1, top_k)
    for nt in (1, 2):
        res = max_overlap(build(q, multiset), build(r, multiset), top_k=top_k,
                          min_score=min_score, n_threads=nt)
        np.testing.assert_array_equal(res.score.reshape(-1, top_k), ws)
        np.testing.assert_array_equal(res.index.reshape(-1, top_k), wi)


@pytest.mark.parametrize("signatures", [True, False])
@pytest.mark.parametrize("corrupt", ["ref out of range", "wrong dtype", "not contiguous"])
def test_index_refuses_entries_it_cannot_sign(monkeypatch, corrupt, signatures):
    """ReferenceIndex signs the built entries (a column of its own) and checks them
    first; without signatures (``signatures=False``) it checks them all the same."""
    from overlap import _index

    ts = TokenSets.from_ids([[1, 2, 3], [2, 3], [3, 4, 5]])
    real = _postings.build_postings

    def broken(*args):
        entries, psuf, pcnt, maxe = real(*args)
        if corrupt == "ref out of range":
            entries["ref"][1] = 3
        elif corrupt == "wrong dtype":
            entries = np.zeros(entries.shape[0], dtype=np.int64)
        else:
            entries = np.repeat(entries, 2)[::2]
        return entries, psuf, pcnt, maxe

    monkeypatch.setattr(_postings, "build_postings", broken)
    with pytest.raises(ValueError, match="out of range|ENTRY_DTYPE"):
        _index.postings_index(collection((ts,)), 3, False, 1, signatures)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 8), st.booleans(), st.sampled_from(THRESHOLDS),
       st.integers(1, 3), st.sampled_from([0.0, 0.5, 0.8]))
def test_an_index_without_signatures_is_the_definition(data, n_fields, multiset, threshold,
                                                       top_k, min_score):
    """``ReferenceIndex(signatures=False)`` (the handed-over self-join's, see
    test_handover.py) keeps no signature column; joins and top-k are the
    definition's, on any thread count."""
    a = data.draw(corpora(n_fields, 20, 45))
    b = data.draw(corpora(n_fields, 5, 30))
    want = ref.join(units(b, multiset), units(a, multiset), threshold)
    want_self = ref.join(units(a, multiset), None, threshold)
    best = ref.max_overlap(units(b, multiset), units(a, multiset), top_k, min_score)
    ws = np.array([[s for s, _ in w] for w in best], dtype=float).reshape(-1, top_k)
    wi = np.array([[j for _, j in w] for w in best], dtype=np.int64).reshape(-1, top_k)
    made: list = []
    real = _postings_search.ReferenceIndex

    def unsigned(*args, **kwargs):
        made.append(real(*args, **{**kwargs, "signatures": False}))
        return made[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_postings_search, "ReferenceIndex", unsigned)
        mp.setattr(_dispatch, "FORCE_PATH", "postings")
        for nt in (1, 2):
            assert triples(overlap_join(build(b, multiset), build(a, multiset),
                                        threshold=threshold, n_threads=nt)) == want
            assert triples(overlap_join(build(a, multiset), threshold=threshold,
                                        n_threads=nt)) == want_self
            res = max_overlap(build(b, multiset), build(a, multiset), top_k=top_k,
                              min_score=min_score, n_threads=nt)
            np.testing.assert_array_equal(res.score.reshape(-1, top_k), ws)
            np.testing.assert_array_equal(res.index.reshape(-1, top_k), wi)
    assert len(made) == 6
    assert all(x.entry_signatures.shape == (0,) for x in made)
