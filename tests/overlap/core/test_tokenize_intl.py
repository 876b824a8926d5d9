"""The ``intl`` tokenizer preset against a plain-Python regex of its definition.

Definition (docs/tokenizers.md): lower-case; every word character (``\\w``) in
the ranges below is a token of its own; other text is tokenized exactly as
``wordpunct`` (runs of ``\\w``, runs of non-word non-space characters, tokens
that are substrings of ``string.punctuation`` dropped).
"""

from __future__ import annotations

import re
import string

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import overlap
from overlap import TokenSets, _tokenize, max_overlap, ratio

from reference import overlap as ref

# Written from the Unicode block chart, independently of overlap/_tokenize.pyx.
RANGES = [
    (0x3040, 0x30FF),    # Hiragana, Katakana
    (0x31F0, 0x31FF),    # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),    # CJK Extension A
    (0x4E00, 0x9FFF),    # CJK Unified Ideographs
    (0xAC00, 0xD7AF),    # Hangul Syllables
    (0xF900, 0xFAFF),    # CJK Compatibility Ideographs
    (0xFF66, 0xFF9F),    # halfwidth Katakana
    (0x1AFF0, 0x1B16F),  # Kana Extended-B .. Small Kana Extension
    (0x20000, 0x3FFFF),  # Supplementary and Tertiary Ideographic Planes
]
_CLASS = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in RANGES)
# one in-range word character | a run of other word characters | a non-word run
INTL = re.compile(f"(?=[{_CLASS}])\\w|(?:(?![{_CLASS}])\\w)+|[^\\w\\s]+")


def tokenize_intl(text: str) -> list[str]:
    return [t for t in INTL.findall(text.lower()) if t not in string.punctuation]


def raw_hashes(texts: list[str], mode: str, seed: int = 0) -> list[list[int]]:
    """The preset's token hashes in text order (before n-grams and sorting)."""
    indptr, h = _tokenize.scan_texts([t.lower() for t in texts], overlap.TOKENIZERS[mode],
                                     seed, 1)
    return [h[indptr[i]:indptr[i + 1]].tolist() for i in range(len(texts))]


def test_ranges_are_the_documented_ones():
    merged = []
    for a, b in sorted(_tokenize.INTL_RANGES):
        if merged and a == merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    assert merged == RANGES
    assert "intl" in overlap.TOKENIZERS


def test_every_code_point_against_the_regex():
    # "cc" for every code point c: two tokens exactly when c is an in-range word
    # character, else what wordpunct gives
    cps = [c for c in range(0x110000)]
    texts = [chr(c) * 2 for c in cps]
    indptr, _ = _tokenize.scan_texts(texts, overlap.TOKENIZERS["intl"], 0, 2)
    got = np.diff(indptr)
    want = np.array([len([t for t in INTL.findall(s) if t not in string.punctuation])
                     for s in texts])
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [hex(cps[i]) for i in bad[:10]]


# Adversarial alphabet: range boundaries, kana voicing marks (combining, not \w),
# prolonged sound marks, CJK punctuation, combining accents, surrogates, spaces.
_EDGES = []
for a, b in RANGES:
    _EDGES += [a - 1, a, a + 1, b - 1, b, b + 1]
_SPECIAL = [0x3099, 0x309A, 0x30FC, 0x30FB, 0xFF70, 0xFF9E, 0x3001, 0x3002, 0xFF0C,
            0x3005, 0x3007, 0x0301, 0x0300, 0x00E9, 0x0130, 0xD800, 0xDFFF, 0x00A0, 0x3000,
            0x1100, 0x3131, 0xFFA0]
_ALPHABET = st.sampled_from(
    [chr(c) for c in _EDGES + _SPECIAL if c < 0x110000]
    + list("aZ_09 \t\n.,!?()-'") + list("今天気好東京タワーひらがな한국어")
)
mixed_text = st.text(
    alphabet=st.one_of(_ALPHABET, st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                                                blacklist_categories=())),
    max_size=40,
)


@given(st.lists(mixed_text, max_size=6), st.integers(0, 2**64 - 1))
def test_token_for_token_against_the_regex(texts, seed):
    got = raw_hashes(texts, "intl", seed)
    want = [[ref.token_hash(t, seed) for t in tokenize_intl(s)] for s in texts]
    assert got == want


@given(st.lists(mixed_text, max_size=6), st.integers(1, 3), st.booleans())
def test_sets_ngrams_and_bags_against_the_regex(texts, k, multiset):
    ts = TokenSets.from_texts(texts, "intl", ngram=k, multiset=multiset)
    via_callable = TokenSets.from_texts(texts, tokenize_intl, ngram=k, multiset=multiset)
    assert ts == via_callable


@given(st.lists(st.text(alphabet=st.characters(max_codepoint=0x2FFF, blacklist_categories=()),
                        max_size=30), max_size=6))
def test_same_as_wordpunct_outside_the_ranges(texts):
    # below U+3040 nothing is in range, so intl must be wordpunct exactly
    assert raw_hashes(texts, "intl") == raw_hashes(texts, "wordpunct")


MIXED = "今天天气很好 the weather, señor! 東京タワー한국어 ..."

# Hashes are an on-disk contract: wordpunct's must not change when presets are
# added, and intl's are fixed from now on.
GOLDEN_WORDPUNCT = ["0xbac8b5110f61dff6", "0x2483561eefaaf0e5", "0xa86a50d21873be7d",
                    "0x7277c8bce0e043f5", "0x38e6981a27f14d74", "0x79b8cf991f249719"]
GOLDEN_INTL_HEAD = ["0x32cfeefadcb64cd5", "0x3616079355234e4a", "0x3616079355234e4a",
                    "0x90d85cda59e4201f"]


def test_golden_hashes():
    assert [hex(h) for h in raw_hashes([MIXED], "wordpunct")[0]] == GOLDEN_WORDPUNCT
    intl = raw_hashes([MIXED], "intl")[0]
    assert [hex(h) for h in intl[:4]] == GOLDEN_INTL_HEAD
    assert intl == [ref.token_hash(t) for t in tokenize_intl(MIXED)]
    # the Latin-script tokens are shared with wordpunct, hash for hash
    assert set(raw_hashes(["the weather, señor! ..."], "wordpunct")[0]) <= set(intl)


@pytest.mark.parametrize("text, tokens", [
    ("東京タワー는 높다, Très haut!", ["東", "京", "タ", "ワ", "ー", "는", "높", "다", "très", "haut"]),
    # full-width punctuation is not in string.punctuation: kept, as by wordpunct
    ("我们去公园散步吧！", ["我", "们", "去", "公", "园", "散", "步", "吧", "！"]),
    ("かﾞ ...", ["か", "ﾞ", "..."]),
])
def test_readable_examples(text, tokens):
    assert tokenize_intl(text) == tokens
    assert raw_hashes([text], "intl")[0] == [ref.token_hash(t) for t in tokens]


# MINT-like tweets (written for this test, not from the real file): Chinese,
# English and Spanish, each with a light edit of itself further down.
TWEETS = [
    ("zh", "今天的天气真好，我们去公园散步吧！"),
    ("en", "Honestly the best coffee in town, can't wait to go back"),
    ("es", "¡Qué día tan bonito! Vamos a la playa con mis amigos"),
    ("zh", "工作好累啊，周末终于可以好好休息了"),
    ("en", "Missing my grandma's cooking so much right now"),
    ("es", "No puedo creer que ya sea diciembre, el año pasó volando"),
]
EDITS = [
    ("zh", "今天天气真好，我们去公园散步！"),
    ("en", "honestly the best coffee in town! can't wait to go back"),
    ("es", "Qué día tan bonito, vamos a la playa con mis amigos"),
    ("zh", "工作好累，周末终于可以休息了"),
    ("en", "missing my grandma's cooking so much"),
    ("es", "No puedo creer que ya es diciembre, el año pasó volando"),
]


def _ref_sets(texts, tok):
    return [(ref.bag(tok(t)),) for t in texts]


@pytest.mark.parametrize("tokenizer", ["intl", "wordpunct"])
def test_mint_like_search_matches_reference(tokenizer):
    tok = tokenize_intl if tokenizer == "intl" else ref.tokenize_wordpunct
    queries = [t for _, t in EDITS]
    refs = [t for _, t in TWEETS]
    res = max_overlap(TokenSets.from_texts(queries, tokenizer),
                      TokenSets.from_texts(refs, tokenizer))
    want = ref.max_overlap(_ref_sets(queries, tok), _ref_sets(refs, tok))
    assert res.score.tolist() == [row[0][0] for row in want]
    assert res.index.tolist() == [row[0][1] for row in want]


def test_mint_like_chinese_compared_sensibly():
    zh = [i for i, (lang, _) in enumerate(TWEETS) if lang == "zh"]
    other = [i for i, (lang, _) in enumerate(TWEETS) if lang != "zh"]
    a = [TWEETS[i][1] for i in range(len(TWEETS))]
    b = [EDITS[i][1] for i in range(len(EDITS))]
    wp = ratio(TokenSets.from_texts(a), TokenSets.from_texts(b))
    it = ratio(TokenSets.from_texts(a, "intl"), TokenSets.from_texts(b, "intl"))
    # wordpunct sees a Chinese clause as one token: an edited clause shares
    # nothing but its punctuation; intl compares characters, as it does words
    assert all(it[i] > wp[i] for i in zh)
    assert all(it[i] >= 0.8 for i in zh)
    # English and Spanish are tokenized identically by both presets
    for i in other:
        assert TokenSets.from_texts([a[i]], "intl") == TokenSets.from_texts([a[i]])
        assert it[i] == wp[i]
