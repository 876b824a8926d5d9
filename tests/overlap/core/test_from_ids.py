"""``TokenSets.from_ids`` in bulk: the same sets and the same errors as row by row.

``_from_ids_reference`` is the row-by-row implementation the bulk path
replaced (issue 29), kept verbatim: every input, valid or not, must give its
result or its exception (type and message) exactly.
"""

from __future__ import annotations

import numbers

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from overlap import TokenSets, _ids, _tokenize
from overlap.tokensets import HASH_VERSION, Provenance


# ------------------------------------------------------------ the reference
def _python_ints(seq, i, fallback):
    if not all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in seq):
        return fallback
    if any(x < 0 for x in seq):
        raise ValueError(f"sequences[{i}] holds a negative id ({min(seq)}); ids must be >= 0")
    if any(x >= 2**64 for x in seq):
        raise ValueError(f"sequences[{i}] holds an id >= 2**64 ({max(seq)})")
    return np.array([int(x) for x in seq], dtype=np.uint64)


def _from_ids_reference(sequences, ngram=1, multiset=False, seed=0):
    """``TokenSets.from_ids`` before issue 29: checks and converts one row at a time."""
    sequences = list(sequences)
    parts = []
    lengths = np.empty(len(sequences), dtype=np.int64)
    for i, seq in enumerate(sequences):
        if isinstance(seq, (str, bytes)):
            raise TypeError(f"sequences[{i}] must be a sequence of ints, got {type(seq).__name__}")
        arr = np.asarray(seq)
        if arr.dtype.kind in "fO" and isinstance(seq, (list, tuple)):
            arr = _python_ints(seq, i, arr)
        if arr.ndim != 1:
            if arr.ndim == 0:
                raise TypeError(
                    f"sequences[{i}] must be a sequence of ints, got {type(seq).__name__}"
                )
            raise ValueError(f"sequences[{i}] must be 1-dimensional, got shape {arr.shape}")
        if arr.size:
            if not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
                raise TypeError(f"sequences[{i}] must hold integers, got dtype {arr.dtype}")
            if np.issubdtype(arr.dtype, np.signedinteger) and arr.min() < 0:
                raise ValueError(
                    f"sequences[{i}] holds a negative id ({int(arr.min())}); ids must be >= 0"
                )
        parts.append(arr.astype(np.uint64, copy=False))
        lengths[i] = arr.shape[0]
    ids = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
    indptr = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    raw = _tokenize.hash_ids(np.ascontiguousarray(ids, dtype=np.uint64), seed, 1)
    rows = _tokenize.finalize_rows(indptr, raw, ngram, multiset, 1)
    return TokenSets._trusted(*rows, Provenance("ids", None, ngram, multiset, seed, HASH_VERSION))


def _outcome(fn, *args, **kw):
    try:
        return "ok", fn(*args, **kw)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__, str(exc)


def assert_same_as_reference(sequences, **kw):
    want = _outcome(_from_ids_reference, sequences, **kw)
    got = _outcome(TokenSets.from_ids, sequences, **kw)
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        assert got[1] == want[1] and got[1].provenance == want[1].provenance
        assert (got[1].counts is None) == (want[1].counts is None)
    else:
        assert got[1] == want[1]
    return got


# ------------------------------------------------------------- strategies
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
ids_small = st.integers(0, 300)
ids_any = st.one_of(ids_small, st.integers(0, 2**64 - 1), st.integers(-3, -1),
                    st.just(2**64), st.just(2**63))


@st.composite
def int_array(draw, dtype=None, allow_negative=True):
    dtype = np.dtype(draw(st.sampled_from(INT_DTYPES)) if dtype is None else dtype)
    info = np.iinfo(dtype)
    lo = info.min if allow_negative and draw(st.integers(0, 9)) == 0 else 0
    vals = draw(st.lists(st.integers(max(lo, -5), min(info.max, 2**64 - 1)), max_size=12))
    if lo == 0 and draw(st.booleans()):  # some near the top of the type
        vals += draw(st.lists(st.integers(max(0, info.max - 3), info.max), max_size=2))
    return np.array(vals, dtype=dtype)


clean_row = st.one_of(
    st.lists(ids_small, max_size=12),
    st.lists(ids_small, max_size=12).map(tuple),
    int_array(allow_negative=False),
)
odd_row = st.one_of(
    st.lists(ids_any, max_size=6),
    st.lists(st.one_of(ids_small, st.booleans()), max_size=4),
    st.lists(st.floats(0, 5) | ids_small, max_size=3),
    st.lists(ids_small.map(np.int64) | st.integers(0, 255).map(np.uint8) | ids_small, max_size=4),
    int_array(),
    st.sampled_from([
        np.array([]), np.array([], dtype=bool), np.array([True, False]), np.array([1.5]),
        np.array([[1, 2]]), np.array(3), np.zeros((0, 2), dtype=np.int64), "ab", b"x",
        range(3), np.array([1, 2], dtype=object), np.array([1, 2], dtype=">i4"),
        np.arange(6)[::2], np.array([[]], dtype=np.int64), [[1], [2]], [], (), 7,
    ]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(clean_row, max_size=8), st.integers(1, 3), st.booleans())
def test_clean_rows_equal_the_reference(rows, ngram, multiset):
    assert_same_as_reference(rows, ngram=ngram, multiset=multiset)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(clean_row, odd_row), max_size=8), st.integers(1, 2))
@example([np.array([1], dtype=np.int64), np.array([2**63], dtype=np.uint64)], 1)
@example([[1, 2], [2**63, 1], [3]], 1)
@example([[True, 2], [1]], 1)
@example([[True, False], [1]], 1)
@example([np.array([1, 2]), np.array([-1]), np.array([1.5])], 1)
@example([np.array([1.5]), np.array([-1])], 1)
@example([np.array([]), np.array([3, 4])], 2)
@example([np.array([[1, 2]]), np.array([[3, 4]])], 1)
@example([np.array(3), np.array(4)], 1)
def test_any_rows_equal_the_reference_result_or_error(rows, ngram):
    assert_same_as_reference(rows, ngram=ngram)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(ids_small, max_size=5), max_size=6), st.lists(odd_row, max_size=2),
       st.data())
def test_one_wrong_row_among_many_is_the_one_named(rows, extra, data):
    # the bulk check fails; the reported row is the first wrong one, as before
    for x in extra:
        rows.insert(data.draw(st.integers(0, len(rows))), x)
    as_arrays = [np.array(r, dtype=np.int64) if isinstance(r, list) and all(
        type(v) is int and 0 <= v < 2**63 for v in r) else r for r in rows]
    assert_same_as_reference(rows)
    assert_same_as_reference(as_arrays)


def test_empty_inputs():
    for rows in ([], [[]], [[], []], [np.array([])], [np.zeros(0, np.uint8)] * 3, ()):
        assert_same_as_reference(rows)


def test_many_rows_take_the_bulk_path_and_agree(monkeypatch):
    rng = np.random.default_rng(5)
    lens = rng.integers(0, 40, 3000)
    arrays = [rng.integers(0, 2**63, n) for n in lens]
    mixed = [a.astype(d) % 100 for a, d in zip(arrays, np.resize(INT_DTYPES, len(arrays)))]
    lists = [a.tolist() for a in arrays]
    interleaved = [x if i % 3 else lists[i] for i, x in enumerate(mixed)]
    interleaved[7] = range(5)
    interleaved[11] = np.array([], dtype=np.float32)
    calls = []
    monkeypatch.setattr(_ids, "per_row", lambda s: calls.append(1) or pytest.fail("per row"))
    for rows in (arrays, mixed, lists, interleaved, tuple(lists)):
        for ngram, multiset in ((1, False), (2, True)):
            got = TokenSets.from_ids(rows, ngram=ngram, multiset=multiset)
            assert got == _from_ids_reference(rows, ngram=ngram, multiset=multiset)
    assert not calls


def test_uint64_ids_at_the_top_of_the_range():
    top = [2**64 - 1, 2**63, 2**63 - 1, 0]
    assert_same_as_reference([top, [1]])
    assert_same_as_reference([np.array(top, dtype=np.uint64), np.array([1], dtype=np.int64)])
    assert_same_as_reference(np.array([top, top], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"sequences\[1\] holds an id >= 2\*\*64"):
        TokenSets.from_ids([[1], [2**64]])


@pytest.mark.parametrize("rows,exc,message", [
    ([[1], [1, -2]], ValueError, r"sequences\[1\] holds a negative id \(-2\)"),
    ([np.array([1]), np.array([4, -7, -2])], ValueError,
     r"sequences\[1\] holds a negative id \(-7\)"),
    ([[1], [1.0, 2.0]], TypeError, r"sequences\[1\] must hold integers, got dtype float64"),
    ([[1], np.array([True])], TypeError, r"sequences\[1\] must hold integers, got dtype bool"),
    ([[1], [True, False]], TypeError, r"sequences\[1\] must hold integers, got dtype bool"),
    ([[1], "abc"], TypeError, r"sequences\[1\] must be a sequence of ints, got str"),
    ([np.array([1]), np.array(5)], TypeError, r"sequences\[1\] must be a sequence of ints"),
    ([np.array([1]), np.array([[5]])], ValueError, r"sequences\[1\] must be 1-dimensional"),
    ([np.array([1]), np.array(["a"])], TypeError,
     r"sequences\[1\] must hold integers, got dtype <U1"),
])
def test_errors_name_the_row(rows, exc, message):
    with pytest.raises(exc, match=message):
        TokenSets.from_ids(rows)
    with pytest.raises(exc, match=message):
        _from_ids_reference(rows)


# -------------------------------------------------------------- 2-D arrays
@settings(max_examples=100, deadline=None)
@given(st.integers(0, 5), st.integers(0, 6), st.sampled_from(INT_DTYPES + ["float64", "bool"]),
       st.booleans(), st.integers(1, 3))
def test_two_d_array_is_one_sequence_per_row(n, m, dtype, negative, ngram):
    a = (np.arange(n * m) * 7 % 50).reshape(n, m).astype(dtype)
    if negative and a.size and np.dtype(dtype).kind == "i":
        a[n // 2, m // 2] = -1
    assert_same_as_reference(a, ngram=ngram)
    assert_same_as_reference(np.asfortranarray(a), ngram=ngram)


def test_two_d_int64_array_is_hashed_without_a_copy(monkeypatch):
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    seen = []
    real = _tokenize.hash_ids
    monkeypatch.setattr(_tokenize, "hash_ids", lambda ids, *r: seen.append(ids) or real(ids, *r))
    TokenSets.from_ids(a)
    assert np.shares_memory(seen[0], a)
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4))  # never modified


# ------------------------------------------------------------------- arrow
pa = pytest.importorskip("pyarrow")

LIST_TYPES = [pa.list_, pa.large_list]
ARROW_INTS = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64()]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 120), max_size=9), max_size=10),
       st.sampled_from(LIST_TYPES), st.sampled_from(ARROW_INTS), st.data(),
       st.integers(1, 3), st.booleans())
def test_arrow_lists_equal_the_python_lists(rows, list_type, value_type, data, ngram, multiset):
    col = pa.array(rows, type=list_type(value_type))
    start = data.draw(st.integers(0, len(rows)))
    stop = data.draw(st.integers(start, len(rows)))
    for arr, want_rows in ((col, rows), (col.slice(start, stop - start), rows[start:stop])):
        want = _from_ids_reference(want_rows, ngram=ngram, multiset=multiset)
        got = TokenSets.from_ids(arr, ngram=ngram, multiset=multiset)
        assert got == want and got.provenance == want.provenance
        cuts = sorted(data.draw(st.lists(st.integers(0, len(arr)), max_size=3)))
        chunks = [arr.slice(a, b - a) for a, b in zip([0] + cuts, cuts + [len(arr)])]
        chunked = pa.chunked_array(chunks, type=arr.type)
        assert TokenSets.from_ids(chunked, ngram=ngram, multiset=multiset) == want


def test_arrow_fixed_size_lists_and_empty_columns():
    rows = [[1, 2], [3, 3], [5, 0]]
    fixed = pa.array(rows, type=pa.list_(pa.int32(), 2))
    assert TokenSets.from_ids(fixed) == _from_ids_reference(rows)
    assert TokenSets.from_ids(fixed.slice(1)) == _from_ids_reference(rows[1:])
    for empty in (pa.array([], pa.list_(pa.int64())), pa.chunked_array([], pa.list_(pa.int64()))):
        assert len(TokenSets.from_ids(empty)) == 0


def test_arrow_int64_column_is_hashed_without_a_copy(monkeypatch):
    values = np.arange(10, dtype=np.int64)
    col = pa.ListArray.from_arrays(pa.array([0, 3, 3, 10], pa.int32()), pa.array(values))
    seen = []
    real = _tokenize.hash_ids
    monkeypatch.setattr(_tokenize, "hash_ids", lambda ids, *r: seen.append(ids) or real(ids, *r))
    TokenSets.from_ids(col.slice(1))
    assert seen[0].ctypes.data == col.values.buffers()[1].address + 3 * 8


def test_arrow_errors_name_the_row():
    with pytest.raises(ValueError, match=r"sequences\[2\] is null.*fill_null"):
        TokenSets.from_ids(pa.array([[1], [], None, [2]], pa.list_(pa.int64())))
    col = pa.array([[1], None, [2], None], pa.list_(pa.int64()))
    with pytest.raises(ValueError, match=r"sequences\[1\] is null"):  # rows of the slice
        TokenSets.from_ids(col.slice(2))
    assert TokenSets.from_ids(col.fill_null([])) == _from_ids_reference([[1], [], [2], []])
    with pytest.raises(ValueError, match=r"sequences\[4\] is null"):  # rows count across chunks
        TokenSets.from_ids(pa.chunked_array([pa.array([[1], [2], [3]]), col.slice(0, 2)]))
    with pytest.raises(ValueError, match=r"sequences\[2\] holds a null id"):
        TokenSets.from_ids(pa.array([[1], [], [2, None]], pa.list_(pa.int64())))
    with pytest.raises(ValueError, match=r"sequences\[3\] holds a negative id \(-9\)"):
        TokenSets.from_ids(pa.array([[1], [], [2], [3, -4, -9]], pa.list_(pa.int8())))
    with pytest.raises(ValueError, match=r"sequences\[4\] holds a negative id"):
        TokenSets.from_ids(pa.chunked_array([pa.array([[1], [2]]), pa.array([[3], [], [-1]])]))
    for bad in (pa.array([[1.0]]), pa.array([["a"]]), pa.array([[True]]),
                pa.array([[1.5]], pa.large_list(pa.float32())),
                pa.array([[]], pa.list_(pa.null()))):
        with pytest.raises(TypeError, match=r"sequences must hold integers, got Arrow type"):
            TokenSets.from_ids(bad)
    with pytest.raises(TypeError, match=r"sequences must be an Arrow ListArray.*Int64Array"):
        TokenSets.from_ids(pa.array([1, 2]))
    with pytest.raises(TypeError, match=r"sequences must be a column of id lists"):
        TokenSets.from_ids(pa.chunked_array([pa.array([1, 2])]))


# --------------------------------------------------------------- flat ids
@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=6), max_size=6),
       st.sampled_from(["uint64", "int64", "int32", "list"]), st.integers(1, 2), st.booleans())
def test_flat_ids_equal_from_ids_of_the_rows(rows, kind, ngram, multiset):
    if kind in ("int64", "int32"):
        rows = [[x % 2**31 for x in r] for r in rows]
    flat = [x for r in rows for x in r]
    values = flat if kind == "list" else np.array(flat, dtype=kind)
    offsets = np.cumsum([0] + [len(r) for r in rows])
    got = TokenSets.from_flat_ids(values, offsets, ngram=ngram, multiset=multiset)
    want = _from_ids_reference(rows, ngram=ngram, multiset=multiset)
    assert got == want and got.provenance == want.provenance


@pytest.mark.parametrize("values,offsets,exc,message", [
    ([1, 2, -3], [0, 1, 3], ValueError,
     r"values holds a negative id \(-3\) at position 2, in row 1"),
    ([1.0, 2.0], [0, 2], TypeError, "values must hold integers"),
    ([True], [0, 1], TypeError, "values must hold integers"),
    ([[1, 2]], [0, 1], ValueError, "values must be 1-dimensional"),
    ([1, 2], [0, 1], ValueError, r"offsets\[-1\] must equal len\(values\) = 2"),
    ([1, 2], [1, 2], ValueError, r"offsets\[0\] must be 0"),
    ([1, 2], [0, 2, 1, 2], ValueError, "non-decreasing; they fall at row 1"),
    ([1, 2], [], ValueError, "offsets must have at least one element"),
    ([1, 2], [0.0, 2.0], TypeError, "offsets must hold integers"),
    ([1, 2**64], [0, 2], ValueError, "values must be < 2"),
])
def test_flat_ids_errors(values, offsets, exc, message):
    with pytest.raises(exc, match=message):
        TokenSets.from_flat_ids(values, offsets)


def test_flat_ids_checks_its_options_and_accepts_arrow():
    with pytest.raises(ValueError, match="ngram"):
        TokenSets.from_flat_ids([1], [0, 1], ngram=0)
    col = pa.array([[1, 2], [3]], pa.list_(pa.int64()))
    assert TokenSets.from_flat_ids(col.values, col.offsets) == TokenSets.from_ids(col)
    with pytest.raises(ValueError, match="values holds a null id"):
        TokenSets.from_flat_ids(pa.array([1, None]), [0, 2])
