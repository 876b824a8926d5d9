"""Fast checks of the benchmark helpers in bench/ (peers and corpus generators).

The benchmarks assert that ours equals every exact peer; these tests make sure
the peers themselves compute the definition (tests/reference/overlap.py) and that the
generators plant what they claim.
"""

from __future__ import annotations

import importlib
import importlib.util
import string
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from reference import overlap as ref
import overlap
from overlap import TokenSets
from overlap.pipeline.dialogue import make_samples

REPO = Path(__file__).resolve().parents[2]


def _load_bench_package():
    """Import bench/ (a package next to tests/, not installed) by its path.

    The repository root is deliberately not put on sys.path: there it would
    shadow the installed, compiled ``overlap`` and ``metrics`` with their
    uncompiled sources.
    """
    if "bench" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "bench", REPO / "bench" / "__init__.py",
            submodule_search_locations=[str(REPO / "bench")],
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench"] = module
        spec.loader.exec_module(module)
    return importlib.import_module("bench._peers"), importlib.import_module("bench._workload")


peers, wl = _load_bench_package()


def _random_ids(rng, n, vocab, max_len, empty_rate=0.1):
    out = []
    for _ in range(n):
        k = 0 if rng.random() < empty_rate else int(rng.integers(1, max_len + 1))
        out.append(rng.integers(0, vocab, k))
    return out


def _fields(rng, n, vocab=8, max_len=5, nf=2):
    """Small aligned TokenSets fields (tiny vocabulary: many ties) and reference bags."""
    ids = [_random_ids(rng, n, vocab, max_len) for _ in range(nf)]
    sets = tuple(TokenSets.from_ids(f) for f in ids)
    bags = [tuple(ref.bag([int(x) for x in f[i]]) for f in ids) for i in range(n)]
    return sets, bags


# ------------------------------------------------------------------ scipy brute force
@pytest.mark.parametrize("nf", [1, 2])
def test_brute_force_top1_matches_reference(rng, nf):
    (q, qb), (r, rb) = _fields(rng, 40, nf=nf), _fields(rng, 60, nf=nf)
    score, index = peers.SparseBruteForce(q, r, block=7).top1()
    exp = ref.max_overlap(qb, rb)
    assert_array_equal(score, [row[0][0] for row in exp])
    assert_array_equal(index, [row[0][1] for row in exp])


@pytest.mark.parametrize("k", [2, 5])
def test_brute_force_topk_matches_reference(rng, k):
    (q, qb), (r, rb) = _fields(rng, 40, nf=2), _fields(rng, 60, nf=2)
    score, index = peers.SparseBruteForce(q, r, block=7).topk(k)
    exp = ref.max_overlap(qb, rb, top_k=k)
    assert_array_equal(score, [[s for s, _ in row] for row in exp])
    assert_array_equal(index, [[j for _, j in row] for row in exp])


def test_brute_force_all_vs_rest_matches_reference(rng):
    u, ub = _fields(rng, 50)
    score, index = peers.SparseBruteForce(u, block=8).top1()
    exp = ref.max_overlap(ub, None)
    assert_array_equal(score, [row[0][0] for row in exp])
    assert_array_equal(index, [row[0][1] for row in exp])


@pytest.mark.parametrize("threshold", [0.5, 0.8, 2 / 3, 1.0])
def test_brute_force_join_matches_reference(rng, threshold):
    (a, ab), (b, bb) = _fields(rng, 30), _fields(rng, 45)
    left, right, score = peers.SparseBruteForce(a, b, block=4).join(threshold)
    exp = ref.join(ab, bb, threshold)
    assert list(zip(left.tolist(), right.tolist(), score.tolist())) == exp
    left, right, score = peers.SparseBruteForce(a, block=4).join(threshold)
    exp = ref.join(ab, None, threshold)
    assert list(zip(left.tolist(), right.tolist(), score.tolist())) == exp


def test_brute_force_matches_ours_on_w_shaped_text():
    texts, _ = wl.generate_dialogues(seed=3, dialogues={"train": 60, "validation": 5,
                                                       "test": 5},
                                     samples={"train": 400, "validation": 30, "test": 30})
    s = {k: make_samples(v) for k, v in texts.items()}
    q = (TokenSets.from_texts(s["test"].context), TokenSets.from_texts(s["test"].response))
    r = (TokenSets.from_texts(s["train"].context), TokenSets.from_texts(s["train"].response))
    score, index = peers.SparseBruteForce(q, r).top1()
    res = overlap.max_overlap(q, r)
    assert_array_equal(score, res.score)
    assert_array_equal(index, res.index)


# ------------------------------------------------------------------ dedup passes
@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.8])
def test_dedup_from_edges_matches_reference(rng, threshold):
    u, ub = _fields(rng, 40, vocab=6, max_len=4)
    left, right, score = peers.SparseBruteForce(u).join(max(threshold, 1e-12))
    keep, kept_for, passes, cluster = peers.dedup_from_edges(len(ub), left, right, score,
                                                             threshold)
    present, kf, p, cl = ref.dedup(ub, threshold)
    assert keep.tolist() == present
    assert kept_for.tolist() == kf
    assert passes == p
    assert cluster.tolist() == cl


# ------------------------------------------------------------------ thresholds
def test_passes_threshold_is_the_rational_test():
    for a in range(0, 12):
        for b in range(0, 12):
            for inter in range(0, min(a, b) + 1):
                for t in (0.8, 0.5, 2 / 3, 0.7, 1.0):
                    want = a + b > 0 and inter > 0 and \
                        Fraction(2 * inter, a + b) >= Fraction(repr(t))
                    assert bool(peers.passes_threshold(inter, a, b, t)) == want


def test_passes_measure_is_the_rational_test():
    exact = {
        "dice": lambda i, a, b: Fraction(2 * i, a + b),
        "jaccard": lambda i, a, b: Fraction(i, a + b - i),
        "overlap": lambda i, a, b: Fraction(i, min(a, b)),
        "containment": lambda i, a, b: Fraction(i, a),
    }
    for a in range(1, 12):
        for b in range(1, 12):
            for inter in range(0, min(a, b) + 1):
                for t in (0.8, 0.5, 2 / 3, 0.7, 1.0):
                    ft = Fraction(repr(t))
                    for m, f in exact.items():
                        want = inter > 0 and f(inter, a, b) >= ft
                        assert bool(peers.passes_measure(m, inter, a, b, t)) == want, (m, t)
                    # cosine i/sqrt(ab) >= t  <=>  (i/t)^2 >= ab, in rationals
                    want = inter > 0 and Fraction(inter) ** 2 >= ft ** 2 * a * b
                    assert bool(peers.passes_measure("cosine", inter, a, b, t)) == want
                assert bool(peers.passes_measure("dice", inter, a, b, 0.8)) == \
                    bool(peers.passes_threshold(inter, a, b, 0.8))


def test_dice_to_jaccard():
    assert peers.dice_to_jaccard(0.8) == pytest.approx(2 / 3)
    # for sets: Dice = 2J/(1+J)
    for inter, a, b in [(3, 4, 5), (1, 1, 1), (2, 9, 3)]:
        d, j = 2 * inter / (a + b), inter / (a + b - inter)
        assert peers.dice_to_jaccard(d) == pytest.approx(j)


# ------------------------------------------------------------------ tokenizer peers
@given(st.text(alphabet=st.sampled_from(list(string.printable) + ["é", "’", "ß", "İ", "…", "中"]),
               max_size=60))
def test_tokenize_reference_matches_tests_reference(text):
    assert peers.tokenize_reference(text) == ref.tokenize_wordpunct(text)


def test_python_token_set_sizes_match_ours():
    texts = ["Hello , world ! ...", "it ’ s (fine) ?!", "", "A a A", "café CAFÉ"]
    sets = peers.python_token_sets(texts)
    assert [len(s) for s in sets] == TokenSets.from_texts(texts).sizes.tolist()


def test_sklearn_matrix_sizes_match_ours():
    pytest.importorskip("sklearn")
    texts = ["Hello , world ! ...", "it ’ s (fine) ?!", "x", "A a A", "café CAFÉ"]
    X = peers.sklearn_binary_matrix(texts)
    assert X.getnnz(axis=1).tolist() == TokenSets.from_texts(texts).sizes.tolist()


# ------------------------------------------------------------------ optional peers
def test_setsimilaritysearch_peer_finds_reference_pairs(rng):
    pytest.importorskip("SetSimilaritySearch")
    (a, ab), (b, bb) = _fields(rng, 40, nf=1), _fields(rng, 50, nf=1)
    a, b = a[0], b[0]
    for t in (0.8, 0.5, 2 / 3):
        truth = {(i, j) for i, j, _ in ref.join(ab, bb, t)}
        left, right = peers.SetSimSearchPeer(b, t).query_all(peers.python_sets(a))
        assert peers.exact_pairs(a, b, left, right, t) == truth
        truth = {(i, j) for i, j, _ in ref.join(ab, None, t)}
        left, right = peers.SetSimSearchPeer.self_join(a, t)
        assert peers.exact_pairs(a, a, left, right, t) == truth
        for m in ("jaccard", "cosine", "containment"):
            truth = {(i, j) for i, j, _ in ref.join(ab, bb, t, m)}
            left, right = peers.SetSimSearchPeer(b, t, m).query_all(peers.python_sets(a))
            assert peers.exact_measure_pairs(a, b, left, right, t, m) == truth


def test_minhash_lsh_peer_runs(rng):
    pytest.importorskip("datasketch")
    (a, _), = [_fields(rng, 30, nf=1)]
    a = a[0]
    peer = peers.MinHashLSHPeer(a, 0.8)
    found = peer.query_all(peers.python_sets(a))
    # every non-empty set finds itself (identical MinHash)
    assert {(i, i) for i in np.flatnonzero(a.sizes > 0).tolist()} <= found
    assert all(i < j for i, j in peer.self_pairs())


def test_topn_dot_peer(rng):
    pytest.importorskip("sparse_dot_topn")
    (q, _), (r, _) = _fields(rng, 20, nf=1), _fields(rng, 30, nf=1)
    (Q, RT), = peers.SparseBruteForce(q[0], r[0]).matrices()
    dot, index = peers.topn_dot(Q, RT, 1)
    dense = (Q @ RT).toarray()
    has = dense.max(axis=1) > 0
    assert_array_equal(dot[has], dense.max(axis=1)[has])
    assert_array_equal(index[~has], -1)
    assert (dense[np.flatnonzero(has), index[has]] == dense.max(axis=1)[has]).all()


# ------------------------------------------------------------------ generators
def test_words_are_distinct_single_tokens():
    words = [wl.word(i) for i in range(3000)]
    assert len(set(words)) == len(words)
    for i, w in enumerate(words):
        toks = ref.tokenize_wordpunct(w)
        if i in wl.DROPPED_RANKS:
            assert toks == []
        else:
            assert toks == [w]


def test_generated_dialogues_have_the_requested_shape_and_plants():
    dialogues = {"train": 300, "validation": 30, "test": 30}
    samples = {"train": 2000, "validation": 210, "test": 200}
    texts, planted = wl.generate_dialogues(seed=5, dialogues=dialogues, samples=samples)
    for split in wl.SPLITS:
        assert len(texts[split]) == dialogues[split]
        assert len(make_samples(texts[split])) == samples[split]
    units = [" ".join(d) for split in wl.SPLITS for d in texts[split]]
    assert planted.shape[1] == 2 and len(planted) > 0.05 * len(units)
    assert (planted[:, 0] != planted[:, 1]).all()
    assert not np.isin(planted[:, 1], planted[:, 0]).any()  # sources are originals
    for c, s in planted.tolist():
        r = ref.dice(ref.bag(ref.tokenize_wordpunct(units[c])),
                     ref.bag(ref.tokenize_wordpunct(units[s])))
        assert r > 0.8
    # some copies really were edited (not all verbatim)
    assert any(units[c] != units[s] for c, s in planted.tolist())


def test_generated_dialogues_are_seeded():
    kw = dict(dialogues={"train": 20, "validation": 3, "test": 3},
              samples={"train": 120, "validation": 15, "test": 15})
    assert wl.generate_dialogues(seed=1, **kw)[0] == wl.generate_dialogues(seed=1, **kw)[0]
    assert wl.generate_dialogues(seed=1, **kw)[0] != wl.generate_dialogues(seed=2, **kw)[0]


def test_generated_samples_plant_what_they_claim():
    g = wl.generate_samples(4000, n_queries=1000, vocab_size=5000, seed=11)
    assert len(g) == 5000 and g.n_corpus == 4000
    assert len(g.planted) == 500  # 10% of all rows
    rows, src = g.planted[:, 0], g.planted[:, 1]
    assert (src < g.n_corpus).all() and not np.isin(src, rows).any()
    ctx, rsp = g.token_sets()
    for f in (ctx, rsp):
        r = overlap.ratio(f.take(rows), f.take(src))
        assert (r > 0.8).all()
    in_corpus = g.planted[rows < g.n_corpus]
    pairs = overlap.overlap_join(g.corpus(), threshold=0.8)
    found = set(zip(pairs.left.tolist(), pairs.right.tolist()))
    assert {(min(a, b), max(a, b)) for a, b in in_corpus.tolist()} <= found
    # lengths like W's: median context of ~9 distinct ids, none empty
    assert 6 <= np.median(ctx.sizes) <= 12 and ctx.sizes.min() >= 1


def test_take_rows():
    ip = np.array([0, 2, 2, 5])
    data = np.array([1, 2, 3, 4, 5])
    p, d = wl.take_rows(ip, data, np.array([2, 0, 1, 2]))
    assert p.tolist() == [0, 3, 5, 5, 8]
    assert d.tolist() == [3, 4, 5, 1, 2, 3, 4, 5]
