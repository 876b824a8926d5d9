"""TokenSets: tokenizers against the plain-Python rules, construction, validation."""

from __future__ import annotations

import pickle
import string

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reference import overlap as ref
from overlap import TokenSets, ratio
from overlap import _tokenize

PUNCT_HEAVY = st.text(
    alphabet=st.sampled_from(list(string.punctuation + " \t\n_aZ9é’…\u00a0\u2028\x1c")),
    max_size=40,
)


def hashes_of_tokens(tokens: list[str]) -> np.ndarray:
    """Hash each token as a whole string (the 'whole' scan mode)."""
    _, h = _tokenize.scan_texts(list(tokens), 3, 0, 1)
    return h


def assert_row_equals_tokens(ts: TokenSets, i: int, tokens: list[str]) -> None:
    expected = np.unique(hashes_of_tokens(tokens)) if tokens else np.zeros(0, np.uint64)
    np.testing.assert_array_equal(ts.row(i), expected)


@given(st.lists(st.text(max_size=30) | PUNCT_HEAVY, max_size=8))
@example(["Hello, world... ?! () _ __eou__ ’s"])
@example(["İstanbul ǅemal ﬁne ß Σσς"])  # lower() changes length
@example(["\x1c\x1d\x1e\x1f\x85 a\u2028b"])  # exotic whitespace
@example(["lone \ud800 surrogate \udfff!"])
def test_wordpunct_matches_reference_regex(texts):
    ts = TokenSets.from_texts(texts)
    for i, t in enumerate(texts):
        assert_row_equals_tokens(ts, i, ref.tokenize_wordpunct(t))


@given(st.lists(st.text(max_size=30) | PUNCT_HEAVY, max_size=8))
def test_whitespace_and_char_presets(texts):
    ws = TokenSets.from_texts(texts, tokenizer="whitespace")
    ch = TokenSets.from_texts(texts, tokenizer="char")
    for i, t in enumerate(texts):
        assert_row_equals_tokens(ws, i, ref.tokenize_whitespace(t))
        assert_row_equals_tokens(ch, i, ref.tokenize_char(t))


def test_punctuation_rule_keeps_runs_and_drops_substrings():
    # '...' and '?!' are not substrings of string.punctuation; ',' '(' '()' '_' are
    ts = TokenSets.from_texts(["a , ( () ... ?! _ __"], tokenizer="wordpunct")
    assert_row_equals_tokens(ts, 0, ["a", "...", "?!", "__"])


@given(
    st.lists(st.lists(st.integers(0, 6), max_size=12), max_size=10),
    st.integers(1, 4),
    st.booleans(),
)
def test_from_ids_ngrams_and_multisets_match_reference(seqs, k, multiset):
    ts = TokenSets.from_ids(seqs, ngram=k, multiset=multiset)
    for i, s in enumerate(seqs):
        b = ref.bag(s, k, multiset)
        assert ts.sizes[i] == sum(b.values())
        assert len(ts.row(i)) == len(b)
    # the ratio computed from hashes equals the reference ratio on n-gram tuples
    if len(seqs) >= 2:
        a, b = ts.take(range(len(seqs) - 1)), ts.take(range(1, len(seqs)))
        got = ratio(a, b)
        want = [ref.dice(ref.bag(x, k, multiset), ref.bag(y, k, multiset))
                for x, y in zip(seqs[:-1], seqs[1:])]
        np.testing.assert_array_equal(got, want)


def test_texts_shorter_than_ngram_are_empty():
    ts = TokenSets.from_texts(["one two", "one two three", ""], ngram=3)
    assert ts.sizes.tolist() == [0, 1, 0]


def test_callable_tokenizer_gets_raw_text():
    ts = TokenSets.from_texts(["A b", "a B"], tokenizer=str.split)
    assert not np.array_equal(ts.row(0), ts.row(1))
    assert_row_equals_tokens(ts, 0, ["A", "b"])


def test_multiset_counts_and_sizes():
    ts = TokenSets.from_texts(["a a b", "a b b b"], multiset=True)
    assert ts.multiset
    assert ts.sizes.tolist() == [3, 4]
    # |u ∩ v| = min(2,1) + min(1,3) = 2 -> 2*2/7
    assert ratio(ts.take([0]), ts.take([1]))[0] == 2.0 * 2 / 7


def test_hashes_are_stable_golden_values():
    # Hashes are part of the on-disk contract (SPEC §1): these values must never
    # change across processes, platforms or versions.
    h = hashes_of_tokens(["hello", "café", ""])
    assert [hex(int(x)) for x in h] == GOLDEN_TOKENS
    ids = TokenSets.from_ids([[0, 1, 2**40]])
    assert [hex(int(x)) for x in ids.hashes] == GOLDEN_IDS


GOLDEN_TOKENS = ["0x6a14030b138dd896", "0xa51fc6a7fa22fb06", "0x9775a911a90dcf7a"]
GOLDEN_IDS = ["0x1f6622dbf67281f1", "0x7923f746629da275", "0x9110a828dc6c99fc"]


@given(st.lists(st.text(max_size=12), max_size=6), st.integers(0, 2**64 - 1))
def test_token_hash_matches_python_definition(tokens, seed):
    _, h = _tokenize.scan_texts(list(tokens), 3, seed, 1)
    assert h.tolist() == [ref.token_hash(t, seed) for t in tokens]


@given(st.lists(st.integers(0, 2**64 - 1), max_size=6), st.integers(0, 2**64 - 1),
       st.integers(2, 3))
def test_id_and_ngram_hashes_match_python_definition(ids, seed, k):
    uni = TokenSets.from_ids([ids], seed=seed)
    assert uni.hashes.tolist() == sorted({ref.id_hash(x, seed) for x in ids})
    grams = TokenSets.from_ids([ids], ngram=k, seed=seed)
    hs = [ref.id_hash(x, seed) for x in ids]
    want = {ref.ngram_hash(hs[i:i + k]) for i in range(len(hs) - k + 1)}
    assert grams.hashes.tolist() == sorted(want)


def test_seed_changes_hashes():
    a = TokenSets.from_texts(["some words here"], seed=0)
    b = TokenSets.from_texts(["some words here"], seed=1)
    assert not np.array_equal(np.sort(a.hashes), np.sort(b.hashes))


def test_from_csr_roundtrip_and_copy():
    indptr = np.array([0, 2, 2, 3])
    hashes = np.array([1, 5, 7], dtype=np.uint64)
    ts = TokenSets.from_csr(indptr, hashes)
    hashes[0] = 99  # the caller's array is not shared
    assert ts.hashes.tolist() == [1, 5, 7]
    assert ts.sizes.tolist() == [2, 0, 1]


@pytest.mark.parametrize(
    "indptr, hashes, message",
    [
        ([0, 2], [5, 1], "sorted ascending"),
        ([0, 2], [5, 5], "duplicate"),
        ([1, 2], [5, 6], r"indptr\[0\] must be 0"),
        ([0, 3], [5, 6], "must equal len"),
        ([0, 2, 1, 2], [5, 6], "non-decreasing"),
        ([0, 1], [-1], "non-negative"),
        ([], [], "at least one"),
    ],
)
def test_from_csr_rejects_bad_rows(indptr, hashes, message):
    with pytest.raises(ValueError, match=message):
        TokenSets.from_csr(indptr, np.asarray(hashes, dtype=np.int64))


def test_from_csr_rows_may_restart_low():
    ts = TokenSets.from_csr([0, 2, 4], np.array([5, 9, 1, 2], dtype=np.uint64))
    assert ts.sizes.tolist() == [2, 2]


def test_from_csr_rejects_float_hashes():
    with pytest.raises(TypeError, match="hashes"):
        TokenSets.from_csr([0, 1], np.array([1.5]))


def test_readonly_and_memmap_inputs(tmp_path):
    hashes = np.array([1, 2, 3], dtype=np.uint64)
    hashes.flags.writeable = False
    ts = TokenSets.from_csr(np.array([0, 3]), hashes)
    mm = np.memmap(tmp_path / "ids.bin", dtype=np.int64, mode="w+", shape=(4,))
    mm[:] = [3, 1, 2, 3]
    mm.flush()
    ro = np.memmap(tmp_path / "ids.bin", dtype=np.int64, mode="r", shape=(4,))
    ids = TokenSets.from_ids([ro])
    assert ids.sizes.tolist() == [3]
    assert ts.sizes.tolist() == [3]


def test_immutable_and_picklable():
    ts = TokenSets.from_texts(["a b c", "d"])
    with pytest.raises(ValueError):
        ts.hashes[0] = 1
    with pytest.raises(AttributeError):
        ts.foo = 1
    clone = pickle.loads(pickle.dumps(ts))
    assert clone == ts and clone.multiset is False
    bags = TokenSets.from_texts(["a a"], multiset=True)
    assert pickle.loads(pickle.dumps(bags)).counts.tolist() == [2]


def test_cannot_construct_directly():
    with pytest.raises(TypeError, match="from_texts"):
        TokenSets()


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda: TokenSets.from_texts("just one string"), TypeError, "texts"),
        (lambda: TokenSets.from_texts(["ok", 3]), TypeError, r"texts\[1\]"),
        (lambda: TokenSets.from_texts(["a"], tokenizer="nope"), ValueError, "tokenizer"),
        (lambda: TokenSets.from_texts(["a"], tokenizer=3), TypeError, "tokenizer"),
        (lambda: TokenSets.from_texts(["a"], tokenizer=lambda s: "ab"), TypeError, "tokenizer"),
        (lambda: TokenSets.from_texts(["a"], tokenizer=lambda s: [1]), TypeError, "tokenizer"),
        (lambda: TokenSets.from_texts(["a"], ngram=0), ValueError, "ngram"),
        (lambda: TokenSets.from_texts(["a"], ngram=1.5), TypeError, "ngram"),
        (lambda: TokenSets.from_texts(["a"], multiset="yes"), TypeError, "multiset"),
        (lambda: TokenSets.from_texts(["a"], n_threads=0), ValueError, "n_threads"),
        (lambda: TokenSets.from_texts(["a"], seed=-1), ValueError, "seed"),
        (lambda: TokenSets.from_ids([[1, -2]]), ValueError, "negative"),
        (lambda: TokenSets.from_ids([[1.0, 2.0]]), TypeError, "integers"),
        (lambda: TokenSets.from_ids(["abc"]), TypeError, r"sequences\[0\]"),
        (lambda: TokenSets.from_ids(5), TypeError, "sequences"),
        (lambda: TokenSets.from_ids([[[1, 2]]]), ValueError, "1-dimensional"),
    ],
)
def test_bad_input_is_named(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_inputs_not_modified():
    ids = np.array([5, 3, 3, 1])
    before = ids.copy()
    TokenSets.from_ids([ids], multiset=True)
    np.testing.assert_array_equal(ids, before)


def test_empty_collection():
    ts = TokenSets.from_texts([])
    assert len(ts) == 0 and ts.indptr.tolist() == [0]
    assert len(TokenSets.from_ids([])) == 0


def test_take_and_row():
    ts = TokenSets.from_texts(["a b", "c", "d e f"])
    sub = ts.take([2, 0])
    assert sub.sizes.tolist() == [3, 2]
    np.testing.assert_array_equal(sub.row(1), ts.row(0))
    np.testing.assert_array_equal(ts.take(np.array([False, True, False])).row(0), ts.row(1))
    with pytest.raises(IndexError):
        ts.row(3)


def test_concat_stacks_rows():
    a = TokenSets.from_texts(["a b", ""])
    b = TokenSets.from_texts(["c", "a b"])
    both = TokenSets.concat([a, b])
    assert len(both) == 4
    for i, (src, j) in enumerate([(a, 0), (a, 1), (b, 0), (b, 1)]):
        np.testing.assert_array_equal(both.row(i), src.row(j))
    bags = TokenSets.concat([TokenSets.from_texts(["x x"], multiset=True)] * 2)
    assert bags.counts.tolist() == [2, 2] and bags.sizes.tolist() == [2, 2]
    assert len(TokenSets.concat([])) == 0
    with pytest.raises(ValueError, match="multisets"):
        TokenSets.concat([a, TokenSets.from_texts(["x"], multiset=True)])
    with pytest.raises(TypeError, match=r"parts\[1\]"):
        TokenSets.concat([a, "b"])
    with pytest.raises(TypeError, match="parts"):
        TokenSets.concat(a)


def test_pickles_without_provenance_load_as_raw_hashes():
    from overlap.tokensets import _rebuild

    ts = TokenSets.from_texts(["a b", "c"])
    old = _rebuild(ts.indptr, ts.hashes, None)  # what pickles before provenance held
    assert old == ts and not old.provenance.known
    assert old.provenance.compatible(ts.provenance)


def test_from_csr_provenance_must_agree_with_counts():
    bags = TokenSets.from_ids([[1, 1, 2]], multiset=True)
    with pytest.raises(ValueError, match="multiset=True but counts is None"):
        TokenSets.from_csr(bags.indptr, bags.hashes, provenance=bags.provenance)
    same = TokenSets.from_csr(bags.indptr, bags.hashes, bags.counts,
                              provenance=bags.provenance)
    assert same == bags and same.provenance == bags.provenance


@pytest.mark.parametrize("row", [2**63, 2**64 - 1, 2])
def test_take_refuses_unsigned_rows_out_of_range(row):
    # uint64 rows >= 2**63 used to wrap to negative and select from the end
    ts = TokenSets.from_texts(["a b", "c"])
    with pytest.raises(IndexError, match=f"out of range for 2 token sets: {row}"):
        ts.take(np.array([0, row], dtype=np.uint64))
    assert ts.take(np.array([1], dtype=np.uint64)) == ts.take([1])


def test_from_csr_names_an_indptr_beyond_int64():
    with pytest.raises(ValueError, match="indptr holds 18446744073709551615"):
        TokenSets.from_csr(np.array([0, 2**64 - 1], dtype=np.uint64), np.array([1], dtype=np.uint64))


@pytest.mark.parametrize("tokenizer", ["wordpunct", "whitespace", "char", "intl"])
@pytest.mark.parametrize("ngram,multiset", [(1, False), (2, True), (3, False)])
def test_from_texts_in_chunks_equals_one_call(monkeypatch, tokenizer, ngram, multiset):
    # from_texts tokenizes about TEXT_CHUNK code points a kernel call, so that
    # Ctrl-C gets through between calls; the rows must not notice the cuts
    import overlap.tokensets as tokensets

    texts = ["", "The cat sat.", "a", "今天天气真好 ok", "", "x y z " * 7, "İ stanbul", "?!"] * 5
    whole = TokenSets.from_texts(texts, tokenizer=tokenizer, ngram=ngram, multiset=multiset)
    monkeypatch.setattr(tokensets, "TEXT_CHUNK", 5)
    assert len(tokensets._text_chunks(texts, 5)) > 10
    cut = TokenSets.from_texts(texts, tokenizer=tokenizer, ngram=ngram, multiset=multiset)
    assert cut == whole and cut.provenance == whole.provenance


def test_text_chunks_cover_every_row_once():
    from overlap.tokensets import _text_chunks

    for texts in ([], [""], ["", ""], ["abc", "", "de", "fghij"], ["x" * 50, "y"]):
        for budget in (1, 3, 100):
            ranges = _text_chunks(texts, budget)
            assert ranges[0][0] == 0 and ranges[-1][1] == len(texts)
            assert all(a < b or len(texts) == 0 for a, b in ranges)
            assert all(ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1))
