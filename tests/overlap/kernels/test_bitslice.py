"""The bit-sliced search path against the plain-Python reference and the postings path.

Both kernels must return the same scores and indices bit for bit; every test
here runs the public API with the path forced through
``overlap._dispatch.FORCE_PATH``, on every SIMD level this CPU has.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference import overlap as ref
from overlap import OverlapIndex, TokenSets, max_overlap
from overlap import _bitslice_index, _dispatch
from overlap._kernels import _bitslice, _cpu

from reference.levels import BITSLICE_LEVELS as LEVELS


@contextlib.contextmanager
def forced(path="bitslice", level=None, **settings):
    """Force a path (and SIMD level, and index settings) for the duration of a block.

    ``MIN_DF`` defaults to 2 so that small corpora get bitmaps too.
    """
    settings = {"MIN_DF": 2, **settings}
    saved = {k: getattr(_bitslice_index, k) for k in settings}
    saved_path = _dispatch.FORCE_PATH
    prev = _cpu.simd_level()
    try:
        _dispatch.FORCE_PATH = path
        for k, v in settings.items():
            setattr(_bitslice_index, k, v)
        if level is not None:
            _cpu.set_simd_level(level)
        yield
    finally:
        _dispatch.FORCE_PATH = saved_path
        for k, v in saved.items():
            setattr(_bitslice_index, k, v)
        _cpu.set_simd_level(prev)


@pytest.fixture
def dense():
    with forced():
        yield


def force(path):
    _dispatch.FORCE_PATH = path


def ref_top_k(q_cols, r_cols, top_k, min_score, rows=None):
    """Brute-force (scores, indices) of queries ``rows`` (None: all); r_cols None = all vs rest."""
    nf = len(q_cols)
    qu = [tuple(ref.bag(c[i]) for c in q_cols) for i in range(len(q_cols[0]))]
    if r_cols is None:
        ru, self_mode = qu, True
    else:
        ru, self_mode = [tuple(ref.bag(c[i]) for c in r_cols) for i in range(len(r_cols[0]))], False
    rows = range(len(qu)) if rows is None else rows
    out_s, out_i = [], []
    for i in rows:
        cands = sorted((-ref.sample_ratio(qu[i], r), j) for j, r in enumerate(ru)
                       if not (self_mode and i == j))
        row = [(-s, j) for s, j in cands if -s > 0.0 and -s >= min_score][:top_k]
        row += [(0.0, -1)] * (top_k - len(row))
        out_s.append([s for s, _ in row])
        out_i.append([j for _, j in row])
    assert nf >= 1
    return np.array(out_s, dtype=float).reshape(-1, top_k), np.array(out_i).reshape(-1, top_k)


def build(cols):
    return [TokenSets.from_ids(c) for c in cols]


# Rows over a small vocabulary with a few very common ids: tokens in more
# than half of the references, many equal scores at different sizes.
common_row = st.lists(st.sampled_from([0, 0, 0, 1, 1, 2]) | st.integers(0, 30),
                      max_size=12)
big_row = st.lists(st.integers(0, 400), min_size=40, max_size=160)


@st.composite
def corpus(draw, n_fields, min_rows=0, max_rows=40):
    n = draw(st.integers(min_rows, max_rows))
    pool = [draw(st.one_of(common_row, common_row, big_row)) for _ in range(max(1, n // 3))]
    return [[draw(st.sampled_from(pool)) if draw(st.booleans()) else draw(common_row)
             for _ in range(n)] for _ in range(n_fields)]


@given(data=st.data(), top_k=st.integers(1, 3), min_score=st.sampled_from([0.0, 0.3, 0.5, 1.0]),
       level=st.sampled_from(LEVELS), max_rows=st.sampled_from([1, 3, 1 << 16]))
def test_bitslice_matches_brute_force(data, top_k, min_score, level, max_rows):
    """Random corpora; MAX_ROWS=1 or 3 sends the excess frequent tokens down the rare path."""
    nf = data.draw(st.integers(1, 3))
    q = data.draw(corpus(nf))
    r = data.draw(corpus(nf, min_rows=1))
    with forced(level=level, MAX_ROWS=max_rows):
        got = max_overlap(build(q), build(r), top_k=top_k, min_score=min_score, n_threads=2)
    ws, wi = ref_top_k(q, r, top_k, min_score)
    np.testing.assert_array_equal(got.score.reshape(-1, top_k), ws)
    np.testing.assert_array_equal(got.index.reshape(-1, top_k), wi)


@given(data=st.data(), top_k=st.integers(1, 3), min_score=st.sampled_from([0.0, 0.5]),
       level=st.sampled_from(LEVELS))
def test_bitslice_all_against_rest(data, top_k, min_score, level):
    nf = data.draw(st.integers(1, 2))
    u = data.draw(corpus(nf))
    with forced(level=level):
        got = max_overlap(build(u), None, top_k=top_k, min_score=min_score, n_threads=2)
    ws, wi = ref_top_k(u, None, top_k, min_score)
    np.testing.assert_array_equal(got.score.reshape(-1, top_k), ws)
    np.testing.assert_array_equal(got.index.reshape(-1, top_k), wi)


def test_ties_across_renumbered_sizes_go_to_the_lowest_original_index(dense):
    # query size 4; every reference scores 0.75 or 2/3 at a different size.
    # Renumbering by size puts the larger references last, yet the tie rule
    # compares original indices.
    q = [[1, 2, 3, 4]]
    refs = [
        [1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13],  # 0: size 12, inter 3 -> 6/16
        [1, 2, 3, 4, 20, 21, 22, 23],              # 1: size 8, inter 4 -> 8/12
        [1, 2, 3, 30],                             # 2: size 4, inter 3 -> 6/8 = 0.75
        [1, 2, 3, 4, 40, 41, 42, 43],              # 3: size 8, inter 4 -> 2/3 (tie with 1)
        [1, 2, 3],                                 # 4: size 3, inter 3 -> 6/7
        [1, 2, 4, 50],                             # 5: size 4 -> 0.75 (tie with 2)
        [1, 2],                                    # 6: size 2 -> 4/6 = 2/3 (tie with 1, 3)
    ]
    want_s, want_i = ref_top_k([q], [refs], 6, 0.0)
    for path in ("bitslice", "postings"):
        force(path)
        got = max_overlap(TokenSets.from_ids(q), TokenSets.from_ids(refs), top_k=6)
        np.testing.assert_array_equal(got.score, want_s)
        np.testing.assert_array_equal(got.index, want_i)
    assert want_i[0].tolist() == [4, 2, 5, 1, 3, 6]


def test_empty_queries_and_references(dense):
    refs = TokenSets.from_ids([[], [1, 2], [], [2, 3], [1]])
    qs = TokenSets.from_ids([[], [1], [9], [1, 2]])
    got = max_overlap(qs, refs, top_k=2)
    ws, wi = ref_top_k([[[], [1], [9], [1, 2]]], [[[], [1, 2], [], [2, 3], [1]]], 2, 0.0)
    np.testing.assert_array_equal(got.score, ws)
    np.testing.assert_array_equal(got.index, wi)
    # a two-field query with one empty field scores 0 against everything
    two = max_overlap([qs, qs.take([1, 1, 1, 1])], [refs, refs])
    assert two.index[0] == -1 and two.score[0] == 0.0


def make_corpus(rng, n, vocab, big=0.0):
    """Zipf rows (a few ids in most rows), planted copies, some huge rows."""
    rows = []
    for i in range(n):
        if i > 10 and rng.random() < 0.15:
            base = list(rows[rng.integers(0, i)])
            if base and rng.random() < 0.5:
                base[rng.integers(0, len(base))] = int(rng.integers(0, vocab))
            rows.append(base)
        else:
            length = int(rng.integers(150, 400)) if rng.random() < big else int(rng.integers(0, 30))
            rows.append([int(x) % vocab for x in rng.zipf(1.2, length)])
    return rows


@pytest.mark.parametrize("level", LEVELS)
def test_bitslice_equals_postings_on_larger_corpora(monkeypatch, rng, level):
    """Several blocks of references, frequent tokens in >50% of rows, huge rows."""
    monkeypatch.setattr(_bitslice_index, "MIN_DF", 8)
    prev = _cpu.set_simd_level(level)
    try:
        ctx = make_corpus(rng, 3000, 500, big=0.02)
        rsp = make_corpus(rng, 3000, 500)
        fields = build([ctx, rsp])
        queries = [f.take(np.arange(0, 3000, 3)) for f in fields]
        refs = [f.take(np.setdiff1d(np.arange(3000), np.arange(0, 3000, 3))) for f in fields]
        df0 = np.bincount(np.unique(np.concatenate([np.unique(r) for r in ctx if r])),
                          minlength=1)
        assert df0.size  # the corpus is not empty
        top = (max(sum(1 for r in ctx if 0 in r), sum(1 for r in ctx if 1 in r))) / len(ctx)
        assert top > 0.5  # a token in more than half of the references
        for kwargs in ({}, {"top_k": 4}, {"min_score": 0.5}, {"top_k": 3, "min_score": 0.3}):
            results = {}
            for path in ("bitslice", "postings"):
                monkeypatch.setattr(_dispatch, "FORCE_PATH", path)
                for q, r, name in ((queries, refs, "2f"), (queries[0], refs[0], "ctx"),
                                   (fields, None, "self")):
                    for nt in (1, 2):
                        idx = OverlapIndex(r if r is not None else q)
                        results[path, name, nt] = idx.max_overlap(
                            None if r is None else q, n_threads=nt, **kwargs)
            for key, res in results.items():
                other = results["postings", key[1], 1]
                np.testing.assert_array_equal(res.score, other.score, err_msg=str((key, kwargs)))
                np.testing.assert_array_equal(res.index, other.index, err_msg=str((key, kwargs)))
        # and one direct check against the definition on a sample of queries
        monkeypatch.setattr(_dispatch, "FORCE_PATH", "bitslice")
        sample = np.arange(0, 1000, 37)
        got = max_overlap([q.take(sample) for q in queries], refs, top_k=2)
        q_cols = [[ctx[i] for i in range(0, 3000, 3)], [rsp[i] for i in range(0, 3000, 3)]]
        keep = np.setdiff1d(np.arange(3000), np.arange(0, 3000, 3))
        r_cols = [[ctx[i] for i in keep], [rsp[i] for i in keep]]
        ws, wi = ref_top_k(q_cols, r_cols, 2, 0.0, rows=sample)
        np.testing.assert_array_equal(got.score, ws)
        np.testing.assert_array_equal(got.index, wi)
    finally:
        _cpu.set_simd_level(prev)


@pytest.mark.parametrize("n_threads", [2, 3, 4])
def test_bitslice_results_identical_for_every_thread_count(monkeypatch, rng, n_threads):
    monkeypatch.setattr(_dispatch, "FORCE_PATH", "bitslice")
    ctx = make_corpus(rng, 6000, 400)
    ts = TokenSets.from_ids(ctx)
    q = ts.take(np.arange(0, 6000, 2))
    r = ts.take(np.arange(1, 6000, 2))
    # chunks of 2048 * n_threads queries: several chunks and threads run
    one = max_overlap(q, r, top_k=3, n_threads=1)
    many = max_overlap(q, r, top_k=3, n_threads=n_threads)
    np.testing.assert_array_equal(one.score, many.score)
    np.testing.assert_array_equal(one.index, many.index)
    s1 = max_overlap(ts, None, n_threads=1)
    sn = max_overlap(ts, None, n_threads=n_threads)
    np.testing.assert_array_equal(s1.score, sn.score)
    np.testing.assert_array_equal(s1.index, sn.index)


def test_cost_model_and_switch(monkeypatch):
    sets = (TokenSets.from_ids([[1, 2]] * 10),)
    bags = (TokenSets.from_ids([[1, 1, 2]] * 10, multiset=True),)
    assert _dispatch.choose_path(bags, 5) == "postings"  # multisets: postings only
    monkeypatch.setattr(_dispatch, "FORCE_PATH", "bitslice")
    assert _dispatch.choose_path(sets, 5) == "bitslice"
    assert _dispatch.choose_path(bags, 5) == "postings"
    monkeypatch.setattr(_dispatch, "FORCE_PATH", None)
    assert _dispatch.choose_path(sets, 5) == "postings"  # tiny corpus
    many = (TokenSets.from_ids([[1, 2, i] for i in range(_dispatch.MIN_REFS)]),)
    assert _dispatch.choose_path(many, 5) == "bitslice"
    assert _dispatch.choose_path(many, 5, min_score=0.95) == "postings"
    # no token is frequent enough for a bitmap: the postings kernel runs
    idx = OverlapIndex(TokenSets.from_ids([[i] for i in range(_dispatch.MIN_REFS)]))
    idx.max_overlap(TokenSets.from_ids([[3]]))
    assert idx._bitslice.index.n_rows == 0 and idx._index.last_stats is not None
    monkeypatch.setattr(_dispatch, "FORCE_PATH", "fast")
    with pytest.raises(ValueError, match="FORCE_PATH"):
        _dispatch.choose_path(sets, 5)


def test_multisets_fall_back_to_postings(dense):
    a = TokenSets.from_ids([[1, 1, 2], [2, 2, 2, 3], [1, 2, 3]], multiset=True)
    got = max_overlap(a, None, top_k=2)
    want = ref.max_overlap([(ref.bag(r, 1, True),) for r in [[1, 1, 2], [2, 2, 2, 3], [1, 2, 3]]],
                           None, 2)
    np.testing.assert_array_equal(got.index, [[j for _, j in row] for row in want])
    np.testing.assert_array_equal(got.score, [[s for s, _ in row] for row in want])


def test_bitmap_memory_is_bounded_by_the_postings(rng):
    """Bitmap words <= WORDS_PER_TOKEN * stored tokens, per field."""
    rows = make_corpus(rng, 5000, 300)
    ts = TokenSets.from_ids(rows)
    bx = _bitslice_index.build((ts,))
    assert bx.n_rows > 0
    assert bx.n_rows * bx.n_words <= _bitslice_index.WORDS_PER_TOKEN * ts.nnz


def test_simd_levels_are_validated():
    with pytest.raises(ValueError, match="level"):
        _cpu.set_simd_level(_cpu.cpu_level() + 1)
    with pytest.raises(ValueError, match="level"):
        _cpu.set_simd_level(-1)
    assert _cpu.LEVEL_NAMES[_cpu.simd_level()] in ("portable", "popcnt", "avx2", "avx512")


def test_dialogue_hint_never_hides_a_lower_identical_reference(dense):
    # query 5's best is reference 2, so query 6 first scores reference 3 (the
    # hint): identical to it, but reference 0 is identical too and lower
    rows = [[5, 6, 7], [1, 2, 3], [1, 2, 3, 4], [5, 6, 7], [10], [1, 2, 3, 4], [5, 6, 7]]
    ts = TokenSets.from_ids(rows)
    for k in (1, 2):
        got = max_overlap(ts, None, top_k=k, n_threads=1)
        ws, wi = ref_top_k([rows], None, k, 0.0)
        np.testing.assert_array_equal(got.score.reshape(-1, k), ws)
        np.testing.assert_array_equal(got.index.reshape(-1, k), wi)
    assert wi[6].tolist() == [0, 3]


def _fill_field_definition(indptr, inverse, order, bitmap_row, n_rows, nw):
    """fill_field by its definition: bit k of row bitmap_row[v] for reference order[k]
    holding v; rare token v's renumbered references, ascending."""
    bits = np.zeros((n_rows, nw), dtype=np.uint64)
    postings = {v: [] for v in range(bitmap_row.shape[0])}
    for k, i in enumerate(order):
        for v in inverse[indptr[i]:indptr[i + 1]]:
            if bitmap_row[v] >= 0:
                bits[bitmap_row[v], k >> 6] |= np.uint64(1) << np.uint64(k & 63)
            else:
                postings[int(v)].append(k)
    return bits.ravel(), postings


@pytest.mark.parametrize("n, vocab", [(0, 5), (1, 3), (200, 40), (9000, 300)])
def test_fill_field_follows_its_definition_on_every_thread_count(n, vocab):
    """The chunked fill (9000 rows: over 65536 tokens, so threads split it on
    64-reference words) equals the definition for 1, 2 and 5 threads, into a
    new array or over an ``out`` full of set bits (every chunk clears its own
    words, the last one the padding words too)."""
    rng = np.random.default_rng(n)
    lens = rng.integers(0, min(16, vocab + 1), n)
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    inverse = np.concatenate([rng.choice(vocab, ln, replace=False) for ln in lens]
                             + [np.zeros(0, dtype=np.int64)]).astype(np.int32)
    order = rng.permutation(n).astype(np.int64)
    bitmap_row = np.full(vocab, -1, dtype=np.int64)
    frequent = rng.choice(vocab, vocab // 4, replace=False)
    bitmap_row[frequent] = np.arange(frequent.shape[0])
    nw = max(8, -(-n // 64))
    want_bits, want_postings = _fill_field_definition(indptr, inverse, order, bitmap_row,
                                                      frequent.shape[0], nw)
    for nt in (1, 2, 5):
        bits, rptr, rref = _bitslice.fill_field(indptr, inverse, order, bitmap_row,
                                                frequent.shape[0], nw, nt)
        np.testing.assert_array_equal(bits, want_bits)
        for v in range(vocab):
            assert rref[rptr[v]:rptr[v + 1]].tolist() == want_postings[v]
        out = np.full(want_bits.shape[0], np.iinfo(np.uint64).max, dtype=np.uint64)
        got, rptr2, rref2 = _bitslice.fill_field(indptr, inverse, order, bitmap_row,
                                                 frequent.shape[0], nw, nt, out)
        assert got is out
        np.testing.assert_array_equal(out, want_bits)
        np.testing.assert_array_equal(rptr2, rptr)
        np.testing.assert_array_equal(rref2, rref)


@pytest.mark.parametrize("bad", ["id", "row", "order", "indptr", "out"])
def test_fill_field_refuses_out_of_range_input(bad):
    indptr = np.array([0, 2, 3], dtype=np.int64)
    inverse = np.array([0, 1, 1], dtype=np.int32)
    order = np.array([1, 0], dtype=np.int64)
    bitmap_row = np.array([0, -1], dtype=np.int64)
    if bad == "id":
        inverse[2] = 2
    elif bad == "row":
        bitmap_row[1] = 1
    elif bad == "order":
        order[0] = 2
    elif bad == "indptr":
        indptr[1] = 4
    out = np.zeros(7 if bad == "out" else 8, dtype=np.uint64)  # 1 row of 8 words
    with pytest.raises(ValueError, match="fill_field"):
        _bitslice.fill_field(indptr, inverse, order, bitmap_row, 1, 8, 1, out)


# ------------------------------------------------------ the block kernels alone
def _block_definition(table, pick, w0, need):
    """Counts of the block's bits over the picked rows, and the >= need words."""
    words = table[:, w0:w0 + _bitslice.BLOCK_WORDS]
    bits = ((words[:, :, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).astype(np.int64)
    counts = np.bincount(pick, minlength=table.shape[0]) @ bits.reshape(table.shape[0], -1)
    keep = counts.reshape(_bitslice.BLOCK_WORDS, 64) >= need[:, None]
    ge = (keep.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
    return counts, ge


@pytest.mark.parametrize("level", LEVELS)
def test_block_kernels_match_the_definition_for_every_plane_count(rng, level):
    """add_rows and count_ge of each SIMD level, for 0 rows and every plane
    count 1..MAX_PLANES (row counts at both ends of each), against popcounts."""
    bw = _bitslice.BLOCK_WORDS
    table = rng.integers(0, 2**63, size=(37, 3 * bw), dtype=np.int64).astype(np.uint64)
    table[:, 1::2] |= np.uint64(1) << np.uint64(63)  # top bits set too
    table[3] = 0
    table[4] = np.uint64(2**64 - 1)
    table[5] = table[6]  # duplicate rows
    sizes = {0, 1, 2, 3, (1 << _bitslice.MAX_PLANES) - 1}
    for b in range(2, _bitslice.MAX_PLANES + 1):
        sizes |= {(1 << (b - 1)), (1 << b) - 1}
    for n in sorted(sizes):
        pick = rng.integers(0, table.shape[0], size=n).astype(np.int64)
        if n > 8:
            pick[: n // 4] = 4  # one row many times: counts reach the top plane
        w0 = int(rng.integers(0, 3)) * bw
        counts, _ = _block_definition(table, pick, w0, np.zeros(bw, dtype=np.int64))
        cap = 1 << max(n.bit_length(), 0)
        # thresholds: none, everything, beyond the planes, and counts that occur (ties)
        need = np.array([-3, 0, cap, cap + 5, 1, *rng.choice(counts, size=bw - 5)],
                        dtype=np.int64)
        rng.shuffle(need)
        want_counts, want_ge = _block_definition(table, pick, w0, need)
        got_counts, got_ge = _bitslice.block_counts(table, pick, w0, need, level)
        np.testing.assert_array_equal(got_counts, want_counts, err_msg=f"n={n}")
        np.testing.assert_array_equal(got_ge, want_ge, err_msg=f"n={n}")


def test_block_counts_refuses_what_the_kernels_cannot_take():
    table = np.zeros((4, 2 * _bitslice.BLOCK_WORDS), dtype=np.uint64)
    need = np.zeros(_bitslice.BLOCK_WORDS, dtype=np.int64)
    ok = np.zeros(3, dtype=np.int64)
    with pytest.raises(ValueError, match="level"):
        _bitslice.block_counts(table, ok, 0, need, _cpu.cpu_level() + 1)
    with pytest.raises(ValueError, match="pick"):
        _bitslice.block_counts(table, np.zeros(1 << _bitslice.MAX_PLANES, dtype=np.int64),
                               0, need, 0)
    with pytest.raises(ValueError, match="pick"):
        _bitslice.block_counts(table, np.array([4], dtype=np.int64), 0, need, 0)
    with pytest.raises(ValueError, match="need"):
        _bitslice.block_counts(table, ok, 0, need[:-1], 0)
    with pytest.raises(ValueError, match="w0"):
        _bitslice.block_counts(table, ok, _bitslice.BLOCK_WORDS + 1, need, 0)


@pytest.mark.parametrize("n, nw", [(0, 0), (1, 8), (63, 8), (64, 8), (65, 8), (1000, 16)])
def test_word_min_sizes_is_the_smallest_size_of_every_word(n, nw):
    """Every 64-reference word's smallest size per field; words past the last
    reference (and a partial word's missing references) count as 2**31 - 1."""
    from overlap._bitslice_index import word_min_sizes

    rng = np.random.default_rng(n)
    zs = rng.integers(0, 500, (2, n)).astype(np.int32)
    top = np.iinfo(np.int32).max
    want = np.full((2, nw), top, dtype=np.int32)
    for f in range(2):
        for w in range(nw):
            part = zs[f, 64 * w:64 * (w + 1)]
            if part.shape[0]:
                want[f, w] = part.min()
    got = word_min_sizes(zs, nw)
    assert got.dtype == np.int32 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want.ravel())
