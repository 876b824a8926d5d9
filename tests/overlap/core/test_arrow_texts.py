"""``TokenSets.from_texts`` on Arrow string columns equals it on the list of str.

The Arrow path (``overlap._texts`` + ``_tokenize.scan_utf8``) tokenizes ASCII
rows on the UTF-8 bytes and sends the other rows through the str path; every
preset, n-gram size, multiset flag and seed must give the same ``indptr``,
``hashes`` and ``counts`` as the list of the same strings, for string and
large_string, sliced and chunked columns and Arrow-backed pandas Series.

pyarrow is optional: without it the tests that need it skip (the first one
checks that ``import overlap`` and the list path never import it).
"""

from __future__ import annotations

import string
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import overlap
from overlap import TokenSets, _tokenize, tokensets

try:
    import pyarrow as pa
except ImportError:  # the core suite runs without the extra
    pa = None

needs_arrow = pytest.mark.skipif(pa is None, reason="optional extra pyarrow is not installed")

# the fixture non_ascii_in is the same for every example of a test
FIXTURE_OK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]

PRESETS = sorted(overlap.TOKENIZERS)
MODES = [*overlap.TOKENIZERS.values(), 3]  # and the callable path's "whole"
SEEDS = [0, 2**64 - 1, 20261204]
TYPES = ["string", "large_string"]


def _type(name: str):
    return getattr(pa, name)()


def _same(got: TokenSets, want: TokenSets) -> None:
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.hashes, want.hashes)
    assert got.multiset == want.multiset
    if want.multiset:
        np.testing.assert_array_equal(got.counts, want.counts)
    assert got.provenance == want.provenance


def _kernel_reference(texts, mode, seed, ngram, multiset):
    indptr, raw = _tokenize.scan_texts([t.lower() for t in texts], mode, seed, 1)
    return _tokenize.finalize_rows(indptr, raw, ngram, multiset, 1)


def _kernel(col, mode, seed, ngram, multiset, n_threads=2):
    from overlap import _texts

    (base, offsets, data), = _texts.pieces(col, 1 << 40)
    return _tokenize.scan_utf8(offsets, data, mode, seed, ngram, multiset, n_threads)


def _same_rows(got, want):
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_array_equal(g, w)


# -------------------------------------------------------- without pyarrow
def test_pyarrow_is_imported_only_for_arrow_input():
    code = (
        "import sys, overlap\n"
        "overlap.TokenSets.from_texts(['Hello, world', 'ΑΣ'])\n"
        "assert 'pyarrow' not in sys.modules, 'pyarrow imported'\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=overlap.__path__[0] + "/..")


# ---------------------------------------------------------------- strategies
# ASCII heavy on punctuation runs ("...", "?!", "()"), '_' and every space
ASCII_RUNS = st.text(
    st.sampled_from(list("aZq_09 .,!?()-'\"\\\t\n\r\x0b\x0c\x1c\x1f\x00\x7f~`{}|@#")),
    max_size=40,
)
ASCII_ANY = st.text(st.characters(max_codepoint=127), max_size=30)
SPECIAL = list(
    "İIıiΑΣσςΒΓΔ\u0301\u0307\u0345\u0300 ẞßﬁǄǅǆ \u00a0\u0085\u2028\u3000"
    "שלום مرحبا\u200f\u200e 👍🏽👨‍👩‍👧 日本語のテキスト한국어ｶﾀｶﾅ・ー 〇々 ，。！"
    "\U00020000\U0001b000\U0010fffd\ufeff\u200b"
) + ["ΑΣ", "ΑΣ.", "ΣΑ", "İstanbul", "...", "?!", "()", "_"]
UNICODE = st.lists(
    st.one_of(
        st.sampled_from(SPECIAL),
        st.characters(exclude_categories=("Cs",)),  # every plane, no lone surrogates
        st.sampled_from(list("aB _.,!?")),
    ),
    max_size=25,
).map("".join)
TEXTS = st.lists(st.one_of(ASCII_RUNS, ASCII_ANY, UNICODE), max_size=12)


# --------------------------------------------------------------- equality
@needs_arrow
@settings(max_examples=200, suppress_health_check=FIXTURE_OK)
@given(TEXTS, st.sampled_from(PRESETS), st.integers(1, 3), st.booleans(),
       st.sampled_from(SEEDS), st.sampled_from(TYPES), st.data())
def test_arrow_column_equals_the_list(non_ascii_in, batch, texts, preset, ngram, multiset,
                                     seed, typ, data):
    want = TokenSets.from_texts(texts, preset, ngram, multiset, seed=seed)
    col = pa.array(texts, _type(typ))
    _same(TokenSets.from_texts(col, preset, ngram, multiset, seed=seed), want)
    # a slice: the array's offset is honoured
    a = data.draw(st.integers(0, len(texts)))
    b = data.draw(st.integers(a, len(texts)))
    _same(TokenSets.from_texts(col.slice(a, b - a), preset, ngram, multiset, seed=seed),
          TokenSets.from_texts(texts[a:b], preset, ngram, multiset, seed=seed))
    # chunks, some of them empty, some of them slices
    cuts = sorted(data.draw(st.lists(st.integers(0, len(texts)), max_size=4)))
    chunks = [col.slice(x, y - x) for x, y in zip([0] + cuts, cuts + [len(texts)])]
    chunked = pa.chunked_array(chunks, type=col.type)
    _same(TokenSets.from_texts(chunked, preset, ngram, multiset, seed=seed), want)


@needs_arrow
@settings(max_examples=150, suppress_health_check=FIXTURE_OK)
@given(TEXTS, st.sampled_from(MODES), st.integers(1, 3), st.booleans(),
       st.sampled_from(SEEDS), st.sampled_from(TYPES), st.sampled_from([1, 2]))
def test_kernel_equals_the_str_kernels_in_every_mode(non_ascii_in, batch, texts, mode, ngram,
                                                     multiset, seed, typ, n_threads):
    got = _kernel(pa.array(texts, _type(typ)), mode, seed, ngram, multiset, n_threads)
    _same_rows(got, _kernel_reference(texts, mode, seed, ngram, multiset))


def _ascii_texts() -> list[str]:
    """Every ASCII code point alone, doubled and in context."""
    out = []
    for c in map(chr, range(128)):
        out += [c, c * 2, c * 3, f"a{c}b", f"A{c}{c}Z", f"{c}word{c}", f"x {c} y",
                f"..{c}", f"{c}?!", f"_{c}_", f"({c})", f"Hello{c} World{c}..."]
    return out


@needs_arrow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ngram,multiset", [(1, False), (1, True), (2, False), (3, True)])
def test_every_ascii_code_point(mode, ngram, multiset):
    texts = _ascii_texts()
    for typ in TYPES:
        got = _kernel(pa.array(texts, _type(typ)), mode, 7, ngram, multiset)
        _same_rows(got, _kernel_reference(texts, mode, 7, ngram, multiset))
    # one row each: every row's own tokens, nothing shared between rows
    singles = [chr(c) for c in range(128)]
    _same_rows(_kernel(pa.array(singles), mode, 0, ngram, multiset),
               _kernel_reference(singles, mode, 0, ngram, multiset))


@needs_arrow
@pytest.mark.parametrize("preset", PRESETS)
def test_every_code_point_in_context(preset):
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = [f"{chr(c)}{chr(c)}a {chr(c)}." if c % 3 else chr(c) for c in cps]
    want = TokenSets.from_texts(texts, preset)
    _same(TokenSets.from_texts(pa.array(texts, pa.large_string()), preset), want)


@needs_arrow
@pytest.mark.parametrize("preset", PRESETS)
def test_lower_casing_that_changes_length_or_depends_on_context(preset, non_ascii_in):
    texts = ["İ", "İİ x", "ΑΣ", "ΑΣ ΑΣ.", "Σ", "AΣB", "ΑΣ\u0301", "ǅungla", "ẞ", "Hello İ",
             "\u05e9\u05dc\u05d5\u05dd abc", "👍🏽 ok", "e\u0301e\u0301", "", " ", "   a  "]
    for ngram in (1, 2, 3):
        for multiset in (False, True):
            want = TokenSets.from_texts(texts, preset, ngram, multiset)
            _same(TokenSets.from_texts(pa.array(texts), preset, ngram, multiset), want)


@needs_arrow
def test_punctuation_rule_on_ascii_bytes():
    # runs that are substrings of string.punctuation are dropped, others kept
    punct = string.punctuation
    subs = sorted({punct[a:b] for a in range(len(punct)) for b in range(a + 1, len(punct) + 1)})
    texts = subs + [s + s[0] for s in subs] + ["...", "?!", "()", "a_b", "_", "__", "--x"]
    for preset in ("wordpunct", "intl"):
        got = TokenSets.from_texts(pa.array(texts), preset)
        _same(got, TokenSets.from_texts(texts, preset))
    assert TokenSets.from_texts(pa.array(subs)).nnz == 0
    assert TokenSets.from_texts(pa.array(["...", "?!"])).sizes.tolist() == [1, 1]


@needs_arrow
def test_empty_inputs():
    for col in (pa.array([], pa.string()), pa.array([], pa.large_string()),
                pa.chunked_array([], pa.string()),
                pa.chunked_array([pa.array([], pa.string())] * 3),
                pa.array(["a", "b"]).slice(2)):
        ts = TokenSets.from_texts(col)
        assert len(ts) == 0 and ts.nnz == 0
    ts = TokenSets.from_texts(pa.array(["", "", " "]))
    _same(ts, TokenSets.from_texts(["", "", " "]))


@needs_arrow
@pytest.mark.parametrize("n_threads", [1, 2, None])
def test_many_rows_and_threads(n_threads, rng, batch):
    words = ["The", "cat", "sat,", "on", "the", "mat...", "Ünïcode", "?!", "日本", "ΑΣ"]
    pick = rng.integers(0, len(words), size=(5000, 6))
    texts = [" ".join(words[j] for j in row) for row in pick]
    col = pa.chunked_array([pa.array(texts[:1234]), pa.array(texts[1234:], pa.string())])
    for preset in PRESETS:
        _same(TokenSets.from_texts(col, preset, 2, True, n_threads),
              TokenSets.from_texts(texts, preset, 2, True, 1))


@pytest.fixture(params=[0, 1, 5, 64], ids=lambda n: f"batch{n or 'default'}")
def batch(request):
    """scan_utf8's batches: the default (one batch here), and tiny ones so that
    rows, empty rows and long rows fall on every side of a batch edge."""
    before = _tokenize.batch_slots(request.param)
    yield request.param
    _tokenize.batch_slots(before)


@pytest.fixture(params=["c", "python"])
def non_ascii_in(request):
    """Both ways of tokenizing non-ASCII rows: in C, and all through Python."""
    if request.param == "python":
        _tokenize.use_c_for_non_ascii(False)
    yield request.param
    _tokenize.use_c_for_non_ascii(True)


def test_str_lower_is_per_code_point_on_this_python():
    # else every non-ASCII row of an Arrow column goes through Python (exact, slower)
    assert _tokenize.lower_matches_str_lower()
    assert _tokenize.use_c_for_non_ascii() is True


@needs_arrow
def test_rows_become_str_only_where_lower_is_not_per_code_point(monkeypatch):
    seen = []
    real = _tokenize.scan_texts
    monkeypatch.setattr(_tokenize, "scan_texts", lambda t, *a: seen.append(list(t)) or real(t, *a))
    texts = ["Hello, World!", "Ünïcode Row", "plain ascii", "ΑΣ", "İx", "日本語"]
    _same(TokenSets.from_texts(pa.array(texts)), TokenSets.from_texts(texts))
    assert len(seen) == 2 and len(seen[1]) == len(texts)  # the list path's call: every row
    assert seen[0] == ["ας", "i\u0307x"]  # final sigma and the dotted I: str.lower's
    seen.clear()
    TokenSets.from_texts(pa.array(["all", "ASCII rows", "here...", "and Ünïcode", "日本語"]))
    assert seen == []
    try:
        _tokenize.use_c_for_non_ascii(False)
        seen.clear()
        _same(TokenSets.from_texts(pa.array(texts)), TokenSets.from_texts(texts))
        assert seen[0] == ["ünïcode row", "ας", "i\u0307x", "日本語"]  # then the list's
    finally:
        _tokenize.use_c_for_non_ascii(True)


@needs_arrow
@settings(max_examples=300)
@given(st.lists(st.binary(max_size=12), max_size=6), st.sampled_from(MODES), st.booleans())
def test_random_bytes_decode_as_python_does(rows, mode, large):
    # well-formed UTF-8 gives the str's token sets, anything else the error
    col = _raw_column(rows, large)
    try:
        texts = [r.decode("utf-8") for r in rows]
    except UnicodeDecodeError:
        bad = next(i for i, r in enumerate(rows) if not _decodes(r))
        with pytest.raises(ValueError, match=rf"texts\[{bad}\] is not valid UTF-8"):
            _kernel(col, mode, 0, 1, False)
        return
    _same_rows(_kernel(col, mode, 0, 2, True), _kernel_reference(texts, mode, 0, 2, True))


def _decodes(row: bytes) -> bool:
    try:
        row.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@needs_arrow
def test_long_rows():
    # non-ASCII rows over 4 MiB are lower-cased by Python, shorter ones in C
    texts = ["Ünï " * 1_200_000 + "ΑΣ end", "é" * (1 << 22), "é" * (1 << 21) + "x",
             "é" * 1000 + " Hello", "short é", "A" * (1 << 23)]
    for preset in ("char", "wordpunct"):
        _same(TokenSets.from_texts(pa.array(texts), preset, 2, True),
              TokenSets.from_texts(texts, preset, 2, True))


# ------------------------------------------------------------ other inputs
@needs_arrow
def test_pandas_series_backed_by_arrow():
    pd = pytest.importorskip("pandas", reason="optional extra pandas is not installed")
    texts = ["Hello, World!", "", "İstanbul ΑΣ", "a_b ?! ..."]
    want = TokenSets.from_texts(texts, "intl", 2)
    dtypes = [pd.ArrowDtype(pa.string()), pd.ArrowDtype(pa.large_string()), "string[pyarrow]",
              object, None]
    for dtype in dtypes:
        s = pd.Series(texts, dtype=dtype, index=[10, 3, 7, 1])
        _same(TokenSets.from_texts(s, "intl", 2), want)
        _same(TokenSets.from_texts(s.iloc[1:], "intl", 2),
              TokenSets.from_texts(texts[1:], "intl", 2))
    s = pd.Series(["a", None, "b"], dtype="string[pyarrow]")
    with pytest.raises(TypeError, match=r"texts\[1\] must be str, got an Arrow null"):
        TokenSets.from_texts(s)


@needs_arrow
def test_string_view_and_callables():
    texts = ["Hello, World!", "ΑΣ ok", ""]
    want = TokenSets.from_texts(texts)
    if hasattr(pa, "string_view"):
        _same(TokenSets.from_texts(pa.array(texts, pa.string_view())), want)
    # a callable tokenizer gets the str of each row, unchanged
    got = []
    TokenSets.from_texts(pa.array(texts), lambda t: got.append(t) or t.split())
    assert got == texts
    _same(TokenSets.from_texts(pa.chunked_array([texts[:1], texts[1:]]), str.split),
          TokenSets.from_texts(texts, str.split))


@needs_arrow
def test_progress_and_chunks(monkeypatch):
    texts = [f"Text number {i} here, ΑΣ" if i % 7 == 0 else f"text {i}..." for i in range(3000)]
    col = pa.chunked_array([pa.array(texts[:1000], pa.large_string()),
                            pa.array([], pa.large_string()),
                            pa.array(texts[1000:], pa.large_string()).slice(0)])
    want = TokenSets.from_texts(texts, "intl", 2, True)
    monkeypatch.setattr(tokensets, "TEXT_CHUNK", 2000)  # many kernel calls
    seen = []
    got = TokenSets.from_texts(col, "intl", 2, True, progress=lambda d, t: seen.append((d, t)))
    _same(got, want)
    assert len(seen) > 10 and seen[-1] == (3000, 3000)
    assert all(t == 3000 for _, t in seen) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    monkeypatch.setattr(tokensets, "TEXT_CHUNK", 1)  # a row a call
    _same(TokenSets.from_texts(col.slice(5, 50), "intl", 2, True),
          TokenSets.from_texts(texts[5:55], "intl", 2, True))


# ------------------------------------------------------------------ errors
@needs_arrow
def test_nulls_are_errors_naming_the_row():
    col = pa.array(["a", "b", None, "c", None])
    with pytest.raises(TypeError, match=r"texts\[2\] must be str, got an Arrow null.*fill_null"):
        TokenSets.from_texts(col)
    with pytest.raises(TypeError, match=r"texts\[1\] must be str, got an Arrow null"):
        TokenSets.from_texts(col.slice(3))  # rows of the slice
    with pytest.raises(TypeError, match=r"texts\[4\] must be str"):  # rows across chunks
        TokenSets.from_texts(pa.chunked_array([pa.array(["x", "y", "z"]), col.slice(1)]))
    with pytest.raises(TypeError, match=r"texts\[2\] must be str"):  # a callable too
        TokenSets.from_texts(col, str.split)
    with pytest.raises(TypeError, match=r"texts\[2\] must be str, got NoneType"):  # as a list
        TokenSets.from_texts(col.to_pylist())
    _same(TokenSets.from_texts(col.fill_null("")), TokenSets.from_texts(["a", "b", "", "c", ""]))


def _raw_column(rows: list[bytes], large: bool = False):
    """A string array over arbitrary bytes (pyarrow does not check them here)."""
    offsets = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64 if large else np.int32)
    typ = pa.large_string() if large else pa.string()
    return pa.Array.from_buffers(typ, len(rows), [None, pa.py_buffer(offsets.tobytes()),
                                                  pa.py_buffer(b"".join(rows))])


@needs_arrow
@pytest.mark.parametrize("bad", [b"\xff", b"ab\xc3", b"\xc0\xaf", b"\xc1\xbf", b"\xed\xa0\x80",
                                 b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xf0\x80\x80\x80",
                                 b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",
                                 b"\xf0\x9f\x98", b"\xe2\x82", b"ok \x80 ok", "é".encode() + b"\xbf"])
def test_invalid_utf8_is_an_error_naming_the_row(bad, batch):
    for large in (False, True):
        col = _raw_column([b"fine", "ünï".encode(), bad, b"after"], large)
        with pytest.raises(ValueError, match=r"texts\[2\] is not valid UTF-8"):
            TokenSets.from_texts(col)
        with pytest.raises(ValueError, match=r"texts\[5\] is not valid UTF-8"):
            TokenSets.from_texts(pa.chunked_array([pa.array(["a", "b", "c"], col.type), col]))


@needs_arrow
def test_offsets_that_do_not_fit_the_data_are_errors():
    data = np.frombuffer(b"hello world", dtype=np.uint8)
    for offsets in ([0, 5, 3, 11], [0, 5, 12], [-1, 5], [3, 2]):
        for dtype in (np.int32, np.int64):
            with pytest.raises(ValueError, match="offsets"):
                _tokenize.scan_utf8(np.array(offsets, dtype), data, 0, 0, 1, False, 1)
    with pytest.raises(ValueError, match="ngram"):
        _tokenize.scan_utf8(np.array([0, 5], np.int32), data, 0, 0, 0, False, 1)


@needs_arrow
def test_non_string_columns_are_type_errors():
    for bad in (pa.array([1, 2]), pa.array([b"a"]), pa.chunked_array([pa.array([1.5])]),
                pa.array([["a"]])):
        with pytest.raises(TypeError, match=r"texts must be an Arrow column of strings"):
            TokenSets.from_texts(bad)
    with pytest.raises(TypeError, match=r"texts\[0\] must be str, got ChunkedArray"):
        TokenSets.from_texts(pa.table({"t": ["a"]}))  # a table is a sequence of columns
