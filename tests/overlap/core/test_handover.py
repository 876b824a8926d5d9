"""Token sets handed over to a self-join (``overlap._fields.Handover``; issue 29).

An index over a Handover that copies its rows (renumbered by size) lets the
fields go before its postings are built and answers only its self-join; the
pairs, the dedup and the command line's output are those of the index that
keeps them.  The renumbering is forced on small sets (``RENUMBER_MIN_ROWS``),
as in test_renumber.py.
"""

from __future__ import annotations

import gc
import json
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlap import _dispatch, _index, dedup, max_overlap
from overlap._fields import Handover
from overlap._kernels import _bitslice, _postings_search
from overlap.cli import main
from overlap.dedup import dedup_fields, self_join_edges
from overlap.pipeline.steps import dedup_first, dedup_first_fields
from overlap.search import build_index, max_overlap_handed
from reference import overlap as ref
from reference.helpers import build, ref_units


@pytest.fixture(params=[True, False], ids=["renumbered", "as-stored"])
def renumbered(request, monkeypatch):
    monkeypatch.setattr(_index, "RENUMBER_MIN_ROWS", 0 if request.param else 1 << 62)
    return request.param


def _columns(rng, n: int, n_fields: int) -> list:
    return [[rng.integers(0, 30, int(rng.integers(0, 10))).tolist() for _ in range(n)]
            for _ in range(n_fields)]


rows_st = st.lists(st.lists(st.integers(0, 12), max_size=8), min_size=0, max_size=30)


def test_take_once():
    fields = build([[[1, 2], [2]]], False)
    held = Handover(tuple(fields))
    assert held.n_rows == 2
    assert held.take() == tuple(fields)
    with pytest.raises(RuntimeError, match="taken already"):
        held.take()


@pytest.mark.parametrize("as_queries, eager", [(False, True), (True, False)])
def test_only_a_self_join_index_takes_a_handover(as_queries, eager):
    held = Handover(tuple(build([[[1, 2], [2]]], False)))
    with pytest.raises(ValueError, match="self-join"):
        build_index(held, "units", 1, as_queries=as_queries, eager=eager)


@given(rows=rows_st, multiset=st.booleans(), two=st.booleans(),
       threshold=st.sampled_from([0.3, 0.5, 0.8, 1.0]))
@settings(max_examples=60, deadline=None)
def test_self_join_of_a_handover_is_the_definition(rows, multiset, two, threshold):
    cols = [rows, rows[::-1]] if two else [rows]
    saved = _index.RENUMBER_MIN_ROWS
    try:
        want = ref.join(ref_units(cols, multiset), None, threshold)
        for min_rows, nt in ((0, 1), (0, 3), (1 << 62, 2)):
            _index.RENUMBER_MIN_ROWS = min_rows
            index = build_index(Handover(tuple(build(cols, multiset))), "units", nt,
                                as_queries=True)
            got = index.join(None, threshold=threshold, n_threads=nt)
            assert [(int(i), int(j)) for i, j in zip(got.left, got.right)] == \
                [(i, j) for i, j, _ in want]
            assert got.score.tolist() == [s for *_, s in want]
    finally:
        _index.RENUMBER_MIN_ROWS = saved


def test_a_handed_over_renumbered_index_answers_only_its_self_join(renumbered):
    fields = tuple(build(_columns(np.random.default_rng(3), 40, 1), False))
    index = build_index(Handover(fields), "units", 1, as_queries=True)
    assert len(index) == 40 and index.n_fields == 1
    if renumbered:
        with pytest.raises(RuntimeError, match="only its self-join"):
            index.max_overlap(None)
        with pytest.raises(RuntimeError, match="only its self-join"):
            index.join(fields, threshold=0.5)
    else:  # the index reads the caller's arrays: it keeps them, and answers all
        index.max_overlap(None)
        index.join(fields, threshold=0.5)


def test_a_lean_handed_over_renumbered_index_keeps_no_signatures(renumbered):
    """The self-join of a lean Handover (``overlap dedup``) keeps no signature
    column (the join is the definition's all the same, see above); a plain
    Handover (``overlap.dedup``) and an index over the caller's arrays keep
    one, 8 bytes a stored token."""
    fields = tuple(build(_columns(np.random.default_rng(6), 40, 2), False))
    nnz = sum(ts.nnz for ts in fields)
    # a renumbered handed-over index leaves out the tokens one row holds
    shared = sum(int(df[df >= 2].sum()) for df in (
        np.unique(ts.hashes, return_counts=True)[1] for ts in fields))
    assert 0 < shared < nnz
    lean = build_index(Handover(fields, lean=True), "units", 1, as_queries=True)
    handed = build_index(Handover(fields), "units", 1, as_queries=True)
    kept = build_index(fields, "units", 1, as_queries=True)
    m = shared if renumbered else nnz
    assert kept._index.entry_signatures.shape == (nnz,)
    assert handed._index.entry_signatures.shape == (m,)
    assert lean._index.entry_signatures.shape == ((0,) if renumbered else (nnz,))
    assert lean._index.entries.shape == handed._index.entries.shape == (m,)
    assert np.array_equal(lean._index.entries, handed._index.entries)
    if not renumbered:
        assert np.array_equal(handed._index.entries, kept._index.entries)


def test_the_fields_go_before_the_postings_are_built(monkeypatch, renumbered):
    """The handed-over hashes are freed before ReferenceIndex is made (renumbered
    only: otherwise the index's collection is the caller's arrays)."""
    fields = tuple(build(_columns(np.random.default_rng(5), 50, 2), True))
    hashes = [weakref.ref(ts.hashes) for ts in fields]
    alive: list = []
    make = _postings_search.ReferenceIndex

    def spy(*args, **kwargs):
        gc.collect()
        alive.append([r() is not None for r in hashes])
        return make(*args, **kwargs)

    monkeypatch.setattr(_postings_search, "ReferenceIndex", spy)
    held = Handover(fields)
    del fields
    left, right, score = self_join_edges(held, 0.4, 1, False)
    assert alive == [[not renumbered] * 2]
    assert left.shape == right.shape == score.shape


@pytest.mark.parametrize("keep", ["best", "first"])
def test_dedup_of_a_handover_is_the_dedup_of_the_fields(renumbered, keep):
    rng = np.random.default_rng(8)
    base = _columns(rng, 25, 1)[0]
    rows = base + [r + [99] for r in base] + [r[:-1] for r in base]  # near duplicates
    fields = tuple(build([rows], False))
    want = dedup(fields, threshold=0.6) if keep == "best" else dedup_first(fields,
                                                                          threshold=0.6)
    run = dedup_fields if keep == "best" else dedup_first_fields
    got = run(Handover(tuple(build([rows], False))), 0.6, 2, False)
    for name in ("keep", "kept_for", "cluster"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert (got.passes, got.n_edges) == (want.passes, want.n_edges)
    if keep == "best":
        present, kept_for, passes, cluster = ref.dedup(ref_units([rows], False), 0.6)
        assert got.keep.tolist() == present and got.kept_for.tolist() == kept_for


@pytest.mark.parametrize("keep", ["most-overlapped", "first"])
@pytest.mark.parametrize("report", [False, True])
def test_overlap_dedup_output_is_the_same_handed_over(tmp_path, monkeypatch, keep, report):
    """``overlap dedup`` without --report hands its token sets over: the same
    files as with the renumbering off (where the index keeps them)."""
    rng = np.random.default_rng(4)
    words = [f"w{i}" for i in range(30)]
    texts = [" ".join(rng.choice(words, int(rng.integers(1, 9)))) for _ in range(80)]
    texts += [t + " extra" for t in texts[:30]]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                           for i, t in enumerate(texts)))
    outs = []
    for min_rows in (0, 1 << 62):
        monkeypatch.setattr(_index, "RENUMBER_MIN_ROWS", min_rows)
        out = tmp_path / f"kept-{min_rows}.jsonl"
        extra = ["--report", str(tmp_path / f"rep-{min_rows}.json")] if report else []
        assert main(["dedup", str(src), "--out", str(out), "--keep", keep, "--threshold",
                     "0.7", "-q", *extra]) == 0
        outs.append(out.read_bytes())
        if report:
            rep = json.loads((tmp_path / f"rep-{min_rows}.json").read_text())
            rep.pop("output")
            outs.append(json.dumps(rep).encode())
    assert outs[:len(outs) // 2] == outs[len(outs) // 2:]
    kept = [json.loads(line)["text"] for line in outs[0].decode().splitlines()]
    assert 0 < len(kept) < len(texts)


@given(q=rows_st, r=rows_st, multiset=st.booleans(), two=st.booleans(),
       path=st.sampled_from([None, "bitslice", "postings"]),
       measure=st.sampled_from(["dice", "jaccard", "containment"]))
@settings(max_examples=60, deadline=None)
def test_max_overlap_of_a_handover_is_the_definition(q, r, multiset, two, path, measure):
    """``max_overlap_handed`` (``overlap scan --train``): the best match of every
    query, as the definition has it, on either kernel (the bit-sliced one
    built from the Handover) and any thread count."""
    qcols, rcols = ([q, q[::-1]], [r, r[::-1]]) if two else ([q], [r])
    want = ref.max_overlap(ref_units(qcols, multiset), ref_units(rcols, multiset), 1, 0.0,
                           measure)
    saved = _dispatch.FORCE_PATH
    try:
        _dispatch.FORCE_PATH = path
        for nt in (1, 2):
            got = max_overlap_handed(tuple(build(qcols, multiset)),
                                     Handover(tuple(build(rcols, multiset))),
                                     measure=measure, n_threads=nt)
            assert got.score.tolist() == [w[0][0] for w in want]
            assert got.index.tolist() == [w[0][1] for w in want]
    finally:
        _dispatch.FORCE_PATH = saved


def test_handed_references_go_before_the_bitmaps(monkeypatch):
    """Where the bit-sliced kernel serves, the handed-over hashes are freed once
    the tokens are numbered, before any bitmap is filled (weak references)."""
    rng = np.random.default_rng(11)
    rcols, qcols = _columns(rng, 300, 2), _columns(rng, 20, 2)
    fields = tuple(build(rcols, False))
    hashes = [weakref.ref(ts.hashes) for ts in fields]
    alive: list = []
    fill = _bitslice.fill_field

    def spy(*args, **kwargs):
        gc.collect()
        alive.append([h() is not None for h in hashes])
        return fill(*args, **kwargs)

    monkeypatch.setattr(_bitslice, "fill_field", spy)
    monkeypatch.setattr(_dispatch, "FORCE_PATH", "bitslice")
    held = Handover(fields)
    del fields
    got = max_overlap_handed(tuple(build(qcols, False)), held, n_threads=2)
    assert alive == [[False, False]] * 2  # one fill a field
    want = max_overlap(build(qcols, False), build(rcols, False))
    assert np.array_equal(got.score, want.score) and np.array_equal(got.index, want.index)


@pytest.mark.parametrize("multiset", [False, True])
def test_a_handed_over_index_leaves_out_the_tokens_one_row_holds(monkeypatch, renumbered,
                                                               multiset):
    """A renumbered handed-over index answers only its self-join: its
    vocabulary and postings hold only the tokens two rows or more hold (in
    each field).  An index over the caller's arrays answers other queries:
    it holds every token."""
    # a token of its own in every row (an id), and in some rows of the
    # second field
    cols = [[r + [1000 + i] * (f == 0 or i % 3 == 0) for i, r in enumerate(col)]
            for f, col in enumerate(_columns(np.random.default_rng(9), 60, 2))]
    fields = tuple(build(cols, multiset))
    shared, every = 0, 0
    for ts in fields:
        df = np.unique(ts.hashes, return_counts=True)[1]
        shared += int((df >= 2).sum())
        every += df.shape[0]
    assert 0 < shared < every
    seen: list = []
    make = _postings_search.ReferenceIndex

    def spy(coll, vocab, voff, pptr, *args, **kwargs):
        seen.append((int(pptr.shape[0] - 1), int((vocab[1::2].view(np.int64) >= 0).sum())))
        return make(coll, vocab, voff, pptr, *args, **kwargs)

    monkeypatch.setattr(_postings_search, "ReferenceIndex", spy)
    index = build_index(Handover(fields, lean=True), "units", 2, as_queries=True)
    got = index.join(None, threshold=0.5, n_threads=2)
    want = shared if renumbered else every
    assert seen == [(want, want)]
    assert [(int(i), int(j)) for i, j in zip(got.left, got.right)] == \
        [(i, j) for i, j, _ in ref.join(ref_units(cols, multiset), None, 0.5)]
