"""The tokenizer's ASCII byte scan against the plain-Python definition.

``_tokenize.scan_utf8`` tokenizes every all-ASCII row on its bytes
(``scan_ascii``: lower-casing through a table, the punctuation rule tested
only for runs that start with a punctuation byte) and then sorts and
de-duplicates each row (``finalize_row``, ``_sort.sort_hashes``).  Here the
token hashes in text order, and the finished sets and bags, are compared with
``reference.overlap``: the regex (or ``str.split``), the punctuation rule,
FNV-1a + fmix64 and ``Counter``, on ASCII text heavy on the cases the scan
treats apart: upper case at a token's start, runs of punctuation that are or
are not substrings of ``string.punctuation``, '_' (a word character that is
punctuation), control characters, every kind of space, and rows long enough
for many tokens and many copies of one token.  Every test runs at each CPU
level that changes the scan (``levels.ASCII_SCAN_LEVELS``: byte by byte, and
the AVX-512 kernels where the CPU has them; ``test_ascii_simd.py`` aims at
those kernels' own edges).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap import _tokenize
from reference import overlap as ref
from reference.levels import ASCII_SCAN_LEVELS, cpu_level

WORDPUNCT, WHITESPACE = 0, 1
REF_TOKENS = {WORDPUNCT: ref.tokenize_wordpunct, WHITESPACE: ref.tokenize_whitespace}

# pieces of ASCII text: words in any case, punctuation runs, '_', controls, spaces
PIECES = st.one_of(
    st.text(st.sampled_from("aBcXyZ09_"), min_size=1, max_size=12),
    st.text(st.sampled_from("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), min_size=1, max_size=5),
    st.sampled_from(["...", "?!", "()", "_", "__", "~}", "``", "A.", "Hello", "WORLD", "the"]),
    st.text(st.sampled_from("\x00\x01\x08\x0e\x1b\x7f"), min_size=1, max_size=3),
    st.text(st.sampled_from(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"), min_size=1, max_size=3),
)
ROWS = st.lists(st.lists(PIECES, max_size=80).map("".join), min_size=1, max_size=8)


@pytest.fixture(params=ASCII_SCAN_LEVELS, autouse=True)
def level(request):
    with cpu_level(request.param):
        yield request.param


def _scan(texts, mode, seed, ngram=1, multiset=False, ordered=False):
    data = "".join(texts).encode("ascii")
    offsets = np.cumsum([0] + [len(t) for t in texts]).astype(np.int64)
    return _tokenize.scan_utf8(offsets, np.frombuffer(data, dtype=np.uint8), mode, seed,
                               ngram, multiset, 2, ordered=ordered)


@settings(max_examples=200, deadline=None)
@given(ROWS, st.sampled_from([WORDPUNCT, WHITESPACE]), st.sampled_from([0, 2**64 - 1, 29]))
def test_token_hashes_in_order_are_the_definition(texts, mode, seed):
    indptr, hashes, _ = _scan(texts, mode, seed, ordered=True)
    for i, text in enumerate(texts):
        want = [ref.token_hash(t, seed) for t in REF_TOKENS[mode](text)]
        assert hashes[indptr[i]:indptr[i + 1]].tolist() == want


@settings(max_examples=150, deadline=None)
@given(ROWS, st.sampled_from([WORDPUNCT, WHITESPACE]), st.integers(1, 3), st.booleans())
def test_sets_and_bags_are_the_definition(texts, mode, k, multiset):
    indptr, hashes, counts = _scan(texts, mode, 7, k, multiset)
    for i, text in enumerate(texts):
        tokens = [ref.token_hash(t, 7) for t in REF_TOKENS[mode](text)]
        want = {ref.ngram_hash(list(g)): c for g, c in ref.bag(tokens, k, multiset).items()}
        row = hashes[indptr[i]:indptr[i + 1]].tolist()
        assert row == sorted(want)
        if multiset:
            assert counts[indptr[i]:indptr[i + 1]].tolist() == [want[h] for h in row]


def test_frequent_tokens_and_upper_case_starts():
    """Rows of 17 to 600 tokens where a few words come back many times, in
    every case (one hash: a bucket of the sort full of copies)."""
    rng = np.random.default_rng(29)
    words = ["the", "The", "THE", "of", "Of", "a", "A", "x_1", "...", "?!", "(", "__"]
    texts = []
    for n in (17, 20, 36, 64, 65, 200, 600):
        picks = rng.integers(0, len(words), size=n)
        texts.append(" ".join(words[j] if j < 3 or rng.random() < 0.5 else f"w{rng.integers(99)}"
                              for j in picks))
    for multiset in (False, True):
        indptr, hashes, counts = _scan(texts, WORDPUNCT, 0, 1, multiset)
        for i, text in enumerate(texts):
            want = ref.bag([ref.token_hash(t) for t in ref.tokenize_wordpunct(text)], 1, multiset)
            want = {g[0]: c for g, c in want.items()}
            assert hashes[indptr[i]:indptr[i + 1]].tolist() == sorted(want)
            if multiset:
                assert counts[indptr[i]:indptr[i + 1]].tolist() == [want[h] for h in sorted(want)]
