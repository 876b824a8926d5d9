"""The search kernel's filters, on corpora built to stress them.

The kernel reads, for each query token, only the posting entries whose
reference size passes the length filter and whose suffix mass passes the
positional filter; long postings (over 32 entries) are walked through a
directory of their size groups, and with several fields the other fields'
scans filter the candidates.  These corpora make every one of those paths
run: a few tokens sit in more than half of the rows (long postings), sizes
repeat (big size groups), rows are empty or identical, and scores land
exactly on the threshold.  Everything is compared with the plain-Python
definitions, on one and on two threads.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reference import overlap as ref
from reference.levels import POPCOUNT_LEVELS, popcount_level
from overlap import OverlapIndex, TokenSets, dedup, max_overlap, overlap_join
from overlap import _index
from overlap._kernels import _collection, _cpu, _pairs, _postings, _postings_search, _runner, _vocab

#: Tokens 0-2 are drawn so often that each is in more than half of the rows.
FREQUENT = st.integers(0, 2)
token = st.one_of(FREQUENT, FREQUENT, FREQUENT, st.integers(3, 12), st.integers(13, 60))
dense_row = st.lists(token, max_size=10)
THRESHOLDS = [0.3, 0.5, 0.6, 2 / 3, 0.75, 0.8, 0.9, 1.0]


@st.composite
def dense_collections(draw, n_fields, min_rows=40, max_rows=80):
    """Per-field id lists: long postings, repeated sizes, duplicates, empty rows."""
    n = draw(st.integers(min_rows, max_rows))
    pool = [draw(dense_row) for _ in range(8)]
    fields = []
    for _ in range(n_fields):
        col = []
        for _ in range(n):
            kind = draw(st.integers(0, 5))
            if kind == 0:
                col.append(draw(st.sampled_from(pool)))  # identical rows
            elif kind == 1:
                col.append([])
            else:
                col.append(draw(dense_row))
        fields.append(col)
    return fields


def build(fields, multiset=False):
    return [TokenSets.from_ids(col, multiset=multiset) for col in fields]


def units(fields, multiset=False):
    return [tuple(ref.bag(col[i], 1, multiset) for col in fields)
            for i in range(len(fields[0]))]


def triples(res):
    return list(zip(res.left.tolist(), res.right.tolist(), res.score.tolist()))


def test_the_corpora_reach_the_grouped_path():
    """Postings of the frequent tokens are longer than the directory's cut."""
    rng = np.random.default_rng(5)
    rows = [[int(t) for t in rng.integers(0, 3, rng.integers(1, 6))] for _ in range(80)]
    ts = TokenSets.from_ids(rows)
    df = np.bincount(np.concatenate([np.unique(r) for r in rows]))
    assert (df > 40).sum() >= 2  # in more than half of the rows
    idx = OverlapIndex(ts)
    gptr = np.asarray(idx._index.groups[0])
    assert (np.diff(gptr) > 0).sum() >= 2  # those postings have a size directory


@settings(max_examples=60)
@given(st.data(), st.booleans(), st.sampled_from(THRESHOLDS), st.integers(1, 2))
def test_join_on_dense_corpora(data, multiset, threshold, n_fields):
    a = data.draw(dense_collections(n_fields))
    b = data.draw(dense_collections(n_fields, 33, 50))
    la, lb = build(a, multiset), build(b, multiset)
    want = ref.join(units(a, multiset), units(b, multiset), threshold)
    want_self = ref.join(units(a, multiset), None, threshold)
    for level in POPCOUNT_LEVELS:
        with popcount_level(level):
            for nt in (1, 2):
                assert triples(overlap_join(la, lb, threshold=threshold, n_threads=nt)) == want
                assert triples(overlap_join(la, threshold=threshold, n_threads=nt)) == want_self


@settings(max_examples=25)
@given(st.data(), st.booleans(), st.sampled_from([0.5, 0.8, 0.9]), st.sampled_from([3, 5, 8]))
def test_join_on_dense_corpora_with_many_fields(data, multiset, threshold, n_fields):
    """The walks test a signature field by field (64 // F bits each): up to 8 fields.

    Every field is the first with a token or two edited, so that pairs match
    in all fields at once, many of them right at the threshold."""
    base = data.draw(dense_collections(1))[0]
    a = [base]
    for _ in range(n_fields - 1):
        col = []
        for row in base:
            row = list(row)
            for _ in range(data.draw(st.integers(0, 2))):
                if row and data.draw(st.booleans()):
                    row.pop(data.draw(st.integers(0, len(row) - 1)))
                else:
                    row.append(data.draw(token))
            col.append(row)
        a.append(col)
    la = build(a, multiset)
    want = ref.join(units(a, multiset), None, threshold)
    for level in POPCOUNT_LEVELS:
        with popcount_level(level):
            for nt in (1, 2):
                assert triples(overlap_join(la, threshold=threshold, n_threads=nt)) == want


def test_cpu_levels_are_those_of_this_cpu():
    top = _cpu.cpu_level()
    assert top in (0, 1, 2, 3) and _cpu.simd_level() == top  # the best, by default
    for bad in (-1, top + 1):
        with pytest.raises(ValueError, match="level must be in"):
            _cpu.set_simd_level(bad)
    assert _cpu.simd_level() == top
    assert POPCOUNT_LEVELS == list(range(min(top, 1) + 1))


@settings(max_examples=60)
@given(st.data(), st.booleans(), st.integers(1, 3), st.sampled_from([0.0, 0.4, 0.5, 0.8]),
       st.integers(1, 2))
def test_max_overlap_on_dense_corpora(data, multiset, top_k, min_score, n_fields):
    q = data.draw(dense_collections(n_fields, 10, 40))
    r = data.draw(dense_collections(n_fields))
    want = ref.max_overlap(units(q, multiset), units(r, multiset), top_k, min_score)
    ws = np.array([[s for s, _ in row] for row in want], dtype=float).reshape(-1, top_k)
    wi = np.array([[j for _, j in row] for row in want], dtype=np.int64).reshape(-1, top_k)
    for nt in (1, 2):
        res = max_overlap(build(q, multiset), build(r, multiset), top_k=top_k,
                          min_score=min_score, n_threads=nt)
        np.testing.assert_array_equal(res.score.reshape(-1, top_k), ws)
        np.testing.assert_array_equal(res.index.reshape(-1, top_k), wi)
    rest = ref.max_overlap(units(r, multiset), None, top_k, min_score)
    res = max_overlap(build(r, multiset), None, top_k=top_k, min_score=min_score)
    np.testing.assert_array_equal(
        res.index.reshape(-1, top_k),
        np.array([[j for _, j in row] for row in rest], dtype=np.int64).reshape(-1, top_k))


@settings(max_examples=30)
@given(st.data(), st.sampled_from([0.5, 0.8, 0.9]))
def test_dedup_on_dense_corpora(data, threshold):
    fields = data.draw(dense_collections(1, 40, 70))
    ts = TokenSets.from_ids(fields[0])
    want_keep, want_for, want_passes, want_cluster = ref.dedup(units(fields), threshold)
    for nt in (1, 2):
        got = dedup(ts, threshold=threshold, n_threads=nt)
        assert got.keep.tolist() == want_keep
        assert got.kept_for.tolist() == want_for
        assert got.passes == want_passes
        assert got.cluster.tolist() == want_cluster


@pytest.mark.parametrize("size", [5, 10, 20])
def test_pairs_exactly_on_the_threshold_in_long_postings(size):
    """Many equal-sized rows, each sharing exactly 80% with the query: all kept at 0.8."""
    keep = int(0.8 * size)
    query = list(range(size))
    rows = []
    for i in range(60):
        # the query's first `keep` tokens (the frequent ones) plus private tokens
        rows.append(list(range(keep)) + [1000 + i * size + t for t in range(size - keep)])
    refs = TokenSets.from_ids(rows)
    got = overlap_join(TokenSets.from_ids([query]), refs, threshold=0.8)
    assert got.right.tolist() == list(range(60))
    assert set(got.score.tolist()) == {2.0 * keep / (2 * size)}
    above = overlap_join(TokenSets.from_ids([query]), refs,
                         threshold=float(np.nextafter(0.8, 1.0)))
    assert len(above) == 0
    # every pair of rows shares exactly the same `keep` tokens too: all on the threshold
    everything = rows + [query]
    self_join = overlap_join(TokenSets.from_ids(everything), threshold=0.8)
    assert len(self_join) == 61 * 60 // 2
    assert triples(self_join) == ref.join(units([everything]), None, 0.8)
    res = max_overlap(TokenSets.from_ids([query]), refs, top_k=3, min_score=0.8)
    assert res.index.tolist() == [[0, 1, 2]]


def test_exported_limits_are_the_ones_python_checks():
    from overlap import _fields, search

    assert _fields.MAX_FIELDS == _collection.MAX_FIELDS == 8
    assert search.MAX_QUERY_TOKENS == _collection.MAX_QUERY_TOKENS == 2**24 - 1
    assert search.MAX_ROW_MASS == _collection.MAX_ROW_MASS
    assert _collection.MAX_ROW_MASS == 2**30 - 1
    one = TokenSets.from_ids([[1]])
    with pytest.raises(ValueError, match="at most 8 fields"):
        max_overlap([one] * 9, [one] * 9)


@pytest.mark.parametrize("shape", ["few long rows", "many short rows"])
@pytest.mark.parametrize("multiset", [False, True])
def test_index_build_is_the_same_for_every_thread_count(shape, multiset):
    """The postings build scatters rows in chunks when there are enough tokens
    (>= 65536 stored, counted over every field); the chunked build and the
    serial one must give the same entries, suffix masses and size groups."""
    from overlap import _index

    rng = np.random.default_rng(7)
    if shape == "few long rows":  # 700 rows of ~120 tokens: chunked by tokens, not rows
        lens, vocab = rng.integers(0, 240, 700), 3000
    else:
        lens, vocab = rng.integers(0, 4, 70_000), 500
    fields = []
    for _ in range(2):
        ids = [rng.zipf(1.3, n) % vocab for n in lens]
        fields.append(TokenSets.from_ids(ids, multiset=multiset))
    assert sum(ts.nnz for ts in fields) >= 65536
    built = []
    for nt in (1, 2, 5):
        ri = _index.reference_index(tuple(fields), _index.collection(tuple(fields)), nt)
        built.append((ri.entries.copy(), [np.asarray(g).copy() for g in ri.groups]))
    for entries, groups in built[1:]:
        np.testing.assert_array_equal(entries, built[0][0])
        for got, want in zip(groups, built[0][1]):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("sizes", [
    [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5],   # the counting sort by size
    [0, 1400, 2, 1400, 7, 3000, 1],      # sizes spanning > 4n + 1024: the argsort fallback
])
def test_postings_are_ordered_by_size_then_suffix_mass_then_reference(sizes):
    """Every posting lists its entries by (size ascending, suffix mass descending,
    reference ascending), whichever sort ordered the rows by size."""
    rng = np.random.default_rng(len(sizes))
    rows = [rng.choice(4000, z, replace=False) % 4000 for z in sizes]
    _check_posting_order(TokenSets.from_ids([r.tolist() for r in rows]), 1)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_long_postings_are_ordered_too(n_threads):
    """Postings of thousands of entries (sorted one per grab, before the short
    ones): the same order from the definition, on any number of threads."""
    rng = np.random.default_rng(5)
    rows = [sorted(set((rng.zipf(1.5, rng.integers(1, 9)) % 60).tolist())) for _ in range(6000)]
    ts = TokenSets.from_ids(rows)
    df = np.bincount(np.concatenate([np.array(r, dtype=np.int64) for r in rows]))
    assert df.max() >= 2048 and (df >= 2048).sum() >= 2  # several long postings
    _check_posting_order(ts, n_threads)


ROW_LENGTHS = st.one_of(st.integers(0, 6), st.sampled_from([31, 32, 33, 34]), st.integers(0, 90))


@settings(max_examples=60, deadline=None)
@given(st.lists(ROW_LENGTHS, min_size=1, max_size=30), st.integers(0, 2**32 - 1),
       st.booleans(), st.sampled_from([1, 2, 3]), st.booleans())
def test_postings_hold_the_suffix_masses_of_the_definition(lengths, seed, multiset, n_threads,
                                                          left_out):
    """Every entry's reference, size, suffix mass and count, from the definition:
    rows of 0 to 90 distinct tokens (both sides of the 32-token switch from
    counting to sorting), sets and bags, tokens 0-3 in most rows.  With
    ``left_out``, the tokens one row holds are left out of the index (id -1,
    ``_index.only_shared``, as a self-only index does): the other postings
    are the same."""
    from overlap import _index
    from overlap._order import count_key_order

    rng = np.random.default_rng(seed)
    rows = []
    for z in lengths:
        row = rng.choice(120, z, replace=False)
        row[: min(z, 4)] = rng.permutation(4)[: min(z, 4)]  # the frequent tokens
        # bags: some tokens repeated (counts above one)
        rows.append(np.concatenate([row, row[: int(rng.integers(0, z + 1))]]).tolist())
    ts = TokenSets.from_ids(rows, multiset=multiset)
    coll = _index.collection((ts,))
    inverse = np.empty(ts.nnz, dtype=np.int32)
    (tables,) = _index.vocabularies([ts.hashes], n_threads, inverse)
    if left_out:
        tables = _index.only_shared(*tables)
    vocab, _, _, _, df = tables
    rank = np.empty(vocab.shape[0], dtype=np.int64)
    rank[count_key_order(df, vocab)] = np.arange(vocab.shape[0])
    pptr = np.zeros(vocab.shape[0] + 1, dtype=np.int64)
    np.cumsum(df, out=pptr[1:])
    entries, psuf, pcnt, _ = _postings.build_postings(
        coll, inverse, rank, pptr, _index.max_row((ts,)), n_threads)
    # the definition: tokens ranked rarest first (rows holding them), ties by hash
    rows_of = {}
    for i in range(len(ts)):
        for h in ts.row(i).tolist():
            rows_of[h] = rows_of.get(h, 0) + 1
    order = {h: k for k, h in enumerate(sorted(rows_of, key=lambda h: (rows_of[h], h)))}
    want = []
    for i in range(len(ts)):
        a, b = int(ts.indptr[i]), int(ts.indptr[i + 1])
        hs = ts.hashes[a:b].tolist()
        cs = ts.counts[a:b].tolist() if multiset else [1] * (b - a)
        for h, c in zip(hs, cs):
            if left_out and rows_of[h] == 1:
                continue
            suf = sum(c2 for h2, c2 in zip(hs, cs) if order[h2] >= order[h])
            want.append((h, sum(cs), -suf, i, c))
    want.sort()
    got = []
    for v in range(vocab.shape[0]):
        for u in range(int(pptr[v]), int(pptr[v + 1])):
            got.append((int(vocab[v]), int(entries["size"][u]), -int(psuf[u]),
                        int(entries["ref"][u]), int(pcnt[u]) if multiset else 1))
    # each posting in its scan order, and the entries those of the definition
    for v in range(vocab.shape[0]):
        run = got[int(pptr[v]):int(pptr[v + 1])]
        assert run == sorted(run)
    assert sorted(got) == want


def _pair_parts(rng, lengths, n_left, n_right):
    return [(rng.integers(0, n_left, z), rng.integers(0, n_right, z), rng.random(z))
            for z in lengths]


def _check_sorted_pairs(parts, n_left, n_right):
    a = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    b = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    s = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0)
    order = np.lexsort((b, a))  # stable: equal pairs keep their order
    for nt in (1, 2, 3):
        got = _pairs.sorted_pairs(parts, n_left, n_right, nt)
        for g, w in zip(got, (a[order], b[order], s[order])):
            np.testing.assert_array_equal(g, w)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=5), st.integers(1, 30), st.integers(1, 30),
       st.integers(0, 2**32 - 1))
def test_sorted_pairs_is_lexsort(lengths, n_left, n_right, seed):
    """The join's final order: parts of any lengths (empty ones too), repeated
    lefts (groups on both sides of the 16-pair switch to sorting keys),
    repeated pairs kept in their order."""
    _check_sorted_pairs(_pair_parts(np.random.default_rng(seed), lengths, n_left, n_right),
                        n_left, n_right)


@pytest.mark.parametrize("lengths", [[200_000], [1, 90_000, 0, 70_001, 3]])
def test_sorted_pairs_is_lexsort_on_threads(lengths):
    """Enough pairs (>= 65536 a thread) to cut them into ranges, one a thread,
    ranges that start and end inside parts."""
    _check_sorted_pairs(_pair_parts(np.random.default_rng(len(lengths)), lengths, 5000, 70_000),
                        5000, 70_000)


def test_sorted_pairs_rejects_indices_out_of_range():
    parts = [(np.array([0, 3]), np.array([1, 2]), np.array([0.5, 0.5]))]
    with pytest.raises(ValueError, match=r"outside \[0, 3\) x \[0, 5\)"):
        _pairs.sorted_pairs(parts, 3, 5)  # left 3
    with pytest.raises(ValueError, match=r"outside \[0, 4\) x \[0, 2\)"):
        _pairs.sorted_pairs(parts, 4, 2)  # right 2
    with pytest.raises(ValueError, match="n_right in"):
        _pairs.sorted_pairs(parts, 4, 2**31)
    with pytest.raises(ValueError, match="differ in length"):
        _pairs.sorted_pairs([(np.array([0]), np.array([1, 2]), np.array([0.5]))], 4, 5)


def _check_posting_order(ts, n_threads):
    from overlap import _index

    ri = _index.reference_index((ts,), _index.collection((ts,)), n_threads)
    ent = ri.entries
    # the suffix masses from the definition: rank tokens rarest first, ties by hash
    df = {}
    for i in range(len(ts)):
        for h in ts.row(i).tolist():
            df[h] = df.get(h, 0) + 1
    rank = {h: k for k, h in enumerate(sorted(df, key=lambda h: (df[h], h)))}
    by_token = {}
    for i in range(len(ts)):
        row = sorted(ts.row(i).tolist(), key=rank.get)
        for pos, h in enumerate(row):
            by_token.setdefault(h, []).append((len(row), -(len(row) - pos), i))
    # postings are stored by vocabulary id: the order tokens first appear in
    first_seen = list(dict.fromkeys(ts.hashes.tolist()))
    want = [ref_id for h in first_seen for _, _, ref_id in sorted(by_token[h])]
    assert ent["ref"].tolist() == want


@settings(max_examples=40)
@given(st.data(), st.booleans(), st.sampled_from([0.5, 0.75, 0.8, 1.0]))
def test_self_join_on_three_fields(data, multiset, threshold):
    """A self-join finds each pair once from the side first by (size in field 0,
    index), whichever field drives each query's scan: sizes repeat, rows repeat."""
    a = data.draw(dense_collections(3, 30, 60))
    want = ref.join(units(a, multiset), None, threshold)
    for nt in (1, 2):
        assert triples(overlap_join(build(a, multiset), threshold=threshold,
                                    n_threads=nt)) == want


@pytest.mark.parametrize("threshold", [0.5, 0.8])
def test_self_join_driven_by_another_field(threshold):
    """Field 0 holds only three tokens (every posting long, all sizes alike), so
    the second field drives the scans and the key is checked per entry."""
    rng = np.random.default_rng(11)
    n = 400
    f0 = [sorted(set(rng.integers(0, 3, rng.integers(1, 4)).tolist())) for _ in range(n)]
    f1 = [rng.choice(5000, rng.integers(2, 9), replace=False).tolist() for _ in range(n)]
    for i in range(0, n, 7):  # near-copies, some of equal field-0 size
        j = int(rng.integers(0, n))
        f1[j] = f1[i][:-1] + [int(rng.integers(5000, 6000))] if len(f1[i]) > 4 else list(f1[i])
        f0[j] = list(f0[i]) if i % 2 else f0[j]
    want = ref.join(units([f0, f1]), None, threshold)
    assert want, "the corpus must hold matching pairs"
    got = overlap_join(build([f0, f1]), threshold=threshold)
    assert triples(got) == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 7, 2**63, 2**64 - 1]) | st.integers(0, 2**64 - 1),
                max_size=300))
def test_fingerprint_order_is_numpys_stable_argsort(keys):
    """The index's fingerprint order (duplicates in index order: exact_duplicate
    finds the lowest identical reference) equals a stable argsort."""
    from overlap._order import stable_argsort_u64

    k = np.array(keys, dtype=np.uint64)
    got = stable_argsort_u64(k)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argsort(k, kind="stable"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 40), st.integers(-3, 40)), max_size=200),
       st.sampled_from([np.int64, np.int32, np.uint64]), st.booleans())
@example([(0, 0)], np.int64, True)  # one pair: width 2**63 while total - 1 fits int64
def test_pair_order_is_lexsort(pairs, dtype, huge):
    """The join's and dedup's pair order equals np.lexsort, duplicates included;
    negative values, and values whose combined key would overflow, take the
    lexsort path."""
    from overlap._order import pair_order

    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    if dtype is np.uint64:
        a, b = np.abs(a), np.abs(b)
    a, b = a.astype(dtype), b.astype(dtype)
    if huge and len(pairs) and dtype is not np.int32:
        b[0] = np.iinfo(np.int64).max  # forces the fallback
    np.testing.assert_array_equal(pair_order(a, b), np.lexsort((b, a)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 2**64 - 1)), max_size=300),
       st.sampled_from(["random", "few keys", "one byte differs", "huge count"]))
def test_count_key_order_is_lexsort(rows, shape):
    """The vocabulary's scan order: by count, ties by key, then by position."""
    from overlap._order import count_key_order

    counts = np.array([c for c, _ in rows], dtype=np.int64)
    keys = np.array([k for _, k in rows], dtype=np.uint64)
    if shape == "few keys":  # equal keys: ties go by position
        keys %= np.uint64(3)
    elif shape == "one byte differs":  # every other radix pass is skipped
        keys = (keys & np.uint64(0xFF00)) | np.uint64(0x5A5A5A5A5A5A00FF)
    elif shape == "huge count" and len(rows):
        counts[0] = 2**40  # past the counting sort's range: the stable argsort
    np.testing.assert_array_equal(count_key_order(counts, keys), np.lexsort((keys, counts)))


def test_count_key_order_refuses_what_it_cannot_order():

    with pytest.raises(ValueError, match="negative"):
        _vocab.count_key_order(np.array([1, -1]), np.array([1, 2], dtype=np.uint64))
    with pytest.raises(ValueError, match="2 counts for 3 keys"):
        _vocab.count_key_order(np.array([1, 1]), np.array([1, 2, 3], dtype=np.uint64))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 3).flatmap(lambda nk: st.lists(
    st.tuples(*[st.integers(-2, 70) for _ in range(nk)]), max_size=150)),
    st.booleans())
def test_lex_order_is_lexsort(rows, huge):
    """The size order of the bit-sliced index (and any key order): np.lexsort."""
    from overlap._order import lex_order

    if not rows:
        assert lex_order(np.zeros(0, dtype=np.int64)).shape == (0,)
        return
    keys = [np.array(col, dtype=np.int64) for col in zip(*rows)]
    if huge:
        keys[-1][0] = np.iinfo(np.int64).max // 2  # the combined key would overflow
    np.testing.assert_array_equal(lex_order(*keys), np.lexsort(keys[::-1]))


def test_pair_order_refuses_mismatched_arrays():
    from overlap._order import pair_order

    with pytest.raises(ValueError, match="pair_order"):
        pair_order(np.zeros(2, dtype=np.int64), np.zeros(3, dtype=np.int64))


@settings(max_examples=25, deadline=None)
@given(dense_collections(2), st.lists(st.integers(1, 30), min_size=1, max_size=6),
       st.sampled_from(THRESHOLDS), st.integers(1, 3))
def test_a_scratch_pool_serves_a_callers_consecutive_calls(fields, cuts, threshold, nt):
    """Chunked kernel calls that share a ScratchPool (as every public join and
    search does) give what one call without a pool gives: a scratch is clean
    after every query, whatever the last call left in it."""
    from overlap import _index

    ts = build(fields)
    idx = OverlapIndex(ts)
    ri, coll, n = idx._index, idx._coll, len(ts[0])
    max_row, max_mass = idx._max_row, _index.max_mass(tuple(ts))
    bounds = np.unique(np.clip(np.cumsum([0] + cuts), 0, n)).tolist()
    if bounds[-1] != n:
        bounds.append(n)

    def chunked(call):
        """The calls' results, and their last_stats (entries read, ...) summed."""
        out, stats = [], np.zeros(3, dtype=np.int64)
        for a, b in zip(bounds[:-1], bounds[1:]):
            out.append(call(a, b))
            stats += ri.last_stats
        return out, stats

    for upper in (False, True):
        want = ri.join(coll, 0, n, threshold, upper, max_row, max_mass, nt)
        _, plain_stats = chunked(lambda a, b: ri.join(coll, a, b, threshold, upper, max_row,
                                                      max_mass, nt))
        pool = _runner.ScratchPool(nt, n, max_row, 2, max_mass, 1)
        parts, pool_stats = chunked(lambda a, b: ri.join(coll, a, b, threshold, upper, max_row,
                                                         max_mass, nt + 1, pool))  # a thread more
        assert 1 <= pool.allocated <= nt
        got = _pairs.sorted_pairs(parts, n, n, 1)
        want = _pairs.sorted_pairs([want], n, n, 1)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        # each call counts its own work (a join's counts do not depend on the order)
        np.testing.assert_array_equal(pool_stats, plain_stats)
    for k, exclude in ((1, False), (1, True), (3, True)):
        s0, i0 = np.zeros((n, k)), np.full((n, k), -1, dtype=np.int64)
        ri.top_k(coll, 0, n, k, 0.0, exclude, max_row, max_mass, nt, s0, i0)
        s1, i1 = np.zeros((n, k)), np.full((n, k), -1, dtype=np.int64)
        pool = _runner.ScratchPool(nt, n, max_row, 2, max_mass, k)
        chunked(lambda a, b: ri.top_k(coll, a, b, k, 0.0, exclude, max_row, max_mass, nt,
                                      s1, i1, pool))
        np.testing.assert_array_equal(s1, s0)
        np.testing.assert_array_equal(i1, i0)


def test_a_scratch_pool_refuses_another_shape_of_call():
    ts = TokenSets.from_ids([[1, 2, 3], [2, 3, 4], [9]])
    idx = OverlapIndex(ts)
    ri, coll = idx._index, idx._coll
    s, i = np.zeros((3, 1)), np.full((3, 1), -1, dtype=np.int64)
    for pool in (_runner.ScratchPool(2, 4, 3, 1, 3, 1),   # another number of references
                 _runner.ScratchPool(2, 3, 2, 1, 3, 1),   # rows too long for it
                 _runner.ScratchPool(2, 3, 3, 1, 3, 2)):  # another k
        with pytest.raises(ValueError, match="another shape"):
            ri.top_k(coll, 0, 3, 1, 0.0, False, 3, 3, 1, s, i, pool)
        assert pool.allocated == 0
    with pytest.raises(ValueError, match="out of range"):
        _runner.ScratchPool(0, 3, 3, 1, 3, 1)
    with pytest.raises(ValueError, match="out of range"):
        _runner.ScratchPool(1, 3, 3, 9, 3, 1)


def test_the_search_kernel_checks_the_queries_it_is_asked_to_run():
    """top_k and join refuse a query range, row length, mass or output they cannot hold."""
    ts = TokenSets.from_ids([[1, 2, 3], [2, 3, 4], [9], [1, 2, 3, 4, 5]])
    idx = OverlapIndex(ts)
    ri, coll = idx._index, idx._coll
    n = len(ts)
    two = _index.collection((ts, ts))

    def top1(start, stop, max_row=5, max_mass=5, out_rows=n, k=1, queries=coll):
        s, i = np.zeros((out_rows, k)), np.full((out_rows, k), -1, dtype=np.int64)
        ri.top_k(queries, start, stop, k, 0.0, False, max_row, max_mass, 1, s, i)
        return i

    def join(start, stop, max_row=5, max_mass=5, queries=coll):
        return ri.join(queries, start, stop, 0.5, False, max_row, max_mass, 1)

    for run in (top1, join):
        for start, stop in ((-1, 2), (0, n + 1), (3, 2)):
            with pytest.raises(ValueError, match="out of range"):
                run(start, stop)
        # row 3 holds 5 tokens: scratch for 4 would overflow
        with pytest.raises(ValueError, match="query 3 does not fit"):
            run(0, n, max_row=4)
        with pytest.raises(ValueError, match="query 3 does not fit"):
            run(2, n, max_mass=4)
        with pytest.raises(ValueError, match="2 field"):
            run(0, n, queries=two)
        # a range that leaves the long row out fits the smaller scratch
        run(0, 3, max_row=3, max_mass=3)
    with pytest.raises(ValueError, match="outputs of shape"):
        top1(0, n, out_rows=n - 1)
    with pytest.raises(ValueError, match="outputs of shape"):
        top1(0, n, k=0)
    np.testing.assert_array_equal(top1(0, n)[:, 0], idx.max_overlap(ts).index)


def _postings_input(rows: list, multiset: bool = False):
    """(coll, inverse, rank, pptr, max_row) of build_postings for id rows."""
    from overlap._order import count_key_order

    ts = TokenSets.from_ids(rows, multiset=multiset)
    coll = _index.collection((ts,))
    inverse = np.empty(ts.nnz, dtype=np.int32)
    ((vocab, _, _, _, df),) = _index.vocabularies([ts.hashes], 1, inverse)
    rank = np.empty(vocab.shape[0], dtype=np.int64)
    rank[count_key_order(df, vocab)] = np.arange(vocab.shape[0])
    pptr = np.zeros(vocab.shape[0] + 1, dtype=np.int64)
    np.cumsum(df, out=pptr[1:])
    return coll, inverse, rank, pptr, _index.max_row((ts,))


@pytest.mark.parametrize("spoil", ["id below -1", "id past the vocabulary", "one id left out",
                                   "postings that go back", "postings that start late"])
def test_build_postings_refuses_tables_that_disagree(spoil):
    """Every stored token is a vocabulary id or -1 (left out), and the postings
    hold exactly the tokens not left out, end to end from 0."""
    coll, inverse, rank, pptr, longest = _postings_input([[1, 2, 3], [2, 3], [3, 4]])
    inverse, pptr = inverse.copy(), pptr.copy()
    if spoil == "id below -1":
        inverse[0] = -2
    elif spoil == "id past the vocabulary":
        inverse[0] = rank.shape[0]
    elif spoil == "one id left out":  # the postings still count it
        inverse[0] = -1
    elif spoil == "postings that go back":
        pptr[1], pptr[2] = pptr[2], pptr[1]
    else:
        pptr[:-1] += 1
    with pytest.raises(ValueError, match="overlap index: token tables"):
        _postings.build_postings(coll, inverse, rank, pptr, longest, 1)
